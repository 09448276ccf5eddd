"""The collision monitor with real rclpy and DDS: safety stop on contact, latch and clear, stale input,
hostile model descriptions, and the monitor fed by the simulator through the model description."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseArray
from rclpy.serialization import serialize_message
from std_msgs.msg import Bool, Float64, Float64MultiArray, Header, String
from std_srvs.srv import Trigger
from visualization_msgs.msg import Marker, MarkerArray

from ros_harness import ros  # noqa: F401  (fixture)
from tensegrity_engine import load_model
from tensegrity_monitor.collision_monitor_node import CollisionMonitor
from tensegrity_ros_common import diagnostics as diag
from tensegrity_ros_common import topics
from tensegrity_ros_common.conversions import positions_to_pose_array
from tensegrity_ros_common.description import describe
from tensegrity_sim.simulator_node import TensegritySimulator

MODEL = load_model("stacked_manipulator")
REST = MODEL.positions[:MODEL.n_physical].copy()


def contact_positions():
    """n5 (an end of bar b2) moved onto the middle of bar b1: the two bars intersect."""
    X = REST.copy()
    a, b = MODEL.bars[0]
    X[MODEL.node_index("n5")] = 0.5 * (REST[a] + REST[b])
    return X


class Probe:
    def __init__(self, ros):
        self.node = ros.plain("probe")
        self.stop, self.diag, self.markers, self.minc, self.clear = [], [], [], [], []
        self.node.create_subscription(Bool, topics.SAFETY_STOP, lambda m: self.stop.append(m.data),
                                      topics.latched_qos())
        self.node.create_subscription(DiagnosticArray, topics.DIAGNOSTICS,
                                      lambda m: self.diag.extend(s for s in m.status
                                                                 if s.name.endswith("self-collision")), 10)
        self.node.create_subscription(MarkerArray, topics.COLLISION_MARKERS, lambda m: self.markers.append(m), 10)
        self.node.create_subscription(Float64, topics.MIN_CLEARANCE, lambda m: self.minc.append(m.data), 10)
        self.node.create_subscription(Float64MultiArray, topics.CLEARANCES, lambda m: self.clear.append(m.data), 10)
        self.pub = self.node.create_publisher(PoseArray, topics.NODE_POSITIONS, topics.sensor_qos())
        self.desc = self.node.create_publisher(String, topics.MODEL_DESCRIPTION, topics.latched_qos())
        self.X = REST
        self.sending = True
        self.node.create_timer(0.02, self._send)

    def _send(self):
        if self.sending:
            self.pub.publish(positions_to_pose_array(self.X, Header(frame_id="world")))

    def level(self):
        return diag.level_of(self.diag[-1]) if self.diag else None


def test_contact_raises_a_latched_stop_that_clears_only_when_safe(ros):
    ros.node(CollisionMonitor, "-p", "model:=stacked_manipulator", "-p", "stale_timeout:=0.5")
    probe = Probe(ros)
    ros.spin_until(lambda: probe.stop and probe.stop[-1] is False, 10, "stop released after clean input")
    ros.spin_until(lambda: probe.level() == diag.OK, 5, "diagnostics OK")
    ros.spin_until(lambda: probe.minc, 5, "min_clearance")
    assert probe.minc[-1] > 0.01
    probe.X = contact_positions()
    ros.spin_until(lambda: probe.stop[-1] is True, 5, "safety stop on contact")
    ros.spin_until(lambda: probe.level() == diag.ERROR, 5, "diagnostics ERROR")
    assert "contact" in probe.diag[-1].message and "b1" in probe.diag[-1].message
    ros.spin_until(lambda: probe.minc[-1] < 0, 5, "negative minimum clearance")
    ros.spin_until(lambda: probe.markers and any(m.type == Marker.LINE_LIST and len(m.points) >= 2
                                                 for m in probe.markers[-1].markers), 5, "contact markers")
    res = ros.call(probe.node, Trigger, "/collision_monitor/clear_safety_stop", Trigger.Request())
    assert not res.success and "cannot clear" in res.message
    probe.X = REST
    ros.spin_for(0.5)
    assert probe.stop[-1] is True                          # latched although the contact is gone
    assert probe.level() == diag.ERROR and "latched" in probe.diag[-1].message
    res = ros.call(probe.node, Trigger, "/collision_monitor/clear_safety_stop", Trigger.Request())
    assert res.success
    ros.spin_until(lambda: probe.stop[-1] is False, 5, "stop cleared")
    ros.spin_until(lambda: probe.level() == diag.OK, 5, "diagnostics OK again")
    ros.spin_until(lambda: any(m.action == Marker.DELETEALL for m in probe.markers[-1].markers), 5,
                   "contact markers removed")


def test_stale_input_is_an_error_and_stops(ros):
    ros.node(CollisionMonitor, "-p", "model:=stacked_manipulator", "-p", "stale_timeout:=0.3")
    probe = Probe(ros)
    ros.spin_until(lambda: probe.stop and probe.stop[-1] is False, 10, "stop released")
    probe.sending = False
    t0 = time.monotonic()
    ros.spin_until(lambda: probe.stop[-1] is True, 5, "stop on stale input")
    # not before the timeout; the check runs at heartbeat_rate (50 Hz), so the stop comes 0.3-0.32 s after the
    # last message on an idle machine (the upper bound here only catches a check on the 2 Hz diagnostics timer
    # again, with room for a loaded machine delaying this test's own spin)
    assert 0.25 <= time.monotonic() - t0 < 0.3 + 0.45
    ros.spin_until(lambda: probe.level() == diag.ERROR and "stale" in probe.diag[-1].message, 5, "stale ERROR")


def test_hostile_description_and_wrong_sizes_do_not_crash(ros):
    mon = ros.node(CollisionMonitor)
    probe = Probe(ros)
    probe.desc.publish(String(data="{not json"))
    ros.spin_until(lambda: mon.counts["rejected"] >= 1, 5, "description rejected")
    assert mon.assessor is None
    probe.desc.publish(String(data=describe(MODEL)))
    ros.spin_until(lambda: mon.assessor is not None, 5, "model from a good description")
    ros.spin_until(lambda: probe.stop and probe.stop[-1] is False, 5, "armed by clean input")
    probe.X = REST[:10]                                    # wrong node count: ignored, so input goes stale
    ros.spin_until(lambda: "expected 24" in mon.problem, 5, "size rejected")
    ros.spin_until(lambda: probe.level() == diag.ERROR and "stale" in probe.diag[-1].message, 5, "stale ERROR")
    values = {kv.key: kv.value for kv in probe.diag[-1].values}
    assert int(values["rejected"]) >= 2 and probe.stop[-1] is True
    probe.X = REST
    ros.spin_until(lambda: ros.call(probe.node, Trigger, "/collision_monitor/clear_safety_stop",
                                    Trigger.Request()).success, 5, "stop cleared with good input")
    ros.spin_until(lambda: probe.stop[-1] is False, 5, "running normally again")
    bad = REST.copy()
    bad[2] = np.nan                                        # an unknown node (e.g. occluded marker)
    probe.X = bad
    ros.spin_until(lambda: probe.stop[-1] is True, 5, "stop on an unknown node")
    ros.spin_until(lambda: probe.level() == diag.ERROR and "unknown" in probe.diag[-1].message, 5, "unknown ERROR")


def test_every_node_unknown_never_releases_the_stop(ros):
    """A check of nothing is not clean: the stop stays on, and is republished as the heartbeat."""
    ros.node(CollisionMonitor, "-p", "model:=stacked_manipulator")
    probe = Probe(ros)
    probe.X = np.full_like(REST, np.nan)
    ros.spin_until(lambda: probe.level() == diag.ERROR and "unknown" in probe.diag[-1].message, 5,
                   "ERROR naming the unknown nodes")
    n0 = len(probe.stop)
    ros.spin_for(2.0)
    assert probe.stop and all(s is True for s in probe.stop)
    assert len(probe.stop) - n0 >= 20                  # heartbeat (50 Hz nominal; a loaded machine drops some)
    probe.X = REST.copy()
    probe.X[0] = np.nan                                # 23 of 24 known is not clean either
    ros.spin_for(1.0)
    assert all(s is True for s in probe.stop)
    probe.X = REST
    ros.spin_until(lambda: probe.stop[-1] is False, 5, "released by the first check of every node")


def test_unknown_node_stops_after_its_grace_unless_allowed(ros):
    mon = ros.node(CollisionMonitor, "-p", "model:=stacked_manipulator", "-p", "unknown_timeout:=0.2",
                   "-p", "auto_clear:=true", "-p", "allowed_unknown:=[n24]")
    probe = Probe(ros)
    ros.spin_until(lambda: probe.stop and probe.stop[-1] is False, 10, "armed")
    bad = REST.copy()
    bad[MODEL.node_index("n24")] = np.nan                 # allowed: WARN only
    probe.X = bad
    ros.spin_until(lambda: probe.level() == diag.WARN and "allowed" in probe.diag[-1].message, 5, "WARN")
    assert probe.stop[-1] is False
    bad = bad.copy()
    bad[MODEL.node_index("n7")] = np.nan                  # required: a hazard after 0.2 s
    probe.X = bad
    t0 = time.monotonic()
    ros.spin_until(lambda: probe.stop[-1] is True, 5, "stop on the required node")
    assert time.monotonic() - t0 >= 0.15                  # grace respected (minus one 20 ms send period)
    assert "n7" in mon.latch.reason and "n24" not in mon.latch.reason
    probe.X = REST
    ros.spin_until(lambda: probe.stop[-1] is False, 5, "auto-cleared once every node is back")


def test_a_starved_monitor_defers_the_stale_verdict_by_one_tick(ros):
    """Under load the watchdog can fire after a long pause with fresh positions still queued behind it:
    one late tick must not latch a false 'stale'; an on-time tick (or input older than twice the timeout)
    does. Driven directly, so the test does not depend on making this machine slow."""
    mon = ros.node(CollisionMonitor, "-p", "model:=stacked_manipulator", "-p", "stale_timeout:=0.5")
    probe = Probe(ros)
    ros.spin_until(lambda: probe.stop and probe.stop[-1] is False, 10, "armed")
    probe.sending = False
    now = time.monotonic()
    mon.last_rx = now - 0.6                              # older than the timeout ...
    mon._last_watchdog = now - 0.62                       # ... but the monitor itself was not scheduled
    mon._on_watchdog()
    assert mon.latch.stop is False
    mon.last_rx = time.monotonic() - 0.6
    mon._on_watchdog()                                    # on time now: the input really is stale
    assert mon.latch.stop is True and "stale" in mon.latch.reason
    mon.latch.stop, mon.latch.reason = False, ""
    now = time.monotonic()
    mon.last_rx, mon._last_watchdog = now - 1.2, now - 1.3   # blind for > 2 x timeout: stop at once
    mon._on_watchdog()
    assert mon.latch.stop is True


def test_monitor_follows_the_simulator_through_the_description(ros):
    ros.node(TensegritySimulator, "-p", "experiment.enabled:=true")
    mon = ros.node(CollisionMonitor)
    probe = Probe(ros)
    probe.sending = False
    ros.spin_until(lambda: len(probe.clear) > 50, 20, "clearances from simulated positions")
    assert len(probe.clear[-1]) == len(mon.assessor.elements.pair_i) == 1068
    assert probe.stop[-1] is False and probe.level() in (diag.OK, None)
    # the published minimum is the minimum of the published list (NaN-free: every node is known)
    assert min(probe.clear[-1]) == probe.minc[-1] or abs(min(probe.clear[-1]) - probe.minc[-1]) < 0.01


def test_namespaced_nodes_publish_distinct_diagnostic_names(ros):
    """Several robots on one /diagnostics: each status names its node's namespace."""
    for ns in ("r1", "r2"):
        ros.node(TensegritySimulator, "-r", f"__ns:=/{ns}", "-p", "diagnostic_rate:=5.0")
        ros.node(CollisionMonitor, "-r", f"__ns:=/{ns}", "-p", "model:=stacked_manipulator")
    names = set()
    probe = ros.plain("diag_probe")
    probe.create_subscription(DiagnosticArray, "/diagnostics", lambda m: names.update(s.name for s in m.status), 50)
    want = {"/r1/tensegrity_simulator: physics", "/r2/tensegrity_simulator: physics",
            "/r1/collision_monitor: self-collision", "/r2/collision_monitor: self-collision"}
    ros.spin_until(lambda: want <= names, 20, f"statuses {want} (got {names})")


