"""tensegrity-compare for a robot that is not the paper's manipulator: a free six-bar (expanded octahedron)
without frames, with gravity (it falls: x(t) = x0 - g t^2/2, the shape stays), or actuated in zero gravity.

Noise tolerance: markers get Gaussian noise of sigma = 0.5 mm per axis, so a node's deviation d has
E[d^2] = 3 sigma^2 (RMS 0.866 mm). Over T = 101 samples the per-node mean of d^2 has a relative standard
deviation sqrt(2 / (3 T)) = 8 %, i.e. 4 % on the RMS: per node we accept ±20 % (5 standard deviations),
over all 12 nodes (1212 samples, 1.2 %) ±5 %. The seed is fixed, so the numbers do not change between runs.
"""
from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from tensegrity_engine import Simulator, load_model
from tensegrity_engine.inputs import table, u_to_angles
from tensegrity_mocap.compare import CompareError, compare, experiment_from_arrays, main, parse_frame
from tensegrity_mocap.compare_inputs import load_experiment, parse_marker_map
from tensegrity_mocap.motive_csv import write_motive_csv, z_up_to_y_up

L = 0.6
A, B = L / 4, L / 2
SIGMA = 0.0005                     # m, marker noise per axis
NOISE_RMS = SIGMA * np.sqrt(3) * 1e3          # mm, expected RMS of the node deviation


def _sixbar_geometry():
    """12 nodes at cyclic permutations of (0, ±A, ±B) (lifted 1 m), 6 bars, the 24 icosahedron edges that do
    not join the ends of two parallel bars."""
    phi = (1 + 5 ** 0.5) / 2

    def perm(p, t):
        return tuple(t[(i - p) % 3] for i in range(3))
    key = [(p, s1, s2) for p in range(3) for s1 in (1, -1) for s2 in (1, -1)]
    nodes = [np.add(perm(p, (0, s1 * A, s2 * B)), (0, 0, 1.0)) for p, s1, s2 in key]
    ico = [np.array(perm(p, (0, s1, s2 * phi))) for p, s1, s2 in key]
    bars = [(i, j) for i, j in itertools.combinations(range(12), 2) if key[i][:2] == key[j][:2]]
    strings = [(i, j) for i, j in itertools.combinations(range(12), 2)
               if abs(np.linalg.norm(ico[i] - ico[j]) - 2) < 1e-9
               and not (key[i][0] == key[j][0] and key[i][2] == key[j][2])]
    return nodes, bars, strings


def sixbar_yaml(path, gravity=-9.81, actuated=False):
    nodes, bars, strings = _sixbar_geometry()
    assert len(bars) == 6 and len(strings) == 24
    lines = ["schema: tensegrity-model", "version: 1", "name: sixbar", f"gravity: [0, 0, {gravity}]", "nodes:"]
    lines += [f"  - {{name: n{k + 1}, position: [{x:.17g}, {y:.17g}, {z:.17g}]}}" for k, (x, y, z) in enumerate(nodes)]
    lines += ["bars:"] + [f"  - {{name: b{k + 1}, nodes: [n{i + 1}, n{j + 1}], mass: 0.2, radius: 0.01}}"
                          for k, (i, j) in enumerate(bars)]
    lines += ["strings:"] + [f"  - {{name: s{k + 1}, path: [n{i + 1}, n{j + 1}], stiffness: 2000.0, tension: 20.0, "
                             f"damping: 2.0}}" for k, (i, j) in enumerate(strings)]
    if actuated:
        lines += ["actuators:", "  - {name: m1, string: s1, spool_radius: 0.01, angle_limits: [-4, 4]}",
                  "  - {name: m2, string: s9, spool_radius: 0.01, angle_limits: [-4, 4]}"]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("sixbar")
    return {"falling": sixbar_yaml(d / "sixbar.yaml"),
            "actuated": sixbar_yaml(d / "sixbar_actuated.yaml", gravity=0.0, actuated=True), "dir": d}


