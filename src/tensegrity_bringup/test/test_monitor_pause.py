"""The collision monitor paused (SIGSTOP for 0.7 s, then SIGCONT) as a separate process (issue 33 #8): on
resume its heartbeat timer fires before the positions waiting in its queue are checked, and it must not send
an all-clear from the positions it checked before the pause. The robot collides while the monitor is
paused: the first safety_stop it publishes after SIGCONT must be the stop, never an all-clear."""
import os
import signal
import subprocess
import sys
import time

import pytest
from geometry_msgs.msg import PoseArray
from std_msgs.msg import Bool, Header

from ros_harness import ros  # noqa: F401  (fixture)
from tensegrity_engine import load_model
from tensegrity_ros_common import topics
from tensegrity_ros_common.conversions import positions_to_pose_array

MODEL = load_model("stacked_manipulator")
REST = MODEL.positions[:MODEL.n_physical].copy()
PAUSE = 0.7                     # s: the SIGSTOP


def contact_positions():
    """n5 (an end of bar b2) moved onto the middle of bar b1: the two bars intersect."""
    X = REST.copy()
    a, b = MODEL.bars[0]
    X[MODEL.node_index("n5")] = 0.5 * (REST[a] + REST[b])
    return X


def paused_monitor(ros, collide: bool) -> list:
    """Feed a monitor process positions at 100 Hz (as the simulator does, also while it is stopped), pause
    it for PAUSE s; with ``collide`` the positions show a contact from the moment it is stopped. Returns
    the safety_stop values it published after SIGCONT (by the publisher's clock), in order, over 1.5 s."""
    env = dict(os.environ, ROS_DOMAIN_ID=str(ros.domain_id), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "tensegrity_monitor.collision_monitor_node", "--ros-args",
                             "-p", "model:=stacked_manipulator"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        probe = ros.plain("probe")
        stops = []                  # (publisher's wall-clock time [ns], value)
        probe.create_subscription(Bool, topics.SAFETY_STOP,
                                  lambda m, info: stops.append((info["source_timestamp"], m.data)),
                                  topics.latched_qos())
        pub = probe.create_publisher(PoseArray, topics.NODE_POSITIONS, topics.sensor_qos())
        shown = {"X": REST}
        probe.create_timer(0.01, lambda: pub.publish(positions_to_pose_array(shown["X"], Header(frame_id="world"))))
        ros.spin_until(lambda: len(stops) > 20 and stops[-1][1] is False, 120, "the monitor's all-clear heartbeat")
        os.kill(proc.pid, signal.SIGSTOP)
        if collide:
            shown["X"] = contact_positions()
        ros.spin_for(PAUSE)
        resumed = time.time_ns()
        os.kill(proc.pid, signal.SIGCONT)
        ros.spin_for(1.5)
        return [stop for t, stop in stops if t > resumed]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


@pytest.mark.slow
def test_after_a_pause_the_monitor_sends_no_all_clear_before_checking_fresh_positions(ros):
    after = paused_monitor(ros, collide=True)
    assert after and after[0] is True, f"after SIGCONT: {after[:5]} (an all-clear from before the pause first?)"
    assert False not in after                                      # latched: no all-clear at all


@pytest.mark.slow
def test_after_a_pause_with_clean_positions_the_all_clear_returns(ros):
    """The pause (0.7 s > stale_timeout 0.5 s) is the monitor's own, not stale input: no stop latched; the
    heartbeat resumes once positions received after the pause are checked."""
    after = paused_monitor(ros, collide=False)
    assert after and True not in after and len(after) > 30        # 50 Hz over the 1.5 s, less what was left out
