"""What the mocap bridge tells about the markers themselves: the raw markers of a frame with the node each
was assigned to (``sensor_msgs/PointCloud2`` ``markers/raw``, ``visualization_msgs/MarkerArray``
``markers/rviz``) and the diagnostics text that explains why nodes are not tracked.

``markers/raw``: one point per marker of an accepted frame that has a position (occluded and invalid
markers - not finite, beyond ``tracking.max_coordinate`` - are left out), in the robot's world frame
(after the axis conversion and ``world_offset``), fields ``x``, ``y``, ``z`` [m] and ``node`` (all float32,
little endian, 16 bytes a point): the index of the physical node (model order, as in ``node_positions``)
the marker was assigned to, :data:`UNASSIGNED` (-1: a stray or unused marker) or :data:`EXCLUDED` (-2: its
label matches ``tracking.exclude``). Built by hand (``sensor_msgs_py`` is not a dependency);
:func:`cloud_arrays` reads one back.

``markers/rviz``: the same markers as spheres (assigned: green, with the node's name as a label above it;
unassigned: orange; excluded: grey) after a DELETEALL, at ``raw_markers_rate``.
"""
from __future__ import annotations

import numpy as np
from geometry_msgs.msg import Point, Pose, Quaternion, Vector3
from sensor_msgs.msg import PointCloud2, PointField
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from tensegrity_mocap.bridge.wire import point_cloud_bytes, point_fields_bytes
from tensegrity_mocap.tracking import tracker as tracking
from tensegrity_mocap.tracking.plausibility import absurd_rows

RAW_MARKERS = "markers/raw"        # sensor_msgs/PointCloud2, every accepted frame (SensorDataQoS)
RVIZ_MARKERS = "markers/rviz"      # visualization_msgs/MarkerArray at raw_markers_rate (reliable)
CLOCK = "/clock"                   # rosgraph_msgs/Clock of a CSV replay (absolute: the ROS convention)

UNASSIGNED, EXCLUDED, INVALID = tracking.UNASSIGNED, tracking.EXCLUDED_MARKER, tracking.INVALID_MARKER  # -1, -2, -3
CLOUD_FIELDS = ("x", "y", "z", "node")
_POINT_STEP = 4 * len(CLOUD_FIELDS)
SPHERE_DIAMETER = 0.014            # m, a typical passive marker
LABEL_HEIGHT = 0.025               # m, text height of the node name
COLOURS = {"assigned": (0.15, 0.85, 0.25), "unassigned": (1.0, 0.55, 0.0), "excluded": (0.6, 0.6, 0.6)}
# why a node is not tracked (NodeTracker.reasons), reported as untracked_<reason> counts
REASONS = tuple(r for r in tracking.REASONS if r != "tracked")


# --- markers of one frame ------------------------------------------------------------------------------
def frame_markers(P, U, status, max_coordinate: float = np.inf):
    """(points (k,3) [m], node (k,) int) of the markers of one accepted frame.

    ``P`` (labeled rows) and ``U`` (unlabeled rows) are what went to the frame guard, ``status`` the
    tracker's ``marker_status`` of that frame (labeled rows, then the unlabeled rows it was given: the
    guard removes absurd unlabeled rows from a frame that starts or resyncs a stream). Markers that are
    not finite, beyond ``max_coordinate`` or invalid are left out."""
    P = np.asarray(P, float).reshape(-1, 3)
    U = np.zeros((0, 3)) if U is None else np.asarray(U, float).reshape(-1, 3)
    status = np.asarray(status, np.int64).ravel()
    if len(status) != len(P) + len(U):
        U = U[~absurd_rows(U, max_coordinate)]
    A = np.concatenate([P, U]) if len(U) else P
    if len(status) != len(A):                       # cannot happen with the guard; never say anything wrong
        status = np.full(len(A), UNASSIGNED, np.int64)
    with np.errstate(invalid="ignore"):
        keep = np.isfinite(A).all(axis=1) & (np.abs(A) <= max_coordinate).all(axis=1) & (status >= EXCLUDED)
    return A[keep], status[keep]


class MarkerCloud:
    """Builds :func:`marker_cloud` messages with its fields made once and the point buffer reused (a frame
    thread's every-frame message: no per-frame PointField objects)."""

    def __init__(self):
        self.fields = [PointField(name=n, offset=4 * i, datatype=PointField.FLOAT32, count=1)
                       for i, n in enumerate(CLOUD_FIELDS)]
        self._data = np.empty((0, len(CLOUD_FIELDS)), "<f4")
        self._fields_bytes = point_fields_bytes([(f.name, f.offset, f.datatype, f.count) for f in self.fields])

    def _points(self, points, node) -> np.ndarray:
        points = np.asarray(points, float).reshape(-1, 3)
        if len(self._data) != len(points):
            self._data = np.empty((len(points), len(CLOUD_FIELDS)), "<f4")
        self._data[:, :3] = points
        self._data[:, 3] = np.asarray(node, float).ravel()
        return self._data

    def __call__(self, header, points, node) -> PointCloud2:
        data = self._points(points, node)
        return PointCloud2(header=header, height=1, width=len(data), fields=self.fields, is_bigendian=False,
                           point_step=_POINT_STEP, row_step=_POINT_STEP * len(data), data=data.tobytes(),
                           is_dense=True)

    def serialized(self, header: bytes, points, node) -> bytes:
        """The same message serialized (``header``: :func:`~tensegrity_mocap.bridge.wire.header_bytes`), for
        ``Publisher.publish(bytes)``: no per-frame message object (bridge/wire.py)."""
        data = self._points(points, node)
        return point_cloud_bytes(header, self._fields_bytes, len(data), _POINT_STEP, data.tobytes())