@pytest.fixture(scope="module")
def falling(files):
    model = load_model(str(files["falling"]))
    return model, Simulator(model).run(1.0, rate=100.0)


U_T = np.array([0.0, 0.3, 0.6, 1.0])
U_U = np.array([[0.0, 0.0], [0.02, -0.01], [0.03, 0.01], [0.01, 0.02]])     # m reeled in


@pytest.fixture(scope="module")
def actuated(files):
    model = load_model(str(files["actuated"]))
    return model, Simulator(model).run(1.0, inputs=table(U_T, U_U), rate=100.0)


def _labels(model):
    """Marker labels 'Unlabeled 10xx' in an order unrelated to the nodes."""
    order = np.random.default_rng(7).permutation(model.n_physical)
    return {model.node_names[k]: f"Unlabeled {1000 + int(order[k])}" for k in range(model.n_physical)}


def _csv(model, traj, path, noise=SIGMA, shift=None, labels=None, seed=3, offset=(0, 0, 0), labeled=False):
    """Motive CSV (Y-up, mm) of the physical nodes with noise; ``shift`` = (node, (3,) m) moves one node;
    markers unlabeled (``labels``: node -> name) or, with ``labeled``, labeled markers named after the nodes."""
    X = traj.nodes[:, :model.n_physical].copy() + np.asarray(offset)
    X += np.random.default_rng(seed).normal(0.0, noise, X.shape) if noise else 0.0
    if shift is not None:
        X[:, model.node_index(shift[0])] += shift[1]
    labels = labels or _labels(model)
    unl = {labels[n]: z_up_to_y_up(X[:, k]) for k, n in enumerate(model.node_names[:model.n_physical])}
    if labeled:
        write_motive_csv(path, traj.t, {f"Robot:{n}": v for n, v in unl.items()}, {}, frame_rate=100.0,
                         length_units="Millimeters")
    else:
        write_motive_csv(path, traj.t, {}, unl, frame_rate=100.0, length_units="Millimeters")
    return path


def _map_file(model, path, labels=None):
    labels = labels or _labels(model)
    entries = ", ".join(f'"{lab}={n}"' for n, lab in labels.items())
    path.write_text(f"/**/mocap_bridge:\n  ros__parameters:\n    model: sixbar\n    marker_map: [{entries}]\n")
    return path


def _rms(out):
    return json.loads((out / "rms.json").read_text())


def test_marker_map_csv_per_node_rms_is_the_noise(files, falling, tmp_path, capsys):
    model, traj = falling
    csv_path = _csv(model, traj, tmp_path / "take.csv")
    out = tmp_path / "out"
    assert main([str(csv_path), "--simulate", str(files["falling"]), "--marker-map",
                 str(_map_file(model, tmp_path / "map.yaml")), "--out", str(out)]) == 0
    rms = _rms(out)
    assert rms["experiment_kind"] == "motive_csv_map" and rms["frames"] == {} and rms["overall"] is None
    assert ", none," in rms["simulation"]                 # no actuators: the default input is none
    nodes = rms["nodes"]
    assert nodes["compared"] == len(traj.t) and nodes["outside_simulation"] == 0
    assert set(nodes["per_node"]) == {f"n{k}" for k in range(1, 13)}
    for d in nodes["per_node"].values():
        assert d["rms_mm"] == pytest.approx(NOISE_RMS, rel=0.2) and d["compared"] == len(traj.t)
    assert nodes["rms_mm"] == pytest.approx(NOISE_RMS, rel=0.05)
    assert NOISE_RMS < nodes["max_mm"] < 6 * SIGMA * 1e3
    for f in ("nodes.png", "nodes_xyz.png"):
        assert (out / f).stat().st_size > 10_000
    assert not (out / "comparison.png").exists()          # no frames: nothing to draw there
    csv_rows = (out / "node_deviation.csv").read_text().splitlines()
    assert csv_rows[0].split(",")[:3] == ["t", "n1_mm", "n2_mm"] and len(csv_rows) == len(traj.t) + 1
    text = capsys.readouterr().out
    assert "RMS [mm]" in text and "n12" in text and "position RMS [mm]" not in text    # no frame table
    # the same map as text gives the same numbers
    labels = _labels(model)
    text_map = ",".join(f"{lab}={n}" for n, lab in labels.items())
    out2 = tmp_path / "out2"
    assert main([str(csv_path), "--simulate", str(files["falling"]), "--marker-map", text_map, "--out", str(out2)]) == 0
    assert _rms(out2)["nodes"]["rms_mm"] == nodes["rms_mm"]


