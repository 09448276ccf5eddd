"""The driver node under test (real rclpy, DDS and dynamixel-sdk) with a probe node that records what it
publishes and plays the collision monitor: ``monitor`` is the safety_stop value it heartbeats at 20 Hz
(latched, as the monitor does), None = silent (no monitor). Import the fixtures explicitly:

    from driver_harness import harness, emulator  # noqa: F401
"""
import os
import signal
import subprocess
import sys
import time

import pytest
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from lifecycle_msgs.srv import ChangeState
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, String

from emulator_fixtures import emulator  # noqa: F401  (fixture)
from tensegrity_dynamixel.driver_node import DynamixelDriver
from tensegrity_ros_common import diagnostics as diag
from tensegrity_ros_common import topics
from tensegrity_ros_common.domains import claim_domain  # noqa: E402

CONFIG = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "config",
                                      "dynamixel_driver.yaml"))
JOINTS = ["m1", "m2", "m3", "m4", "m5", "m6"]


def next_domain() -> int:
    """A ROS domain id for one test, no other process on this host uses."""
    return claim_domain()


class Listener:
    """Spins ``self.ex`` and reads the diagnostics statuses it collected in ``self.diag``."""

    def spin(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.ex.spin_once(timeout_sec=0.005)

    def until(self, pred, timeout, what):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.ex.spin_once(timeout_sec=0.005)
            if pred():
                return
        last = [s.message for s in self.diag if s.name.endswith(": bus")][-3:]
        raise AssertionError(f"timed out waiting for {what}; the last bus reports: {last}")

    def saw(self, level, words, suffix=": bus"):
        """A diagnostics status of the bus (or ``suffix``) at ``level`` whose message contains ``words``."""
        return any(s.name.endswith(suffix) and diag.level_of(s) == level and words in s.message for s in self.diag)

    @staticmethod
    def values(st):
        return {kv.key: kv.value for kv in st.values}


class Harness(Listener):
    def __init__(self, emulator, *params, port=None, monitor=False):
        self.emulator = emulator
        self.domain = next_domain()
        self.ctx = rclpy.Context()
        rclpy.init(args=[], context=self.ctx, domain_id=self.domain)
        self.ex = SingleThreadedExecutor(context=self.ctx)
        args = ["--ros-args", "--params-file", CONFIG, "-p", f"port:={port or emulator.path}",
                "-p", "reconnect_backoff:=[0.05, 0.2]", "-p", "diagnostic_rate:=5.0"]
        for p in params:
            args += ["-p", p]
        self.node = DynamixelDriver(context=self.ctx, cli_args=args)
        self.ex.add_node(self.node)
        self.probe = rclpy.create_node("probe", context=self.ctx)
        self.ex.add_node(self.probe)
        self.joints, self.goals, self.diag, self.mapping = [], [], [], []
        self.probe.create_subscription(JointState, topics.JOINT_STATES, self.joints.append, topics.sensor_qos())
        self.probe.create_subscription(JointState, "motor_goals", self.goals.append, topics.sensor_qos())
        self.probe.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, lambda m: self.diag.extend(m.status), 10)
        self.probe.create_subscription(String, "actuator_mapping", self.mapping.append, topics.latched_qos())
        self.cmd = self.probe.create_publisher(JointState, topics.MOTOR_COMMANDS, topics.command_qos())
        self.disp = self.probe.create_publisher(JointState, topics.DISPLACEMENT_COMMANDS, topics.command_qos())
        self.stop = self.probe.create_publisher(Bool, topics.SAFETY_STOP, topics.latched_qos())
        self.monitor = monitor                 # the fake monitor's safety_stop heartbeat (None: silent)
        self.beats = 0
        self.probe.create_timer(0.05, self._beat)

    def _beat(self):
        if self.monitor is not None:
            self.stop.publish(Bool(data=self.monitor))
            self.beats += 1

    def set_monitor(self, stop):
        """Publish ``stop`` at once (the monitor publishes every change) and heartbeat it from now on."""
        self.monitor = stop
        if stop is not None:
            self.stop.publish(Bool(data=stop))

    def ready(self):
        """Active with a fresh all-clear, joint states coming and the command publishers matched to the
        driver's subscriptions (DDS discovery of each direction finishes separately; a command published
        before it is lost, which a loaded machine made happen)."""
        return (self.node.driver.state == "active" and self.node.gate.clear() and len(self.joints) > 5
                and self.cmd.get_subscription_count() > 0 and self.disp.get_subscription_count() > 0)

    def bus_status(self):
        return [s for s in self.diag if s.name.endswith(": bus")][-1]

    def torques(self):
        """The emulated servos' torque, as the emulator reports it."""
        return list(self.emulator.torques().values())

    def angle(self, j):
        js = self.joints[-1]
        return dict(zip(js.name, js.position))[j]

    def operator_restart(self):
        """The bus is back: torque off on every servo and a latched fault, nothing moves by itself (issue 33
        #3); the operator's deactivate + activate (lifecycle transitions) restarts."""
        self.until(lambda: self.saw(diag.ERROR, "no automatic restart"), 15, "ERROR: no automatic restart")
        self.spin(0.3)
        assert self.node.driver.state == "fault" and not any(self.torques())
        self.node.trigger_deactivate()
        for _ in range(5):                  # an activation can time out on a starved emulator: tried again
            self.node.trigger_activate()
            if self.node.driver.state == "active":
                return
            self.spin(0.2)
        raise AssertionError(f"the operator's activate failed: {self.node.driver.fault_reason}")

    def close(self):
        self.node.close()
        self.node.destroy_node()
        self.probe.destroy_node()
        self.ex.shutdown()
        rclpy.shutdown(context=self.ctx)


