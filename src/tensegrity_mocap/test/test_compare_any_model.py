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
from tensegrity_engine.dynamics.inputs import table, u_to_angles
from tensegrity_mocap.cli.compare import main
from tensegrity_mocap.compare import CompareError, compare, experiment_from_arrays, parse_frame
from tensegrity_mocap.compare.inputs import load_experiment, parse_marker_map
from tensegrity_mocap.axes import z_up_to_y_up
from tensegrity_mocap.motive import write_motive_csv

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
    s/3, so B in A is exactly |s|/3 off, C in A not at all, and C in B (B tilted) is off in orientation."""
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


# --- recordings, inputs and the simulation side ---------------------------------------------------------
def _stamp(t):
    ns = int(round((1000.0 + t) * 1e9))
    return {"sec": ns // 10**9, "nanosec": ns % 10**9}


def _mcap(model, traj, path, joints=None, joint_topic="/joint_states"):
    """A suite recording of ``traj``: /model_description, /node_positions and, with ``joints`` = (t (k,),
    names, angles (k, a)), JointState messages on ``joint_topic``; stamps are 1000 s + t."""
    pytest.importorskip("mcap_ros2")
    from mcap_ros2.writer import Writer
    from tensegrity_ros_common.description import describe
    from tensegrity_ros_common.msgdefs import definition
    with open(path, "wb") as fh:
        w = Writer(fh)
        s_pose = w.register_msgdef("geometry_msgs/msg/PoseArray", definition("geometry_msgs/msg/PoseArray"))
        s_str = w.register_msgdef("std_msgs/msg/String", definition("std_msgs/msg/String"))
        s_js = w.register_msgdef("sensor_msgs/msg/JointState", definition("sensor_msgs/msg/JointState"))
        w.write_message("/model_description", s_str, {"data": describe(model)}, log_time=1)
        for k, t in enumerate(traj.t):
            poses = [{"position": {"x": x, "y": y, "z": z}, "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}}
                     for x, y, z in traj.nodes[k, :model.n_physical]]
            w.write_message("/node_positions", s_pose, {"header": {"stamp": _stamp(t), "frame_id": "world"},
                                                        "poses": poses}, log_time=int((1000 + t) * 1e9))
        if joints is not None:
            for t, row in zip(joints[0], joints[2]):
                w.write_message(joint_topic, s_js, {"header": {"stamp": _stamp(t), "frame_id": ""},
                                                    "name": list(joints[1]), "position": [float(a) for a in row],
                                                    "velocity": [], "effort": []}, log_time=int((1000 + t) * 1e9))
        w.finish()
    return path


def _joints(model):
    """The actuated run's input table as motor angles [rad], plus a joint the model does not have."""
    return U_T, list(model.actuator_names) + ["gripper"], np.column_stack([u_to_angles(model, U_U), np.ones(len(U_T))])


@pytest.mark.parametrize("topic, option", [("/joint_states", "recording"), ("/motor_goals", "recording"),
                                           ("/motor_goals", "motor_goals")])
def test_inputs_from_the_recorded_motor_angles(files, actuated, tmp_path, topic, option):
    """The motor angles recorded with the run, mapped back to u through the spools, drive the simulation:
    it repeats the run (dopri5 on the same piecewise-linear table) to well under a micrometre."""
    model, traj = actuated
    p = _mcap(model, traj, tmp_path / "run.mcap", joints=_joints(model), joint_topic=topic)
    out = tmp_path / "out"
    assert main([str(p), "--simulate", str(files["actuated"]), "--input", option, "--out", str(out)]) == 0
    rms = _rms(out)
    assert rms["experiment_kind"] == "mcap" and f"recorded {topic[1:]} (4 samples" in rms["simulation"]
    assert rms["nodes"]["max_mm"] < 1e-3
    moved = np.linalg.norm(traj.nodes[-1] - traj.nodes[0], axis=1).max()
    assert moved > 0.01                                              # the inputs did move the robot (> 10 mm)
    if option == "recording" and topic == "/joint_states":          # default input for 2 actuators: none
        out2 = tmp_path / "out2"
        assert main([str(p), "--simulate", str(files["actuated"]), "--out", str(out2)]) == 0
        assert _rms(out2)["nodes"]["max_mm"] > 1.0 and ", none," in _rms(out2)["simulation"]


