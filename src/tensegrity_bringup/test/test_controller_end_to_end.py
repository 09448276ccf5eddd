"""The controllers closing the loop through the real simulator and the collision monitor, each node in its own
process as tensegrity-bringup --processes starts them (real DDS, contact dynamics), with the run recorded:
a plate goal the plate reaches, and a rolling robot that changes face. Slow tier (25-150 s of real time)."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from tensegrity_engine import load_model
from tensegrity_engine.cli.app import main as tensegrity
from tensegrity_engine.control import inverse_statics
from tensegrity_engine.frames import model_frames, rotation_angle
from tensegrity_ros_common.conversions import pose_to_frame
from tensegrity_ros_common.domains import claim_domain
from tensegrity_ros_common.recording import iter_messages
from tensegrity_sim.simulator_node import start_positions

pytestmark = pytest.mark.slow


def bringup(out, *args, timeout):
    """Run tensegrity-bringup --processes with ``args`` recording to out/run.mcap; its summary.json."""
    env = dict(os.environ, ROS_DOMAIN_ID=str(claim_domain()), PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "tensegrity_bringup.bringup", "--processes", *args,
           "--record", str(out / "run.mcap"), "--report", str(out)]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    print(run.stdout[-3000:], run.stderr[-3000:])
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads((out / "summary.json").read_text())


def topic_messages(path, topic) -> list:
    return [(t * 1e-9, msg) for name, msg, t in iter_messages(path) if name == topic]


def test_plate_goal_through_the_pose_controller_reaches_the_goal(tmp_path):
    """A reachable goal (the pose inverse statics reach for a target 8 mm aside, 6 mm up and 2 deg tilted from
    the start) is reached by the simulated plate within 2 mm and 0.5 deg: every plate_pose/c2 of the last
    second of a 25 s run (the motion at max_rate 0.01 m/s takes a few seconds, the ringing settles after)."""
    model = load_model("stacked_manipulator")
    C0 = model_frames(model, start_positions(model))["C2"]
    target = C0.copy()
    target[:3, 3] += [0.008, 0.0, 0.006]
    target[:3, :3] = target[:3, :3] @ Rotation.from_euler("x", 2.0, degrees=True).as_matrix()
    goal = inverse_statics(model, "C2", target).pose       # the nearest pose the statics reach: reachable
    assert inverse_statics(model, "C2", goal).reachable
    yaw, pitch, roll = Rotation.from_matrix(goal[:3, :3]).as_euler("ZYX", degrees=True)
    text = ",".join(f"{v:.9f}" for v in (*goal[:3, 3], roll, pitch, yaw))
    summary = bringup(tmp_path, "--manipulation", "--plate-goal", text, "--duration", "25", timeout=240)
    sent = topic_messages(tmp_path / "run.mcap", "/plate_goal")
    assert len(sent) == 1 and np.allclose(pose_to_frame(sent[0][1].pose), goal, atol=1e-8)
    poses = [(t, pose_to_frame(m.pose)) for t, m in topic_messages(tmp_path / "run.mcap", "/plate_pose/c2")]
    last = [C for t, C in poses if t > poses[-1][0] - 1.0]
    miss_p = max(np.linalg.norm(C[:3, 3] - goal[:3, 3]) for C in last)
    miss_a = max(float(rotation_angle(C, goal)) for C in last)
    start_p = np.linalg.norm(poses[0][1][:3, 3] - goal[:3, 3])
    print(f"plate goal {1e3 * start_p:.2f} mm from the start; over the last second: within {1e3 * miss_p:.3f} mm, "
          f"{math.degrees(miss_a):.3f} deg")
    assert start_p > 0.005                                  # it really had to move
    assert miss_p < 0.002 and math.degrees(miss_a) < 0.5
    ctl = next(v for k, v in summary["diagnostics"].items() if k.endswith("pose_controller: controller"))
    assert ctl["mode"] == "pose" and int(ctl["rejected_inputs"]) == 0


def lowest_nodes(X, k=3) -> frozenset:
    """The k nodes nearest the ground: the face the robot stands on."""
    return frozenset(np.argsort(X[:, 2])[:k].tolist())


def rest_faces(times, lowest, rest: float = 1.0) -> list:
    """The lowest-node triples the robot rested on, in order: each held for ``rest`` [s] (a robot rolling over
    an edge shows others for moments) and different from the one before."""
    out, since = [], times[0]
    for k in range(1, len(lowest)):
        since = times[k] if lowest[k] != lowest[k - 1] else since
        if times[k] - since >= rest and (not out or out[-1] != lowest[k]):
            out.append(lowest[k])
    return out


def test_cmd_vel_rolls_the_robot_toward_the_heading(tmp_path):
    """cmd_vel toward +x (every 0.2 s, as a teleop would) through the locomotion controller into the simulator
    with contact (motors at its 3 rad/s), the robot's nodes measured through DDS: in 120 s the robot rolls over
    at least ten faces (the controller's count, and new lowest-node triples in the simulator's node_positions:
    seen in the physics, not only in the controller's word), at least 1 m along +x, and the collision monitor
    never sees two bars or strings touch."""
    model = tmp_path / "superball.yaml"
    assert tensegrity(["new", "superball", "-o", str(model)]) == 0
    summary = bringup(tmp_path, "--locomotion", "--model", str(model), "--heading", "0", "--duration", "120",
                      timeout=480)
    X = [np.array([(p.position.x, p.position.y, p.position.z) for p in m.poses])
         for _, m in topic_messages(tmp_path / "run.mcap", "/node_positions")]
    t = [s for s, _ in topic_messages(tmp_path / "run.mcap", "/node_positions")]
    faces = rest_faces(t, [lowest_nodes(x) for x in X])
    moved = X[-1][:, :2].mean(axis=0) - X[0][:, :2].mean(axis=0)
    ctl = next(v for k, v in summary["diagnostics"].items() if k.endswith("locomotion_controller: controller"))
    print(f"faces rested on: {len(faces)}; centroid moved {np.round(moved, 3).tolist()} m; min clearance "
          f"{1e3 * summary['min_clearance_m']:.1f} mm; controller {ctl}")
    assert int(ctl["faces_changed"]) >= 10 and len(faces) >= 11, ctl
    assert moved[0] >= 1.0                              # m: along the commanded heading (+x)
    assert summary["min_clearance_m"] >= 0.0            # m: no bar or string through another (collision monitor)
