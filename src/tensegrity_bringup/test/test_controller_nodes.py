"""The controller nodes (tensegrity_control) with real rclpy and DDS: parameter checks, bad input that is
reported and never crashes a node, stale inputs, and the pose controller's safety stop against the real
simulator. The end-to-end runs (the robot rolls, the plate reaches its goal) are in
test_controller_end_to_end.py (slow tier)."""
import math
import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Point, Pose, PoseArray, PoseStamped, Quaternion, Twist, Vector3
from nav_msgs.msg import Path
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Header, String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from builtin_interfaces.msg import Duration, Time

from ros_harness import ros  # noqa: F401  (fixture)
from tensegrity_control.locomotion_node import LocomotionController
from tensegrity_control.pose_node import PoseControllerNode
from tensegrity_engine import load_model
from tensegrity_engine.dynamics.inputs import angles_to_u
from tensegrity_engine.frames import model_frames
from tensegrity_engine.cli.app import main as tensegrity
from tensegrity_ros_common import diagnostics as diag
from tensegrity_ros_common import topics
from tensegrity_ros_common.conversions import frame_to_pose, positions_to_pose_array, stamp_to_seconds
from tensegrity_ros_common.description import describe
from tensegrity_sim.simulator_node import TensegritySimulator, start_positions

MANIPULATOR = load_model("stacked_manipulator")


@pytest.fixture(scope="module")
def superball(tmp_path_factory):
    """A SUPERball-like six-bar on the ground (tensegrity new superball): 12 nodes, 24 actuators."""
    path = tmp_path_factory.mktemp("models") / "superball.yaml"
    assert tensegrity(["new", "superball", "-o", str(path)]) == 0
    return path


class Probe:
    """The test's node: publishes the controllers' inputs, plays the collision monitor's heartbeat and
    collects their commands and diagnostics."""

    def __init__(self, ros):
        self.ros = ros
        self.node = ros.plain("probe")
        n, cq = self.node, topics.command_qos()
        self.commands, self.diagnostics, self.joints = [], [], []
        n.create_subscription(JointState, topics.JOINT_STATES, lambda m: self.joints.append(m), topics.sensor_qos())
        n.create_subscription(JointState, topics.MOTOR_COMMANDS, self._command, cq)
        n.create_subscription(JointState, topics.DISPLACEMENT_COMMANDS, self._command, cq)
        n.create_subscription(DiagnosticArray, topics.DIAGNOSTICS,
                              lambda m: self.diagnostics.extend(s for s in m.status if s.name.endswith(": controller")),
                              10)
        self.pub = {name: n.create_publisher(typ, name, qos) for name, typ, qos in [
            ("cmd_vel", Twist, cq), ("goal_pose", PoseStamped, cq), ("plate_goal", PoseStamped, cq),
            ("plate_path", Path, cq), ("joint_trajectory", JointTrajectory, cq),
            (topics.NODE_POSITIONS, PoseArray, topics.sensor_qos()),
            (topics.plate_pose_topic("C2"), PoseStamped, topics.sensor_qos()),
            (topics.SAFETY_STOP, Bool, topics.latched_qos())]}
        self.stop = None                # None: no monitor; else the heartbeat's value (50 Hz)
        n.create_timer(0.02, self._beat)

    def _command(self, msg):
        self.commands.append((time.monotonic(), msg))

    def _beat(self):
        if self.stop is not None:
            self.pub[topics.SAFETY_STOP].publish(Bool(data=self.stop))

    def send(self, topic, msg):
        self.pub[topic].publish(msg)

    def last_status(self):
        return self.diagnostics[-1] if self.diagnostics else None

    def values(self):
        return {kv.key: kv.value for kv in self.last_status().values}


def pose_stamped(x, y, z, frame="world", w=1.0):
    return PoseStamped(header=Header(frame_id=frame), pose=Pose(position=Point(x=float(x), y=float(y), z=float(z)),
                                                                 orientation=Quaternion(w=float(w))))


def angle_trajectory(name, angle, seconds):
    return JointTrajectory(joint_names=[name], points=[JointTrajectoryPoint(
        positions=[float(angle)], time_from_start=Duration(sec=int(seconds), nanosec=int((seconds % 1) * 1e9)))])