def test_inputs_csv_and_trajectory_directory(files, actuated, tmp_path):
    model, traj = actuated
    p = _mcap(model, traj, tmp_path / "run.mcap")
    inputs = tmp_path / "u.csv"
    inputs.write_text("t,m2,m1\n" + "".join(f"{t},{u[1]},{u[0]}\n" for t, u in zip(U_T, U_U)))
    out = tmp_path / "out"
    assert main([str(p), "--simulate", str(files["actuated"]), "--input", str(inputs), "--out", str(out)]) == 0
    assert _rms(out)["nodes"]["max_mm"] < 1e-3
    traj.save(tmp_path / "sim")
    out2 = tmp_path / "out2"
    assert main([str(p), "--trajectory", str(tmp_path / "sim"), "--align", "auto", "--window", "0.2",
                 "--out", str(out2)]) == 0
    rms = _rms(out2)
    assert rms["nodes"]["max_mm"] < 1e-6 and abs(rms["time_offset_s"]) < 1e-3     # node RMS drives the search


def test_auto_alignment_on_node_positions(actuated):
    """No frames: the offset search minimises the node RMS; the experiment starts 0.25 s into the run."""
    model, traj = actuated
    rows = slice(25, 90)
    exp = experiment_from_arrays(model, traj.t[rows] + 50.0, traj.nodes[rows, :model.n_physical])
    assert compare(exp, traj, model).nodes["rms_mm"] > 0.5
    res = compare(exp, traj, model, align="auto", window=0.4)
    assert res.time_offset == pytest.approx(0.25, abs=1e-3) and res.nodes["rms_mm"] < 0.05


def _moved_start(model, inputs=None, duration=0.8):
    """A run of ``model`` from its shape turned by 30 degrees about z and moved by (0.1, -0.2, 0.4) m, at rest."""
    from scipy.spatial.transform import Rotation
    X0 = Rotation.from_euler("z", 30, degrees=True).apply(np.array(model.positions)) + [0.1, -0.2, 0.4]
    sim = Simulator(model)
    sim.reset(positions=X0)
    return sim.run(duration, inputs=inputs, rate=100.0)


def _node_csv(model, traj, path, X=None):
    X = traj.nodes[:, :model.n_physical] if X is None else X
    markers = {f"Robot:{n}": z_up_to_y_up(X[:, k]) for k, n in enumerate(model.node_names[:model.n_physical])}
    return write_motive_csv(path, traj.t, markers, {}, frame_rate=100.0)


def test_initial_from_experiment(files, falling, tmp_path):
    """The robot was captured falling from another pose than the model's: starting the simulation from the
    experiment's first sample (at rest there) removes the offset."""
    model, _ = falling
    traj = _moved_start(model)
    p = _node_csv(model, traj, tmp_path / "take.csv")
    out = tmp_path / "out"
    assert main([str(p), "--simulate", str(files["falling"]), "--out", str(out)]) == 0
    assert _rms(out)["nodes"]["rms_mm"] > 100                       # from the model's pose: far off
    assert main([str(p), "--simulate", str(files["falling"]), "--initial-from-experiment", "--out", str(out)]) == 0
    rms = _rms(out)
    assert "from the experiment at t = 0.000 s" in rms["simulation"] and rms["nodes"]["max_mm"] < 1e-3


