"""Simulation vs experiment comparison (tensegrity-compare): RMS of the paper's relative plate frames."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from tensegrity_engine import Simulator, load_model, paper_sinusoid
from tensegrity_mocap.cli.compare import main
from tensegrity_mocap.compare import CompareError, compare, experiment_from_arrays, load_experiment, simulate_paper
from tensegrity_mocap.axes import z_up_to_y_up
from tensegrity_mocap.motive import write_motive_csv

DURATION = 2.0


@pytest.fixture(scope="module")
def model():
    return load_model("stacked_manipulator")


@pytest.fixture(scope="module")
def sim(model):
    return Simulator(model).run(DURATION, inputs=paper_sinusoid(model), rate=100.0)


@pytest.fixture(scope="module")
def sim_dir(sim, tmp_path_factory):
    d = tmp_path_factory.mktemp("sim")
    sim.save(d)
    return d


def _physical(model, traj):
    return traj.nodes[:, :model.n_physical].copy()


def _csv_from(model, traj, path, asset="Robot", rows=slice(None), t_shift=0.0, units="Millimeters"):
    """A Motive-style CSV of the trajectory's physical nodes (Y-up), plus two unlabeled markers."""
    X = traj.nodes[rows, :model.n_physical]
    markers = {f"{asset}:{n}": z_up_to_y_up(X[:, k]) for k, n in enumerate(model.node_names[:model.n_physical])}
    rng = np.random.default_rng(0)
    unl = {"Unlabeled 1000": rng.uniform(0, 2, (len(X), 3)), "Unlabeled 1001": np.full((len(X), 3), np.nan)}
    return write_motive_csv(path, traj.t[rows] - traj.t[rows][0] + t_shift, markers, unl, frame_rate=100.0,
                            length_units=units)