# --- parameters --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("node, params, words", [
    (PoseControllerNode, ["frame:=C9"], "no frame 'C9'"),
    (PoseControllerNode, ["control_rate:=0.0"], "'control_rate'"),
    (PoseControllerNode, ["max_step:=-0.001"], "'max_step'"),
    (PoseControllerNode, ["model:=prism3"], "no frame 'C2'"),
    (LocomotionController, ["model:=SUPERBALL", "actuators:=[m1,nope]"], "unknown actuator(s) ['nope']"),
    (LocomotionController, ["model:=SUPERBALL", "cmd_vel_timeout:=0.0"], "'cmd_vel_timeout'"),
], ids=["frame", "rate", "max_step", "model-without-frame", "actuator", "cmd_vel_timeout"])
def test_bad_parameters_stop_the_node_with_a_message(ros, superball, node, params, words):
    args = []
    for p in params:
        args += ["-p", p.replace("SUPERBALL", str(superball))]
    with pytest.raises(ValueError) as err:
        ros.node(node, *args)
    assert words in str(err.value)


def test_without_a_model_parameter_the_model_comes_from_model_description(ros, superball):
    """model '' (the launch files' default for the rolling robot): the simulator's latched description; a
    broken description is rejected and reported, the next valid one is taken."""
    ctl = ros.node(LocomotionController, "-p", "diagnostic_rate:=10.0")
    probe = Probe(ros)
    pub = probe.node.create_publisher(String, topics.MODEL_DESCRIPTION, topics.latched_qos())
    ros.spin_until(lambda: probe.diagnostics, 5, "diagnostics")
    assert diag.level_of(probe.last_status()) == diag.WARN and "waiting for the model" in probe.last_status().message
    pub.publish(String(data="{not json"))
    ros.spin_until(lambda: ctl.rejected == 1, 5, "the broken description rejected")
    assert ctl.model is None and ctl.last_rejection.startswith("model_description")
    model = load_model(str(superball))
    pub.publish(String(data=describe(model)))
    ros.spin_until(lambda: ctl.model is not None, 10, "the model from the description")
    assert list(ctl.model.actuator_names) == list(model.actuator_names) and ctl.controller is not None


# --- locomotion controller ---------------------------------------------------------------------------------

