"""mocap_bridge: OptiTrack motion capture (NatNet stream or Motive CSV replay) -> per-node positions.

A worker thread receives frames (NatNet client, or a CSV file at its recorded rate / as fast as possible),
converts Motive's Y-up to z-up and adds the world offset, tracks every physical node of the model
(tracking/tracker.py) and publishes ``node_positions`` (PoseArray in model order, NaN = invalid: the same topic
and type as the simulator, so the collision monitor takes either; where the model puts a node's ``marker`` off
the node, the node behind the tracked markers, NaN while its bar partner's marker is unknown), plate poses ``plate_pose/<frame>``
(and TF where tf2_ros exists) when a plate's three nodes are valid, the raw markers with the node each
was assigned to (``markers/raw``, ``markers/rviz``: bridge/output.py), and ``/diagnostics`` (frame rate,
frames received / published / rejected / lost and the loss rate (bridge/loss.py), untracked nodes and why,
rejected packets, latency).

Stamps: NatNet frames carry the camera mid-exposure time (else the receive time); a CSV replay stamps
each frame with its capture time (``csv.stamps``, bridge/replay_time.py), optionally also on ``/clock``.

Marker labels reach the tracker as strings: NatNet labeled markers as ``"<asset id>:<marker id>"``
(asset 0: unlabeled markers), CSV markers by their column names (``Robot:n1``, ``Unlabeled 1008``).

Hostile input: with ``natnet.sender_filter`` only datagrams from the NatNet server are read (others are
counted as foreign packets); every frame passes a :class:`~tensegrity_mocap.plausibility.FrameGuard`
(order, coordinates, motion, bar lengths, one sender) before it is tracked; rejects are counted and
reported as WARN while they arrive.
"""
from __future__ import annotations

import tensegrity_ros_common.parent_watch  # noqa: F401,I001 - first: notes the launcher before the slow imports

import gc
import threading
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.exceptions import ParameterUninitializedException
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import PointCloud2
from visualization_msgs.msg import MarkerArray
from geometry_msgs.msg import Pose, PoseArray, PoseStamped
from rclpy.node import Node
from std_msgs.msg import Header, String

from tensegrity_engine import load_model
from tensegrity_engine.model.markers import has_marker_offsets, nodes_from_markers
from tensegrity_ros_common import diagnostics as diag
from tensegrity_ros_common import topics
from tensegrity_ros_common.live_params import LiveParameters
from tensegrity_ros_common.params import check, check_rate, declare, warn_unknown_overrides
from tensegrity_ros_common.conversions import matrix_to_quaternion, transform_stamped
from tensegrity_ros_common.description import describe
from tensegrity_ros_common.node_main import Finished

from tensegrity_mocap.axes import to_ros_frame
from tensegrity_mocap.bridge.config import check_address
from tensegrity_mocap.bridge.loss import LossWindow, loss_warning
from tensegrity_mocap.bridge.output import CLOCK, RAW_MARKERS, RVIZ_MARKERS, MarkerCloud, RvizMarkers, frame_markers, \
    untracked_summary
from tensegrity_mocap.bridge.plates import axes_quaternion, plate_axes
from tensegrity_mocap.bridge.replay_time import STAMP_MODES, ReplayTime, stamp_msg
from tensegrity_mocap.bridge.wire import header_bytes, pose_array_bytes, pose_stamped_bytes
from tensegrity_mocap.tracking.labels import NatNetLabelCache, parse_marker_map
from tensegrity_mocap.tracking.plausibility import IMPLAUSIBLE, FrameGuard
from tensegrity_mocap.tracking.tracker import NodeTracker

try:  # TF only where tf2_ros exists (ROS installs)
    from tf2_ros import TransformBroadcaster
except ImportError:  # pragma: no cover
    TransformBroadcaster = None