def test_initial_from_the_first_fully_tracked_sample(files, actuated, tmp_path):
    """Node n3 unknown in the first 5 samples: the simulation starts at the 6th (t = 0.05 s; the robot rests
    until its inputs start at 0.3 s); the 5 samples before are outside the simulation."""
    model, _ = actuated
    u_t, u = [0.0, 0.3, 0.6, 1.0], [[0.0, 0.0], [0.0, 0.0], [0.03, 0.01], [0.01, 0.02]]
    traj = _moved_start(model, inputs=table(u_t, u), duration=1.0)
    X = traj.nodes[:, :model.n_physical].copy()
    X[:5, model.node_index("n3")] = np.nan
    p = _node_csv(model, traj, tmp_path / "take.csv", X)
    inputs = tmp_path / "u.csv"
    inputs.write_text("t,m1,m2\n" + "".join(f"{t},{a},{b}\n" for t, (a, b) in zip(u_t, u)))
    out = tmp_path / "out"
    assert main([str(p), "--simulate", str(files["actuated"]), "--input", str(inputs), "--initial-from-experiment",
                 "--out", str(out)]) == 0
    rms = _rms(out)
    assert rms["simulation_span_s"][0] == pytest.approx(0.05)
    assert "from the experiment at t = 0.050 s" in rms["simulation"]
    assert rms["nodes"]["outside_simulation"] == 5 and rms["nodes"]["compared"] == len(traj.t) - 5
    # the adaptive integrator (rtol 1e-6) takes other steps from t = 0.05 s than the run from t = 0: about a
    # micrometre apart over the ~30 mm motion, plus the CSV's 1 µm rounding of the start
    assert rms["nodes"]["max_mm"] < 0.01 and np.ptp(X[5:, 0, 0]) > 0.005      # it moved, and was followed


def test_initial_from_experiment_refuses_a_wrong_bar(files, falling, tmp_path, capsys):
    model, traj = falling
    X = traj.nodes[:, :model.n_physical].copy()
    i, j = model.bars[0]
    X[:, i] += 0.02 * (X[0, i] - X[0, j]) / np.linalg.norm(X[0, i] - X[0, j])       # bar b1 20 mm too long
    exp = experiment_from_arrays(model, traj.t, X)
    from tensegrity_mocap.compare.simulation import initial_state
    with pytest.raises(CompareError, match=r"bar b1 \(n\d+-n\d+\) measures 620\.0 mm at t = 0\.000 s, the model's "
                                           r"is 600\.0 mm \(\+20\.0 mm, more than --initial-tol 5 mm\)"):
        initial_state(exp, model)
    assert initial_state(exp, model, tol=0.025)[0] == 0             # accepted with a wider tolerance
    p = _mcap(model, traj, tmp_path / "run.mcap")
    with pytest.raises(SystemExit):
        main([str(p), "--simulate", str(files["falling"]), "--initial-from-experiment", "--align", "auto"])
    assert "fixes the time offset" in capsys.readouterr().err


