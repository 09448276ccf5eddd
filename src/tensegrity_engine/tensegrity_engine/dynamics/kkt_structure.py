"""Symbolic part of the sparse constraint solver for large mass-coupled components (class-k structures).

A component whose bars share nodes (a class-2 tower, a class-2 shell, any structure with joints) couples
its bars through the reduced mass: ``Mr⁻¹`` and the bar system ``S = J Mr⁻¹ Jᵀ`` are dense over it. The
kernels instead factor the sparse saddle-point (KKT) matrix of the constrained accelerations

    [ Mr ⊗ I3   Jᵀ ] [ Ÿ ]   [ Qᵀ F           ]
    [ J         0  ] [ y ] = [ −|ḃ|² (+ c b·ḃ) ]        J[b, (c, d)] = Ab[b, c] · b_b[d]

by an LDLᵀ factorisation without pivoting (``y = −λ``). Its existence needs only that every bar is
eliminated after all the coordinates it touches: every leading block is then ``[M_CC Jᵀ; J 0]`` with ``M_CC``
positive definite and ``J`` of full row rank (independent bars), so coordinate pivots are > 0 and bar
pivots < 0. This module computes, once per model, an elimination order (minimum degree on the coordinate
graph, SuperLU's MMD, each bar right after its last coordinate) and the pattern of L (elimination tree),
as flat arrays for :mod:`.kernels`. A class-2 structure (at most two bars per node) is a set of chains and
loops: L then has a few entries per row, and a factorisation costs O(bars).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

SPARSE_MIN_BARS = 17       # components with more bars use the sparse KKT solver (dense blocks below)


def _coordinate_order(P) -> np.ndarray:
    """Minimum-degree elimination order of the symmetric pattern P (m×m sparse)."""
    m = P.shape[0]
    if m <= 2:
        return np.arange(m)
    A = abs(sp.csc_matrix(P, dtype=float))
    A = A - sp.diags(A.diagonal())
    A = sp.csc_matrix(-A + sp.diags(np.asarray(abs(A).sum(axis=1)).ravel() + 1.0))   # SPD M-matrix, same graph
    lu = splu(A, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
    return np.argsort(lu.perm_c)       # perm_c[i] = new position of column i


def _variables(blocks, Ab):
    """Elimination order of the KKT unknowns: (coordinate or -1, dimension, bar or -1) per variable."""
    kv_c, kv_d, kv_b = [], [], []
    for cidx, bidx, Mk in blocks:
        Ak = Ab[bidx][:, cidx]
        order = _coordinate_order(abs(Mk) + abs(Ak.T) @ abs(Ak))
        pos = np.empty(len(cidx), np.int64)
        pos[order] = np.arange(len(cidx))
        Akc = Ak.tocsr()
        last = np.array([pos[Akc.indices[Akc.indptr[k]:Akc.indptr[k + 1]]].max() for k in range(len(bidx))])
        keys = np.r_[pos.astype(float), last + 0.5]
        items = np.argsort(keys, kind="stable")
        for it in items:
            if it < len(cidx):
                for d in range(3):
                    kv_c.append(cidx[it])
                    kv_d.append(d)
                    kv_b.append(-1)
            else:
                kv_c.append(-1)
                kv_d.append(0)
                kv_b.append(bidx[it - len(cidx)])
    return np.array(kv_c, np.int64), np.array(kv_d, np.int64), np.array(kv_b, np.int64)


def _lower_entries(kv_c, kv_d, kv_b, Mr, Ab):
    """Lower-triangle entries (row, col, constant, bar, dim) of the permuted KKT matrix; the value of an
    entry with bar >= 0 is constant * b_bar[dim] at run time."""
    N = len(kv_c)
    var_of = {}
    for v in range(N):
        if kv_b[v] >= 0:
            var_of[("b", int(kv_b[v]))] = v
        else:
            var_of[(int(kv_c[v]), int(kv_d[v]))] = v
    coords = sorted({int(c) for c in kv_c if c >= 0})
    rows, cols, val, bar, dim = [], [], [], [], []
    Mc = Mr[coords][:, coords].tocoo()
    for i, j, a in zip(Mc.row, Mc.col, Mc.data):
        for d in range(3):
            u, w = var_of[(coords[i], d)], var_of[(coords[j], d)]
            if u >= w:
                rows.append(u), cols.append(w), val.append(a), bar.append(-1), dim.append(0)
    bars = [int(b) for b in kv_b if b >= 0]
    Ac = Ab[bars].tocoo()
    for k, c, a in zip(Ac.row, Ac.col, Ac.data):
        for d in range(3):
            u, w = var_of[("b", bars[k])], var_of[(int(c), d)]
            rows.append(max(u, w)), cols.append(min(u, w)), val.append(a), bar.append(bars[k]), dim.append(d)
    return N, np.array(rows, np.int64), np.array(cols, np.int64), np.array(val), np.array(bar, np.int64), \
        np.array(dim, np.int64)


def _symbolic(N, rows, cols):
    """Pattern of the strictly lower L (column lists, sorted) by the elimination tree."""
    colpat = [set() for _ in range(N)]
    for i, j in zip(rows, cols):
        if i > j:
            colpat[j].add(int(i))
    children = [[] for _ in range(N)]
    pattern = []
    for j in range(N):
        s = colpat[j]
        for k in children[j]:
            s.update(x for x in pattern[k] if x > j)
        srt = sorted(s)
        pattern.append(srt)
        colpat[j] = None
        if srt:
            children[srt[0]].append(j)
    return pattern


def kkt_arrays(blocks, Mr, Ab) -> dict:
    """Flat arrays for the kernels' sparse LDLᵀ of the KKT matrix of the given components.

    ``blocks``: [(free coordinate indices, bar indices)]; ``Mr`` (r×r) and ``Ab`` (bars×r) sparse.
    Returns kv_c/kv_d/kv_b (per variable, in elimination order), ka_ptr/ka_row/ka_val/ka_bar/ka_dim (the
    matrix's lower entries by column, bar entries to be multiplied by the bar vector's component),
    kl_ptr/kl_row (strictly lower L by column) and kr_ptr/kr_col/kr_pos (L by row: column, position)."""
    if not blocks:
        e = np.zeros(0, np.int64)
        return dict(kv_c=e, kv_d=e, kv_b=e, ka_ptr=np.zeros(1, np.int64), ka_row=e, ka_val=np.zeros(0), ka_bar=e,
                    ka_dim=e, kl_ptr=np.zeros(1, np.int64), kl_row=e, kr_ptr=np.zeros(1, np.int64), kr_col=e, kr_pos=e)
    Mr, Ab = sp.csr_matrix(Mr), sp.csr_matrix(Ab)
    kv_c, kv_d, kv_b = _variables([(c, b, Mr[c][:, c]) for c, b in blocks], Ab)
    N, rows, cols, val, bar, dim = _lower_entries(kv_c, kv_d, kv_b, Mr, Ab)
    order = np.lexsort((rows, cols))
    rows, cols, val, bar, dim = rows[order], cols[order], val[order], bar[order], dim[order]
    ka_ptr = np.searchsorted(cols, np.arange(N + 1)).astype(np.int64)
    pattern = _symbolic(N, rows, cols)
    kl_ptr = np.r_[0, np.cumsum([len(p) for p in pattern])].astype(np.int64)
    kl_row = np.array([i for p in pattern for i in p], np.int64)
    kl_col = np.repeat(np.arange(N, dtype=np.int64), np.diff(kl_ptr))
    by_row = np.lexsort((kl_col, kl_row))
    kr_ptr = np.searchsorted(kl_row[by_row], np.arange(N + 1)).astype(np.int64)
    return dict(kv_c=kv_c, kv_d=kv_d, kv_b=kv_b, ka_ptr=ka_ptr, ka_row=rows, ka_val=val.astype(float),
                ka_bar=bar, ka_dim=dim, kl_ptr=kl_ptr, kl_row=kl_row, kr_ptr=kr_ptr,
                kr_col=kl_col[by_row], kr_pos=by_row.astype(np.int64))
