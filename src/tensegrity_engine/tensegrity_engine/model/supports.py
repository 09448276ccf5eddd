"""Supports in a model file: rigid clamps and compliant springs to the world (schema in
``docs/model_schema.md``, section "Supports")::

    supports:
      - {name: base_b1, type: clamp, bar: b1}                  # both ends of b1 held where they are
      - {name: foot, type: translational, node: n3, stiffness: 2.0e4, damping: 30}
      - {name: hinge_b2, type: rotational, bar: b2, stiffness: 40.0, damping: 0.2}
      - {name: pin_b2, type: pin, bar: b2, at: 0.148}             # the point of b2 0.148 m from its first node held

* ``clamp``: the bar is held rigidly. For a rigid bar a pinned end with a held direction fixes the other
  end too, so a clamp is exactly both ends fixed (``fixed: true`` on both nodes, the same linear
  constraints): no stiff penalty spring, no new constraint type, the bar simply drops out of the dynamics.
* ``pin``: one point of the bar, ``at`` metres from its first node toward its second (or ``at: marker``:
  where the marker of one of its ends sits, ``marker: {along_bar: ...}``), is held where the file puts it.
  That point is ``(1 − s) x_a + s x_b`` with ``s = at / l``, linear in the bar's node positions, so a pin is
  one more linear node constraint (``pin_<name>``, eliminated with the others: exact in statics and in the
  dynamics, no penalty spring); the bar turns freely about it unless a ``rotational`` support holds it.
* ``translational``: a spring + damper from a node to a world ``anchor`` (default: the node's position in
  the file): force ``−k (x − anchor) − c ẋ`` [N], potential ``k |x − anchor|² / 2``.
* ``rotational``: a spring + damper on the direction ``e`` of a bar (from its first node to its second)
  relative to a ``rest_direction`` ``r`` (default: the bar's direction in the file), potential
  ``k (1 − cos θ)`` with ``cos θ = e·r``: a couple perpendicular to the bar of moment ``k sin θ``, so ``k``
  [N m/rad] is the stiffness at small angles (the moment is ``k θ`` within θ²/6, 0.5 % at 10°) and the force
  is smooth at every angle (``k θ²/2`` has no unique direction at θ = π). Damping ``c`` [N m s/rad] acts
  on the rate of turn of the bar's direction. Pin the bar with ``fixed: true`` on an end, a ``pin`` along
  it (a compliant clamp) or a translational support; the spin about the bar's own axis is not a degree of freedom.

The forces are in :mod:`~tensegrity_engine.dynamics.supports` (NumPy, statics and energy) and
``kernels._support_forces`` (the compiled dynamics).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from tensegrity_engine.errors import ModelError
from tensegrity_engine.model import checks as L
from tensegrity_engine.model.checks import MAX_COORDINATE, Checker, show

SUPPORT_TYPES = ("clamp", "translational", "rotational", "pin")
MAX_SUPPORTS = 20_000
_KEYS = {"clamp": {"name", "type", "bar"},
         "translational": {"name", "type", "node", "stiffness", "damping", "anchor"},
         "rotational": {"name", "type", "bar", "stiffness", "damping", "rest_direction"},
         "pin": {"name", "type", "bar", "at"}}
_UNITS = {"translational": ("N/m", "N s/m"), "rotational": ("N m/rad", "N m s/rad")}
_EXAMPLE = {"clamp": "'{name: base, type: clamp, bar: b1}'",
            "translational": "'{name: foot, type: translational, node: n1, stiffness: 1.0e4, damping: 10}'",
            "rotational": "'{name: hinge, type: rotational, bar: b1, stiffness: 40, damping: 0.1}'",
            "pin": "'{name: pin, type: pin, bar: b1, at: 0.148}'"}


@dataclass(frozen=True)
class SupportSpec:
    """One support as written in the file: ``node`` (translational) or ``bar`` (clamp, rotational);
    ``stiffness`` N/m or N m/rad, ``damping`` N s/m or N m s/rad, ``reference``: the anchor [m] or the unit
    rest direction as written (any length), None for the default (the node's position, the bar's direction in the file);
    ``at`` (pin) metres from the bar's first node or ``"marker"``."""
    name: str
    type: str
    node: str = ""
    bar: str = ""
    stiffness: float = 0.0
    damping: float = 0.0
    reference: tuple | None = None
    at: float | str | None = None     # pin: metres from the bar's first node, or "marker"


