"""What both controller nodes share: parameters, the rejection of bad input (counted, logged, reported; the
node keeps its last safe state), the ages of their inputs, one diagnostics status, and the safety chain: the
collision monitor's ``safety_stop`` through the Dynamixel driver's :class:`SafetyGate`, with every controller
update on a worker thread (:class:`.update_worker.UpdateWorker`) so a long plan never delays the stop. Inputs of
unbounded size (trajectories, paths, node positions, the model description) are size-checked before they are
parsed (:mod:`tensegrity_ros_common.bounded`) and parsed and handled on the node's input thread
(:class:`tensegrity_ros_common.input_thread.InputThread`): their parsing never delays the safety_stop callback,
the timers or the diagnostics, which the single-threaded executor runs."""
from __future__ import annotations

import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from std_msgs.msg import Bool, Header, String
from std_srvs.srv import Trigger

from tensegrity_engine import load_model
from tensegrity_ros_common import diagnostics as diag
from tensegrity_ros_common import topics
from tensegrity_ros_common.bounded import MAX_BYTES, bounded_subscription
from tensegrity_ros_common.conversions import joint_state, stamp_to_seconds
from tensegrity_ros_common.description import model_from_description
from tensegrity_ros_common.input_thread import InputThread
from tensegrity_ros_common.live_params import LiveParameters
from tensegrity_ros_common.params import check, check_rate, declare
from tensegrity_ros_common.safety_gate import CLEAR_LOST_STOP, SafetyGate, answer_clear_lost, receipt

from .messages import measured_nodes
from .update_worker import UpdateWorker

COMMON_PARAMETERS = {
    "model": ("", "built-in model name or path to a model YAML file (the simulator's); empty: the model on the "
              "model_description topic"),
    "frame_id": ("world", "fixed frame: goals and measurements must be in it (the simulator's frame_id)"),
    "control_rate": (50.0, "rate of the controller update and its commands [Hz]"),
    "measurement_timeout": (0.2, "age [s] of the last measurement beyond which it is stale"),
    "diagnostic_rate": (2.0, "rate of /diagnostics [Hz]"),
    "safety.required": (True, "move only while the collision monitor's all-clear is fresh (false: benches only)"),
    "safety.timeout": (0.15, "longest age [s] of the monitor's last all-clear (50 Hz heartbeat) that still allows "
                       "motion"),
}