PARAMETERS = {
    "source": ("natnet", "natnet (live Motive stream) or csv (replay a Motive CSV export)"),
    "model": ("stacked_manipulator", "built-in model name or model file (nodes, bars, plates)"),
    "frame_id": ("world", "frame of the published positions and poses"),
    "up_axis": ("auto", "up axis of the capture data: auto (NatNet: y, Motive's default; CSV: the "
                        "recording's, y), y or z (an explicit value always wins)"),
    "world_offset": ([0.0, 0.0, 0.0], "added to every position after the axis conversion [m]"),
    "marker_map": ([""], "initial labels: 'label=node' entries; NatNet: '<asset id>:<marker id>' or the full "
                         "marker id (asset id x 65536 + marker id); CSV: the column name ('Robot:n1', "
                         "'Unlabeled 1008'); empty: match the markers to the model"),
    "raw_markers_rate": (30.0, "rate of the markers/rviz MarkerArray [Hz] (0: off); markers/raw (PointCloud2) "
                               "goes out with every frame"),
    "natnet.server_address": ("127.0.0.1", "Motive's address"),
    "natnet.local_address": ("127.0.0.1", "this machine's address on the capture network"),
    "natnet.multicast_address": ("239.255.42.99", "Motive's multicast group"),
    "natnet.use_multicast": (True, "multicast (Motive default) or unicast"),
    "natnet.command_port": (1510, "Motive command port"),
    "natnet.data_port": (1511, "Motive data port"),
    "natnet.sender_filter": (True, "read only datagrams from natnet.server_address (others are dropped and "
                                   "counted as foreign packets)"),
    "natnet.sender_port": (0, "with the sender filter: frames must also come from this source port "
                              "(0: any port of the server)"),
    "natnet.version": (0.0, "NatNet version if the server does not answer the connect request, e.g. 4.1 "
                            "(0: learn it from the server)"),
    "csv.path": ("", "Motive CSV export to replay (source csv)"),
    "csv.rate_scale": (1.0, "replay speed: 1 = recorded rate, 2 = twice as fast, 0 = as fast as possible"),
    "csv.loop": (False, "start again at the end (stamps go on: each pass adds the take's duration plus one "
                        "frame period)"),
    "csv.exit_when_done": (True, "run as its own process: end it (exit code 0) once a replay without "
                                 "csv.loop has finished and reported it in diagnostics; false: stay, idle"),
    "csv.stamps": ("replay_start", "header stamps of a replay: replay_start (wall time at the replay's start + "
                                   "the frame's capture time - the first frame's) or capture (the frame's "
                                   "capture time, 'Time (Seconds)'; for use_sim_time)"),
    "csv.publish_clock": (False, "publish rosgraph_msgs/Clock on /clock before each replayed frame (the "
                                 "frame's stamp: the capture time with csv.stamps capture)"),
    "tracking.max_speed": (2.0, "fastest plausible node speed [m/s] (continuity gate)"),
    "tracking.noise": (0.005, "marker noise allowance [m]"),
    "tracking.bar_tol": (0.01, "accepted bar length error of a marker pair against the model, in every frame "
                               "(resync frames too) [m]"),
    "tracking.bar_jump": (0.004, "largest deviation of a bar's measured length from its running mean [m] "
                                 "(rigid bars: marker noise only); a frame beyond it is rejected"),
    "tracking.init_gate": (0.05, "largest distance from the model configuration for the first match [m]"),
    "tracking.reacquire_gate": (0.015, "a lost node takes a marker only within this of its prediction [m]"),
    "tracking.margin": (0.01, "a marker is taken for a node only if no other is within this of being as "
                              "good [m]"),
    "tracking.register_tol": (0.02, "inlier distance of the rigid placement of the model on the markers [m]"),
    "tracking.exclude": ([""], "glob patterns of marker labels to ignore, e.g. 'payload:*' (CSV names) or "
                               "'2:*' (NatNet asset 2); empty: none"),
    "tracking.min_time_step": (0.0005, "floor of the time step between frames used by the motion gate [s]"),
    "tracking.max_time_step": (0.1, "ceiling of the time step between frames used by the motion gate [s]"),
    "tracking.max_coordinate": (100.0, "a frame with a marker coordinate beyond this (or not finite) is "
                                       "rejected [m, robot world frame]"),
    "tracking.resync_frames": (5, "after this many rejected frames in a row the next one is tracked node "
                                  "by node and becomes the new time reference"),
    "tracking.sender_silence": (0.0, "0: only the first sender heard is ever tracked (restart the bridge after "
                                     "restarting Motive); > 0: another sender is taken once the tracked one "
                                     "has been silent this long [s] (an opt-in: anything on the server's "
                                     "host could take over)"),
    "diagnostic_rate": (1.0, "rate of /diagnostics [Hz]"),
    "publish_tf": (True, "broadcast plate frames on TF where tf2_ros is available"),
}

