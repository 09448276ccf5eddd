"""Dynamic-identification captures from the mocap sources: a suite MCAP recording (node positions and the
recorded motor angles -> u through the spools) and a Motive CSV with a marker map and an inputs CSV."""
from __future__ import annotations

import numpy as np
import pytest

from tensegrity_engine import InputError, Simulator, load_model, paper_sinusoid
from tensegrity_engine.identify.data import load_capture, read_dynamic_cases
from tensegrity_engine.dynamics.inputs import u_to_angles
from tensegrity_mocap.axes import z_up_to_y_up
from tensegrity_mocap.motive import write_motive_csv

from test_compare_any_model import _mcap               # writes /model_description, /node_positions, JointState


@pytest.fixture(scope="module")
def model():
    return load_model("stacked_manipulator")


@pytest.fixture(scope="module")
def traj(model):
    return Simulator(model).run(1.0, inputs=paper_sinusoid(model), rate=120.0)


def _joints(model, traj):
    """The run's u as motor angles [rad] at its sample times, plus a joint the model does not have."""
    angles = np.column_stack([u_to_angles(model, traj.inputs), np.ones(len(traj.t))])
    return traj.t, list(model.actuator_names) + ["gripper"], angles


@pytest.mark.parametrize("topic", ["/joint_states", "/motor_goals"])
def test_mcap_round_trip(model, traj, tmp_path, topic):
    p = _mcap(model, traj, tmp_path / "run.mcap", joints=_joints(model, traj), joint_topic=topic)
    cap = load_capture(model, p)
    assert cap.name == "run.mcap" and cap.source == str(p)
    np.testing.assert_allclose(cap.t, traj.t, atol=2e-9)              # stamps 1000 s + t, in whole ns
    np.testing.assert_array_equal(cap.nodes, traj.nodes[:, :model.n_physical])
    assert f"recorded {topic[1:]}" in cap.inputs.description
    np.testing.assert_allclose(cap.inputs(cap.t)[0], traj.inputs, rtol=0, atol=1e-12)
    late = load_capture(model, p, start=0.5)
    assert late.t[0] >= 0.5 - 1e-9 and late.t[-1] == cap.t[-1]


def test_mcap_without_commands(model, traj, tmp_path):
    p = _mcap(model, traj, tmp_path / "bare.mcap")
    with pytest.raises(InputError, match=r"bare.mcap: the recording has no joint_states or motor_goals commands; "
                                         r"give inputs: FILE.csv or paper"):
        load_capture(model, p)
    assert load_capture(model, p, inputs="paper").inputs.params.mode == 1
    with pytest.raises(InputError, match="no such file"):             # CompareError -> InputError, same text
        load_capture(model, tmp_path / "missing.mcap")
    (tmp_path / "bad.mcap").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(40))
    with pytest.raises(InputError, match="not an MCAP recording"):      # RecordingError -> InputError
        load_capture(model, tmp_path / "bad.mcap")


def test_mcap_commands_for_other_joints(model, traj, tmp_path):
    p = _mcap(model, traj, tmp_path / "other.mcap", joints=(traj.t, ["a", "b"], np.zeros((len(traj.t), 2))))
    with pytest.raises(InputError, match="no joint_states message gives every actuator.*joints: a, b"):
        load_capture(model, p)


def _motive(model, traj, tmp_path):
    """A Motive CSV (mm, Y-up) with markers 'Robot:mk<k>', a marker-map file and an inputs CSV."""
    names = model.node_names[:model.n_physical]
    markers = {f"Robot:mk{k}": z_up_to_y_up(traj.nodes[:, k]) for k in range(len(names))}
    csv = write_motive_csv(tmp_path / "take.csv", traj.t, markers, frame_rate=120.0, length_units="Millimeters")
    mp = tmp_path / "map.yaml"
    mp.write_text("marker_map: [" + ", ".join(f'"mk{k}={n}"' for k, n in enumerate(names)) + "]\n")
    rows = ["t," + ",".join(model.actuator_names)] + [",".join(f"{x:.17g}" for x in (t, *u))
                                                      for t, u in zip(traj.t, traj.inputs)]
    (tmp_path / "u.csv").write_text("\n".join(rows) + "\n")
    return csv, mp, tmp_path / "u.csv"