def test_locomotion_controller_reports_bad_input_and_holds_without_measurements(ros, superball):
    model = load_model(str(superball))
    # safety.timeout 5 s: the probe's heartbeat shares this process's executor, which a loaded machine delays
    # past the default 0.15 s; the status would then say 'no all-clear' instead of the stale measurements
    # this test is about (the gate's own tests: test_safety_chain.py, the pose controller's below)
    ctl = ros.node(LocomotionController, "-p", f"model:={superball}", "-p", "diagnostic_rate:=10.0",
                   "-p", "safety.timeout:=5.0")
    probe = Probe(ros)
    probe.stop = False                              # the monitor's all-clear
    X = model.positions[:model.n_physical].copy()
    feeding = [True]
    probe.node.create_timer(0.02, lambda: feeding[0] and probe.send(
        topics.NODE_POSITIONS, positions_to_pose_array(X, Header(frame_id="world"))))
    ros.spin_until(lambda: probe.commands, 20, "displacement commands")
    X[5] = np.nan                                   # from now on one node unseen: still controlled
    n = len(probe.commands)
    ros.spin_until(lambda: len(probe.commands) > n + 10 and np.isnan(ctl.X[5]).all(), 5, "commands, node 5 unseen")
    cmd = probe.commands[-1][1]
    assert list(cmd.name) == list(model.actuator_names)
    u = np.asarray(cmd.position)
    lo, hi = model.u_limits.T
    assert np.all(np.isfinite(u)) and np.all(u >= lo - 1e-12) and np.all(u <= hi + 1e-12)
    # malformed inputs: each rejected and counted, the node keeps running
    probe.send(topics.NODE_POSITIONS, positions_to_pose_array(X[:4], Header(frame_id="world")))
    ros.spin_until(lambda: ctl.rejected == 1, 5, "the short node_positions rejected")
    assert "node_positions has 4 poses" in ctl.last_rejection
    probe.send("cmd_vel", Twist(linear=Vector3(x=float("nan"), y=0.0, z=0.0)))
    probe.send("goal_pose", pose_stamped(1.0, 0.0, 0.0, frame="map"))
    probe.send("goal_pose", pose_stamped(1.0, 0.0, 0.0, w=0.0))
    ros.spin_until(lambda: ctl.rejected >= 4, 5, "four rejections")
    # cmd_vel: a heading; it goes stale after cmd_vel_timeout (0.5 s) and the robot is told to stop
    probe.send("cmd_vel", Twist(linear=Vector3(x=0.0, y=0.3, z=0.0)))
    ros.spin_until(lambda: ctl.cmd_vel_at is not None, 5, "cmd_vel received")
    ros.spin_until(lambda: ctl.cmd_vel_at is None, 2, "stale cmd_vel -> stop")
    # measurements stop: once the last one is older than measurement_timeout (0.2 s) no command goes out and
    # the diagnostics say ERROR, stale. Judged by the commands' stamps against the instant the node itself
    # had no fresh measurement (read under the lock its send takes: a later send is stamped later), not by
    # when commands reach the probe (under load one sent before can arrive after: 14 == 13).
    feeding[0] = False
    ros.spin_until(lambda: ctl.measurement_age() > 1.0, 10, "the last measurement 1 s old")
    with ctl.worker.lock:
        stale_since = ctl.get_clock().now().nanoseconds
        assert not ctl.measurement_fresh()
        measured_at = ctl.measured_at
    seen = len(probe.diagnostics)
    ros.spin_until(lambda: len(probe.diagnostics) > seen, 10,
                   "diagnostics published after the measurements went stale")
    ros.spin_for(0.5)
    assert ctl.measured_at == measured_at, "a measurement sent before the feed stopped arrived > 1 s late"
    late = [m for _, m in probe.commands if m.header.stamp.sec * 10**9 + m.header.stamp.nanosec > stale_since]
    assert late == [], f"{len(late)} command(s) sent without a fresh measurement"
    st = probe.last_status()
    assert diag.level_of(st) == diag.ERROR and "stale" in st.message, st.message
    assert int(probe.values()["rejected_inputs"]) == ctl.rejected >= 4


def test_goals_in_the_odometry_frame_are_taken_and_absurd_ones_rejected(ros, superball):
    """goal_pose in 'odom' (the frame the odometry is in, which coincides with 'world') is a goal; one at
    1e308 m or beyond goal_limit, or in another frame, is rejected with the reason and changes nothing."""
    ctl = ros.node(LocomotionController, "-p", f"model:={superball}", "-p", "diagnostic_rate:=10.0")
    probe = Probe(ros)
    probe.stop = False
    probe.send("goal_pose", pose_stamped(1e308, 0.0, 0.0))
    probe.send("goal_pose", pose_stamped(0.0, -150.0, 0.0, frame="odom"))
    ros.spin_until(lambda: ctl.rejected >= 2, 5, "two absurd goals rejected")
    assert "goal_limit" in ctl.last_rejection and not ctl.commanded
    probe.send("goal_pose", pose_stamped(2.0, 1.0, 0.0, frame="odom"))
    ros.spin_until(lambda: ctl.commanded, 5, "the goal in odom taken")
    ros.spin_until(lambda: ctl.controller.goal is not None, 5, "the goal handed to the gait")
    assert np.allclose(ctl.controller.goal, [2.0, 1.0]) and ctl.rejected == 2


def test_angular_z_turns_the_heading_and_speed_reaches_the_gait(ros, superball):
    """cmd_vel (0.03, 0) m/s with angular.z 0.5 rad/s re-sent at 10 Hz: the heading handed to the gait turns
    by about 0.5 rad per second of cmd_vel, and the speed is the twist's length."""
    ctl = ros.node(LocomotionController, "-p", f"model:={superball}")
    probe = Probe(ros)
    probe.stop = False
    twist = Twist(linear=Vector3(x=0.03, y=0.0, z=0.0), angular=Vector3(x=0.0, y=0.0, z=0.5))
    probe.node.create_timer(0.1, lambda: probe.send("cmd_vel", twist))
    ros.spin_until(lambda: ctl.cmd_vel_at is not None, 5, "cmd_vel received")
    start = time.monotonic()
    ros.spin_for(1.0)
    ros.spin_until(lambda: ctl.controller.heading is not None, 5, "a heading in the gait")
    elapsed = time.monotonic() - start
    assert ctl.turn == pytest.approx(0.5 * elapsed, abs=0.5 * 0.35)     # rad: ± the 0.1 s message spacing x 3
    assert ctl.controller.heading == pytest.approx(ctl.turn, abs=0.06)  # rad: a message may be in flight
    assert ctl.controller.speed == pytest.approx(0.03)