# tracker counters reported in diagnostics (summed over the passes of a looping replay): relabels (a followed
# marker changed its label), dropped_labels (a node lost the marker it followed), reacquired (lost -> tracked
# events), ambiguous (node-frames left NaN because several markers fit), registrations (model placements)
RETIRED_COUNTS = ("relabels", "dropped_labels", "reacquired", "ambiguous", "registrations")


def set_pose(pose, C, q=None):
    """Sets ``pose`` (a reused geometry_msgs/Pose) to the homogeneous frame ``C`` (4,4) [m] (``q``: its
    quaternion (x, y, z, w) if already known); returns it."""
    return set_position_orientation(pose, C[:3, 3].tolist(), matrix_to_quaternion(C[:3, :3]) if q is None else q)


def set_position_orientation(pose, position, q):
    """Sets ``pose`` (a reused geometry_msgs/Pose) to ``position`` [m] and quaternion ``q`` (x, y, z, w)."""
    o, p = pose.orientation, pose.position
    o.x, o.y, o.z, o.w = (float(v) for v in q)
    p.x, p.y, p.z = (float(v) for v in position)
    return pose


def frame_read_time(frame) -> float:
    """perf_counter [s] when the frame's datagram was read from the socket (the NatNet client's stamp, taken
    before parsing): the start of the bridge's processing latency; now where the frame has no stamp."""
    t_ns = getattr(frame, "receive_time_ns", None)
    return t_ns * 1e-9 if t_ns else time.perf_counter()