def marker_cloud(header, points, node) -> PointCloud2:
    """PointCloud2 of ``points`` (k,3) [m] with the float32 field ``node`` (see the module docstring)."""
    return MarkerCloud()(header, points, node)


def cloud_arrays(msg: PointCloud2):
    """(points (k,3) float64 [m], node (k,) int) from a :func:`marker_cloud` message (any field order and
    point step, little or big endian float32 fields)."""
    offsets = {f.name: f.offset for f in msg.fields if f.datatype == PointField.FLOAT32}
    if not all(n in offsets for n in CLOUD_FIELDS):
        raise ValueError(f"PointCloud2 needs float32 fields {', '.join(CLOUD_FIELDS)}; has {sorted(offsets)}")
    n = msg.width * msg.height
    raw = np.frombuffer(bytes(msg.data), np.uint8)[:n * msg.point_step].reshape(n, msg.point_step)
    dtype = np.dtype(">f4" if msg.is_bigendian else "<f4")

    def col(name):
        o = offsets[name]
        return raw[:, o:o + 4].copy().view(dtype).ravel().astype(float)

    points = np.column_stack([col("x"), col("y"), col("z")]) if n else np.zeros((0, 3))
    return points, np.rint(col("node")).astype(np.int64) if n else np.zeros(0, np.int64)


def _colour(name: str) -> ColorRGBA:
    r, g, b = COLOURS[name]
    return ColorRGBA(r=r, g=g, b=b, a=1.0)


class RvizMarkers:
    """Builds the ``markers/rviz`` MarkerArray: DELETEALL, one sphere list (coloured by status) and the
    node's name above every assigned marker. ROS message objects are slow to construct (~20 us each), so
    the label markers and colours are made once per node and only their positions change."""

    def __init__(self, node_names):
        self.node_names = [str(n) for n in node_names]
        self.colours = [_colour(k) for k in ("assigned", "unassigned", "excluded")]
        d = SPHERE_DIAMETER
        self.spheres = Marker(ns="markers", id=0, type=Marker.SPHERE_LIST, action=Marker.ADD,
                              pose=Pose(orientation=Quaternion(w=1.0)), scale=Vector3(x=d, y=d, z=d),
                              color=ColorRGBA(r=1.0, g=1.0, b=1.0, a=1.0))
        self.labels = {}

    def _label(self, k: int) -> Marker:
        m = self.labels.get(k)
        if m is None:
            m = self.labels[k] = Marker(ns="labels", id=k, type=Marker.TEXT_VIEW_FACING, action=Marker.ADD,
                                        text=self.node_names[k], scale=Vector3(z=LABEL_HEIGHT),
                                        pose=Pose(orientation=Quaternion(w=1.0)), color=self.colours[0])
        return m

    def __call__(self, header, points, node) -> MarkerArray:
        points = np.asarray(points, float).reshape(-1, 3)
        node = np.asarray(node, np.int64).ravel()
        out = [Marker(header=header, action=Marker.DELETEALL)]
        if len(points):
            kind = np.where(node >= 0, 0, np.where(node == EXCLUDED, 2, 1))
            self.spheres.header = header
            self.spheres.points = [Point(x=x, y=y, z=z) for x, y, z in points.tolist()]
            self.spheres.colors = [self.colours[c] for c in kind.tolist()]
            out.append(self.spheres)
            for (x, y, z), k in zip(points.tolist(), node.tolist()):
                if 0 <= k < len(self.node_names):
                    m = self._label(k)
                    m.header = header
                    p = m.pose.position
                    p.x, p.y, p.z = x, y, z + SPHERE_DIAMETER
                    out.append(m)
        return MarkerArray(markers=out)


def rviz_markers(header, points, node, node_names) -> MarkerArray:
    """One ``markers/rviz`` MarkerArray (see :class:`RvizMarkers`, which a node keeps to reuse messages)."""
    return RvizMarkers(node_names)(header, points, node)


# --- why nodes are not tracked -------------------------------------------------------------------------
def untracked_summary(tracker) -> tuple:
    """(text, values) on the nodes the tracker did not track in its last frame: its own explanation
    (:meth:`NodeTracker.explain`: nodes grouped by reason with the parameter to change; "" when every node
    is tracked) and per reason the number of nodes (``untracked_<reason>``, every reason, 0 when none)."""
    values = dict.fromkeys((f"untracked_{r}" for r in REASONS), 0)
    for r in tracker.reasons:
        if r != "tracked":
            values[f"untracked_{r}"] = values.get(f"untracked_{r}", 0) + 1
    return tracker.explain(), values
