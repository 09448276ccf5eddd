"""The controllers' rate and step limits as seen on the wire across safety-gate closures (issue 33 #5). Pose
controller: a new goal's exact solve (0.2-1.5 s) runs while the monitor's heartbeat pauses, so the gate closes
before the update is sent; before, the dropped update had already moved the controller on, and the next
command sent was two steps from the last one sent (1.2 mm here, 2.0-2.45 mm in the issue, against the 1 mm
max_step). Rolling robot: the heartbeat pauses while a tip plays; before, the tip's schedule ran on meanwhile
and the next command jumped to where the tip would be by then."""
import numpy as np
import pytest
from geometry_msgs.msg import PoseArray, PoseStamped, Twist, Vector3
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Header

from ros_harness import ros  # noqa: F401  (fixture)
from tensegrity_control.locomotion_node import LocomotionController
from tensegrity_control.pose_node import PoseControllerNode
from tensegrity_engine.cli.app import main as tensegrity
from tensegrity_engine import load_model
from tensegrity_engine.control.pose import frame_pose
from tensegrity_engine.control.static_map import settle_inputs
from tensegrity_engine.dynamics.inputs import angles_to_u
from tensegrity_ros_common import topics
from tensegrity_ros_common.conversions import frame_to_pose, positions_to_pose_array, stamp_to_seconds

MANIPULATOR = load_model("stacked_manipulator")
# goals the plate can reach (poses of inputs within the limits), each far from the last: the output moves at
# its rate limit for ~2 s after each
GOALS = [frame_pose(MANIPULATOR, "C2", settle_inputs(MANIPULATOR, u).X) for u in
         ([0.02, -0.015, 0.01, 0.012, -0.01, 0.0], [-0.015, 0.02, -0.01, -0.012, 0.01, 0.005],
          [0.01, 0.01, -0.02, 0.0, 0.012, -0.01])]
# s: a command's stamp (the ROS clock when it was sent) against the controller's monotonic clock: both tick
# at the same rate, the stamp is taken just before the node marks the command sent
CLOCKS = 1e-3


def probe_node(ros, topic):
    """The test's node: records the commands on ``topic`` and heartbeats the monitor's all-clear at 50 Hz
    while ``beating[0]``. Returns (node, commands, beating)."""
    probe = ros.plain("probe")
    commands, beating = [], [True]
    probe.create_subscription(JointState, topic, commands.append, topics.command_qos())
    stop = probe.create_publisher(Bool, topics.SAFETY_STOP, topics.latched_qos())
    probe.create_timer(0.02, lambda: beating[0] and stop.publish(Bool(data=False)))
    return probe, commands, beating


def steps_and_intervals(commands, to_u=np.asarray) -> tuple:
    """(largest input change per command [m], time between their stamps [s]) along ``commands``."""
    u = np.array([to_u(np.asarray(m.position)) for m in commands])
    stamps = np.array([stamp_to_seconds(m.header.stamp) for m in commands])
    return np.abs(np.diff(u, axis=0)).max(axis=1), np.diff(stamps)


def test_every_command_on_the_wire_keeps_the_rate_and_step_limits_across_gate_closures(ros):
    ctl = ros.node(PoseControllerNode, "-p", "feedback:=false", "-p", "max_rate:=0.01", "-p", "max_step:=0.001")
    probe, commands, beating = probe_node(ros, topics.MOTOR_COMMANDS)
    goal = probe.create_publisher(PoseStamped, "plate_goal", topics.command_qos())
    ros.spin_until(lambda: ctl.gate.clear(), 30, "the all-clear")
    closures = 0
    for g in GOALS * 2:
        goal.publish(PoseStamped(header=Header(frame_id="world"), pose=frame_to_pose(g)))
        beating[0] = False                        # the heartbeat pauses while the new goal is solved
        ros.spin_for(0.6)
        closures += not ctl.gate.clear()
        beating[0] = True
        ros.spin_for(1.0)                         # moving at the rate limit
    assert closures >= 4 and len(commands) > 50            # (~300 idle, fewer on a loaded machine)
    steps, intervals = steps_and_intervals(commands, lambda a: angles_to_u(MANIPULATOR, a))
    print(f"\n{len(commands)} commands, {closures} gate closures: largest step {1e3 * steps.max():.3f} mm")
    assert steps.max() > 0.1e-3                   # it moves
    assert np.all(steps <= 0.001 + 1e-12), f"steps {1e3 * steps[steps > 0.001]} mm against max_step 1 mm"
    bad = steps > 0.01 * (intervals + CLOCKS) + 1e-12
    assert not np.any(bad), (1e3 * steps[bad], intervals[bad])


@pytest.fixture(scope="module")
def superball(tmp_path_factory):
    """A SUPERball-like six-bar on the ground (tensegrity new superball): 12 nodes, 24 actuators."""
    path = tmp_path_factory.mktemp("models") / "superball.yaml"
    assert tensegrity(["new", "superball", "-o", str(path)]) == 0
    return path


def test_a_tip_interrupted_by_gate_closures_resumes_where_its_last_command_left_off(ros, superball):
    """Node positions held still, so a tip plays on the wire at the gait's rate; the heartbeat pauses for
    0.6 s (the gate closes after 0.15 s: no stop, so the heading stays) three times while it plays."""
    model = load_model(str(superball))
    ctl = ros.node(LocomotionController, "-p", f"model:={superball}", "-p", "cmd_vel_timeout:=30.0")
    probe, commands, beating = probe_node(ros, topics.DISPLACEMENT_COMMANDS)
    nodes = probe.create_publisher(PoseArray, topics.NODE_POSITIONS, topics.sensor_qos())
    X = model.positions[:model.n_physical].copy()
    probe.create_timer(0.02, lambda: nodes.publish(positions_to_pose_array(X, Header(frame_id="world"))))
    ros.spin_until(lambda: commands, 20, "commands at rest")
    probe.create_publisher(Twist, "cmd_vel", topics.command_qos()).publish(Twist(linear=Vector3(x=0.3)))
    ros.spin_until(lambda: np.max(np.abs(commands[-1].position)) > 0.005, 30, "a tip on the wire")
    closures = 0
    for _ in range(3):
        beating[0] = False
        ros.spin_for(0.6)
        closures += not ctl.gate.clear()
        beating[0] = True
        ros.spin_for(0.3)
    assert closures == 3 and not ctl.held
    steps, intervals = steps_and_intervals(commands)
    rate = ctl.controller.rate                       # m/s: the gait's input speed
    print(f"\n{len(commands)} commands, largest step {1e3 * steps.max():.2f} mm (rate {1e3 * rate:.0f} mm/s)")
    assert steps.max() > 0.0                         # it moves
    # the gait's inputs are a schedule of the controller's time, which stands still while nothing is sent:
    # between commands, at most the gait's rate times their interval (+ 20 ms: a command is computed up to a
    # control period before its stamp); across a closure (~0.45 s without a command) the inputs resume where
    # they stopped: at most 0.15 s of the gait (a control period and a late tick on a loaded machine), not the
    # 0.45 s of the pause (before: 13.5 mm jumps at 45 mm/s after 0.3 s closures)
    assert np.all(steps <= rate * (intervals + 0.02) + 1e-12)
    across = intervals > 0.35
    print(f"across closures: steps {1e3 * steps[across]} mm after {intervals[across]} s")
    assert across.sum() >= 3 and np.all(steps[across] <= rate * 0.15), (1e3 * steps[across], intervals[across])
