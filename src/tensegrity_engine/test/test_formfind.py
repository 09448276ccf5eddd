"""Force-density form-finding (formfind.py, `tensegrity formfind`): forms recovered from topology and
group force densities alone, checked against analytic forms and by the engine's own equilibrium."""
import math

import numpy as np
import pytest
import yaml

from tensegrity_engine.cli import main
from tensegrity_engine.statics.balance import equilibrium_matrix, static_forces
from tensegrity_engine.errors import ModelError
from tensegrity_engine.statics.formfind import FormFindError, density_matrix, form_find, smallest_modes, topology
from tensegrity_engine.generators import icosahedron, n_prism
from tensegrity_engine.model.build import build_model
from tensegrity_engine.model.load import load_model
from tensegrity_engine.model.spec import spec_from_dict

# Residual bound [N] of the brief; the forms here carry forces of 1-100 N, so rounding alone gives ~1e-13 N.
RESIDUAL = 1e-9
# Angles and relative lengths: the adaptive method stops at eigenvalues 1e-12 of the largest; the form's
# error is of that order times the conditioning (measured: ~1e-12 rad), so 1e-9 leaves a wide margin.
ANGLE_TOL = 1e-9
REL_TOL = 1e-9


def _model(doc):
    return build_model(spec_from_dict(doc))


def _twisted_start(n, extra=0.5, shrink=0.7):
    """An n-prism drawing far from equilibrium: top ring turned by `extra` rad and shrunk."""
    doc = n_prism(n)
    for nd in doc["nodes"][n:]:
        x, y, z = nd["position"]
        c, s = math.cos(extra), math.sin(extra)
        nd["position"] = [shrink * (c * x - s * y), shrink * (s * x + c * y), z]
    return doc


def _projected_bar_angles(X, n):
    """Unsigned angle [rad] between each bar's two ends seen from the prism axis, on the ring plane."""
    bot, top = X[:n] - X[:n].mean(axis=0), X[n:] - X[n:].mean(axis=0)
    axis = X[n:].mean(axis=0) - X[:n].mean(axis=0)
    axis /= np.linalg.norm(axis)
    a = bot - np.outer(bot @ axis, axis)
    b = top - np.outer(top @ axis, axis)
    cos = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return np.arccos(np.clip(cos, -1.0, 1.0))


def _engine_residual(model, bar_forces, external=None):
    """Largest reduced nodal force [N] of the engine's string law plus the given bar forces."""
    F, _ = static_forces(model, model.positions, external=external)
    E, _ = equilibrium_matrix(model, model.positions)
    return float(np.abs(F.ravel() + E[:, len(model.string_names):] @ bar_forces).max())


@pytest.mark.parametrize("n, q", [
    (3, {"bars": -1.0, "bottom": 2.0, "top": 0.5, "vertical": 1.5}),
    (4, {"bars": -1.0, "bottom": 1.0, "top": 3.0, "vertical": 1.0}),
    (6, {"bars": -3.0, "bottom": 1.0, "top": 1.0, "vertical": 1.0}),
    (12, None),
])
def test_prism_twist_recovered_from_topology(n, q):
    res = form_find(_model(_twisted_start(n)), q, min_tension=5.0)
    expected = abs((1.5 * math.pi - math.pi / n + math.pi) % (2 * math.pi) - math.pi)  # the generator's twist
    angles = _projected_bar_angles(res.positions, n)
    assert np.abs(angles - expected).max() <= ANGLE_TOL
    assert res.nullity == 4
    assert res.residual <= RESIDUAL
    assert res.tensions.min() >= 5.0 * (1 - 1e-12) and res.bar_forces.min() > 0
    assert res.stable
    # bars at the drawing's bar length (all equal by symmetry, so a uniform scale meets them)
    L = np.linalg.norm(res.positions[:n] - res.positions[n:], axis=1)
    start = _model(_twisted_start(n)).bar_length
    assert np.abs(L / start - 1).max() <= REL_TOL
    # a vertical string and a bar meet at the analytic twist: the verticals share the bars' force density
    tq = dict(zip(res.topology.group_names, res.group_q))
    assert tq["vertical"] == pytest.approx(-tq["bars"], rel=1e-9)


