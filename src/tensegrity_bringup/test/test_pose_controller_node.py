"""pose_controller with real rclpy and DDS (issue 32): the nearest reachable pose and the arrival event
(against the real simulator), the reachability log of a goal that replaced another one while an update was
starting, and a path sent after an unreachable goal."""
import math

import numpy as np
from geometry_msgs.msg import PoseArray, PoseStamped
from nav_msgs.msg import Path
from sensor_msgs.msg import JointState
from rcl_interfaces.msg import Log
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from std_msgs.msg import Bool, Header

from ros_harness import ros  # noqa: F401  (fixture)
from tensegrity_control.pose_node import PoseControllerNode
from tensegrity_engine import load_model
from tensegrity_engine.control import inverse_statics
from tensegrity_engine.control.pose import frame_pose
from tensegrity_engine.control.static_map import settle_inputs
from tensegrity_engine.frames import model_frames, rotation_angle
from tensegrity_ros_common import topics
from tensegrity_ros_common.conversions import expand_physical, frame_to_pose, pose_array_to_positions, pose_to_frame
from tensegrity_sim.simulator_node import TensegritySimulator, start_positions

MANIPULATOR = load_model("stacked_manipulator")
START = model_frames(MANIPULATOR, start_positions(MANIPULATOR))["C2"]


# reachable: the pose some inputs within the limits give (a pose moved by hand generally is not: the
# reachable set is a thin 6-D region); ASIDE: issue 32's unreachable goal, 120 mm along x
REACHABLE = frame_pose(MANIPULATOR, "C2", settle_inputs(MANIPULATOR, [0.006, -0.004, 0.002, 0.003, -0.002, 0.0]).X)
ASIDE = START.copy()
ASIDE[0, 3] += 0.12
MOCAP_NOISE = 5e-4      # m per axis and marker: a motion-capture system's noise (issue 32)


class Caller:
    """The test's node: sends goals and paths, plays the collision monitor's all-clear (50 Hz), and keeps what
    the pose controller publishes about its goals and logs."""

    def __init__(self, ros):
        self.node = n = ros.plain("caller")
        self.nearest, self.reached, self.logs, self.plate, self.status = [], [], [], [], None
        n.create_subscription(PoseStamped, topics.PLATE_GOAL_NEAREST, self.nearest.append, topics.latched_qos())
        n.create_subscription(PoseStamped, topics.PLATE_GOAL_REACHED, self.reached.append, topics.latched_qos())
        n.create_subscription(PoseStamped, topics.plate_pose_topic("C2"), self.plate.append, topics.sensor_qos())
        n.create_subscription(Log, "/rosout", self._log, 100)
        n.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, self._diagnostics, 10)
        cq = topics.command_qos()
        self.goal = n.create_publisher(PoseStamped, "plate_goal", cq)
        self.path = n.create_publisher(Path, "plate_path", cq)
        stop = n.create_publisher(Bool, topics.SAFETY_STOP, topics.latched_qos())
        n.create_timer(0.02, lambda: stop.publish(Bool(data=False)))

    def _log(self, msg):
        if msg.name == "pose_controller":
            self.logs.append(msg.msg)

    def _diagnostics(self, msg):
        for st in msg.status:
            if st.name.endswith(": controller"):
                self.status = st

    def verdicts(self, what="plate_goal"):
        """The reachability lines logged for ``what`` goals, in order."""
        return [m for m in self.logs if m.startswith(f"{what}: reachable") or m.startswith(f"{what} unreachable")]

    def values(self):
        return {kv.key: kv.value for kv in self.status.values}


