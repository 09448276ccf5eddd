"""The driver node under test (real rclpy, DDS and dynamixel-sdk) with a probe node that records what it
publishes and plays the collision monitor: ``monitor`` is the safety_stop value it heartbeats at 20 Hz
(latched, as the monitor does), None = silent (no monitor). Import the fixtures explicitly:

    from driver_harness import harness, emulator  # noqa: F401
"""
import os
import time

import pytest
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
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


class Harness:
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
        raise AssertionError(f"timed out waiting for {what}")

    def ready(self):
        """Active with a fresh all-clear, joint states coming and the command publishers matched to the
        driver's subscriptions (DDS discovery of each direction finishes separately; a command published
        before it is lost, which a loaded machine made happen)."""
        return (self.node.driver.state == "active" and self.node.gate.clear() and len(self.joints) > 5
                and self.cmd.get_subscription_count() > 0 and self.disp.get_subscription_count() > 0)

    def bus_status(self):
        return [s for s in self.diag if s.name.endswith(": bus")][-1]

    def saw(self, level, words, suffix=": bus"):
        """A diagnostics status of the bus (or ``suffix``) at ``level`` whose message contains ``words``."""
        return any(s.name.endswith(suffix) and diag.level_of(s) == level and words in s.message for s in self.diag)

    def torques(self):
        """The emulated servos' torque, as the emulator reports it."""
        return list(self.emulator.torques().values())

    def values(self, st):
        return {kv.key: kv.value for kv in st.values}

    def angle(self, j):
        js = self.joints[-1]
        return dict(zip(js.name, js.position))[j]

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


