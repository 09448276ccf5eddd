"""Analytic tangent stiffness, modal analysis and linearisation about an equilibrium.

Free coordinates ``Y`` (r, 3), flattened row-major (``3 i + d``); node positions ``X = X0 + Q Y``. At rest the
reduced force is ``Fr(Y) = Qᵀ (Σ_c -t_c ∇L_c + W) + Σ_b λ_b Ab_bᵀ b_b`` (strings, loads, bars as constraints
with force densities λ). Its negative derivative, the tangent stiffness, is exact and sparse:

    Kt = Q3ᵀ (Σ_c κ_c ∇L_c ∇L_cᵀ + Σ_segments t_c (I - u uᵀ) / l + Ks) Q3 - Σ_b λ_b (Ab_bᵀ Ab_b ⊗ I3)

(taut strings only; κ = EA/ξ or the spring stiffness, ``Q3 = Q ⊗ I3``, ``Ks`` the compliant supports'
stiffness, :func:`~tensegrity_engine.dynamics.supports.support_stiffness`; their damping joins ``Cs``). The dynamics linearised on the
bar-length tangent space ``Y = Y* + T q`` (T an orthonormal basis of the null space of the bar Jacobian)
is ``Ms q̈ + Cs q̇ + Ks q = Bq δu + Bq_rate δu̇`` with ``Ms = Tᵀ (Mr ⊗ I3) T``, ``Ks = Tᵀ Kt T``,
``Cs = Tᵀ (Q3ᵀ Σ_c ζ_c ∇L_c ∇L_cᵀ Q3 + c Mr ⊗ I3) T`` (string and structural damping) and, for actuator a
on string c (``u`` reels in, ``ξ = ξ0 - u``), ``Bq[:, a] = -Tᵀ Q3ᵀ ∇L_c ∂t_c/∂u_a`` with ``∂t/∂u = κ``
(spring) or ``EA L / ξ²`` (EA string), ``Bq_rate[:, a] = -Tᵀ Q3ᵀ ∇L_c ζ_c``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy import linalg

from tensegrity_engine.dynamics.supports import support_damping, support_stiffness
from tensegrity_engine.statics.balance import static_forces, string_lengths
from tensegrity_engine.model.model import Model


@dataclass
class Linearisation:
    """State-space form ``ż = A z + B δu + B_rate δu̇`` with ``z = [q; q̇]``, ``Y = Y* + T q``."""
    A: np.ndarray
    B: np.ndarray
    B_rate: np.ndarray
    T: np.ndarray              # (3r, d) tangent basis
    C: np.ndarray              # (3n, d) node displacements [m] per unit q
    frequencies_hz: np.ndarray
    modes: np.ndarray          # (d, d) mass-orthonormal mode shapes in q (columns), ascending frequency
    positions: np.ndarray      # (n, 3) equilibrium


def _segment_geometry(model, X):
    seg = model.segments
    d = X[seg[:, 1]] - X[seg[:, 0]]
    ln = np.linalg.norm(d, axis=1)
    return seg, d / ln[:, None], ln


def string_gradients(model: Model, X) -> sp.csr_matrix:
    """(sigma_c, 3n) gradients of the composite string lengths with respect to the node positions."""
    seg, u, _ = _segment_geometry(model, X)
    c = np.repeat(model.segment_string, 6)
    cols = np.concatenate([3 * seg[:, [1]] + np.arange(3), 3 * seg[:, [0]] + np.arange(3)], axis=1).ravel()
    vals = np.concatenate([u, -u], axis=1).ravel()
    return sp.csr_matrix((vals, (c, cols)), shape=(len(model.string_names), 3 * model.n_nodes))


def _tensions(model, X, rest):
    L = string_lengths(model, X)
    kap = model.string_stiffness_at(rest)
    taut = L > rest
    return np.where(taut, kap * (L - rest), 0.0), np.where(taut, kap, 0.0), L, taut


def _geometric(model, X, t) -> sp.csr_matrix:
    """Σ_segments t (I - u uᵀ) / l in the (3n, 3n) node space."""
    seg, u, ln = _segment_geometry(model, X)
    ts = t[model.segment_string] / ln
    P = ts[:, None, None] * (np.eye(3)[None] - u[:, :, None] * u[:, None, :])      # (s, 3, 3)
    rows, cols, vals = [], [], []
    for a, b, sign in ((0, 0, 1.0), (1, 1, 1.0), (0, 1, -1.0), (1, 0, -1.0)):
        r = 3 * seg[:, a][:, None, None] + np.arange(3)[None, :, None]
        c = 3 * seg[:, b][:, None, None] + np.arange(3)[None, None, :]
        rows.append(np.broadcast_to(r, P.shape).ravel())
        cols.append(np.broadcast_to(c, P.shape).ravel())
        vals.append(sign * P.ravel())
    n3 = 3 * model.n_nodes
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n3, n3))


def bar_jacobian(model: Model, X, sparse: bool = False):
    """(beta, 3r) gradients of ``|b|²/2`` of every bar [m] with respect to the free coordinates, at X;
    a CSR matrix if ``sparse`` (row i: ``Ab[i, c] * b_i`` at coordinates ``3c..3c+2``), else dense."""
    b = X[model.bars[:, 0]] - X[model.bars[:, 1]]
    Ab = model.bar_jacobian_sparse.tocoo()
    rows = np.repeat(Ab.row, 3)
    cols = (3 * Ab.col[:, None] + np.arange(3)).ravel()
    vals = (Ab.data[:, None] * b[Ab.row]).ravel()
    J = sp.csr_matrix((vals, (rows, cols)), shape=(len(b), 3 * Ab.shape[1]))
    return J if sparse else J.toarray()


def bar_multipliers(model: Model, X, rest, external=None, sparse: bool = False) -> np.ndarray:
    """Bar force densities λ (beta,) [N/m] balancing the static forces at X (least squares).

    ``sparse``: the normal equations ``J Jᵀ λ = -J F`` with a sparse LU (J has full row rank for bars of
    non-zero length; a bar with no free end has a zero row and gets λ = 0, as the minimum-norm dense
    least squares gives it)."""
    Xf = model.expand(model.reduce(X))
    Fr, _ = static_forces(model, Xf, rest, external)
    if not sparse:
        return linalg.lstsq(bar_jacobian(model, Xf).T, -Fr.ravel())[0]
    from scipy.sparse.linalg import splu
    J = bar_jacobian(model, Xf, sparse=True)
    JJ = (J @ J.T).tocsc()
    empty = np.asarray(abs(J).sum(axis=1)).ravel() == 0
    JJ = (JJ + sp.diags(empty.astype(float))).tocsc()
    return splu(JJ).solve(-(J @ Fr.ravel()))


def tangent_stiffness(model: Model, X, rest_lengths=None, lam=None, external=None, sparse: bool = False):
    """Analytic tangent stiffness Kt (3r, 3r) [N/m] at node positions X (module docstring): a dense array,
    or a CSR matrix if ``sparse`` (then no (3r, 3r) dense matrix is formed)."""
    rest = model.rest_length if rest_lengths is None else np.asarray(rest_lengths, float)
    X = model.expand(model.reduce(X))
    t, kap, _, _ = _tensions(model, X, rest)
    G = string_gradients(model, X)
    Q3 = sp.kron(model.Q_sparse, sp.identity(3), format="csr")
    K = G.T @ sp.diags(kap) @ G + _geometric(model, X, t) + support_stiffness(model, X)
    Kt = Q3.T @ K @ Q3
    if len(model.bars):
        if lam is None:
            lam = bar_multipliers(model, X, rest, external, sparse=sparse)
        Ab = model.bar_jacobian_sparse
        Kt = Kt - sp.kron(Ab.T @ sp.diags(np.asarray(lam, float)) @ Ab, sp.identity(3))
    Kt = 0.5 * (Kt + Kt.T)
    return Kt.tocsr() if sparse else Kt.toarray()


def finite_difference_stiffness(model: Model, X, lam, rest_lengths=None, h: float = 1e-7) -> np.ndarray:
    """Reference tangent stiffness (3r, 3r) by central differences of the static balance (3r pairs of force
    evaluations; for checks of :func:`tangent_stiffness`, not for large models)."""
    from tensegrity_engine.statics.balance import kkt_residual
    rest = model.rest_length if rest_lengths is None else np.asarray(rest_lengths, float)
    Y = model.reduce(X)
    r = Y.shape[0]
    K = np.zeros((3 * r, 3 * r))
    for i in range(3 * r):
        dY = np.zeros(3 * r)
        dY[i] = h
        fp, _ = kkt_residual(model, (Y.ravel() + dY).reshape(r, 3), lam, rest, None)
        fm, _ = kkt_residual(model, (Y.ravel() - dY).reshape(r, 3), lam, rest, None)
        K[:, i] = -(fp - fm).ravel() / (2 * h)
    return 0.5 * (K + K.T)


def linearise(model: Model, X=None, rest_lengths=None, external=None, damping: bool = True) -> Linearisation:
    """Linearised dynamics about the equilibrium X (default: the model's positions; module docstring)."""
    rest = model.rest_length if rest_lengths is None else np.asarray(rest_lengths, float)
    X = model.expand(model.reduce(model.positions if X is None else np.asarray(X, float)))
    Kt = tangent_stiffness(model, X, rest, external=external)
    J = bar_jacobian(model, X)
    T = linalg.null_space(J) if len(J) else np.eye(Kt.shape[0])
    M3 = np.kron(model.reduced_mass, np.eye(3))
    Ms, Ks = T.T @ M3 @ T, T.T @ Kt @ T
    t, kap, L, taut = _tensions(model, X, rest)
    G = string_gradients(model, X)
    Q3 = sp.kron(model.Q_sparse, sp.identity(3), format="csr")
    GQ = (G @ Q3).toarray()                                  # (sigma_c, 3r)
    zeta = np.where(taut, model.string_damping, 0.0) if damping else np.zeros(len(t))
    Csup = (Q3.T @ support_damping(model, X) @ Q3).toarray()
    Cs = (T.T @ (GQ.T @ (zeta[:, None] * GQ) + model.structural_damping * M3 + Csup) @ T if damping
          else np.zeros_like(Ms))
    na = len(model.actuator_names)
    dtdu = np.zeros(na)
    for a, c in enumerate(model.actuator_string):
        if taut[c]:
            dtdu[a] = model.string_EA[c] * L[c] / rest[c] ** 2 if np.isfinite(model.string_EA[c]) else kap[c]
    Gq = T.T @ GQ.T                                          # (d, sigma_c)
    Bq = -Gq[:, model.actuator_string] * dtdu
    Bq_rate = -Gq[:, model.actuator_string] * zeta[model.actuator_string]
    Minv = linalg.inv(Ms)
    d = Ms.shape[0]
    A = np.block([[np.zeros((d, d)), np.eye(d)], [-Minv @ Ks, -Minv @ Cs]])
    B = np.vstack([np.zeros((d, na)), Minv @ Bq])
    B_rate = np.vstack([np.zeros((d, na)), Minv @ Bq_rate])
    w2, V = linalg.eigh(0.5 * (Ks + Ks.T), Ms)
    return Linearisation(A, B, B_rate, T, np.asarray(Q3 @ T), np.sqrt(np.clip(w2, 0, None)) / (2 * np.pi), V, X)