class ControllerNode(Node):
    """A node with a model, a control timer and diagnostics; subclasses define ``PARAMETERS``,
    ``_set_model(model)`` (checks it against the parameters, raises ValueError, builds the controller),
    ``_status()`` -> (level, message, values) and the safety hooks: ``_ready()`` (an update is due: a goal and
    fresh inputs), ``_compute()`` (the update, on the worker thread: a result or None), ``_send(result)`` (publish
    it), ``_moving()`` (a stop now has something to drop) and ``_drop()`` (called on a stop, lock held: forget
    the goal; returns None or a call on the engine's controller for the worker). Callbacks never touch the
    engine's controller while an update may run: they append calls to ``pending`` (``worker.lock`` held), and
    the worker makes them before its next update."""

    PARAMETERS: dict = {}

    def __init__(self, name: str, **kwargs):
        super().__init__(name, **kwargs)
        declare(self, self.PARAMETERS)
        LiveParameters(self, {})               # every parameter is fixed at start-up (safety.* among them)
        self.inputs = InputThread(self._log_worker_error, "controller-inputs")   # large inputs, off the safety path
        self.model = None
        self.model_problem = ""                # why the last model_description could not be used ('' if none)
        self.frame_id = str(self._p("frame_id"))
        self.rate = check_rate("control_rate", self._p("control_rate"))
        self.measurement_timeout = check("measurement_timeout", self._p("measurement_timeout"), 0.0, 60.0,
                                         low_open=True)
        self.started = time.monotonic()
        self.paused_at = None                  # monotonic time [s] since which no update is being sent
        self.paused_for = 0.0                  # s: total time paused (now() leaves it out)
        self.rejected = 0
        self.last_rejection = ""
        self.measured_at = None                # monotonic time [s] of the last good measurement
        self.pub_diag = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, topics.state_qos())
        self.gate = SafetyGate(check("safety.timeout", self._p("safety.timeout"), 0.0, 60.0, low_open=True),
                               bool(self._p("safety.required")))
        self.held = False                      # a safety stop dropped the goal: waiting for a new one
        self.failure = ""                      # the engine controller's last exception ('' when it works)
        self.pending = []                      # calls on the engine's controller for the next worker job
        self.worker = UpdateWorker(self._log_worker_error)

    def load_model(self):
        """The model of parameter ``model`` now (its errors stop the node), or, when empty, the first valid one
        on the latched ``model_description`` topic (a bad one is rejected and reported)."""
        name = str(self._p("model")).strip()
        if name:
            self._set_model(load_model(name))
        else:
            self.subscribe_bounded(String, topics.MODEL_DESCRIPTION, self._on_description, topics.latched_qos(),
                                   MAX_BYTES["model_description"])

    def subscribe_bounded(self, msg_type, topic: str, callback, qos, max_bytes):
        """A subscription handled on the input thread that rejects (``reject``) a message over ``max_bytes``
        serialized bytes (int or callable) before parsing it."""
        return bounded_subscription(self, msg_type, topic, callback, qos, max_bytes, self.reject, self.inputs)

    def _on_description(self, msg: String):
        if self.model is not None:
            return
        try:
            self._set_model(model_from_description(msg.data))
        except Exception as exc:               # noqa: BLE001 - input from the network never stops the node
            self.reject("model_description", str(exc))
            self.model_problem = f"the model on model_description cannot be used: {exc}"
            return
        self.get_logger().info(f"model '{self.model.name}' from model_description")

    def start_timers(self):
        """The safety_stop subscription and the control and diagnostics timers (after the subclass is built)."""
        self.create_subscription(Bool, topics.SAFETY_STOP, self._on_safety_stop, topics.latched_qos())
        self.create_service(Trigger, CLEAR_LOST_STOP, self._srv_clear_lost)
        if not self.gate.required:
            self.get_logger().warning("safety.required is false: the collision monitor is IGNORED (benches only)")
        self.create_timer(1.0 / self.rate, self._tick)
        self.create_timer(1.0 / check_rate("diagnostic_rate", self._p("diagnostic_rate")), self.publish_diagnostics)

    def _p(self, name):
        return self.get_parameter(name).value

    def now(self) -> float:
        """The controller's time [s]: monotonic seconds since the node started, less the time it sent nothing
        (no fresh all-clear, a stop, stale input, idle): a controller resumes where its last command sent
        left off, so its rate limits hold on the wire (a plate path or gait is delayed by the pause)."""
        return (time.monotonic() if self.paused_at is None else self.paused_at) - self.started - self.paused_for

    def elapsed(self) -> float:
        """Monotonic seconds since the node started (the measurements' time)."""
        return time.monotonic() - self.started

    def header(self) -> Header:
        return Header(stamp=self.get_clock().now().to_msg(), frame_id=self.frame_id)

    def reject(self, what: str, reason: str):
        """Count, log (throttled) and remember a rejected input; nothing else changes."""
        self.rejected += 1
        self.last_rejection = f"{what}: {reason}"
        self.get_logger().warning(f"rejected {what}: {reason}", throttle_duration_sec=1.0)

    def measurement_age(self) -> float | None:
        """Seconds since the last good measurement (None: none yet)."""
        return None if self.measured_at is None else time.monotonic() - self.measured_at

    def measurement_fresh(self) -> bool:
        age = self.measurement_age()
        return age is not None and age <= self.measurement_timeout

    # --- the safety chain and the worker ------------------------------------------------------------
    def _on_safety_stop(self, msg: Bool, info):
        with self.worker.lock:
            self.gate.receive(bool(msg.data), *receipt(info))
            self._check_gate()

    def _srv_clear_lost(self, request, response):
        """The operator releases the stops of monitors that went silent holding one (SafetyGate.clear_lost)."""
        with self.worker.lock:
            return answer_clear_lost(self.gate, response, self.get_logger().warning)

    def stop_on(self) -> bool:
        """True while the monitor's stop is on (it had cleared before; a late heartbeat alone is no stop)."""
        return self.gate.ever_clear and bool(self.gate.last) and not self.gate.clear()

    def refused_by_stop(self, what: str) -> bool:
        """Refuse (and report) a new goal while the stop is on: it would be dropped."""
        if not self.stop_on():
            return False
        self.reject(what, f"safety stop ({self.gate.reason()}); send it again once the stop clears")
        return True

    def _check_gate(self) -> bool:
        """(``worker.lock`` held) True if motion is allowed now. A stop from the monitor while moving drops the
        goal (once, logged, ERROR published at once) and keeps the running update from being sent; without a
        fresh all-clear (a late heartbeat, no monitor yet) the node only holds."""
        if self.gate.clear():
            return True
        if self.stop_on() and not self.held and self._moving():
            self.held = True
            self.worker.count_stop()
            drop = self._drop()
            self.pending = [drop] if drop is not None else []
            self.get_logger().error(f"safety stop ({self.gate.reason()}): goal dropped, holding the last command; "
                                    "send a new goal once the stop clears")
            self.publish_diagnostics()
        return False

    def _tick(self):
        """Start the next update on the worker unless one still runs (its result is sent when it ends)."""
        if self.model is None or self.worker.busy():
            return
        with self.worker.lock:
            go = self._check_gate() and not self.held and self._ready()
            calls, self.pending = self.pending, []
            self._pause(not go)
        if go or calls:
            self.worker.submit(lambda: self._job(calls, go), self._send_if_allowed, self._unsent)

    def _pause(self, pause: bool):
        """(``worker.lock`` held) Stop the controller's clock (``now``) while no update goes out."""
        t = time.monotonic()
        if pause and self.paused_at is None:
            self.paused_at = t
        elif not pause and self.paused_at is not None:
            self.paused_for += t - self.paused_at
            self.paused_at = None

    def _job(self, calls, go):
        for call in calls:
            call()
        return self._compute() if go else None

    def _send_if_allowed(self, result):
        """(``worker.lock`` held) Publish an update unless the gate closed while it was computed (or a stop
        signal is shutting the node down: its publishers are going)."""
        sent = not self.held and self.gate.clear() and self.context.ok() and self._send(result)
        if not sent:
            self._unsent(result)

    def _unsent(self, result):
        """(``worker.lock`` held, on the worker) An update computed but not sent: the controller takes it back
        (subclasses), and its clock stops until updates go out again."""
        self._pause(True)

    def _log_worker_error(self, text: str):
        if self.context.ok():                  # else: the node is shutting down under a running update
            self.get_logger().error(text)

    def destroy_node(self):
        for thread in (getattr(self, "inputs", None), getattr(self, "worker", None)):   # None: not made yet
            if thread is not None:
                thread.close()
        return super().destroy_node()

    def guarded_positions(self, msg, info, frames: tuple):
        """The node positions (n, 3) [m] of a node_positions ``msg`` in one of ``frames`` once ``self.guard`` (a
        MeasurementGuard) accepts them; None when it rejects them (counted, reported)."""
        waited, source = receipt(info)
        self.guard.heard(source)
        try:
            return self.guard.accept(measured_nodes(msg, self.model, frames), waited,
                                     stamp_to_seconds(msg.header.stamp))
        except ValueError as exc:
            self.guard.rejected(str(exc))
            self.reject("node_positions", str(exc))
            return None

    def checked_inputs(self, compute):
        """(rolling controllers) The inputs u (alpha,) [m] ``compute()`` returns, or None when it raises or they are
        not finite (reported by ``controller_failed``; the motors hold the last command)."""
        try:
            u = np.asarray(compute(), float)
            if u.shape != (len(self.model.actuator_names),) or not np.all(np.isfinite(u)):
                raise ValueError(f"controller returned {u.shape} inputs with non-finite values")
        except Exception as exc:                         # noqa: BLE001 - reported; the last command is held
            self.controller_failed(exc)
            return None
        self.failure = ""
        return u

    def publish_inputs(self, u) -> bool:
        """(rolling controllers) Publish u on ``pub_cmd`` unless the positions went stale or doubtful while it was
        computed (``_ready``): then nothing new goes out."""
        if not self._ready():
            return False
        self.u = u
        self.pub_cmd.publish(joint_state(self.header(), self.model.actuator_names, u))
        return True

    def holding(self, guard, waiting: str):
        """(diagnostics level, message) while the node holds the last command (a stop or no fresh all-clear while
        ``_moving``, no or stale measurements, ``guard``'s doubt, a failed update), else None; ``waiting`` says
        what a stop waits for."""
        if self.held or (self._moving() and not self.gate.clear()):
            return diag.ERROR, f"holding: {self.gate.reason() or waiting}"
        age = self.measurement_age()
        if age is None:
            return diag.ERROR, "no node_positions yet (simulator or mocap bridge running?)"
        if age > self.measurement_timeout:
            return diag.ERROR, f"node_positions stale ({age:.2f} s old): holding the last command"
        if guard.hold_reason():
            return diag.ERROR, f"holding the last command: {guard.hold_reason()}"
        if self.failure:
            return diag.ERROR, f"controller failed: {self.failure}; holding the last command"
        return None

    def controller_failed(self, exc: Exception) -> None:
        """Record a failed update (logged once per distinct message); the caller holds the last command."""
        if str(exc) != self.failure:
            self.get_logger().error(f"controller failed: {exc}; holding the last command")
        self.failure = str(exc)

    def publish_diagnostics(self):
        if self.model is None and self.model_problem:
            level, message, values = diag.ERROR, self.model_problem, {}
        elif self.model is None:
            level, message, values = diag.WARN, "waiting for the model on model_description", {}
        else:
            level, message, values = self._status()
        age = self.measurement_age()
        values = dict(values, rejected_inputs=self.rejected, last_rejection=self.last_rejection or "-",
                      measurement_age_s=float("nan") if age is None else age)
        name = self.model.name if self.model is not None else "-"
        st = diag.status(f"{self.get_fully_qualified_name()}: controller", name, level, message, values)
        self.pub_diag.publish(diag.array(self.header(), [st]))

    def _set_model(self, model):
        raise NotImplementedError

    def _ready(self) -> bool:
        raise NotImplementedError

    def _compute(self):
        raise NotImplementedError

    def _send(self, result) -> bool:
        """Publish ``result``; False if it was not (then ``_unsent`` takes it back)."""
        raise NotImplementedError

    def _moving(self) -> bool:
        raise NotImplementedError

    def _drop(self):
        raise NotImplementedError

    def _status(self) -> tuple:
        raise NotImplementedError

