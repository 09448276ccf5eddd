"""Forces, potential, stiffness and damping of a model's compliant supports (NumPy; schema and the choice of
laws in :mod:`~tensegrity_engine.model.supports`; the compiled dynamics uses ``kernels._support_forces``,
the same formulas).

Translational support at node i, anchor a: ``V = k |x_i − a|² / 2``, ``F_i = −k (x_i − a) − c ẋ_i``.

Rotational support on a bar from node a to node b, ``d = x_b − x_a``, ``l = |d|``, ``e = d / l``, unit rest
direction r, ``cos θ = e·r``::

    V = k (1 − e·r)
    F_b = −∂V/∂x_b = k (r − (e·r) e) / l − c ė / l,      F_a = −F_b,      ė = (ḋ − (e·ḋ) e) / l

The two forces are a couple perpendicular to the bar (``e·F_b = 0``, no net force): its moment is
``l |F_b| = k sin θ`` toward r, and the damping moment ``c |ė|`` opposes the rate of turn (Rayleigh
dissipation ``c |ė|² / 2``). The stiffness (Hessian of V in d) is ``(k / l²) ((e·r) P + e wᵀ + w eᵀ)``
with ``P = I − e eᵀ``, ``w = P r``; at θ = 0 it is ``k P / l²``, i.e. ``k`` [N m/rad] per radian.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def _rot_geometry(sup, X, Xd=None) -> tuple:
    """(a, b, l (s,), e (s, 3), ė (s, 3) or None) of the rotational supports at positions X (n, 3)."""
    rot = sup.rotational
    a, b = sup.nodes[rot, 0], sup.nodes[rot, 1]
    d = X[b] - X[a]
    ln = np.linalg.norm(d, axis=1)
    e = d / ln[:, None]
    ed = None
    if Xd is not None:
        v = Xd[b] - Xd[a]
        ed = (v - np.sum(e * v, axis=1)[:, None] * e) / ln[:, None]
    return a, b, ln, e, ed


def unit_support_forces(model, X) -> np.ndarray:
    """(n, 3, s) nodal forces [N] of each compliant support at unit stiffness (k = 1), no damping, at X (n, 3):
    the forces are linear in the stiffnesses (what static identification fits)."""
    sup = model.supports
    X = np.asarray(X, float)
    out = np.zeros((model.n_nodes, 3, len(sup)))
    tr = np.flatnonzero(~sup.rotational)
    out[sup.nodes[tr, 0], :, tr] = -(X[sup.nodes[tr, 0]] - sup.reference[tr])
    rot = np.flatnonzero(sup.rotational)
    if len(rot):
        a, b, ln, e, _ = _rot_geometry(sup, X)
        r = sup.reference[rot]
        f = (r - np.sum(e * r, axis=1)[:, None] * e) / ln[:, None]
        out[b, :, rot] += f
        out[a, :, rot] -= f
    return out


def support_forces(model, X, Xd=None, stiffness=None) -> np.ndarray:
    """(n, 3) nodal forces [N] of the compliant supports at positions X (n, 3), with their damping when the
    velocities Xd (n, 3) are given; ``stiffness`` (s,) replaces the model's."""
    sup = model.supports
    k = sup.stiffness if stiffness is None else np.asarray(stiffness, float)
    F = unit_support_forces(model, X) @ k if len(sup) else np.zeros((model.n_nodes, 3))
    if Xd is None or not np.any(sup.damping):
        return F
    Xd = np.asarray(Xd, float)
    tr = np.flatnonzero(~sup.rotational)
    np.add.at(F, sup.nodes[tr, 0], -sup.damping[tr, None] * Xd[sup.nodes[tr, 0]])
    if sup.rotational.any():
        a, b, ln, _, ed = _rot_geometry(sup, np.asarray(X, float), Xd)
        f = -sup.damping[sup.rotational, None] * ed / ln[:, None]
        np.add.at(F, b, f)
        np.add.at(F, a, -f)
    return F


def support_energy(model, X) -> np.ndarray:
    """Potential energy [J] of the compliant supports at positions X (n, 3) or (T, n, 3): (T,) or a scalar."""
    sup = model.supports
    X = np.asarray(X, float)
    if not len(sup):
        return np.zeros(X.shape[:-2])
    rot = sup.rotational
    i = sup.nodes[~rot, 0]
    u = X[..., i, :] - sup.reference[~rot]
    v = 0.5 * np.sum(sup.stiffness[~rot] * np.sum(u * u, axis=-1), axis=-1)
    d = X[..., sup.nodes[rot, 1], :] - X[..., sup.nodes[rot, 0], :]
    cos = np.sum(d * sup.reference[rot], axis=-1) / np.linalg.norm(d, axis=-1)
    return v + np.sum(sup.stiffness[rot] * (1.0 - cos), axis=-1)


def _node_blocks(model, pairs) -> sp.csr_matrix:
    """(3n, 3n) sparse matrix from [(node i, node j, 3x3 block)] (summed)."""
    n3 = 3 * model.n_nodes
    if not pairs:
        return sp.csr_matrix((n3, n3))
    rows = np.concatenate([np.repeat(3 * i + np.arange(3), 3) for i, _, _ in pairs])
    cols = np.concatenate([np.tile(3 * j + np.arange(3), 3) for _, j, _ in pairs])
    vals = np.concatenate([np.asarray(B, float).ravel() for _, _, B in pairs])
    return sp.csr_matrix((vals, (rows, cols)), shape=(n3, n3))


def _couple(pairs, a, b, H):
    """A 3x3 block H of a function of d = x_b − x_a spread onto nodes a and b."""
    pairs += [(b, b, H), (a, a, H), (a, b, -H), (b, a, -H)]


def support_stiffness(model, X) -> sp.csr_matrix:
    """(3n, 3n) stiffness [N/m] of the compliant supports at X: the Hessian of their potential (module
    docstring), symmetric, to be added to the structure's tangent stiffness."""
    sup = model.supports
    pairs = [(int(i), int(i), k * np.eye(3)) for i, k in zip(sup.nodes[~sup.rotational, 0], sup.stiffness[~sup.rotational])]
    if sup.rotational.any():
        a, b, ln, e, _ = _rot_geometry(sup, np.asarray(X, float))
        for q, (k, r) in enumerate(zip(sup.stiffness[sup.rotational], sup.reference[sup.rotational])):
            P = np.eye(3) - np.outer(e[q], e[q])
            w = P @ r
            H = k / ln[q] ** 2 * ((e[q] @ r) * P + np.outer(e[q], w) + np.outer(w, e[q]))
            _couple(pairs, int(a[q]), int(b[q]), H)
    return _node_blocks(model, pairs)


def support_damping(model, X) -> sp.csr_matrix:
    """(3n, 3n) damping matrix [N s/m] of the compliant supports at X: F = −C ẋ (rotational: c P / l²)."""
    sup = model.supports
    pairs = [(int(i), int(i), c * np.eye(3)) for i, c in zip(sup.nodes[~sup.rotational, 0], sup.damping[~sup.rotational])]
    if sup.rotational.any():
        a, b, ln, e, _ = _rot_geometry(sup, np.asarray(X, float))
        for q, c in enumerate(sup.damping[sup.rotational]):
            _couple(pairs, int(a[q]), int(b[q]), c / ln[q] ** 2 * (np.eye(3) - np.outer(e[q], e[q])))
    return _node_blocks(model, pairs)
