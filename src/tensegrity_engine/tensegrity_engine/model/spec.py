"""Reading and validating tensegrity model files (YAML, schema ``tensegrity-model`` version 1).

This module only checks the *file*: names, references, numbers and shapes. The physics-level checks
(constraint consistency, masses, redundant bars) happen when the :class:`~tensegrity_engine.model.model.Model`
is built. Every error is a :class:`~tensegrity_engine.errors.ModelError` naming the file, the element
and the fix. The schema is documented in ``docs/model_schema.md`` (README links to it).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from tensegrity_engine.model import checks as L
from tensegrity_engine.errors import ModelError
from tensegrity_engine.model.checks import MASS_RANGE, MAX_COORDINATE, Checker, show  # noqa: F401  (re-exported)
from tensegrity_engine.model.marker_spec import MarkerSpec, check_markers, read_marker
from tensegrity_engine.model.supports import read_supports
from tensegrity_engine.model.world import read_obstacles
from tensegrity_engine.model.yaml_text import MAX_DEPTH, parse_yaml

SCHEMA_NAME = "tensegrity-model"
SCHEMA_VERSION = 1

_TOP_KEYS = {"schema", "version", "name", "description", "gravity", "structural_damping", "nodes", "bars", "strings",
             "constraints", "actuators", "frames", "obstacles", "supports", "groups", "notes",
             "resolved"}  # "resolved" is informational (written by the engine, ignored on load)
_NODE_KEYS = {"name", "position", "fixed", "mass", "marker"}
_BAR_KEYS = {"name", "nodes", "mass", "radius", "length"}
_STRING_KEYS = {"name", "path", "EA", "stiffness", "damping", "rest_length", "tension", "radius", "group",
                "pulley_damping", "pulley_friction_coefficient"}
PULLEY_FRICTION_COEFFICIENT = 0.3   # default μ of the capstan bound on pulley friction (kernels._pulley_friction)
MAX_FRICTION_COEFFICIENT = 10.0     # e^(μθ) stays finite (θ <= π); rubber on steel is about 1
_CONSTRAINT_KEYS = {"name", "terms", "value"}
_ACTUATOR_KEYS = {"name", "string", "spool_radius", "sign", "zero", "angle_limits", "motor", "delay"}
_FRAME_KEYS = {"name", "nodes", "x_node"}


@dataclass(frozen=True)
class NodeSpec:
    name: str
    position: tuple
    fixed: bool = False
    mass: float = 0.0
    marker: MarkerSpec | None = None    # where its motion-capture marker sits (model/marker_spec.py); None: on it


@dataclass(frozen=True)
class BarSpec:
    name: str
    nodes: tuple
    mass: float
    radius: float


@dataclass(frozen=True)
class StringSpec:
    name: str
    path: tuple
    EA: float | None
    stiffness: float | None
    damping: float
    rest_length: float | None
    tension: float | None
    radius: float
    group: str = ""
    pulley_damping: float = 0.0     # N s/m, viscous sliding friction at each node the path passes through
    pulley_friction_coefficient: float = PULLEY_FRICTION_COEFFICIENT   # μ: friction <= capstan limit e^(μθ)


@dataclass(frozen=True)
class ConstraintSpec:
    name: str
    terms: tuple  # ((node, coefficient), ...) in file order
    value: tuple


@dataclass(frozen=True)
class ActuatorSpec:
    name: str
    string: str
    spool_radius: float
    sign: float
    zero: float
    angle_limits: tuple
    motor: str = ""
    delay: float = 0.0              # s, dead time between a command and the rest length following it


@dataclass(frozen=True)
class FrameSpec:
    name: str
    nodes: tuple
    x_node: str


@dataclass(frozen=True)
class ModelSpec:
    """The validated content of a model file, still by name (no indices, no virtual nodes)."""
    source: str
    name: str
    description: str
    gravity: tuple
    nodes: tuple
    bars: tuple
    strings: tuple
    constraints: tuple = ()
    actuators: tuple = ()
    frames: tuple = ()
    notes: str = ""
    extra: dict = field(default_factory=dict)
    structural_damping: float = 0.0    # 1/s, mass-proportional (-c M v on every node)
    obstacles: tuple = ()              # ObstacleSpec (model/world.py): the robot's world
    supports: tuple = ()               # SupportSpec (model/supports.py): clamps and springs to the world




def load_spec(source) -> ModelSpec:
    """Read a model file (path) and validate it. Raises ModelError on any problem, and nothing else.

    Files larger than ``model.checks.MAX_FILE_BYTES`` are refused before they are read.
    """
    path = Path(source)
    try:
        size = path.stat().st_size
        if size > L.MAX_FILE_BYTES:
            raise ModelError(str(path), "file", f"is {size / 2**20:.1f} MB, more than the supported "
                             f"{L.MAX_FILE_BYTES / 2**20:.0f} MB", "check that this is a model file; split the model")
        with open(path, "rb") as fh:
            raw = fh.read(L.MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ModelError(str(path), "file", f"cannot be read ({exc.strerror or exc})",
                         "check the path, or use a built-in model name (tensegrity models)") from None
    if len(raw) > L.MAX_FILE_BYTES:                  # grew while reading, or not a regular file
        raise ModelError(str(path), "file", f"is more than the supported {L.MAX_FILE_BYTES / 2**20:.0f} MB",
                         "check that this is a model file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ModelError(str(path), f"line {line}", f"is not UTF-8 text (byte 0x{raw[exc.start]:02x} at column "
                         f"{column})", "save the file with UTF-8 encoding (or remove the special character)") from None
    return guarded(str(path), lambda: spec_from_dict(parse_yaml(text, str(path)), str(path)))


def guarded(source: str, validate):
    """Run ``validate()``; turn any exception other than ModelError into one ("internal error").

    The last resort at the public boundary: every field is type- and range-checked on its own, so
    reaching the conversion means a bug in the checks, which the message asks to report.
    """
    try:
        return validate()
    except ModelError:
        raise
    except Exception as exc:          # noqa: BLE001  (MemoryError, RecursionError, a missed check ...)
        raise ModelError(str(source), "model", f"internal error while validating the model "
                         f"({type(exc).__name__}: {show(str(exc))}) (please report)",
                         "check the model against docs/model_schema.md; please report this message") from exc


def spec_from_dict(data, source: str = "<dict>") -> ModelSpec:
    """Validate a model given as a dictionary (as read from YAML or JSON). Raises only ModelError.

    Time is linear in the size of the model; sizes and values are bounded (:mod:`.checks`).
    """
    source = str(source)
    return guarded(source, lambda: _spec_from_dict(data, source))


def _depth_ok(c: Checker, data):
    """Refuse data nested deeper than MAX_DEPTH (checked without recursion; dicts given directly)."""
    stack, seen = [(data, 0)], set()
    while stack:
        obj, d = stack.pop()
        if isinstance(obj, (list, dict)):
            if d >= MAX_DEPTH:
                c.fail("model", f"is nested deeper than {MAX_DEPTH} levels",
                       "a model needs only a few levels of lists and mappings")
            if id(obj) in seen:                  # shared (aliased) or self-referencing containers
                continue
            seen.add(id(obj))
            stack.extend((v, d + 1) for v in (obj.values() if isinstance(obj, dict) else obj))


@dataclass
class _Reading:
    """What the section readers share: the checker, every name used so far and the node positions [m]."""
    c: Checker
    seen: dict = field(default_factory=dict)        # element name -> where it was declared ('nodes[3]')
    node_pos: dict = field(default_factory=dict)    # node name -> position (x, y, z) [m]

    def node_ref(self, el, key, ref) -> str:
        """``ref`` if it names a declared node, else fail listing (some of) the declared nodes."""
        if not isinstance(ref, str) or ref not in self.node_pos:
            names = sorted(self.node_pos)
            self.c.fail(el, f"'{key}' references unknown node {show(ref)}",
                        f"use one of the declared nodes ({', '.join(names[:8])}"
                        f"{', ...' if len(names) > 8 else ''}) or declare it under 'nodes'")
        return ref


def _length(c: Checker, el: str, key: str, value) -> float:
    """A length [m] within the supported range."""
    lo, hi = L.LENGTH_RANGE
    return c.in_range(el, key, value, lo, hi, "m")


@dataclass(frozen=True)
class _Header:
    """The top-level fields other than the element lists."""
    name: str
    description: str
    notes: str
    gravity: tuple                  # m/s^2
    structural_damping: float       # 1/s


def _check_schema(c: Checker, data):
    """The top level is a mapping of known keys that declares this schema and version and a valid name."""
    if not isinstance(data, dict):
        c.fail("file", f"top level must be a mapping, got {show(data)}", f"start the file with 'schema: {SCHEMA_NAME}'")
    unknown = [k for k in data if k not in _TOP_KEYS]
    if unknown:
        c.fail("top level", f"unknown key(s) {show(sorted(map(str, unknown))[:5])}", f"use only {sorted(_TOP_KEYS)}")
    if data.get("schema") != SCHEMA_NAME or not isinstance(data.get("schema"), str):
        c.fail("schema", f"expected 'schema: {SCHEMA_NAME}', got {show(data.get('schema'))}",
               f"add 'schema: {SCHEMA_NAME}' and 'version: {SCHEMA_VERSION}' at the top")
    if data.get("version") != SCHEMA_VERSION or isinstance(data.get("version"), bool):
        c.fail("version", f"unsupported schema version {show(data.get('version'))}",
               f"this engine reads version {SCHEMA_VERSION}; write 'version: {SCHEMA_VERSION}'")
    if "name" in data and not L.valid_name(data["name"]):
        c.fail("name", f"must be a non-empty text that is a plain identifier (rule {L.NAME_RULE}), "
               f"got {show(data['name'])}",
               f"write 'name: my_model', or leave 'name' out to use the file name")


def _read_header(c: Checker, data: dict, source: str) -> _Header:
    """Name (default: the file name), texts, groups (only checked), gravity and structural damping."""
    name = data.get("name") or Path(source).stem
    description = c.text("description", data.get("description"), L.MAX_TEXT)
    notes = c.text("notes", data.get("notes"), L.MAX_TEXT)
    if "groups" in data and not isinstance(data["groups"], (dict, list)):
        c.fail("groups", f"must be a mapping or a list, got {show(data['groups'])}", "remove 'groups' or fix it")
    _depth_ok(c, data.get("groups"))
    gravity = c.vector3("gravity", "gravity", data.get("gravity", [0.0, 0.0, -9.81]), unit="m/s^2")
    if math.hypot(*gravity) > L.MAX_GRAVITY:
        c.fail("gravity", f"|gravity| = {math.hypot(*gravity):g} m/s^2 is outside the supported range "
               f"[0, {L.MAX_GRAVITY:g}] m/s^2", "give gravity in m/s^2, e.g. [0, 0, -9.81]")
    structural_damping = c.number("structural_damping", "structural_damping", data.get("structural_damping", 0.0),
                                  minimum=0.0, maximum=L.MAX_STRUCTURAL_DAMPING, unit="1/s")
    return _Header(name, description, notes, gravity, structural_damping)


def _read_nodes(r: _Reading, data: dict) -> list:
    """The NodeSpecs (a node list is required); fills ``r.node_pos``."""
    c, nodes = r.c, []
    raw_nodes = c.items("nodes", data.get("nodes"), L.MAX_NODES, "nodes",
                        "list the nodes: '- {name: n1, position: [x, y, z]}'", required=True)
    for i, item in enumerate(raw_nodes):
        c.keys(f"nodes[{i}]", item, _NODE_KEYS, ("name", "position"))
        nm = c.name("nodes", i, item, r.seen)
        el = f"node '{nm}'"
        fixed = item.get("fixed", False)
        if not isinstance(fixed, bool):
            c.fail(el, f"'fixed' must be true or false, got {show(fixed)}", "write 'fixed: true' or leave it out")
        nodes.append(NodeSpec(nm, c.vector3(el, "position", item["position"], limit=MAX_COORDINATE), fixed,
                              c.mass(el, "mass", item.get("mass", 0.0)), read_marker(c, el, item.get("marker"))))
    r.node_pos.update((n.name, n.position) for n in nodes)
    return nodes


def _named_items(r: _Reading, data: dict, section: str, limit: int, example: str, keys, required, noun: str):
    """(entry, name, element label such as "bar 'b1'") of each entry of a list of named elements, after the
    list's size, each entry's keys and its unique name are checked (errors name the file, element and fix)."""
    c = r.c
    for i, item in enumerate(c.items(section, data.get(section), limit, section, example)):
        c.keys(f"{section}[{i}]", item, keys, required)
        nm = c.name(section, i, item, r.seen)
        yield item, nm, f"{noun} '{nm}'"


def _read_bars(r: _Reading, data: dict) -> list:
    """The BarSpecs: two different nodes apart, declared length (a check) matching their distance."""
    c, bars = r.c, []
    for item, nm, el in _named_items(r, data, "bars", L.MAX_BARS,
                                     "write 'bars: [- {name: b1, nodes: [n1, n2], mass: 0.1}]'",
                                     _BAR_KEYS, ("name", "nodes", "mass"), "bar"):
        ends = item["nodes"]
        if not isinstance(ends, (list, tuple)) or len(ends) != 2:
            c.fail(el, f"'nodes' must list exactly two nodes, got {show(ends)}", "write 'nodes: [n_a, n_b]'")
        a, b = (r.node_ref(el, "nodes", e) for e in ends)
        if a == b:
            c.fail(el, f"both ends are node '{a}'", "connect two different nodes")
        length = math.dist(r.node_pos[a], r.node_pos[b])
        if length < 1e-9:
            c.fail(el, f"zero length: nodes '{a}' and '{b}' are at the same position",
                   "move one of the nodes; bar lengths come from node positions")
        if "length" in item:
            want = _length(c, el, "length", item["length"])
            if abs(want - length) > 1e-6 * max(1.0, want):
                c.fail(el, f"declared length {want} m differs from the node distance {length:.9g} m",
                       "correct the node positions or the 'length' (it is only a check)")
        mass = c.mass(el, "mass", item["mass"])
        bars.append(BarSpec(nm, (a, b), mass, c.number(el, "radius", item.get("radius", 0.005), minimum=0.0,
                                                       maximum=L.MAX_RADIUS, unit="m")))
    return bars


def _read_strings(r: _Reading, data: dict) -> list:
    """The StringSpecs, keeping the total number of path segments within ``MAX_SEGMENTS``."""
    c, strings, n_segments = r.c, [], 0
    for item, nm, el in _named_items(r, data, "strings", L.MAX_STRINGS,
                                     "write 'strings: [- {name: s1, path: [n1, n2], ...}]'",
                                     _STRING_KEYS, ("name", "path"), "string"):
        path, n_segments = _string_path(r, el, item["path"], n_segments)
        strings.append(_string_spec(r.c, nm, el, item, path))
    return strings


def _string_path(r: _Reading, el: str, path, n_segments: int) -> tuple:
    """(The path as node names, the running segment count): two or more declared nodes, no zero segment."""
    c = r.c
    if not isinstance(path, (list, tuple)) or len(path) < 2:
        c.fail(el, f"'path' must list at least two nodes, got {show(path)}",
               "write 'path: [n_a, n_b]' (or more nodes for a composite string)")
    if len(path) > L.MAX_PATH:
        c.fail(el, f"'path' lists {len(path):,} nodes, more than the supported {L.MAX_PATH:,}",
               "split the string")
    n_segments += len(path) - 1
    if n_segments > L.MAX_SEGMENTS:
        c.fail(el, f"the string paths have more than the supported {L.MAX_SEGMENTS:,} segments in total",
               "split the model")
    path = tuple(r.node_ref(el, "path", p) for p in path)
    for p, q in zip(path[:-1], path[1:]):
        if p == q:
            c.fail(el, f"path visits node '{p}' twice in a row", "remove the repeated node from 'path'")
        if math.dist(r.node_pos[p], r.node_pos[q]) < 1e-9:
            c.fail(el, f"segment {p}-{q} has zero length", "move the nodes apart or change the path")
    return path, n_segments


def _string_spec(c: Checker, nm: str, el: str, item: dict, path: tuple) -> StringSpec:
    """A string's stiffness (EA [N] or stiffness [N/m]), rest length [m] or tension [N], damping and pulley
    friction, radius [m] and group, on its checked ``path``."""
    has_ea, has_k = "EA" in item, "stiffness" in item
    if has_ea == has_k:
        c.fail(el, "give exactly one of 'EA' [N] (axial rigidity) or 'stiffness' [N/m]",
               "use 'EA' for a string whose stiffness scales with rest length, 'stiffness' for a spring")
    ea = c.number(el, "EA", item["EA"], positive=True, maximum=L.MAX_STIFFNESS, unit="N") if has_ea else None
    k = (c.number(el, "stiffness", item["stiffness"], positive=True, maximum=L.MAX_STIFFNESS, unit="N/m")
         if has_k else None)
    has_rest, has_t = "rest_length" in item, "tension" in item
    if has_rest and has_t:
        c.fail(el, "give 'rest_length' or 'tension', not both",
               "keep 'rest_length' [m], or 'tension' [N] to derive it from the initial configuration")
    rest = _length(c, el, "rest_length", item["rest_length"]) if has_rest else None
    tension = (c.number(el, "tension", item["tension"], minimum=0.0, maximum=L.MAX_TENSION, unit="N")
               if has_t else None)
    damping = c.number(el, "damping", item.get("damping", 0.0), minimum=0.0, maximum=L.MAX_DAMPING,
                       unit="N s/m")
    radius = c.number(el, "radius", item.get("radius", 0.001), minimum=0.0, maximum=L.MAX_RADIUS, unit="m")
    pulley, mu = _pulley_friction(c, el, item, path)
    return StringSpec(nm, path, ea, k, damping, rest, tension, radius,
                      c.text(f"{el}: 'group'", item.get("group"), L.MAX_LABEL, allow_newlines=False),
                      pulley, mu)


def _pulley_friction(c: Checker, el: str, item: dict, path: tuple) -> tuple:
    """(pulley_damping [N s/m], pulley_friction_coefficient μ): only for a path through a node (3+ nodes)."""
    pulley = c.number(el, "pulley_damping", item.get("pulley_damping", 0.0), minimum=0.0, maximum=L.MAX_DAMPING,
                      unit="N s/m")
    if pulley > 0 and len(path) < 3:
        c.fail(el, "has 'pulley_damping' but its path passes through no node (two nodes only)",
               "remove 'pulley_damping' (use 'damping' for a simple string) or list the nodes it passes through")
    mu = c.number(el, "pulley_friction_coefficient",
                  item.get("pulley_friction_coefficient", PULLEY_FRICTION_COEFFICIENT), minimum=0.0,
                  maximum=MAX_FRICTION_COEFFICIENT, unit="")
    if "pulley_friction_coefficient" in item and len(path) < 3:
        c.fail(el, "has 'pulley_friction_coefficient' but its path passes through no node (two nodes only)",
               "remove 'pulley_friction_coefficient' or list the nodes the string passes through")
    return pulley, mu


def _read_constraints(r: _Reading, data: dict) -> list:
    """The ConstraintSpecs: sum(coefficient * node position) = value [m], at least one coefficient non-zero."""
    c, constraints = r.c, []
    for item, nm, el in _named_items(r, data, "constraints", L.MAX_CONSTRAINTS,
                                     "write 'constraints: [- {name: c1, terms: {n1: 1, n2: -1}}]'",
                                     _CONSTRAINT_KEYS, ("name", "terms"), "constraint"):
        terms = item["terms"]
        if not isinstance(terms, dict) or not terms:
            c.fail(el, "references no node ('terms' missing or empty)",
                   "write 'terms: {n13: 1, n11: -0.5, n12: -0.5}' meaning sum(coef * node) = value")
        if len(terms) > L.MAX_TERMS:
            c.fail(el, f"has {len(terms):,} terms, more than the supported {L.MAX_TERMS}", "split the constraint")
        parsed = tuple((r.node_ref(el, "terms", n), c.number(el, f"terms.{n}", v, limit=L.MAX_COEFFICIENT))
                       for n, v in terms.items())
        if all(v == 0 for _, v in parsed):
            c.fail(el, "all coefficients are zero, so it constrains nothing", "give at least one non-zero coefficient")
        value = c.vector3(el, "value", item.get("value", [0.0, 0.0, 0.0]), limit=MAX_COORDINATE)
        constraints.append(ConstraintSpec(nm, parsed, value))
    return constraints


def _read_actuators(r: _Reading, data: dict, strings: list) -> list:
    """The ActuatorSpecs: each drives one declared string, and no string has two actuators."""
    c, actuators = r.c, []
    string_names = {s.name for s in strings}
    driven = {}                     # string -> actuator
    for item, nm, el in _named_items(r, data, "actuators", L.MAX_ACTUATORS,
                                     "write 'actuators: [- {name: m1, string: s1, spool_radius: 0.02}]'",
                                     _ACTUATOR_KEYS, ("name", "string", "spool_radius"), "actuator"):
        if not isinstance(item["string"], str) or item["string"] not in string_names:
            c.fail(el, f"'string' references unknown string {show(item['string'])}", "name one of the declared strings")
        if item["string"] in driven:
            c.fail(el, f"drives string '{item['string']}', which actuator '{driven[item['string']]}' already drives",
                   "use one actuator per string (remove one, or point it at another string)")
        driven[item["string"]] = nm
        actuators.append(_actuator_spec(c, nm, el, item))
    return actuators


def _actuator_spec(c: Checker, nm: str, el: str, item: dict) -> ActuatorSpec:
    """An actuator's sign (±1), angle limits and zero angle [rad], spool radius [m], motor label and delay [s]."""
    sign = c.number(el, "sign", item.get("sign", 1.0))
    if sign not in (1.0, -1.0):
        c.fail(el, f"'sign' must be 1 or -1, got {sign}", "use 1 if a positive motor angle reels the string in")
    lim = item.get("angle_limits", [-2 * math.pi, 2 * math.pi])
    if not isinstance(lim, (list, tuple)) or len(lim) != 2:
        c.fail(el, f"'angle_limits' must be [min, max] in rad, got {show(lim)}",
               "write 'angle_limits: [-3.14, 3.14]'")
    lo, hi = (c.number(el, "angle_limits", v, limit=L.MAX_ANGLE, unit="rad") for v in lim)
    if lo >= hi:
        c.fail(el, f"'angle_limits' min {lo} >= max {hi}", "give [min, max] with min < max")
    zero = c.number(el, "zero", item.get("zero", 0.0), limit=L.MAX_ANGLE, unit="rad")
    if not lo <= zero <= hi:
        c.fail(el, f"'zero' angle {zero} rad lies outside 'angle_limits' [{lo}, {hi}], so the initial state "
               "(nothing reeled in, u = 0) already violates the limits",
               "set 'zero' to the motor angle at the model's rest lengths, within 'angle_limits' (or widen them)")
    spool = c.in_range(el, "spool_radius", item["spool_radius"], *L.SPOOL_RANGE, "m")
    motor = c.text(f"{el}: 'motor'", item.get("motor", ""), L.MAX_LABEL, allow_newlines=False)
    delay = c.number(el, "delay", item.get("delay", 0.0), minimum=0.0, maximum=L.MAX_DELAY, unit="s")
    return ActuatorSpec(nm, item["string"], spool, sign, zero, (lo, hi), motor, delay)