def test_a_second_model_description_holds_the_stop_and_never_crashes(ros):
    """Issue 21 #3: another robot's simulator (no namespace) publishes its model on our topic. The monitor
    keeps checking its own model, turns the stop on, says why, refuses to clear it, and keeps running;
    invalid descriptions meanwhile are only rejected."""
    mon = ros.node(CollisionMonitor)
    probe = Probe(ros)
    probe.desc.publish(String(data=describe(MODEL)))
    ros.spin_until(lambda: probe.stop and probe.stop[-1] is False and probe.diag, 10, "armed on our model")
    other = ros.plain("other_robot")
    other_desc = other.create_publisher(String, topics.MODEL_DESCRIPTION, topics.latched_qos())
    other_desc.publish(String(data=describe(load_model("prism3"))))
    ros.spin_until(lambda: probe.stop[-1] is True, 5, "stop on the conflicting description")
    ros.spin_until(lambda: probe.level() == diag.ERROR and "second model description" in probe.diag[-1].message
                   and "namespace" in probe.diag[-1].message, 5, "ERROR naming the conflict")
    assert mon.assessor.model.name == MODEL.name                      # still checking its own model
    for bad in ("{not json", describe(MODEL)[:-40], ""):
        other_desc.publish(String(data=bad))
        ros.spin_for(0.2)
    assert not ros.call(probe.node, Trigger, "/collision_monitor/clear_safety_stop", Trigger.Request()).success
    ros.spin_for(1.0)                                                 # diagnostics ticks with the new state
    assert probe.stop[-1] is True and probe.level() == diag.ERROR and mon.counts["checks"] > 10


