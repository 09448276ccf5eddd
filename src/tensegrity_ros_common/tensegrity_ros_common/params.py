"""Declaring a node's parameters from its table ``{name: (default, description)}``, checking their values,
and reporting overrides that name no declared parameter (typos in YAML files or ``-p``)."""
from __future__ import annotations

import difflib
import math

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.parameter import Parameter

RATE_RANGE = (1e-3, 1e6)    # Hz: timers outside this are mistakes (and rclpy cannot make some of them)


def declare(node, table: dict, prefix: str = "", live=()):
    """Declare every parameter of ``table`` on ``node`` (names prefixed with ``prefix``), with descriptions.
    Those not named in ``live`` (full names) are fixed at start-up (their descriptions say so; a
    :class:`.live_params.LiveParameters` refuses changes to them).

    An integer given for a float parameter (``physics_rate: 500`` in a file, ``-p physics_rate:=500``) is
    taken as that float; rclpy would refuse it as a type mismatch."""
    overrides = getattr(node, "_parameter_overrides", None)
    for name, (default, text) in table.items():
        full = prefix + name
        given = overrides.get(full) if isinstance(overrides, dict) else None
        if isinstance(default, float) and given is not None and given.type_ == Parameter.Type.INTEGER:
            overrides[full] = Parameter(full, Parameter.Type.DOUBLE, float(given.value))
        when = " (live: settable at run time)" if full in live else " (fixed at start-up)"
        node.declare_parameter(full, default, ParameterDescriptor(description=text + when))


def check(name: str, value, low: float = -math.inf, high: float = math.inf, *, low_open: bool = False,
          off: float | None = None) -> float:
    """``value`` as a float if finite and in [low, high] ((low, high] with ``low_open``; ``off`` is also
    accepted, e.g. 0 = off); else ValueError naming the parameter, the range and the value."""
    v = float(value)
    if off is not None and v == off:
        return v
    ok = math.isfinite(v) and (v > low if low_open else v >= low) and v <= high
    if not ok:
        lo = f"({low:g}" if low_open else f"[{low:g}"
        extra = f" or {off:g} (off)" if off is not None else ""
        raise ValueError(f"parameter '{name}' must be in {lo}, {high:g}]{extra}, got {value!r}")
    return v


def check_rate(name: str, value, *, off_ok: bool = False) -> float:
    """A rate [Hz] within RATE_RANGE (or 0 = off where ``off_ok``)."""
    return check(name, value, *RATE_RANGE, off=0.0 if off_ok else None)


def did_you_mean(name: str, known) -> str:
    """" (did you mean 'x'?)" for the closest of ``known`` names, or ''."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def unknown_overrides(node, dynamic_prefixes=()) -> list:
    """Parameter overrides given to ``node`` (parameter files, ``-p``) that it did not declare, as
    "name (did you mean 'x'?)" strings. rclpy silently ignores them, so a typo would go unnoticed."""
    overrides = getattr(node, "_parameter_overrides", {}) or {}
    known = list(getattr(node, "_parameters", {}))
    out = []
    for name in sorted(overrides):
        if node.has_parameter(name) or name == "use_sim_time" or name.startswith("qos_overrides."):
            continue
        if any(name.startswith(p) for p in dynamic_prefixes):
            continue
        out.append(name + did_you_mean(name, known))
    return out


def warn_unknown_overrides(node, dynamic_prefixes=()):
    """Log a warning for every override that names no declared parameter."""
    unknown = unknown_overrides(node, dynamic_prefixes)
    if unknown:
        node.get_logger().warning(f"ignored unknown parameter(s): {', '.join(unknown)}")
    return unknown