def _read_frames(r: _Reading, data: dict) -> list:
    """The FrameSpecs: three different nodes and the one the x axis points to."""
    c, frames = r.c, []
    for item, nm, el in _named_items(r, data, "frames", L.MAX_FRAMES,
                                     "write 'frames: [- {name: C1, nodes: [a, b, c]}]'",
                                     _FRAME_KEYS, ("name", "nodes"), "frame"):
        fn = item["nodes"]
        if not isinstance(fn, (list, tuple)) or len(fn) != 3:
            c.fail(el, f"'nodes' must list three different nodes, got {show(fn)}",
                   "write 'nodes: [a, b, c]' in the order that makes z = (b-a) x (c-a) point the way you want")
        fn = tuple(r.node_ref(el, "nodes", n) for n in fn)
        if len(set(fn)) != 3:
            c.fail(el, f"'nodes' must list three different nodes, got {list(fn)!r}",
                   "write 'nodes: [a, b, c]' in the order that makes z = (b-a) x (c-a) point the way you want")
        xn = r.node_ref(el, "x_node", item.get("x_node", fn[0]))
        if xn not in fn:
            c.fail(el, f"'x_node' {xn!r} is not one of the frame nodes", "pick x_node among the three frame nodes")
        frames.append(FrameSpec(nm, fn, xn))
    return frames


def _spec_from_dict(data, source) -> ModelSpec:
    """The checks in file order (the first problem is reported): top level, nodes, bars, strings,
    constraints, actuators, frames, obstacles, supports. Names are unique across all element kinds."""
    c = Checker(source)
    _check_schema(c, data)
    head = _read_header(c, data, source)
    r = _Reading(c)
    nodes = _read_nodes(r, data)
    bars = _read_bars(r, data)
    strings = _read_strings(r, data)
    nodes = check_markers(c, nodes, bars, strings, r.node_pos)
    if not bars and not strings:
        c.fail("model", "has neither bars nor strings", "add at least one bar or string")
    constraints = _read_constraints(r, data)
    actuators = _read_actuators(r, data, strings)
    frames = _read_frames(r, data)
    obstacles = read_obstacles(c, r.seen, data)
    supports = read_supports(c, r.seen, data, r.node_pos, bars)
    return ModelSpec(source, str(head.name), head.description, head.gravity, tuple(nodes), tuple(bars),
                     tuple(strings), tuple(constraints), tuple(actuators), tuple(frames), head.notes,
                     {k: data[k] for k in ("groups",) if k in data}, head.structural_damping,
                     tuple(obstacles), tuple(supports))
