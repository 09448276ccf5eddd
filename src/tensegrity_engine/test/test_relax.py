"""Dynamic relaxation with kinetic damping (relax.py, `tensegrity relax`): the equilibrium shape for a
model's own rest lengths, found from far away, and clear failures (slack strings, collapse)."""
import math

import numpy as np
import pytest

from tensegrity_engine.cli import main
from tensegrity_engine.statics.equilibrium import prestress, with_rest_lengths
from tensegrity_engine.statics.formfind import form_find
from tensegrity_engine.generators import n_prism
from tensegrity_engine.model.build import build_model
from tensegrity_engine.model.load import load_model
from tensegrity_engine.model.spec import spec_from_dict
from tensegrity_engine.statics.relax import RelaxFailed, _CrossWatch, relax

# The brief's residual bound [N]; tensions here are 5-700 N, so rounding alone is ~1e-13 N.
RESIDUAL = 1e-9


@pytest.fixture(scope="module")
def prism():
    m = build_model(spec_from_dict(n_prism(3)))
    return m, prestress(m, min_tension=5.0).rest_lengths


def _bar_angles(X, n):
    """Unsigned angle [rad] between each bar's ends seen along the prism axis (test_formfind's invariant)."""
    bot, top = X[:n] - X[:n].mean(axis=0), X[n:2 * n] - X[n:2 * n].mean(axis=0)
    axis = X[n:2 * n].mean(axis=0) - X[:n].mean(axis=0)
    axis /= np.linalg.norm(axis)
    a, b = bot - np.outer(bot @ axis, axis), top - np.outer(top @ axis, axis)
    return np.arccos(np.clip(np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1), -1, 1))


def test_prism_from_far_away_relaxes_to_the_analytic_twist(prism):
    m0, rest = prism
    m = with_rest_lengths(m0, 0.8 * rest)                    # every string 20 % shorter: far from equilibrium
    X = m.positions + np.random.default_rng(7).normal(0.0, 0.02, m.positions.shape)   # and 2 cm off
    res = relax(m, X)
    assert res.ok, res.problems
    assert res.residual <= RESIDUAL
    assert res.tensions.min() > 0 and res.stable
    assert res.resets >= 1 and res.iterations >= res.resets
    bl = np.linalg.norm(res.positions[m.bars[:, 0]] - res.positions[m.bars[:, 1]], axis=1)
    assert np.abs(bl / m.bar_length - 1).max() <= 1e-9      # rigid bars stay rigid (Newton keeps g = 0)
    # symmetric rest lengths -> the symmetric prism; its twist is the generator's (no rest-length dependence).
    # 1e-7 rad: the residual 1e-9 N over the softest stiffness (~1e2 N/m) moves nodes by ~1e-11 m
    expected = abs((1.5 * math.pi - math.pi / 3 + math.pi) % (2 * math.pi) - math.pi)
    assert np.abs(_bar_angles(res.positions, 3) - expected).max() <= 1e-7


def test_slack_strings_are_reported_not_hidden(prism):
    m0, rest = prism
    m = with_rest_lengths(m0, 1.3 * rest)                    # 30 % too long: nothing can be taut
    res = relax(m, m.positions + np.random.default_rng(1).normal(0.0, 0.02, m.positions.shape))
    assert not res.ok
    assert any("slack" in p for p in res.problems) and len(res.slack) == 9


def test_collapse_is_reported(prism):
    m0, rest = prism
    r = rest.copy()
    r[:6] *= 0.2                                             # rings pulled to a fifth: the bars pass each other
    res = relax(with_rest_lengths(m0, r))
    assert not res.ok and res.crossings
    assert any("collapsed" in p and "passed through each other" in p for p in res.problems)


def test_unsupported_model_under_gravity_is_refused():
    doc = n_prism(3)
    doc["gravity"] = [0.0, 0.0, -9.81]
    with pytest.raises(RelaxFailed, match="no fixed node: it falls"):
        relax(build_model(spec_from_dict(doc)))


