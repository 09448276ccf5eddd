"""mode_viewer: one elastic mode shape of a tensegrity model, animated in RViz.

At start the node settles the model to its static equilibrium (as the simulator starts) and computes its
modes once (:func:`tensegrity_engine.statics.mode_shapes.at_equilibrium`). It then publishes, at ``rate``, the
structure oscillating in mode ``mode`` (1 = lowest elastic mode; rigid-body modes are skipped):

    X(t) = X_eq + amplitude sin(2 pi t / period) phi_mode

(phi: the mode's node displacement field, largest node displacement 1). ``period`` is a visual period,
not the mode's own (given in the diagnostics and the log). Topics and styles are the simulator's:
``markers`` (visualization_msgs/MarkerArray, same namespaces and colours: strings by tension at X(t)),
``node_positions`` (geometry_msgs/PoseArray, physical nodes, SensorDataQoS), ``model_description``
(latched) and ``/diagnostics`` (model, mode, frequency). So do not run it next to a simulator in the same
namespace.

``mode``, ``amplitude`` and ``period`` can be changed at run time (``ros2 param set /mode_viewer mode 3``);
the oscillation restarts from the equilibrium. Invalid values are rejected with the reason and the node
keeps showing the current mode; the other parameters are read at start-up only.
"""
from __future__ import annotations

import tensegrity_ros_common.parent_watch  # noqa: F401,I001 - first: notes the launcher before the slow imports

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseArray
from rclpy.node import Node
from std_msgs.msg import Header, String
from visualization_msgs.msg import MarkerArray

from tensegrity_engine import load_model
from tensegrity_engine.statics.balance import static_forces
from tensegrity_engine.statics.mode_shapes import (at_equilibrium, default_amplitude, elastic_indices, mode_shape,
                                           positions, rigid_body_count)
from tensegrity_ros_common import diagnostics as diag
from tensegrity_ros_common import topics
from tensegrity_ros_common.conversions import PoseArrayBuilder
from tensegrity_ros_common.description import describe
from tensegrity_ros_common.live_params import LiveParameters
from tensegrity_ros_common.params import check, check_rate, declare, warn_unknown_overrides

from .markers import MarkerBuilder

PARAMETERS = {
    # name: (default, description)
    "model": ("stacked_manipulator", "built-in model name or path to a model YAML file"),
    "frame_id": ("world", "fixed frame of the published positions and markers"),
    "mode": (1, "elastic mode shown, 1 = lowest (rigid-body modes are skipped)"),
    "amplitude": (0.0, "largest node excursion [m] (0 = 10 % of the shortest bar)"),
    "period": (4.0, "visual period of the shown oscillation [s] (not the mode's own)"),
    "rate": (30.0, "rate of the markers and node positions [Hz]"),
    "diagnostic_rate": (1.0, "rate of /diagnostics [Hz]"),
    "node_marker_radius": (0.015, "radius of the node spheres in RViz [m]"),
    "tension_colour_max": (0.0, "tension drawn fully red [N] (0 = 1.5 x the largest tension seen)"),
}
RUNTIME = ("mode", "amplitude", "period")


