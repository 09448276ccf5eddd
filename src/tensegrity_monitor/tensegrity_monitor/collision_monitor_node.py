"""collision_monitor: checks all capsule pairs of the robot, and every bar against every obstacle of the
model's world, on every node-positions message.

Takes ``node_positions`` (from the simulator, or the motion-capture bridge by remapping) and the model
(``model`` parameter, or the latched ``model_description`` topic); publishes ``clearances``,
``min_clearance``, ``obstacle_clearances``, ``min_obstacle_clearance``, ``collision_markers``,
``/diagnostics`` and the latched ``safety_stop`` the actuator driver obeys. See safety.py for the latch rules.
"""
from __future__ import annotations

import tensegrity_ros_common.parent_watch  # noqa: F401,I001 - first: notes the launcher before the slow imports

import json
import math
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Point, PoseArray, Vector3
from rclpy.exceptions import ParameterUninitializedException
from rclpy.node import Node
from std_msgs.msg import Bool, ColorRGBA, Float64, Float64MultiArray, Header, String
from std_srvs.srv import Trigger
from visualization_msgs.msg import Marker, MarkerArray

from tensegrity_engine import load_model
from tensegrity_ros_common import diagnostics as diag
from tensegrity_ros_common import topics
from tensegrity_ros_common.bounded import MAX_BYTES, NODES_WITHOUT_MODEL, bounded_subscription, pose_array_bytes
from tensegrity_ros_common.live_params import LiveParameters
from tensegrity_ros_common.params import check, check_rate, declare, warn_unknown_overrides
from tensegrity_ros_common.conversions import pose_array_to_positions
from tensegrity_ros_common.description import DescriptionError, model_from_description
from tensegrity_ros_common.safety_gate import receipt

from .assessment import OBSTACLE_CONTACT_MARGIN, OBSTACLE_WARN_MARGIN, CollisionAssessor
from .safety import SafetyLatch

PARAMETERS = {
    "model": ("", "built-in model name or model file; empty: use the model_description topic"),
    "warn_margin": (0.01, "WARN when a clearance is below this [m]"),
    "contact_margin": (0.0, "ERROR and safety stop when a clearance is below this [m]"),
    "obstacle_warn_margin": (OBSTACLE_WARN_MARGIN, "WARN when a bar's clearance to an obstacle is below this [m] "
                             "(negative: that deep in; a robot resting on the ground sinks ~0.1-1 mm)"),
    "obstacle_contact_margin": (OBSTACLE_CONTACT_MARGIN, "ERROR and safety stop when a bar's clearance to an "
                                "obstacle is below this [m] (0: any touch, for a robot that must not touch)"),
    "stale_timeout": (0.5, "ERROR when no node positions arrived for this long [s]"),
    "heartbeat_rate": (50.0, "safety_stop is republished and stale/unknown input checked at this rate [Hz]"),
    "unknown_timeout": (0.1, "a required node unknown (NaN) for longer than this is a hazard [s]"),
    "allowed_unknown": ([""], "node names that may be unknown (NaN) without a hazard ('' or []: none, every "
                              "node is required)"),
    "stop_on_stale": (True, "stale input also raises the safety stop"),
    "auto_clear": (False, "release the stop by itself once the hazard is gone (else ~/clear_safety_stop)"),
    "diagnostic_rate": (2.0, "rate of /diagnostics [Hz]; level changes are published at once"),
    "publish_clearances": (True, "publish every pair's clearance on 'clearances'"),
    "marker_rate": (10.0, "largest rate of collision_markers [Hz] (0 = off)"),
}

# s: a heartbeat tick this late means the monitor itself did not run (SIGSTOP, a debugger, CPU starvation):
# its next all-clear waits for positions received after that. Less than the drivers' safety.timeout (0.15 s),
# so a driver that held meanwhile is never cleared by positions checked before the pause; more than the
# lateness of a loaded machine's timers (up to ~0.08 s at load 20 on 2 cores), which would otherwise cost
# heartbeats all the time
PAUSE_LATENESS = 0.1

