"""dynamixel_driver: lifecycle node driving the robot's Dynamixel servos (Protocol 2.0) in position control.

configure: open the port and ping every motor (model check); activate: torque on, holding the present
positions, control loop at ``loop_rate``; deactivate: torque off; shutdown (also Ctrl-C): torque off and
close the port, from every state (see :mod:`.driver`). ``autostart: true`` configures and activates at
start-up and retries both with exponential backoff (``reconnect_backoff``) until it works or the node
stops (servos powered later); every failure is an ERROR in diagnostics with its reason. A
``port`` that still does not exist ``port_wait`` seconds after start-up (a typo, the adapter not plugged
in) ends the node with exit code 2, naming the serial devices it can see; so does a port another process
holds (the port is opened exclusively; the message names the holder where the OS says).

A lost bus is not recovered by itself: once it is back, torque goes off on every motor (owed since the
loss) and the driver stays in a latched fault, naming any servo power-cycled meanwhile, until the operator
deactivates and activates it (``ros2 lifecycle set``); the experiment ends with the loss. Run as its own
process, the driver keeps its ROS context up through Ctrl-C / SIGTERM (:mod:`.stop_signals`) until the final
diagnostics (torque off, or unknown) are published (see ``LAST_REPORT_BUDGET``).

Safety chain (see :mod:`.safety`): the driver moves only while it holds a fresh all-clear from the
collision monitor (``safety_stop`` False received at most ``safety.timeout`` s ago), checked every control
cycle; otherwise it holds the present positions within one cycle and refuses commands. The experiment
starts on the first fresh all-clear, pauses while the all-clear is missing or the bus is down (resuming
with its clock shifted by the pause) and ends on a stop (True) received after the first all-clear.

Topics (relative): publishes ``joint_states`` (motor angles [rad], rates [rad/s]), ``motor_goals`` (the
goals sent each cycle), latched ``actuator_mapping`` (JSON: spool radius, sign, zero, limits per joint) and
``/diagnostics``; takes ``motor_commands`` (goal angles [rad]) and ``displacement_commands`` (goal u [m])
by joint name, exactly as the simulator does, and ``safety_stop`` (the monitor's heartbeat).
"""
from __future__ import annotations

import tensegrity_ros_common.parent_watch  # noqa: F401,I001 - first: notes the launcher before the slow imports

import glob
import json
import os
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.duration import Duration
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Header, String
from std_srvs.srv import SetBool, Trigger

from tensegrity_engine.dynamics.inputs import PAPER_PHASES, sinusoid
from tensegrity_ros_common import diagnostics as diag
from tensegrity_ros_common import topics
from tensegrity_ros_common.node_main import Finished, StartupFailed
from tensegrity_ros_common.live_params import LiveParameters
from tensegrity_ros_common.params import check, check_rate, declare, warn_unknown_overrides
from tensegrity_ros_common.bounded import MAX_BYTES, bounded_subscription
from tensegrity_ros_common.conversions import joint_positions_by_name, joint_state
from tensegrity_ros_common.safety_gate import CLEAR_LOST_STOP, answer_clear_lost, receipt

from .control_tables import BAUD_RATES, decode_hardware_error, motor_model
from .driver import CommandRejected, ConfigError, Driver, MotorConfig
from .experiment_bounds import experiment_problem
from .stop_signals import take_over
from .safety import PausableSchedule, SafetyGate, hold_bound

