"""Sparse stability for large models: the lowest modes on the bar-length tangent space, exactly.

The constrained problem is ``Ks q = ω² Ms q`` with ``Ks = Tᵀ Kt T``, ``Ms = Tᵀ (Mr ⊗ I3) T`` and T an
orthonormal basis of the null space of the bar Jacobian J (beta, 3r), as in the dense path. T is built
*block-diagonal*: the coordinates split into clusters coupled by bars (connected components of the pattern
of JᵀJ). A class-1 bar is a cluster of its own (6 coordinates, 1 constraint, a 5-column basis); bars
sharing a joint (class 2) form one cluster; a coordinate no bar touches is its own column. Each cluster's
basis is the orthonormal null space of its small dense block, so T spans exactly null(J) (the same space as
the dense ``null_space(J)``: the same eigenvalues) with O(bars) non-zeros.

The lowest ``rigid + n_modes`` eigenvalues come from ARPACK in shift-invert mode about a shift σ slightly
below zero, with our own sparse LU of ``Ks - σ Ms``. The same LU, taken with symmetric (diagonal) pivoting,
is an LDLᵀ factorisation, and by Sylvester's law of inertia its negative pivots count the eigenvalues below
σ: a certificate that no eigenvalue further down was missed.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy import linalg
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh, splu

# An eigenvalue counts as zero (rigid body / mechanism) below 1e-11 of the largest |ω²| (dense path too).
# Rigid-body eigenvalues come out at 1e-17..1e-15 of it (rounding), so the margin is >= 1e4; the lowest
# bending mode of a 200-stage class-1 tower is a genuine 1.2e-9 of it (0.0105 Hz), which the dense path's
# former 1e-8 called zero ("unstable").
ZERO_TOL = 1e-11
# The shift sits at -10 ZERO_TOL of the largest |ω²|: below the rigid-body eigenvalues so the LU is well
# conditioned, and close to zero so the lowest modes converge fast.
SHIFT = -10 * ZERO_TOL


def tangent_basis(J, n_coords: int) -> sp.csc_matrix:
    """Orthonormal, block-diagonal basis (n_coords, d) of the null space of the sparse J (module docstring)."""
    J = sp.csr_matrix(J)
    J.sum_duplicates()
    pattern = (abs(J).T @ abs(J) + sp.identity(n_coords)).tocsr()
    nk, label = connected_components(pattern, directed=False)
    coo = J.tocoo()
    keep = coo.data != 0
    r, c, v = coo.row[keep], coo.col[keep], coo.data[keep]
    groups = lambda lab: (np.argsort(lab, kind="stable"),  # noqa: E731  (order, pointers per cluster)
                          np.searchsorted(np.sort(lab, kind="stable"), np.arange(nk + 1)))
    col_order, col_ptr = groups(label)
    entry_order, entry_ptr = groups(label[c])
    local_col = np.empty(n_coords, int)
    local_col[col_order] = np.arange(n_coords) - col_ptr[label[col_order]]
    rows, cols, vals = [], [], []
    ncol = 0
    for k in range(nk):
        cidx = col_order[col_ptr[k]:col_ptr[k + 1]]
        e = entry_order[entry_ptr[k]:entry_ptr[k + 1]]
        if len(e) == 0:
            N = np.eye(len(cidx))
        else:
            ridx, local_row = np.unique(r[e], return_inverse=True)
            B = np.zeros((len(ridx), len(cidx)))
            np.add.at(B, (local_row, local_col[c[e]]), v[e])
            N = linalg.null_space(B)
        rr, cc = np.nonzero(N)
        rows.append(cidx[rr])
        cols.append(ncol + cc)
        vals.append(N[rr, cc])
        ncol += N.shape[1]
    return sp.csc_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(n_coords, ncol))


def inertia_lu(A):
    """(LU of the symmetric sparse A, number of negative eigenvalues of A or None). With diagonal pivoting
    and one symmetric ordering, ``P A Pᵀ = L U`` with ``U = D Lᵀ``: the signs of diag(U) are the inertia
    (Sylvester). None when SuperLU had to pivot off the diagonal (no certificate then)."""
    lu = splu(sp.csc_matrix(A), permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
              options={"SymmetricMode": True})
    if not np.array_equal(lu.perm_r, lu.perm_c):
        return lu, None
    return lu, int(np.sum(lu.U.diagonal() < 0))


def _largest_magnitude(Ks, Ms) -> float:
    """|ω²| of largest magnitude [1/s²] (a scale for the tolerances; 1e-3 relative is plenty)."""
    try:
        return float(np.abs(eigsh(Ks, k=1, M=Ms, which="LM", tol=1e-3, maxiter=2000,
                                  return_eigenvectors=False)).max())
    except ArpackNoConvergence as err:
        if len(err.eigenvalues):
            return float(np.abs(err.eigenvalues).max())
    # upper bound: max row sum of |Ks| over the smallest diagonal mass (Ms is diagonally dominant-ish)
    return float(abs(Ks).sum(axis=1).max() / max(Ms.diagonal().min(), 1e-300))


def lowest_modes(Ks, Ms, rigid: int, n_modes: int = 10) -> dict:
    """The ``rigid + n_modes`` lowest eigenvalues ω² [1/s²] of ``Ks q = ω² Ms q`` (sparse, symmetric, Ms
    positive definite) and whether the pencil is positive beyond the ``rigid`` zero modes."""
    d = Ks.shape[0]
    scale = max(1.0, _largest_magnitude(Ks, Ms))
    sigma = SHIFT * scale
    lu, below = inertia_lu((Ks - sigma * Ms).tocsc())
    k = min(rigid + n_modes, d - 1)
    op = LinearOperator((d, d), matvec=lu.solve, dtype=float)
    _, V = eigsh(Ks, k=k, M=Ms, sigma=sigma, which="LM", OPinv=op)
    # Rayleigh quotients of the Ritz vectors: ARPACK's values carry an absolute error ~eps λ²/|σ| (from
    # 1/(λ - σ)), 1e-7 relative for the stiffest of the 16 modes of a 30-coordinate icosahedron; the
    # quotient's error is quadratic in the vector's
    ev = np.sort(np.einsum("ij,ij->j", V, Ks @ V) / np.einsum("ij,ij->j", V, Ms @ V))
    elastic = ev[rigid:]
    tol = ZERO_TOL * scale
    stable = bool(below == 0 and (len(elastic) == 0 or elastic.min() > tol))
    return {"stable": stable, "eigenvalues": ev, "below_shift": below, "shift": sigma, "tolerance": tol}


def stability_sparse(model, Xf, rest, external=None, lam=None, n_modes: int = 10) -> dict:
    """:func:`.equilibrium.stability` without dense matrices: the ``rigid + n_modes`` lowest modes on the
    bar-length tangent space (module docstring). Returns the same keys, ``eigenvalues`` being the lowest
    ones only, plus ``method`` 'sparse' and ``below_shift`` (eigenvalues below the shift, from the inertia:
    0 for a stable structure; None if the LU could not certify it, and then ``stable`` is False)."""
    from tensegrity_engine.statics.modal import bar_jacobian, bar_multipliers, tangent_stiffness
    r = len(model.free_nodes)
    nb = len(model.bar_names)
    if lam is None:
        lam = bar_multipliers(model, Xf, rest, external, sparse=True) if nb else np.zeros(0)
    Kt = tangent_stiffness(model, Xf, rest, lam=lam, external=external, sparse=True)
    T = tangent_basis(bar_jacobian(model, Xf, sparse=True), 3 * r) if nb else sp.identity(3 * r, format="csc")
    M3 = sp.kron(model.reduced_mass_sparse, sp.identity(3), format="csr")
    Ks = (T.T @ Kt @ T).tocsc()
    Ms = (T.T @ M3 @ T).tocsc()
    Ks, Ms = 0.5 * (Ks + Ks.T), 0.5 * (Ms + Ms.T)
    rigid = 0 if len(model.fixed_nodes) or len(model.supports) else min(6, T.shape[1])
    out = lowest_modes(Ks.tocsc(), Ms.tocsc(), rigid, n_modes)
    ev = out["eigenvalues"]
    out.update({"frequencies_hz": np.sqrt(np.clip(ev, 0, None)) / (2 * np.pi), "rigid_body_modes": rigid,
                "dof": int(T.shape[1]), "method": "sparse"})
    return out
