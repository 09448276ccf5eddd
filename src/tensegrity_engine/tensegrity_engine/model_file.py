"""Reading and validating tensegrity model files (YAML, schema ``tensegrity-model`` version 1).

This module only checks the *file*: names, references, numbers and shapes. The physics-level checks
(constraint consistency, masses, redundant bars) happen when the :class:`~tensegrity_engine.model.Model`
is built. Every error is a :class:`~tensegrity_engine.errors.ModelError` naming the file, the element
and the fix. The schema is documented in ``docs/model_schema.md`` (README links to it).
"""
from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .errors import ModelError

SCHEMA_NAME = "tensegrity-model"
SCHEMA_VERSION = 1

_TOP_KEYS = {"schema", "version", "name", "description", "gravity", "structural_damping", "nodes", "bars", "strings",
             "constraints", "actuators", "frames", "groups", "notes",
             "resolved"}  # "resolved" is informational (written by the engine, ignored on load)
_NODE_KEYS = {"name", "position", "fixed", "mass"}
_BAR_KEYS = {"name", "nodes", "mass", "radius", "length"}
_STRING_KEYS = {"name", "path", "EA", "stiffness", "damping", "rest_length", "tension", "radius", "group"}
_CONSTRAINT_KEYS = {"name", "terms", "value"}
_ACTUATOR_KEYS = {"name", "string", "spool_radius", "sign", "zero", "angle_limits", "motor"}
_FRAME_KEYS = {"name", "nodes", "x_node"}

# supported ranges (docs/model_schema.md, "Limits"): outside them the numerics lose their meaning (a bar of
# 1e308 kg or a node 1e200 m away overflows the constraint checks) long before a model is physical
MAX_COORDINATE = 1e6            # m, |x|, |y|, |z| of every node position
MASS_RANGE = (1e-9, 1e9)        # kg, every non-zero bar or point mass


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads ``1e5``, ``1.0e5`` and ``2E-3`` as numbers.

    PyYAML follows YAML 1.1, where a float needs a dot *and* a signed exponent (``1.0e+5``); everything
    else in scientific notation silently became a string and was then rejected as "not a number".

    It also rejects duplicate keys in a mapping (plain YAML keeps the last one, so a second ``bars:``
    block would silently drop the first).
    """

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node.start_mark)
                except TypeError:           # unhashable key: the base class reports it
                    continue
                if first is not key_node.start_mark:
                    raise _DuplicateKey(key, key_node.start_mark, first)
        return super().construct_mapping(node, deep=deep)


class _DuplicateKey(yaml.YAMLError):
    def __init__(self, key, mark, first):
        super().__init__(f"duplicate key {key!r}")
        self.key, self.mark, self.first = key, mark, first


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+.0123456789"))


@dataclass(frozen=True)
class NodeSpec:
    name: str
    position: tuple
    fixed: bool = False
    mass: float = 0.0


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


class _Checker:
    """Small helper that turns bad values into ModelErrors with the source attached."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, element: str, problem: str, fix: str):
        raise ModelError(self.source, element, problem, fix)

    def number(self, element, key, value, *, minimum=None, positive=False, allow_zero=True, limit=None):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            self.fail(element, f"'{key}' must be a number, got {value!r}", f"write a plain number for '{key}'")
        try:
            value = float(value)
        except OverflowError:
            value = math.inf
        if not math.isfinite(value):
            self.fail(element, f"'{key}' is {value}", f"give a finite value for '{key}'")
        if positive and value <= 0:
            self.fail(element, f"'{key}' must be positive, got {value}", f"use a value > 0 for '{key}'")
        if minimum is not None and value < minimum:
            self.fail(element, f"'{key}' must be >= {minimum}, got {value}",
                      f"use a value >= {minimum} for '{key}'")
        if not allow_zero and value == 0:
            self.fail(element, f"'{key}' must not be zero", f"use a non-zero '{key}'")
        if limit is not None and abs(value) > limit:
            self.fail(element, f"'{key}' value {value:g} is outside the supported range [-{limit:g}, {limit:g}]",
                      f"give '{key}' in SI units (m) and place the model near the origin")
        return value

    def mass(self, element, key, value):
        """A mass [kg]: 0, or within MASS_RANGE."""
        value = self.number(element, key, value, minimum=0.0)
        lo, hi = MASS_RANGE
        if value != 0 and not lo <= value <= hi:
            self.fail(element, f"'{key}' {value:g} kg is outside the supported range [{lo:g}, {hi:g}] kg",
                      f"give '{key}' in kg (SI units), or 0 for no mass")
        return value

    def vector3(self, element, key, value, limit=None):
        if not isinstance(value, (list, tuple)) or len(value) != 3:
            self.fail(element, f"'{key}' must be a list of three numbers [x, y, z] in metres, got {value!r}",
                      f"write '{key}: [x, y, z]'")
        return tuple(self.number(element, key, v, limit=limit) for v in value)

    def keys(self, element, item, allowed, required):
        if not isinstance(item, dict):
            self.fail(element, f"expected a mapping, got {item!r}", "write the element as 'key: value' pairs")
        nm = item.get("name")
        if isinstance(nm, str) and nm.strip() and "[" in element:
            element = f"{element.split('[')[0][:-1]} '{nm}' ({element})"
        unknown = set(item) - allowed
        if unknown:
            self.fail(element, f"unknown key(s) {sorted(unknown)}", f"use only {sorted(allowed)}")
        for k in required:
            if k not in item:
                self.fail(element, f"missing '{k}'", f"add '{k}' (see the model schema in docs/model_schema.md)")

    def name(self, kind, index, item, seen):
        raw = item.get("name")
        element = f"{kind}[{index}]"
        if not isinstance(raw, str) or not raw.strip():
            self.fail(element, f"missing or empty 'name' (got {raw!r})", f"give every {kind[:-1]} a unique name")
        if raw in seen:
            self.fail(f"{kind[:-1]} '{raw}'", f"duplicate name (also {seen[raw]})",
                      "rename one of them: names must be unique across nodes, bars, strings, "
                      "constraints, actuators and frames")
        seen[raw] = f"{kind}[{index}]"
        return raw


