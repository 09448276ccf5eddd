"""Skelton's tensegrity shell (n, m): counts as in the paper for every 3 <= n <= 12, 1 <= m <= 12, the
Lemma's class-2 joints, and (small shells) a verified all-taut, stable prestressed equilibrium.

Tolerance: residual <= 1e-9 N as the CLI enforces; the form finding reaches ~1e-13 N (tensions 5..80 N).
"""
import numpy as np
import pytest

from tensegrity_engine.generators import shell, verify_template
from tensegrity_engine.generators.shell_topology import class2_joints, rods, tendons
from tensegrity_engine.generators.shell import class2_strings


@pytest.mark.parametrize("n", range(3, 13))
def test_counts_match_the_paper(n):
    for m in range(1, 13):
        T, R = tendons(n, m), rods(n, m)
        assert len(T) == n * (10 * m - 2)                                 # paper: n(10m - 2) tendons
        assert len(tendons(n, m, primal=True)) == 8 * n * m               # primal shell: 8nm tendons
        assert len(R) == 2 * n * m                                        # nm two-rod elements
        pairs = {(min(a, b), max(a, b)) for a, b, _ in T}
        assert len(pairs) == len(T)                                       # no tendon repeated (rules 2.2, 2.7)
        J = class2_joints(n, m)
        assert len(J) == 2 * n * (m - 1)
        S2, _ = class2_strings(T, J)
        assert len(S2) == n * (10 * m - 2) - 4 * n * (m - 1)


def test_three_one_shell_is_the_six_bar_icosahedron_topology():
    """(3,1): 12 nodes of degree 4, 8 string triangles, every rod the diagonal of a string quadrilateral —
    the string net of the expanded octahedron (a cuboctahedron graph)."""
    T = tendons(3, 1)
    A = np.zeros((12, 12), int)
    for a, b, _ in T:
        A[a, b] = A[b, a] = 1
    assert set(A.sum(1)) == {4} and np.trace(A @ A @ A) // 6 == 8
    assert all(A[a, b] == 0 and (A[a] * A[b]).sum() == 2 for a, b, _ in rods(3, 1))


def test_class2_joins_two_rods_per_node():
    doc = shell(4, 2, "class2")
    ends = [nd for b in doc["bars"] for nd in b["nodes"]]
    _, counts = np.unique(ends, return_counts=True)
    assert counts.max() == 2 and (counts == 2).sum() == 2 * 4 * (2 - 1)


@pytest.mark.parametrize("n,m,joints,primal", [(3, 1, "class1", False), (4, 2, "class1", False),
                                               (4, 2, "class1", True), (6, 3, "class1", True),
                                               (4, 2, "class2", False)])
def test_small_shells_are_stable_all_taut_equilibria(n, m, joints, primal):
    doc = shell(n, m, joints, primal)
    model, rep = verify_template(doc, min_tension=5.0)
    assert rep["residual"] <= 1e-9 and rep["tensions"].min() >= 5.0 * (1 - 1e-9)   # N
    assert rep["stable"] and rep["rigid_body_modes"] == 6
    assert len(model.bar_names) == 2 * n * m
    assert np.ptp(model.positions[:, 2]) > 0.1                               # m: a tube, not flattened


def test_bad_arguments():
    with pytest.raises(ValueError, match="n >= 3"):
        shell(2, 1)
    with pytest.raises(ValueError, match="joints"):
        shell(3, 1, "class3")


def _radius(X) -> np.ndarray:
    """Distance [m] of every node from the shell's axis (the vertical through the nodes' centroid)."""
    return np.hypot(X[:, 0] - X[:, 0].mean(), X[:, 1] - X[:, 1].mean())


@pytest.mark.parametrize("n,m,joints", [(3, 3, "class2"), pytest.param(3, 4, "class2", marks=pytest.mark.slow),
                                        (3, 2, "class1"),
                                        pytest.param(3, 2, "class2", marks=pytest.mark.slow),
                                        pytest.param(4, 3, "class2", marks=pytest.mark.slow),
                                        pytest.param(5, 3, "class2", marks=pytest.mark.slow),
                                        pytest.param(3, 3, "class1", marks=pytest.mark.slow),
                                        pytest.param(4, 3, "class1", marks=pytest.mark.slow)])
def test_primal_shells_keep_their_radius(n, m, joints):
    """Issue 22 #5: the primal class-2 (3,3) shell's form finding slid every node onto the axis (radius ~1e-20
    m, a line of nodes balances too) and the model failed with 'segment n1-n5 has zero length'. Every node now
    stays at least 1/8 of the layout radius (0.15 m) from the axis, and the model is a verified equilibrium."""
    doc = shell(n, m, joints, primal=True)
    X = np.array([nd["position"] for nd in doc["nodes"]])
    assert _radius(X).min() >= 0.125 * 0.15 - 1e-9                           # m: a tube, not a line
    model, rep = verify_template(doc, min_tension=5.0)
    assert rep["residual"] <= 1e-9 and rep["tensions"].min() >= 5.0 * (1 - 1e-9)
    assert rep["stable"] and rep["rigid_body_modes"] == 6
    assert len(model.bar_names) == 2 * n * m
