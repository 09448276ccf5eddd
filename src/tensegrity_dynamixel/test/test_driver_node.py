"""The driver as a ROS 2 lifecycle node (real rclpy, DDS and dynamixel-sdk) against emulated servos:
the paper's experiment reaches the motors and comes back in JointState, commands and their rejection,
the safety stop, diagnostics of faults, model mismatch at configure, torque off on shutdown."""
import itertools
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from lifecycle_msgs.msg import State
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, String
from std_srvs.srv import SetBool

from emulator_fixtures import emulator  # noqa: F401  (fixture)
from tensegrity_dynamixel.control_tables import motor_model
from tensegrity_dynamixel.driver_node import DynamixelDriver
from tensegrity_engine.inputs import PAPER_PHASES, sinusoid
from tensegrity_ros_common import diagnostics as diag
from tensegrity_ros_common import topics

CONFIG = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "config",
                                      "dynamixel_driver.yaml"))
_ids = itertools.count()
JOINTS = ["m1", "m2", "m3", "m4", "m5", "m6"]


class Harness:
    def __init__(self, port, *params):
        self.domain = 1 + (os.getpid() * 7 + 50 + next(_ids)) % 100
        self.ctx = rclpy.Context()
        rclpy.init(args=[], context=self.ctx, domain_id=self.domain)
        self.ex = SingleThreadedExecutor(context=self.ctx)
        args = ["--ros-args", "--params-file", CONFIG, "-p", f"port:={port}", "-p", "reconnect_backoff:=[0.05, 0.2]"]
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

    def bus_status(self):
        return [s for s in self.diag if s.name.endswith(": bus")][-1]

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
def harness(emulator):
    made = []

    def make(*params, port=None):
        h = Harness(port or emulator.path, *params)
        made.append(h)
        return h
    yield make
    for h in made:
        h.close()


def test_experiment_reaches_the_motors_and_comes_back(harness, emulator):
    h = harness("experiment.enabled:=true")
    h.until(lambda: h.node._state_machine.current_state[1] == "active" and len(h.joints) > 10, 10, "active")
    assert [json.loads(h.mapping[-1].data)[j]["spool_radius"] for j in JOINTS] == [0.02] * 3 + [0.015] * 3
    t0 = h.node.experiment_start
    h.spin(2.5)
    js, goal = h.joints[-1], h.goals[-1]
    assert list(js.name) == JOINTS
    # the goals are the paper's sinusoids through the spool mapping (angle = u / r)
    t = time.monotonic()
    ref = sinusoid(np.repeat([0.0363, 0.0168], 3), np.tile(PAPER_PHASES, 2), 7.0, ramp=1.0, start=t0)
    lag_window = [ref(t - dt)[0] / np.repeat([0.02, 0.015], 3) for dt in np.linspace(0, 0.1, 21)]
    err = np.min([np.max(np.abs(np.array(goal.position) - a)) for a in lag_window])
    assert err < 0.02                             # goal equals the generator within 0.1 s of message latency
    # the emulated motors follow (3 rad/s profile > the 1.6 rad/s peak speed): present within 0.1 rad
    model = {1: motor_model("L54-50-S290-R"), 4: motor_model("M42-10-S260-R")}
    for k in range(6):
        counts = emulator.servo(k + 1).present
        m = model[1] if k < 3 else model[4]
        assert abs(m.counts_to_rad(counts) - js.position[k]) < 0.1
        assert abs(js.position[k] - goal.position[k]) < 0.1
    assert max(abs(p) for p in js.position) > 0.2  # it really moves
    h.until(lambda: any(s.name.endswith(": bus") for s in h.diag), 3, "diagnostics")
    v = h.values(h.bus_status())
    assert float(v["loop_rate_hz"]) > 80           # the paper reads at 80 Hz; configured 100 Hz


def test_commands_nan_limits_and_displacements(harness, emulator):
    h = harness()
    h.until(lambda: len(h.joints) > 5, 10, "joint states")
    h.cmd.publish(JointState(name=["m2"], position=[0.4]))
    h.until(lambda: abs(h.angle("m2") - 0.4) < 1e-3, 5, "m2 at 0.4 rad")
    assert emulator.servo(2).goal == motor_model("L54-50-S290-R").rad_to_counts(0.4)
    for bad in (JointState(name=["m1"], position=[float("nan")]), JointState(name=["m1"], position=[2.7]),
                JointState(name=["m7"], position=[0.0])):
        h.cmd.publish(bad)
    h.until(lambda: h.node.rejected >= 3, 5, "three rejections")
    h.spin(0.2)
    assert abs(h.angle("m1")) < 1e-3 and abs(h.angle("m2") - 0.4) < 1e-3
    h.disp.publish(JointState(name=["m5"], position=[0.006]))             # 6 mm reeled in = 0.4 rad
    h.until(lambda: abs(h.angle("m5") - 0.4) < 1e-3, 5, "displacement goal")