WARN_COLOUR = ColorRGBA(r=1.0, g=0.8, b=0.0, a=1.0)
CONTACT_COLOUR = ColorRGBA(r=1.0, g=0.0, b=0.0, a=1.0)


class CollisionMonitor(Node):
    ENGINE_KERNELS = ("collision",)      # made ready before the node starts (tensegrity_ros_common.node_main)

    def __init__(self, **kwargs):
        super().__init__("collision_monitor", **kwargs)
        declare(self, PARAMETERS)
        LiveParameters(self, {})         # every parameter is fixed at start-up (most are the safety chain's)
        p = lambda k: self.get_parameter(k).value  # noqa: E731
        self.warn_margin = check("warn_margin", p("warn_margin"), -1.0, 1.0)
        self.contact_margin = check("contact_margin", p("contact_margin"), -1.0, self.warn_margin)
        ow = check("obstacle_warn_margin", p("obstacle_warn_margin"), -1.0, 1.0)
        self.obstacle_margins = (ow, check("obstacle_contact_margin", p("obstacle_contact_margin"), -1.0, ow))
        self.stale_timeout = check("stale_timeout", p("stale_timeout"), 0.0, 3600.0, low_open=True)
        diagnostic_rate = check_rate("diagnostic_rate", p("diagnostic_rate"))
        self.publish_all = bool(p("publish_clearances"))
        mr = check_rate("marker_rate", p("marker_rate"), off_ok=True)
        self.marker_period = 1.0 / mr if mr > 0 else math.inf
        self.heartbeat_period = 1.0 / check("heartbeat_rate", p("heartbeat_rate"), 1.0, 1000.0)
        self.unknown_timeout = check("unknown_timeout", p("unknown_timeout"), 0.0, 3600.0)
        self.allowed_unknown = self._allowed_unknown()
        self.latch = SafetyLatch(bool(p("stop_on_stale")), bool(p("auto_clear")))
        self._unknown_since = None       # monotonic time since which required nodes are unknown
        self._last_watchdog = time.monotonic()
        self.assessor = None
        self._description = None
        self.conflict = ""               # a second model on model_description: the stop stays on
        self.stall = ""                  # the last time this monitor itself did not run (until fresh input)
        self.last = None                 # last Assessment
        self.last_rx = None              # monotonic time of the last accepted positions
        self.checked_rx = None           # monotonic time the middleware received the last positions checked
        self.resumed_at = -math.inf      # monotonic time the monitor last found itself paused (a late heartbeat)
        self.frame_id = "world"
        self.counts = {"messages": 0, "rejected": 0, "checks": 0, "before_model": 0}
        self.check_time = 0.0
        self.problem = ""                # last rejected input (WARN until a good message arrives)
        self._last_markers = -math.inf
        self._markers_shown = False
        self._level = None
        self._rate_window = (time.monotonic(), 0)
        self._rate = 0.0

        self.pub_clear = self.create_publisher(Float64MultiArray, topics.CLEARANCES, topics.state_qos())
        self.pub_pairs = self.create_publisher(String, topics.CLEARANCE_PAIRS, topics.latched_qos())
        self.pub_min = self.create_publisher(Float64, topics.MIN_CLEARANCE, topics.state_qos())
        self.pub_obstacle_clear = self.create_publisher(Float64MultiArray, topics.OBSTACLE_CLEARANCES,
                                                        topics.state_qos())
        self.pub_obstacle_pairs = self.create_publisher(String, topics.OBSTACLE_PAIRS, topics.latched_qos())
        self.pub_obstacle_min = self.create_publisher(Float64, topics.MIN_OBSTACLE_CLEARANCE, topics.state_qos())
        self.pub_markers = self.create_publisher(MarkerArray, topics.COLLISION_MARKERS, topics.state_qos())
        self.pub_stop = self.create_publisher(Bool, topics.SAFETY_STOP, topics.latched_qos())
        self.pub_diag = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, topics.state_qos())
        # sizes checked before parsing: a huge message must not stall the heartbeat (a stall reads as a stop)
        bounded_subscription(self, PoseArray, topics.NODE_POSITIONS, self._on_positions, topics.sensor_qos(),
                             self._positions_limit, lambda topic, reason: self._reject(reason))
        model_param = str(p("model"))
        if model_param:
            self._set_model(load_model(model_param))
        else:
            bounded_subscription(self, String, topics.MODEL_DESCRIPTION, self._on_description, topics.latched_qos(),
                                 MAX_BYTES[topics.MODEL_DESCRIPTION], lambda topic, reason: self._reject(reason))
        self.create_service(Trigger, "~/clear_safety_stop", self._srv_clear)
        self.create_timer(1.0 / diagnostic_rate, self._on_timer)
        self.create_timer(self.heartbeat_period, self._on_watchdog)
        self.pub_stop.publish(Bool(data=self.latch.stop))
        self.get_logger().info(
            f"margins: warn {self.warn_margin} m, contact {self.contact_margin} m; stale after "
            f"{self.stale_timeout} s; unknown nodes a hazard after {self.unknown_timeout} s"
            + (f" (allowed unknown: {', '.join(sorted(self.allowed_unknown))})" if self.allowed_unknown else "")
            + f"; heartbeat {1.0 / self.heartbeat_period:g} Hz; model "
            f"{'from ' + model_param if model_param else 'from model_description'}")
        warn_unknown_overrides(self)

    def _allowed_unknown(self) -> frozenset:
        """Node names that may be untracked without stopping (none by default: every node is required).
        An empty list given in a file or with -p leaves the parameter unset in rclpy: that is none, too."""
        try:
            names = self.get_parameter("allowed_unknown").value or []
        except ParameterUninitializedException:
            names = []
        return frozenset(str(n) for n in names if str(n))

    # --- model ---------------------------------------------------------------------------------------
    def _set_model(self, model):
        missing = sorted(self.allowed_unknown - set(model.node_names[:model.n_physical]))
        if missing:
            raise ValueError(f"parameter 'allowed_unknown' names node(s) {missing} that model '{model.name}' "
                             f"does not have")
        self.assessor = CollisionAssessor(model, self.warn_margin, self.contact_margin, *self.obstacle_margins)
        names = model.node_names[:model.n_physical]
        self._allowed_mask = np.array([n in self.allowed_unknown for n in names], bool)
        self.pub_pairs.publish(String(data=json.dumps(self.assessor.pair_names)))
        obstacles = self.assessor.obstacles.names
        if obstacles:
            self.pub_obstacle_pairs.publish(String(data=json.dumps(self.assessor.obstacle_pairs)))
        self.get_logger().info(f"checking {len(self.assessor.elements.pair_i)} pairs of "
                               f"{len(self.assessor.elements.names)} capsules of model '{model.name}'"
                               + (f" and its bars against obstacle(s) {', '.join(obstacles)}" if obstacles else ""))

    def _on_description(self, msg: String):
        if msg.data == self._description:
            return
        try:
            model = model_from_description(msg.data)
        except DescriptionError as exc:
            self._reject(str(exc))
            return
        except Exception as exc:               # noqa: BLE001 - input from the network never stops the monitor
            self._reject(f"model description could not be used ({type(exc).__name__}: {exc})")
            return
        if self.assessor is not None:          # a model is set: another one is a conflict, never a switch
            if not same_robot(self.assessor.model, model):   # (the same robot from another source is not)
                self._conflicting_model(model)
            return
        try:
            self._set_model(model)
        except ValueError as exc:
            self._reject(str(exc))
            return
        self._description = msg.data

    def _conflicting_model(self, model):
        """A valid description that differs from the one being checked (a second robot's simulator on this
        topic, or the simulator restarted with another model): positions can no longer be trusted to be
        this model's, so the stop goes on and stays on until the monitor is restarted."""
        old = self.assessor.model
        self.conflict = (f"a second model description arrived ('{model.name}', {model.n_physical} nodes) while "
                         f"checking '{old.name}' ({old.n_physical} nodes): another robot on this topic? Stop "
                         "held; give each robot its own namespace, or restart the monitor for a new model")
        self.get_logger().error(self.conflict, throttle_duration_sec=1.0)
        self._evaluate()

    # --- positions -----------------------------------------------------------------------------------
    def _positions_limit(self) -> int:
        """The largest node_positions message parsed [bytes]: the model's physical nodes (NODES_WITHOUT_MODEL
        before the model is known; such messages are only counted)."""
        n = self.assessor.model.n_physical if self.assessor is not None else NODES_WITHOUT_MODEL
        return pose_array_bytes(n)

    def _reject(self, reason: str):
        self.counts["rejected"] += 1
        self.problem = reason
        self.get_logger().warning(f"ignored input: {reason}", throttle_duration_sec=1.0)

    def _on_positions(self, msg: PoseArray, info):
        """``info``: rclpy's MessageInfo (when the middleware received the message: see ``checked_rx``)."""
        received = time.monotonic() - receipt(info)[0]
        self.counts["messages"] += 1
        if self.assessor is None:          # normal at start-up: the description may come second
            self.counts["before_model"] += 1
            return
        c0 = time.perf_counter()
        try:
            a = self.assessor.assess(pose_array_to_positions(msg))
        except (ValueError, OverflowError) as exc:
            self._reject(str(exc))
            return
        self.check_time = time.perf_counter() - c0
        self.counts["checks"] += 1
        if self.stall and self.last_rx is not None and time.monotonic() - self.last_rx <= self.stale_timeout:
            self.stall = ""              # running again on fresh input
        self.problem = ""
        self.last = a
        self.last_rx = time.monotonic()
        self.checked_rx = received
        self.frame_id = msg.header.frame_id or self.frame_id
        h = Header(stamp=msg.header.stamp, frame_id=self.frame_id)
        if self.publish_all:
            self.pub_clear.publish(Float64MultiArray(data=a.clearance.tolist()))
        self.pub_min.publish(Float64(data=a.min_clearance))
        if a.obstacles is not None:
            if self.publish_all:
                self.pub_obstacle_clear.publish(Float64MultiArray(data=a.obstacles.clearance.tolist()))
            self.pub_obstacle_min.publish(Float64(data=a.obstacles.min_clearance))
        self._evaluate()
        now = time.monotonic()
        if now - self._last_markers >= self.marker_period:
            self._last_markers = now
            self._publish_markers(a, h)

    def _contact_text(self, a) -> str:
        """The contact hazard: self-collision pairs below contact_margin, then bars deeper in an obstacle
        than obstacle_contact_margin ('' if none)."""
        if a is None:
            return ""
        texts = []
        if len(a.contact_pairs):
            k = a.contact_pairs[int(np.argmin(a.clearance[a.contact_pairs]))]
            n1, n2 = self.assessor.pair_names[k]
            texts.append(f"contact: {len(a.contact_pairs)} pair(s) below {self.contact_margin} m, closest {n1}-{n2} "
                         f"at {a.clearance[k]:.4f} m")
        o = a.obstacles
        if o is not None and len(o.contact_pairs):
            k = o.contact_pairs[int(np.argmin(o.clearance[o.contact_pairs]))]
            texts.append(f"obstacle contact: {len(o.contact_pairs)} bar-obstacle pair(s) below "
                         f"{self.obstacle_margins[1]} m, deepest {self.assessor.obstacle_text(o, k)}")
        return "; ".join(texts)

    def _stale_text(self, now: float) -> str:
        if self.last_rx is None:
            return "no node positions received yet"
        age = now - self.last_rx
        if age <= self.stale_timeout:
            return ""
        cause = f": {self.stall}" if self.stall else ""
        return f"node positions stale for {age:.2f} s (timeout {self.stale_timeout} s){cause}"

    def _unknown_texts(self, now: float) -> tuple:
        """(hazard, incomplete): required nodes unknown past ``unknown_timeout`` / within it."""
        a = self.last
        if a is None or not len(a.unknown_nodes):
            self._unknown_since = None
            return "", ""
        required = a.unknown_nodes[~self._allowed_mask[a.unknown_nodes]]
        if not len(required):
            self._unknown_since = None
            return "", ""
        if self._unknown_since is None:
            self._unknown_since = now
        names = self.assessor.model.node_names
        shown = ", ".join(names[i] for i in required[:6]) + (", ..." if len(required) > 6 else "")
        age = now - self._unknown_since
        text = (f"{len(required)} node(s) unknown ({shown}) for {age:.2f} s: their pairs cannot be checked"
                + ("" if self.latch.armed else " (a check of unknown nodes is never clean)"))
        if age > self.unknown_timeout or not self.latch.armed:
            return text, ""
        return "", text

    def _evaluate(self, stale_ok: bool = True):
        """Feed the latch with the current findings; publish the stop at once when it changes.
        ``stale_ok=False`` defers the stale verdict (the monitor itself was starved: fresh positions may be
        waiting in its queue)."""
        now = time.monotonic()
        stale = self._stale_text(now) if stale_ok or self.last_rx is None else ""
        unknown, incomplete = ("", "") if stale else self._unknown_texts(now)
        contact = "" if stale else self._contact_text(self.last)
        if self.latch.update(contact=contact, stale=stale, unknown=unknown, incomplete=incomplete,
                             conflict=self.conflict):
            self.pub_stop.publish(Bool(data=self.latch.stop))
            if self.latch.stop:                 # (rclpy fixes one severity per logging call site)
                self.get_logger().error(f"safety stop ON: {self.latch.reason}")
            else:
                self.get_logger().info("safety stop released")
        level = (self._status()[0], self._obstacle_status()[0])
        if level != self._level:
            self._level = level
            self._publish_diagnostics()

    def _on_watchdog(self):
        """At ``heartbeat_rate``: time-based hazards (stale input, unknown nodes) and the heartbeat the
        driver needs to keep moving. If this timer itself ran late by more than half the stale timeout,
        the process was starved and queued positions are processed after it: the stale verdict waits one
        tick, unless the input is older than twice the timeout (then the monitor was blind that long)."""
        now = time.monotonic()
        late = now - self._last_watchdog - self.heartbeat_period
        self._last_watchdog = now
        starved = late > 0.5 * self.stale_timeout
        if late > self.stale_timeout:          # not run for longer than the timeout: a stall, say so
            self.stall = (f"the monitor itself did not run for {late + self.heartbeat_period:.2f} s (process "
                          "stopped, e.g. SIGSTOP or a debugger, or starved of CPU)")
            self.get_logger().error(f"{self.stall}: its checks and heartbeat paused; drivers held")
        if late > PAUSE_LATENESS:              # the monitor did not run: positions checked before are old
            self.resumed_at = now
        age = math.inf if self.last_rx is None else now - self.last_rx
        self._evaluate(stale_ok=not starved or age > 2.0 * self.stale_timeout)
        if self.latch.stop or self._checked_since_pause():
            self.pub_stop.publish(Bool(data=self.latch.stop))

    def _checked_since_pause(self) -> bool:
        """Whether the positions checked last were received (by the middleware) after the monitor last paused
        (PAUSE_LATENESS). An all-clear heartbeat needs that: after a pause this timer fires first, while
        the last check is as old as the pause and positions received since wait in the queue; the heartbeat
        is left out until they are checked (the driver holds meanwhile), so stale positions never clear."""
        return self.checked_rx is not None and self.checked_rx >= self.resumed_at

    def _on_timer(self):
        now = time.monotonic()
        t0, n0 = self._rate_window
        self._rate = (self.counts["checks"] - n0) / max(now - t0, 1e-9)
        self._rate_window = (now, self.counts["checks"])
        self._publish_diagnostics()

    # --- outputs -------------------------------------------------------------------------------------
    def _status(self):
        a = self.last
        stale = self._stale_text(time.monotonic())
        if self.assessor is None:
            return diag.WARN, "waiting for the model (model parameter or model_description topic)"
        if stale:
            return diag.ERROR, stale
        if self.latch.hazard:                 # contact or unknown nodes (a stop is on or about to be)
            return diag.ERROR, self.latch.hazard
        if self.latch.stop:
            if not self.latch.armed:
                return diag.ERROR, f"safety stop on until the first clean check: {self.latch.reason}"
            return diag.ERROR, f"safety stop latched ({self.latch.reason}); call ~/clear_safety_stop"
        if self.latch.incomplete:
            return diag.WARN, self.latch.incomplete
        if self.problem:
            return diag.WARN, f"ignored input: {self.problem}"
        if a is not None and len(a.warn_pairs):
            k = a.closest_pair
            n1, n2 = self.assessor.pair_names[k]
            return diag.WARN, f"{len(a.warn_pairs)} pair(s) closer than {self.warn_margin} m, closest {n1}-{n2}"
        if a is not None and len(a.unknown_nodes):
            return diag.WARN, f"{len(a.unknown_nodes)} allowed node(s) unknown; their pairs are not checked"
        return diag.OK, "no pair closer than the warning margin"

    def _obstacle_status(self):
        """(level, message) of the bar-obstacle check; (OK, '') for a model without obstacles."""
        if self.assessor is None or not len(self.assessor.obstacles):
            return diag.OK, ""
        o = self.last.obstacles if self.last is not None else None
        if o is None or o.closest_pair < 0:
            return diag.WARN, "no bar with both ends known checked yet"
        warn_margin, contact_margin = self.obstacle_margins
        for pairs, level, margin in ((o.contact_pairs, diag.ERROR, contact_margin), (o.warn_pairs, diag.WARN,
                                                                                     warn_margin)):
            if len(pairs):
                k = pairs[int(np.argmin(o.clearance[pairs]))]
                return level, (f"{len(pairs)} bar-obstacle pair(s) below {margin} m, deepest "
                               f"{self.assessor.obstacle_text(o, k)}")
        return diag.OK, (f"no bar-obstacle clearance below {warn_margin} m; closest "
                         f"{self.assessor.obstacle_text(o, o.closest_pair)}")

    def _obstacle_diagnostics(self, hardware_id: str) -> list:
        """The '<node>: obstacles' status (a list of none for a model without obstacles)."""
        level, message = self._obstacle_status()
        if not message:
            return []
        values = {"obstacles": ", ".join(self.assessor.obstacles.names)}
        o = self.last.obstacles if self.last is not None else None
        if o is not None and o.closest_pair >= 0:
            values.update({"min_obstacle_clearance_m": o.min_clearance,
                           "closest_obstacle_pair": " vs ".join(self.assessor.obstacle_pairs[o.closest_pair]),
                           "obstacle_pairs_below_warn": len(o.warn_pairs),
                           "obstacle_pairs_in_contact": len(o.contact_pairs)})
        return [diag.status(f"{self.get_fully_qualified_name()}: obstacles", hardware_id, level, message, values)]

    def _publish_diagnostics(self):
        level, message = self._status()
        a = self.last
        values = {"safety_stop": self.latch.stop, "stop_reason": self.latch.reason or "-",
                  "check_rate_hz": self._rate, "last_check_us": 1e6 * self.check_time,
                  "messages": self.counts["messages"], "rejected": self.counts["rejected"]}
        if self.assessor is not None:
            values["pairs_checked"] = len(self.assessor.elements.pair_i)
        if a is not None:
            values["min_clearance_m"] = a.min_clearance
            if 0 <= a.closest_pair < len(self.assessor.pair_names):
                values["closest_pair"] = "-".join(self.assessor.pair_names[a.closest_pair])
            values["pairs_below_warn"] = len(a.warn_pairs)
            values["pairs_in_contact"] = len(a.contact_pairs)
            values["unknown_nodes"] = len(a.unknown_nodes)
        if self.last_rx is not None:
            values["input_age_s"] = time.monotonic() - self.last_rx
        hardware_id = self.assessor.model.name if self.assessor else "unknown"
        st = diag.status(f"{self.get_fully_qualified_name()}: self-collision", hardware_id, level, message, values)
        statuses = [st] + self._obstacle_diagnostics(hardware_id)
        self.pub_diag.publish(diag.array(Header(stamp=self.get_clock().now().to_msg()), statuses))

    def _publish_markers(self, a, header):
        o = a.obstacles
        if not len(a.warn_pairs) and (o is None or not len(o.warn_pairs)):
            if self._markers_shown:
                self.pub_markers.publish(MarkerArray(markers=[Marker(header=header, action=Marker.DELETEALL)]))
                self._markers_shown = False
            return
        groups = [("", a.warn_pairs, a.contact_pairs, a.points_a, a.points_b)]
        if o is not None:
            groups.append(("obstacle_", o.warn_pairs, o.contact_pairs, o.points_bar, o.points_obstacle))
        markers = []
        for prefix, pairs, contact, pa, pb in groups:
            if len(pairs):
                markers += _pair_markers(header, prefix, pa, pb, np.isin(pairs, contact))
            else:                             # the other kind is shown: remove this kind's (if any)
                markers += [Marker(header=header, ns=prefix + ns, id=0, action=Marker.DELETE)
                            for ns in ("clearance", "closest_points")]
        self.pub_markers.publish(MarkerArray(markers=markers))
        self._markers_shown = True

    # --- service -------------------------------------------------------------------------------------
    def _srv_clear(self, request, response):
        self._evaluate()
        ok, message = self.latch.clear()
        if ok:
            self.pub_stop.publish(Bool(data=self.latch.stop))
            self._evaluate()
            self.get_logger().info(message)
        response.success, response.message = ok, message
        return response


