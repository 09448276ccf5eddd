"""Compiled sparse LDLᵀ of the constrained-acceleration KKT matrix (large components with shared joints).

The pattern and the elimination order come from :mod:`.kkt_structure` (once per model); here only the
numbers change with the bar vectors ``B``. Left-looking factorisation with the pattern of L known: column j
gathers the matrix's column, subtracts ``L[:, k] D[k] L[j, k]`` for the columns k of row j of L, and scales.
Cost: Σ over columns of (entries in row j of L × entries of those columns), a few hundred operations per
bar for a class-2 structure.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

# numba compiles one copy of a kernel per literal True/False passed to it (seconds of compile each); a flag
# read from this array is a run-time bool, so a kernel with a flag argument compiles once for both values.
_FLAG_VALUES = np.array([False, True])


@njit(cache=True, _nrt=False)
def flag(value):
    """``value`` (a literal True/False at the call site) as a run-time bool: see _FLAG_VALUES."""
    return _FLAG_VALUES[1] if value else _FLAG_VALUES[0]


@njit(cache=True, _nrt=False)
def kkt_factor(p, B, w):
    """LDLᵀ of the KKT matrix at bar vectors B into w.kL, w.kD. False if a pivot has the wrong sign
    (dependent bars: coordinates must give pivots > 0, bars pivots < 0) or is not finite."""
    x, L, D = w.kx, w.kL, w.kD
    ka_ptr, ka_row, ka_val, ka_bar, ka_dim = p.ka_ptr, p.ka_row, p.ka_val, p.ka_bar, p.ka_dim
    kl_ptr, kl_row, kr_ptr, kr_col, kr_pos = p.kl_ptr, p.kl_row, p.kr_ptr, p.kr_col, p.kr_pos
    for j in range(p.kv_c.shape[0]):
        for e in range(ka_ptr[j], ka_ptr[j + 1]):
            b = ka_bar[e]
            if b < 0:
                x[ka_row[e]] += ka_val[e]
            else:
                x[ka_row[e]] += ka_val[e] * B[b, ka_dim[e]]
        for rr in range(kr_ptr[j], kr_ptr[j + 1]):
            k = kr_col[rr]
            pos = kr_pos[rr]
            ljk = L[pos]
            f = ljk * D[k]
            x[j] -= ljk * f
            for q in range(pos + 1, kl_ptr[k + 1]):
                x[kl_row[q]] -= L[q] * f
        d = x[j]
        x[j] = 0.0
        if not math.isfinite(d) or (d <= 0.0 if p.kv_b[j] < 0 else d >= 0.0):
            for q in range(kl_ptr[j], kl_ptr[j + 1]):
                x[kl_row[q]] = 0.0
            return False
        D[j] = d
        inv = 1.0 / d
        for q in range(kl_ptr[j], kl_ptr[j + 1]):
            i = kl_row[q]
            L[q] = x[i] * inv
            x[i] = 0.0
    return True


@njit(cache=True, _nrt=False)
def kkt_solve(p, w, top, use_top, rhs):
    """Solve with the factor in w: right-hand side ``top`` (r×3, coordinates; zero if not ``use_top``) and
    ``rhs`` (bars). The solution is left in w.kx by variable (coordinates: Ÿ; bars: y = −λ)."""
    z, L, D = w.kx, w.kL, w.kD
    kv_c, kv_d, kv_b, kl_ptr, kl_row = p.kv_c, p.kv_d, p.kv_b, p.kl_ptr, p.kl_row
    N = kv_c.shape[0]
    for j in range(N):
        b = kv_b[j]
        if b >= 0:
            z[j] = rhs[b]
        elif use_top:
            z[j] = top[kv_c[j], kv_d[j]]
        else:
            z[j] = 0.0
    for j in range(N):
        zj = z[j]
        if zj != 0.0:
            for q in range(kl_ptr[j], kl_ptr[j + 1]):
                z[kl_row[q]] -= L[q] * zj
    for j in range(N):
        z[j] /= D[j]
    for j in range(N - 1, -1, -1):
        s = z[j]
        for q in range(kl_ptr[j], kl_ptr[j + 1]):
            s -= L[q] * z[kl_row[q]]
        z[j] = s


@njit(cache=True, _nrt=False)
def kkt_scatter(p, w, lam, Z, add, damp, V):
    """From the solution in w.kx: bars' λ = −y; coordinates Z += Ÿ (``add``) or Z = Ÿ − damp V."""
    z = w.kx
    kv_c, kv_d, kv_b = p.kv_c, p.kv_d, p.kv_b
    for j in range(kv_c.shape[0]):
        b = kv_b[j]
        if b >= 0:
            lam[b] = -z[j]
        elif add:
            Z[kv_c[j], kv_d[j]] += z[j]
        else:
            c, d = kv_c[j], kv_d[j]
            Z[c, d] = z[j] - damp * V[c, d]
        z[j] = 0.0
