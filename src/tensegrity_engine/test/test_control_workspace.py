"""The reachable workspace of the stacked manipulator's plate C2: sampled inputs, their settled poses, the saved
data, the figure and the ``tensegrity workspace`` command."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tensegrity_engine.cli.app import main
from tensegrity_engine.control import Workspace, workspace
from tensegrity_engine.control.workspace import sample_inputs
from tensegrity_engine.control.pose import frame_pose
from tensegrity_engine.control.static_map import rest_lengths
from tensegrity_engine.statics.equilibrium import settle


def test_workspace_poses_are_the_settled_poses_of_their_inputs(manipulator, tmp_path):
    ws = workspace(manipulator, "C2", samples=5, seed=3)
    lo, hi = manipulator.u_limits[:, 0], manipulator.u_limits[:, 1]
    assert ws.u.shape == (5, 6) and np.all(ws.u >= lo) and np.all(ws.u <= hi)
    assert np.ptp(ws.u, axis=0).min() > 0.2 * (hi - lo).min()         # spread over the box, not clustered
    assert ws.feasible.all() and ws.min_tension.min() > 0 and ws.residual.max() < 1e-6
    for k in (0, 4):    # independently: the full settle (dynamic relaxation + Newton) from the drawn shape
        eq = settle(manipulator, rest_lengths=rest_lengths(manipulator, ws.u[k]))
        assert np.allclose(frame_pose(manipulator, "C2", eq.positions), ws.poses[k], atol=1e-8)
    assert np.array_equal(sample_inputs(manipulator, 5, seed=3), ws.u)                 # seeded
    back = Workspace.load(ws.save(tmp_path / "ws.npz"))
    assert back.frame == "C2" and back.actuator_names == manipulator.actuator_names
    assert np.array_equal(back.poses, ws.poses) and np.array_equal(back.feasible, ws.feasible)
    s = ws.summary()
    r = ws.poses[:, :3, 3]
    assert np.allclose(s["position_min_m"], r.min(axis=0)) and np.allclose(s["position_max_m"], r.max(axis=0))
    assert np.all(np.asarray(s["angle_max_rad"]) > np.asarray(s["angle_min_rad"]))


def test_workspace_command_writes_data_and_figure(tmp_path, capsys):
    out = tmp_path / "ws"
    assert main(["workspace", "stacked_manipulator", "--frame", "C2", "--samples", "4", "--seed", "1", "--out",
                 str(out), "--quiet", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["samples"] == 4 and summary["feasible"] == 4 and summary["frame"] == "C2"
    assert (out / "workspace.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    ws = Workspace.load(out / "workspace.npz")
    assert np.allclose(summary["position_max_m"], ws.poses[:, :3, 3].max(axis=0))


def test_workspace_errors_say_what_to_fix(prism3, tmp_path, capsys):
    assert main(["workspace", "stacked_manipulator", "--frame", "C7", "--samples", "2", "--out",
                 str(tmp_path / "w"), "--quiet"]) == 2
    assert "no frame 'C7'" in capsys.readouterr().err
    assert main(["workspace", "prism3", "--out", str(tmp_path / "p"), "--quiet"]) == 2
    assert "add 'frames:'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="no actuators"):
        workspace(prism3, "C2", samples=2)