# --- errors ------------------------------------------------------------------------------------------------
def _error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def test_errors_name_the_problem_and_the_fix(files, falling, actuated, tmp_path, capsys):
    model, traj = falling
    csv_path = _csv(model, traj, tmp_path / "take.csv")
    mcap = _mcap(model, traj, tmp_path / "run.mcap")
    good_map = _map_file(model, tmp_path / "map.yaml")
    out = str(tmp_path / "o")
    sim = ["--simulate", str(files["falling"]), "--out", out]
    cases = [
        ([str(mcap), "--simulate", "prism3", "--out", out],                  # recorded six-bar vs another model
         "model 'prism3' (6 physical nodes) and the experiment's model 'sixbar' (12) have different nodes"),
        ([str(mcap), "--model", "prism3", *sim], "/node_positions has 12 poses but model 'prism3' has 6"),
        ([str(csv_path), "--marker-map", "Unlabeled 1000=n13", *sim],
         "entry 'Unlabeled 1000=n13': model 'sixbar' has no node 'n13'"),
        ([str(csv_path), "--marker-map", "Unlabeled 1000=n1,Unlabeled 9999=n2", *sim],
         "marker map label(s) 'Unlabeled 9999' are not markers of the CSV"),
        ([str(csv_path), "--marker-map", str(files["falling"]), *sim], "no marker_map in the file"),
        ([str(csv_path), "--marker-map", "nonsense", *sim], "no such file, and not 'label=node,...' entries"),
        ([str(csv_path), "--marker-map", str(good_map), "--simulate", "prism3", "--out", out],
         "model 'prism3' has no node 'n1' (its nodes: b1, b2, b3, t1, t2, t3)"),
        ([str(mcap), "--trajectory", str(tmp_path / "sim"), "--time-offset", "100", "--out", out],
         "no overlap in time"),
        ([str(csv_path), "--marker-map", str(good_map), "--input", "recording", "--simulate", str(files["actuated"]),
          "--out", out], "--input recording: the motor angles come from an MCAP experiment"),
        ([str(mcap), "--input", "bogus", *sim],
         "not none, paper, recording, joint_states, motor_goals or an inputs CSV"),
        ([str(mcap), "--input", "paper", *sim], "the paper input needs 3 actuators per stage"),
        ([str(mcap), "--plot-nodes", "n1,n99", *sim], "--plot-nodes: model 'sixbar' has no physical node(s) n99"),
        ([str(mcap), "--frame", "A=n1,n2", *sim], "--frame 'A=n1,n2': use NAME=a,b,c"),
    ]
    traj.save(tmp_path / "sim")
    for argv, message in cases:
        assert main(argv) == 2, argv
        assert message in _error(capsys), (argv, message)
        assert not (tmp_path / "o").exists()


def test_recorded_inputs_must_name_every_actuator(files, actuated, tmp_path, capsys):
    model, traj = actuated
    out = str(tmp_path / "o")
    bare = _mcap(model, traj, tmp_path / "bare.mcap")
    assert main([str(bare), "--simulate", str(files["actuated"]), "--input", "recording", "--out", out]) == 2
    assert "has no joint_states or motor_goals messages" in _error(capsys)
    t, names, ang = _joints(model)
    one = _mcap(model, traj, tmp_path / "one.mcap", joints=(t, names[:1], ang[:, :1]))
    assert main([str(one), "--simulate", str(files["actuated"]), "--input", "joint_states", "--out", out]) == 2
    assert ("no joint_states message gives every actuator of model 'sixbar' (m1, m2); the recording's joints: m1"
            in _error(capsys))
    with pytest.raises(SystemExit):
        main([str(bare), "--trajectory", str(tmp_path), "--input", "none"])
    assert "not with --trajectory" in capsys.readouterr().err


# --- no marker map: the tracker ------------------------------------------------------------------------------
def test_tracker_call_and_its_failures(falling, tmp_path, monkeypatch):
    """Case (c) as compare_inputs calls it: the arguments passed, and what it does with the results."""
    from tensegrity_mocap.tracking import takes as mocap_track
    model, traj = falling
    p = _csv(model, traj, tmp_path / "take.csv", noise=0.0)
    calls = []

    def fake(recording, m, marker_map=None, exclude=(), up_axis=None, offset=(0.0, 0.0, 0.0)):
        calls.append((m.name, marker_map, exclude, up_axis, offset))
        return recording.times, result
    monkeypatch.setattr(mocap_track, "track_recording", fake)
    result = traj.nodes[:, :model.n_physical].copy()
    result[:, 0] = np.nan
    exp = load_experiment(p, model, exclude=("Other:*",), offset=(1.0, 0.0, 0.0))
    assert calls == [("sixbar", None, ("Other:*",), None, (1.0, 0.0, 0.0))]
    assert exp.kind == "motive_csv_tracked" and "11 of 12 nodes tracked" in exp.notes[0]
    assert "never tracked: n1" in exp.notes[1]
    result = traj.nodes[:, :6]
    with pytest.raises(CompareError, match="the tracker returned 6 nodes, model 'sixbar' has 12 physical nodes"):
        load_experiment(p, model)
    result = np.full_like(traj.nodes[:, :model.n_physical], np.nan)
    with pytest.raises(CompareError, match="the tracker matched no marker to a node .* give --marker-map"):
        load_experiment(p, model)


