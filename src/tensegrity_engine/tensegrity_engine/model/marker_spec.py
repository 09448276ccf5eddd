"""Where a node's motion-capture marker sits, as a model file writes it (``docs/model_schema.md``, "Markers")::

    nodes:
      - {name: n5, position: [...], marker: {along_bar: 0.148}}            # 148 mm in from n5 along its bar
      - {name: n9, position: [...], marker: {along_bar: 0.02, bar: b7}}    # n9 ends several bars: name one
      - {name: base1, position: [...], fixed: true, marker: {offset: [0, 0, 0.012]}}   # a fixed vector

``along_bar`` [m]: the marker sits that far from the node on the bar's axis, toward the bar's other end.
``offset`` [m]: the marker sits at node + offset, a vector fixed in the world frame (exact for fixed nodes;
for a moving node only while the robot does not turn). Without ``marker`` the marker is on the node.
The dynamics always use the nodes (the bar ends); :mod:`.markers` turns node positions into marker
positions for everything that compares with a capture.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from tensegrity_engine.model.checks import MAX_COORDINATE, Checker, show

MARKER_KEYS = {"along_bar", "bar", "offset"}
MAX_MARKER_OFFSET = 10.0          # m, |offset|: a marker is on the robot, not across the room
MIN_MARKER_GAP = 1e-3             # m, the two markers of one bar stay this far apart: closer, a capture
                                  # system merges them and the bar's direction is lost


@dataclass(frozen=True)
class MarkerSpec:
    """A node's marker: ``along_bar`` [m] from the node toward the other end of bar ``bar``, or (``along_bar``
    None) a world-frame ``offset`` (3,) [m] from the node."""
    along_bar: float | None = None  # None: the marker is at node + offset
    bar: str = ""
    offset: tuple = (0.0, 0.0, 0.0)


def read_marker(c: Checker, el: str, value) -> MarkerSpec | None:
    """The ``marker`` of node ``el`` (None when it has none); the bar is resolved later by :func:`check_markers`."""
    if value is None:
        return None
    if not isinstance(value, dict):
        c.fail(el, f"'marker' must be a mapping, got {show(value)}",
               "write 'marker: {along_bar: 0.148}' (metres from the node along its bar) or "
               "'marker: {offset: [dx, dy, dz]}'")
    unknown = sorted(str(k) for k in value if k not in MARKER_KEYS)
    if unknown:
        c.fail(el, f"'marker' has unknown key(s) {show(unknown[:5])}", f"use only {sorted(MARKER_KEYS)}")
    along, vec = "along_bar" in value, "offset" in value
    if "bar" in value and not along and not vec:
        c.fail(el, "'marker' names a 'bar' but gives no 'along_bar'", "add 'along_bar' [m] or remove 'bar'")
    if along == vec:
        c.fail(el, "'marker' must give exactly one of 'along_bar' [m] or 'offset' [x, y, z] m",
               "use 'along_bar' for a marker on the node's bar, 'offset' for a fixed node or a marker off the bar")
    if vec:
        offset = c.vector3(el, "marker.offset", value["offset"], limit=MAX_MARKER_OFFSET)
        return MarkerSpec(offset=offset)
    d = c.number(el, "marker.along_bar", value["along_bar"], minimum=0.0, maximum=MAX_COORDINATE, unit="m")
    bar = value.get("bar", "")
    if not isinstance(bar, str):
        c.fail(el, f"'marker.bar' must be a bar name, got {show(bar)}", "write 'bar: b3'")
    return MarkerSpec(along_bar=d, bar=bar)


def _node_bar(c: Checker, node, on: list) -> object:
    """The bar (BarSpec) a node's along-bar marker sits on, among the bars ``on`` that end at the node."""
    el, m = f"node '{node.name}'", node.marker
    if m.bar:
        chosen = [b for b in on if b.name == m.bar]
        if not chosen:
            c.fail(el, f"'marker.bar' is '{m.bar}', which does not end at node '{node.name}'",
                   f"name a bar that ends at it ({', '.join(b.name for b in on) or 'none does'})")
        return chosen[0]
    if not on:
        c.fail(el, "has a marker 'along_bar' but no bar ends at it",
               "use 'marker: {offset: [dx, dy, dz]}' for a node off the bars, or connect a bar to it")
    if len(on) > 1:
        c.fail(el, f"has a marker 'along_bar' and ends {len(on)} bars ({', '.join(b.name for b in on)})",
               "say which bar the marker sits on: 'marker: {along_bar: 0.1, bar: " + on[0].name + "}'")
    return on[0]


def check_markers(c: Checker, nodes: list, bars: list, node_pos: dict) -> list:
    """The nodes with each along-bar marker's bar resolved; the marker must lie inside its bar and leave
    the bar's two markers at least MIN_MARKER_GAP apart (file/element/fix errors)."""
    ends: dict = {}
    for b in bars:
        for n in b.nodes:
            ends.setdefault(n, []).append(b)
    out, along = [], {}
    for nd in nodes:
        if nd.marker is None or nd.marker.along_bar is None:
            out.append(nd)
            continue
        b = _node_bar(c, nd, ends.get(nd.name, []))
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