def load_spec(source) -> ModelSpec:
    """Read a model file (path) and validate it. Raises ModelError on any problem."""
    path = Path(source)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ModelError(str(path), "file", f"cannot be read ({exc.strerror})",
                         "check the path, or use a built-in model name (tensegrity models)") from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ModelError(str(path), f"line {line}", f"is not UTF-8 text (byte 0x{raw[exc.start]:02x} at column "
                         f"{column})", "save the file with UTF-8 encoding (or remove the special character)") from None
    try:
        data = yaml.load(text, Loader=_Loader)
    except _DuplicateKey as exc:
        raise ModelError(str(path), f"line {exc.mark.line + 1}, column {exc.mark.column + 1}",
                         f"duplicate key '{exc.key}' (already given at "
                         f"line {exc.first.line + 1}; YAML would silently keep only the last one)",
                         f"merge the two '{exc.key}' entries into one") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "YAML"
        raise ModelError(str(path), where, f"is not valid YAML ({getattr(exc, 'problem', exc)})",
                         "fix the YAML syntax (indentation, colons, brackets)") from exc
    return spec_from_dict(data, str(path))


def spec_from_dict(data, source: str = "<dict>") -> ModelSpec:
    """Validate a model given as a dictionary (as read from YAML)."""
    c = _Checker(source)
    if not isinstance(data, dict):
        c.fail("file", "top level must be a mapping", f"start the file with 'schema: {SCHEMA_NAME}'")
    unknown = set(data) - _TOP_KEYS
    if unknown:
        c.fail("top level", f"unknown key(s) {sorted(unknown)}", f"use only {sorted(_TOP_KEYS)}")
    if data.get("schema") != SCHEMA_NAME:
        c.fail("schema", f"expected 'schema: {SCHEMA_NAME}', got {data.get('schema')!r}",
               f"add 'schema: {SCHEMA_NAME}' and 'version: {SCHEMA_VERSION}' at the top")
    if data.get("version") != SCHEMA_VERSION:
        c.fail("version", f"unsupported schema version {data.get('version')!r}",
               f"this engine reads version {SCHEMA_VERSION}; write 'version: {SCHEMA_VERSION}'")
    if "name" in data and (not isinstance(data["name"], str) or not data["name"].strip()):
        c.fail("name", f"must be a non-empty text, got {data['name']!r}",
               "write 'name: my_model', or leave 'name' out to use the file name")
    name = data.get("name") or Path(source).stem
    gravity = c.vector3("gravity", "gravity", data.get("gravity", [0.0, 0.0, -9.81]))
    structural_damping = c.number("structural_damping", "structural_damping", data.get("structural_damping", 0.0),
                                  minimum=0.0)
    seen: dict = {}

    nodes = []
    raw_nodes = data.get("nodes")
    if not isinstance(raw_nodes, list) or not raw_nodes:
        c.fail("nodes", "missing or empty list", "list the nodes: '- {name: n1, position: [x, y, z]}'")
    for i, item in enumerate(raw_nodes):
        c.keys(f"nodes[{i}]", item, _NODE_KEYS, ("name", "position"))
        nm = c.name("nodes", i, item, seen)
        el = f"node '{nm}'"
        fixed = item.get("fixed", False)
        if not isinstance(fixed, bool):
            c.fail(el, f"'fixed' must be true or false, got {fixed!r}", "write 'fixed: true' or leave it out")
        nodes.append(NodeSpec(nm, c.vector3(el, "position", item["position"], limit=MAX_COORDINATE), fixed,
                              c.mass(el, "mass", item.get("mass", 0.0))))
    node_names = {n.name for n in nodes}
    node_pos = {n.name: n.position for n in nodes}

    def node_ref(el, key, ref):
        if not isinstance(ref, str) or ref not in node_names:
            c.fail(el, f"'{key}' references unknown node {ref!r}",
                   f"use one of the declared nodes ({', '.join(sorted(node_names)[:8])}"
                   f"{', ...' if len(node_names) > 8 else ''}) or declare it under 'nodes'")
        return ref

    bars = []
    for i, item in enumerate(data.get("bars") or []):
        c.keys(f"bars[{i}]", item, _BAR_KEYS, ("name", "nodes", "mass"))
        nm = c.name("bars", i, item, seen)
        el = f"bar '{nm}'"
        ends = item["nodes"]
        if not isinstance(ends, (list, tuple)) or len(ends) != 2:
            c.fail(el, f"'nodes' must list exactly two nodes, got {ends!r}", "write 'nodes: [n_a, n_b]'")
        a, b = (node_ref(el, "nodes", e) for e in ends)
        if a == b:
            c.fail(el, f"both ends are node '{a}'", "connect two different nodes")
        length = math.dist(node_pos[a], node_pos[b])
        if length < 1e-9:
            c.fail(el, f"zero length: nodes '{a}' and '{b}' are at the same position",
                   "move one of the nodes; bar lengths come from node positions")
        if "length" in item:
            want = c.number(el, "length", item["length"], positive=True)
            if abs(want - length) > 1e-6 * max(1.0, want):
                c.fail(el, f"declared length {want} m differs from the node distance {length:.9g} m",
                       "correct the node positions or the 'length' (it is only a check)")
        mass = c.mass(el, "mass", item["mass"])
        bars.append(BarSpec(nm, (a, b), mass, c.number(el, "radius", item.get("radius", 0.005), minimum=0.0)))

    strings = []
    for i, item in enumerate(data.get("strings") or []):
        c.keys(f"strings[{i}]", item, _STRING_KEYS, ("name", "path"))
        nm = c.name("strings", i, item, seen)
        el = f"string '{nm}'"
        path = item["path"]
        if not isinstance(path, (list, tuple)) or len(path) < 2:
            c.fail(el, f"'path' must list at least two nodes, got {path!r}",
                   "write 'path: [n_a, n_b]' (or more nodes for a composite string)")
        path = tuple(node_ref(el, "path", p) for p in path)
        for p, q in zip(path[:-1], path[1:]):
            if p == q:
                c.fail(el, f"path visits node '{p}' twice in a row", "remove the repeated node from 'path'")
            if math.dist(node_pos[p], node_pos[q]) < 1e-9:
                c.fail(el, f"segment {p}-{q} has zero length", "move the nodes apart or change the path")
        has_ea, has_k = "EA" in item, "stiffness" in item
        if has_ea == has_k:
            c.fail(el, "give exactly one of 'EA' [N] (axial rigidity) or 'stiffness' [N/m]",
                   "use 'EA' for a string whose stiffness scales with rest length, 'stiffness' for a spring")
        ea = c.number(el, "EA", item["EA"], positive=True) if has_ea else None
        k = c.number(el, "stiffness", item["stiffness"], positive=True) if has_k else None
        has_rest, has_t = "rest_length" in item, "tension" in item
        if has_rest and has_t:
            c.fail(el, "give 'rest_length' or 'tension', not both",
                   "keep 'rest_length' [m], or 'tension' [N] to derive it from the initial configuration")
        rest = c.number(el, "rest_length", item["rest_length"], positive=True) if has_rest else None
        tension = c.number(el, "tension", item["tension"], minimum=0.0) if has_t else None
        strings.append(StringSpec(nm, path, ea, k, c.number(el, "damping", item.get("damping", 0.0), minimum=0.0),
                                  rest, tension, c.number(el, "radius", item.get("radius", 0.001), minimum=0.0),
                                  str(item.get("group", ""))))
    if not bars and not strings:
        c.fail("model", "has neither bars nor strings", "add at least one bar or string")

    constraints = []
    for i, item in enumerate(data.get("constraints") or []):
        c.keys(f"constraints[{i}]", item, _CONSTRAINT_KEYS, ("name", "terms"))
        nm = c.name("constraints", i, item, seen)
        el = f"constraint '{nm}'"
        terms = item["terms"]
        if not isinstance(terms, dict) or not terms:
            c.fail(el, "references no node ('terms' missing or empty)",
                   "write 'terms: {n13: 1, n11: -0.5, n12: -0.5}' meaning sum(coef * node) = value")
        parsed = tuple((node_ref(el, "terms", n), c.number(el, f"terms.{n}", v)) for n, v in terms.items())
        if all(v == 0 for _, v in parsed):
            c.fail(el, "all coefficients are zero, so it constrains nothing", "give at least one non-zero coefficient")
        value = c.vector3(el, "value", item.get("value", [0.0, 0.0, 0.0]))
        constraints.append(ConstraintSpec(nm, parsed, value))

    string_names = {s.name for s in strings}
    actuators = []
    driven = {}                     # string -> actuator
    for i, item in enumerate(data.get("actuators") or []):
        c.keys(f"actuators[{i}]", item, _ACTUATOR_KEYS, ("name", "string", "spool_radius"))
        nm = c.name("actuators", i, item, seen)
        el = f"actuator '{nm}'"
        if not isinstance(item["string"], str) or item["string"] not in string_names:
            c.fail(el, f"'string' references unknown string {item['string']!r}", "name one of the declared strings")
        if item["string"] in driven:
            c.fail(el, f"drives string '{item['string']}', which actuator '{driven[item['string']]}' already drives",
                   "use one actuator per string (remove one, or point it at another string)")
        driven[item["string"]] = nm
        sign = c.number(el, "sign", item.get("sign", 1.0))
        if sign not in (1.0, -1.0):
            c.fail(el, f"'sign' must be 1 or -1, got {sign}", "use 1 if a positive motor angle reels the string in")
        lim = item.get("angle_limits", [-2 * math.pi, 2 * math.pi])
        if not isinstance(lim, (list, tuple)) or len(lim) != 2:
            c.fail(el, f"'angle_limits' must be [min, max] in rad, got {lim!r}", "write 'angle_limits: [-3.14, 3.14]'")
        lo, hi = (c.number(el, "angle_limits", v) for v in lim)
        if lo >= hi:
            c.fail(el, f"'angle_limits' min {lo} >= max {hi}", "give [min, max] with min < max")
        zero = c.number(el, "zero", item.get("zero", 0.0))
        if not lo <= zero <= hi:
            c.fail(el, f"'zero' angle {zero} rad lies outside 'angle_limits' [{lo}, {hi}], so the initial state "
                   "(nothing reeled in, u = 0) already violates the limits",
                   "set 'zero' to the motor angle at the model's rest lengths, within 'angle_limits' (or widen them)")
        actuators.append(ActuatorSpec(nm, item["string"], c.number(el, "spool_radius", item["spool_radius"], positive=True),
                                      sign, zero, (lo, hi), str(item.get("motor", ""))))

    frames = []
    for i, item in enumerate(data.get("frames") or []):
        c.keys(f"frames[{i}]", item, _FRAME_KEYS, ("name", "nodes"))
        nm = c.name("frames", i, item, seen)
        el = f"frame '{nm}'"
        fn = item["nodes"]
        if not isinstance(fn, (list, tuple)) or len(fn) != 3:
            c.fail(el, f"'nodes' must list three different nodes, got {fn!r}",
                   "write 'nodes: [a, b, c]' in the order that makes z = (b-a) x (c-a) point the way you want")
        fn = tuple(node_ref(el, "nodes", n) for n in fn)
        if len(set(fn)) != 3:
            c.fail(el, f"'nodes' must list three different nodes, got {list(fn)!r}",
                   "write 'nodes: [a, b, c]' in the order that makes z = (b-a) x (c-a) point the way you want")
        xn = node_ref(el, "x_node", item.get("x_node", fn[0]))
        if xn not in fn:
            c.fail(el, f"'x_node' {xn!r} is not one of the frame nodes", "pick x_node among the three frame nodes")
        frames.append(FrameSpec(nm, fn, xn))

    return ModelSpec(source, str(name), str(data.get("description", "")), gravity, tuple(nodes), tuple(bars),
                     tuple(strings), tuple(constraints), tuple(actuators), tuple(frames), str(data.get("notes", "")),
                     {k: data[k] for k in ("groups",) if k in data}, structural_damping)
