"""The live view node ``live_view``: the suite's ROS topics served over the Foxglove WebSocket protocol, so the
Foxglove app shows the robot live without a ROS install, and its publish panels steer the controllers.

Subscription callbacks only keep the newest message of each topic; a timer at ``rate_hz`` turns the newest
state into Foxglove messages (decimation: what arrived in between is counted, never queued) and only for
channels a client subscribes to. The Foxglove server sends on its own threads and drops a slow client's
oldest messages, so no client ever blocks a ROS callback. Client publishes (``/cmd_vel``, ``/goal_pose``,
``/plate_goal``) are checked (:mod:`.steering`) and the newest accepted one of each is republished on the
ROS topics ``cmd_vel``, ``goal_pose``, ``plate_goal`` (reliable command QoS) at the next tick; the controllers
check them as any ROS message and obey the safety stop. Bad input (a model description that does not build,
node positions of the wrong count, NaN) is rejected, counted and reported on /diagnostics; the last good
state stays on view. Runs with the simulator, or with the mocap bridge alone.
"""
from __future__ import annotations

import threading
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from foxglove.channels import FrameTransformsChannel, LogChannel, PoseInFrameChannel, SceneUpdateChannel
from foxglove.messages import Log, LogLevel
from geometry_msgs.msg import PoseArray, PoseStamped, Twist
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState, PointCloud2
from std_msgs.msg import Bool, Float64, Header, String
from visualization_msgs.msg import MarkerArray

from tensegrity_ros_common import diagnostics as diag
from tensegrity_ros_common import topics
from tensegrity_ros_common.bounded import (MAX_BYTES, NODES_WITHOUT_MODEL, bounded_subscription, pose_array_bytes,
                                          too_large)
from tensegrity_ros_common.conversions import pose_array_to_positions, pose_to_frame, stamp_to_seconds
from tensegrity_ros_common.description import model_from_description
from tensegrity_ros_common.params import check, check_rate, declare, warn_unknown_overrides

from . import scene, steering, streams
from .server import LiveServer
from .ros_inputs import cloud_points, command_message, transform_of

PARAMETERS = {
    "host": ("127.0.0.1", "address the Foxglove WebSocket server listens on (0.0.0.0: every interface)"),
    "port": (8765, "TCP port of the server (0: any free port; the port taken is logged and in the diagnostics)"),
    "rate_hz": (30.0, "scene and numeric stream rate [Hz]: the newest state at each tick, never a queue"),
    "path_length": (2000, "odometry points kept for the path so far"),
    "steering": (True, "take cmd_vel, goal_pose and plate_goal from the Foxglove app's publish panels"),
    "frame_id": ("world", "fixed frame of the scene when node_positions carry none (the simulator's frame_id)"),
    "tf_prefix": ("", "prefix of the plate frame names (the simulator's tf_prefix)"),
    "diagnostic_rate": (1.0, "rate of /diagnostics [Hz]"),
    "stale_after": (1.0, "node positions older than this [s] are shown and reported as stale (a dead source)"),
}
WORLD_PERIOD = 1.0                  # s: obstacles re-sent so late clients get them
MARKER_BYTES = 1 << 22              # 4 MiB: the largest MarkerArray / PointCloud2 taken (parsed only below this)
STATUS = "live view"