class NoisyMocap:
    """A motion-capture system as the pose controller sees it: the simulator's physical node positions with
    MOCAP_NOISE [m] of Gaussian noise per axis added (what markers give), the plate pose computed from them
    and published on ``topic`` (the controller's plate_pose/c2 remapped there), at the simulator's 100 Hz."""

    def __init__(self, ros, topic, seed=0):
        self.rng = np.random.default_rng(seed)
        self.node = n = ros.plain("noisy_mocap")
        self.pub = n.create_publisher(PoseStamped, topic, topics.sensor_qos())
        self.errors = []                     # (position [m], angle [rad]) of each published pose vs the truth
        n.create_subscription(PoseArray, topics.NODE_POSITIONS, self._on_nodes, topics.sensor_qos())

    def _on_nodes(self, msg):
        X = pose_array_to_positions(msg)
        noisy = X + self.rng.normal(0.0, MOCAP_NOISE, X.shape)
        C = model_frames(MANIPULATOR, expand_physical(MANIPULATOR, noisy))["C2"]
        true = model_frames(MANIPULATOR, expand_physical(MANIPULATOR, X))["C2"]
        self.errors.append((np.linalg.norm(C[:3, 3] - true[:3, 3]), rotation_angle(C, true)))
        self.pub.publish(PoseStamped(header=msg.header, pose=frame_to_pose(C)))


def goal_message(pose):
    return PoseStamped(header=Header(frame_id="world"), pose=frame_to_pose(pose))


def start(ros, *params):
    ctl = ros.node(PoseControllerNode, "-p", "diagnostic_rate:=10.0", *params)
    caller = Caller(ros)
    ros.spin_until(lambda: ctl.gate.clear(), 10, "the all-clear")
    return ctl, caller


def test_the_nearest_reachable_pose_is_published_for_each_goal(ros):
    """Latched PoseStamped on plate_goal/nearest once the goal is solved: the goal itself when reachable, else
    the engine's nearest reachable pose (a fresh solve agrees to a few um: a flat valley of the fit)."""
    ctl, caller = start(ros, "-p", "feedback:=false")
    caller.goal.publish(goal_message(REACHABLE))
    ros.spin_until(lambda: caller.nearest, 30, "the nearest pose of the reachable goal")
    assert np.allclose(pose_to_frame(caller.nearest[-1].pose), REACHABLE, atol=1e-5)
    caller.goal.publish(goal_message(ASIDE))
    ros.spin_until(lambda: len(caller.nearest) == 2, 30, "the nearest pose of the unreachable goal")
    nearest = pose_to_frame(caller.nearest[-1].pose)
    expected = inverse_statics(MANIPULATOR, "C2", ASIDE)
    assert np.linalg.norm(nearest[:3, 3] - expected.pose[:3, 3]) < 1e-4
    assert rotation_angle(nearest, expected.pose) < math.radians(0.01)
    assert caller.nearest[-1].header.frame_id == "world"
    ros.spin_until(lambda: caller.status and "goal unreachable" in caller.status.message, 10, "WARN: unreachable")
    assert caller.values()["reachable"] == "False"


def test_the_goal_reached_event_says_where_the_plate_stopped(ros):
    """Against the simulator (feedback on): plate_goal/reached comes once, with the plate's measured pose,
    within 1 mm and 0.2 deg of the goal; the plate is still there 1 s later; diagnostics say goal_reached."""
    ros.node(TensegritySimulator, "-p", "diagnostic_rate:=2.0")
    ctl, caller = start(ros)
    ros.spin_until(lambda: caller.plate, 20, "the simulator's plate pose")
    caller.goal.publish(goal_message(REACHABLE))
    ros.spin_until(lambda: caller.reached, 60, "the goal-reached event")
    event = pose_to_frame(caller.reached[-1].pose)
    assert np.linalg.norm(event[:3, 3] - REACHABLE[:3, 3]) < 1e-3
    assert rotation_angle(event, REACHABLE) < math.radians(0.2)
    ros.spin_for(1.0)
    plate = pose_to_frame(caller.plate[-1].pose)
    print(f"reached event: {1e3 * np.linalg.norm(event[:3, 3] - REACHABLE[:3, 3]):.3f} mm from the goal; 1 s later the "
          f"plate {1e3 * np.linalg.norm(plate[:3, 3] - REACHABLE[:3, 3]):.3f} mm, "
          f"{math.degrees(rotation_angle(plate, REACHABLE)):.3f} deg")
    assert np.linalg.norm(plate[:3, 3] - REACHABLE[:3, 3]) < 1e-3
    assert rotation_angle(plate, REACHABLE) < math.radians(0.2)
    assert len(caller.reached) == 1
    # waited for, not read once: on a loaded machine a late all-clear heartbeat puts "holding: ..." in one
    # diagnostics message now and then (seen in 2 of 3 runs beside tools/cpu_load.py)
    ros.spin_until(lambda: caller.values()["goal_reached"] == "True" and "goal reached" in caller.status.message,
                   5, "goal reached in the diagnostics")
    assert any(m.startswith("plate_goal: arrived") for m in caller.logs)


