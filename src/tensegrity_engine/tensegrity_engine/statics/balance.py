"""Static balance in the free coordinates: string lengths, the reduced equilibrium matrix and the unbalanced
force of a shape (the ground floor of the statics; :mod:`.equilibrium` explains the formulation).

    E [t; f] + W_r = 0,

``t`` composite-string tensions [N], ``f`` bar compressive forces [N], ``E`` the reduced equilibrium
matrix (unit-tension nodal forces mapped by Qᵀ), ``W_r = Qᵀ (gravity + external + supports)`` with the
compliant supports' static forces at the shape (:mod:`~tensegrity_engine.dynamics.supports`).
"""
from __future__ import annotations

import numpy as np

from tensegrity_engine.dynamics.supports import support_forces
from tensegrity_engine.errors import ModelError
from tensegrity_engine.model.model import Model


def string_lengths(model: Model, X) -> np.ndarray:
    """Total length [m] of every composite string at node positions X (n, 3): the sum of its segments'
    lengths (``Model.string_lengths`` builds a dense segments x strings matrix: 390 MB and 0.9 s at 1,000
    bars)."""
    return np.bincount(model.segment_string, weights=model.segment_lengths(X), minlength=len(model.string_names))


def reduce_forces(model: Model, F):
    """Qᵀ F flattened (3r,) for nodal forces F (n,3) — or columns (n,3,k) -> (3r,k)."""
    return np.einsum("nr,nd...->rd...", model.Q, F).reshape((3 * model.Q.shape[1],) + F.shape[2:])


def equilibrium_matrix(model: Model, X, external=None):
    """(E (3r, sigma_c + beta), W_r (3r,)) at node positions X (n,3). Columns: unit string tension,
    unit bar compression."""
    X = np.asarray(X, float)
    n, nc, nb = model.n_nodes, len(model.string_names), len(model.bar_names)
    cols = np.zeros((n, 3, nc + nb))
    seg = model.segments
    d = X[seg[:, 1]] - X[seg[:, 0]]
    u = d / np.linalg.norm(d, axis=1, keepdims=True)
    for s, (j, k) in enumerate(seg):
        c = model.segment_string[s]
        cols[j, :, c] += u[s]
        cols[k, :, c] -= u[s]
    b = X[model.bars[:, 0]] - X[model.bars[:, 1]]
    bh = b / np.linalg.norm(b, axis=1, keepdims=True)
    for i, (j, k) in enumerate(model.bars):
        cols[j, :, nc + i] += bh[i]
        cols[k, :, nc + i] -= bh[i]
    return reduce_forces(model, cols), reduce_forces(model, applied_forces(model, X, external))


def applied_forces(model: Model, X, external=None) -> np.ndarray:
    """(n, 3) nodal forces [N] at rest other than strings and bars: gravity, ``external`` and the compliant
    supports' springs at node positions X (n, 3); ``external`` (n, 3) [N] or a function of X giving them."""
    if callable(external):
        external = external(X)
    W = model.gravity_forces + support_forces(model, X)
    return W + (0.0 if external is None else np.asarray(external, float))


def numerical_rank(E, s) -> int:
    """Numerical rank of E from its singular values s."""
    tol = max(E.shape) * np.finfo(float).eps * (s[0] if len(s) else 1.0) * 1e3
    return int(np.sum(s > tol))


def require_free_nodes(model: Model):
    if not len(model.free_nodes):
        raise ModelError(model.source, "nodes", "every node is fixed (by 'fixed', clamp supports or constraints), so "
                         "there is no equilibrium to compute", "free at least one node (settle and the Simulator take "
                         "a held model as it is: its tensions are settle(model).tensions)")


def static_forces(model: Model, X, rest_lengths=None, external=None) -> tuple:
    """(reduced nodal force (r,3) from strings, gravity, supports and loads; tensions (sigma_c,)) at rest (no
    damping). ``external``: (n,3) loads [N], or a function of X giving them (contact: statics/contact_loads.py)."""
    X = np.asarray(X, float)
    rest = model.rest_length if rest_lengths is None else np.asarray(rest_lengths, float)
    L = string_lengths(model, X)
    kap = model.string_stiffness_at(rest)
    t = np.where(L > rest, kap * (L - rest), 0.0)
    seg = model.segments
    d = X[seg[:, 1]] - X[seg[:, 0]]
    fs = (t[model.segment_string] / np.linalg.norm(d, axis=1))[:, None] * d
    F = applied_forces(model, X, external)
    np.add.at(F, seg[:, 0], fs)
    np.add.at(F, seg[:, 1], -fs)
    return np.asarray(model.Q_sparse.T @ F), t


def kkt_residual(model, Y, lam, rest, external):
    X = model.expand(Y)
    Fr, _ = static_forces(model, X, rest, external)
    b = X[model.bars[:, 0]] - X[model.bars[:, 1]]
    Fr = Fr + np.asarray(model.bar_jacobian_sparse.T @ (lam[:, None] * b))    # Ab (beta, r) sparse
    g = 0.5 * (np.sum(b * b, axis=1) - model.bar_length ** 2)
    return Fr, g
