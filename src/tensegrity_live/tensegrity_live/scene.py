"""Foxglove scene messages of a tensegrity state (pure: no rclpy; ``foxglove.messages`` objects from the
engine's model and NumPy arrays).

The robot (entity ``robot``): bars as cylinders of their radius (pose at the bar's midpoint, z axis along the
bar, height = the bar's current length, so both ends are exactly the node positions), strings as one line
list coloured by tension (blue at 0 N -> green -> red at the scale), slack strings (tension <= 0) grey at
alpha 0.3, physical nodes as spheres, plates as translucent triangles and the model's name as text; the
entity's metadata lists the bar names in order. Plate frames as frame transforms (the simulator's TF names:
``tf_prefix`` + frame name in lower case). The world (obstacles from the model), the safety-stop state, the
clearance of the closest pair, the commanded heading, goal and path, raw mocap markers, and any ROS
MarkerArray (contacts, collision markers) converted marker by marker (:func:`markers_update`).

Node rows that are not finite (an occluded mocap node) are left out with everything they touch.
"""
from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation
from foxglove.messages import (ArrowPrimitive, Color, CubePrimitive, CylinderPrimitive, FrameTransform,
                               FrameTransforms, KeyValuePair, LinePrimitive, LinePrimitiveLineType, Point3, Pose,
                               PoseInFrame,
                               Quaternion, SceneEntity, SceneEntityDeletion, SceneEntityDeletionType, SceneUpdate,
                               SpherePrimitive, TextPrimitive, Timestamp, TriangleListPrimitive, Vector3)

from tensegrity_engine.frames import model_frames
from tensegrity_engine.model.surface import heightfield_grid
from tensegrity_ros_common import appearance
from tensegrity_ros_common.appearance import (BAR_COLOUR, MIN_LINE_WIDTH, NODE_COLOUR, PLATE_BAR_COLOUR,
                                              PLATE_COLOUR, SLACK_GREY, plate_bar_mask, rotation_quaternions)
from tensegrity_ros_common.conversions import matrix_to_quaternion

SLACK_ALPHA = 0.3                           # slack strings: dimmed
SLACK_COLOUR = SLACK_GREY + (SLACK_ALPHA,)
TEXT_COLOUR = (1.0, 1.0, 1.0, 1.0)
OBSTACLE_COLOURS = {"plane": (0.60, 0.60, 0.55, 0.6), "box": (0.45, 0.35, 0.25, 0.8),
                    "heightfield": (0.40, 0.45, 0.30, 0.9)}
RUNNING_COLOUR = (0.15, 0.80, 0.25, 1.0)
STOP_COLOUR = (0.95, 0.10, 0.10, 1.0)
GOAL_COLOUR = (0.20, 0.60, 1.0, 1.0)
PATH_COLOUR = (1.0, 0.85, 0.10, 1.0)
DEFAULT_BAR_DIAMETER = 0.01  # m: a bar of radius 0 (a plate's virtual bar) is drawn this thick
TEXT_SIZE = 0.04            # m
PLANE_SIZE = 10.0           # m: a plane (half-space) is drawn as a square slab this wide ...
PLANE_THICKNESS = 0.01      # m: ... and this thick, its top face on the plane
MAX_FIELD_CELLS = 200       # a height field's drawn cells per side
# visualization_msgs/Marker types and actions (the ROS message's constants)
ARROW, CUBE, SPHERE, CYLINDER, LINE_STRIP, LINE_LIST, CUBE_LIST, SPHERE_LIST, POINTS, TEXT = range(10)
TRIANGLE_LIST = 11
DELETE, DELETEALL = 2, 3


# --- small conversions --------------------------------------------------------------------------------
def colour(rgba) -> Color:
    r, g, b, a = (float(v) for v in rgba)
    return Color(r=r, g=g, b=b, a=a)