@dataclass(frozen=True)
class SupportArrays:
    """The compliant supports by index for the forces: ``nodes`` (s, 2) (node, -1) for a translational
    support and (first, second bar node) for a rotational one; ``stiffness``, ``damping`` (s,); ``reference``
    (s, 3) the anchor [m] or the unit rest direction; ``names``, ``spec_index`` (into the model's supports)."""
    names: tuple
    nodes: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    reference: np.ndarray
    spec_index: np.ndarray

    def __len__(self) -> int:
        return len(self.names)

    @property
    def rotational(self) -> np.ndarray:
        """(s,) bool: a rotational support (else translational)."""
        return self.nodes[:, 1] >= 0


def no_supports() -> SupportArrays:
    return SupportArrays((), np.zeros((0, 2), np.int64), np.zeros(0), np.zeros(0), np.zeros((0, 3)),
                         np.zeros(0, np.int64))


def read_supports(c: Checker, seen: dict, data: dict, node_pos: dict, bars: list) -> list:
    """The SupportSpecs of the file's ``supports`` list (names unique with the other elements via ``seen``;
    ``node_pos``: node name -> position [m]; ``bars``: the BarSpecs)."""
    bar_nodes = {b.name: b.nodes for b in bars}
    out, clamped = [], {}
    for i, item, kind in c.typed_items("supports", data.get("supports"), MAX_SUPPORTS,
                                       "write 'supports: [- {name: base, type: clamp, bar: b1}]'", SUPPORT_TYPES,
                                       "write 'type: clamp' (a bar held rigidly), 'type: translational' (a spring "
                                       "from a node to the world), 'type: rotational' (a spring on a bar's "
                                       "direction) or 'type: pin' (a point along a bar held)"):
        required = ("name", "type", "node") if kind == "translational" else ("name", "type", "bar")
        extra = {"clamp": (), "pin": ("at",)}.get(kind, ("stiffness",))
        c.keys(f"supports[{i}]", item, _KEYS[kind], required + extra)
        nm = c.name("supports", i, item, seen)
        el = f"support '{nm}'"
        if kind == "translational":
            out.append(_translational(c, el, nm, item, node_pos))
            continue
        bar = item["bar"]
        if not isinstance(bar, str) or bar not in bar_nodes:
            c.fail(el, f"'bar' references unknown bar {show(bar)}",
                   f"name one of the declared bars ({', '.join(sorted(bar_nodes)[:8])}) in {_EXAMPLE[kind]}")
        if kind == "pin":
            out.append(_pin(c, el, nm, item, bar, [node_pos[n] for n in bar_nodes[bar]]))
            continue
        if bar in clamped:
            c.fail(el, f"bar '{bar}' is already held by support '{clamped[bar]}'",
                   "give each bar at most one clamp or rotational support (remove one of them)")
        clamped[bar] = nm
        out.append(SupportSpec(nm, "clamp", bar=bar) if kind == "clamp" else
                   _rotational(c, el, nm, item, bar, [node_pos[n] for n in bar_nodes[bar]]))
    _check_pins(c, out)
    return out


def _pin(c: Checker, el: str, nm: str, item: dict, bar: str, ends: list) -> SupportSpec:
    """A pin: ``at`` metres from the bar's first node, within the bar, or ``"marker"`` (resolved when built)."""
    at = item["at"]
    if at == "marker":
        return SupportSpec(nm, "pin", bar=bar, at="marker")
    length = math.dist(*ends)
    v = c.number(el, "at", at, minimum=0.0, maximum=length, unit="m")
    return SupportSpec(nm, "pin", bar=bar, at=float(v))


