"""Sparse equilibrium paths (large models) against the dense ones on small models, and a 200-bar tower
through the sparse paths without any large dense factorisation."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from tensegrity_engine.statics.equilibrium import prestress, settle, stability, use_sparse, with_rest_lengths
from tensegrity_engine.generators import icosahedron, n_prism, tower
from tensegrity_engine.model.build import build_model
from tensegrity_engine.model.load import load_model
from tensegrity_engine.model.spec import spec_from_dict
from tensegrity_engine.statics.modal import bar_jacobian, bar_multipliers, tangent_stiffness
from tensegrity_engine.statics.stability_sparse import tangent_basis


def built(doc):
    return build_model(spec_from_dict(doc, doc["name"] + ".yaml"))


SMALL = {"icosahedron": (lambda: built(icosahedron()), 10.0), "prism5": (lambda: built(n_prism(5)), 5.0),
         "tower3_class1": (lambda: built(tower(3, 4, joints="class1")), 5.0),
         "tower3_class2": (lambda: built(tower(3, 5, joints="class2")), 5.0),
         "manipulator": (lambda: load_model("stacked_manipulator"), 0.0)}


@pytest.fixture(scope="module", params=sorted(SMALL))
def small(request):
    make, t_min = SMALL[request.param]
    return make(), t_min


def test_sparse_prestress_equals_the_dense_least_squares_prestress(small):
    m, t_min = small
    d = prestress(m, min_tension=t_min, method="dense")
    s = prestress(m, min_tension=t_min, method="sparse")
    scale = max(1.0, np.abs(d.tensions).max())
    # the least-squares optimum is unique in the tensions: both solvers reach it to rounding (~1e-12 relative);
    # 1e-9 leaves room for the dense SVD's null-space basis
    assert np.abs(s.tensions - d.tensions).max() <= 1e-9 * scale
    assert np.abs(s.rest_lengths - d.rest_lengths).max() <= 1e-12
    assert s.residual <= 1e-9 * scale and s.message == d.message == ""
    assert s.tensions.min() >= t_min - 1e-9 * scale
    assert isinstance(d.self_stress_states, int) and s.self_stress_states is None    # sparse: not counted


def test_sparse_prestress_reports_a_shape_that_is_no_equilibrium(prism3):
    d = prestress(prism3, min_tension=0.5, method="dense")
    s = prestress(prism3, min_tension=0.5, method="sparse")
    assert "not an all-taut equilibrium" in s.message and s.residual > 1e-3
    assert np.allclose(s.tensions, d.tensions, rtol=1e-6) and np.isclose(s.residual, d.residual, rtol=1e-6)


def test_sparse_stability_gives_the_dense_lowest_modes(small):
    m, t_min = small
    if t_min:
        m = with_rest_lengths(m, prestress(m, min_tension=t_min).rest_lengths)
    d = stability(m, m.positions, method="dense")
    s = stability(m, m.positions, method="sparse")
    k = len(s["eigenvalues"])
    assert s["method"] == "sparse" and d["method"] == "dense"
    assert k == min(d["rigid_body_modes"] + 10, d["dof"] - 1) and s["dof"] == d["dof"]
    assert s["rigid_body_modes"] == d["rigid_body_modes"] and s["stable"] == d["stable"] is True
    assert s["below_shift"] == 0                     # the inertia count: nothing below the shift
    # ω² of the same pencil on the same tangent space: equal to rounding of the largest (ARPACK to 1e-10)
    assert np.abs(s["eigenvalues"] - d["eigenvalues"][:k]).max() <= 1e-10 * np.abs(d["eigenvalues"]).max()


def test_sparse_tangent_stiffness_bar_jacobian_and_multipliers_equal_dense(manipulator):
    X = manipulator.positions
    rest = manipulator.rest_length
    assert np.array_equal(bar_jacobian(manipulator, X, sparse=True).toarray(), bar_jacobian(manipulator, X))
    lam_d = bar_multipliers(manipulator, X, rest)
    lam_s = bar_multipliers(manipulator, X, rest, sparse=True)
    assert np.abs(lam_s - lam_d).max() <= 1e-9 * np.abs(lam_d).max()
    Kd = tangent_stiffness(manipulator, X, lam=lam_d)
    Ks = tangent_stiffness(manipulator, X, lam=lam_d, sparse=True)
    assert np.abs(Ks.toarray() - Kd).max() <= 1e-12 * np.abs(Kd).max()


@pytest.mark.parametrize("joints", ["class1", "class2"])
def test_tangent_basis_is_an_orthonormal_basis_of_the_bar_null_space(joints):
    m = built(tower(3, 4, joints=joints))
    J = bar_jacobian(m, m.positions, sparse=True)
    T = tangent_basis(J, J.shape[1]).toarray()
    assert np.abs(J @ T).max() <= 1e-13
    assert np.abs(T.T @ T - np.eye(T.shape[1])).max() <= 1e-13
    assert T.shape[1] == J.shape[1] - np.linalg.matrix_rank(J.toarray())


def test_sparse_settle_returns_to_the_dense_prestressed_equilibrium():
    """A 5-prism with rest lengths from the dense prestress, settled by sparse Newton from 0.1 mm off: the
    same equilibrium up to a rigid motion (free body), so the same tensions and string lengths. (The dense
    settle relaxes with the simulator first, whose kernels may need compiling: not used here.)"""
    m = built(n_prism(5))
    eq = prestress(m, min_tension=5.0, method="dense")
    ms = with_rest_lengths(m, eq.rest_lengths)
    X = ms.positions + 1e-4 * np.sin(np.arange(ms.positions.size)).reshape(ms.positions.shape)
    s = settle(ms, X=X, method="sparse")
    assert s.residual <= 1e-9 and s.message == "" and s.self_stress_states is None
    assert np.abs(s.tensions - eq.tensions).max() <= 1e-8 * eq.tensions.max()
    assert np.abs(s.string_lengths - eq.string_lengths).max() <= 1e-10          # m
    assert ms.bar_length_error(s.positions).max() <= 1e-12


@pytest.fixture(scope="module")
def tower200():
    return built(tower(40, 5, joints="class1"))              # 200 bars, 400 nodes, 1,200 coordinates


def _no_large_dense(monkeypatch, limit=300 * 300):
    """SVD / symmetric eigensolvers refuse matrices of more than ``limit`` entries (a dense SVD of the
    1,200 x 1,380 equilibrium matrix or a 1,200-coordinate eigenproblem would trip it)."""
    for name in ("svd", "eigh", "eigvalsh"):
        orig = getattr(scipy.linalg, name)

        def guarded(a, *args, _orig=orig, _name=name, **kw):
            assert np.asarray(a).size <= limit, f"dense {_name} of a {np.shape(a)} matrix"
            return _orig(a, *args, **kw)
        monkeypatch.setattr(scipy.linalg, name, guarded)


def test_a_200_bar_tower_goes_through_the_sparse_paths(tower200, monkeypatch):
    assert use_sparse(tower200)                              # 'auto' picks the sparse paths at this size
    _no_large_dense(monkeypatch)
    eq = prestress(tower200, min_tension=5.0)
    assert eq.message == "" and eq.self_stress_states is None
    assert eq.residual <= 1e-9 * 30.0                       # N, at tensions up to ~30 N
    assert eq.tensions.min() >= 5.0 - 1e-9
    m = with_rest_lengths(tower200, eq.rest_lengths)
    st = stability(m, m.positions)
    assert st["method"] == "sparse" and st["stable"] and st["rigid_body_modes"] == 6
    assert st["below_shift"] == 0 and len(st["eigenvalues"]) == 16 and st["frequencies_hz"][6] > 0.1


def test_sparse_settle_of_a_200_bar_tower_returns_to_its_prestressed_shape(tower200, monkeypatch):
    eq = prestress(tower200, min_tension=5.0)
    m = with_rest_lengths(tower200, eq.rest_lengths)
    X = m.positions + 1e-3 * np.cos(np.arange(m.positions.size)).reshape(m.positions.shape)   # 1 mm off
    _no_large_dense(monkeypatch)
    s = settle(m, X=X)
    assert s.self_stress_states is None and s.message == ""
    assert s.residual <= 1e-9 and m.bar_length_error(s.positions).max() <= 1e-12
    # the free tower's equilibrium for these rest lengths: the prestressed one up to a rigid motion
    assert np.abs(s.tensions - eq.tensions).max() <= 1e-6 * eq.tensions.max()


def test_cli_equilibrium_on_a_large_model_says_sparse(tmp_path, capsys):
    import json
    from tensegrity_engine.cli import main
    path = tmp_path / "tower.yaml"
    path.write_text(json.dumps(tower(40, 5, joints="class1")))          # JSON is YAML
    assert main(["equilibrium", str(path), "--min-tension", "5"]) == 0
    out = capsys.readouterr().out
    assert "self-stress states not counted" in out and "stable: yes" in out and "sparse: lowest 16 modes" in out
