"""What both controller nodes share: parameters, the rejection of bad input (counted, logged, reported; the
node keeps its last safe state), the ages of their inputs and one diagnostics status."""
from __future__ import annotations

import time

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from std_msgs.msg import Header, String

from tensegrity_engine import load_model
from tensegrity_ros_common import diagnostics as diag
from tensegrity_ros_common import topics
from tensegrity_ros_common.description import model_from_description
from tensegrity_ros_common.params import check, check_rate, declare

COMMON_PARAMETERS = {
    "model": ("", "built-in model name or path to a model YAML file (the simulator's); empty: the model on the "
              "model_description topic"),
    "frame_id": ("world", "fixed frame: goals and measurements must be in it (the simulator's frame_id)"),
    "control_rate": (50.0, "rate of the controller update and its commands [Hz]"),
    "measurement_timeout": (0.2, "age [s] of the last measurement beyond which it is stale"),
    "diagnostic_rate": (2.0, "rate of /diagnostics [Hz]"),
}


class ControllerNode(Node):
    """A node with a model, a control timer and diagnostics; subclasses define ``PARAMETERS``,
    ``_set_model(model)`` (checks it against the parameters, raises ValueError, builds the controller),
    ``_control()`` (called only once a model is set) and ``_status()`` -> (level, message, values)."""

    PARAMETERS: dict = {}

    def __init__(self, name: str, **kwargs):
        super().__init__(name, **kwargs)
        declare(self, self.PARAMETERS)
        self.model = None
        self.frame_id = str(self._p("frame_id"))
        self.rate = check_rate("control_rate", self._p("control_rate"))
        self.measurement_timeout = check("measurement_timeout", self._p("measurement_timeout"), 0.0, 60.0,
                                         low_open=True)
        self.started = time.monotonic()
        self.rejected = 0
        self.last_rejection = ""
        self.measured_at = None                # monotonic time [s] of the last good measurement
        self.pub_diag = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, topics.state_qos())

    def load_model(self):
        """The model of parameter ``model`` now (its errors stop the node), or, when empty, the first valid one
        on the latched ``model_description`` topic (a bad one is rejected and reported)."""
        name = str(self._p("model")).strip()
        if name:
            self._set_model(load_model(name))
        else:
            self.create_subscription(String, topics.MODEL_DESCRIPTION, self._on_description, topics.latched_qos())

    def _on_description(self, msg: String):
        if self.model is not None:
            return
        try:
            self._set_model(model_from_description(msg.data))
        except Exception as exc:               # noqa: BLE001 - input from the network never stops the node
            self.reject("model_description", str(exc))
            return
        self.get_logger().info(f"model '{self.model.name}' from model_description")

    def start_timers(self):
        self.create_timer(1.0 / self.rate, self._tick)
        self.create_timer(1.0 / check_rate("diagnostic_rate", self._p("diagnostic_rate")), self.publish_diagnostics)

    def _p(self, name):
        return self.get_parameter(name).value

    def now(self) -> float:
        """Seconds since the node started (monotonic): the controller's time."""
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

    def _tick(self):
        if self.model is not None:
            self._control()

    def publish_diagnostics(self):
        if self.model is None:
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

    def _control(self):
        raise NotImplementedError

    def _status(self) -> tuple:
        raise NotImplementedError