PARAMETERS = {
    "port": ("/dev/ttyUSB0", "serial device of the U2D2 / USB2Dynamixel adapter"),
    "baud_rate": (1000000, "bus baud rate [bit/s]"),
    "protocol_version": (2.0, "Dynamixel protocol (only 2.0)"),
    "loop_rate": (100.0, "control cycles per second [Hz] (one sync write + one sync read each)"),
    "diagnostic_rate": (1.0, "rate of /diagnostics [Hz]"),
    "autostart": (True, "configure and activate at start-up"),
    "port_wait": (10.0, "seconds a missing port is waited for at start-up (adapter plugged in late) before the "
                        "node ends with exit code 2"),
    "error_read_every": (10, "cycles between hardware-error status reads"),
    "max_consecutive_errors": (5, "failed cycles in a row before the bus counts as lost"),
    "reconnect_backoff": ([0.5, 5.0], "first and longest wait between reconnection attempts [s] (the first also "
                                       "between tries of a torque off not yet confirmed)"),
    "safety.required": (True, "move only while the collision monitor's all-clear is fresh (false: the monitor "
                               "is ignored, for benches without one; warned about all the time)"),
    "safety.timeout": (0.15, "longest age [s] of the monitor's last all-clear (safety_stop False, heartbeat "
                            "50 Hz) that still allows motion; monitor lost -> held within safety.hold_bound"),
    "joints": (["m1", "m2", "m3", "m4", "m5", "m6"], "joint names in order; each has motors.<name>.* parameters"),
    "experiment.enabled": (False, "run the paper's sinusoids (also via ~/experiment)"),
    "experiment.period": (7.0, "period [s]"),
    "experiment.amplitudes": ([0.0363, 0.0168], "string displacement amplitude per stage of three motors [m]"),
    "experiment.ramp": (1.0, "smooth start [s]"),
}
MOTOR_PARAMETERS = {
    "id": (1, "servo ID"),
    "model": ("L54-50-S290-R", "servo model (checked against the ping at configure)"),
    "spool_radius": (0.02, "spool radius [m]"),
    "sign": (1.0, "+1 or -1: u = sign * spool_radius * angle"),
    "zero_offset": (0.0, "servo angle [rad] at joint angle 0"),
    "min_angle": (-2.5, "lowest joint angle [rad]"),
    "max_angle": (2.5, "highest joint angle [rad]"),
    "profile_velocity": (3.0, "motion speed limit [rad/s] (0: the servo's maximum)"),
    "profile_acceleration": (0.0, "profile acceleration in the servo's units (0: maximum)"),
}
EXPERIMENT = ("experiment.period", "experiment.amplitudes", "experiment.ramp")   # used at the experiment's start
LIVE = ("experiment.enabled", *EXPERIMENT)      # settable at run time; the others (safety.* too) are fixed


# s: the final diagnostics are sent at once (listeners got them within 0.1 s in the tests); the process waits
# at most this long for the acknowledgments, which Fast DDS sends on its heartbeat (seen 2.5 s later): bounded
LAST_REPORT_BUDGET = 0.5


def missing_port(port: str) -> str:
    """Why the serial device ``port`` cannot be the adapter ('' if it exists), naming the devices that do."""
    if os.path.exists(port):
        return ""
    seen = sorted(glob.glob("/dev/ttyUSB*") + glob.glob("/dev/ttyACM*") + glob.glob("/dev/serial/by-id/*"))
    return (f"parameter 'port': {port} does not exist (adapter not plugged in, or a typo?); serial devices "
            f"here: {', '.join(seen) if seen else 'none'}")