def test_the_goal_reached_event_fires_once_with_noisy_measurements(ros):
    """The plate pose measured through a noisy motion capture (0.5 mm per marker: ~0.5 mm and ~0.3 deg per
    pose, the angle noise more than the 0.2 deg tolerance): plate_goal/reached still comes, once (before:
    never, each measurement had to be within the tolerances for 1 s), at a filtered pose within 1 mm and
    0.2 deg of the goal; the simulated plate is within them too; the diagnostics say goal_reached."""
    ros.node(TensegritySimulator, "-p", "diagnostic_rate:=2.0")
    mocap = NoisyMocap(ros, "mocap/plate_pose/c2")
    ctl, caller = start(ros, "-r", f"{topics.plate_pose_topic('C2')}:=mocap/plate_pose/c2")
    ros.spin_until(lambda: ctl.measurement_fresh() and len(mocap.errors) > 50, 20, "the noisy plate pose")
    rms = np.sqrt(np.mean(np.square(mocap.errors), axis=0))
    assert rms[1] > math.radians(0.2)                   # the noise alone puts single measurements outside
    caller.goal.publish(goal_message(REACHABLE))
    ros.spin_until(lambda: caller.reached, 45, "the goal-reached event with noisy measurements")
    event = pose_to_frame(caller.reached[-1].pose)
    ros.spin_for(2.0)
    plate = pose_to_frame(caller.plate[-1].pose)          # the simulator's own (exact) plate pose
    print(f"noisy reached event: measurement noise rms {1e3 * rms[0]:.2f} mm, {math.degrees(rms[1]):.2f} deg; event "
          f"{1e3 * np.linalg.norm(event[:3, 3] - REACHABLE[:3, 3]):.3f} mm, "
          f"{math.degrees(rotation_angle(event, REACHABLE)):.3f} deg from the goal; 2 s later the plate "
          f"{1e3 * np.linalg.norm(plate[:3, 3] - REACHABLE[:3, 3]):.3f} mm, "
          f"{math.degrees(rotation_angle(plate, REACHABLE)):.3f} deg")
    for pose in (event, plate):
        assert np.linalg.norm(pose[:3, 3] - REACHABLE[:3, 3]) < 1e-3
        assert rotation_angle(pose, REACHABLE) < math.radians(0.2)
    assert len(caller.reached) == 1
    ros.spin_until(lambda: caller.values()["goal_reached"] == "True", 5, "goal_reached in the diagnostics")