class MocapBridge(Node):
    def __init__(self, **kwargs):
        super().__init__("mocap_bridge", **kwargs)
        given = (getattr(self, "_parameter_overrides", None) or {}).get("up_axis")
        if given is not None and isinstance(given.value, bool):   # rclpy would refuse it with a type error
            raise ValueError("parameter 'up_axis': a bare y is a boolean to the ROS YAML parser; quote it "
                             "(-p \"up_axis:='y'\", or up_axis: \"y\" in a file)")
        declare(self, PARAMETERS)
        diagnostic_rate = self._read_source_parameters()
        self._read_tracking_parameters()
        self._check_stream_parameters()
        self._create_publishers()
        self._init_state()
        m = self.model
        if self.source == "natnet":
            self._open_natnet()
        else:
            self._open_csv()
        self.worker = threading.Thread(target=self._run, name="mocap_bridge", daemon=True)
        self.create_timer(1.0 / diagnostic_rate, self._publish_diagnostics)
        self.raw_cloud = MarkerCloud()
        self.rviz_markers = RvizMarkers(self.tracker.node_names)
        self.get_logger().info(f"{self.source} -> {m.n_physical} nodes of '{m.name}' in '{self.frame_id}' "
                               f"(up axis {self.up_axis}: {self.up_axis_note}; offset {self.offset.tolist()} m)")
        LiveParameters(self, {})     # fixed at start-up: the stream, the tracker and the axes are built from them
        warn_unknown_overrides(self)
        gc.freeze()       # start-up's objects (rclpy, numba, the model) never scanned again: a full collection
        #                   took 40-90 ms on the frame thread before (benchmarks.md)
        self.worker.start()                  # frames flow once the node is complete (timers, publishers, log)

    def _read_source_parameters(self) -> float:
        """The model, the source, the axes and offset, the rates and the marker map; returns the diagnostic rate."""
        p = self._p
        self.model = m = load_model(p("model"))
        self.source = str(p("source"))
        if self.source not in ("natnet", "csv"):
            raise ValueError("source must be 'natnet' or 'csv'")
        self.up_axis = str(p("up_axis"))
        self.offset = np.asarray(p("world_offset"), float)
        if self.up_axis not in ("auto", "y", "z") or self.offset.shape != (3,) or not np.all(np.isfinite(self.offset)):
            raise ValueError("up_axis must be 'auto', 'y' or 'z' and world_offset three finite numbers [m]")
        self.up_axis_note = "set by up_axis"
        if self.up_axis == "auto" and self.source == "natnet":
            self.up_axis, self.up_axis_note = "y", "auto: Motive streams Y-up by default"
        diagnostic_rate = check_rate("diagnostic_rate", p("diagnostic_rate"))
        self.raw_markers_rate = check_rate("raw_markers_rate", p("raw_markers_rate"), off_ok=True)
        self.marker_map = parse_marker_map(p("marker_map"), m.node_names[:m.n_physical], self.source)
        return diagnostic_rate

    def _read_tracking_parameters(self):
        """The tracker's and the frame guard's parameters, checked; builds the tracker."""
        p = self._p
        self.tracker_args = dict(
            max_speed=check("tracking.max_speed", p("tracking.max_speed"), 0.0, 100.0, low_open=True),
            noise=check("tracking.noise", p("tracking.noise"), 0.0, 1.0),
            bar_tol=check("tracking.bar_tol", p("tracking.bar_tol"), 0.0, 1.0, low_open=True),
            init_gate=check("tracking.init_gate", p("tracking.init_gate"), 0.0, 10.0, low_open=True),
            reacquire_gate=check("tracking.reacquire_gate", p("tracking.reacquire_gate"), 0.0, 1.0, low_open=True),
            margin=check("tracking.margin", p("tracking.margin"), 0.0, 1.0),
            register_tol=check("tracking.register_tol", p("tracking.register_tol"), 0.0, 1.0, low_open=True),
            exclude=tuple(str(x).strip() for x in (p("tracking.exclude") or ()) if str(x).strip()),
            min_dt=check("tracking.min_time_step", p("tracking.min_time_step"), 0.0, 1.0, low_open=True))
        self.tracker_args["max_dt"] = check("tracking.max_time_step", p("tracking.max_time_step"),
                                            self.tracker_args["min_dt"], 10.0)
        self.guard_args = dict(
            max_coordinate=check("tracking.max_coordinate", p("tracking.max_coordinate"), 0.0, 1e6, low_open=True),
            resync_frames=int(check("tracking.resync_frames", p("tracking.resync_frames"), 1, 1000)),
            sender_silence=check("tracking.sender_silence", p("tracking.sender_silence"), 0.0, 60.0),
            bar_jump=check("tracking.bar_jump", p("tracking.bar_jump"), 0.0, 1.0, low_open=True))
        check("natnet.sender_port", p("natnet.sender_port"), 0, 65535)
        self._new_tracker(self.marker_map)

    def _check_stream_parameters(self):
        """The CSV replay's and the NatNet stream's parameters, checked (they are used when the source opens)."""
        p = self._p
        check("csv.rate_scale", p("csv.rate_scale"), 0.0, 1000.0)
        self.stamps = str(p("csv.stamps"))
        if self.stamps not in STAMP_MODES:
            raise ValueError(f"parameter 'csv.stamps' must be one of {', '.join(STAMP_MODES)}, got {self.stamps!r}")
        check("natnet.version", p("natnet.version"), 2.0, 4.99, off=0.0)
        for port in ("natnet.command_port", "natnet.data_port"):
            check(port, p(port), 1, 65535)
        for address in ("natnet.server_address", "natnet.local_address"):
            check_address(address, p(address))
        group = check_address("natnet.multicast_address", p("natnet.multicast_address"))
        if not 224 <= int(group.split(".")[0]) <= 239:
            raise ValueError(f"parameter 'natnet.multicast_address' must be a multicast group (224.0.0.0 to "
                             f"239.255.255.255), got {group!r}")

    def _create_publishers(self):
        """Publishers (node positions, plate poses, diagnostics, markers, model description, clock) and TF."""
        p, m = self._p, self.model
        self.frame_id = str(p("frame_id"))
        self.pub_nodes = self.create_publisher(PoseArray, topics.NODE_POSITIONS, topics.sensor_qos())
        self.markers_off_nodes = has_marker_offsets(m)    # model 'marker' entries: publish the nodes behind them
        self.pub_plates = [self.create_publisher(PoseStamped, topics.plate_pose_topic(f), topics.sensor_qos())
                           for f in m.frame_names]
        self.pub_diag = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, topics.state_qos())
        self.pub_raw = self.create_publisher(PointCloud2, RAW_MARKERS, topics.sensor_qos())
        # the model it tracks, latched: the collision monitor (model from model_description) checks it
        self.pub_desc = self.create_publisher(String, topics.MODEL_DESCRIPTION, topics.latched_qos())
        self.pub_desc.publish(String(data=describe(m)))
        self.pub_rviz = (self.create_publisher(MarkerArray, RVIZ_MARKERS, topics.state_qos())
                         if self.raw_markers_rate > 0 else None)
        self.pub_clock = (self.create_publisher(Clock, CLOCK, topics.sensor_qos())
                          if self.source == "csv" and p("csv.publish_clock") else None)
        # per plate: (TF child name, publisher) and its nodes a, b, c, x-node as physical indices (built once)
        self.plates = [(f.lower(), pub) for f, pub in zip(m.frame_names, self.pub_plates)]
        self._plate_poses = [Pose() for _ in self.plates]    # TF's, reused
        self._plate_nodes = np.array([m.physical_index[[*nodes, xn]] for nodes, xn in zip(m.frame_nodes, m.frame_x)],
                                     int).reshape(-1, 4)
        self.tf = TransformBroadcaster(self) if (TransformBroadcaster and p("publish_tf")) else None

    def _init_state(self):
        """Counters and the state the worker thread and the diagnostics share."""
        m = self.model
        self.lock = threading.Lock()
        self.frames = 0
        self.latencies = []          # s: datagram read -> positions + plate poses published (since the last
        #                              diagnostics; frame_read_time)
        self.latency_ms = {}         # the last window's p50/p99 [ms] that had frames (kept while none come)
        self.system_latency = float("nan")   # s: camera mid-exposure -> received (NatNet 3+ stamps)
        self.invalid_now = m.n_physical
        self.untracked = untracked_summary(self.tracker)     # (why nodes are not tracked, counts per reason)
        self._reasons = None         # tracker.reasons_version explained last (the text is redone on a change)
        self._labels = NatNetLabelCache()     # a NatNet frame's marker labels
        self._markers = None         # (stamp [ns], points, node) of the last frame for markers/rviz, until sent
        self._next_rviz = 0.0        # perf_counter [s] when markers/rviz may go out next (raw_markers_rate)
        self.loops = 0               # CSV replay passes completed
        self._reported = {}          # counter -> value at the last diagnostics (WARN while rejects arrive)
        self.error = ""
        self.finished = False
        self._window = (time.monotonic(), 0)
        self._loss = LossWindow(time.monotonic())     # frames received vs published vs lost (bridge/loss.py)
        self._stop = threading.Event()
        self.client = None
        self.recording = None

    def _p(self, name):
        """A parameter's value; None for one left uninitialized (an empty list in a YAML file)."""
        try:
            return self.get_parameter(name).value
        except ParameterUninitializedException:
            return None

    def _new_tracker(self, marker_map=None):
        """A fresh tracker and its frame guard (start-up, and each loop of a CSV replay)."""
        old = getattr(self, "tracker", None)
        if old is not None:                  # counters of the passes before, so diagnostics keep adding up
            for key in RETIRED_COUNTS:
                self._retired[key] = self._retired.get(key, 0) + int(getattr(old.stats, key, 0))
        else:
            self._retired = {}
        self.tracker = NodeTracker(self.model, marker_map, **self.tracker_args)
        self.guard = FrameGuard(self.tracker, **self.guard_args)

    # --- sources -------------------------------------------------------------------------------------
    def _open_natnet(self):
        from tensegrity_mocap.natnet.client import NatNetClient
        p = self._p
        self.client = NatNetClient(server_address=p("natnet.server_address"), local_address=p("natnet.local_address"),
                                   multicast_address=p("natnet.multicast_address"),
                                   command_port=int(p("natnet.command_port")), data_port=int(p("natnet.data_port")),
                                   use_multicast=bool(p("natnet.use_multicast")),
                                   filter_source=bool(p("natnet.sender_filter")),
                                   source_port=int(p("natnet.sender_port")))
        version = float(p("natnet.version"))
        if version > 0:
            major = int(version)
            self.client.version = (major, int(round((version - major) * 10)))

    def _open_csv(self):
        from tensegrity_mocap.motive import read_motive_csv
        path = str(self._p("csv.path"))
        if not path:
            raise ValueError("source csv needs csv.path")
        rec = self.recording = read_motive_csv(path)
        if self.up_axis == "auto":            # Motive CSV exports carry no up axis: they are Y-up
            self.up_axis, self.up_axis_note = rec.up_axis, f"auto: the recording's ({rec.take_name or 'take'}, " \
                                                           "a Motive export, Y-up)"
        if self.stamps == "capture" and rec.n_frames and rec.times[0] < 0:
            raise ValueError(f"csv.stamps capture: {path} starts at {rec.times[0]:g} s; a stamp cannot be "
                             "negative (use csv.stamps replay_start)")
        columns = set(rec.markers) | set(rec.unlabeled)
        unknown = [label for label in self.marker_map if label not in columns]
        if unknown:
            self.get_logger().warning(f"marker_map names no marker of {path}: {', '.join(unknown)}")

    def _run(self):
        try:
            if self.source == "natnet":
                self._run_natnet()
            else:
                self._run_csv()
        except Exception as exc:          # keep the node alive and say why the stream stopped
            if self._stop.is_set() or not self.context.ok():
                return                    # shutting down: publishers are already gone
            self.error = f"{type(exc).__name__}: {exc}"
            self.get_logger().error(f"mocap stream stopped: {self.error}")

    def _run_natnet(self):
        c = self.client
        connected = False
        next_try = 0.0
        while not self._stop.is_set():
            if not connected and time.monotonic() >= next_try:
                try:
                    c.connect(timeout=1.0)
                    connected = True
                    self.get_logger().info(f"NatNet server found, version {getattr(c, 'version', '?')}")
                except Exception as exc:
                    self.error = f"no NatNet server yet ({exc})"
                    next_try = time.monotonic() + 2.0
                    if getattr(c, "version", None) is None:
                        continue
            frame = c.receive(timeout=0.1)
            if frame is None:
                self._send_rviz_markers(time.perf_counter())     # the stream paused: its last markers
                continue
            t_rx = frame_read_time(frame)
            lat = self._camera_latency(frame)
            occluded = getattr(frame, "occluded", np.zeros(len(frame.labeled_ids), bool))
            P = np.array(frame.labeled_positions, float).reshape(-1, 3)
            P[np.asarray(occluded, bool)] = np.nan
            self._process(t_rx, frame.timestamp, self._labels(frame), P,
                          np.asarray(frame.unlabeled, float).reshape(-1, 3), lat,
                          sender=frame.sender, frame_number=frame.frame_number)

    def _camera_latency(self, frame):
        """Seconds from camera mid-exposure to transmit, from the server's high-resolution clock."""
        freq = getattr(getattr(self.client, "server_info", None), "clock_frequency", None)
        mid, tx = getattr(frame, "stamp_camera_mid_exposure", None), getattr(frame, "stamp_transmit", None)
        if freq and mid and tx and tx >= mid:
            return (tx - mid) / freq
        return None

    def _run_csv(self):
        """Replay the recording paced by its capture times; stamps from them (bridge_time.py)."""
        from tensegrity_mocap.motive import replay
        rec = self.recording
        clock = ReplayTime(rec.times, rec.frame_rate, self.stamps, float(self._p("csv.rate_scale")),
                           start_ns=self.get_clock().now().nanoseconds)
        start = time.monotonic()
        while not self._stop.is_set():
            for t, names, P, U in replay(rec, named_unlabeled=True):   # unlabeled markers by column name
                delay = start + clock.due(t, self.loops) - time.monotonic()
                if delay > 0.1:
                    self._send_rviz_markers(time.perf_counter())     # a pause in the recording
                if delay > 0:
                    self._stop.wait(delay)
                if self._stop.is_set():
                    return
                stamp = clock.stamp_ns(t, self.loops)
                if self.pub_clock is not None:
                    self.pub_clock.publish(Clock(clock=stamp_msg(stamp)))
                self._process(time.perf_counter(), t, list(names), np.asarray(P, float).reshape(-1, 3),
                              np.asarray(U, float).reshape(-1, 3), None, stamp_ns=stamp)
            self._send_rviz_markers(time.perf_counter())
            if not self._p("csv.loop"):
                self.finished = True
                self.get_logger().info("CSV replay finished")
                return
            self.loops += 1
            self._new_tracker(self.marker_map)

    # --- one frame -----------------------------------------------------------------------------------
    def _process(self, t_rx, t_frame, labels, P, U, camera_latency, sender="csv", frame_number=None,
                 stamp_ns=None):
        """Track and publish one frame (t_rx [s] perf_counter at receipt, t_frame [s] the frame's time,
        stamp_ns its header stamp if known, else receive time less the camera latency); a frame the guard
        rejects is only counted."""
        P = to_ros_frame(P, self.up_axis, self.offset) if len(P) else P.reshape(0, 3)
        U = to_ros_frame(U, self.up_axis, self.offset) if len(U) else None
        X = self.guard.process(t_rx, sender, frame_number, float(t_frame), labels, P, U)
        if X is None:
            return
        status = self.tracker.marker_status      # this frame's (labeled rows, then unlabeled): read it now
        X = np.asarray(X, dtype=np.float64)      # float64 fields get Python floats, never ints
        if self.markers_off_nodes:               # the tracker follows markers; the topic carries the bar ends
            X = nodes_from_markers(self.model, X)
        if stamp_ns is None:                     # nanoseconds; a message only where one is sent (TF, rviz)
            stamp_ns = self.get_clock().now().nanoseconds
            if camera_latency is not None:
                stamp_ns -= int(camera_latency * 1e9)
                self.system_latency = camera_latency
            if stamp_ns < 0:
                X
        hb = header_bytes(*divmod(stamp_ns, 1_000_000_000), self.frame_id)   # serialized by hand: bridge/wire.py
        self.pub_nodes.publish(pose_array_bytes(hb, X))
        self._publish_plates(X, stamp_ns, hb)
        latency = time.perf_counter() - t_rx
        points, node = frame_markers(P, U, status, self.guard.max_coordinate)
        self.pub_raw.publish(self.raw_cloud.serialized(hb, points, node))
        untracked = None
        if self.tracker.reasons_version != self._reasons:     # explained again only when the reasons change
            self._reasons = self.tracker.reasons_version
            untracked = untracked_summary(self.tracker)
        with self.lock:
            self.frames += 1
            self.invalid_now = int((~np.isfinite(X[:, 0])).sum())
            self.latencies.append(latency)
            if untracked is not None:
                self.untracked = untracked
        if self.pub_rviz is not None:
            self._markers = (stamp_ns, points, node)
            if t_rx >= self._next_rviz:
                self._send_rviz_markers(t_rx)

    def _publish_plates(self, X, stamp_ns: int, hb: bytes):
        """plate_pose/<frame> (and TF) of every plate whose nodes are tracked: all frames in one call
        (``stamp_ns`` the frame's stamp [ns], ``hb`` its header serialized)."""
        if not self.plates:
            return
        idx = self._plate_nodes                               # (k, 4): a, b, c, x node
        ok = np.isfinite(X[idx, 0]).all(axis=1)
        if not ok.any():
            return
        corners = X[idx].tolist()                             # per plate: a, b, c, x node positions [m]
        h = Header(stamp=stamp_msg(stamp_ns), frame_id=self.frame_id) if self.tf is not None else None
        tfs = []
        for i in np.flatnonzero(ok).tolist():
            child, pub = self.plates[i]
            r, *axes = plate_axes(*corners[i])                # engine plate_frame's, bit for bit (plates.py)
            q = axes_quaternion(*axes)                        # once for the pose and the TF
            pub.publish(pose_stamped_bytes(hb, r, q))
            if self.tf is not None:
                tfs.append(transform_stamped(h, child, set_position_orientation(self._plate_poses[i], r, q)))
        if tfs:
            self.tf.sendTransform(tfs)

    def _send_rviz_markers(self, now: float):
        """markers/rviz: the last frame's markers, once; on the frame thread (at raw_markers_rate after a frame,
        and when the stream pauses or ends), so no other thread of the node runs Python while frames arrive."""
        if self.pub_rviz is None or self._markers is None:
            return
        (stamp_ns, points, node), self._markers = self._markers, None
        self._next_rviz = now + 1.0 / self.raw_markers_rate     # at most one a period
        self.pub_rviz.publish(self.rviz_markers(Header(stamp=stamp_msg(stamp_ns), frame_id=self.frame_id), points, node))

    # --- diagnostics ---------------------------------------------------------------------------------
    def _client_stat(self, key: str) -> int:
        """A NatNet client counter (gaps in frame numbers etc.; a CSV replay has none)."""
        stats = getattr(self.client, "stats", None)
        return int(stats.get(key, 0)) if isinstance(stats, dict) else 0

    def _publish_diagnostics(self):
        now = time.monotonic()
        with self.lock:
            lat = np.array(self.latencies)
            self.latencies = []
            frames, invalid = self.frames, self.invalid_now
            why, per_reason = self.untracked
        t0, f0 = self._window
        self._window = (now, frames)
        rate = (frames - f0) / max(now - t0, 1e-9)
        st = self.tracker.stats
        counts = {k: int(getattr(st, k)) + self._retired.get(k, 0) for k in RETIRED_COUNTS}  # all replay passes
        values = {"source": self.source, "frame_rate_hz": rate, "frames": frames, "dropped_frames": self._client_stat("dropped_frames"),
                  "invalid_nodes": invalid, **counts, **per_reason,
                  "camera_to_transmit_latency_ms": 1e3 * self.system_latency, "last_error": self.error or "-"}
        if self.source == "csv":
            values.update({"stamps": self.stamps, "replay_loops": self.loops})
        if len(lat):
            self.latency_ms = {"processing_latency_p50_ms": 1e3 * float(np.percentile(lat, 50)),
                               "processing_latency_p99_ms": 1e3 * float(np.percentile(lat, 99))}
        values.update(self.latency_ms)
        stats = getattr(self.client, "stats", None)
        if isinstance(stats, dict):
            values.update({f"natnet_{k}": v for k, v in stats.items() if not isinstance(v, dict)})
            for k, v in stats.items():
                if isinstance(v, dict):
                    values[f"natnet_{k}"] = sum(v.values())
        hostile = self._hostile_input(values)
        lossy = self._frame_loss(now, frames, values)
        if self.finished:
            level, msg = diag.WARN, f"CSV replay finished after {frames} frames"
        elif frames == 0 or rate == 0:
            level, msg = diag.ERROR, f"no frames ({self.error or 'waiting for the stream'})"
            msg += f"; rejecting input: {hostile}" if hostile else ""
        elif hostile:
            level, msg = diag.WARN, f"rejecting input: {hostile}" + (f"; {invalid} node(s) not tracked: {why}"
                                                                      if invalid else "")
        elif invalid:
            level, msg = diag.WARN, f"{invalid} node(s) not tracked: {why}"
        else:
            level, msg = diag.OK, f"tracking all {self.model.n_physical} nodes"
        if lossy and level != diag.ERROR:
            level, msg = diag.WARN, (f"{msg}; {lossy}" if level == diag.WARN else lossy)
        s = diag.status(f"{self.get_fully_qualified_name()}: tracking", self.source, level, msg, values)
        self.pub_diag.publish(diag.array(Header(stamp=self.get_clock().now().to_msg()), [s]))
        if self.finished and getattr(self, "standalone", False) and self._p("csv.exit_when_done"):
            self.get_logger().info("CSV replay finished and reported: ending the node (csv.exit_when_done)")
            raise Finished()

    def _frame_loss(self, now: float, published: int, values: dict) -> str:
        """Adds frames received / published / rejected / lost and the window's loss rate to ``values``; the
        text of a window that lost more than LOSS_WARN_PERCENT, else ""."""
        g = self.guard.stats
        received = g.accepted + sum(g.rejected.values()) - g.rejected["other_sender"]   # the tracked stream's
        loss = self._loss.update(now, received, published, self._client_stat("dropped_frames"))
        values.update(loss)
        return loss_warning(loss)

    def _hostile_input(self, values: dict) -> str:
        """Adds the reject counters to ``values``; text naming those that grew since the last report."""
        g = self.guard.stats
        counts = {"implausible_frames": g.implausible, "out_of_order_frames": g.rejected["out_of_order"],
                  "other_sender_frames": g.rejected["other_sender"],
                  "foreign_packets": self._client_stat("foreign_packets")}
        values.update(counts)
        values.update({f"implausible_{r}": g.rejected[r] for r in IMPLAUSIBLE})
        values.update({"resyncs": g.resyncs, "sender_changes": g.sender_changes,
                       "last_foreign_sender": getattr(self.client, "last_foreign_sender", None) or "-"})
        new = {k: v - self._reported.get(k, 0) for k, v in counts.items()}
        self._reported = counts
        text = [f"{n} {k.replace('_', ' ')}" for k, n in new.items() if n > 0]
        if new["foreign_packets"] > 0:
            text[-1] += f" (last from {values['last_foreign_sender']})"
        return ", ".join(text)

    def close(self):
        self._stop.set()
        if self.worker.is_alive():
            self.worker.join(timeout=2.0)
        if self.client is not None:
            try:
                self.client.close()
            except Exception:
                pass


def main(args=None):
    from tensegrity_ros_common.node_main import run
    return run(MocapBridge, args)


if __name__ == "__main__":
    raise SystemExit(main())