def test_cross_watch_tells_crossing_from_passing_by():
    m = build_model(spec_from_dict(n_prism(3)))
    w = _CrossWatch(m)
    b0, b1 = m.bars[0], m.bars[1]
    X = m.positions.copy()
    mid1 = 0.5 * (X[b1[0]] + X[b1[1]])
    w.update(X)
    # move bar b2 rigidly so that its midpoint goes through b1's midpoint and beyond
    mid0 = 0.5 * (X[b0[0]] + X[b0[1]])
    Y = X.copy()
    Y[b1] += 2.0 * (mid0 - mid1)
    assert ("b1", "b2") in w.update(Y)
    # moving it back far beyond b1's end: the lines cross outside the bar, which is not a collision
    w2 = _CrossWatch(m)
    w2.update(X)
    Z = X.copy()
    Z[b1] += 2.0 * (mid0 - mid1) + 3.0 * (X[b0[1]] - X[b0[0]])
    assert ("b1", "b2") not in w2.update(Z)


def test_supported_cable_relaxes_to_the_force_density_shape(tmp_path):
    """Two tools, one answer: the cable net form-found under gravity (linear FDM) is where kinetic damping
    from a straight start ends."""
    N, span = 6, 1.5
    nodes = [{"name": f"c{i}", "position": [span * i / N, 0.0, 0.0], "mass": 0.0 if i in (0, N) else 0.2,
              "fixed": i in (0, N)} for i in range(N + 1)]
    strings = [{"name": f"s{i}", "path": [f"c{i}", f"c{i + 1}"], "EA": 3000.0, "tension": 0.0, "group": "cable"}
               for i in range(N)]
    doc = {"schema": "tensegrity-model", "version": 1, "name": "cable", "gravity": [0.0, 0.0, -9.81],
           "nodes": nodes, "strings": strings}
    m = build_model(spec_from_dict(doc))
    ff = form_find(m, {"cable": 4.0})
    straight = with_rest_lengths(m, ff.rest_lengths)        # form-found rest lengths, straight start
    res = relax(straight)
    assert res.ok, res.problems
    # positions agree to the residual over the cable's stiffness (1e-9 N / ~1e3 N/m): 1e-9 m is ample
    assert np.abs(res.positions - ff.model.positions).max() <= 1e-9
    assert res.gravity_energy < 0 < res.elastic_energy


def test_cli_relax_writes_only_good_shapes(tmp_path, capsys, prism):
    m0, rest = prism
    from tensegrity_engine.model.write import dump_model
    good = dump_model(with_rest_lengths(m0, 0.8 * rest), tmp_path / "short.yaml")
    out = tmp_path / "relaxed.yaml"
    assert main(["relax", str(good), "--perturb", "0.02", "--seed", "3", "--quiet", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "residual" in text and "stable: yes" in text
    m = load_model(out)
    res = relax(m)                                            # already relaxed: nothing left to do
    assert res.ok and res.residual <= RESIDUAL
    # only the last digits move: 0.3-2.6e-9 m seen when the prestress changed at the 1e-15 level (the
    # relaxed prism's twist is soft, so positions are far less determined than forces at 1e-12 N)
    assert np.abs(res.positions - m.positions).max() <= 1e-8
    slack = dump_model(with_rest_lengths(m0, 1.3 * rest), tmp_path / "long.yaml")
    bad = tmp_path / "bad.yaml"
    assert main(["relax", str(slack), "--perturb", "0.02", "--quiet", "-o", str(bad)]) == 1
    assert not bad.exists() and "slack" in capsys.readouterr().out


def test_cli_relax_class_k_model_with_constraints_and_gravity(tmp_path, capsys):
    """The manipulator: class-3 joints (virtual nodes), linear constraints, fixed nodes, gravity and
    composite strings. The written file (virtual nodes included) reloads at the relaxed shape."""
    out = tmp_path / "manip.yaml"
    assert main(["relax", "stacked_manipulator", "--perturb", "0.01", "--quiet", "-o", str(out)]) == 0
    assert "stable: yes" in capsys.readouterr().out
    res = relax(load_model(out))
    assert res.ok and res.residual <= RESIDUAL and res.resets <= 2    # starts at rest in equilibrium
