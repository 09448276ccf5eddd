"""Where a node's motion-capture marker sits, as a model file writes it (``docs/model_schema.md``, "Markers")::

    nodes:
      - {name: n5, position: [...], marker: {along_bar: 0.148}}            # 148 mm in from n5 along its bar
      - {name: n9, position: [...], marker: {along_bar: 0.02, bar: b7}}    # n9 ends several bars: name one
      - {name: n3, position: [...], marker: {offset: [0.01, 0.012, 0], frame: bar}}   # rides n3's bar
      - {name: base1, position: [...], fixed: true, marker: {offset: [0, 0, 0.012]}}   # world frame, fixed node

``along_bar`` [m]: the marker sits that far from the node on the bar's axis, toward the bar's other end.
``offset`` [m] with ``frame: bar``: components (along, toward, normal) in the node's bar frame, which rides
the bar: ``along`` the unit vector from the node to the bar's other end, ``toward`` the unit vector
perpendicular to the bar in the plane of the bar and the reference node ``toward`` (default: the next node
on the first string, in file order, that runs from the node), ``normal`` = along x toward. The node model has
no spin about the bar's axis, so the reference node fixes it; exact under any rigid motion of the robot.
``offset`` with ``frame: world`` (the default, the meaning of old files): a vector fixed in the world frame,
only on a node that never moves (``check_world_offsets``, at build). Without ``marker`` the marker is on the
node. The dynamics always use the nodes (the bar ends); :mod:`.markers` turns node positions into marker
positions for everything that compares with a capture.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from tensegrity_engine.errors import ModelError
from tensegrity_engine.model.checks import MAX_COORDINATE, Checker, show

MARKER_KEYS = {"along_bar", "bar", "offset", "frame", "toward"}
FRAMES = ("world", "bar")
MAX_MARKER_OFFSET = 10.0          # m, |offset|: a marker is on the robot, not across the room
MIN_MARKER_GAP = 1e-3             # m, the two markers of one bar stay this far apart: closer, a capture
                                  # system merges them and the bar's direction is lost
MAX_RIDE_FRACTION = 0.25          # |riding offset| <= this x min(bar length, reference's distance from the bar's
                                  # axis) at the file's shape: markers sit on the bar, cm from its axis, and
                                  # nodes_from_markers' iteration contracts (it fails near 0.6 with both ends riding)
MIN_TOWARD_SINE = 0.1             # sin of the angle between the bar and its reference node, seen from the node,
                                  # at the file's shape: the frame's error grows as 1/sin (10x at this bound)


@dataclass(frozen=True)
class MarkerSpec:
    """A node's marker: ``along_bar`` [m] from the node toward the other end of bar ``bar``, or (``along_bar``
    None) an ``offset`` (3,) [m] from the node in ``frame`` "world" (x, y, z) or "bar" (along bar ``bar``,
    toward node ``toward`` perpendicular to it, normal: :mod:`.marker_spec`)."""
    along_bar: float | None = None  # None: the marker is at node + offset
    bar: str = ""
    offset: tuple = (0.0, 0.0, 0.0)
    frame: str = "world"
    toward: str = ""                # the reference node of frame "bar" (resolved by check_markers)

    @property
    def rides(self) -> bool:
        """True for an offset in the bar's frame."""
        return self.along_bar is None and self.frame == "bar"


def read_marker(c: Checker, el: str, value) -> MarkerSpec | None:
    """The ``marker`` of node ``el`` (None when it has none); bar and reference node are resolved later by
    :func:`check_markers`."""
    if value is None:
        return None
    if not isinstance(value, dict):
        c.fail(el, f"'marker' must be a mapping, got {show(value)}",
               "write 'marker: {along_bar: 0.148}' (metres from the node along its bar) or "
               "'marker: {offset: [along, toward, normal], frame: bar}'")
    unknown = sorted(str(k) for k in value if k not in MARKER_KEYS)
    if unknown:
        c.fail(el, f"'marker' has unknown key(s) {show(unknown[:5])}", f"use only {sorted(MARKER_KEYS)}")
    along, vec = "along_bar" in value, "offset" in value
    if "bar" in value and not along and not vec:
        c.fail(el, "'marker' names a 'bar' but gives no 'along_bar'", "add 'along_bar' [m] or remove 'bar'")
    if along == vec:
        c.fail(el, "'marker' must give exactly one of 'along_bar' [m] or 'offset' [x, y, z] m",
               "use 'along_bar' for a marker on the node's bar, 'offset' with 'frame: bar' for a marker off "
               "the bar's axis")
    if vec:
        return _read_offset(c, el, value)
    if "frame" in value or "toward" in value:
        c.fail(el, "'frame' and 'toward' belong to a marker 'offset', not to 'along_bar'",
               "remove them: an 'along_bar' marker rides its bar by itself")
    d = c.number(el, "marker.along_bar", value["along_bar"], minimum=0.0, maximum=MAX_COORDINATE, unit="m")
    return MarkerSpec(along_bar=d, bar=_name(c, el, value, "bar", "bar: b3"))