def _pair_markers(header, prefix: str, points_a, points_b, contact) -> list:
    """A LINE_LIST '<prefix>clearance' between the closest points of pairs and a SPHERE_LIST
    '<prefix>closest_points' on them, red where in contact, yellow where only under the warning margin."""
    colours = [CONTACT_COLOUR if c else WARN_COLOUR for c in contact]
    pts = np.empty((2 * len(contact), 3))
    pts[0::2], pts[1::2] = points_a, points_b
    points = [Point(x=x, y=y, z=z) for x, y, z in pts.tolist()]
    colours2 = [c for c in colours for _ in (0, 1)]
    lines = Marker(header=header, ns=prefix + "clearance", id=0, type=Marker.LINE_LIST, action=Marker.ADD,
                   scale=Vector3(x=0.006), points=points, colors=colours2)
    lines.pose.orientation.w = 1.0
    dots = Marker(header=header, ns=prefix + "closest_points", id=0, type=Marker.SPHERE_LIST, action=Marker.ADD,
                  scale=Vector3(x=0.03, y=0.03, z=0.03), points=points, colors=colours2)
    dots.pose.orientation.w = 1.0
    return [lines, dots]


def same_robot(a, b) -> bool:
    """Whether models ``a`` and ``b`` describe the same robot for the collision check (name, nodes, bars,
    strings, segments), whatever their configurations: e.g. the simulator's and the mocap bridge's."""
    return all(tuple(getattr(a, k)) == tuple(getattr(b, k)) for k in
               ("node_names", "bar_names", "string_names", "segment_names")) and a.name == b.name


def main(args=None):
    from tensegrity_ros_common.node_main import run
    return run(CollisionMonitor, args)


if __name__ == "__main__":
    raise SystemExit(main())