class LiveView(Node):
    """The live view node (see the module docstring)."""

    PARAMETERS = PARAMETERS
    ENGINE_KERNELS = ()                # frames and scenes are NumPy only

    def __init__(self, **kwargs):
        super().__init__("live_view", **kwargs)
        declare(self, PARAMETERS)
        p = self._p
        self.rate = check_rate("rate_hz", p("rate_hz"))
        self.path = streams.Path(int(check("path_length", p("path_length"), 2, 1e6)))
        self.default_frame, self.tf_prefix = str(p("frame_id")), str(p("tf_prefix"))
        self.steering = bool(p("steering"))
        self.lock = threading.Lock()             # commands and counts from the server's threads
        self.commands = {}                       # ROS topic -> newest accepted Command
        self.counts = {"rejected": 0, "accepted": 0, "superseded": 0, "decimated": 0, "published_scenes": 0}
        self.last_rejection = ""
        self.last_error = ""
        self.latest = {}                         # input key -> newest message (None once used)
        self.held = {}                           # input key -> newest message (kept: string tensions, commands)
        self.types = {}                          # input key -> message type
        self.model = self.robot = None
        self.X = None                            # last good physical node positions (mu, 3) [m]
        self.stamp = scene.stamp(0.0)
        self.frame_id = self.default_frame
        self.scale = streams.WindowMax()
        self.scene_rate = streams.RateMeter()
        self.stopped, self.stop_changed = None, time.monotonic()
        self.clearance = {"min_m": None, "min_obstacle_m": None, "closest_pair": ""}
        self.statuses = {}                       # diagnostics status name -> (level, message) last seen
        self.world_sent = -np.inf
        self.stale_after = check("stale_after", p("stale_after"), 0.01, 3600.0)
        self.positions_at = None                 # monotonic time of the newest node positions shown (or asked for)
        self.server = self._start_server(str(p("host")), int(p("port")))
        self.port = self.server.port
        self._channels()
        self._subscribe()
        self.pubs = {t: self.create_publisher(Twist if t == "cmd_vel" else PoseStamped, t, topics.command_qos())
                     for t in steering.ROS_TOPIC.values()} if self.steering else {}
        self.pub_diag = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, topics.state_qos())
        self.create_timer(1.0 / self.rate, self._tick)
        self.create_timer(1.0 / check_rate("diagnostic_rate", p("diagnostic_rate")), self._publish_diagnostics)
        self.get_logger().info(f"live view: open Foxglove -> Open connection -> Foxglove WebSocket -> "
                               f"ws://{p('host')}:{self.port} ({self.rate:g} Hz, steering "
                               f"{'on' if self.steering else 'off'})")
        warn_unknown_overrides(self)

    def _p(self, name):
        return self.get_parameter(name).value

    def _start_server(self, host: str, port: int) -> LiveServer:
        """The Foxglove server; ValueError naming the parameters when it cannot listen there."""
        if not 0 <= port <= 65535:
            raise ValueError(f"parameter 'port' must be a TCP port 0-65535 (0: any free port), got {port}")
        try:
            return LiveServer(host, port, self._on_client_message, self._on_refused, self.steering)
        except Exception as exc:                # noqa: BLE001 - the SDK's FoxgloveError: say which setting to change
            raise ValueError(f"cannot serve on {host}:{port} ({exc}): another live view there? set parameter "
                             "'port' (tensegrity-bringup --live PORT; 0: any free port) or 'host'") from None

    # --- channels and subscriptions ------------------------------------------------------------------------
    def _channels(self):
        s = self.server
        for topic in ("/scene/robot", "/scene/world", "/scene/contacts", "/scene/clearance", "/scene/status",
                      "/scene/goal", "/scene/raw_markers"):
            s.typed(SceneUpdateChannel, topic)
        s.typed(FrameTransformsChannel, "/tf")
        s.typed(LogChannel, "/log")
        for topic, schema in (("/tensions", streams.TENSIONS_SCHEMA), ("/inputs", streams.INPUTS_SCHEMA),
                              ("/clearance", streams.CLEARANCE_SCHEMA), ("/odometry", streams.ODOMETRY_SCHEMA),
                              ("/safety", streams.SAFETY_SCHEMA)):
            s.json(topic, schema)

    def _subscribe(self):
        """What the view always needs: the model, the safety stop. The streams: while a client is connected
        (:meth:`_sync_streams`), so with no client the view costs next to nothing."""
        lq = topics.latched_qos()
        bounded_subscription(self, String, topics.MODEL_DESCRIPTION, self._on_description, lq,
                             MAX_BYTES["model_description"], self.reject)
        self.create_subscription(Bool, topics.SAFETY_STOP, self._on_safety_stop, lq)
        self.streams = []

    def _sync_streams(self, clients: int):
        """Subscribe to the streams when the first client is there; unsubscribe when the last one left."""
        if clients and not self.streams:
            self.positions_at = time.monotonic()         # staleness counts from the subscription
            sq, st, cq = topics.sensor_qos(), topics.state_qos(), topics.command_qos()
            nodes = lambda: pose_array_bytes(self.model.n_physical if self.model else NODES_WITHOUT_MODEL)  # noqa: E731
            self.streams = [self._keep(key, msg_type, topic, qos, most) for key, msg_type, topic, qos, most in (
                ("nodes", PoseArray, topics.NODE_POSITIONS, sq, nodes),
                ("contacts", MarkerArray, topics.CONTACT_MARKERS, st, MARKER_BYTES),
                ("collision", MarkerArray, topics.COLLISION_MARKERS, st, MARKER_BYTES),
                ("raw", PointCloud2, "markers/raw", sq, MARKER_BYTES),
                ("strings", JointState, topics.STRING_STATES, sq, MARKER_BYTES),
                ("joints", JointState, topics.JOINT_STATES, sq, MARKER_BYTES),
                ("min_clearance", Float64, topics.MIN_CLEARANCE, st, MARKER_BYTES),
                ("min_obstacle", Float64, topics.MIN_OBSTACLE_CLEARANCE, st, MARKER_BYTES),
                ("odom", Odometry, topics.ODOMETRY, st, MARKER_BYTES),
                ("cmd_vel", Twist, "cmd_vel", cq, MARKER_BYTES),
                ("goal_pose", PoseStamped, "goal_pose", cq, MARKER_BYTES),
                ("plate_goal", PoseStamped, "plate_goal", cq, MARKER_BYTES),
                ("diagnostics", DiagnosticArray, topics.DIAGNOSTICS, st, MARKER_BYTES))]
        elif not clients and self.streams:
            for sub in self.streams:
                self.destroy_subscription(sub)
            self.streams = []
            self.latest.clear()

    def _keep(self, key: str, msg_type, topic: str, qos, most):
        """Subscribe to ``topic`` keeping only the newest serialized message (parsed when a tick uses it, so
        a 100 Hz stream costs a byte copy per message); one over ``most`` bytes (int or callable) is rejected."""
        limit = most if callable(most) else (lambda: most)
        self.types[key] = msg_type

        def keep(data: bytes):
            reason = too_large(topic, len(data), limit())
            if reason:
                self.reject(topic, reason)
                return
            if key == "nodes" and self.latest.get(key) is not None:
                self.counts["decimated"] += 1
            self.latest[key] = self.held[key] = data
        return self.create_subscription(msg_type, topic, keep, qos, raw=True)

    # --- ROS inputs that change the state at once ----------------------------------------------------------
    def _on_description(self, msg: String):
        try:
            model = model_from_description(msg.data)
        except Exception as exc:                # noqa: BLE001 - input from the network never stops the node
            self.reject("model_description", str(exc))
            return
        if self.model is not None and model.n_physical == self.model.n_physical and model.name == self.model.name:
            return
        self.model, self.robot = model, scene.RobotScene(model, self.frame_id, self.tf_prefix)
        self.X, self.world_sent = None, -np.inf
        for name in model.frame_names:
            self.server.typed(PoseInFrameChannel, "/plates/" + name.lower())
        self.server.reschema_json("/tensions", streams.named_schema(streams.TENSIONS_SCHEMA, model.string_names))
        self.server.reschema_json("/inputs", streams.named_schema(streams.INPUTS_SCHEMA, model.actuator_names))
        self.get_logger().info(f"model '{model.name}' from model_description: {len(model.bar_names)} bars, "
                               f"{len(model.string_names)} strings")

    def _on_safety_stop(self, msg: Bool):
        if bool(msg.data) != self.stopped:
            self.stopped, self.stop_changed = bool(msg.data), time.monotonic()

    def reject(self, what: str, reason: str):
        """Count, log (throttled) and remember a rejected input."""
        with self.lock:
            self.counts["rejected"] += 1
            self.last_rejection = f"{what}: {reason}"
        self.get_logger().warning(f"rejected {what}: {reason}", throttle_duration_sec=1.0)

    # --- client publishes (on the server's thread) ----------------------------------------------------------
    def _on_client_message(self, topic: str, schema_name: str, encoding: str, payload: bytes):
        if not self.steering:
            self._on_refused(f"client message on {topic}: steering is off")
            return
        try:
            command = steering.parse(topic, schema_name, encoding, payload)
        except steering.Rejected as exc:
            self._on_refused(str(exc))
            return
        with self.lock:
            self.counts["accepted"] += 1
            self.counts["superseded"] += command.topic in self.commands
            self.commands[command.topic] = command

    def _on_refused(self, reason: str):
        with self.lock:
            self.counts["rejected"] += 1
            self.last_rejection = f"client: {reason}"

    def _send_commands(self):
        with self.lock:
            commands, self.commands = self.commands, {}
        for command in commands.values():
            header = Header(stamp=self.get_clock().now().to_msg(), frame_id=command.frame_id)
            self.pubs[command.topic].publish(command_message(command, header))

    # --- the tick -----------------------------------------------------------------------------------------
    def _tick(self):
        """Commands out, then every part of the view from the newest state; a part that fails is reported and
        the others still run. Without a client only the commands go out (nothing is parsed)."""
        clients = self.server.counts()["clients"]
        self._sync_streams(clients)
        parts = (self._send_commands, self._robot, self._world, self._numbers, self._overlays, self._log)
        for part in parts if clients else parts[:1]:
            try:
                part()
            except Exception as exc:            # noqa: BLE001 - a bad message must never stop the view
                self.last_error = f"{part.__name__}: {type(exc).__name__}: {exc}"[:300]
                self.get_logger().error(f"live view {self.last_error}", throttle_duration_sec=5.0)

    def _take(self, key: str):
        """The newest message of ``key`` not yet used, parsed (None if nothing new)."""
        data = self.latest.get(key)
        if data is None:
            return None
        self.latest[key] = None
        return deserialize_message(data, self.types[key])

    def _held(self, key: str):
        """The newest message of ``key``, used or not, parsed (None if none came)."""
        data = self.held.get(key)
        return None if data is None else deserialize_message(data, self.types[key])

    def _robot(self):
        msg = self._take("nodes")
        if msg is None or self.model is None:
            return
        X = pose_array_to_positions(msg)
        if X.shape != (self.model.n_physical, 3):
            self.reject("node_positions", f"{len(X)} poses, model '{self.model.name}' has {self.model.n_physical} "
                                          "nodes")
            return
        if msg.header.frame_id and msg.header.frame_id != self.frame_id:
            self.frame_id = str(msg.header.frame_id)
            self.robot = scene.RobotScene(self.model, self.frame_id, self.tf_prefix)
        self.X, self.stamp = X, scene.stamp(stamp_to_seconds(msg.header.stamp))
        self.positions_at = time.monotonic()
        tensions = self._tensions()
        if self.server.wanted("/scene/robot"):
            scale = self.scale.update(tensions if tensions is not None else [])
            self.server.channels["/scene/robot"].log(self.robot.update(X, tensions, self.stamp, scale))
            self.counts["published_scenes"] += 1
            self.scene_rate.tick()
        if self.server.wanted("/tf"):
            self.server.channels["/tf"].log(self.robot.transforms(X, self.stamp))
        for name, pose in self.robot.plate_poses(X, self.stamp):
            if self.server.wanted("/plates/" + name):
                self.server.channels["/plates/" + name].log(pose)

    def _tensions(self):
        """Composite string tensions [N] in model order from the newest string_states (None if none fits)."""
        msg = self._held("strings")
        if msg is None or list(msg.name) != list(self.model.string_names) or len(msg.effort) != len(msg.name):
            return None
        return np.asarray(msg.effort, float)

    def _world(self):
        now = time.monotonic()
        if self.model is None or now - self.world_sent < WORLD_PERIOD or not self.server.wanted("/scene/world"):
            return
        self.world_sent = now
        around = np.nanmean(self.X, axis=0) if self.X is not None and np.isfinite(self.X).any() else np.zeros(3)
        self.server.channels["/scene/world"].log(scene.world_update(self.model, self.frame_id, self.stamp,
                                                                    np.nan_to_num(around)))

    def _wanted(self, key: str, topic: str):
        """The newest unused message of ``key`` parsed, if a client subscribes to ``topic`` (else None: the
        message waits, unparsed)."""
        return self._take(key) if self.server.wanted(topic) else None

    def _numbers(self):
        s = self.server
        strings, joints = self._wanted("strings", "/tensions"), self._wanted("joints", "/inputs")
        if strings is not None:
            s.log_json("/tensions", s.schemas["/tensions"], streams.named_values(strings.name, strings.effort))
        if joints is not None:
            s.log_json("/inputs", s.schemas["/inputs"], streams.named_values(joints.name, joints.position))
        if s.wanted("/clearance") or s.wanted("/scene/clearance"):
            self._clearance()
        odom = self._take("odom")
        if odom is not None:
            self._odometry(odom)
        if s.wanted("/safety"):
            s.log_json("/safety", streams.SAFETY_SCHEMA,
                       {"stopped": self.stopped, "since_s": time.monotonic() - self.stop_changed})

    def _clearance(self):
        new = False
        for key, field in (("min_clearance", "min_m"), ("min_obstacle", "min_obstacle_m")):
            msg = self._take(key)
            if msg is not None:
                self.clearance[field], new = float(msg.data), True
        if new and self.server.wanted("/clearance"):
            self.server.log_json("/clearance", streams.CLEARANCE_SCHEMA, self.clearance)

    def _odometry(self, odom: Odometry):
        p, q, v = odom.pose.pose.position, odom.pose.pose.orientation, odom.twist.twist.linear
        self.path.add((p.x, p.y, p.z))
        if self.server.wanted("/odometry"):
            self.server.log_json("/odometry", streams.ODOMETRY_SCHEMA,
                                 streams.odometry_values((p.x, p.y, p.z), (q.x, q.y, q.z, q.w), (v.x, v.y, v.z)))
        if self.server.wanted("/tf") and odom.child_frame_id:
            self.server.channels["/tf"].log(transform_of(odom, self.frame_id))

    def _overlays(self):
        s, t = self.server, self.stamp
        label = scene.label_position(self.X) if self.X is not None else np.zeros(3)
        for key, topic in (("contacts", "/scene/contacts"), ("collision", "/scene/clearance")):
            msg = self._wanted(key, topic)
            if msg is not None:
                s.channels[topic].log(scene.markers_update(msg, t, self.frame_id))
        if s.wanted("/scene/status"):
            s.channels["/scene/status"].log(scene.status_update(self.stopped, self.frame_id, t, label,
                                                                self.positions_age()))
        if self.clearance["min_m"] is not None and s.wanted("/scene/clearance"):
            s.channels["/scene/clearance"].log(scene.clearance_update(
                self.clearance["min_m"], self.clearance["closest_pair"], self.frame_id, t, label + [0, 0, 0.08]))
        raw = self._wanted("raw", "/scene/raw_markers")
        if raw is not None:
            points, node = cloud_points(raw)
            s.channels["/scene/raw_markers"].log(scene.raw_markers_update(points, node, self.frame_id, t))
        if s.wanted("/scene/goal"):
            s.channels["/scene/goal"].log(self._goal_scene(label))

    def _goal_scene(self, label):
        cmd, goal, plate = (self._held(k) for k in ("cmd_vel", "goal_pose", "plate_goal"))
        heading = None
        if cmd is not None and np.hypot(cmd.linear.x, cmd.linear.y) > 0:
            heading = np.array([cmd.linear.x, cmd.linear.y]) / np.hypot(cmd.linear.x, cmd.linear.y)
        origin = label - [0.0, 0.0, 6 * scene.TEXT_SIZE] if self.X is not None else np.zeros(3)
        point = None if goal is None else (goal.pose.position.x, goal.pose.position.y, goal.pose.position.z)
        plate_C = None if plate is None else pose_to_frame(plate.pose)
        return scene.goal_update(self.frame_id, self.stamp, origin, heading, point, plate_C, self.path.array())

    def _log(self):
        """Diagnostics: each status change as a /log line; the collision monitor's closest pair."""
        wanted = self.server.wanted("/log")
        msg = self._take("diagnostics") if wanted or self.server.wanted("/clearance") else None
        if msg is None:
            return
        for st in msg.status:
            pair = next((kv.value for kv in st.values if kv.key == "closest_pair"), None)
            if pair is not None:
                self.clearance["closest_pair"] = pair[:200]
            now = (diag.level_of(st), st.message)
            if not wanted or st.name.endswith(STATUS) or self.statuses.get(st.name) == now or len(self.statuses) > 1000:
                continue
            self.statuses[st.name] = now
            level = {diag.OK: LogLevel.Info, diag.WARN: LogLevel.Warning}.get(now[0], LogLevel.Error)
            self.server.channels["/log"].log(Log(timestamp=self.stamp, level=level, name=st.name, message=st.message))

    def positions_age(self) -> float | None:
        """Seconds since the newest node positions (or since a client asked for them), when over
        ``stale_after``; None while they are fresh or nobody watches."""
        if self.positions_at is None or not self.streams:
            return None
        age = time.monotonic() - self.positions_at
        return age if age > self.stale_after else None

    # --- diagnostics and shutdown -----------------------------------------------------------------------
    def _publish_diagnostics(self):
        with self.lock:
            values = dict(self.counts, last_rejection=self.last_rejection or "none")
        values.update(self.server.counts(), port=self.port, scene_rate_hz=self.scene_rate.rate(),
                      rate_hz=self.rate, model=self.model.name if self.model else "none",
                      last_error=self.last_error or "none")
        if self.model is None:
            level, text = diag.WARN, "waiting for model_description"
        elif self.last_error:
            level, text = diag.WARN, f"serving on port {self.port}; last error {self.last_error}"
        else:
            level, text = diag.OK, f"serving on port {self.port} to {values['clients']} client(s)"
        stale = self.positions_age()
        values["node_positions_stale_s"] = stale if stale is not None else 0.0
        if stale is not None and level == diag.OK:
            level, text = diag.WARN, f"{text}; node positions stale: none for {stale:.1f} s (source stopped?)"
        if values["protocol_errors"]:
            text += f"; {values['protocol_errors']} malformed client frames (last: {values['last_protocol_error']})"
        header = Header(stamp=self.get_clock().now().to_msg())
        self.pub_diag.publish(diag.array(header, [diag.status(f"{self.get_name()}: {STATUS}", "foxglove", level,
                                                              text, values)]))

    def close(self) -> str:
        """Stop the server (clients disconnected); '' (nothing left unsafe)."""
        self.server.stop()
        return ""

    def destroy_node(self):
        self.server.stop()
        return super().destroy_node()


def main(args=None):
    from tensegrity_ros_common.node_main import run
    return run(LiveView, args)


if __name__ == "__main__":
    raise SystemExit(main())
