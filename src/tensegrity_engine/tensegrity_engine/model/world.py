"""The robot's world in a model file: static obstacles (planes and oriented boxes) with their contact
parameters (schema in ``docs/model_schema.md``, section "Obstacles and contact")::

    obstacles:
      - {name: ground, type: plane}                           # z = 0, the robot above it (normal +z)
      - {name: ramp, type: plane, normal: [0, -0.26, 0.97], point: [0, 0, 0.1], friction: 0.9}
      - {name: step, type: box, centre: [0.5, 0, 0.05], size: [0.2, 1.0, 0.1], rpy: [0, 0, 0.3]}
      - {name: rough, type: heightfield, origin: [-1, -1, 0], cell: 0.1, heights: [[0, 0.02], [0.01, 0]]}

A plane is the half-space behind it: everything on the side its ``normal`` points away from is solid.
A box is solid inside; ``size`` gives its full extents [m] along its own axes, ``rpy`` [rad] its orientation
(roll, pitch, yaw about the fixed x, y, z axes, REP-103).
A height field is uneven ground: solid below the surface z = origin_z + H(x, y), H interpolated bilinearly
in a grid of heights [m]: ``heights[j][i]`` at x = origin_x + i cell_x, y = origin_y + j cell_y (row j along
y, column i along x; at least 2 x 2); ``cell`` is one spacing [m] or [cell_x, cell_y]. Instead of
``heights``, ``file: ground.csv`` reads the rows from a text file (numbers separated by commas or spaces,
one row a line) relative to the model file; the model writer writes the heights inline. The solid is a
column over the grid's footprint with vertical side walls.

Contact parameters, per obstacle (defaults in brackets; the law is in :mod:`~tensegrity_engine.dynamics.contact`):

* ``friction`` μ [0.8]: Coulomb friction, static = kinetic (a robot on a slope below atan μ stays put);
* ``restitution`` e [0.2]: the ratio of rebound to impact speed for a body landing flat on it (0 <= e <= 1);
* ``contact_time`` [0.01 s]: how long an undamped contact lasts (half a period of the contact spring on the
  touching mass). It sets the stiffness: a body resting on the obstacle sinks in by g (contact_time / π)²
  (0.1 mm at the default). Keep it at least ten integration steps long (the real-time simulator's default
  step is 1 ms).
"""
from __future__ import annotations

import math
from pathlib import Path
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from tensegrity_engine.model.checks import MAX_COORDINATE, MAX_FILE_BYTES, Checker, show

OBSTACLE_TYPES = ("plane", "box", "heightfield")
MAX_OBSTACLES = 1_000
FRICTION_DEFAULT = 0.8
RESTITUTION_DEFAULT = 0.2
CONTACT_TIME_DEFAULT = 0.01           # s
CONTACT_TIME_RANGE = (1e-4, 1.0)      # s: a 0.1 ms contact needs 10 µs steps; a 1 s one sinks by 1 m under g
MAX_OBSTACLE_FRICTION = 10.0          # μ; rubber on concrete is about 1
MAX_HEIGHTFIELD_POINTS = 1_000_000    # grid points of one height field (1000 x 1000: 8 MB of heights)
_KEYS = {"plane": {"name", "type", "normal", "point", "friction", "restitution", "contact_time"},
         "box": {"name", "type", "centre", "size", "rpy", "friction", "restitution", "contact_time"},
         "heightfield": {"name", "type", "origin", "cell", "heights", "file", "friction", "restitution",
                         "contact_time"}}


@dataclass(frozen=True)
class ObstacleSpec:
    """One obstacle as written in the file (lengths in m, angles in rad)."""
    name: str
    type: str                      # "plane", "box" or "heightfield"
    normal: tuple = (0.0, 0.0, 1.0)     # plane: unit normal, out of the solid
    point: tuple = (0.0, 0.0, 0.0)      # plane: a point on its surface
    centre: tuple = (0.0, 0.0, 0.0)     # box
    size: tuple = (0.0, 0.0, 0.0)       # box: full extents along its axes
    rpy: tuple = (0.0, 0.0, 0.0)        # box: roll, pitch, yaw about the fixed x, y, z axes
    origin: tuple = (0.0, 0.0, 0.0)     # heightfield: world point of heights[0][0] (its z added to all)
    cell: tuple = (0.0, 0.0)            # heightfield: grid spacing along x and y
    heights: tuple = ()                 # heightfield: rows (along y) of heights (along x)
    friction: float = FRICTION_DEFAULT
    restitution: float = RESTITUTION_DEFAULT
    contact_time: float = CONTACT_TIME_DEFAULT

    def frame(self) -> tuple:
        """(centre (3,), rotation (3, 3) with the local axes as columns, half extents (3,)) as the collision
        kernels take them: a plane's frame has its normal as third column and the plane's point nearest the
        origin as centre; a height field's is its origin, the identity and (cell_x, cell_y, 0)."""
        if self.type == "heightfield":
            return np.asarray(self.origin, float), np.eye(3), np.array([*self.cell, 0.0])
        if self.type == "plane":
            n = np.asarray(self.normal, float)
            return float(n @ np.asarray(self.point, float)) * n, plane_frame(n), np.zeros(3)
        R = Rotation.from_euler("xyz", self.rpy).as_matrix()
        return np.asarray(self.centre, float), R, 0.5 * np.asarray(self.size, float)


