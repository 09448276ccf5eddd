"""A learned policy run as a lab runs it (slow tier): ``tensegrity-bringup --processes --policy FILE`` (simulator,
collision monitor and policy controller as separate processes over real DDS) with the CPU loaded by
tools/cpu_load.py, judged from the recording: the distance the simulated robot rolled along the policy's heading
while the policy ran, against the same policy in the learning environment (same robot, μ 0.8, no randomisation)
over the same simulated time."""
import math
from pathlib import Path

import numpy as np
import pytest
from test_controller_end_to_end import bringup, topic_messages
from test_rolling_through_ros import loaded, recorded_path, robot  # noqa: F401  (fixtures)

from tensegrity_engine.dynamics.inputs import angles_to_u
from tensegrity_engine.learn.policy import Policy, run_in_env

pytestmark = pytest.mark.slow
POLICY = Path(__file__).resolve().parents[3] / "config" / "policies" / "superball_rolling.npz"
MOVED = 1e-4          # m: an input this far from 0 means the policy's first command has reached the motors


def motors_started(path, model) -> float:
    """Recording time [s] of the first joint_states with an input away from zero."""
    for t, msg in topic_messages(path, "/joint_states"):
        if np.abs(angles_to_u(model, np.asarray(msg.position))).max() > MOVED:
            return t
    raise AssertionError("the motors never moved: the policy sent nothing")


def simulated_time(path) -> tuple:
    """(recording times (k,) [s], the simulator's sim_time_s (k,) [s]) from its diagnostics."""
    out = []
    for t, msg in topic_messages(path, "/diagnostics"):
        for st in msg.status:
            values = {kv.key: kv.value for kv in st.values}
            if st.name.endswith(": physics") and "sim_time_s" in values:
                out.append((t, float(values["sim_time_s"])))
    assert len(out) >= 2, "no simulator diagnostics recorded"
    return np.array(out).T


def test_policy_through_ros_rolls_as_far_as_in_the_environment(tmp_path, robot, loaded):  # noqa: F811
    path, model = robot
    policy = Policy.load(POLICY, model)
    bringup(tmp_path, "--policy", str(POLICY), "--model", str(path), "--duration", "40", timeout=900)
    run = tmp_path / "run.mcap"
    t, com, faces = recorded_path(run, model)
    start = motors_started(run, model)
    wall, sim = simulated_time(run)
    seconds = float(np.interp(t[-1], wall, sim) - np.interp(start, wall, sim))
    ros = com[-1] - com[np.searchsorted(t, start)]
    env = run_in_env(policy, round(seconds / policy.control_period) * policy.control_period, [0], randomise={})[0]
    h = policy.heading
    along_ros, along_env = (float(d @ [math.cos(h), math.sin(h)]) for d in (ros, env))
    text = (f"policy for {seconds:.1f} s of simulated time: through ROS {ros.round(3)} m ({along_ros:.3f} m along "
            f"its heading, {len(faces) - 1} faces), in the environment {env.round(3)} m ({along_env:.3f} m); wall "
            f"{t[-1] - start:.1f} s")
    print(text)
    assert seconds >= 20.0, text                            # s: most of the 40 s run (start-up takes a few)
    assert along_env >= 1.0, text                            # m: the policy rolls in the environment
    assert abs(along_ros - along_env) <= 0.2 * along_env, text   # the acceptance: within 20 %
