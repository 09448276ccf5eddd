"""The policy controller (tensegrity_control policy_node) with real rclpy and DDS: its parameters (a policy file
for another robot or rate stops it naming the file), the policy's targets on the locomotion controller's topic
while cmd_vel runs it, unseen nodes filled, a cmd_vel off the policy's heading refused, stale cmd_vel stops it;
and the bringup's --policy option. The run through the simulator is test_policy_through_ros.py (slow tier)."""
from pathlib import Path

import numpy as np
import pytest
from geometry_msgs.msg import Twist, Vector3
from std_msgs.msg import Header

from ros_harness import ros  # noqa: F401  (fixture)
from test_controller_nodes import Probe
from tensegrity_bringup.bringup import _checked_args, _parser
from tensegrity_control.policy_node import PolicyController
from tensegrity_engine import load_model
from tensegrity_engine.cli.app import main as tensegrity
from tensegrity_engine.learn.policy import Policy
from tensegrity_engine.learn.robots import rest_positions
from tensegrity_ros_common import topics
from tensegrity_ros_common.conversions import positions_to_pose_array

POLICY = Path(__file__).resolve().parents[3] / "config" / "policies" / "superball_rolling.npz"


@pytest.fixture(scope="module")
def superball(tmp_path_factory):
    """The robot the committed policy was trained for (tensegrity new superball --friction 0.8)."""
    path = tmp_path_factory.mktemp("models") / "superball.yaml"
    assert tensegrity(["new", "superball", "--friction", "0.8", "-o", str(path)]) == 0
    return path


@pytest.mark.parametrize("params, words", [
    ([], "parameter 'policy' is required"),
    ([f"policy:={POLICY}", "model:=stacked_manipulator"], "superball_rolling.npz: trained for model 'superball'"),
    ([f"policy:={POLICY}", "control_rate:=20.0"], "trained at 50 Hz"),
    (["policy:=/nonexistent/p.npz"], "p.npz: no such policy file"),
], ids=["no-policy", "other-robot", "rate", "missing"])
def test_bad_parameters_stop_the_policy_controller_naming_the_file(ros, params, words):
    args = [a for p in params for a in ("-p", p)]
    with pytest.raises(ValueError) as err:
        ros.node(PolicyController, *args)
    assert words in str(err.value)


def test_cmd_vel_runs_the_policy_on_the_measured_positions(ros, superball):
    model = load_model(str(superball))
    policy = Policy.load(POLICY, model)
    # safety.timeout 5 s: the probe's heartbeat shares this executor, which a loaded machine delays
    ctl = ros.node(PolicyController, "-p", f"model:={superball}", "-p", f"policy:={POLICY}",
                   "-p", "diagnostic_rate:=10.0", "-p", "safety.timeout:=5.0")
    probe = Probe(ros)
    probe.stop = False
    X = rest_positions(model)[:model.n_physical].copy()
    feed = {"X": X}
    probe.node.create_timer(0.02, lambda: probe.send(topics.NODE_POSITIONS, positions_to_pose_array(
        feed["X"], Header(frame_id="world"))))
    ros.spin_until(lambda: ctl.X is not None, 10, "node positions")
    ros.spin_for(0.3)
    assert not probe.commands                          # no cmd_vel: nothing sent
    probe.send("cmd_vel", Twist(linear=Vector3(x=0.0, y=0.2, z=0.0)))       # 90° off the policy's 0°
    ros.spin_until(lambda: ctl.rejected >= 1, 5, "the off-heading cmd_vel rejected")
    assert "this policy rolls only that way" in ctl.last_rejection and not ctl.running
    probe.send("cmd_vel", Twist(linear=Vector3(x=0.2, y=0.0, z=0.0)))
    ros.spin_until(lambda: probe.commands, 10, "displacement commands")
    first = probe.commands[0][1]
    assert list(first.name) == list(model.actuator_names)
    # the first update is the policy's t = 0 on the positions fed (float64 through the PoseArray: exact)
    assert np.allclose(first.position, policy.act(model, model.from_physical(X), 0.0), rtol=0, atol=1e-12)
    hidden = X.copy()
    hidden[3] = np.nan                                 # an occluded marker: its last position is used
    feed["X"] = hidden
    ros.spin_until(lambda: probe.commands and ctl.measured_at and np.isfinite(ctl.X).all(), 5, "filled node")
    n = len(probe.commands)
    ros.spin_until(lambda: len(probe.commands) > n + 5, 5, "commands with node 3 unseen")
    assert np.array_equal(ctl.X[3], X[3])
    # no new cmd_vel: after cmd_vel_timeout (0.5 s) the policy stops and nothing more is sent
    ros.spin_until(lambda: not ctl.running, 3, "stale cmd_vel stops the policy")
    ros.spin_for(0.3)
    n = len(probe.commands)
    ros.spin_for(0.5)
    assert len(probe.commands) == n
    assert probe.values()["state"] == "idle"


def test_bringup_policy_option_adds_the_controller_and_checks_the_file(capsys, superball, tmp_path):
    args, nodes, _ = _checked_args(_parser(), ["--policy", str(POLICY), "--model", str(superball)])
    assert nodes == ["simulator", "collision_monitor", "policy_controller"]
    assert args.drive == {"heading": 0.0, "controller": "policy_controller"}
    args, _, _ = _checked_args(_parser(), ["--policy", "superball_rolling", "--model", str(superball)])
    assert Path(args.policy) == POLICY                       # a name: the config directory's policies/NAME.npz
    other = tmp_path / "threebar.yaml"
    assert tensegrity(["new", "prism", "-o", str(other)]) == 0
    for argv, words in ((["--policy", str(POLICY), "--model", str(other)], "superball_rolling.npz: trained for"),
                        (["--policy", str(POLICY)], "--policy needs --model"),
                        (["--policy", "nope", "--model", str(superball)], "nope: no such policy file"),
                        (["--policy", str(POLICY), "--model", str(superball), "--goal", "1,1"], "no --goal"),
                        (["--policy", str(POLICY), "--locomotion", "--model", str(superball)], "without --locomotion")):
        with pytest.raises(SystemExit) as exit_:
            _checked_args(_parser(), argv)
        assert exit_.value.code == 2 and words in capsys.readouterr().err


def test_locomotion_controller_takes_the_measurement_noise(ros, superball):
    """measurement_noise reaches the planner's stillness test (RollingController noise; the engine's
    test_locomotion_mocap.py shows it rolling on mocap-like positions); a negative one stops the node."""
    from tensegrity_control.locomotion_node import LocomotionController
    ctl = ros.node(LocomotionController, "-p", f"model:={superball}", "-p", "measurement_noise:=0.002")
    assert ctl.controller.noise == 0.002
    with pytest.raises(ValueError, match="measurement_noise"):
        ros.node(LocomotionController, "-p", f"model:={superball}", "-p", "measurement_noise:=-0.001")