def _check_pins(c: Checker, specs: list) -> None:
    """At most one pin per bar, and none on a clamped bar (two held points, or a held point of a held bar,
    are a clamp)."""
    held = {}
    for s in specs:
        if s.type == "clamp":
            held.setdefault(s.bar, []).append(s.name)
    for s in specs:
        if s.type == "pin":
            if s.bar in held:
                c.fail(f"support '{s.name}'", f"bar '{s.bar}' is already held by support '{held[s.bar][0]}'",
                       "a bar held at two points is clamped: keep one pin (a rotational support may hold its "
                       "direction) or use 'type: clamp' alone")
            held.setdefault(s.bar, []).append(s.name)


def pin_constraints(spec, index: dict, positions: list) -> list:
    """The pins as linear node constraints [(name, [(node index, coefficient), ...], value (3,))]: the point
    ``(1 − s) x_a + s x_b`` (s = at / bar length) stays where the file puts it; the end with the larger
    coefficient is written first (the dependent node of the elimination: the better-conditioned choice)."""
    bars = {b.name: b.nodes for b in spec.bars}
    nodes = {nd.name: nd for nd in spec.nodes}
    out = []
    for s in getattr(spec, "supports", ()):
        if s.type != "pin":
            continue
        na, nb = bars[s.bar]
        pa, pb = (np.asarray(positions[index[n]], float) for n in (na, nb))
        frac = pin_fraction(s, nodes, na, nb, float(np.linalg.norm(pb - pa)), spec.source)
        terms = [(index[na], 1.0 - frac), (index[nb], frac)]
        if frac > 0.5:
            terms.reverse()
        out.append((f"pin_{s.name}", [t for t in terms if t[1] != 0.0], (1.0 - frac) * pa + frac * pb))
    return out


def pin_fraction(s: SupportSpec, nodes: dict, na: str, nb: str, length: float, spec_source=None) -> float:
    """Where pin ``s`` holds its bar (from node ``na`` to ``nb``, ``length`` [m]): a fraction 0 … 1 from ``na``.
    ``at: marker`` takes the ``along_bar`` marker of the bar's end that has one on this bar."""
    if s.at != "marker":
        return float(s.at) / length
    found = [(n, nodes[n].marker.along_bar) for n in (na, nb)
             if nodes[n].marker is not None and nodes[n].marker.along_bar is not None and nodes[n].marker.bar == s.bar]
    if len(found) != 1:
        raise ModelError(spec_source, f"support '{s.name}'",
                         f"'at: marker' needs exactly one end of bar '{s.bar}' with a 'marker: {{along_bar: ...}}' "
                         f"on it (found {len(found)})", "give 'at' in metres from the bar's first node")
    n, along = found[0]
    return along / length if n == na else 1.0 - along / length


def _spring(c: Checker, el: str, kind: str, item: dict) -> tuple:
    k_unit, c_unit = _UNITS[kind]
    k = c.number(el, "stiffness", item["stiffness"], positive=True, maximum=L.MAX_STIFFNESS, unit=k_unit)
    d = c.number(el, "damping", item.get("damping", 0.0), minimum=0.0, maximum=L.MAX_DAMPING, unit=c_unit)
    return k, d


def _translational(c: Checker, el: str, nm: str, item: dict, node_pos: dict) -> SupportSpec:
    node = item["node"]
    if not isinstance(node, str) or node not in node_pos:
        names = sorted(node_pos)
        c.fail(el, f"'node' references unknown node {show(node)}",
               f"use one of the declared nodes ({', '.join(names[:8])}{', ...' if len(names) > 8 else ''})")
    k, d = _spring(c, el, "translational", item)
    anchor = (c.vector3(el, "anchor", item["anchor"], limit=MAX_COORDINATE) if "anchor" in item else None)
    return SupportSpec(nm, "translational", node=node, stiffness=k, damping=d, reference=anchor)