class DynamixelDriver(LifecycleNode):
    # a higher scheduling priority when run as a process (node_main.run): the safety deadline must be noticed
    # on time on a loaded machine (safety.hold_bound)
    NICE = -10

    def __init__(self, **kwargs):
        super().__init__("dynamixel_driver", **kwargs)
        declare(self, PARAMETERS, live=LIVE)
        self.live = LiveParameters(self, {
            "experiment.enabled": (self._check_enable, self._enable_experiment),
            **{name: (lambda v, name=name: self._checked_experiment(name, v), lambda v: None) for name in EXPERIMENT}})
        self.joint_names = [str(j) for j in self._p("joints")]
        if not self.joint_names or len(set(self.joint_names)) != len(self.joint_names) or "" in self.joint_names:
            raise ConfigError(f"parameter 'joints' must list distinct, non-empty joint names, got {self.joint_names}")
        for j in self.joint_names:
            declare(self, MOTOR_PARAMETERS, prefix=f"motors.{j}.")
        if float(self._p("protocol_version")) != 2.0:
            raise ConfigError("protocol_version must be 2.0")
        self.motors = [self._motor(j) for j in self.joint_names]
        self.period = 1.0 / check("loop_rate", self._p("loop_rate"), 0.0, 2000.0, low_open=True)
        diagnostic_rate = check_rate("diagnostic_rate", self._p("diagnostic_rate"))
        backoff = [float(v) for v in self._p("reconnect_backoff")]
        if len(backoff) != 2 or not (0 < backoff[0] <= backoff[1] <= 3600):
            raise ConfigError(f"parameter 'reconnect_backoff' must be [first, longest] wait in seconds with "
                              f"0 < first <= longest <= 3600, got {backoff}")
        if int(self._p("baud_rate")) not in BAUD_RATES:
            raise ConfigError(f"parameter 'baud_rate' {self._p('baud_rate')} is not a Dynamixel baud rate; use one "
                              f"of {', '.join(str(b) for b in BAUD_RATES)}")
        for name in ("error_read_every", "max_consecutive_errors"):
            if not 1 <= int(self._p(name)) <= 100000:
                raise ConfigError(f"parameter '{name}' must be an integer >= 1, got {self._p(name)}")
        try:
            timeout = check("safety.timeout", self._p("safety.timeout"), 0.0, 60.0, low_open=True)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        self._check_experiment(self._p("experiment.period"), self._p("experiment.amplitudes"),
                               self._p("experiment.ramp"))
        self.port_wait = check("port_wait", self._p("port_wait"), 0.0, 3600.0)
        self.driver = Driver(self.motors, str(self._p("port")), int(self._p("baud_rate")),
                             int(self._p("error_read_every")), int(self._p("max_consecutive_errors")),
                             (backoff[0], backoff[-1]), log=self.get_logger().warning,
                             log_error=self.get_logger().error)
        self.gate = SafetyGate(timeout, bool(self._p("safety.required")))
        self.rejected = 0
        self.last_rejection = ""
        self.experiment = None                  # PausableSchedule while the experiment runs or is paused
        self._experiment_pending = False        # enabled, waits for a fresh all-clear
        self._clear = None                      # the gate at the last check (for logging its changes)
        self._seen_errors = 0                   # communication errors already reported
        self._intervals = []
        self._last_cycle = None
        self._cycle_times = []
        self._loop_timer = None

        self.pub_joints = self.create_publisher(JointState, topics.JOINT_STATES, topics.sensor_qos())
        # reliable: the simulator follows these goals as its motor_commands in the digital twin
        self.pub_goals = self.create_publisher(JointState, "motor_goals", topics.command_qos())
        self.pub_mapping = self.create_publisher(String, "actuator_mapping", topics.latched_qos())
        self.pub_diag = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, topics.state_qos())
        cq = topics.command_qos()
        for topic, on_command in ((topics.MOTOR_COMMANDS, self._on_motor_command),
                                  (topics.DISPLACEMENT_COMMANDS, self._on_displacement_command)):
            bounded_subscription(self, JointState, topic, on_command, cq, MAX_BYTES["commands"], self._reject)
        self.create_subscription(Bool, topics.SAFETY_STOP, self._on_safety_stop, topics.latched_qos())
        self.create_service(SetBool, "~/experiment", self._srv_experiment)
        self.create_service(Trigger, CLEAR_LOST_STOP, self._srv_clear_lost)
        self.create_timer(1.0 / diagnostic_rate, self._publish_diagnostics)
        self.create_timer(self.driver.backoff[0], self._owed_torque_off)
        self.pub_mapping.publish(String(data=json.dumps(self.driver.mapping())))
        if not self.gate.required:
            self.get_logger().warning("safety.required is false: the collision monitor is IGNORED and the robot "
                                      "moves without a safety chain (benches without a monitor only)")
        self._start_wait = backoff[0]
        self._start_at = 0.0
        self._started = time.monotonic()
        self._autostart = self.create_timer(0.01, self._autostart_step) if self._p("autostart") else None
        self._takeover = self.create_timer(0.0, self._take_over_stop_signals)
        warn_unknown_overrides(self)          # motors.<joint>.* of the configured joints are declared

    def _p(self, name):
        return self.get_parameter(name).value

    def _motor(self, j):
        g = lambda k: self._p(f"motors.{j}.{k}")  # noqa: E731
        try:
            model = motor_model(str(g("model")))
        except KeyError as exc:
            raise ConfigError(f"motor {j}: {exc.args[0]}") from None
        return MotorConfig(j, int(g("id")), model, float(g("spool_radius")), float(g("sign")),
                           float(g("zero_offset")), float(g("min_angle")), float(g("max_angle")),
                           float(g("profile_velocity")), float(g("profile_acceleration")))

    def _take_over_stop_signals(self):
        """First tick: in its own process (node_main.run sets ``standalone``), a stop signal ends the spin
        with the context up, so close() can still publish the final diagnostics (see :mod:`.stop_signals`)."""
        self._takeover.cancel()
        self.destroy_timer(self._takeover)
        if getattr(self, "standalone", False):
            take_over(self, self._stop_signal)

    @staticmethod
    def _stop_signal():
        raise Finished("stop signal")

    def _autostart_step(self):
        """Configure, then activate; after a failure wait (exponential backoff) and try again, until active.
        A port still missing ``port_wait`` s after start-up ends the node (StartupFailed: exit code 2)."""
        if time.monotonic() < self._start_at:
            return
        if time.monotonic() - self._started > self.port_wait:      # (the device list only when it is needed)
            missing = missing_port(self.driver.bus.port_name)
            if missing:
                raise StartupFailed(f"{missing} (waited {self.port_wait:g} s)")
        label = self._state_machine.current_state[1]
        if label == "unconfigured":
            ok = self.trigger_configure() == TransitionCallbackReturn.SUCCESS
        elif label == "inactive":
            ok = self.trigger_activate() == TransitionCallbackReturn.SUCCESS
            if not ok:
                self.trigger_cleanup()        # reopen and re-check the servos on the next try
        else:                                 # active (done), or finalized / in a transition by someone else
            self._autostart.cancel()
            self.destroy_timer(self._autostart)
            self._autostart = None
            return
        if ok:
            self._start_wait = self.driver.backoff[0]
            return
        if self.driver.port_held_by:          # another driver has it: refuse to start (never retried)
            raise StartupFailed(f"{self.driver.fault_reason}")
        self.get_logger().warning(f"start-up: next try in {self._start_wait:.2g} s")
        self.driver.fault_reason += f"; start-up retry in {self._start_wait:.2g} s"
        self._start_at = time.monotonic() + self._start_wait
        self._start_wait = min(2.0 * self._start_wait, self.driver.backoff[1])

    # --- lifecycle -----------------------------------------------------------------------------------
    def on_configure(self, state):
        try:
            self.driver.configure()
        except ConfigError as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        self.get_logger().info(f"{len(self.motors)} motors found on {self.driver.bus.port_name}: "
                               + ", ".join(f"{m.name}=ID{m.id} {m.model.name}" for m in self.motors))
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state):
        try:
            self.driver.activate()
        except ConfigError as exc:
            self.get_logger().error(str(exc))
            return TransitionCallbackReturn.FAILURE
        self._loop_timer = self.create_timer(self.period, self._cycle)
        self._experiment_pending = bool(self._p("experiment.enabled"))
        if not self._apply_gate() and self._experiment_pending:
            self.get_logger().warning("experiment waits for a fresh all-clear from the collision monitor")
        bound = hold_bound(self.gate.timeout, self.period)
        bound = f"; monitor lost -> held within {bound:.3f} s" if self.gate.required else ""
        self.get_logger().info(f"active: torque on, loop {1.0 / self.period:g} Hz{bound}")
        return super().on_activate(state)

    def on_deactivate(self, state):
        self._stop_loop()
        self.driver.deactivate()
        self.get_logger().info("inactive: torque off" if self.driver.torque is False
                               else "inactive: torque state UNKNOWN")
        return super().on_deactivate(state)

    def on_cleanup(self, state):
        self._stop_loop()
        self.driver.cleanup()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state):
        self.close()
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state):
        self.close()
        return TransitionCallbackReturn.SUCCESS

    def _owed_torque_off(self):
        """Outside the control loop (deactivated while the port was gone): the torque off still owed is
        retried too, as soon as the port is back (in the loop, cycle() does it)."""
        if self._loop_timer is None and self.driver.torque_off_owed:
            self.driver.retry_torque_off()

    def _stop_loop(self):
        if self._loop_timer is not None:
            self._loop_timer.cancel()
            self.destroy_timer(self._loop_timer)
            self._loop_timer = None
        self.experiment = None
        self._experiment_pending = False

    def close(self) -> str:
        """Torque off and close the port (node shutdown, Ctrl-C), from every state; says so if it could not.
        Returns '' when torque is off on every motor (or this driver never turned it on), else the problem
        (the process then exits with 1)."""
        if self._autostart is not None:
            self._autostart.cancel()
        self._stop_loop()
        self.driver.shutdown()
        problem = ""
        if self.driver.torque is False:
            self.get_logger().info("shut down: torque off on every motor")
        elif not self.driver.ever_torqued:
            self.get_logger().warning("shut down: torque state unknown, but this driver never turned it on")
        else:
            problem = f"torque state UNKNOWN ({self.driver.torque_problem or 'not confirmed'})"
            self.get_logger().error(f"shut down: {problem}")
        self._last_report()
        return problem

    def _last_report(self):
        """The final diagnostics; up to LAST_REPORT_BUDGET s for the listeners' acknowledgments."""
        if not self.context.ok():             # shut down by someone else (stop signals not taken over yet)
            self.get_logger().warning("the ROS context is already down: final diagnostics not published")
            return
        try:
            self._publish_diagnostics()
            self.pub_diag.wait_for_all_acked(Duration(seconds=LAST_REPORT_BUDGET))
        except Exception as exc:              # noqa: BLE001 - the log must say it, the shutdown goes on
            self.get_logger().warning(f"final diagnostics: {type(exc).__name__}: {exc}")

    # --- the loop ------------------------------------------------------------------------------------
    def _cycle(self):
        t = time.monotonic()
        computed = Header(stamp=self.get_clock().now().to_msg())     # the goals' time: the bus I/O below may lag
        if self._last_cycle is not None:
            self._intervals.append(t - self._last_cycle)
        self._last_cycle = t
        d = self.driver
        if self._apply_gate() and self.experiment is not None and not self.experiment.paused:
            d.set_goals_clamped([m.u_to_angle(x) for m, x in zip(self.motors, self.experiment(t))])
        d.cycle()
        h = Header(stamp=self.get_clock().now().to_msg())
        if d.state == "active":
            self.pub_joints.publish(joint_state(h, self.joint_names, d.position, d.velocity))
            self.pub_goals.publish(joint_state(computed, self.joint_names, d.goal))
        self._cycle_times.append(time.monotonic() - t)

    def _apply_gate(self) -> bool:
        """The safety chain, run every cycle, on every safety_stop message and before every command: hold
        (goals = present positions) unless the all-clear is fresh; start, pause or resume the experiment.
        Returns whether motion is allowed."""
        d = self.driver
        clear = self.gate.clear()
        if clear != self._clear:
            self._clear = clear
            if clear:
                self.get_logger().info("fresh all-clear from the collision monitor: motion allowed")
            elif self.gate.last is None and not self.gate.ever_clear:     # start-up: the monitor not yet heard
                self.get_logger().warning(f"{self.gate.reason()}: holding position until the first all-clear")
            else:
                self.get_logger().error(f"{self.gate.reason()}: holding position, commands refused")
        if clear == d.holding:
            d.hold(not clear)
        now = time.monotonic()
        moving = clear and d.state == "active"
        if d.state in ("fault", "disconnected") and self.experiment_state != "off":
            self.experiment = None            # no automatic restart: the operator starts it again
            self._experiment_pending = False
            self.get_logger().error(f"experiment ended: driver {d.state} (after deactivate + activate, restart "
                                    "it with ~/experiment)")
        if self.experiment is not None:
            if moving and self.experiment.paused:
                pause = now - self.experiment.paused_at
                self.experiment.resume(now)
                self.get_logger().info(f"experiment resumed after a pause of {pause:.2f} s (its clock shifted by it)")
            elif not moving and not self.experiment.paused:
                self.experiment.pause(now)
                self.get_logger().warning(f"experiment paused, holding: "
                                          f"{self.gate.reason() or 'driver ' + d.state}")
        elif self._experiment_pending and moving:
            self._experiment_pending = False
            try:
                self._start_experiment()
            except ValueError as exc:             # CommandRejected, or the engine's InputError
                self.get_logger().error(f"experiment not started: {exc}")
        return clear

    @property
    def experiment_state(self) -> str:
        """'off', 'waiting' (for a fresh all-clear), 'running' or 'paused'."""
        if self.experiment is not None:
            return "paused" if self.experiment.paused else "running"
        return "waiting" if self._experiment_pending else "off"

    def _check_experiment(self, period, amplitudes, ramp):
        """ConfigError unless the experiment parameters make a schedule for these motors within their travel
        and speed limits (:mod:`.experiment_bounds`)."""
        n, amps = len(self.joint_names), [float(a) for a in amplitudes]
        if n != len(PAPER_PHASES) * len(amps):
            raise ConfigError(f"the experiment needs {len(PAPER_PHASES)} motors per amplitude "
                              f"({n} motors, {len(amps)} amplitudes in 'experiment.amplitudes')")
        try:
            sinusoid(np.repeat(amps, len(PAPER_PHASES)), np.tile(PAPER_PHASES, len(amps)), float(period),
                     ramp=float(ramp))
        except ValueError as exc:
            raise ConfigError(f"experiment parameters: {exc}") from None
        problem = experiment_problem(self.motors, amps, float(period), float(ramp), PAPER_PHASES)
        if problem:
            raise ConfigError(problem)

    def _checked_experiment(self, name: str, value):
        """``value`` of experiment parameter ``name`` if the experiment, with the others as they will be,
        passes the start-up checks (it is used at the experiment's next start); else ConfigError."""
        self._check_experiment(*(value if k == name else self.live.value(k) for k in EXPERIMENT))
        return value

    def _check_enable(self, on) -> bool:
        if on:
            self._checked_experiment("experiment.enabled", on)
        return bool(on)

    def _enable_experiment(self, on: bool):
        """``experiment.enabled`` at run time: as at start-up, the experiment starts on the next fresh
        all-clear while active; false ends it (holding the last goals)."""
        if not on:
            self.experiment = None
            self._experiment_pending = False
        elif self.experiment is None:
            self._experiment_pending = self.driver.state == "active"
            self._apply_gate()

    def _start_experiment(self):
        n = len(self.motors)
        amps = list(self._p("experiment.amplitudes"))
        self._check_experiment(self._p("experiment.period"), amps, self._p("experiment.ramp"))
        offsets = self.driver.u() if np.all(np.isfinite(self.driver.position)) else np.zeros(n)
        now = time.monotonic()
        schedule = sinusoid(np.repeat(amps, len(PAPER_PHASES)), np.tile(PAPER_PHASES, len(amps)),
                            float(self._p("experiment.period")), offsets=offsets,
                            ramp=float(self._p("experiment.ramp")), start=now)
        self.experiment = PausableSchedule(schedule, now)
        self._experiment_pending = False
        self.get_logger().info("experiment on: the paper's phase-shifted sinusoids")

    # --- commands ------------------------------------------------------------------------------------
    def _reject(self, what, reason):
        self.rejected += 1
        self.last_rejection = f"{what}: {reason}"
        self.get_logger().warning(f"rejected {what}: {reason}", throttle_duration_sec=1.0)

    def _on_motor_command(self, msg):
        self._command(msg, "motor command", lambda idx, v: v)

    def _on_displacement_command(self, msg):
        self._command(msg, "displacement command",
                      lambda idx, v: np.array([self.motors[k].u_to_angle(x) for k, x in zip(idx, v)]))

    def _command(self, msg, what, to_angles):
        if self.driver.state != "active":
            self._reject(what, f"driver is {self.driver.state}, not active")
            return
        if not self._apply_gate():
            self._reject(what, self.gate.reason())
            return
        try:
            idx, values = joint_positions_by_name(msg, self.joint_names)
            self.driver.set_goals(idx, to_angles(idx, values))
        except (ValueError, CommandRejected) as exc:
            self._reject(what, str(exc))
            return
        self.experiment = None                # a command takes over from the experiment
        self._experiment_pending = False

    def _on_safety_stop(self, msg: Bool, info):
        """``info``: rclpy's MessageInfo; its ``received_timestamp`` [ns, system clock] says how long the
        message waited in this process's queue (0 if the middleware gives none or the clock stepped back)."""
        stop = bool(msg.data)
        self.gate.receive(stop, *receipt(info))
        if stop and self.gate.ever_clear and self.experiment_state != "off":
            # a real stop (the monitor had cleared before): the experiment is not resumed by itself
            self.experiment = None
            self._experiment_pending = False
            self.get_logger().error("safety stop from the monitor: experiment ended (restart it with ~/experiment)")
        self._apply_gate()

    def _srv_clear_lost(self, request, response):
        answer_clear_lost(self.gate, response, self.get_logger().warning)
        self._apply_gate()
        return response

    def _srv_experiment(self, request, response):
        if not request.data:
            self.experiment = None
            self._experiment_pending = False
            response.success, response.message = True, "experiment off (holding the last goals)"
            return response
        if self.driver.state != "active":
            response.success, response.message = False, f"driver is {self.driver.state}, not active"
            return response
        if not self._apply_gate():
            response.success, response.message = False, self.gate.reason()
            return response
        try:
            self._start_experiment()
        except ValueError as exc:             # CommandRejected, or the engine's InputError
            response.success, response.message = False, str(exc)
            return response
        response.success, response.message = True, "experiment on"
        return response

    # --- diagnostics ---------------------------------------------------------------------------------
    def _publish_diagnostics(self):
        self.pub_diag.publish(self._diagnostics())

    def _diagnostics(self) -> DiagnosticArray:
        d = self.driver
        iv = np.array(self._intervals)
        ct = np.array(self._cycle_times)
        self._intervals, self._cycle_times = [], []
        clear = self.gate.clear()
        values = {"state": d.state, "port": d.bus.port_name, "torque": _torque_text(d.torque),
                  "safety_required": self.gate.required, "all_clear": clear,
                  "hold_bound_s": hold_bound(self.gate.timeout, self.period),
                  "safety_reason": self.gate.reason() or "-", "last_safety_message_age_s": float(self.gate.age()),
                  "holding": d.holding, "experiment": self.experiment_state, "cycles": d.stats.cycles,
                  "failed_cycles": d.stats.failed_cycles, "reconnects": d.stats.reconnects,
                  "rejected_commands": self.rejected, "last_rejection": self.last_rejection or "-",
                  "last_error": d.stats.last_error or "-"}
        values.update({f"errors_{k}": v for k, v in d.stats.errors.items()})
        if len(iv):
            values.update({"loop_rate_hz": 1.0 / float(np.mean(iv)), "jitter_ms": 1e3 * float(np.std(iv)),
                           "max_interval_ms": 1e3 * float(np.max(iv)),
                           "mean_cycle_ms": 1e3 * float(np.mean(ct)) if len(ct) else 0.0})
        problems = [p for p in (d.fault_reason, d.torque_problem) if p]
        recent = d.take_faults()
        if problems:
            level, msg = diag.ERROR, "; ".join(problems)
        elif recent:
            level = diag.ERROR
            msg = f"recovered from {len(recent)} fault(s) since the last report, the last: {recent[-1]}"
        elif not clear:
            level, msg = diag.ERROR, f"{self.gate.reason()}: holding position, commands refused"
        elif d.state != "active":
            level, msg = diag.WARN, f"{d.state}: torque {_torque_text(d.torque)}"
        elif d.stats.errors and self._new_errors():
            level, msg = diag.WARN, f"communication errors: {d.stats.last_error}"
        else:
            level, msg = diag.OK, "active"
        if not self.gate.required:
            level = max(level, diag.WARN)
            msg = f"safety.required is false: the collision monitor is ignored; {msg}"
        name = self.get_fully_qualified_name()
        statuses = [diag.status(f"{name}: bus", d.bus.port_name, level, msg, values)]
        for k, (m, e, pos, t) in enumerate(zip(self.motors, d.hardware_error, d.position, d.torque_on)):
            lvl = diag.ERROR if e or k in d.power_cycled else diag.OK
            text = ", ".join(decode_hardware_error(int(e))) if e else "no hardware error"
            if k in d.power_cycled:
                text = f"servo ID {m.id} power-cycled during the bus drop ({d.power_cycled[k]}); {text}"
            statuses.append(diag.status(f"{name}: {m.name}", f"ID {m.id} {m.model.name}", lvl, text,
                                        {"hardware_error_status": int(e), "position_rad": float(pos),
                                         "torque": _torque_text(t)}))
        return diag.array(Header(stamp=self.get_clock().now().to_msg()), statuses)

    def _new_errors(self) -> bool:
        total = sum(self.driver.stats.errors.values())
        new = total > self._seen_errors
        self._seen_errors = total
        return new


def _torque_text(torque) -> str:
    """True / False / 'unknown' (None: not confirmed, or mixed across motors)."""
    return "unknown" if torque is None else str(bool(torque))


def main(args=None):
    from tensegrity_ros_common.node_main import run
    return run(DynamixelDriver, args)


if __name__ == "__main__":
    raise SystemExit(main())