def _mcap_from(model, traj, path, nan_node=None, every=10, namespaces=("",)):
    """A suite recording: /model_description and /node_positions (NaN for one node every `every` samples),
    under each of `namespaces` ("" = none)."""
    pytest.importorskip("mcap_ros2")
    from mcap_ros2.writer import Writer
    from tensegrity_ros_common.msgdefs import definition
    from tensegrity_ros_common.description import describe
    with open(path, "wb") as fh:
        w = Writer(fh)
        s_pose = w.register_msgdef("geometry_msgs/msg/PoseArray", definition("geometry_msgs/msg/PoseArray"))
        s_str = w.register_msgdef("std_msgs/msg/String", definition("std_msgs/msg/String"))
        for pre in namespaces:
            w.write_message(f"{pre}/model_description", s_str, {"data": describe(model)}, log_time=1)
        for k, t in enumerate(traj.t):
            ns = int(round((1000.0 + t) * 1e9))
            X = traj.nodes[k, :model.n_physical].copy()
            if nan_node is not None and k % every == 0:
                X[nan_node] = np.nan
            msg = {"header": {"stamp": {"sec": ns // 10**9, "nanosec": ns % 10**9}, "frame_id": "world"},
                   "poses": [{"position": {"x": x, "y": y, "z": z},
                              "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}} for x, y, z in X]}
            for pre in namespaces:
                w.write_message(f"{pre}/node_positions", s_pose, msg, log_time=ns)
        w.finish()
    return path


def test_simulation_compared_with_itself_is_zero(model, sim):
    exp = experiment_from_arrays(model, sim.t, _physical(model, sim))
    res = compare(exp, sim, model)
    assert list(res.frames) == ["0C1", "0C2", "1C2"]
    for d in list(res.frames.values()) + [res.overall]:
        assert d["position_rms_mm"] < 1e-9 and d["orientation_rms_deg"] < 1e-6
        assert d["compared"] == len(sim.t) and d["skipped_unknown"] == 0 and d["outside_simulation"] == 0
    assert res.time_offset == 0.0 and res.samples_with_unknown_nodes == 0


def test_plate_moved_by_a_known_amount(model, sim):
    """Top plate (C2) turned by 2 deg about its centroid and shifted by 3 mm: 0C1 unchanged, 0C2 and 1C2
    deviate by exactly 3 mm and 2 deg, all three together by sqrt(2/3) of that."""
    X = _physical(model, sim)
    plate = [model.node_index(n) for n in ("n22", "n23", "n24")]
    c = X[:, plate].mean(axis=1, keepdims=True)
    R = Rotation.from_rotvec(np.radians(2.0) * np.array([1.0, 2.0, -0.5]) / np.linalg.norm([1.0, 2.0, -0.5]))
    d = np.array([0.001, -0.002, 0.002])                       # |d| = 3 mm
    X[:, plate] = c + R.apply((X[:, plate] - c).reshape(-1, 3)).reshape(len(X), 3, 3) + d
    res = compare(experiment_from_arrays(model, sim.t, X), sim, model)
    f = res.frames
    assert f["0C1"]["position_rms_mm"] < 1e-9 and f["0C1"]["orientation_rms_deg"] < 1e-6
    for k in ("0C2", "1C2"):
        assert f[k]["position_rms_mm"] == pytest.approx(3.0, rel=1e-9)
        assert f[k]["orientation_rms_deg"] == pytest.approx(2.0, rel=1e-7)
    assert res.overall["position_rms_mm"] == pytest.approx(3.0 * np.sqrt(2 / 3), rel=1e-9)
    assert res.overall["orientation_rms_deg"] == pytest.approx(2.0 * np.sqrt(2 / 3), rel=1e-7)


def test_motive_csv_of_the_simulation_matches_it(model, sim, tmp_path):
    p = _csv_from(model, sim, tmp_path / "take.csv")
    exp = load_experiment(p, model)
    assert exp.kind == "motive_csv" and exp.notes == []
    np.testing.assert_allclose(exp.nodes, _physical(model, sim), atol=1e-9)    # Y-up -> Z-up undone exactly
    res = compare(exp, sim, model)
    for d in list(res.frames.values()) + [res.overall]:
        assert d["position_rms_mm"] * 1e-3 < 1e-6 and d["orientation_rms_deg"] < 1e-4
        assert d["compared"] == len(sim.t)


def test_unknown_nodes_are_skipped_and_counted(model, sim):
    X = _physical(model, sim)
    X[5:10, model.node_index("n1")] = np.nan          # C0 plate: 0C1 and 0C2 lose 5 samples
    X[20:23, model.node_index("n23")] = np.nan        # C2 plate: 0C2 and 1C2 lose 3 samples
    X[30:32, model.node_index("n5")] = np.nan         # on no plate: no frame is affected
    res = compare(experiment_from_arrays(model, sim.t, X), sim, model)
    T = len(sim.t)
    skipped = {k: d["skipped_unknown"] for k, d in res.frames.items()}
    assert skipped == {"0C1": 5, "0C2": 8, "1C2": 3}
    assert res.overall["skipped_unknown"] == 8 and res.overall["compared"] == T - 8
    assert res.frames["0C2"]["compared"] == T - 8
    assert res.samples_with_unknown_nodes == 10
    for d in list(res.frames.values()) + [res.overall]:
        assert d["position_rms_mm"] < 1e-9


def test_auto_alignment_finds_the_offset(model, tmp_path):
    long = Simulator(model).run(DURATION + 0.5, inputs=paper_sinusoid(model), rate=100.0)
    rows = slice(30, 30 + int(DURATION * 100) - 50 + 1)    # experiment starts 0.3 s into the motion
    exp = experiment_from_arrays(model, long.t[rows] + 12.0, long.nodes[rows, :model.n_physical])
    none = compare(exp, long, model)
    assert none.overall["position_rms_mm"] > 0.5          # misaligned by 0.3 s: millimetres apart
    res = compare(exp, long, model, align="auto")
    assert res.time_offset == pytest.approx(0.3, abs=1e-3) and res.time_offset_auto == res.time_offset
    assert res.overall["position_rms_mm"] < 1e-3
    res2 = compare(exp, long, model, time_offset=0.5, align="auto", window=0.4)      # searched around 0.5
    assert res2.time_offset == pytest.approx(0.3, abs=1e-3)
    assert res2.time_offset_auto == pytest.approx(-0.2, abs=1e-3)
    fixed = compare(exp, long, model, time_offset=0.3)
    assert fixed.overall["position_rms_mm"] < 1e-6


def test_mcap_experiment(model, sim, tmp_path):
    p = _mcap_from(model, sim, tmp_path / "run.mcap", nan_node=model.node_index("n11"))
    exp = load_experiment(p)                       # the model comes from /model_description
    assert exp.kind == "mcap" and exp.model.name == model.name and exp.t[0] == 0.0
    np.testing.assert_allclose(exp.t, sim.t, atol=1e-8)
    res = compare(exp, sim)
    n_nan = len(range(0, len(sim.t), 10))
    assert res.samples_with_unknown_nodes == n_nan
    assert res.frames["0C1"]["skipped_unknown"] == n_nan and res.frames["1C2"]["skipped_unknown"] == n_nan
    assert res.frames["0C2"]["skipped_unknown"] == 0          # n11 is on plate C1 only
    assert res.overall["position_rms_mm"] < 1e-6 and res.overall["compared"] == len(sim.t) - n_nan


def test_mismatched_inputs_are_reported(model, sim, tmp_path):
    prism = load_model("prism3")
    with pytest.raises(CompareError, match="different nodes|physical nodes"):
        compare(experiment_from_arrays(model, sim.t, _physical(model, sim)), simulate_paper_or_rest(prism), model)
    p = _csv_from(model, sim, tmp_path / "other.csv", asset="Robot")
    with pytest.raises(CompareError, match="no labeled marker"):
        load_experiment(p, model, asset="Other")
    with pytest.raises(CompareError, match="needs|model"):
        load_experiment(p)


def simulate_paper_or_rest(model):
    return Simulator(model).run(0.05, rate=100.0)


def test_cli_csv_with_simulation(model, sim, tmp_path, capsys):
    csv_path = _csv_from(model, sim, tmp_path / "take.csv")
    out = tmp_path / "out"
    assert main([str(csv_path), "--simulate", "stacked_manipulator", "--out", str(out)]) == 0
    assert (out / "comparison.png").stat().st_size > 10_000 and (out / "deviation.png").is_file()
    rms = json.loads((out / "rms.json").read_text())
    assert rms["model"] == "stacked_manipulator" and rms["experiment_kind"] == "motive_csv"
    assert set(rms["frames"]) == {"0C1", "0C2", "1C2"} and rms["align"] == "none" and rms["time_offset_s"] == 0.0
    for d in rms["frames"].values():
        assert d["position_rms_mm"] < 1e-2 and d["orientation_rms_deg"] < 1e-2 and d["compared"] == len(sim.t)
    text = capsys.readouterr().out
    assert "position RMS [mm]" in text and "0C1" in text and "1C2" in text


def test_cli_mcap_with_trajectory_and_auto_align(model, sim, sim_dir, tmp_path, capsys):
    p = _mcap_from(model, sim, tmp_path / "run.mcap", nan_node=model.node_index("n1"), every=7)
    out = tmp_path / "out2"
    assert main([str(p), "--trajectory", str(sim_dir), "--out", str(out), "--align", "auto", "--window", "0.3"]) == 0
    rms = json.loads((out / "rms.json").read_text())
    assert rms["experiment_kind"] == "mcap" and abs(rms["time_offset_s"]) < 1e-3
    n_nan = len(range(0, len(sim.t), 7))
    assert rms["samples_with_unknown_nodes"] == n_nan and rms["frames"]["0C1"]["skipped_unknown"] == n_nan
    assert rms["overall"]["position_rms_mm"] < 1e-3
    assert (out / "comparison.png").is_file()
    assert "unknown nodes" in capsys.readouterr().out


def test_cli_errors_exit_2(sim_dir, tmp_path, capsys):
    assert main([str(tmp_path / "missing.mcap"), "--trajectory", str(sim_dir), "--out", str(tmp_path / "o")]) == 2
    assert "no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("Format Version,1.23\n\n,Type,Marker\n,Name,n1\n,,Position\nFrame,Time (Seconds),X\n0,0,zz\n")
    assert main([str(bad), "--trajectory", str(sim_dir), "--out", str(tmp_path / "o")]) == 2
    assert "line 7, column 3: 'zz' is not a number" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(bad)])                                  # --trajectory or --simulate is required


def test_simulate_paper_duration(model):
    tr = simulate_paper(model, 0.1, rate=50.0)
    assert tr.t[-1] == pytest.approx(0.1) and "paper sinusoids" in tr.settings["source"]


@pytest.fixture(scope="module")
def short_mcap(model, tmp_path_factory):
    """A small valid recording (0.3 s of the simulation) to break in various ways."""
    short = Simulator(model).run(0.3, inputs=paper_sinusoid(model), rate=50.0)
    return _mcap_from(model, short, tmp_path_factory.mktemp("rec") / "short.mcap").read_bytes()


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("tensegrity-compare: error: ")
    return err


BROKEN = "not a readable MCAP recording, truncated or corrupt"


@pytest.mark.parametrize("damage, expected", [
    ("png", "not an MCAP recording (wrong magic bytes at its start)"),      # a PNG renamed .mcap
    ("half", BROKEN),                                   # cut in the middle of a record
    ("eight", BROKEN + " (8 bytes; "),                  # only the magic
    ("tail", BROKEN),                                   # footer cut off
    ("empty", BROKEN + " (the file is empty)"),
])
def test_unreadable_recordings_are_clear_errors(short_mcap, sim_dir, tmp_path, capsys, damage, expected):
    from tensegrity_ros_common.recording import RecordingError, read_recording
    data = {"png": b"\x89PNG\r\n\x1a\n" + short_mcap[8:], "half": short_mcap[:len(short_mcap) // 2],
            "eight": short_mcap[:8], "tail": short_mcap[:-20], "empty": b""}[damage]
    p = tmp_path / "bad.mcap"
    p.write_bytes(data)
    with pytest.raises(RecordingError, match=re.escape(f"{p}: {expected}")):
        read_recording(p)
    assert main([str(p), "--trajectory", str(sim_dir), "--out", str(tmp_path / "o")]) == 2
    assert f"{p}: {expected}" in _one_line_error(capsys)
    assert p.read_bytes() == data and not (tmp_path / "o").exists()


def test_out_is_checked_before_comparing(short_mcap, sim_dir, tmp_path, capsys, monkeypatch):
    import tensegrity_mocap.cli.compare as cli
    rec = tmp_path / "run.mcap"
    rec.write_bytes(short_mcap)
    monkeypatch.setattr(cli, "run", lambda args: pytest.fail("compared although --out is unusable"))
    a_file = tmp_path / "results.txt"
    a_file.write_text("keep me")
    assert main([str(rec), "--trajectory", str(sim_dir), "--out", str(a_file)]) == 2
    assert f"--out {a_file}: exists and is not a directory" in _one_line_error(capsys)
    assert main([str(rec), "--trajectory", str(sim_dir), "--out", str(a_file / "sub")]) == 2
    assert f"--out {a_file / 'sub'}: cannot create the directory" in _one_line_error(capsys)
    assert a_file.read_text() == "keep me"


def test_failed_comparison_leaves_no_new_output_directory(sim_dir, tmp_path, capsys):
    out = tmp_path / "new" / "deeper"
    assert main([str(tmp_path / "missing.mcap"), "--trajectory", str(sim_dir), "--out", str(out)]) == 2
    assert "no such file" in _one_line_error(capsys)
    assert not (tmp_path / "new").exists()


def test_trajectory_must_be_an_engine_npz(short_mcap, sim_dir, tmp_path, capsys):
    rec = tmp_path / "run.mcap"
    rec.write_bytes(short_mcap)
    csv_path = sim_dir / "trajectory.csv"
    assert csv_path.is_file()                                       # the engine writes it next to the .npz
    assert main([str(rec), "--trajectory", str(csv_path), "--out", str(tmp_path / "o")]) == 2
    err = _one_line_error(capsys)
    assert f"{csv_path}: --trajectory takes an engine trajectory directory or its trajectory.npz" in err
    assert "pickle" not in err
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip archive")
    assert main([str(rec), "--trajectory", str(junk), "--out", str(tmp_path / "o")]) == 2
    assert f"{junk}: not " in _one_line_error(capsys)
    assert not (tmp_path / "o").exists()


def test_namespace_must_exist_in_the_recording(model, sim, sim_dir, tmp_path, capsys):
    from tensegrity_ros_common.recording import RecordingError, read_recording
    p = _mcap_from(model, sim, tmp_path / "ns.mcap", namespaces=("", "/robot"))
    assert len(read_recording(p)["positions"]) == len(sim.t)
    assert len(read_recording(p, "robot")["positions"]) == len(sim.t)      # not mixed with the root's
    with pytest.raises(RecordingError, match=r"no topic in namespace /bogus; the recording's namespaces: "
                                             r"/robot, none \(root\); topics: /model_description, /node_positions"):
        read_recording(p, "bogus")
    assert main([str(p), "--trajectory", str(sim_dir), "--namespace", "bogus", "--out", str(tmp_path / "o")]) == 2
    assert "no topic in namespace /bogus" in _one_line_error(capsys)
    assert main([str(p), "--trajectory", str(sim_dir), "--namespace", "robot", "--out", str(tmp_path / "o")]) == 0


def test_no_overlap_in_time_is_an_error(model, sim, sim_dir, tmp_path, capsys):
    exp = experiment_from_arrays(model, sim.t, _physical(model, sim))
    with pytest.raises(CompareError, match=r"no overlap in time: the experiment \(t \+ 1e\+09 s\) spans "
                                           r"\[1e\+09, 1e\+09\] s, the simulation \[0, 2\] s"):
        compare(exp, sim, model, time_offset=1e9)
    with pytest.raises(CompareError, match="no overlap"):
        compare(exp, sim, model, time_offset=-2.5)
    assert compare(exp, sim, model, time_offset=-1.9).overall["compared"] == 11       # partial overlap is fine
    p = _mcap_from(model, sim, tmp_path / "run.mcap")
    out = tmp_path / "o"
    assert main([str(p), "--trajectory", str(sim_dir), "--time-offset", "1e9", "--out", str(out)]) == 2
    assert "no overlap in time" in _one_line_error(capsys) and not out.exists()
    # --simulate would have to simulate a billion seconds to reach the offset: refused before simulating
    assert main([str(p), "--simulate", "stacked_manipulator", "--time-offset", "1e9", "--out", str(out)]) == 2
    assert "more than 3600 s" in _one_line_error(capsys) and not out.exists()


@pytest.mark.parametrize("option, value", [("--time-offset", "nan"), ("--time-offset", "inf"), ("--window", "-1"),
                                           ("--window", "nan"), ("--sim-rate", "0"), ("--sim-rate", "-5"),
                                           ("--initial-tol", "0"), ("--world-offset", "nan 0 0")])
def test_bad_numbers_are_usage_errors(sim_dir, tmp_path, capsys, option, value):
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "x.mcap"), "--trajectory", str(sim_dir), option, *value.split(),
              "--out", str(tmp_path / "o")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"error: argument {option}: must be" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_a_suite_topic_with_another_type_is_a_clear_error(tmp_path, capsys, sim_dir):
    """A recording from another tool may use /node_positions for another type: one line, not an
    AttributeError from deep inside the reader."""
    from mcap_ros2.writer import Writer
    from tensegrity_ros_common.msgdefs import definition
    from tensegrity_ros_common.recording import RecordingError, read_recording
    p = tmp_path / "other.mcap"
    with open(p, "wb") as fh:
        w = Writer(fh)
        s_str = w.register_msgdef("std_msgs/msg/String", definition("std_msgs/msg/String"))
        w.write_message("/node_positions", s_str, {"data": "not poses"}, log_time=1)
        w.finish()
    with pytest.raises(RecordingError, match=re.escape(f"{p}: topic /node_positions does not hold "
                                                       "geometry_msgs/PoseArray messages")):
        read_recording(p)
    assert main([str(p), "--trajectory", str(sim_dir), "--out", str(tmp_path / "o")]) == 2
    assert "does not hold geometry_msgs/PoseArray" in _one_line_error(capsys)