def test_icosahedron_form_recovered():
    m = _model(icosahedron(bar_length=0.6))
    X0 = m.positions + np.random.default_rng(3).normal(0, 0.05, m.positions.shape)   # start drawing: only names
    doc = icosahedron(bar_length=0.6)
    for nd, p in zip(doc["nodes"], X0):
        nd["position"] = p.tolist()
    res = form_find(_model(doc), {"bars": -1.0, "edge": 1.0}, min_tension=2.0, bar_lengths=0.6)
    X = res.positions
    ends = res.topology.ends[res.topology.is_bar]
    u = X[ends[:, 1]] - X[ends[:, 0]]
    L = np.linalg.norm(u, axis=1)
    assert np.abs(L / 0.6 - 1).max() <= REL_TOL
    mid = 0.5 * (X[ends[:, 0]] + X[ends[:, 1]])
    pair_gap = np.linalg.norm(mid[0::2] - mid[1::2], axis=1)          # bars 2k, 2k+1 form a pair
    assert np.abs(pair_gap / 0.3 - 1).max() <= REL_TOL                # half a bar length apart
    cross = np.linalg.norm(np.cross(u[0::2], u[1::2]), axis=1) / L[0::2] ** 2
    assert cross.max() <= REL_TOL                                     # the bars of a pair are parallel
    tq = dict(zip(res.topology.group_names, res.group_q))
    assert tq["bars"] / tq["edge"] == pytest.approx(-1.5, rel=1e-9)   # the classic q ratio of this form
    assert np.ptp(res.tensions) <= 1e-9 * res.tensions.max()
    assert res.residual <= RESIDUAL and res.stable


def _cable_doc(N=8, span=2.0, mass=0.1, q=None):
    nodes = [{"name": f"c{i}", "position": [span * i / N, 0.0, 0.0], "mass": 0.0 if i in (0, N) else mass,
              "fixed": i in (0, N)} for i in range(N + 1)]
    strings = [{"name": f"s{i}", "path": [f"c{i}", f"c{i + 1}"], "EA": 5000.0, "tension": 0.0, "group": "cable"}
               for i in range(N)]
    return {"schema": "tensegrity-model", "version": 1, "name": "cable", "gravity": [0.0, 0.0, -9.81],
            "nodes": nodes, "strings": strings}


def test_supported_cable_matches_analytic_parabola():
    N, span, mass, q = 8, 2.0, 0.1, 2.0
    m = _model(_cable_doc(N, span, mass))
    res = form_find(m, {"cable": q})
    i = np.arange(N + 1)
    P = mass * 9.81
    # q (z[i-1] - 2 z[i] + z[i+1]) = P  ->  z[i] = -(P / 2q) i (N - i); x stays evenly spaced
    z = -(P / (2 * q)) * i * (N - i)
    assert np.abs(res.positions[:, 2] - z).max() <= 1e-12 * span   # a sparse LU solve: rounding only
    assert np.abs(res.positions[:, 0] - span * i / N).max() <= 1e-12 * span
    L = np.linalg.norm(np.diff(res.positions, axis=0), axis=1)
    assert np.allclose(res.tensions, q * L, rtol=1e-12)              # the engine's string law gives t = q L
    assert res.residual <= RESIDUAL and res.tensions.min() > 0 and res.stable
    assert res.method.startswith("linear")


def test_exact_q_without_a_form_is_refused_naming_the_nullity():
    m = _model(n_prism(4))
    with pytest.raises(FormFindError, match=r"nullity 2 < 4"):
        form_find(m, {"bars": -1, "bottom": 1, "top": 2, "vertical": 1}, adapt=False)
    D = density_matrix(topology(m), np.r_[[-1.0] * 4, [1.0] * 12])
    w, _ = smallest_modes(D, 3, 10.0)
    assert w[0] == pytest.approx(0.0, abs=1e-12)   # the z mode alone (q_vertical = -q_bar) is in the null space