def plane_frame(n) -> np.ndarray:
    """A rotation (3, 3) whose third column is the unit vector n (a plane's frame: x, y in the plane)."""
    n = np.asarray(n, float)
    t = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(t, n)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(n, x), n])


def plane(name: str = "ground", height: float = 0.0, **contact) -> ObstacleSpec:
    """A horizontal ground plane at z = ``height`` [m] with the given contact parameters."""
    return ObstacleSpec(name, "plane", point=(0.0, 0.0, float(height)), **contact)


def read_obstacles(c: Checker, seen: dict, data: dict) -> list:
    """The ObstacleSpecs of the file's ``obstacles`` list (names unique with the other elements via ``seen``)."""
    out = []
    for i, item, kind in c.typed_items("obstacles", data.get("obstacles"), MAX_OBSTACLES,
                                       "write 'obstacles: [- {name: ground, type: plane}]'", OBSTACLE_TYPES,
                                       "write 'type: plane' (a half-space such as the ground), 'type: box' "
                                       "or 'type: heightfield' (uneven ground)"):
        c.keys(f"obstacles[{i}]", item, _KEYS[kind], ("name", "type"))
        nm = c.name("obstacles", i, item, seen)
        el = f"obstacle '{nm}'"
        contact = _contact(c, el, item)
        out.append(_READERS[kind](c, el, nm, item, contact))
    return out


def _contact(c: Checker, el: str, item: dict) -> dict:
    lo, hi = CONTACT_TIME_RANGE
    friction = c.number(el, "friction", item.get("friction", FRICTION_DEFAULT), minimum=0.0,
                        maximum=MAX_OBSTACLE_FRICTION)
    restitution = c.number(el, "restitution", item.get("restitution", RESTITUTION_DEFAULT), minimum=0.0,
                           maximum=1.0)
    contact_time = c.in_range(el, "contact_time", item.get("contact_time", CONTACT_TIME_DEFAULT), lo, hi, "s")
    return {"friction": friction, "restitution": restitution, "contact_time": contact_time}


def _plane(c: Checker, el: str, nm: str, item: dict, contact: dict) -> ObstacleSpec:
    normal = c.vector3(el, "normal", item.get("normal", [0.0, 0.0, 1.0]), limit=MAX_COORDINATE, unit="")
    norm = math.hypot(*normal)
    if not norm > 1e-9:
        c.fail(el, f"'normal' {list(normal)} has zero length", "give the direction out of the solid, e.g. [0, 0, 1]")
    point = c.vector3(el, "point", item.get("point", [0.0, 0.0, 0.0]), limit=MAX_COORDINATE)
    return ObstacleSpec(nm, "plane", normal=tuple(v / norm for v in normal), point=point, **contact)


def _box(c: Checker, el: str, nm: str, item: dict, contact: dict) -> ObstacleSpec:
    for key in ("centre", "size"):
        if key not in item:
            c.fail(el, f"missing '{key}'", f"a box needs 'centre: [x, y, z]' and 'size: [lx, ly, lz]' (full "
                   "extents, m)")
    centre = c.vector3(el, "centre", item["centre"], limit=MAX_COORDINATE)
    size = c.vector3(el, "size", item["size"])
    if min(size) <= 0.0:
        c.fail(el, f"'size' {list(size)} must be three positive lengths (full extents along the box axes, m)",
               "write 'size: [lx, ly, lz]' with every length > 0")
    if max(size) > MAX_COORDINATE:
        c.fail(el, f"'size' {list(size)} has an extent above the supported {MAX_COORDINATE:g} m",
               f"write 'size: [lx, ly, lz]' in m, every length in (0, {MAX_COORDINATE:g}]")
    rpy = c.vector3(el, "rpy", item.get("rpy", [0.0, 0.0, 0.0]), limit=100.0, unit="rad")
    return ObstacleSpec(nm, "box", centre=centre, size=size, rpy=rpy, **contact)


