"""The compliant supports' columns of the static balance (:mod:`.static_fit`): their stiffness, and a
rotational clamp's rest direction.

A rotational support's couple ``k (r − (e·r) e) / l`` on its bar's second node (``−`` on the first) is linear
in the vector ``m = k r`` (stiffness times unit rest direction): ``(m − (e·m) e) / l``. Fitting the rest
direction therefore keeps the balance linear: the clamp's three columns are the components of ``m``, and
its natural parameters are ``k = |m|`` [N m/rad] and two tilt angles [rad] of ``r = m / |m|`` from the
model file's rest direction ``r0``: ``tan α = m·u / m·r0``, ``tan β = m·v / m·r0``, with ``u`` the world
axis least aligned with ``r0`` made perpendicular to it and ``v = r0 × u`` (for a clamp pointing up, ``r0``
= +z, ``u`` is the x axis and ``v`` the y axis: α tilts the rest direction toward +x, β toward +y; for one
pointing down ``v`` is −y). The component of ``m``
along the bar is seen only through the bar turning between load cases, so identifying a rest direction
needs loads that turn the clamped bar differently (one load alone cannot separate stiffness and rest
direction).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tensegrity_engine.dynamics.supports import unit_support_forces
from tensegrity_engine.statics.balance import reduce_forces

# An angle's standard error is judged against this size [rad] (an angle near 0 has no relative size): with
# the default rel_tol of 2.5 % a rest direction is identifiable when determined within 2.5 mrad (0.14°), the
# tilt that a 150 N m/rad clamp turns into a 0.4 N m couple.
ANGLE_REF = 0.1


@dataclass(frozen=True)
class SupportColumns:
    """The fitted supports (indices into ``model.supports``) and their column counts: 1 (stiffness) or 3
    (stiffness and rest direction, the vector ``k r``)."""
    index: tuple = ()
    width: tuple = ()

    @property
    def n(self) -> int:
        return int(sum(self.width))


def support_columns(model, fit_stiffness: bool, fit_direction: bool) -> SupportColumns:
    """Which supports are fitted: every compliant one with ``support_stiffness``; every rotational one (its
    stiffness with its direction) with ``rest_direction``."""
    sup = model.supports
    index, width = [], []
    for i, rot in enumerate(sup.rotational):
        if rot and fit_direction:
            index.append(i)
            width.append(3)
        elif fit_stiffness:
            index.append(i)
            width.append(1)
    return SupportColumns(tuple(index), tuple(width))


def tilt_basis(r0) -> tuple:
    """(u, v): unit vectors perpendicular to the unit rest direction ``r0`` (module docstring)."""
    r0 = np.asarray(r0, float)
    a = np.eye(3)[int(np.argmin(np.abs(r0)))]
    u = a - (a @ r0) * r0
    u /= np.linalg.norm(u)
    return u, np.cross(r0, u)


def nominal(model, cols: SupportColumns) -> tuple:
    """(θ at the model's values, the scale of each column): ``k`` or ``k r0`` (scale ``k``)."""
    sup = model.supports
    lin, scale = [], []
    for i, w in zip(cols.index, cols.width):
        k = float(sup.stiffness[i])
        lin += [k] if w == 1 else list(k * sup.reference[i])
        scale += [k] * w
    return np.asarray(lin, float), np.asarray(scale, float)


def columns(model, X, cols: SupportColumns) -> tuple:
    """(U (3r, n) the reduced nodal forces per unit θ of the fitted supports at X, the reduced forces (3r,) of
    those supports at the model's values: already in the balance's loads, to be taken out)."""
    sup = model.supports
    unit = unit_support_forces(model, X)                       # (n, 3, s) at k = 1
    F = np.zeros((model.n_nodes, 3, cols.n))
    j = 0
    for i, w in zip(cols.index, cols.width):
        if w == 1:
            F[:, :, j] = unit[:, :, i]
        else:
            a, b = sup.nodes[i]
            d = X[b] - X[a]
            ln = np.linalg.norm(d)
            e = d / ln
            f = (np.eye(3) - np.outer(e, e)) / ln               # column c: force on b per unit m_c
            F[b, :, j:j + 3] += f
            F[a, :, j:j + 3] -= f
        j += w
    U = reduce_forces(model, F)
    own = reduce_forces(model, unit[:, :, list(cols.index)]) @ sup.stiffness[list(cols.index)]
    return U, own


def natural(model, cols: SupportColumns, th) -> tuple:
    """(natural values (n,), D = d natural / d θ (n, n)) of the support block of θ: k, or (k, α, β)."""
    sup = model.supports
    val, D = np.array(th, float), np.eye(cols.n)
    j = 0
    for i, w in zip(cols.index, cols.width):
        if w == 3:
            m = th[j:j + 3]
            r0 = sup.reference[i]
            u, v = tilt_basis(r0)
            k, c = np.linalg.norm(m), m @ r0
            val[j] = k
            D[j, j:j + 3] = m / k
            for row, axis in ((j + 1, u), (j + 2, v)):
                s = m @ axis
                val[row] = np.arctan2(s, c)
                D[row, j:j + 3] = (c * axis - s * r0) / (s * s + c * c)
        j += w
    return val, D


def table(model, cols: SupportColumns) -> tuple:
    """(names, kinds, units, model values) of the support parameters, in θ's order."""
    sup = model.supports
    names, kinds, units, init = [], [], [], []
    for i, w in zip(cols.index, cols.width):
        sn = sup.names[i]
        names.append(f"support_stiffness:{sn}")
        kinds.append("support_stiffness")
        units.append("N m/rad" if sup.rotational[i] else "N/m")
        init.append(float(sup.stiffness[i]))
        if w == 3:
            names += [f"rest_tilt_u:{sn}", f"rest_tilt_v:{sn}"]
            kinds += ["rest_direction"] * 2
            units += ["rad"] * 2
            init += [0.0, 0.0]
    return names, kinds, units, init


def values(model, cols: SupportColumns, est) -> tuple:
    """({support: stiffness}, {support: unit rest direction (3,)}) from the support block of the natural
    estimates ``est``; supports not fitted keep the model's values."""
    sup = model.supports
    k = {sn: float(sup.stiffness[i]) for i, sn in enumerate(sup.names)}
    r = {sup.names[i]: sup.reference[i].copy() for i in np.flatnonzero(sup.rotational)}
    j = 0
    for i, w in zip(cols.index, cols.width):
        sn = sup.names[i]
        k[sn] = float(est[j])
        if w == 3:
            u, v = tilt_basis(sup.reference[i])
            d = sup.reference[i] + np.tan(est[j + 1]) * u + np.tan(est[j + 2]) * v
            r[sn] = d / np.linalg.norm(d)
        j += w
    return k, r
