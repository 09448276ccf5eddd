"""A payload in the dynamic identification cases file (issue 35): ``payload: NODE`` prescribes the payload as
captured (the force m (g - a) on its hook, as ``tensegrity-compare --payload``) and takes it and its cable out
of the fit's model; its errors name the cases file, the capture and the fix."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import yaml

from tensegrity_engine import load_model
from tensegrity_engine.dynamics.loads import captured_payload
from tensegrity_engine.dynamics.simulator import Simulator
from tensegrity_engine.dynamics.trajectory import Trajectory
from tensegrity_engine.errors import InputError
from tensegrity_engine.identify.data import read_dynamic_cases
from tensegrity_engine.model.payload import with_payload
from tensegrity_engine.statics.equilibrium import settle


@pytest.fixture(scope="module")
def hung(tmp_path_factory):
    """(the manipulator with a 0.3 kg payload on n22, a directory with 0.3 s of it at rest at 100 Hz)."""
    model = with_payload(load_model("stacked_manipulator"), "n22", 0.3, 0.08)
    d = tmp_path_factory.mktemp("hung")
    sim = Simulator(model)
    sim.reset(settle(model).positions)
    sim.run(0.3, rate=100).save(d / "run")
    return model, d


def _read(model, d, *captures, **top):
    (d / "cases.yaml").write_text(yaml.safe_dump({"params": ["stiffness"], **top, "captures": list(captures)}))
    return read_dynamic_cases(model, d / "cases.yaml")


def _error(model, d, *captures) -> str:
    with pytest.raises(InputError) as err:
        _read(model, d, *captures)
    return str(err.value)


def test_payload_key_takes_the_payload_out_and_drives_its_hook(hung):
    model, d = hung
    fit, held, opts = _read(model, d, {"name": "a", "data": "run/trajectory.npz", "payload": "payload"},
                            {"name": "b", "data": "run/trajectory.npz", "payload": "payload",
                             "payload_smoothing": 0.05, "held_out": True})
    robot = opts["model"]
    assert "payload" not in robot.node_names and "payload_cable" not in robot.string_names
    assert opts["payload"] == {"node": "payload", "hang": "n22", "mass_kg": 0.3, "cable": "payload_cable",
                               "cable_length_m": 0.08}
    assert fit[0].nodes.shape[1] == robot.n_physical == model.n_physical - 1
    traj = Trajectory.load(d / "run" / "trajectory.npz")
    _, _, table = captured_payload(model, "payload", traj.t, traj.nodes[:, :model.n_physical])
    assert fit[0].loads.nodes == ("n22",) and np.allclose(fit[0].loads.forces, table.forces)
    # the payload hangs still: its pull is its weight, m g = 0.3 kg x 9.81 m/s^2 down (within 1e-3 N: the
    # settled start's residual motion)
    assert np.allclose(held[0].loads.at(0.15), [[0, 0, -0.3 * 9.81]], atol=1e-3), held[0].loads.at(0.15)


def test_payload_errors_name_the_cases_file_the_capture_and_the_fix(hung):
    model, d = hung
    run = {"name": "a", "data": "run/trajectory.npz"}
    msg = _error(model, d, {**run, "payload": "payload_x"})
    assert "cases.yaml" in msg and "capture 0" in msg and "payload_x" in msg and "is not a node" in msg, msg
    msg = _error(model, d, {**run, "payload": "n22"})
    assert "cases.yaml" in msg and "n22" in msg and "give the payload node its 'mass'" in msg, msg
    msg = _error(model, d, {**run, "payload": "payload"}, {**run, "name": "b"})
    assert "different payloads" in msg and "same payload" in msg, msg
    msg = _error(model, d, {**run, "payload_smoothing": 0.1})
    assert "capture 0 'a'" in msg and "payload_smoothing without payload" in msg, msg
    msg = _error(model, d, {**run, "payload": "payload", "payload_smoothing": -1})
    assert "capture 0 'a'" in msg and "payload_smoothing must be" in msg, msg


def test_a_capture_without_the_payloads_marker_says_so(hung):
    model, d = hung
    traj = Trajectory.load(d / "run" / "trajectory.npz")
    X = np.array(traj.nodes)
    X[:, model.node_index("payload")] = np.nan                # the take never saw the payload's marker
    replace(traj, nodes=X).save(d / "unseen")
    msg = _error(model, d, {"name": "u", "data": "unseen/trajectory.npz", "payload": "payload"})
    assert "capture 0 'u'" in msg and "marker is seen in 0 of" in msg and "marker_map" in msg, msg