def test_a_goal_arriving_as_an_update_starts_gets_its_own_reachability_log(ros):
    """The race: an update is handed to the worker, then a new (reachable) goal arrives before the worker
    starts; that update is still for the old (unreachable) goal. Before, its verdict was logged for the new
    goal ("plate_goal unreachable"), and the new goal's own never. The test calls the timer's and the
    subscription's callbacks itself, in that order, as the executor would, while holding the worker's wake-up
    condition (reentrant: the timer's submit takes it too), so the worker takes the update only after the
    goal has arrived."""
    ctl, caller = start(ros, "-p", "feedback:=false")
    caller.goal.publish(goal_message(ASIDE))
    ros.spin_until(lambda: caller.verdicts(), 30, "the unreachable goal's verdict")
    assert caller.verdicts() == [caller.verdicts()[0]] and "unreachable" in caller.verdicts()[0]
    ros.spin_until(lambda: not ctl.worker.busy() and not ctl.pending, 5, "an idle worker")
    with ctl.worker._wake:
        ctl._tick()
        assert ctl.worker.busy()                       # the update was handed over (the worker waits)
        ctl._on_goal(goal_message(REACHABLE))
    ros.spin_until(lambda: len(caller.verdicts()) == 2, 30, "the new goal's verdict")
    ros.spin_for(0.5)
    assert caller.verdicts()[1] == "plate_goal: reachable, on the way", caller.verdicts()
    assert len(caller.verdicts()) == 2


def test_a_path_after_an_unreachable_goal_starts_from_the_nearest_pose(ros):
    """Before, the path started at the unreachable goal and was reported unreachable. Its end's nearest
    pose is published when it comes (solved then), and not again at its end."""
    ctl, caller = start(ros, "-p", "feedback:=false")
    caller.goal.publish(goal_message(ASIDE))
    ros.spin_until(lambda: caller.verdicts(), 30, "the unreachable goal's verdict")
    header = Header(stamp=Time(sec=100), frame_id="world")
    caller.path.publish(Path(header=header, poses=[PoseStamped(header=Header(stamp=Time(sec=102), frame_id="world"),
                                                               pose=frame_to_pose(REACHABLE))]))
    ros.spin_until(lambda: caller.verdicts("plate_path"), 30, "the path's verdict")
    assert caller.verdicts("plate_path") == ["plate_path: reachable, on the way"]
    # the goal's nearest pose, then the path end's (solved when the path came: published with the verdict)
    ros.spin_until(lambda: len(caller.nearest) == 2, 5, "the nearest pose of the path's end")
    assert np.allclose(pose_to_frame(caller.nearest[-1].pose), REACHABLE, atol=1e-5)
    ros.spin_for(3.0)                                  # past the path's end: solved again, nothing new
    assert len(caller.nearest) == 2


def test_a_second_plate_pose_publisher_holds_the_controller(ros):
    """Another robot's plate pose on this robot's plate_pose/c2 (two robots without namespaces): with feedback
    on, the controller sends no motor command while two publishers are heard and says so at ERROR (before: it
    fed back whichever pose came last); once the stray publisher is gone (1 s window) the goal is reached."""
    ros.node(TensegritySimulator, "-p", "diagnostic_rate:=2.0")
    ctl, caller = start(ros)
    ros.spin_until(lambda: caller.plate, 20, "the simulator's plate pose")
    commands = []
    caller.node.create_subscription(JointState, topics.MOTOR_COMMANDS, commands.append, topics.command_qos())
    other = ros.plain("other_robot")
    stray = other.create_publisher(PoseStamped, topics.plate_pose_topic("C2"), topics.sensor_qos())
    timer = other.create_timer(0.01, lambda: stray.publish(goal_message(ASIDE)))
    ros.spin_until(lambda: stray.get_subscription_count() >= 2, 10, "the stray publisher matched")
    ros.spin_for(0.5)
    caller.goal.publish(goal_message(REACHABLE))
    ros.spin_until(lambda: caller.status and caller.status.level == DiagnosticStatus.ERROR
                   and "2 publishers" in caller.status.message, 10, "ERROR naming the two publishers")
    sent = len(commands)
    ros.spin_for(1.5)
    assert len(commands) == sent, "motor commands went out on doubtful feedback"
    timer.cancel()
    other.destroy_publisher(stray)
    ros.spin_until(lambda: caller.reached, 60, "the goal reached once the stray publisher is gone")
    assert np.linalg.norm(pose_to_frame(caller.reached[-1].pose)[:3, 3] - REACHABLE[:3, 3]) < 1e-3