def test_a_model_the_controller_cannot_roll_is_reported_as_error_with_the_reason(ros, tmp_path):
    """model '' and a model_description of a robot without actuators (the generated three-bar): ERROR naming
    the reason, not 'no model yet', and a cmd_vel is rejected with that reason."""
    path = tmp_path / "threebar.yaml"
    assert tensegrity(["new", "threebar", "-o", str(path)]) == 0
    ctl = ros.node(LocomotionController, "-p", "diagnostic_rate:=10.0")
    probe = Probe(ros)
    pub = probe.node.create_publisher(String, topics.MODEL_DESCRIPTION, topics.latched_qos())
    pub.publish(String(data=describe(load_model(str(path)))))
    ros.spin_until(lambda: ctl.model_problem, 10, "the description judged")
    ros.spin_until(lambda: probe.diagnostics and diag.level_of(probe.last_status()) == diag.ERROR, 5, "ERROR")
    assert "no actuators" in probe.last_status().message
    probe.send("cmd_vel", Twist(linear=Vector3(x=0.1, y=0.0, z=0.0)))
    ros.spin_until(lambda: ctl.last_rejection.startswith("cmd_vel"), 5, "cmd_vel rejected")
    assert "no actuators" in ctl.last_rejection


# --- pose controller ---------------------------------------------------------------------------------------

def test_pose_controller_rejects_bad_input_and_keeps_running(ros):
    ctl = ros.node(PoseControllerNode, "-p", "diagnostic_rate:=10.0")
    probe = Probe(ros)
    probe.stop = False                              # the monitor's all-clear
    names = list(MANIPULATOR.actuator_names)
    probe.send("plate_goal", pose_stamped(float("nan"), 0.0, 0.3))
    probe.send("plate_goal", pose_stamped(0.0, 0.0, 0.3, frame="c2"))
    probe.send("joint_trajectory", angle_trajectory("motor_x", 0.1, 1.0))
    probe.send("joint_trajectory", angle_trajectory(names[0], MANIPULATOR.angle_limits[0, 1] + 1.0, 1.0))
    probe.send("plate_path", Path(header=Header(frame_id="world")))
    probe.send(topics.plate_pose_topic("C2"), pose_stamped(0.0, 0.0, float("inf")))
    ros.spin_until(lambda: ctl.rejected >= 6, 5, "six rejections")
    ros.spin_for(0.3)
    assert not probe.commands and ctl.mode == "idle"
    assert int(probe.values()["rejected_inputs"]) == 6
    assert "joint_trajectory" in probe.values()["last_rejection"] or ctl.last_rejection