class ModeViewer(Node):
    ENGINE_KERNELS = ("dynamics",)         # settle() integrates the dynamics (node_main loads the kernels)

    def __init__(self, **kwargs):
        super().__init__("mode_viewer", **kwargs)
        declare(self, PARAMETERS, live=RUNTIME)
        p = self._p
        self.model = m = load_model(p("model"))
        rate = check_rate("rate", p("rate"))
        diag_rate = check_rate("diagnostic_rate", p("diagnostic_rate"))
        check("node_marker_radius", p("node_marker_radius"), 0.0, 1.0, low_open=True)
        check("tension_colour_max", p("tension_colour_max"), 0.0)
        self.equilibrium, self.lin = at_equilibrium(m)
        self.X_eq = self.lin.positions
        self.elastic = len(elastic_indices(self.lin.frequencies_hz))
        values = {name: self._checked(name, p(name)) for name in RUNTIME}
        self._apply(values)
        self.rejected, self.last_rejection = 0, ""
        self.frame_id = str(p("frame_id"))
        self.markers = MarkerBuilder(m, self.frame_id, float(p("node_marker_radius")), float(p("tension_colour_max")))
        self.pose_array = PoseArrayBuilder()
        self.pub_desc = self.create_publisher(String, topics.MODEL_DESCRIPTION, topics.latched_qos())
        self.pub_nodes = self.create_publisher(PoseArray, topics.NODE_POSITIONS, topics.sensor_qos())
        self.pub_markers = self.create_publisher(MarkerArray, topics.MARKERS, topics.state_qos())
        self.pub_diag = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, topics.state_qos())
        LiveParameters(self, {name: (lambda v, name=name: self._checked(name, v),
                                     lambda v, name=name: self._switch({name: v})) for name in RUNTIME},
                       on_refused=self._refused)
        self.pub_desc.publish(String(data=describe(m, positions=self.X_eq)))
        self.create_timer(1.0 / rate, self._publish)
        self.create_timer(1.0 / diag_rate, self._publish_diagnostics)
        f = self.lin.frequencies_hz[elastic_indices(self.lin.frequencies_hz)]
        self.get_logger().info(
            f"model '{m.name}': {self.elastic} elastic mode(s) ({rigid_body_count(self.lin.frequencies_hz)} "
            f"rigid-body skipped), lowest [Hz]: {', '.join(f'{x:.4g}' for x in f[:6])}; showing mode "
            f"{self.shape.number} ({self.shape.frequency_hz:.4g} Hz) at {rate:g} Hz in frame '{self.frame_id}'")
        warn_unknown_overrides(self)

    def _p(self, name):
        return self.get_parameter(name).value

    # --- run-time parameters -------------------------------------------------------------------------
    def _checked(self, name: str, value):
        """The value of run-time parameter ``name`` if valid, else ValueError with the reason."""
        if name == "mode":
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= self.elastic:
                raise ValueError(f"parameter 'mode' must be an elastic mode number 1..{self.elastic} of model "
                                 f"'{self.model.name}', got {value!r}")
            return int(value)
        if name == "amplitude":
            return check("amplitude", value, 0.0, float(np.min(self.model.bar_length, initial=np.inf)))
        return check("period", value, 0.0, 1e4, low_open=True)

    def _apply(self, values: dict):
        """Switch to the (checked) run-time values; the oscillation restarts from the equilibrium."""
        if "mode" in values:
            self.shape = mode_shape(self.lin, values["mode"])
        if "amplitude" in values:
            self.amplitude = values["amplitude"] if values["amplitude"] > 0 else default_amplitude(self.model)
        if "period" in values:
            self.period = values["period"]
        self.t0 = self.get_clock().now()

    def _switch(self, values: dict):
        self._apply(values)
        self.get_logger().info(f"showing mode {self.shape.number} ({self.shape.frequency_hz:.4g} Hz), "
                               f"amplitude {self.amplitude:.4g} m, period {self.period:g} s")

    def _refused(self, reason: str):
        self.rejected += 1
        self.last_rejection = reason
        self.get_logger().warning(f"rejected parameter change: {reason}")

    # --- publishing ----------------------------------------------------------------------------------
    def _header(self) -> Header:
        return Header(stamp=self.get_clock().now().to_msg(), frame_id=self.frame_id)

    def current_positions(self) -> np.ndarray:
        """All model nodes (n, 3) [m] now."""
        t = (self.get_clock().now() - self.t0).nanoseconds * 1e-9
        return positions(self.X_eq, self.shape, self.amplitude, self.period, t)

    def _publish(self):
        X = self.current_positions()
        _, tensions = static_forces(self.model, X)
        h = self._header()
        self.pub_nodes.publish(self.pose_array(X[:self.model.n_physical], h))
        self.pub_markers.publish(self.markers.build(X, tensions, h))

    def _publish_diagnostics(self):
        s = self.shape
        peak = positions(self.X_eq, s, self.amplitude, 4.0, 1.0)          # full excursion
        values = {"model": self.model.name, "mode": s.number, "frequency_hz": s.frequency_hz,
                  "elastic_modes": self.elastic, "rigid_body_modes": rigid_body_count(self.lin.frequencies_hz),
                  "amplitude_m": self.amplitude, "period_s": self.period,
                  "max_bar_length_error": float(np.max(self.model.bar_length_error(peak), initial=0.0)),
                  "rejected_changes": self.rejected, "last_rejection": self.last_rejection or "-"}
        msg = f"mode {s.number} of {self.elastic}: {s.frequency_hz:.4g} Hz (shown with a {self.period:g} s period)"
        st = diag.status(f"{self.get_fully_qualified_name()}: modes", self.model.name, diag.OK, msg, values)
        self.pub_diag.publish(diag.array(self._header(), [st]))


def main(args=None):
    from tensegrity_ros_common.node_main import run
    return run(ModeViewer, args)


if __name__ == "__main__":
    raise SystemExit(main())
