"""Two real collision monitors (separate processes) on one topic, neither namespaced, and the Dynamixel
driver on emulated servos (issue 33 #1): monitor A latches a stop, B heartbeats an all-clear, so the driver
holds. A then dies (SIGKILL) or hangs (SIGSTOP) holding its stop: B's all-clear must not release it, also
long after A is forgotten as a publisher; only the operator's ~/clear_lost_stop on the driver does."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from geometry_msgs.msg import PoseArray
from std_msgs.msg import Bool, Header
from std_srvs.srv import Trigger

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tensegrity_dynamixel", "test"))
from driver_harness import harness  # noqa: E402,F401  (fixture)
from emulator_fixtures import emulator  # noqa: E402,F401  (fixture)
from tensegrity_engine import load_model  # noqa: E402
from tensegrity_ros_common import diagnostics as diag  # noqa: E402
from tensegrity_ros_common import topics  # noqa: E402
from tensegrity_ros_common.conversions import positions_to_pose_array  # noqa: E402
from tensegrity_ros_common.safety_gate import CLEAR_LOST_STOP, SOURCE_WINDOW  # noqa: E402

MODEL = load_model("stacked_manipulator")
REST = MODEL.positions[:MODEL.n_physical].copy()


def monitor(domain: int, name: str, stale_timeout: float) -> subprocess.Popen:
    """A collision monitor process named ``name`` on ``<name>/node_positions``, publishing /safety_stop."""
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain), PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-m", "tensegrity_monitor.collision_monitor_node", "--ros-args",
                             "-r", f"__node:={name}", "-r", f"node_positions:={name}/node_positions",
                             "-p", "model:=stacked_manipulator", "-p", f"stale_timeout:={stale_timeout}"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def gid_of(node, name: str):
    """The gate's identity (DDS writer GID as bytes) of node ``name``'s safety_stop publisher."""
    found = [bytes(i.endpoint_gid) for i in node.get_publishers_info_by_topic(topics.SAFETY_STOP)
             if i.node_name == name]
    return found[0] if found else None


def presents(emulator):
    return np.array([emulator.servo(i).present for i in emulator.ids])


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGSTOP])
def test_a_lost_monitors_stop_is_not_released_by_another_monitor(harness, emulator, how):  # noqa: F811
    h = harness("experiment.enabled:=true", monitor=None)          # no fake monitor: the two real ones
    feed = {name: h.probe.create_publisher(PoseArray, f"{name}/node_positions", 10) for name in ("mon_a", "mon_b")}
    fed = {"mon_a", "mon_b"}
    h.probe.create_timer(0.02, lambda: [feed[n].publish(positions_to_pose_array(REST, Header(frame_id="world")))
                                        for n in fed])
    stops = []
    h.probe.create_subscription(Bool, topics.SAFETY_STOP, lambda m: m.data and stops.append(m), topics.latched_qos())
    # A stops on 0.5 s without input (the test's trigger); B tolerates 5 s (a starved test feed must not stop B)
    procs = [monitor(h.domain, "mon_a", 0.5), monitor(h.domain, "mon_b", 5.0)]
    try:
        h.until(lambda: h.node.gate.publishers() == 2 and not any(s for _, s in h.node.gate.sources.values()),
                120, "both monitors clear")                        # (past both monitors' start-up stops)
        a_gid = gid_of(h.probe, "mon_a")
        assert a_gid in h.node.gate.sources, "A's publisher is one of the gate's two sources"
        stops.clear()
        fed.discard("mon_a")                                       # A's input stops: it latches a stop (stale)
        h.until(lambda: stops, 10, "A's stop (stale input)")
        h.until(lambda: h.node.gate.sources.get(a_gid, (0, False))[1], 5, "A's own stop at the driver")
        h.spin(0.2)                                                # beside B's all-clear
        assert h.node.driver.holding and "2 publishers" in h.node.gate.reason()
        os.kill(procs[0].pid, how)
        start = presents(emulator)
        moved = []
        end = time.monotonic() + SOURCE_WINDOW + 2.0               # A forgotten as a publisher after 1 s
        while time.monotonic() < end:
            h.spin(0.05)
            moved.append(not h.node.driver.holding)
        assert not any(moved) and np.array_equal(presents(emulator), start), "B's all-clear released A's stop"
        assert h.node.gate.publishers() == 1 and "lost stop" in h.node.gate.reason()
        h.until(lambda: h.saw(diag.ERROR, CLEAR_LOST_STOP.lstrip("~/")), 3, "ERROR naming the service")
        cli = h.probe.create_client(Trigger, f"/dynamixel_driver/{CLEAR_LOST_STOP.lstrip('~/')}")
        h.until(cli.service_is_ready, 5, "the service")
        fut = cli.call_async(Trigger.Request())
        h.until(fut.done, 5, "its answer")
        assert fut.result().success and "cleared 1 lost stop" in fut.result().message
        h.until(lambda: not h.node.driver.holding, 3, "B's all-clear counts after the operator's action")
    finally:
        for p in procs:
            p.send_signal(signal.SIGKILL)
            p.wait()