def test_safety_stop_holds_the_pose_controller_until_a_new_goal_after_the_stop_clears(ros):
    """Motor commands stop within one control period (+ 50 ms for a late callback on a loaded machine) of the
    stop's arrival; the simulator's motors then hold the last command. After the stop clears nothing moves
    until a new trajectory arrives; one sent during the stop is refused."""
    ros.node(TensegritySimulator, "-p", "diagnostic_rate:=5.0")
    ctl = ros.node(PoseControllerNode, "-p", "diagnostic_rate:=10.0")
    probe = Probe(ros)
    probe.stop = False
    motor = MANIPULATOR.actuator_names[0]
    lo, hi = MANIPULATOR.angle_limits[0]
    ros.spin_until(lambda: ctl.gate.clear(), 10, "the all-clear")
    probe.send("joint_trajectory", angle_trajectory(motor, lo + 0.8 * (hi - lo), 4.0))
    ros.spin_until(lambda: len(probe.commands) > 25, 10, "motor commands")
    probe.stop = True
    probe.send(topics.SAFETY_STOP, Bool(data=True))
    ros.spin_until(lambda: not ctl.gate.clear(), 2, "the stop")
    ros.spin_for(1.0)
    # the commands' stamps (when they were sent) against the stop's arrival at the controller
    stopped_at = ctl.gate.received_at - (time.monotonic() - time.time())          # monotonic -> wall clock [s]
    bound = 1.0 / ctl.rate                          # s: the stated bound, one control period
    late = [m for _, m in probe.commands if stamp_to_seconds(m.header.stamp) > stopped_at + bound]
    assert not late, f"{len(late)} commands sent later than {bound} s after the stop"
    last = probe.commands[-1][1].position[0]
    st = probe.last_status()
    assert diag.level_of(st) == diag.ERROR and "holding" in st.message
    # the simulator's motor went to the last command (3 rad/s motor speed: there within 1 s) and stays there
    held = probe.joints[-1].position[0]
    ros.spin_for(0.3)
    assert probe.joints[-1].position[0] == pytest.approx(held, abs=1e-9) == pytest.approx(last, abs=1e-6)
    probe.send("joint_trajectory", angle_trajectory(motor, lo, 1.0))      # refused while stopped
    ros.spin_until(lambda: "safety stop" in ctl.last_rejection, 2, "refusal")
    probe.stop = False
    ros.spin_until(lambda: ctl.gate.clear(), 2, "the all-clear again")
    n = len(probe.commands)
    ros.spin_for(0.5)
    assert len(probe.commands) == n, "moved again without a new goal"
    probe.send("joint_trajectory", angle_trajectory(motor, lo + 0.5 * (hi - lo), 1.0))
    ros.spin_until(lambda: len(probe.commands) > n + 5, 5, "commands after the new goal")
    assert probe.commands[n][1].position[0] == pytest.approx(last, abs=0.1 * (hi - lo))   # no jump
    assert math.isfinite(probe.commands[-1][1].position[0])


def test_a_plate_path_is_followed_with_rate_limited_motor_commands(ros):
    """A two-pose path (start pose, then 5 mm up after 1 s) in feed-forward: the node sends motor angles
    whose inputs u = angles_to_u(angles) move by at most max_step (1 mm) per command and stay within the
    actuator limits (the contract's output limits, seen on the wire: every update the controller computed
    is sent, also one that took longer than the safety timeout, the first solve takes ~1 s)."""
    start = model_frames(MANIPULATOR, start_positions(MANIPULATOR))["C2"]
    up = start.copy()
    up[2, 3] += 0.005
    ctl = ros.node(PoseControllerNode, "-p", "feedback:=false")
    probe = Probe(ros)
    probe.stop = False
    ros.spin_until(lambda: ctl.gate.clear(), 10, "the all-clear")
    header = Header(stamp=Time(sec=100), frame_id="world")
    probe.send("plate_path", Path(header=header, poses=[
        PoseStamped(header=Header(stamp=Time(sec=100), frame_id="world"), pose=frame_to_pose(start)),
        PoseStamped(header=Header(stamp=Time(sec=101), frame_id="world"), pose=frame_to_pose(up))]))
    ros.spin_until(lambda: len(probe.commands) > 20, 30, "motor commands along the path")
    assert ctl.mode == "pose" and ctl.rejected == 0
    u = np.array([angles_to_u(MANIPULATOR, np.asarray(m.position)) for _, m in probe.commands])
    assert np.max(np.abs(np.diff(u, axis=0))) <= ctl.limits["max_step"] + 1e-12
    lo, hi = MANIPULATOR.u_limits.T
    assert np.all(u >= lo - 1e-12) and np.all(u <= hi + 1e-12)
    assert np.max(np.abs(u[-1])) > 0                 # it moves


# --- the safety stop while a plan or a solve is being computed ------------------------------------------------

# s: the stated reaction bound (docs/controllers.md): one control period (20 ms) + the longest engine call that
# holds Python's GIL (numba kernels, ~0.1 s measured) + 80 ms for a late callback on a loaded machine
REACTION_BOUND = 0.2


