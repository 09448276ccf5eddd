"""RViz markers of the robot's world: the model's obstacles (once, latched) and contact forces (arrows).

Obstacles (namespace ``obstacles``, id = obstacle index in ``model.obstacles``): a box is a CUBE of its size
and pose; a plane (a half-space) is a square slab ``plane_size`` wide and ``PLANE_THICKNESS`` thick whose top
face is the plane, centred on the foot of the robot's centroid on it; a height field is a TRIANGLE_LIST of
its grid (two triangles a cell, every k-th grid line so at most ``MAX_FIELD_CELLS`` cells a side, in world
coordinates). Names as text above each
(``obstacle_names``). Contact forces (``contact_forces``): one ARROW per contact from the contact point on
the obstacle along the force on the robot, ``force_scale`` m per N long.

The contact arrays come from ``Simulator.contacts()`` (the engine's contact dynamics): ``point`` (k, 3) m on
the obstacle surface, ``force`` (k, 3) N on the robot, ``names`` (k,) such as "n3/ground".
"""
from __future__ import annotations

import numpy as np
from geometry_msgs.msg import Point, Pose, Quaternion, Vector3
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from tensegrity_engine.model.surface import heightfield_grid
from tensegrity_ros_common.conversions import matrix_to_quaternion

PLANE_THICKNESS = 0.01      # m: the slab drawn under a plane
PLANE_COLOUR = (0.60, 0.60, 0.55, 0.6)
BOX_COLOUR = (0.45, 0.35, 0.25, 0.8)
TEXT_COLOUR = (1.0, 1.0, 1.0, 1.0)
FORCE_COLOUR = (0.95, 0.10, 0.60, 1.0)
TEXT_HEIGHT = 0.04          # m
MAX_ARROW = 2.0             # m: longer arrows are drawn this long (a hard impact would fill the view)
FIELD_COLOUR = (0.40, 0.45, 0.30, 0.9)
MAX_FIELD_CELLS = 200       # a height field's drawn cells per side (a 1000 x 1000 grid: 12 M points otherwise)


def _rgba(c) -> ColorRGBA:
    return ColorRGBA(r=float(c[0]), g=float(c[1]), b=float(c[2]), a=float(c[3]))


def _pose(centre, R) -> Pose:
    x, y, z, w = matrix_to_quaternion(R)
    cx, cy, cz = (float(v) for v in centre)
    return Pose(position=Point(x=cx, y=cy, z=cz), orientation=Quaternion(x=float(x), y=float(y), z=float(z),
                                                                        w=float(w)))


def obstacle_geometry(spec, around, plane_size: float) -> tuple:
    """(centre (3,), rotation (3, 3), full size (3,)) [m] of the CUBE drawing one ObstacleSpec; a plane's slab
    is centred below the foot of ``around`` (3,) on it."""
    centre, R, half = spec.frame()
    if spec.type != "plane":
        return centre, R, 2.0 * half
    n = R[:, 2]
    foot = around - (n @ (around - centre)) * n
    return foot - 0.5 * PLANE_THICKNESS * n, R, np.array([plane_size, plane_size, PLANE_THICKNESS])


def obstacle_markers(model, header, around, plane_size: float = 10.0) -> MarkerArray:
    """All of ``model.obstacles`` as CUBE markers (and their names as text) in ``header``'s frame."""
    out = []
    for i, spec in enumerate(model.obstacles):
        if spec.type == "heightfield":
            out.extend(heightfield_markers(spec, header, i))
            continue
        centre, R, size = obstacle_geometry(spec, np.asarray(around, float), plane_size)
        colour = PLANE_COLOUR if spec.type == "plane" else BOX_COLOUR
        out.append(Marker(header=header, ns="obstacles", id=i, type=Marker.CUBE, action=Marker.ADD,
                          pose=_pose(centre, R), scale=Vector3(x=float(size[0]), y=float(size[1]), z=float(size[2])),
                          color=_rgba(colour), text=spec.name))
        top = centre + R @ (0.5 * size * np.array([0.0, 0.0, 1.0])) + (TEXT_HEIGHT * R[:, 2])
        out.append(Marker(header=header, ns="obstacle_names", id=i, type=Marker.TEXT_VIEW_FACING,
                          action=Marker.ADD, pose=_pose(top, np.eye(3)), scale=Vector3(z=TEXT_HEIGHT),
                          color=_rgba(TEXT_COLOUR), text=spec.name))
    return MarkerArray(markers=out)


def heightfield_triangles(spec) -> np.ndarray:
    """(3 k, 3) world vertices [m] of a height field's triangles (two per drawn cell, at most
    MAX_FIELD_CELLS cells a side)."""
    P = heightfield_grid(spec, MAX_FIELD_CELLS)
    a, b, c, d = P[:-1, :-1], P[:-1, 1:], P[1:, :-1], P[1:, 1:]
    return np.stack([a, b, d, a, d, c], -2).reshape(-1, 3)


def heightfield_markers(spec, header, i: int) -> list:
    """A height field as a TRIANGLE_LIST (namespace ``obstacles``, id i) and its name above its middle."""
    tri = heightfield_triangles(spec)
    field = Marker(header=header, ns="obstacles", id=i, type=Marker.TRIANGLE_LIST, action=Marker.ADD,
                   pose=Pose(orientation=Quaternion(w=1.0)), scale=Vector3(x=1.0, y=1.0, z=1.0),
                   color=_rgba(FIELD_COLOUR), text=spec.name,
                   points=[Point(x=p[0], y=p[1], z=p[2]) for p in tri.tolist()])
    top = np.array([tri[:, 0].mean(), tri[:, 1].mean(), tri[:, 2].max() + TEXT_HEIGHT])
    name = Marker(header=header, ns="obstacle_names", id=i, type=Marker.TEXT_VIEW_FACING, action=Marker.ADD,
                  pose=_pose(top, np.eye(3)), scale=Vector3(z=TEXT_HEIGHT), color=_rgba(TEXT_COLOUR),
                  text=spec.name)
    return [field, name]


def contact_arrays(sim) -> tuple:
    """(point (k, 3) m, force (k, 3) N, names (k,)) of the simulator's current contacts."""
    c = sim.contacts()
    return (np.asarray(c.point, float).reshape(-1, 3), np.asarray(c.force, float).reshape(-1, 3),
            [str(n) for n in c.names])


def contact_markers(point, force, names, header, force_scale: float) -> MarkerArray:
    """DELETEALL, then one ARROW per contact: from the contact point along the force [N], ``force_scale`` m
    per N (at most ``MAX_ARROW`` m); each arrow's ``text`` is its contact's name."""
    out = [Marker(header=header, ns="contact_forces", action=Marker.DELETEALL)]
    colour = _rgba(FORCE_COLOUR)
    tips = point + np.clip(force_scale, 0.0, None) * force
    length = np.linalg.norm(tips - point, axis=1)
    long = length > MAX_ARROW
    tips[long] = point[long] + (tips[long] - point[long]) * (MAX_ARROW / length[long])[:, None]
    for i, (p, q, name) in enumerate(zip(point.tolist(), tips.tolist(), names)):
        out.append(Marker(header=header, ns="contact_forces", id=i, type=Marker.ARROW, action=Marker.ADD,
                          points=[Point(x=p[0], y=p[1], z=p[2]), Point(x=q[0], y=q[1], z=q[2])],
                          scale=Vector3(x=0.006, y=0.014, z=0.02), color=colour, text=name,
                          pose=Pose(orientation=Quaternion(w=1.0))))
    return MarkerArray(markers=out)