def _name(c: Checker, el: str, value: dict, key: str, example: str) -> str:
    """The element name ``value[key]`` ("" when absent)."""
    name = value.get(key, "")
    if not isinstance(name, str):
        c.fail(el, f"'marker.{key}' must be a name, got {show(name)}", f"write '{example}'")
    return name


def _read_offset(c: Checker, el: str, value: dict) -> MarkerSpec:
    """An ``offset`` marker with its ``frame`` ("world" by default: the meaning of files before frames)."""
    offset = c.vector3(el, "marker.offset", value["offset"], limit=MAX_MARKER_OFFSET)
    frame = value.get("frame", "world")
    if frame not in FRAMES:
        c.fail(el, f"'marker.frame' must be one of {list(FRAMES)}, got {show(frame)}",
               "write 'frame: bar' (the offset rides the node's bar) or 'frame: world' (a node that never moves)")
    if frame == "world" and ("bar" in value or "toward" in value):
        c.fail(el, "'bar' and 'toward' name the frame of a riding offset, but the offset is in the world frame",
               "write 'frame: bar' or remove 'bar' and 'toward'")
    return MarkerSpec(bar=_name(c, el, value, "bar", "bar: b3"), offset=offset, frame=frame,
                      toward=_name(c, el, value, "toward", "toward: n4"))


def _node_bar(c: Checker, node, on: list) -> object:
    """The bar (BarSpec) a node's along-bar or riding marker sits on, among the bars ``on`` that end at it."""
    el, m = f"node '{node.name}'", node.marker
    what = "'along_bar'" if m.along_bar is not None else "'offset' in frame 'bar'"
    if m.bar:
        chosen = [b for b in on if b.name == m.bar]
        if not chosen:
            c.fail(el, f"'marker.bar' is '{m.bar}', which does not end at node '{node.name}'",
                   f"name a bar that ends at it ({', '.join(b.name for b in on) or 'none does'})")
        return chosen[0]
    if not on:
        c.fail(el, f"has a marker {what} but no bar ends at it",
               "put the marker on a node that ends a bar, or connect a bar to it")
    if len(on) > 1:
        c.fail(el, f"has a marker {what} and ends {len(on)} bars ({', '.join(b.name for b in on)})",
               f"say which bar the marker sits on: add 'bar: {on[0].name}' to its 'marker'")
    return on[0]


def _bar_ends(bars: list) -> dict:
    """Node name -> the bars (BarSpecs) that end at it, in file order."""
    ends: dict = {}
    for b in bars:
        for n in b.nodes:
            ends.setdefault(n, []).append(b)
    return ends


def first_string_neighbour(node: str, strings: list) -> str:
    """The next node on the first string (file order) whose path passes ``node`` ("" if none does): the
    default reference of a riding marker."""
    for s in strings:
        if node in s.path:
            k = s.path.index(node)
            return s.path[k + 1] if k + 1 < len(s.path) else s.path[k - 1]
    return ""


def _toward(c: Checker, node, bar, strings: list, node_pos: dict) -> str:
    """The reference node of ``node``'s riding marker on ``bar``: named, or the first string's next node; it
    must stand off the bar's line by MIN_TOWARD_SINE at the file's shape."""
    el, m = f"node '{node.name}'", node.marker
    ref = m.toward or first_string_neighbour(node.name, strings)
    fix = (f"name a node beside the bar, away from its axis (a string's other end): 'toward: NODE' in the "
           f"marker of node '{node.name}'")
    if not ref:
        c.fail(el, "has a marker 'offset' in frame 'bar' but no string runs from it to fix the frame's spin", fix)
    if ref not in node_pos:
        c.fail(el, f"'marker.toward' references unknown node {show(ref)}", fix)
    o = node_pos[node.name]
    other = node_pos[bar.nodes[1] if bar.nodes[0] == node.name else bar.nodes[0]]
    u, w = _unit(_sub(other, o)), _sub(node_pos[ref], o)
    along = sum(a * b for a, b in zip(u, w))
    perp = math.sqrt(max(sum(x * x for x in w) - along * along, 0.0))
    if perp < MIN_TOWARD_SINE * math.sqrt(sum(x * x for x in w)) or perp == 0.0:
        c.fail(el, f"the reference node '{ref}' of its marker lies on (or within {MIN_TOWARD_SINE:g} rad of) the "
               f"axis of bar '{bar.name}', so it cannot fix the frame's spin", fix)
    reach = MAX_RIDE_FRACTION * min(math.dist(o, other), perp)
    if math.hypot(*m.offset) > reach:
        c.fail(el, f"its marker 'offset' is {math.hypot(*m.offset):.4g} m long, more than {reach:.4g} m "
               f"({MAX_RIDE_FRACTION:g} x the smaller of bar '{bar.name}''s length and the reference node "
               f"'{ref}''s distance from its axis): a marker that far off is not on the bar",
               "give the offset in metres as [along, toward, normal] from the node (docs/model_schema.md)")
    return ref