def wait_for_long_update(ros, ctl, seconds=0.05, timeout=20.0):
    """Spin until the node's worker has been busy for ``seconds`` [s] without a break: a plan or a solve, not a
    routine update (those take well under a millisecond)."""
    since = [None]

    def long_busy():
        if not ctl.worker.busy():
            since[0] = None
            return False
        since[0] = since[0] or time.monotonic()
        return time.monotonic() - since[0] >= seconds
    ros.spin_until(long_busy, timeout, "a long controller update (plan or solve)")


def stop_during_the_update(ros, ctl, probe):
    """Raise the stop while the worker computes; returns (seconds until the node published ERROR, whether the
    update still ran when the node took the stop)."""
    sent = time.monotonic()
    probe.stop = True
    probe.send(topics.SAFETY_STOP, Bool(data=True))
    ros.spin_until(lambda: ctl.held, 2, "the stop taken by the node")
    still_running = ctl.worker.busy()
    ros.spin_until(lambda: probe.diagnostics and diag.level_of(probe.last_status()) == diag.ERROR, 2, "ERROR")
    reaction = time.monotonic() - sent
    ros.spin_until(lambda: not ctl.worker.busy(), 10, "the update to end")
    ros.spin_for(0.3)
    return reaction, still_running


def sent_after(probe, ctl) -> list:
    """Commands whose stamp (the time they were sent) is later than the stop's arrival at the node."""
    stopped_at = ctl.gate.received_at - (time.monotonic() - time.time())          # monotonic -> wall clock [s]
    return [m for _, m in probe.commands if stamp_to_seconds(m.header.stamp) > stopped_at]


def test_a_stop_during_a_gait_plan_holds_the_rolling_robot_and_drops_its_heading(ros, superball):
    """cmd_vel makes the gait planner plan its first tip (~0.3 s, confirmed in the contact dynamics); a stop
    arriving meanwhile: ERROR within the bound, the planned tip is never sent, the heading is dropped, cmd_vel
    is refused during the stop, and after it clears nothing moves until a new cmd_vel."""
    model = load_model(str(superball))
    ctl = ros.node(LocomotionController, "-p", f"model:={superball}", "-p", "diagnostic_rate:=2.0",
                   "-p", "cmd_vel_timeout:=5.0")
    probe = Probe(ros)
    probe.stop = False
    X = model.positions[:model.n_physical].copy()
    probe.node.create_timer(0.02, lambda: probe.send(topics.NODE_POSITIONS,
                                                     positions_to_pose_array(X, Header(frame_id="world"))))
    ros.spin_until(lambda: len(probe.commands) > 5, 20, "commands at rest (u = 0)")
    probe.send("cmd_vel", Twist(linear=Vector3(x=0.3, y=0.0, z=0.0)))
    wait_for_long_update(ros, ctl)
    reaction, still_running = stop_during_the_update(ros, ctl, probe)
    print(f"locomotion: ERROR {1e3 * reaction:.0f} ms after the stop, plan still running then: {still_running}, "
          f"state after the plan {ctl.controller.status['state']}")
    assert still_running, "the plan ended before the stop was taken: the test did not test the race"
    assert reaction <= REACTION_BOUND
    assert not sent_after(probe, ctl), "a command from the plan was sent after the stop"
    assert all(not np.any(m.position) for _, m in probe.commands)      # only the rest inputs ever went out
    assert ctl.controller.heading is None and ctl.controller.goal is None
    assert "holding" in probe.last_status().message
    probe.send("cmd_vel", Twist(linear=Vector3(x=0.3, y=0.0, z=0.0)))
    ros.spin_until(lambda: "cmd_vel: safety stop" in ctl.last_rejection, 2, "cmd_vel refused during the stop")
    probe.stop = False
    ros.spin_until(lambda: ctl.gate.clear(), 2, "the all-clear again")
    n = len(probe.commands)
    ros.spin_for(0.5)
    assert len(probe.commands) == n, "moved again without a new cmd_vel"
    probe.send("cmd_vel", Twist(linear=Vector3(x=0.3, y=0.0, z=0.0)))
    ros.spin_until(lambda: len(probe.commands) > n + 5, 10, "commands after the new cmd_vel")
    assert not ctl.held and ctl.controller.heading == pytest.approx(0.0)