def test_a_shifted_node_shows_in_its_own_rms(falling, tmp_path):
    """Node n5 shifted by 4 mm: its RMS is sqrt(4^2 + 3 sigma^2) (the cross term averages out to ±0.05 mm
    over 101 samples); every other node stays at the noise."""
    model, traj = falling
    s = np.array([0.0, 0.0024, -0.0032])                          # |s| = 4 mm
    exp = load_experiment(_csv(model, traj, tmp_path / "take.csv", shift=("n5", s)), model,
                          marker_map=parse_marker_map(_map_file(model, tmp_path / "m.yaml"), model))
    res = compare(exp, traj, model)
    per = res.nodes["per_node"]
    assert per["n5"]["rms_mm"] == pytest.approx(np.hypot(4.0, NOISE_RMS), abs=0.2)
    assert res.nodes["max_node"] == "n5"
    for n, d in per.items():
        if n != "n5":
            assert d["rms_mm"] == pytest.approx(NOISE_RMS, rel=0.2)


def test_world_offset_and_several_labels_for_one_node(falling, tmp_path):
    """The capture 1 m / 2 m away from the model's world: --world-offset undoes it. A node relabelled
    mid-take (two labels, each visible half the time) is put together from both."""
    model, traj = falling
    labels = _labels(model)
    X = traj.nodes[:, :model.n_physical] + np.array([1.0, 2.0, 0.0])
    unl = {labels[n]: z_up_to_y_up(X[:, k]) for k, n in enumerate(model.node_names[:model.n_physical])}
    first, second = unl[labels["n2"]].copy(), unl[labels["n2"]].copy()
    first[50:], second[:50] = np.nan, np.nan
    unl[labels["n2"]], unl["Unlabeled 2000"] = first, second
    p = write_motive_csv(tmp_path / "take.csv", traj.t, {}, unl, frame_rate=100.0)
    mm = parse_marker_map([f"{lab}={n}" for n, lab in labels.items()] + ["Unlabeled 2000=n2"], model)
    exp = load_experiment(p, model, marker_map=mm, offset=(-1.0, -2.0, 0.0))
    assert np.isfinite(exp.nodes).all()
    res = compare(exp, traj, model)
    assert res.nodes["max_mm"] < 1e-3                            # CSV precision (1e-6 m written)
    far = compare(load_experiment(p, model, marker_map=mm), traj, model)
    assert far.nodes["rms_mm"] == pytest.approx(np.hypot(1000.0, 2000.0), rel=1e-6)


def _faces(model):
    """Node triples joined pairwise by strings (the six-bar's triangles)."""
    edges = {frozenset(map(int, s)) for s in model.segments}
    return [t for t in itertools.combinations(range(model.n_physical), 3)
            if all(frozenset(p) in edges for p in itertools.combinations(t, 2))]


