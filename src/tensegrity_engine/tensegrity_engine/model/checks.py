"""Limits and value checks for model files (documented in ``docs/model_schema.md``, "Limits").

Model files and model descriptions come from users and from the unauthenticated ``model_description``
topic, so every value is type-checked and range-checked here before anything is computed from it.
The ranges are far outside any real tensegrity robot (lab prototypes to building-sized towers) yet keep
the numerics meaningful: a radius of 1e308 m or a gravity of 1e300 m/s² overflows the collision and
force computations long before it could describe a robot.
"""
from __future__ import annotations

import math
import numbers
import re
import reprlib
import unicodedata

from tensegrity_engine.errors import ModelError

# --- size limits: generous for 5,000-bar structures; they bound the time and memory of validation ---------
MAX_FILE_BYTES = 50 * 2**20     # bytes of model text (YAML file or JSON description)
MAX_NODES = 20_000
MAX_BARS = 20_000
MAX_STRINGS = 100_000
MAX_SEGMENTS = 300_000          # simple strings over all string paths (a composite string has several)
MAX_PATH = 1_000                # nodes in one string path
MAX_CONSTRAINTS = 20_000
MAX_TERMS = 100                 # nodes in one constraint
MAX_ACTUATORS = 10_000
MAX_FRAMES = 10_000
MAX_TEXT = 10_000               # characters of 'description' / 'notes'
MAX_LABEL = 200                 # characters of 'group' / 'motor'

# --- physical ranges (SI). Each bound is orders of magnitude beyond real robots (see module docstring) ---
MAX_COORDINATE = 1e6            # m, |x|, |y|, |z| of every node position (and constraint values)
MASS_RANGE = (1e-9, 1e9)        # kg, every non-zero bar or point mass (a dust grain .. a large ship)
LENGTH_RANGE = (1e-6, 1e7)      # m, rest lengths and declared bar lengths (a micrometre .. 4 x node range)
MAX_RADIUS = 10.0               # m, bar and string radius (the thickest mast of a tensegrity tower is < 1 m)
MAX_STIFFNESS = 1e12            # N/m spring stiffness, and N for EA (a 0.1 m^2 steel section is 2e10 N)
MAX_DAMPING = 1e9               # N s/m string damping
MAX_DELAY = 1.0                 # s, actuator dead time
MAX_TENSION = 1e9               # N initial string tension (a bridge cable carries ~1e7 N)
MAX_STRUCTURAL_DAMPING = 1e4    # 1/s (a time constant of 0.1 ms; real structures need < 10 1/s)
MAX_GRAVITY = 100.0             # m/s^2, |g| (10 g: Jupiter is 25 m/s^2, a centrifuge test is still below)
MAX_ANGLE = 1e4                 # rad, |angle limits| and |zero| (1,600 motor turns)
SPOOL_RANGE = (1e-6, 10.0)      # m, spool radius
MAX_COEFFICIENT = 1e6           # |coefficient| of a node in a linear constraint

NAME_RULE = r"[A-Za-z_][A-Za-z0-9_.\-]{0,63}"
_NAME = re.compile(NAME_RULE + r"\Z")
_ALLOWED_CONTROL = {"\n", "\t", "\r"}

_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = 60
_repr.maxlevel, _repr.maxlist, _repr.maxdict = 2, 5, 4


def show(value) -> str:
    """A short repr of any (possibly huge, nested or self-referencing) value for an error message."""
    try:
        return _repr.repr(value)
    except Exception:                     # a hostile object: never let the message itself fail
        return f"<{type(value).__name__}>"


def bad_text_char(text: str, allow_newlines: bool):
    """The first character that may not appear in a text field (controls, bidi overrides), or None."""
    for ch in text:
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            if allow_newlines and ch in _ALLOWED_CONTROL:
                continue
            return ch
    return None