def test_motive_csv_with_marker_map_and_inputs(model, traj, tmp_path):
    csv, mp, u = _motive(model, traj, tmp_path)
    cap = load_capture(model, csv, inputs=u, marker_map=str(mp))
    np.testing.assert_allclose(cap.t, traj.t, atol=1e-6)
    np.testing.assert_allclose(cap.nodes, traj.nodes[:, :model.n_physical], atol=1e-8)
    np.testing.assert_allclose(cap.inputs(traj.t)[0], traj.inputs, atol=1e-15)
    with pytest.raises(InputError, match="a Motive CSV holds no commands; give inputs: FILE.csv"):
        load_capture(model, csv, marker_map=str(mp))
    with pytest.raises(InputError, match="label\\(s\\) 'zz' are not markers of the CSV"):
        load_capture(model, csv, inputs=u, marker_map="zz=n1")


def test_motive_csv_without_inputs_for_a_model_without_actuators(tmp_path):
    """Issue 35 (7c): the error named 'paper' (commands for actuators the model does not have); it names
    'inputs: none', which loads."""
    prism = load_model("prism3")
    run = Simulator(prism).run(0.2, rate=120.0)
    markers = {f"Robot:{n}": z_up_to_y_up(run.nodes[:, k]) for k, n in enumerate(prism.node_names[:6])}
    csv = write_motive_csv(tmp_path / "take.csv", run.t, markers, frame_rate=120.0, length_units="Millimeters")
    with pytest.raises(InputError, match="has no actuators.*write inputs: none") as err:
        load_capture(prism, csv)
    assert "paper" not in str(err.value)
    cap = load_capture(prism, csv, inputs="none")
    np.testing.assert_allclose(cap.nodes, run.nodes[:, :6], atol=1e-8)


def test_cases_file_with_mocap_sources(model, traj, tmp_path):
    _motive(model, traj, tmp_path)
    _mcap(model, traj, tmp_path / "rec.mcap", joints=_joints(model, traj))
    p = tmp_path / "cases.yaml"
    p.write_text("params: [stiffness, pulley_damping]\ncaptures:\n"
                 "  - {name: take, data: take.csv, inputs: u.csv, marker_map: map.yaml, end: 0.8}\n"
                 "  - {name: rec, data: rec.mcap, inputs: recording, held_out: true}\n")
    fit, held, opts = read_dynamic_cases(model, p)
    assert [c.name for c in fit] == ["take"] and [c.name for c in held] == ["rec"]
    assert fit[0].t[-1] <= 0.8 + 1e-9 and opts["params"] == ("stiffness", "pulley_damping")
    p.write_text("captures:\n  - {name: take, data: take.csv, marker_map: map.yaml}\n")
    with pytest.raises(InputError, match=r"capture 0 'take': .*holds no commands"):
        read_dynamic_cases(model, p)


def test_the_engine_finds_the_mocap_readers_through_entry_points():
    """The engine imports no mocap code: it finds the Motive CSV and MCAP readers in the entry-point group
    this package registers (setup.py), by file suffix."""
    from importlib.metadata import entry_points
    from tensegrity_engine.identify.data import READER_GROUP, capture_reader
    from tensegrity_mocap.compare import readers
    registered = {ep.name: ep.value for ep in entry_points(group=READER_GROUP)}
    assert registered == {"csv": "tensegrity_mocap.compare.readers:read_csv",
                          "mcap": "tensegrity_mocap.compare.readers:read_mcap"}
    assert capture_reader("csv") is readers.read_csv and capture_reader("mcap") is readers.read_mcap
    assert capture_reader("c3d") is None
