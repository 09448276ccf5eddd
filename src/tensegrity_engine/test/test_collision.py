"""Segment distances (exact cases under all orderings, rotations, brute force) and model sweeps."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import optimize
from scipy.spatial.transform import Rotation

from tensegrity_engine.collision.capsules import check, closest_points, model_elements, segment_distance

CASES = [  # (P0, P1, Q0, Q1, distance)
    ((-1, 0, 0), (1, 0, 0), (0, -1, 1), (0, 1, 1), 1.0),                     # skew interior
    ((-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0), 0.0),                     # crossing
    ((-1, 0, 0), (1, 0, 0), (0, 0, 0), (0, 1, 0), 0.0),                      # T-junction
    ((0, 0, 0), (2, 0, 0), (1, 1, 0), (3, 1, 0), 1.0),                       # parallel overlapping
    ((0, 0, 0), (2, 0, 0), (3, 0, 0), (5, 0, 0), 1.0),                       # collinear disjoint
    ((0, 0, 0), (2, 0, 0), (4, 0, 0), (1, 0, 0), 0.0),                       # collinear overlapping
    ((0, 0, 0), (2, 0, 0), (0, 1, 0), (2, 1, 0), 1.0),                       # parallel same extent
    ((0, 0, 0), (2, 0, 0), (2, 0, 0), (0, 0, 0), 0.0),                       # identical, reversed
    ((0, 1, 0), (0, 1, 0), (-1, 0, 0), (1, 0, 0), 1.0),                      # point - segment
    ((1, 2, 3), (1, 2, 3), (4, 6, 3), (4, 6, 3), 5.0),                       # point - point
    ((0, 0, 0), (1000, 0, 0), (0, 1e-6, 1e-6), (1000, -1e-6, 1e-6), 1e-6),  # long, nearly parallel
    ((0, 0, 0), (1000, 0, 0), (0, 1e-6, 0), (1000, -1e-6, 0), 0.0),        # long, nearly parallel, crossing
]


def orderings(p0, p1, q0, q1):
    """The four orderings: as given, segments swapped, endpoints of both reversed, both."""
    yield p0, p1, q0, q1
    yield q0, q1, p0, p1
    yield p1, p0, q1, q0
    yield q1, q0, p1, p0


def scale_of(*pts):
    return max(1.0, max(np.abs(np.asarray(p, float)).max() for p in pts))


@pytest.mark.parametrize("case", CASES)
def test_exact_cases_all_orderings(case):
    *pts, expected = case
    for o in orderings(*pts):
        d = segment_distance(*o)
        assert np.isfinite(d)
        # 1e-12 x coordinate scale: rounding of the point differences, nothing else
        assert abs(d - expected) <= 1e-12 * scale_of(*pts), (o, d)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_cases_rotated_and_translated(case, seed):
    *pts, expected = case
    rot = Rotation.random(random_state=seed)
    shift = np.random.default_rng(seed).uniform(-10, 10, 3)
    moved = [rot.apply(np.asarray(p, float)) + shift for p in pts]
    for o in orderings(*moved):
        d = segment_distance(*o)
        # rotating 1000 m coordinates rounds them at ~1e-13 m: tolerance 1e-12 x scale (1e-9 m there)
        assert abs(d - expected) <= 1e-12 * scale_of(*moved), (seed, d, expected)


def _brute(p0, p1, q0, q1):
    p0, p1, q0, q1 = (np.asarray(v, float) for v in (p0, p1, q0, q1))
    f = lambda x: np.sum((p0 + x[0] * (p1 - p0) - q0 - x[1] * (q1 - q0)) ** 2)   # noqa: E731
    g = np.linspace(0, 1, 41)
    S, T = np.meshgrid(g, g)
    vals = np.sum((p0 + S[..., None] * (p1 - p0) - q0 - T[..., None] * (q1 - q0)) ** 2, axis=-1)
    k = np.unravel_index(np.argmin(vals), vals.shape)
    best = optimize.minimize(f, [S[k], T[k]], bounds=[(0, 1), (0, 1)], method="L-BFGS-B",
                             options={"ftol": 1e-15, "gtol": 1e-12})
    return np.sqrt(min(best.fun, vals.min()))


def test_random_pairs_against_brute_force():
    rng = np.random.default_rng(42)
    for _ in range(300):
        pts = rng.normal(size=(4, 3))
        if rng.random() < 0.3:       # make some nearly parallel
            pts[3] = pts[2] + (pts[1] - pts[0]) * rng.uniform(0.5, 2) + rng.normal(scale=1e-7, size=3)
        d = segment_distance(*pts)
        ref = _brute(*pts)
        # the optimiser reference is good to ~1e-7; ours is never above it by more than that, never below
        assert d <= ref + 1e-7
        assert d >= ref - 1e-7


def test_closest_points_realise_the_distance():
    rng = np.random.default_rng(7)
    for _ in range(100):
        pts = rng.normal(size=(4, 3))
        d, pa, pb = closest_points(*pts)
        assert abs(np.linalg.norm(pa - pb) - d) <= 1e-12


def test_never_nan_on_degenerate_input():
    """Zero-length and extreme segments: finite and >= 0 for coordinates up to 1e60 m."""
    vals = [(0, 0, 0), (1e-300, 0, 0), (1e60, 0, 0), (0, -1e60, 1)]
    for a, b, c, d in itertools.product(vals, repeat=4):
        dist = segment_distance(a, b, c, d)
        assert np.isfinite(dist) and dist >= 0


def test_model_sweep_excludes_shared_nodes_and_reports_clearance(manipulator):
    el = model_elements(manipulator)
    E = len(el.names)
    assert E == 18 + 36
    # no checked pair shares a node, virtual nodes and constraint-tied nodes included
    from tensegrity_engine.collision.capsules import _attached_groups
    g = _attached_groups(manipulator)
    for i, j in zip(el.pair_i, el.pair_j):
        assert not set(g[el.ends[i]]) & set(g[el.ends[j]])
    res = check(el, manipulator.positions)
    assert res.min_clearance > 0.0 and len(res.violating) == 0
    pa, pb = res.points(el, manipulator.positions)
    assert np.allclose(np.linalg.norm(pa - pb, axis=1), res.distance, atol=1e-12)
    # brute force over the same pairs
    for m in range(0, len(el.pair_i), 37):
        i, j = el.pair_i[m], el.pair_j[m]
        X = manipulator.positions
        d = segment_distance(X[el.ends[i, 0]], X[el.ends[i, 1]], X[el.ends[j, 0]], X[el.ends[j, 1]])
        assert res.distance[m] == d
        assert res.clearance[m] == d - (el.radius[i] + el.radius[j])


def test_touching_capsules_have_zero_clearance_and_do_not_violate():
    from conftest import make_model
    m = make_model([("a", (0, 0, 0)), ("b", (1, 0, 0)), ("c", (0.5, -0.5, 0.03)), ("d", (0.5, 0.5, 0.03))],
                   bars=[("b1", "a", "b", 1.0), ("b2", "c", "d", 1.0)])
    # radii default 0.005 -> set through the spec: rebuild with radius 0.015 each (sum 0.03 = distance)
    import dataclasses

    from tensegrity_engine import build_model
    spec = dataclasses.replace(m.spec, bars=tuple(dataclasses.replace(b, radius=0.015) for b in m.spec.bars))
    m = build_model(spec)
    res = check(model_elements(m), m.positions)
    assert abs(res.min_clearance) <= 1e-15
    assert len(res.violating) == 0                     # strict: clearance < margin
    assert len(check(model_elements(m), m.positions, margin=1e-9).violating) == 1


def test_clearance_command_finds_first_violation(tmp_path, capsys):
    """Two free bars fly into each other: 'tensegrity clearance DIR' reports the first contact time."""
    import json

    from conftest import make_model

    from tensegrity_engine import Simulator
    from tensegrity_engine.cli import main
    from tensegrity_engine.model.write import dump_model
    m = make_model([("a", (0, 0, 0)), ("b", (1, 0, 0)), ("c", (0.5, -0.5, 0.5)), ("d", (0.5, 0.5, 0.5))],
                   bars=[("b1", "a", "b", 1.0), ("b2", "c", "d", 1.0)])
    sim = Simulator(m, integrator="rk4", dt=1e-3)
    v = np.zeros((4, 3))
    v[2:, 2] = -0.9                                   # b2 flies onto b1 at 0.9 m/s (no gravity, no strings)
    sim.reset(velocities=v)
    tr = sim.run(1.0, rate=100)
    tr.save(tmp_path)
    dump_model(m, tmp_path / "model.yaml")
    assert main(["clearance", str(tmp_path)]) == 1
    out = json.loads(capsys.readouterr().out)
    # contact when 0.5 - 0.9 t = r1 + r2 = 0.01 m -> t = 0.544 s; first sample with clearance < 0: 0.55 s
    assert out["first_violation"]["pair"] == ["b1", "b2"]
    assert out["first_violation"]["time_s"] == pytest.approx(0.55)
    assert (tmp_path / "clearance.png").stat().st_size > 10_000


def test_clearance_segments_json(tmp_path, capsys):
    import json

    from tensegrity_engine.cli import main
    f = tmp_path / "s.csv"
    f.write_text("x1,y1,z1,x2,y2,z2,radius\n-1,0,0,1,0,0,0.1\n0,-1,1,0,1,1,0.2\n")
    assert main(["clearance", "--segments", str(f)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows == [{"i": 0, "j": 1, "distance": 1.0, "clearance": pytest.approx(0.7)}]
    f.write_text("1,2,3\n4,5,6,7,8,9\n")
    assert main(["clearance", "--segments", str(f)]) == 2


def test_clearance_refuses_a_trajectory_of_another_model(tmp_path, capsys, prism3, manipulator):
    """A 36-node model.yaml next to a 6-node trajectory.npz printed "overall_min_m": NaN and a made-up
    violation (the kernel read past the node array); now both files are named and nothing is computed."""
    from tensegrity_engine import Simulator
    from tensegrity_engine.collision.clearance_report import trajectory_clearance
    from tensegrity_engine.cli import main
    from tensegrity_engine.model.write import dump_model
    tr = Simulator(prism3, integrator="rk4").run(0.1, rate=50)
    tr.save(tmp_path)
    dump_model(manipulator, tmp_path / "model.yaml")
    assert main(["clearance", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert str(tmp_path / "trajectory.npz") in captured.err and str(tmp_path / "model.yaml") in captured.err
    assert "are not those of" in captured.err and captured.err.count("\n") == 1     # node names compared
    with pytest.raises(ValueError, match="do not match model"):
        trajectory_clearance(manipulator, tr.nodes, tr.t)
    with pytest.raises(ValueError, match="do not match model"):              # wrong number of columns
        trajectory_clearance(prism3, tr.nodes[:, :, :2], tr.t)
    with pytest.raises(ValueError, match="do not match model"):              # times and samples differ
        trajectory_clearance(prism3, tr.nodes, tr.t[:-1])


def test_clearance_json_without_pairs_is_strict_json(tmp_path, capsys):
    """No checkable pair (one bar): the minimum is null, not Infinity/NaN (invalid JSON)."""
    import json

    from conftest import make_model

    from tensegrity_engine import Simulator
    from tensegrity_engine.cli import main
    from tensegrity_engine.model.write import dump_model
    m = make_model([("a", (0, 0, 0)), ("b", (1, 0, 0))], bars=[("b1", "a", "b", 1.0)])
    Simulator(m, integrator="rk4").run(0.1, rate=50).save(tmp_path)
    dump_model(m, tmp_path / "model.yaml")
    assert main(["clearance", str(tmp_path)]) == 0

    def reject(name):
        raise AssertionError(f"{name} in JSON output")
    out = json.loads(capsys.readouterr().out, parse_constant=reject)
    assert out["pairs_checked"] == 0 and out["overall_min_m"] is None and out["overall_min_time_s"] is None
    assert out["closest_pair"] == [] and out["first_violation"] is None


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("margin", [0.0, 0.05, 0.3])
def test_pruned_sweep_is_certified(seed, margin):
    """Pruning never misses a violation, keeps the exact minimum, and its bounds are true lower bounds."""
    from tensegrity_engine.collision.capsules import Elements
    rng = np.random.default_rng(seed)
    k = 120
    a = rng.uniform(0, 1, (k, 3))
    d = rng.normal(size=(k, 3))
    b = a + d / np.linalg.norm(d, axis=1, keepdims=True) * rng.uniform(0.05, 0.5, (k, 1))
    X = np.ascontiguousarray(np.stack([a, b], 1).reshape(-1, 3))
    ends = np.arange(2 * k, dtype=np.int64).reshape(k, 2)
    r = rng.uniform(0.001, 0.02, k)
    ii, jj = np.triu_indices(k, 1)
    el = Elements(tuple(map(str, range(k))), ends, r, np.zeros(k, np.int64), ii.astype(np.int64),
                  jj.astype(np.int64), r[ii] + r[jj])
    full = check(el, X, margin)
    pr = check(el, X, margin, prune=True)
    assert np.array_equal(pr.violating, full.violating)
    assert pr.min_clearance == full.min_clearance and pr.argmin == full.argmin
    assert np.all(pr.clearance <= full.clearance + 1e-15)             # bounds never exceed the truth
    assert np.array_equal(pr.clearance[pr.exact], full.clearance[pr.exact])
    assert (~pr.exact).sum() > 0                                        # it did prune something
