"""Sweep parameters and the model variants they make.

A parameter is ``NAME`` or ``NAME.SEL``; SEL is a string ``group`` of the model file or a string name, none =
all strings; several parameters on the same strings apply in column order:

* ``stiffness`` factor [-] on the string stiffness [N/m] (or EA [N]);
* ``damping`` string damping [N s/m] (set); ``damping_scale`` factor [-] on it;
* ``rest_offset`` [m] added to the rest lengths;
* ``structural_damping`` [1/s] mass-proportional damping; ``gravity.x|y|z`` [m/s^2] gravity components;
* ``velocity_sigma`` [m/s]: initial node velocities drawn N(0, sigma) per axis (seeded by (seed, run);
  projected onto the constraints by ``Simulator.reset``);
* ``friction``, ``restitution`` [-] and ``contact_time`` [s] of the obstacles (``.OBSTACLE``: one, by name;
  none = all), e.g. a drop test over the floor's friction.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from tensegrity_engine.model.checks import MAX_GRAVITY, MAX_STIFFNESS, MAX_STRUCTURAL_DAMPING
from tensegrity_engine.model.model import read_only

KINDS = ("stiffness", "damping", "damping_scale", "rest_offset", "structural_damping", "gravity", "velocity_sigma",
         "friction", "restitution", "contact_time")
CONTACT_KINDS = ("friction", "restitution", "contact_time")
STRING_KINDS = ("stiffness", "damping", "damping_scale", "rest_offset")


class SweepError(ValueError):
    """A sweep specification or its settings are invalid (the message says which parameter and why)."""


def _selection(model, kind: str, sel: str | None) -> np.ndarray:
    """Indices of the composite strings a parameter ``kind.sel`` acts on."""
    if sel is None:
        return np.arange(len(model.string_names))
    groups = sorted({g for g in model.string_group if g})
    idx = [c for c, g in enumerate(model.string_group) if g == sel]
    if not idx and sel in model.string_names:
        idx = [model.string_names.index(sel)]
    if not idx:
        raise SweepError(f"parameter '{kind}.{sel}': '{sel}' is neither a string group "
                         f"({', '.join(groups) or 'the model has none'}) nor a string of model '{model.name}'")
    return np.array(idx)


def parse_name(model, name: str):
    """``NAME[.SEL]`` -> (kind, target): string indices, a gravity axis (0..2) or None."""
    if not isinstance(name, str) or not name:
        raise SweepError(f"parameter names are text, got {name!r}")
    kind, _, sel = name.partition(".")
    if kind not in KINDS:
        raise SweepError(f"unknown parameter '{name}': use one of {', '.join(KINDS)} "
                         "(stiffness/damping/damping_scale/rest_offset may take .GROUP or .STRING, gravity .x/.y/.z)")
    if kind in STRING_KINDS:
        return kind, _selection(model, kind, sel or None)
    if kind in CONTACT_KINDS:
        return kind, _obstacles(model, name, sel or None)
    if kind == "gravity":
        if sel not in ("x", "y", "z"):
            raise SweepError(f"parameter '{name}': write gravity.x, gravity.y or gravity.z [m/s^2]")
        return kind, "xyz".index(sel)
    if sel:
        raise SweepError(f"parameter '{name}': '{kind}' takes no selector")
    return kind, None


def _obstacles(model, name: str, sel: str | None) -> tuple:
    """Indices of the obstacles a contact parameter ``name`` acts on (``sel``: an obstacle's name)."""
    names = [o.name for o in model.obstacles]
    if not names:
        raise SweepError(f"parameter '{name}': model '{model.name}' has no obstacles (add 'obstacles:' to it)")
    if sel is None:
        return tuple(range(len(names)))
    if sel not in names:
        raise SweepError(f"parameter '{name}': '{sel}' is not an obstacle of model '{model.name}' ({', '.join(names)})")
    return (names.index(sel),)


def _contact_value(name: str, kind: str, v: float) -> float:
    """``v`` checked against the model file's range for an obstacle's ``kind``."""
    from tensegrity_engine.model.world import CONTACT_TIME_RANGE, MAX_OBSTACLE_FRICTION
    lo, hi = {"friction": (0.0, MAX_OBSTACLE_FRICTION), "restitution": (0.0, 1.0),
              "contact_time": CONTACT_TIME_RANGE}[kind]
    if not lo <= v <= hi:
        raise SweepError(f"parameter '{name}' = {v:g}: must be in [{lo:g}, {hi:g}]")
    return v


def _nodal_mass(model) -> np.ndarray:
    m = np.array(model.node_mass, float).copy()
    np.add.at(m, model.bars[:, 0], model.bar_mass / 2)
    np.add.at(m, model.bars[:, 1], model.bar_mass / 2)
    return m


def variant_model(base, names, values):
    """The model ``base`` with the parameters ``names`` set to ``values`` (see the module docstring).

    Only string stiffness/EA, damping, rest lengths, gravity, structural damping and the obstacles' contact
    parameters change (the arrays are computed as ``build_model`` computes them from an edited model file,
    so results are identical).
    Raises SweepError for values outside the model file's ranges."""
    ea, k = np.array(base.string_EA, float), np.array(base.string_stiffness, float)
    zeta, rest = np.array(base.string_damping, float), np.array(base.rest_length, float)
    g, sd = np.array(base.gravity, float), base.structural_damping
    obstacles = list(base.obstacles)
    for name, v in zip(names, values):
        kind, target = parse_name(base, name)
        v = float(v)
        if not math.isfinite(v):
            raise SweepError(f"parameter '{name}' = {v}: must be finite")
        if kind == "stiffness":
            if v <= 0:
                raise SweepError(f"parameter '{name}' = {v:g}: a stiffness factor must be > 0")
            ea[target] *= v
            k[target] *= v
        elif kind == "damping":
            if v < 0:
                raise SweepError(f"parameter '{name}' = {v:g}: string damping [N s/m] must be >= 0")
            zeta[target] = v
        elif kind == "damping_scale":
            if v < 0:
                raise SweepError(f"parameter '{name}' = {v:g}: a damping factor must be >= 0")
            zeta[target] *= v
        elif kind == "rest_offset":
            rest[target] += v
        elif kind == "structural_damping":
            if not 0 <= v <= MAX_STRUCTURAL_DAMPING:
                raise SweepError(f"parameter '{name}' = {v:g}: must be in [0, {MAX_STRUCTURAL_DAMPING:g}] 1/s")
            sd = v
        elif kind == "gravity":
            g[target] = v
        elif kind in CONTACT_KINDS:
            for o in target:
                obstacles[o] = dataclasses.replace(obstacles[o], **{kind: _contact_value(name, kind, v)})
        elif v < 0:
            raise SweepError(f"parameter '{name}' = {v:g}: a standard deviation [m/s] must be >= 0")
    bad = np.flatnonzero(~(rest > 0))
    if bad.size:
        raise SweepError(f"rest length of string '{base.string_names[bad[0]]}' becomes {rest[bad[0]]:g} m "
                         "(must stay > 0): reduce the rest_offset")
    for a, c in enumerate(base.actuator_string):
        if base.u_limits[a, 1] >= rest[c]:
            raise SweepError(f"actuator '{base.actuator_names[a]}' can reel in {base.u_limits[a, 1]:g} m, more "
                             f"than the rest length {rest[c]:g} m of string '{base.string_names[c]}'")
    if np.nanmax(np.r_[ea, k, 0.0]) > MAX_STIFFNESS:
        raise SweepError(f"a string stiffness exceeds the supported {MAX_STIFFNESS:g}: reduce the stiffness factor")
    if math.hypot(*g) > MAX_GRAVITY:
        raise SweepError(f"|gravity| = {math.hypot(*g):g} m/s^2 exceeds the supported {MAX_GRAVITY:g} m/s^2")
    return dataclasses.replace(base, string_EA=read_only(ea), string_stiffness=read_only(k), string_damping=read_only(zeta),
                               rest_length=read_only(rest), gravity=read_only(g), structural_damping=float(sd),
                               gravity_forces=read_only(_nodal_mass(base)[:, None] * g[None, :]),
                               obstacles=tuple(obstacles))


def initial_velocities(model, sigma: float, seed: int, run: int):
    """Initial node velocities (n,3) [m/s] of run ``run``: N(0, sigma) per axis, or None if sigma is 0."""
    if sigma == 0:
        return None
    return np.random.default_rng([int(seed), int(run)]).normal(0.0, sigma, (model.n_nodes, 3))