def test_exact_analytic_q_is_accepted():
    # 3-prism with equal rings: q_ring / q_vertical = 1 / sqrt(3) (typed to 9 digits, adapted within 1e-8)
    res = form_find(_model(n_prism(3)), {"bars": -1, "bottom": 0.577350269, "top": 0.577350269, "vertical": 1},
                    adapt=False)
    assert res.residual <= RESIDUAL and res.iterations == 0


@pytest.mark.parametrize("shape", ["symmetric", "start"])
def test_unequal_bar_lengths_by_an_affine_map(shape):
    # an affine image of a self-stressed form is self-stressed with the same q: three bar lengths are met
    res = form_find(_model(n_prism(3)), min_tension=2.0, bar_lengths=[0.30, 0.32, 0.34], shape=shape)
    L = np.linalg.norm(res.positions[:3] - res.positions[3:], axis=1)
    assert np.abs(L - [0.30, 0.32, 0.34]).max() <= 1e-9 * 0.34 and not res.notes
    assert res.residual <= RESIDUAL and res.tensions.min() > 0 and res.stable


def test_missing_and_unknown_groups_are_named():
    m = _model(n_prism(3))
    with pytest.raises(FormFindError, match="'vertical'"):
        form_find(m, {"bars": -1, "bottom": 1, "top": 1})
    with pytest.raises(FormFindError, match="unknown group.*'ring'"):
        form_find(m, {"bars": -1, "ring": 1, "vertical": 1})


def test_composite_strings_are_refused():
    with pytest.raises(ModelError, match="simple strings only"):
        form_find(load_model("stacked_manipulator"))


def test_length_symmetry_groups_equal_members():
    res = form_find(_model(n_prism(5)), symmetry="length", min_tension=1.0)
    # equal radii: both rings share one group; bars and verticals one each
    assert len(res.topology.group_names) == 3
    assert res.residual <= RESIDUAL and res.tensions.min() > 0


def test_cli_formfind_writes_a_balanced_model(tmp_path, capsys):
    src = tmp_path / "p4.yaml"
    src.write_text(yaml.safe_dump(_twisted_start(4)))
    out = tmp_path / "p4ff.yaml"
    rc = main(["formfind", str(src), "--q", "bars=-1", "--q", "bottom=1", "--q", "top=1", "--q", "vertical=1",
               "--min-tension", "3", "-o", str(out)])
    assert rc == 0, capsys.readouterr()
    m = load_model(out)                                               # the written file, reloaded
    L = m.string_lengths(m.positions)
    t = m.string_stiffness_at(m.rest_length) * (L - m.rest_length)
    assert t.min() == pytest.approx(3.0, rel=1e-9)
    E, _ = equilibrium_matrix(m, m.positions)
    nc = len(m.string_names)
    f = np.linalg.lstsq(E[:, nc:], -E[:, :nc] @ t, rcond=None)[0]     # bar forces balancing the strings
    assert _engine_residual(m, f) <= RESIDUAL and f.min() > 0
    bad = tmp_path / "bad.yaml"
    rc = main(["formfind", str(src), "--exact-q", "--q", "bars=-1", "--q", "bottom=1", "--q", "top=2",
               "--q", "vertical=1", "-o", str(bad)])
    assert rc == 1 and not bad.exists()
    assert "nullity 2 < 4" in capsys.readouterr().out


def test_large_prism_uses_the_sparse_eigensolver():
    # 500 nodes > DENSE_LIMIT: eigsh on the deflated operator; start drawing twisted by 1 mrad
    from tensegrity_engine.statics.formfind import DENSE_LIMIT
    n = 250
    assert 2 * n > DENSE_LIMIT
    res = form_find(_model(_twisted_start(n, extra=1e-3, shrink=1.0)), None, min_tension=1.0,
                    check_stability=False)
    expected = abs((1.5 * math.pi - math.pi / n + math.pi) % (2 * math.pi) - math.pi)
    assert res.iterations >= 1 and res.nullity == 4
    assert np.abs(_projected_bar_angles(res.positions, n) - expected).max() <= ANGLE_TOL
    assert res.residual <= RESIDUAL and res.tensions.min() >= 1.0 * (1 - 1e-12) and res.stable is None