def stamp(seconds: float) -> Timestamp:
    """A Foxglove timestamp of ``seconds`` (>= 0) [s]."""
    ns = int(round(max(float(seconds), 0.0) * 1e9))
    return Timestamp(sec=ns // 1_000_000_000, nsec=ns % 1_000_000_000)


def point(p) -> Point3:
    x, y, z = (float(v) for v in p)
    return Point3(x=x, y=y, z=z)


def pose(position, quaternion=(0.0, 0.0, 0.0, 1.0)) -> Pose:
    x, y, z = (float(v) for v in position)
    qx, qy, qz, qw = (float(v) for v in quaternion)
    return Pose(position=Vector3(x=x, y=y, z=z), orientation=Quaternion(x=qx, y=qy, z=qz, w=qw))


def tension_colours(tension, scale: float) -> np.ndarray:
    """RGBA (k, 4) of string tensions [N] (the suite's map, :func:`appearance.tension_colours`); slack strings
    (tension <= 0, or not finite) dimmed: SLACK_COLOUR."""
    return appearance.tension_colours(tension, scale, SLACK_ALPHA)


def _finite_rows(X) -> np.ndarray:
    return np.all(np.isfinite(X), axis=1)


def text_entity(entity_id: str, frame_id: str, time: Timestamp, position, text: str, rgba=TEXT_COLOUR,
                size: float = TEXT_SIZE) -> SceneEntity:
    """An entity holding one billboard text ``size`` m high at ``position`` (3,) [m]."""
    return SceneEntity(timestamp=time, frame_id=frame_id, id=entity_id, texts=[TextPrimitive(
        pose=pose(position), billboard=True, font_size=size, color=colour(rgba), text=text)])


def deletion(time: Timestamp, entity_id: str | None = None) -> SceneEntityDeletion:
    """Delete entity ``entity_id`` (None: all entities of the topic)."""
    if entity_id is None:
        return SceneEntityDeletion(timestamp=time, type=SceneEntityDeletionType.All)
    return SceneEntityDeletion(timestamp=time, type=SceneEntityDeletionType.MatchingId, id=entity_id)


# --- the robot -------------------------------------------------------------------------------------------
class RobotScene:
    """Scene updates and frame transforms of one model's states (everything fixed built once)."""

    ENTITY = "robot"

    def __init__(self, model, frame_id: str = "world", tf_prefix: str = ""):
        m = self.model = model
        self.frame_id, self.tf_prefix = frame_id, tf_prefix
        self.bar_diameter = np.where(m.bar_radius > 0, 2.0 * m.bar_radius, DEFAULT_BAR_DIAMETER)
        plate = plate_bar_mask(m)
        self.bar_colours = [colour(PLATE_BAR_COLOUR if p else BAR_COLOUR) for p in plate]
        radius = float(np.max(m.string_radius)) if len(m.string_radius) else 0.0
        self.string_width = max(MIN_LINE_WIDTH, 2.0 * radius)
        bar = float(np.max(self.bar_diameter)) if len(self.bar_diameter) else DEFAULT_BAR_DIAMETER
        self.node_diameter = 1.5 * bar
        self.metadata = [KeyValuePair(key="bars", value=",".join(m.bar_names)),
                         KeyValuePair(key="model", value=m.name)]
        self._poses = None                  # (node positions array, frame_poses of it)

    def full_positions(self, X_physical) -> np.ndarray:
        """All model nodes (n, 3) from the physical node positions (mu, 3) [m] (ValueError for a wrong shape)."""
        return self.model.from_physical(np.asarray(X_physical, float))

    def update(self, X_physical, tensions, time: Timestamp, scale: float) -> SceneUpdate:
        """The robot entity for physical node positions (mu, 3) [m] and composite string tensions
        (sigma_c,) [N] (None: all drawn as slack) coloured on ``scale`` [N]."""
        m = self.model
        X = self.full_positions(X_physical)
        ok = _finite_rows(X)
        cylinders = self._bars(X, ok)
        lines = self._strings(X, ok, tensions, scale)
        Xp = X[:m.n_physical]
        spheres = [SpherePrimitive(pose=pose(p), size=Vector3(x=self.node_diameter, y=self.node_diameter,
                                                              z=self.node_diameter), color=colour(NODE_COLOUR))
                   for p in Xp[ok[:m.n_physical]]]
        triangles = self._plates(X, ok)
        top = Xp[ok[:m.n_physical]]
        label = [] if not len(top) else [TextPrimitive(
            pose=pose(label_position(top) - [0.0, 0.0, 3 * TEXT_SIZE]), billboard=True,   # below the status texts
            font_size=TEXT_SIZE, color=colour(TEXT_COLOUR), text=m.name)]
        entity = SceneEntity(timestamp=time, frame_id=self.frame_id, id=self.ENTITY, metadata=self.metadata,
                             cylinders=cylinders, lines=lines, spheres=spheres, triangles=triangles, texts=label)
        return SceneUpdate(entities=[entity])

    def _bars(self, X, ok) -> list:
        m = self.model
        a, b = X[m.bars[:, 0]], X[m.bars[:, 1]]
        axis = b - a
        length = np.linalg.norm(axis, axis=1)
        keep = ok[m.bars].all(axis=1) & (length > 0)
        q = rotation_quaternions([0.0, 0.0, 1.0], axis[keep] / length[keep, None])
        mid = 0.5 * (a[keep] + b[keep])
        out = []
        for i, p, qi, L in zip(np.flatnonzero(keep), mid, q, length[keep]):
            d = float(self.bar_diameter[i])
            out.append(CylinderPrimitive(pose=pose(p, qi), size=Vector3(x=d, y=d, z=float(L)),
                                         bottom_scale=1.0, top_scale=1.0, color=self.bar_colours[i]))
        return out

    def _strings(self, X, ok, tensions, scale) -> list:
        m = self.model
        seg = m.segments
        if not len(seg):
            return []
        t = np.zeros(len(m.string_names)) if tensions is None else np.asarray(tensions, float)
        rgba = tension_colours(t[m.segment_string], scale)
        keep = ok[seg].all(axis=1)
        ends = X[seg[keep]].reshape(-1, 3)
        colours = [colour(c) for c in np.repeat(rgba[keep], 2, axis=0)]
        return [LinePrimitive(type=LinePrimitiveLineType.LineList, pose=pose((0, 0, 0)), thickness=self.string_width,
                              points=[point(p) for p in ends], colors=colours)]

    def _plates(self, X, ok) -> list:
        fn = np.asarray(self.model.frame_nodes).reshape(-1, 3)
        fn = fn[ok[fn].all(axis=1)]
        if not len(fn):
            return []
        return [TriangleListPrimitive(pose=pose((0, 0, 0)), points=[point(p) for p in X[fn.reshape(-1)]],
                                      color=colour(PLATE_COLOUR))]

    def frame_poses(self, X_physical) -> list:
        """[(frame name in lower case, origin (3,) [m], quaternion (x, y, z, w))] of the plates whose nodes are
        finite (the engine's frames; the last call's result again for the same array object)."""
        if self._poses is not None and self._poses[0] is X_physical:
            return self._poses[1]
        names = [f.lower() for f in self.model.frame_names]
        C = np.array(list(model_frames(self.model, self.full_positions(X_physical)).values())).reshape(-1, 4, 4)
        ok = np.all(np.isfinite(C), axis=(1, 2))
        quats = Rotation.from_matrix(C[ok, :3, :3]).as_quat() if np.any(ok) else np.zeros((0, 4))
        out = [(n, c[:3, 3], q) for n, c, q in zip([n for n, k in zip(names, ok) if k], C[ok], quats)]
        self._poses = (X_physical, out)
        return out

    def transforms(self, X_physical, time: Timestamp) -> FrameTransforms:
        """``frame_id`` -> each plate frame (tf_prefix + name in lower case) whose nodes are finite."""
        return FrameTransforms(transforms=[
            FrameTransform(timestamp=time, parent_frame_id=self.frame_id, child_frame_id=self.tf_prefix + name,
                           translation=Vector3(**dict(zip("xyz", map(float, r)))),
                           rotation=Quaternion(**dict(zip("xyzw", map(float, q)))))
            for name, r, q in self.frame_poses(X_physical)])

    def plate_poses(self, X_physical, time: Timestamp) -> list:
        """[(frame name in lower case, PoseInFrame in ``frame_id``)] of the plates whose nodes are finite."""
        return [(name, PoseInFrame(timestamp=time, frame_id=self.frame_id, pose=pose(r, q)))
                for name, r, q in self.frame_poses(X_physical)]


def frame_transform(time: Timestamp, parent: str, child: str, C) -> FrameTransform:
    """The transform parent -> child of a 4x4 pose ``C`` (child coordinates to parent coordinates) [m]."""
    x, y, z = (float(v) for v in C[:3, 3])
    qx, qy, qz, qw = (float(v) for v in matrix_to_quaternion(C[:3, :3]))
    return FrameTransform(timestamp=time, parent_frame_id=parent, child_frame_id=child,
                          translation=Vector3(x=x, y=y, z=z), rotation=Quaternion(x=qx, y=qy, z=qz, w=qw))


# --- the world -------------------------------------------------------------------------------------------
def world_update(model, frame_id: str, time: Timestamp, around=(0.0, 0.0, 0.0)) -> SceneUpdate:
    """The model's obstacles as entity ``world``: boxes as cubes, a plane as a slab whose top face is the plane
    (centred under ``around`` (3,) [m], the robot), a height field as triangles; names as text."""
    cubes, triangles, texts = [], [], []
    around = np.asarray(around, float)
    for spec in model.obstacles:
        centre, R, half = spec.frame()
        rgba = colour(OBSTACLE_COLOURS.get(spec.type, OBSTACLE_COLOURS["box"]))
        if spec.type == "heightfield":
            P = heightfield_grid(spec, MAX_FIELD_CELLS)
            a, b, c, d = P[:-1, :-1], P[:-1, 1:], P[1:, :-1], P[1:, 1:]
            corners = np.stack([a, b, d, a, d, c], -2).reshape(-1, 3)
            triangles.append(TriangleListPrimitive(pose=pose((0, 0, 0)), points=[point(p) for p in corners],
                                                   color=rgba))
            label = [corners[:, 0].mean(), corners[:, 1].mean(), corners[:, 2].max()]
        else:
            size = 2.0 * half
            if spec.type == "plane":
                normal = R[:, 2]
                centre = around - normal @ (around - centre) * normal - 0.5 * PLANE_THICKNESS * normal
                size = np.array([PLANE_SIZE, PLANE_SIZE, PLANE_THICKNESS])
            x, y, z = (float(v) for v in size)
            cubes.append(CubePrimitive(pose=pose(centre, matrix_to_quaternion(R)), size=Vector3(x=x, y=y, z=z),
                                       color=rgba))
            label = centre + R[:, 2] * (0.5 * size[2])
        texts.append(TextPrimitive(pose=pose(np.asarray(label) + [0.0, 0.0, TEXT_SIZE]), billboard=True,
                                   font_size=TEXT_SIZE, color=colour(TEXT_COLOUR), text=spec.name))
    return SceneUpdate(entities=[SceneEntity(timestamp=time, frame_id=frame_id, id="world", cubes=cubes,
                                             triangles=triangles, texts=texts)])


# --- state overlays --------------------------------------------------------------------------------------
def label_position(X_physical) -> np.ndarray:
    """A point [m] above the robot's finite nodes (the origin if none is finite), for status texts."""
    X = np.asarray(X_physical, float).reshape(-1, 3)
    X = X[_finite_rows(X)]
    if not len(X):
        return np.zeros(3)
    return np.r_[X[:, :2].mean(axis=0), X[:, 2].max() + 6 * TEXT_SIZE]


STALE_COLOUR = (1.0, 0.55, 0.0, 1.0)


def status_update(stopped: bool | None, frame_id: str, time: Timestamp, position,
                  stale_s: float | None = None) -> SceneUpdate:
    """The safety-stop state as text: green 'running', red 'SAFETY STOP', grey 'no safety_stop yet' (None);
    with ``stale_s`` [s] a second, orange line above it: 'node positions stale: 3.2 s' (what is shown is old)."""
    text, rgba = (("SAFETY STOP", STOP_COLOUR) if stopped else ("running", RUNNING_COLOUR) if stopped is not None
                  else ("no safety_stop yet", SLACK_COLOUR[:3] + (1.0,)))
    lines = [(position, text, rgba)]
    if stale_s is not None:
        lines.append((np.asarray(position, float) + [0.0, 0.0, 4 * TEXT_SIZE],
                      f"node positions stale: {stale_s:.1f} s", STALE_COLOUR))
    texts = [TextPrimitive(pose=pose(p), billboard=True, font_size=1.5 * TEXT_SIZE, color=colour(c), text=t)
             for p, t, c in lines]
    return SceneUpdate(entities=[SceneEntity(timestamp=time, frame_id=frame_id, id="safety", texts=texts)])


def clearance_text(min_m: float, pair: str) -> str:
    """'12.3 mm b1-b4' (the closest pair's clearance [m] in mm)."""
    return f"{1e3 * min_m:.1f} mm {pair}".strip()


def clearance_update(min_m: float, pair: str, frame_id: str, time: Timestamp, position) -> SceneUpdate:
    """The closest pair's clearance as text at ``position`` (3,) [m]."""
    return SceneUpdate(entities=[text_entity("clearance_text", frame_id, time, position,
                                             clearance_text(min_m, pair), (1.0, 0.8, 0.2, 1.0))])


def arrow(start, end, rgba, shaft_diameter: float = 0.01) -> ArrowPrimitive | None:
    """An arrow from ``start`` to ``end`` (3,) [m] (None when they coincide); the head a quarter of its length."""
    start, end = np.asarray(start, float), np.asarray(end, float)
    v = end - start
    length = float(np.linalg.norm(v))
    if not (length > 0 and np.isfinite(length)):
        return None
    q = rotation_quaternions([1.0, 0.0, 0.0], v / length)[0]
    return ArrowPrimitive(pose=pose(start, q), shaft_length=0.75 * length, shaft_diameter=shaft_diameter,
                          head_length=0.25 * length, head_diameter=2.5 * shaft_diameter, color=colour(rgba))


def goal_update(frame_id: str, time: Timestamp, origin, heading=None, goal=None, plate_goal=None,
                path=None, heading_length: float = 0.5) -> SceneUpdate:
    """Commanded heading (unit (2,) or None) as an arrow ``heading_length`` m from ``origin`` (3,); the goal
    point (3,) as a sphere; the plate goal (4, 4) as an x/y/z axes triad; the path (k, 3) [m] as a line strip."""
    arrows, spheres, lines = [], [], []
    if heading is not None:
        h = np.r_[np.asarray(heading, float)[:2], 0.0]
        a = arrow(origin, np.asarray(origin, float) + heading_length * h, GOAL_COLOUR)
        arrows += [a] if a is not None else []
    if goal is not None:
        spheres.append(SpherePrimitive(pose=pose(goal), size=Vector3(x=0.08, y=0.08, z=0.08),
                                       color=colour(GOAL_COLOUR)))
    if plate_goal is not None:
        C = np.asarray(plate_goal, float)
        for k, rgb in enumerate(((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))):
            a = arrow(C[:3, 3], C[:3, 3] + 0.1 * C[:3, k], rgb + (1.0,), 0.006)
            arrows += [a] if a is not None else []
    if path is not None and len(path) > 1:
        lines.append(LinePrimitive(type=LinePrimitiveLineType.LineStrip, pose=pose((0, 0, 0)), thickness=0.01,
                                   points=[point(p) for p in np.asarray(path, float)], color=colour(PATH_COLOUR)))
    return SceneUpdate(entities=[SceneEntity(timestamp=time, frame_id=frame_id, id="goal", arrows=arrows,
                                             spheres=spheres, lines=lines)])


RAW_MARKER_COLOURS = {"assigned": (0.15, 0.85, 0.25, 1.0), "unassigned": (1.0, 0.55, 0.0, 1.0),
                      "excluded": (0.6, 0.6, 0.6, 1.0)}


def raw_markers_update(points, node, frame_id: str, time: Timestamp, diameter: float = 0.014) -> SceneUpdate:
    """Raw mocap markers (k, 3) [m] as spheres: assigned to a node (node >= 0) green, unassigned (-1) orange,
    excluded (-2) grey."""
    spheres = []
    size = Vector3(x=diameter, y=diameter, z=diameter)
    for p, n in zip(np.asarray(points, float).reshape(-1, 3), np.asarray(node).ravel()):
        if np.all(np.isfinite(p)):
            kind = "assigned" if n >= 0 else "unassigned" if n == -1 else "excluded"
            spheres.append(SpherePrimitive(pose=pose(p), size=size, color=colour(RAW_MARKER_COLOURS[kind])))
    return SceneUpdate(entities=[SceneEntity(timestamp=time, frame_id=frame_id, id="raw_markers", spheres=spheres)])


# --- ROS MarkerArray -> SceneUpdate --------------------------------------------------------------------
def _xyz(v) -> tuple:
    return (float(v.x), float(v.y), float(v.z))


def _marker_pose(mk) -> Pose:
    p, q = mk.pose.position, mk.pose.orientation
    return pose(_xyz(p), (float(q.x), float(q.y), float(q.z), float(q.w)))


def _marker_rgba(c) -> tuple:
    return (float(c.r), float(c.g), float(c.b), float(c.a))


def _marker_primitives(mk) -> dict:
    """{SceneEntity field: [primitives]} of one visualization_msgs/Marker (types this suite publishes)."""
    rgba, size = colour(_marker_rgba(mk.color)), Vector3(x=float(mk.scale.x), y=float(mk.scale.y),
                                                           z=float(mk.scale.z))
    pts = [_xyz(p) for p in mk.points]
    if mk.type == ARROW and len(pts) >= 2:
        a = arrow(pts[0], pts[1], _marker_rgba(mk.color), float(mk.scale.x))
        return {"arrows": [a] if a is not None else []}
    if mk.type == ARROW:
        return {"arrows": [ArrowPrimitive(pose=_marker_pose(mk), shaft_length=0.8 * float(mk.scale.x),
                                          shaft_diameter=float(mk.scale.y), head_length=0.2 * float(mk.scale.x),
                                          head_diameter=float(mk.scale.z), color=rgba)]}
    single = {CUBE: ("cubes", CubePrimitive), SPHERE: ("spheres", SpherePrimitive)}
    if mk.type in single:
        field, cls = single[mk.type]
        return {field: [cls(pose=_marker_pose(mk), size=size, color=rgba)]}
    if mk.type == CYLINDER:
        return {"cylinders": [CylinderPrimitive(pose=_marker_pose(mk), size=size, bottom_scale=1.0, top_scale=1.0,
                                                color=rgba)]}
    if mk.type in (CUBE_LIST, SPHERE_LIST, POINTS):
        field, cls = ("cubes", CubePrimitive) if mk.type == CUBE_LIST else ("spheres", SpherePrimitive)
        return {field: [cls(pose=pose(p), size=size, color=rgba) for p in pts]}
    if mk.type in (LINE_STRIP, LINE_LIST):
        kind = LinePrimitiveLineType.LineStrip if mk.type == LINE_STRIP else LinePrimitiveLineType.LineList
        colours = [colour(_marker_rgba(c)) for c in mk.colors] if len(mk.colors) == len(pts) else None
        return {"lines": [LinePrimitive(type=kind, pose=_marker_pose(mk), thickness=float(mk.scale.x),
                                        points=[point(p) for p in pts], color=rgba, colors=colours)]}
    if mk.type == TEXT:
        return {"texts": [TextPrimitive(pose=_marker_pose(mk), billboard=True, font_size=float(mk.scale.z),
                                        color=rgba, text=str(mk.text))]}
    if mk.type == TRIANGLE_LIST:
        return {"triangles": [TriangleListPrimitive(pose=_marker_pose(mk), points=[point(p) for p in pts],
                                                    color=rgba)]}
    return {}


def markers_update(markers, time: Timestamp, default_frame: str = "world") -> SceneUpdate:
    """A ROS visualization_msgs/MarkerArray (any object with its fields) as a SceneUpdate: one entity per
    marker, id '<ns>/<id>'; DELETE and DELETEALL become deletions. Marker types without a Foxglove primitive
    (meshes) are left out."""
    deletions, entities = [], []
    for mk in markers.markers:
        entity_id = f"{mk.ns}/{mk.id}"
        if mk.action == DELETEALL:
            deletions.append(deletion(time))
            entities = []
            continue
        if mk.action == DELETE:
            deletions.append(deletion(time, entity_id))
            continue
        primitives = _marker_primitives(mk)
        if primitives:
            entities.append(SceneEntity(timestamp=time, frame_id=str(mk.header.frame_id) or default_frame,
                                        id=entity_id, **primitives))
    return SceneUpdate(deletions=deletions, entities=entities)