def test_safety_stop_holds_position(harness, emulator):
    h = harness()
    h.until(lambda: len(h.joints) > 5, 10, "joint states")
    h.cmd.publish(JointState(name=["m1"], position=[2.0]))
    h.spin(0.25)
    h.stop.publish(Bool(data=True))
    h.until(lambda: h.node.safety_stop, 5, "safety stop received")
    held = h.node.driver.goal[0]                            # the goal frozen at the last read position
    assert 0.1 < held < 2.0
    h.spin(0.5)
    assert abs(h.angle("m1") - held) < 1e-3                 # held there (not on to 2.0); 1e-3 rad ~ 33 counts
    h.cmd.publish(JointState(name=["m1"], position=[0.0]))
    h.until(lambda: "safety stop" in h.node.last_rejection, 5, "command refused")
    ok = SetBool.Request(data=True)
    cli = h.probe.create_client(SetBool, "/dynamixel_driver/experiment")
    h.until(cli.service_is_ready, 5, "service")
    fut = cli.call_async(ok)
    h.until(fut.done, 5, "reply")
    assert not fut.result().success and "safety stop" in fut.result().message
    h.until(lambda: any(s.name.endswith(": bus") and diag.level_of(s) == diag.WARN and "safety" in s.message
                        for s in h.diag), 3, "WARN diagnostics")


def test_faults_are_reported_and_survived(harness, emulator):
    h = harness()
    h.until(lambda: len(h.joints) > 5, 10, "joint states")
    emulator.corrupt_next(2)                                # CRC corruption: counted, loop goes on
    h.until(lambda: any(s.name.endswith(": bus") and int(h.values(s).get("errors_corrupt", 0)) >= 1
                        for s in h.diag), 5, "corrupt packets in diagnostics")
    emulator.set_no_reply([6])                              # one servo silent for a moment
    h.spin(0.05)
    emulator.set_no_reply([6], enabled=False)
    h.until(lambda: any(s.name.endswith(": bus") and int(h.values(s).get("errors_timeout", 0)) >= 1
                        for s in h.diag), 5, "timeouts in diagnostics")
    h.until(lambda: h.node.driver.state == "active", 5, "active again")
    n = len(h.joints)
    h.until(lambda: len(h.joints) > n + 10, 3, "joint states keep coming")
    emulator.unplug()
    h.until(lambda: any(diag.level_of(s) == diag.ERROR and "bus lost" in s.message for s in h.diag), 5,
            "ERROR: bus lost")
    emulator.replug()
    h.until(lambda: h.node.driver.state == "active" and h.node.driver.stats.reconnects == 1, 5, "reconnected")
    n = len(h.joints)
    h.until(lambda: len(h.joints) > n + 10, 3, "joint states again")
    emulator.set_hardware_error(4, 0x04)                    # overheating on m4
    h.until(lambda: any(s.name.endswith(": m4") and diag.level_of(s) == diag.ERROR and "overheating" in s.message
                        for s in h.diag), 5, "per-motor hardware error")
    assert not any(emulator.servo(i).torque for i in range(1, 7))
    assert h.node.driver.state == "fault"


def test_model_mismatch_fails_configure(harness, emulator):
    h = harness("motors.m3.model:=M42-10-S260-R")
    h.until(lambda: any(diag.level_of(s) == diag.ERROR and "motor m3 (ID 3) is a L54-50-S290-R" in s.message
                        for s in h.diag), 5, "configure failure reported")
    assert h.node._state_machine.current_state[0] == State.PRIMARY_STATE_UNCONFIGURED
    assert not any(emulator.servo(i).torque for i in range(1, 7))