def test_a_stop_during_the_first_exact_solve_holds_the_pose_controller(ros):
    """A new plate goal's first update solves the inverse statics (~0.7 s); a stop arriving meanwhile:
    ERROR within the bound and the solved command is never sent."""
    goal = model_frames(MANIPULATOR, start_positions(MANIPULATOR))["C2"].copy()
    goal[2, 3] += 0.005
    ctl = ros.node(PoseControllerNode, "-p", "feedback:=false", "-p", "diagnostic_rate:=2.0")
    probe = Probe(ros)
    probe.stop = False
    ros.spin_until(lambda: ctl.gate.clear(), 10, "the all-clear")
    probe.send("plate_goal", PoseStamped(header=Header(frame_id="world"), pose=frame_to_pose(goal)))
    wait_for_long_update(ros, ctl)
    reaction, still_running = stop_during_the_update(ros, ctl, probe)
    print(f"pose: ERROR {1e3 * reaction:.0f} ms after the stop, solve still running then: {still_running}")
    assert still_running, "the solve ended before the stop was taken: the test did not test the race"
    assert reaction <= REACTION_BOUND
    assert not probe.commands, "the solved command was sent after the stop"
    assert ctl.mode == "idle" and ctl.held


def test_after_a_stop_mid_tip_a_new_cmd_vel_ramps_the_inputs_from_the_held_command(ros, superball):
    """A stop while a tip plays (inputs away from zero; node_positions held still, so the tip plays on the
    wire): the motors hold the last command; after the stop clears, a new cmd_vel first ramps the inputs from
    that held command back to zero at the gait's rate (no jump to where the interrupted tip would be by now)."""
    model = load_model(str(superball))
    ctl = ros.node(LocomotionController, "-p", f"model:={superball}", "-p", "cmd_vel_timeout:=30.0")
    probe = Probe(ros)
    probe.stop = False
    X = model.positions[:model.n_physical].copy()
    probe.node.create_timer(0.02, lambda: probe.send(topics.NODE_POSITIONS,
                                                     positions_to_pose_array(X, Header(frame_id="world"))))
    ros.spin_until(lambda: probe.commands, 20, "commands at rest")
    probe.send("cmd_vel", Twist(linear=Vector3(x=0.3, y=0.0, z=0.0)))
    ros.spin_until(lambda: np.max(np.abs(probe.commands[-1][1].position)) > 0.01, 20, "a tip on the wire (|u| > 1 cm)")
    probe.stop = True
    probe.send(topics.SAFETY_STOP, Bool(data=True))
    ros.spin_until(lambda: ctl.held, 2, "the stop")
    ros.spin_for(1.0)                                 # the interrupted tip's schedule runs on meanwhile
    held = np.asarray(probe.commands[-1][1].position)
    probe.stop = False
    ros.spin_until(lambda: ctl.gate.clear(), 2, "the all-clear again")
    n = len(probe.commands)
    probe.send("cmd_vel", Twist(linear=Vector3(x=0.3, y=0.0, z=0.0)))
    ros.spin_until(lambda: len(probe.commands) > n + 10, 10, "commands after the new cmd_vel")
    new = [m for _, m in probe.commands[n:n + 10]]
    U = np.array([m.position for m in new])
    sent = np.array([stamp_to_seconds(m.header.stamp) for m in new])
    rate = ctl.controller.rate                        # m/s: the gait's ramp speed
    # the inputs leave the held command no faster than the ramp: by at most rate x (time since the first new
    # command + 0.1 s: the ramp starts when the worker takes the cmd_vel, a few ms before its first update, and
    # a loaded machine may delay the stamp); an interrupted tip resumed by its schedule jumps 50-60 mm
    away = np.max(np.abs(U - held), axis=1)
    print(f"held |u| {np.max(np.abs(held)):.4f} m; after the resume the inputs left it by {1e3 * away[0]:.2f} mm "
          f"(first command) .. {1e3 * away[-1]:.2f} mm after {sent[-1] - sent[0]:.3f} s (ramp {1e3 * rate:.0f} mm/s)")
    assert np.all(away <= rate * (sent - sent[0] + 0.1))
    assert np.max(np.abs(U[-1])) < np.max(np.abs(held))              # on the way back to zero