@pytest.fixture
def harness(emulator):  # noqa: F811
    made = []

    def make(*params, port=None, monitor=False):
        h = Harness(emulator, *params, port=port, monitor=monitor)
        made.append(h)
        return h
    yield make
    for h in made:
        h.close()




def driver_command(emulator, *params):  # noqa: F811
    """The command line of the driver node as its own process on the emulator's port."""
    args = [a for p in params for a in ("-p", p)]
    return [sys.executable, "-m", "tensegrity_dynamixel.driver_node", "--ros-args", "--params-file", CONFIG,
            "-p", f"port:={emulator.path}", *args]


def start_driver_process(emulator, *params, domain=None):  # noqa: F811
    """The driver node as its own process on the emulator's port, once every servo is torqued; its ROS
    domain is ``p.domain``."""
    domain = claim_domain() if domain is None else domain
    p = subprocess.Popen(driver_command(emulator, *params), env=dict(os.environ, ROS_DOMAIN_ID=str(domain)),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    p.domain = domain
    end = time.monotonic() + 30
    while time.monotonic() < end and not all(emulator.torques().values()) and p.poll() is None:
        time.sleep(0.05)
    if not all(emulator.torques().values()):
        p.kill()
        raise AssertionError(f"driver never activated: {p.communicate()[0]}")
    return p


def stop_process(p, timeout=20) -> str:
    """SIGINT (Ctrl-C) to ``p`` if it still runs; its output (SIGKILL if it does not end in ``timeout`` s)."""
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
    try:
        return p.communicate(timeout=timeout)[0] or ""
    except subprocess.TimeoutExpired:
        p.kill()
        return (p.communicate()[0] or "") + "\n[killed: did not stop]"


class Probe(Listener):
    """The test's side of a driver in another process: the diagnostics it publishes and the operator's
    lifecycle service calls."""

    def __init__(self, domain: int):
        self.ctx = rclpy.Context()
        rclpy.init(args=[], context=self.ctx, domain_id=domain)
        self.node = rclpy.create_node("probe", context=self.ctx)
        self.ex = SingleThreadedExecutor(context=self.ctx)
        self.ex.add_node(self.node)
        self.diag = []
        self.node.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, lambda m: self.diag.extend(m.status),
                                      topics.state_qos())
        self.change_state = self.node.create_client(ChangeState, "/dynamixel_driver/change_state")

    def bus(self):
        return [s for s in self.diag if s.name.endswith(": bus")]

    def transition(self, label: str) -> bool:
        """The operator's ``ros2 lifecycle set /dynamixel_driver <label>``: True if it succeeded."""
        assert self.change_state.wait_for_service(timeout_sec=10.0), "no lifecycle service"
        req = ChangeState.Request()
        req.transition.label = label
        future = self.change_state.call_async(req)
        self.until(future.done, 15, f"lifecycle {label}")
        return future.result().success

    def close(self):
        self.node.destroy_node()
        self.ex.shutdown()
        rclpy.shutdown(context=self.ctx)