def test_frames_from_the_command_line(falling, tmp_path):
    """Frames A, B, C on three triangles; only B holds n5. n5 moved by s: B's origin (a centroid) moves by
    s/3, so B in A and C in B are |s|/3 off and C in A not at all."""
    model, traj = falling
    names = model.node_names
    with_n5 = [f for f in _faces(model) if model.node_index("n5") in f]
    without = [f for f in _faces(model) if model.node_index("n5") not in f]
    spec = {"A": without[0], "B": with_n5[0], "C": without[-1]}
    args = [f"{k}={','.join(names[i] for i in tri)}" for k, tri in spec.items()]
    args[1] += "@" + names[spec["B"][1]]
    frames = [parse_frame(a, model) for a in args]
    assert frames[1].x == spec["B"][1] and frames[0].x == spec["A"][0]
    X = traj.nodes[:, :model.n_physical].copy()
    X[:, model.node_index("n5")] += [0.003, 0.0, -0.004]                       # 5 mm
    res = compare(experiment_from_arrays(model, traj.t, X), traj, model, frames=frames)
    assert list(res.frames) == ["A:B", "A:C", "B:C"]
    assert res.frames["A:C"]["position_rms_mm"] < 1e-9 and res.frames["A:C"]["orientation_rms_deg"] < 1e-6
    assert res.frames["A:B"]["position_rms_mm"] == pytest.approx(5.0 / 3, rel=1e-9)
    assert res.frames["B:C"]["orientation_rms_deg"] > 0.1
    one = compare(experiment_from_arrays(model, traj.t, X), traj, model, frames=frames[2:])
    assert list(one.frames) == ["C"] and one.frames["C"]["position_rms_mm"] < 1e-9      # a frame in the world
    out = tmp_path / "out"
    p = _csv(model, traj, tmp_path / "take.csv", noise=0.0, labels={n: n for n in names[:model.n_physical]},
             labeled=True)
    argv = [str(p), "--simulate", str(sixbar_yaml(tmp_path / "m.yaml")), "--out", str(out)]
    for a in args:
        argv += ["--frame", a]
    assert main(argv) == 0                         # markers named after the nodes: case (a)
    rms = _rms(out)
    assert rms["frames_compared"] == ["A:B", "A:C", "B:C"] and rms["relative_frames"] is True
    assert rms["frame_definitions"]["B"][3] == names[spec["B"][1]]
    assert rms["overall"]["position_rms_mm"] < 1e-3 and rms["nodes"]["rms_mm"] < 1e-3
    assert (out / "comparison.png").stat().st_size > 10_000 and (out / "deviation.png").is_file()


def test_frame_option_reproduces_the_model_frames():
    """--frame with the manipulator's own plate definitions gives the paper's relative frames."""
    from tensegrity_mocap.compare import frame_series, model_frame_defs
    m = load_model("stacked_manipulator")
    given = [parse_frame(t, m) for t in ("C0=n1,n2,n3@n2", "C1=n10,n11,n12", "C2=n22,n23,n24")]
    assert given == model_frame_defs(m)
    X = Simulator(m).run(0.2, rate=50.0).nodes
    paper, ours = frame_series(m, X), frame_series(m, X, given)
    for a, b in (("0C1", "C0:C1"), ("0C2", "C0:C2"), ("1C2", "C1:C2")):
        np.testing.assert_allclose(paper[a], ours[b], atol=1e-12)


@pytest.mark.parametrize("text, message", [
    ("A=n1,n2", "use NAME=a,b,c"), ("A=n1,n2,n99", "has no node 'n99'"), ("A=n1,n1,n2", "must differ"),
    ("1A=n1,n2,n3", "must be an identifier"), ("A=n1,n2,n3@", "use NAME=a,b,c"),
])
def test_bad_frame_options(falling, text, message):
    with pytest.raises(CompareError, match=message):
        parse_frame(text, falling[0])


def test_collinear_frame_is_refused():
    """A virtual node sits on its physical node: with any third node the triangle has no area."""
    m = load_model("stacked_manipulator")
    k = m.n_physical                                   # the first virtual node
    p = int(m.virtual_of[k])
    q = (p + 1) % m.n_physical
    with pytest.raises(CompareError, match="lie on one line"):
        parse_frame(f"A={m.node_names[p]},{m.node_names[q]},{m.node_names[k]}", m)
