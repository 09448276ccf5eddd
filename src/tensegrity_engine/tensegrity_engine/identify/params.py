"""The parameters of dynamic identification and the model they describe.

Each parameter is ``value = initial + scale * θ`` with θ the dimensionless unknown (0 at the model's values,
``scale`` a typical size, so all unknowns are of order 1 for the optimiser):

===================== ============================================== ======== =========================
kind                  what                                           unit     scale
===================== ============================================== ======== =========================
stiffness             EA [N] or spring stiffness [N/m] of a group    N, N/m   its initial value
string_damping        ``damping`` of every string of a group         N s/m    max(initial, 1)
structural_damping    the model's ``structural_damping``             1/s      0.1
pulley_damping        ``pulley_damping`` of a group's strings        N s/m    max(initial, 10)
actuator_offset       rest length reeled in at zero command          m        1 mm
actuator_delay        ``delay`` of every actuator (one shared value) s        10 ms
===================== ============================================== ======== =========================

Groups are the model's string groups (``groups="model"``) or single strings (``None``). Pulley damping is
only a parameter for groups whose strings pass through a node. An actuator offset ``δ`` [m] is written
into the identified model as a shorter rest length of the actuated string (``rest_length − δ``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tensegrity_engine.model.build import build_model
from tensegrity_engine.model.model import Model

DYNAMIC_PARAMS = ("stiffness", "string_damping", "structural_damping", "pulley_damping", "actuator_offset",
                  "actuator_delay")
DEFAULT_PARAMS = DYNAMIC_PARAMS


@dataclass(frozen=True)
class Param:
    """One unknown: ``value = initial + scale * θ``; ``members``: string or actuator indices it sets."""
    name: str
    kind: str
    unit: str
    initial: float
    scale: float
    lower: float          # smallest allowed value (natural units)
    members: tuple = ()


def string_groups(model: Model, groups) -> list:
    """[(group name, [string indices])]: per model group (``"model"``) or one per string (None)."""
    if groups not in (None, "model"):
        raise ValueError(f"groups must be 'model' or None, got {groups!r}")
    labels = (list(model.string_names) if groups is None else
              [g or s for g, s in zip(model.string_group, model.string_names)])
    out: dict = {}
    for c, g in enumerate(labels):
        out.setdefault(g, []).append(c)
    for g, members in out.items():
        if len({bool(np.isnan(model.string_EA[c])) for c in members}) > 1:
            raise ValueError(f"group {g!r} mixes EA strings and spring strings; they cannot share a stiffness: "
                             "identify with groups none, or split the group in the model file")
    return list(out.items())


def parameters(model: Model, params=DEFAULT_PARAMS, groups="model") -> list:
    """The :class:`Param` list for ``params`` (kinds of :data:`DYNAMIC_PARAMS`) on ``model``."""
    unknown = [p for p in params if p not in DYNAMIC_PARAMS]
    if unknown:
        raise ValueError(f"unknown dynamic parameter kind(s) {unknown}; known: {', '.join(DYNAMIC_PARAMS)}")
    out = []
    grp = string_groups(model, groups)
    na = len(model.actuator_names)
    for kind in DYNAMIC_PARAMS:
        if kind not in params:
            continue
        if kind == "stiffness":
            for g, mem in grp:
                ea = not np.isnan(model.string_EA[mem[0]])
                v = float(np.mean((model.string_EA if ea else model.string_stiffness)[mem]))
                out.append(Param(f"{'EA' if ea else 'stiffness'}:{g}", kind, "N" if ea else "N/m", v, v, 0.05 * v,
                                 tuple(mem)))
        elif kind == "string_damping":
            for g, mem in grp:
                v = float(np.mean(model.string_damping[mem]))
                out.append(Param(f"damping:{g}", kind, "N s/m", v, max(v, 1.0), 0.0, tuple(mem)))
        elif kind == "structural_damping":
            out.append(Param("structural_damping", kind, "1/s", float(model.structural_damping), 0.1, 0.0))
        elif kind == "pulley_damping":
            for g, mem in grp:
                mem = [c for c in mem if len(model.string_paths[c]) > 2]
                if mem:
                    v = float(np.mean(model.string_pulley_damping[mem]))
                    out.append(Param(f"pulley_damping:{g}", kind, "N s/m", v, max(v, 10.0), 0.0, tuple(mem)))
        elif kind == "actuator_offset":
            for a in range(na):
                out.append(Param(f"offset:{model.actuator_names[a]}", kind, "m", 0.0, 1e-3, -np.inf, (a,)))
        elif kind == "actuator_delay" and na:
            v = float(np.mean(model.actuator_delay))
            out.append(Param("delay", kind, "s", v, 0.01, 0.0, tuple(range(na))))
    if not out:
        raise ValueError(f"model '{model.name}' has nothing to identify for {list(params)} (no actuators for "
                         "offsets/delay, no pass-through nodes for pulley damping)")
    return out


def values(plist, theta) -> np.ndarray:
    """Natural-unit values of the parameters at θ."""
    return np.array([p.initial + p.scale * t for p, t in zip(plist, np.asarray(theta, float))])


def theta_bounds(plist) -> tuple:
    """(lower, upper) bounds on θ that keep every value at or above its ``lower``."""
    lo = np.array([(p.lower - p.initial) / p.scale if np.isfinite(p.lower) else -np.inf for p in plist])
    return lo, np.full(len(plist), np.inf)


def model_with(model: Model, plist, vals) -> Model:
    """A copy of ``model`` with the parameter values ``vals`` (natural units) written in."""
    spec = model.spec
    strings = list(spec.strings)
    acts = list(spec.actuators)
    structural = spec.structural_damping
    for p, v in zip(plist, np.asarray(vals, float)):
        v = float(v)
        if p.kind == "stiffness":
            key = "EA" if p.unit == "N" else "stiffness"
            ratio = v / p.initial
            for c in p.members:
                old = getattr(model.spec.strings[c], key)
                strings[c] = replace(strings[c], **{key: old * ratio})
        elif p.kind == "string_damping":
            for c in p.members:
                strings[c] = replace(strings[c], damping=max(v, 0.0))
        elif p.kind == "pulley_damping":
            for c in p.members:
                strings[c] = replace(strings[c], pulley_damping=max(v, 0.0))
        elif p.kind == "structural_damping":
            structural = max(v, 0.0)
        elif p.kind == "actuator_offset":
            c = int(model.actuator_string[p.members[0]])
            strings[c] = replace(strings[c], rest_length=float(model.rest_length[c]) - v, tension=None)
        elif p.kind == "actuator_delay":
            for a in p.members:
                acts[a] = replace(acts[a], delay=min(max(v, 0.0), 1.0))
    # rest lengths given by 'tension' in the file were resolved at build time: keep them as built
    strings = [s if s.rest_length is not None else replace(s, rest_length=float(model.rest_length[c]), tension=None)
               for c, s in enumerate(strings)]
    return build_model(replace(spec, strings=tuple(strings), actuators=tuple(acts), structural_damping=structural))