class Checker:
    """Turns bad values into ModelErrors with the source attached."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, element, problem, fix):
        raise ModelError(self.source, element, problem, fix)

    def number(self, element, key, value, *, minimum=None, positive=False, allow_zero=True, limit=None,
               maximum=None, unit=""):
        """A finite real number; ``limit`` bounds |value|, ``minimum``/``maximum`` the value itself."""
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            self.fail(element, f"'{key}' must be a number, got {show(value)}", f"write a plain number for '{key}'")
        try:
            value = float(value)
        except (OverflowError, ValueError, TypeError):
            value = math.inf
        u = f" {unit}" if unit else ""
        if not math.isfinite(value):
            self.fail(element, f"'{key}' is {value}", f"give a finite value for '{key}'")
        if positive and value <= 0:
            self.fail(element, f"'{key}' must be positive, got {value}", f"use a value > 0 for '{key}'")
        if minimum is not None and value < minimum:
            self.fail(element, f"'{key}' must be >= {minimum:g}{u}, got {value}",
                      f"use a value >= {minimum:g}{u} for '{key}'")
        if not allow_zero and value == 0:
            self.fail(element, f"'{key}' must not be zero", f"use a non-zero '{key}'")
        if limit is not None and abs(value) > limit:
            place = " and place the model near the origin" if unit == "m" else ""
            self.fail(element, f"'{key}' value {value:g} is outside the supported range [-{limit:g}, {limit:g}]{u}",
                      f"give '{key}' in SI units ({unit}){place}" if unit else
                      f"give '{key}' a value within ±{limit:g} (it has no unit)")
        if maximum is not None and value > maximum:
            lo = minimum if minimum is not None else 0
            self.fail(element, f"'{key}' value {value:g}{u} is outside the supported range [{lo:g}, {maximum:g}]{u}",
                      f"give '{key}' in SI units ({unit}); no real robot needs more" if unit else
                      f"use a value in [{lo:g}, {maximum:g}] for '{key}' (it has no unit)")
        return value

    def in_range(self, element, key, value, lo, hi, unit, zero_ok=False):
        """A number in [lo, hi] (or exactly 0 if ``zero_ok``)."""
        value = self.number(element, key, value, minimum=0.0 if zero_ok else None, positive=lo > 0 and not zero_ok)
        if not (zero_ok and value == 0) and not lo <= value <= hi:
            zero = ", or 0" if zero_ok else ""
            self.fail(element, f"'{key}' {value:g} {unit} is outside the supported range [{lo:g}, {hi:g}] {unit}"
                      f"{zero}", f"give '{key}' in {unit} (SI units){zero}")
        return value

    def mass(self, element, key, value):
        """A mass [kg]: 0, or within MASS_RANGE."""
        lo, hi = MASS_RANGE
        value = self.number(element, key, value, minimum=0.0)
        if value != 0 and not lo <= value <= hi:
            self.fail(element, f"'{key}' {value:g} kg is outside the supported range [{lo:g}, {hi:g}] kg",
                      f"give '{key}' in kg (SI units), or 0 for no mass")
        return value

    def vector3(self, element, key, value, limit=None, unit="m"):
        if not isinstance(value, (list, tuple)) or len(value) != 3:
            what = f"in {unit}" if unit else "(no unit)"
            self.fail(element, f"'{key}' must be a list of three numbers [x, y, z] {what}, got {show(value)}",
                      f"write '{key}: [x, y, z]'")
        return tuple(self.number(element, key, v, limit=limit, unit=unit) for v in value)

    def items(self, element, value, maximum, what, fix, required=False):
        """A list of at most ``maximum`` elements (``None``/missing -> empty unless required)."""
        if value is None and not required:
            return []
        if not isinstance(value, (list, tuple)) or (required and not value):
            self.fail(element, f"must be a {'non-empty ' if required else ''}list of {what}, got {show(value)}",
                      fix)
        if len(value) > maximum:
            self.fail(element, f"has {len(value):,} entries, more than the supported {maximum:,}",
                      f"split the model, or raise the limit in tensegrity_engine/model/checks.py "
                      f"(docs/model_schema.md, 'Limits')")
        return value

    def typed_items(self, section, value, maximum, example, types, type_fix):
        """(index, entry, its 'type') of each entry of a list of typed elements (obstacles, supports): the list's
        size checked, and every 'type' one of ``types`` (else the error lists them with ``type_fix``)."""
        for i, item in enumerate(self.items(section, value, maximum, section, example)):
            kind = item.get("type") if isinstance(item, dict) else None
            if kind not in types:
                self.fail(f"{section}[{i}]", f"'type' must be one of {list(types)}, got {show(kind)}", type_fix)
            yield i, item, kind

    def text(self, element, value, maximum, allow_newlines=True):
        """Free text: a string of at most ``maximum`` characters without control or bidi characters."""
        if value is None:
            return ""
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() < 64 or (
                isinstance(value, float) and math.isfinite(value)):
            value = str(value)                  # 'group: 1' or 'motor: 54' reads as a number
        if not isinstance(value, str):
            self.fail(element, f"must be text, got {show(value)}", "quote the text")
        if len(value) > maximum:
            self.fail(element, f"is {len(value):,} characters long, more than {maximum:,}", "shorten it")
        ch = bad_text_char(value, allow_newlines)
        if ch is not None:
            self.fail(element, f"contains the control/formatting character U+{ord(ch):04X} "
                      f"({unicodedata.name(ch, 'unnamed')})", "remove it (only printable text is allowed)")
        return value

    def keys(self, element, item, allowed, required):
        if not isinstance(item, dict):
            self.fail(element, f"expected a mapping, got {show(item)}", "write the element as 'key: value' pairs")
        nm = item.get("name")
        if isinstance(nm, str) and _NAME.match(nm) and "[" in element:
            element = f"{element.split('[')[0][:-1]} '{nm}' ({element})"
        unknown = [k for k in item if k not in allowed]
        if unknown:
            self.fail(element, f"unknown key(s) {show(sorted(map(str, unknown))[:5])}", f"use only {sorted(allowed)}")
        for k in required:
            if k not in item:
                self.fail(element, f"missing '{k}'", f"add '{k}' (see the model schema in docs/model_schema.md)")

    def name(self, kind, index, item, seen):
        raw = item.get("name")
        element = f"{kind}[{index}]"
        if not isinstance(raw, str) or not raw.strip():
            self.fail(element, f"missing or empty 'name' (got {show(raw)})", f"give every {kind[:-1]} a unique name")
        if not _NAME.match(raw):
            self.fail(element, f"name {show(raw)} is not a plain identifier",
                      f"use letters, digits, '_', '.', '-' (starting with a letter or '_', at most 64 "
                      f"characters; rule {NAME_RULE})")
        if raw in seen:
            self.fail(f"{kind[:-1]} '{raw}'", f"duplicate name (also {seen[raw]})",
                      "rename one of them: names must be unique across nodes, bars, strings, "
                      "constraints, actuators, frames and obstacles")
        seen[raw] = f"{kind}[{index}]"
        return raw


def valid_name(value) -> bool:
    """True if ``value`` follows NAME_RULE."""
    return isinstance(value, str) and _NAME.match(value) is not None


def falls_freely(model) -> bool:
    """True if gravity pulls on ``model`` and nothing holds it: no obstacle, no translational support, and its
    constraints allow a rigid translation (no node held by ``fixed``, a clamp or constraints pinning it: a
    translation moves the free-node coordinates Y by d and every node by Q·1·d, so it is allowed exactly when
    Q·1 = 1). Rotational supports alone hold a direction, not a place."""
    import numpy as np
    if not math.hypot(*model.gravity) or model.obstacles or (~model.supports.rotational).any():
        return False
    Q = model.Q_sparse
    return bool(np.allclose(Q @ np.ones(Q.shape[1]), 1.0, rtol=0.0, atol=1e-9))
