"""The 12-bar cuboctahedron (diamond tensegrity of the cube): counts, a verified stable all-taut
equilibrium, bars that stay apart, the cube's symmetry, and the CLI."""
import itertools

import numpy as np

from tensegrity_engine.collision.capsules import segment_distance
from tensegrity_engine.generators import cuboctahedron, verify_template


def test_counts_equilibrium_stability_and_clearance():
    model, rep = verify_template(cuboctahedron(bar_length=0.6), min_tension=5.0)
    assert (len(model.node_names), len(model.bar_names), len(model.string_names)) == (24, 12, 48)
    assert rep["residual"] <= 1e-9 and rep["tensions"].min() >= 5.0 - 1e-9      # N
    assert rep["stable"] and rep["rigid_body_modes"] == 6
    X, B = model.positions, model.bars
    assert np.allclose(np.linalg.norm(X[B[:, 0]] - X[B[:, 1]], axis=1), 0.6, rtol=1e-9)
    gap = min(segment_distance(X[B[i, 0]], X[B[i, 1]], X[B[j, 0]], X[B[j, 1]])
              for i, j in itertools.combinations(range(12), 2))
    assert gap > 0.15 * 0.6             # no two bars touch: 0.21 bar lengths at the closest
    # cube symmetry: the bar centres are the 12 vertices of a cuboctahedron (all at one radius, each with
    # 4 nearest neighbours at that same distance)
    c = 0.5 * (X[B[:, 0]] + X[B[:, 1]])
    c -= c.mean(axis=0)
    r = np.linalg.norm(c, axis=1)
    assert np.ptp(r) < 1e-9 * r.mean()
    D = np.linalg.norm(c[:, None] - c[None], axis=2) + np.eye(12) * 10
    assert np.allclose(np.sort(D, axis=1)[:, :4], r.mean(), rtol=1e-6)


def test_cli_writes_it(tmp_path, capsys):
    from tensegrity_engine.cli import main
    from tensegrity_engine.model.load import load_model
    assert main(["new", "cuboctahedron", "--length", "0.4", "-o", str(tmp_path / "c.yaml")]) == 0
    m = load_model(tmp_path / "c.yaml")
    assert len(m.bar_names) == 12 and np.allclose(m.bar_length, 0.4, rtol=1e-9)