def test_unlabeled_markers_tracked_without_a_map(files, actuated, tmp_path):
    """No map, markers 'Unlabeled 10xx' only: the mocap tracker assigns them to the nodes (the run starts in
    the model's configuration, where the tracker looks first); the RMS is the noise as with a map."""
    model, traj = actuated
    p = _csv(model, traj, tmp_path / "take.csv")
    out = tmp_path / "out"
    inputs = tmp_path / "u.csv"
    inputs.write_text("t,m1,m2\n" + "".join(f"{t},{a},{b}\n" for t, (a, b) in zip(U_T, U_U)))
    assert main([str(p), "--simulate", str(files["actuated"]), "--input", str(inputs), "--out", str(out)]) == 0
    rms = _rms(out)
    assert rms["experiment_kind"] == "motive_csv_tracked"
    assert rms["nodes"]["compared"] == len(traj.t)
    for d in rms["nodes"]["per_node"].values():
        assert d["compared"] == len(traj.t) and d["rms_mm"] == pytest.approx(NOISE_RMS, rel=0.2)


def test_capture_transform_maps_the_capture_into_the_model_frame(files, falling, tmp_path, capsys):
    """The model was made in the robot frame (tensegrity-mocap model), the capture is elsewhere and turned:
    the report's capture_zup_to_robot puts the captured nodes back onto the simulation."""
    from scipy.spatial.transform import Rotation
    model, traj = falling
    R = Rotation.from_euler("zx", [40, 5], degrees=True).as_matrix()
    t = np.array([0.3, -1.2, 0.05])
    X = traj.nodes[:, :model.n_physical] @ R.T + t                   # robot -> capture
    p = _node_csv(model, traj, tmp_path / "take.csv", X)
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R.T, -R.T @ t                              # capture -> robot
    report = tmp_path / "robot.report.json"
    report.write_text(json.dumps({"source": "take.csv", "capture_zup_to_robot": T.tolist()}))
    out = tmp_path / "out"
    argv = [str(p), "--simulate", str(files["falling"]), "--capture-transform", str(report), "--out", str(out)]
    assert main(argv) == 0
    assert _rms(out)["nodes"]["max_mm"] < 1e-3
    report.write_text(json.dumps({"capture_zup_to_robot": (2 * T).tolist()}))
    assert main(argv) == 2
    assert "is not a rigid transform" in _error(capsys)


def test_tracks_npz_from_tensegrity_mocap_track(files, falling, tmp_path, capsys):
    """The tracks of 'tensegrity-mocap track' (t, nodes, node_names) are an experiment; nodes must match."""
    model, traj = falling
    X = traj.nodes[:, :model.n_physical].copy()
    X[3:6, 2] = np.nan
    np.savez_compressed(tmp_path / "tracks.npz", t=traj.t + 7.0, nodes=X, node_names=np.array(model.node_names))
    out = tmp_path / "out"
    assert main([str(tmp_path / "tracks.npz"), "--simulate", str(files["falling"]), "--out", str(out)]) == 0
    rms = _rms(out)
    assert rms["experiment_kind"] == "tracks" and rms["nodes"]["max_mm"] < 1e-9
    assert rms["nodes"]["per_node"]["n3"]["compared"] == len(traj.t) - 3 and rms["samples_with_unknown_nodes"] == 3
    np.savez_compressed(tmp_path / "other.npz", t=traj.t, nodes=X[:, :6], node_names=np.array(list("abcdef")))
    assert main([str(tmp_path / "other.npz"), "--simulate", str(files["falling"]), "--out", str(out)]) == 2
    assert "its nodes (a, b, c, d, e, f; 6) are not model 'sixbar''s physical nodes (n1, n2" in _error(capsys)
