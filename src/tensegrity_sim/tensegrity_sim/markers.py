"""RViz markers of a tensegrity state: bars as cylinders (their radii), strings as one line list coloured
by tension, physical nodes as one sphere list, plates (model frames) as translucent triangles.

Namespaces and ids are stable: ``bars`` id = bar index, ``strings`` id 0, ``nodes`` id 0, ``plates`` id 0,
so RViz updates markers in place. Static fields and all point, colour and pose objects are built once;
each update only writes coordinates and colours into them (rclpy's message constructors check every
field: rebuilding ~200 of them cost 2.7 ms per update, updating them in place a fraction of that).
"""
from __future__ import annotations

import numpy as np
from builtin_interfaces.msg import Duration
from geometry_msgs.msg import Point, Pose, Quaternion, Vector3
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from tensegrity_ros_common.appearance import (BAR_COLOUR, MIN_LINE_WIDTH, NODE_COLOUR, PLATE_BAR_COLOUR,
                                              PLATE_COLOUR, plate_bar_mask, rotation_quaternions, tension_colours)

Z = (0.0, 0.0, 1.0)


def _rgba(c) -> ColorRGBA:
    return ColorRGBA(r=float(c[0]), g=float(c[1]), b=float(c[2]), a=float(c[3]))


def _set_points(points, xyz):
    """Write coordinates (k,3) [m] into k existing Point objects."""
    for pt, (x, y, z) in zip(points, np.asarray(xyz, float).tolist()):
        pt.x, pt.y, pt.z = x, y, z


def _set_colours(colours, rgba):
    """Write colours (k,4) into k existing ColorRGBA objects."""
    for c, (r, g, b, a) in zip(colours, np.asarray(rgba, float).tolist()):
        c.r, c.g, c.b, c.a = r, g, b, a


class MarkerBuilder:
    def __init__(self, model, frame_id: str = "world", node_radius: float = 0.015, tension_max: float = 0.0):
        self.model = model
        self.frame_id = frame_id
        m = model
        self.tension_max = float(tension_max) if tension_max > 0 else 1.0
        self._auto_tmax = not tension_max > 0
        forever = Duration(sec=0, nanosec=0)
        self.bar_markers = []
        plate = set(np.flatnonzero(plate_bar_mask(m)).tolist())
        for i, name in enumerate(m.bar_names):
            mk = Marker(ns="bars", id=i, type=Marker.CYLINDER, action=Marker.ADD, lifetime=forever)
            d = 2.0 * float(m.bar_radius[i]) if m.bar_radius[i] > 0 else 0.01
            mk.scale = Vector3(x=d, y=d, z=float(m.bar_length[i]))
            mk.color = _rgba(PLATE_BAR_COLOUR if i in plate else BAR_COLOUR)
            mk.pose = Pose(orientation=Quaternion(w=1.0))
            self.bar_markers.append(mk)
        width = max(MIN_LINE_WIDTH, 2.0 * float(np.max(m.string_radius)) if len(m.string_radius) else 0.0)
        self.strings = Marker(ns="strings", id=0, type=Marker.LINE_LIST, action=Marker.ADD, lifetime=forever,
                              scale=Vector3(x=width, y=0.0, z=0.0), pose=Pose(orientation=Quaternion(w=1.0)))
        self.nodes = Marker(ns="nodes", id=0, type=Marker.SPHERE_LIST, action=Marker.ADD, lifetime=forever,
                            scale=Vector3(x=2 * node_radius, y=2 * node_radius, z=2 * node_radius),
                            color=_rgba(NODE_COLOUR), pose=Pose(orientation=Quaternion(w=1.0)))
        self.strings.points = [Point() for _ in range(2 * len(m.segments))]
        self.strings.colors = [ColorRGBA() for _ in range(2 * len(m.segments))]
        self.nodes.points = [Point() for _ in range(m.n_physical)]
        self.plates = None
        if len(m.frame_names):
            self.plates = Marker(ns="plates", id=0, type=Marker.TRIANGLE_LIST, action=Marker.ADD,
                                 lifetime=forever, scale=Vector3(x=1.0, y=1.0, z=1.0), color=_rgba(PLATE_COLOUR),
                                 pose=Pose(orientation=Quaternion(w=1.0)))
            self.plates.points = [Point() for _ in range(3 * len(m.frame_names))]

    def build(self, X, tensions, header) -> MarkerArray:
        """MarkerArray for node positions X (n,3) [m] (all model nodes) and string tensions [N]."""
        m = self.model
        X = np.asarray(X, float)
        a, b = X[m.bars[:, 0]], X[m.bars[:, 1]]
        axis = b - a
        length = np.linalg.norm(axis, axis=1)
        q = rotation_quaternions(Z, axis / np.maximum(length, 1e-12)[:, None])
        mid = 0.5 * (a + b)
        out = []
        for mk, (mx, my, mz), (qx, qy, qz, qw) in zip(self.bar_markers, mid.tolist(), q.tolist()):
            mk.header = header
            pos, rot = mk.pose.position, mk.pose.orientation
            pos.x, pos.y, pos.z = mx, my, mz
            rot.x, rot.y, rot.z, rot.w = qx, qy, qz, qw
            out.append(mk)
        tensions = np.asarray(tensions, float)
        if self._auto_tmax and len(tensions):
            self.tension_max = max(self.tension_max, 1.5 * float(np.max(tensions)))
        seg_t = tensions[m.segment_string] if len(tensions) else np.zeros(len(m.segments))
        colours = tension_colours(seg_t, self.tension_max)
        self.strings.header = header
        _set_points(self.strings.points, X[m.segments.reshape(-1)])
        _set_colours(self.strings.colors, np.repeat(colours, 2, axis=0))
        out.append(self.strings)
        self.nodes.header = header
        _set_points(self.nodes.points, X[:m.n_physical])
        out.append(self.nodes)
        if self.plates is not None:
            self.plates.header = header
            _set_points(self.plates.points, X[m.frame_nodes.reshape(-1)])
            out.append(self.plates)
        return MarkerArray(markers=out)
