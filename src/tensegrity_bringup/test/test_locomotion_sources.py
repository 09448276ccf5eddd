"""The locomotion controller with node_positions that are not its robot's (real rclpy and DDS): a second
robot's simulator on the same topic (another model, or the same one elsewhere), a relay that mixes two robots,
a stray marker, another frame, infinite values. The controller never acts on them: it reports why (ERROR in
diagnostics, the rejection counted), sends no new command meanwhile (the motors hold the last one) and goes on
once only its own robot's data come again; a jump to another place is never an arrival."""
import numpy as np
import pytest
from geometry_msgs.msg import Twist, Vector3
from std_msgs.msg import Header

from ros_harness import ros  # noqa: F401  (fixture)
from test_controller_nodes import Probe, pose_stamped, superball  # noqa: F401  (fixture)
from tensegrity_control.locomotion_node import LocomotionController
from tensegrity_control.measurement_guard import WINDOW
from tensegrity_engine import load_model
from tensegrity_engine.cli.app import main as tensegrity
from tensegrity_engine.locomotion.support import centre_of_mass
from tensegrity_ros_common import diagnostics as diag
from tensegrity_ros_common import topics
from tensegrity_ros_common.conversions import positions_to_pose_array

OFFSET = np.array([1.0, 0.5, 0.0])       # m: where a second robot of the same model lies (beside the first)


def feed(ros, node, frames, period=0.02):
    """Publish node_positions from ``node`` every ``period`` [s]: ``frames()`` gives (positions (k,3) [m],
    frame_id) or None (nothing now)."""
    pub = node.create_publisher(type(positions_to_pose_array(np.zeros((1, 3)), Header())), topics.NODE_POSITIONS,
                                topics.sensor_qos())

    def send():
        got = frames()
        if got is not None:
            pub.publish(positions_to_pose_array(got[0], Header(stamp=node.get_clock().now().to_msg(), frame_id=got[1])))
    node.create_timer(period, send)


def rolling(ros, superball):
    """(controller, probe, the robot's positions) with cmd_vel 0° re-sent at 5 Hz, commands flowing."""
    ctl = ros.node(LocomotionController, "-p", f"model:={superball}", "-p", "diagnostic_rate:=10.0")
    probe = Probe(ros)
    probe.stop = False
    model = load_model(str(superball))
    X = model.positions[:model.n_physical].copy()
    probe.node.create_timer(0.2, lambda: probe.send("cmd_vel", Twist(linear=Vector3(x=0.05, y=0.0, z=0.0))))
    return ctl, probe, X


def commands_stop(ros, probe, seconds=1.5):
    """The number of commands sent in ``seconds`` [s] after the first 0.3 s (an update under way may end)."""
    ros.spin_for(0.3)
    n = len(probe.commands)
    ros.spin_for(seconds)
    return len(probe.commands) - n