def test_a_stalled_monitor_latches_the_stop_and_says_it_stalled(ros):
    """Issue 21 #7: SIGSTOP then SIGCONT (or a long CPU starvation) latched the stop, correctly, but its
    reason read only 'node positions stale'. Here the whole process stops running for 1.2 s (nothing is
    spun: the same as SIGSTOP for its timers)."""
    ros.node(CollisionMonitor, "-p", "model:=stacked_manipulator", "-p", "stale_timeout:=0.5")
    probe = Probe(ros)
    ros.spin_until(lambda: probe.stop and probe.stop[-1] is False, 10, "armed")
    time.sleep(1.2)                                      # the process is stopped
    ros.spin_until(lambda: probe.stop[-1] is True, 5, "stop latched after the stall")
    ros.spin_until(lambda: probe.diag and "did not run for" in probe.diag[-1].message, 5,
                   "diagnostics naming the stall")
    assert diag.level_of(probe.diag[-1]) == diag.ERROR
    ros.spin_for(1.0)                                    # fresh positions again: the stop stays latched
    assert probe.stop[-1] is True and "latched" in probe.diag[-1].message


def test_a_huge_node_positions_message_is_rejected_unparsed(ros):
    """40,000 poses (2.2 MB; much larger ones are not delivered on a best-effort topic), sixteen in a row on
    node_positions, sent to the monitor running as its own process: refused by their size before parsing
    (parsed, they stalled the monitor's only thread: heartbeat and diagnostics), while the robot's own
    positions keep it armed. (stale_timeout 5 s: publishing the flood delays this test's own clean positions
    on a loaded machine; parsed, the flood stalled the monitor for more than 10 s.)"""
    env = dict(os.environ, ROS_DOMAIN_ID=str(ros.domain_id), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "tensegrity_monitor.collision_monitor_node", "--ros-args",
                             "-p", "model:=stacked_manipulator", "-p", "diagnostic_rate:=5.0",
                             "-p", "stale_timeout:=5.0"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        probe = Probe(ros)
        ros.spin_until(lambda: probe.stop and probe.stop[-1] is False, 60, "armed by clean input")
        huge = serialize_message(positions_to_pose_array(np.zeros((40_000, 3)), Header(frame_id="world")))
        armed = len(probe.stop)
        for _ in range(16):             # back to back: parsed, they stalled the monitor (old: 10 s without diagnostics)
            probe.pub.publish(huge)
            ros.spin_for(0.05)

        def rejected():
            values = {kv.key: kv.value for kv in probe.diag[-1].values} if probe.diag else {}
            return int(values.get("rejected", 0)) >= 1
        ros.spin_until(rejected, 10, "the huge messages counted as rejected")
        ros.spin_for(1.0)
        assert True not in probe.stop[armed:], "the monitor stopped the robot over a message it should refuse"
    finally:
        proc.send_signal(signal.SIGINT)
        out = proc.communicate(timeout=30)[0]
    assert "bytes serialized" in out and "not parsed" in out, out     # refused by size (before: by count, parsed)