def _sub(a, b) -> tuple:
    return tuple(x - y for x, y in zip(a, b))


def _unit(v) -> tuple:
    n = math.sqrt(sum(x * x for x in v))
    return tuple(x / n for x in v)


def check_markers(c: Checker, nodes: list, bars: list, strings: list, node_pos: dict) -> list:
    """The nodes with each along-bar or riding marker's bar (and a riding marker's reference node) resolved;
    an along-bar marker must lie inside its bar and leave the bar's two markers at least MIN_MARKER_GAP apart
    (file/element/fix errors)."""
    ends = _bar_ends(bars)
    out, along = [], {}
    for nd in nodes:
        if nd.marker is None or not (nd.marker.along_bar is not None or nd.marker.rides):
            out.append(nd)
            continue
        b = _node_bar(c, nd, ends.get(nd.name, []))
        if nd.marker.rides:
            out.append(replace(nd, marker=replace(nd.marker, bar=b.name,
                                                  toward=_toward(c, nd, b, strings, node_pos))))
            continue
        out.append(replace(nd, marker=replace(nd.marker, bar=b.name)))
        along.setdefault(b.name, []).append(nd.name)
    for b in bars:
        if b.name not in along:
            continue
        length = math.dist(node_pos[b.nodes[0]], node_pos[b.nodes[1]])
        d = {nd.name: nd.marker.along_bar for nd in out if nd.name in along[b.name]}
        if length - sum(d.values()) < MIN_MARKER_GAP:
            who = " and ".join(f"node '{n}' ({v:g} m)" for n, v in d.items())
            c.fail(f"node '{along[b.name][-1]}'", f"marker 'along_bar' of {who} reach(es) {sum(d.values()):g} m "
                   f"along bar '{b.name}', which is {length:.6g} m long: the marker would be off the bar or on the "
                   f"other end's marker", "measure 'along_bar' in metres from the node to the marker's centre "
                   f"(less than the bar's length, leaving {MIN_MARKER_GAP * 1e3:g} mm between the bar's markers)")
    return out


def bar_frame(o, other, ref) -> np.ndarray:
    """(..., 3, 3) rows (along, toward, normal) of the frame of a bar from node ``o`` to its other end
    ``other`` with reference point ``ref`` (each (..., 3) [m]); NaN where the three are collinear."""
    e1 = np.asarray(other, float) - o
    with np.errstate(invalid="ignore", divide="ignore"):
        e1 = e1 / np.linalg.norm(e1, axis=-1, keepdims=True)
        w = np.asarray(ref, float) - o
        e2 = w - np.sum(w * e1, axis=-1, keepdims=True) * e1
        e2 = e2 / np.linalg.norm(e2, axis=-1, keepdims=True)
    return np.stack([e1, e2, np.cross(e1, e2)], axis=-2)


def check_world_offsets(source: str, spec, moving: set) -> None:
    """ModelError for a world-frame marker ``offset`` on a node in ``moving`` (names of the nodes that can move):
    the offset would stay put while the bar turns. The fix gives the same marker, at the file's shape, riding
    the node's bar (its first bar, the reference its first string's next node) when there is one."""
    ends, pos = _bar_ends(spec.bars), {nd.name: nd.position for nd in spec.nodes}
    for nd in spec.nodes:
        m = nd.marker
        if m is None or m.along_bar is not None or m.rides or nd.name not in moving or not any(m.offset):
            continue
        fix = "put the marker on a node that ends a bar, or make the node fixed"
        bar, ref = (ends.get(nd.name) or [None])[0], first_string_neighbour(nd.name, spec.strings)
        if bar is not None and ref:
            other = bar.nodes[1] if bar.nodes[0] == nd.name else bar.nodes[0]
            local = bar_frame(np.array(pos[nd.name]), pos[other], pos[ref]) @ np.asarray(m.offset, float)
            if np.all(np.isfinite(local)):
                fix = (f"write 'marker: {{offset: [{', '.join(f'{v:.6g}' for v in local)}], frame: bar, "
                       f"bar: {bar.name}, toward: {ref}}}': the same marker at the file's shape, riding the bar "
                       f"(docs/model_schema.md, 'Markers off the nodes')")
        raise ModelError(source, f"node '{nd.name}'", "has a marker 'offset' in the world frame but the node moves: "
                         "the marker would stay put while its bar turns (after a half turn it is off by twice "
                         "the offset)", fix)