def test_process_sigint_turns_torque_off(emulator):
    env = dict(os.environ, ROS_DOMAIN_ID=str(1 + (os.getpid() * 7 + 90) % 100))
    p = subprocess.Popen([sys.executable, "-m", "tensegrity_dynamixel.driver_node", "--ros-args", "--params-file",
                          CONFIG, "-p", f"port:={emulator.path}"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    try:
        end = time.monotonic() + 30
        while time.monotonic() < end and not all(emulator.servo(i).torque for i in range(1, 7)):
            time.sleep(0.05)
        assert all(emulator.servo(i).torque for i in range(1, 7)), "driver never activated"
    finally:
        p.send_signal(signal.SIGINT)
        code = p.wait(timeout=20)
        out = p.stdout.read()
    assert code == 0, out
    assert not any(emulator.servo(i).torque for i in range(1, 7)), out


def test_experiment_waits_for_the_first_release_of_the_safety_stop(harness, emulator):
    h = harness("experiment.enabled:=true", "autostart:=false")
    h.stop.publish(Bool(data=True))                         # e.g. the monitor has not seen the robot yet
    h.until(lambda: h.node.safety_stop, 5, "stop received")
    h.node.trigger_configure()
    h.node.trigger_activate()
    assert h.node.driver.state == "active" and h.node.experiment_start is None
    h.spin(0.3)
    assert all(abs(a) < 1e-3 for a in h.joints[-1].position)  # nothing moves while stopped
    h.stop.publish(Bool(data=False))
    h.until(lambda: h.node.experiment_start is not None, 5, "experiment started on release")
    h.spin(1.5)
    assert max(abs(a) for a in h.joints[-1].position) > 0.05
    h.stop.publish(Bool(data=True))                         # a real hazard: stopped and not resumed
    h.until(lambda: h.node.experiment_start is None, 5, "experiment stopped")
    h.stop.publish(Bool(data=False))
    h.spin(0.3)
    assert h.node.experiment_start is None


@pytest.mark.parametrize("param, words", [
    ("motors.m1.zero_offset:=.nan", "zero_offset must be a finite number"),
    ("motors.m1.profile_velocity:=-3.0", "profile_velocity must be a finite number >= 0"),
    ("motors.m1.profile_acceleration:=.nan", "profile_acceleration must be a finite number >= 0"),
    ("motors.m1.max_angle:=.nan", "max_angle must be a finite number"),
    ("experiment.period:=0.0", "experiment parameters: sinusoid: period must be > 0"),
    ("experiment.amplitudes:=[0.01]", "3 motors per amplitude"),
    ("reconnect_backoff:=[5.0, 0.5]", "'reconnect_backoff' must be [first, longest]"),
    ("baud_rate:=12345", "not a Dynamixel baud rate"),
    ("error_read_every:=0", "'error_read_every' must be an integer >= 1"),
    ("joints:=[m1, m1, m2, m3, m4, m5]", "distinct, non-empty joint names"),
])
def test_bad_configuration_refuses_to_start(emulator, param, words):
    """Values that would only fail later (activation raising inside rclpy's lifecycle, a servo running at
    full speed for a negative profile velocity) are refused when the node is made, naming the parameter."""
    from tensegrity_dynamixel.driver import ConfigError
    ctx = rclpy.Context()
    rclpy.init(args=[], context=ctx, domain_id=1 + (os.getpid() * 7 + 60 + next(_ids)) % 100)
    try:
        with pytest.raises(ConfigError, match=words.replace("[", r"\[").replace("(", r"\(")):
            DynamixelDriver(context=ctx, cli_args=["--ros-args", "--params-file", CONFIG, "-p", f"port:={emulator.path}",
                                                   "-p", "autostart:=false", "-p", param])
    finally:
        rclpy.shutdown(context=ctx)
    assert not any(emulator.servo(i).torque for i in range(1, 7))


def test_run_time_parameter_changes_are_checked(harness, emulator):
    """A bad experiment period set at run time used to be accepted and crash the node at the next
    ~/experiment call; now it is refused, start-up-only parameters are refused, and the node runs on."""
    from rclpy.parameter import Parameter
    h = harness()
    h.until(lambda: h.node.driver.state == "active", 10, "active")
    bad = h.node.set_parameters([Parameter("experiment.period", value=0.0)])[0]
    assert not bad.successful and "period must be > 0" in bad.reason
    nan_amp = h.node.set_parameters([Parameter("experiment.amplitudes", value=[float("nan"), 0.01])])[0]
    assert not nan_amp.successful
    fixed = h.node.set_parameters([Parameter("loop_rate", value=0.0)])[0]
    assert not fixed.successful and "read at start-up only" in fixed.reason
    ok = h.node.set_parameters([Parameter("experiment.period", value=5.0)])[0]
    assert ok.successful
    client = h.probe.create_client(SetBool, "dynamixel_driver/experiment")
    h.until(client.service_is_ready, 5, "experiment service")
    fut = client.call_async(SetBool.Request(data=True))
    h.until(fut.done, 5, "experiment reply")
    assert fut.result().success and h.node.experiment_start is not None