def _rotational(c: Checker, el: str, nm: str, item: dict, bar: str, ends: list) -> SupportSpec:
    k, d = _spring(c, el, "rotational", item)
    ref = None
    if "rest_direction" in item:
        v = c.vector3(el, "rest_direction", item["rest_direction"], limit=MAX_COORDINATE, unit="")
        norm = math.hypot(*v)
        if not norm > 1e-9:
            c.fail(el, f"'rest_direction' {list(v)} has zero length",
                   f"give the direction of bar '{bar}' (first node to second) at rest, e.g. [0, 0, 1], or leave it "
                   "out to use the bar's direction in the file")
        ref = tuple(v)                 # as written (normalised when built: writing it back is exact)
    return SupportSpec(nm, "rotational", bar=bar, stiffness=k, damping=d, reference=ref)


def clamped_nodes(spec) -> set:
    """Names of the nodes the file's clamps hold (both ends of every clamped bar)."""
    bar_nodes = {b.name: b.nodes for b in spec.bars}
    return {n for s in getattr(spec, "supports", ()) if s.type == "clamp" for n in bar_nodes[s.bar]}


def support_arrays(spec, index: dict, bar_ends: np.ndarray, pos: np.ndarray) -> SupportArrays:
    """The compliant supports of ``spec`` by index (``index``: node name -> index, ``bar_ends`` (beta, 2) the
    built bars' node indices, ``pos`` (n, 3) the initial positions [m]); clamps are fixed nodes, not here."""
    bar_index = {b.name: i for i, b in enumerate(spec.bars)}
    names, nodes, k, d, ref, which = [], [], [], [], [], []
    for i, s in enumerate(getattr(spec, "supports", ())):
        if s.type in ("clamp", "pin"):
            continue
        if s.type == "translational":
            a = index[s.node]
            nodes.append((a, -1))
            ref.append(pos[a] if s.reference is None else np.asarray(s.reference, float))
        else:
            a, b = (int(x) for x in bar_ends[bar_index[s.bar]])
            nodes.append((a, b))
            e = pos[b] - pos[a]
            r = e if s.reference is None else np.asarray(s.reference, float)
            ref.append(r / np.linalg.norm(r))
        names.append(s.name)
        k.append(s.stiffness)
        d.append(s.damping)
        which.append(i)
    if not names:
        return no_supports()
    return SupportArrays(tuple(names), np.array(nodes, np.int64).reshape(-1, 2), np.array(k, float),
                         np.array(d, float), np.array(ref, float).reshape(-1, 3), np.array(which, np.int64))


def moved_support(s: SupportSpec, R, t) -> SupportSpec:
    """``s`` with the world moved rigidly by x -> R x + t: an explicit anchor moves with it, an explicit rest
    direction turns (the defaults follow the node positions by themselves)."""
    if s.reference is None:
        return s
    v = np.asarray(R, float) @ np.asarray(s.reference, float) + (t if s.type == "translational" else 0.0)
    return replace(s, reference=tuple(float(x) for x in v))


def support_summary(s: SupportSpec) -> str:
    """One line for ``tensegrity info``, e.g. ``hinge (rotational b1, 100 N m/rad)``, ``pin (pin b1 at 0.452 m)``."""
    if s.type == "clamp":
        return f"{s.name} (clamp {s.bar})"
    if s.type == "pin":
        return f"{s.name} (pin {s.bar} at {s.at if s.at == 'marker' else f'{s.at:g} m'})"
    unit = "N m/rad" if s.type == "rotational" else "N/m"
    return f"{s.name} ({s.type} {s.bar or s.node}, {s.stiffness:g} {unit})"


def support_to_dict(s: SupportSpec, num) -> dict:
    """The support as a YAML-ready mapping (``num`` rounds floats for writing); defaults left out."""
    d = {"name": s.name, "type": s.type}
    if s.type == "translational":
        d["node"] = s.node
    else:
        d["bar"] = s.bar
    if s.type == "pin":
        d["at"] = s.at if s.at == "marker" else num(s.at)
    if s.type in ("clamp", "pin"):
        return d
    d["stiffness"] = num(s.stiffness)
    if s.damping:
        d["damping"] = num(s.damping)
    if s.reference is not None:
        d["anchor" if s.type == "translational" else "rest_direction"] = [num(v) for v in s.reference]
    return d