@pytest.fixture(scope="module")
def threebar(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "threebar.yaml"
    assert tensegrity(["new", "threebar", "-o", str(path)]) == 0
    model = load_model(str(path))
    return model.positions[:model.n_physical].copy()


@pytest.mark.parametrize("other", ["another model", "same model"])
def test_a_second_robot_publishing_node_positions_holds_the_controller(ros, superball, threebar, other):
    """A second publisher on node_positions (another robot's simulator without a namespace: the three-bar's 6
    nodes, or the same six-bar 1.1 m away): ERROR naming the two publishers, no command while it publishes,
    and the controller goes on once it has been silent for WINDOW."""
    ctl, probe, X = rolling(ros, superball)
    feed(ros, probe.node, lambda: (X, "world"))
    ros.spin_until(lambda: len(probe.commands) > 10, 20, "commands from the robot's own positions")
    second = [True]
    theirs = threebar if other == "another model" else X + OFFSET
    feed(ros, ros.plain("other_robot"), lambda: (theirs, "world") if second[0] else None)
    assert commands_stop(ros, probe) == 0, "commands went on while a second robot published node_positions"
    st = probe.last_status()
    assert diag.level_of(st) == diag.ERROR and "2 publishers" in st.message, st.message
    assert ctl.controller.status["state"] not in ("arrived", "stopped")
    second[0] = False
    ros.spin_until(lambda: diag.level_of(probe.last_status()) != diag.ERROR, 3 + WINDOW, "the hold released")
    n = len(probe.commands)
    ros.spin_until(lambda: len(probe.commands) > n + 10, 10, "commands again")


@pytest.mark.parametrize("stray, words", [
    ("elsewhere", "jumped"),                   # a relay mixing two robots of the same model (one publisher)
    ("scaled", "measures"),                    # another model with the same node count (10 % larger)
    ("stray marker", "measures"),              # one node replaced by a stray marker 0.3 m off
    ("frame", "frame 'map'"),                  # the right robot in the wrong frame
    ("inf", "infinite"),
], ids=["jump", "scaled", "stray-marker", "frame", "inf"])
def test_stray_node_positions_from_the_robots_own_publisher_are_rejected_and_hold(ros, superball, stray, words):
    """Every other message from the robot's own publisher is bad: each is rejected with the reason, the
    controller reports ERROR ('holding') and sends nothing while they come, and goes on after WINDOW of good
    ones."""
    ctl, probe, X = rolling(ros, superball)
    bad = {"elsewhere": (X + OFFSET, "world"), "scaled": (1.1 * X, "world"), "frame": (X, "map"),
           "stray marker": (X + np.where(np.arange(len(X))[:, None] == 3, 0.3, 0.0), "world"),
           "inf": (np.where(np.arange(len(X))[:, None] == 2, np.inf, X), "world")}[stray]
    tick, mixing = [0], [False]

    def frames():
        tick[0] += 1
        return bad if mixing[0] and tick[0] % 2 else (X, "world")
    feed(ros, probe.node, frames)
    ros.spin_until(lambda: len(probe.commands) > 10, 20, "commands from the robot's own positions")
    mixing[0] = True
    assert commands_stop(ros, probe) == 0, "commands went on while stray node_positions came"
    assert words in ctl.last_rejection, ctl.last_rejection
    st = probe.last_status()
    assert diag.level_of(st) == diag.ERROR and "holding" in st.message, st.message
    mixing[0] = False
    ros.spin_until(lambda: diag.level_of(probe.last_status()) != diag.ERROR, 3 + WINDOW, "the hold released")
    n = len(probe.commands)
    ros.spin_until(lambda: len(probe.commands) > n + 10, 10, "commands again")


def test_positions_that_jump_to_the_goal_are_no_arrival(ros, superball):
    """The robot rests at the origin; then only positions 2.2 m away at the goal come (another robot's data,
    or the robot carried there), and a goal there is sent: never 'arrived'. After WINDOW of such data they are
    taken as the robot's place and the goal is dropped with a warning saying why (send it again)."""
    ctl = ros.node(LocomotionController, "-p", f"model:={superball}", "-p", "diagnostic_rate:=10.0")
    probe = Probe(ros)
    probe.stop = False
    model = load_model(str(superball))
    X = model.positions[:model.n_physical].copy()
    shift = np.array([2.0, 1.0, 0.0])                          # m: from where the robot lies to the goal
    goal = centre_of_mass(model, model.from_physical(X)) + shift
    rng = np.random.default_rng(3)
    where = [X]
    feed(ros, probe.node, lambda: (where[0] + rng.normal(0.0, 1e-4, X.shape), "world"))   # 0.1 mm noise
    ros.spin_until(lambda: len(probe.commands) > 10, 20, "commands at rest")
    where[0] = X + shift
    probe.send("goal_pose", pose_stamped(*goal))
    states = []
    probe.node.create_timer(0.02, lambda: states.append(ctl.controller.status["state"]))
    ros.spin_for(2 * WINDOW + 1.0)
    # s: the drop reaches the gait after the plan under way (for the goal, from the old place: seconds on a
    # loaded machine)
    ros.spin_until(lambda: ctl.controller.goal is None, 30, "the goal dropped")
    assert "arrived" not in states, "arrived on positions that jumped to the goal"
    assert "jumped" in ctl.last_rejection
    st = probe.last_status()
    assert diag.level_of(st) == diag.WARN and "new place" in st.message, st.message


def test_a_goal_in_another_frame_is_rejected_with_the_reason(ros, superball):
    """goal_pose in 'map' (neither the fixed frame 'world' nor the odometry frame 'odom'): rejected, the reason
    names the frames to use, no goal reaches the gait. (cmd_vel is a Twist: no frame; read in odom.)"""
    ctl = ros.node(LocomotionController, "-p", f"model:={superball}")
    probe = Probe(ros)
    probe.stop = False
    probe.send("goal_pose", pose_stamped(1.0, 0.0, 0.0, frame="map"))
    ros.spin_until(lambda: ctl.rejected == 1, 5, "the goal rejected")
    assert "frame 'map'" in ctl.last_rejection and "'world' or 'odom'" in ctl.last_rejection
    ros.spin_for(0.2)
    assert not ctl.commanded and ctl.controller.goal is None