def _heightfield(c: Checker, el: str, nm: str, item: dict, contact: dict) -> ObstacleSpec:
    if ("heights" in item) == ("file" in item):
        c.fail(el, "needs exactly one of 'heights' and 'file'", "write 'heights: [[z00, z01, ...], [z10, ...]]' "
               "(rows along y, m) or 'file: ground.csv' (one row a line, relative to the model file)")
    origin = c.vector3(el, "origin", item.get("origin", [0.0, 0.0, 0.0]), limit=MAX_COORDINATE)
    cell = item.get("cell")
    cell = [cell, cell] if isinstance(cell, (int, float)) and not isinstance(cell, bool) else cell
    if not isinstance(cell, (list, tuple)) or len(cell) != 2:
        c.fail(el, f"'cell' must be a spacing [m] or [cell_x, cell_y], got {show(item.get('cell'))}",
               "write 'cell: 0.1' (m between grid points) or 'cell: [0.1, 0.2]'")
    cell = tuple(c.in_range(el, "cell", v, 1e-4, MAX_COORDINATE, "m") for v in cell)
    rows = item["heights"] if "heights" in item else _height_file(c, el, item["file"])
    if not isinstance(rows, (list, tuple)) or len(rows) < 2 or not all(isinstance(r, (list, tuple)) for r in rows):
        c.fail(el, f"'heights' must be a list of at least two rows, got {show(rows)}",
               "write 'heights: [[z00, z01], [z10, z11]]' (row j at y = origin_y + j cell_y)")
    width = len(rows[0])
    if width < 2 or any(len(r) != width for r in rows):
        c.fail(el, f"'heights' rows must all have the same length >= 2 (got {sorted({len(r) for r in rows})})",
               "give every row one height per grid column")
    if width * len(rows) > MAX_HEIGHTFIELD_POINTS:
        c.fail(el, f"has {width * len(rows):,} grid points, more than the supported {MAX_HEIGHTFIELD_POINTS:,}",
               "use a coarser 'cell' or split it into several height fields")
    heights = tuple(tuple(c.number(el, f"heights[{j}]", v, limit=MAX_COORDINATE, unit="m") for v in r)
                    for j, r in enumerate(rows))
    return ObstacleSpec(nm, "heightfield", origin=origin, cell=cell, heights=heights, **contact)


def _height_file(c: Checker, el: str, name) -> list:
    """The rows of numbers in a height file (relative to the model file's folder)."""
    if not isinstance(name, str) or not name.strip():
        c.fail(el, f"'file' must be a file name, got {show(name)}", "write 'file: ground.csv'")
    base = Path(c.source).parent if Path(c.source).is_file() else Path.cwd()
    path = base / name
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            c.fail(el, f"height file '{path}' is larger than {MAX_FILE_BYTES // 2**20} MB", "use a coarser grid")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        c.fail(el, f"cannot read height file '{path}' ({exc})",
               "give 'file' relative to the model file's folder, a text file of numbers, one row a line")
    rows = []
    for k, line in enumerate(text.splitlines()):
        words = line.replace(",", " ").split()
        if not words or words[0].startswith("#"):
            continue
        try:
            rows.append([float(w) for w in words])
        except ValueError:
            c.fail(el, f"height file '{path}' line {k + 1} is not a row of numbers: {show(line)}",
                   "write the heights [m] separated by commas or spaces, one grid row (along x) a line")
    return rows


_READERS = {"plane": _plane, "box": _box, "heightfield": _heightfield}


def obstacle_to_dict(o: ObstacleSpec, num) -> dict:
    """The obstacle as a YAML-ready mapping (``num`` rounds floats for writing); defaults left out."""
    d = {"name": o.name, "type": o.type}
    if o.type == "plane":
        d["normal"] = [num(v) for v in o.normal]
        d["point"] = [num(v) for v in o.point]
    elif o.type == "heightfield":
        d.update(origin=[num(v) for v in o.origin], cell=[num(v) for v in o.cell],
                 heights=[[num(v) for v in row] for row in o.heights])
    else:
        d.update(centre=[num(v) for v in o.centre], size=[num(v) for v in o.size])
        if any(o.rpy):
            d["rpy"] = [num(v) for v in o.rpy]
    for key, default in (("friction", FRICTION_DEFAULT), ("restitution", RESTITUTION_DEFAULT),
                         ("contact_time", CONTACT_TIME_DEFAULT)):
        if getattr(o, key) != default:
            d[key] = num(getattr(o, key))
    return d
