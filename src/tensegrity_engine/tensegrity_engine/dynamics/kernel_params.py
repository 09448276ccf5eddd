"""A model's arrays as the numba kernels take them (:class:`KernelParams`), computed once per model.

The reduced mass matrix and the bar constraints are block-diagonal over the *components* of the structure
(free coordinates coupled by a bar's consistent mass or a constraint): ``Minv``, ``H = Ab Mr⁻¹ Abᵀ`` and
``G = Mr⁻¹ Abᵀ`` are stored as their dense diagonal blocks only (flat, row-major, offsets
``mb_ptr``/``hb_ptr``/``gb_ptr``; coordinates ``c_idx`` and bars ``b_idx`` by component), so a structure of
separate bars costs O(bars) per step. Components of :data:`~.kkt_structure.SPARSE_MIN_BARS` bars or more
(joints coupling many bars: class-2 towers and shells) are solved instead through a sparse LDLᵀ of their KKT
matrix (``kv_*``, ``ka_*``, ``kl_*``, ``kr_*``, bars flagged in ``bar_sp``; see :mod:`.kkt_structure`): no
dense block grows with them.

:func:`kernel_params` gives the named tuple (read on the Python side), :func:`kernel_ref` the same arrays
behind one pointer (:mod:`.kernel_data`) for the compiled kernels. Both are kept per model, for as long as
the model lives (the model itself stays immutable and knows nothing of the kernels).
"""
from __future__ import annotations

import threading
import weakref
from collections import namedtuple

import numpy as np
from scipy.sparse.csgraph import connected_components

from tensegrity_engine.dynamics.contact import contact_arrays
from tensegrity_engine.dynamics.kernel_data import DataRef, params_ref
from tensegrity_engine.dynamics import kkt_structure
from tensegrity_engine.model.model import Model, read_only

KernelParams = namedtuple("KernelParams", [
    "n", "r", "q_ptr", "q_idx", "q_val", "X0", "Minv", "H", "G",
    "bar_j", "bar_k", "bar_len", "seg_j", "seg_k", "seg_str",
    "str_ea_mode", "str_ea", "str_k", "str_zeta", "str_rest", "act_str", "Wg",
    "str_seg0", "pul_str", "pul_seg", "pul_c", "pul_mu", "act_delay",
    "cb_ptr", "c_idx", "mb_ptr", "bb_ptr", "b_idx", "hb_ptr", "gb_ptr",
    "bar_sp", "kv_c", "kv_d", "kv_b", "ka_ptr", "ka_row", "ka_val", "ka_bar", "ka_dim",
    "kl_ptr", "kl_row", "kr_ptr", "kr_col", "kr_pos",
    "ob_kind", "ob_c", "ob_R", "ob_h", "ob_mu", "ob_grid", "ob_at", "cs_node", "cs_bar", "cs_side", "cs_ob", "cs_r", "cs_k", "cs_c", "cs_rmax",
    "sup_nodes", "sup_k", "sup_c", "sup_ref"])
_CONTACT_FIELDS = ("ob_kind", "ob_c", "ob_R", "ob_h", "ob_mu", "ob_grid", "ob_at", "cs_node", "cs_bar", "cs_side",
                   "cs_ob", "cs_r", "cs_k", "cs_c", "cs_rmax")

_KKT_FIELDS = ("kv_c", "kv_d", "kv_b", "ka_ptr", "ka_row", "ka_val", "ka_bar", "ka_dim", "kl_ptr", "kl_row",
               "kr_ptr", "kr_col", "kr_pos")

_lock = threading.RLock()
_params: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()     # Model -> KernelParams
_refs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()       # Model -> DataRef


def kernel_params(model: Model) -> KernelParams:
    """The model's arrays for the numba kernels (computed on the first call for this model, then kept)."""
    with _lock:
        params = _params.get(model)
        if params is None:
            params = _params[model] = _compute(model)
        return params


def kernel_ref(model: Model) -> DataRef:
    """:func:`kernel_params` as the compiled kernels take it: one reference (:mod:`.kernel_data`), kept with
    the model so it outlives every kernel call."""
    with _lock:
        ref = _refs.get(model)
        if ref is None:
            ref = _refs[model] = params_ref(kernel_params(model))
        return ref


def components(model: Model) -> list:
    """[(free coordinate indices, bar indices)] per connected component of the mass/constraint coupling,
    in order of their first coordinate (one component: everything in model order)."""
    r = len(model.free_nodes)
    Ab = model.bar_jacobian_sparse.tocsr()
    pattern = (abs(model.reduced_mass_sparse) + abs(Ab.T) @ abs(Ab)).tocsr()
    ncomp, labels = connected_components(pattern, directed=False)
    bar_label = np.array([labels[Ab.indices[Ab.indptr[b]]] if Ab.indptr[b + 1] > Ab.indptr[b] else -1
                          for b in range(Ab.shape[0])], dtype=np.int64)
    out = []
    for k in range(ncomp):
        out.append((np.flatnonzero(labels == k), np.flatnonzero(bar_label == k)))
    stray = np.flatnonzero(bar_label < 0)          # an immobile bar (both ends fixed): its own block
    if len(stray):
        out.append((np.zeros(0, np.int64), stray))
    return out if r or len(stray) else [(np.zeros(0, np.int64), np.zeros(0, np.int64))]


def _pulleys(model: Model) -> tuple:
    """(first segment of each string (sigma_c + 1,), and per pass-through node with pulley damping: its
    string, the index of the first segment after it, its coefficient [N s/m], its capstan friction
    coefficient μ) for the kernels (a string's nodes are consecutive)."""
    seg0 = np.searchsorted(model.segment_string, np.arange(len(model.string_names) + 1)).astype(np.int64)
    pul_str, pul_seg = [], []
    for c in np.flatnonzero(model.string_pulley_damping > 0):
        for s in range(seg0[c] + 1, seg0[c + 1]):
            pul_str.append(c)
            pul_seg.append(s)
    pul_str = np.array(pul_str, np.int64)
    return (read_only(seg0), read_only(pul_str), read_only(np.array(pul_seg, np.int64)),
            read_only(model.string_pulley_damping[pul_str].astype(float)),
            read_only(model.string_pulley_friction[pul_str].astype(float)))


def _ptr(parts) -> np.ndarray:
    return read_only(np.r_[0, np.cumsum([len(x) for x in parts])].astype(np.int64))


def _flat(parts) -> np.ndarray:
    return read_only(np.concatenate(parts) if parts else np.zeros(0))


def _dense_blocks(model: Model) -> tuple:
    """(dense blocks [(coordinates, bars)], their flat Minv, H and G, KKT arrays of the sparse components,
    bar_sp): components of :data:`~.kkt_structure.SPARSE_MIN_BARS` bars or more go to the sparse KKT solve, the others are dense."""
    Mr = model.reduced_mass_sparse.tocsr()
    Ab = model.bar_jacobian_sparse.tocsr()
    blocks, large = [], []
    for cidx, bidx in components(model):
        (large if len(bidx) >= kkt_structure.SPARSE_MIN_BARS and len(cidx) else blocks).append((cidx, bidx))
    kkt = kkt_structure.kkt_arrays(large, Mr, Ab)
    bar_sp = np.zeros(len(model.bar_names), np.int64)
    for _, bidx in large:
        bar_sp[bidx] = 1
    minv, h, g = [], [], []
    for cidx, bidx in blocks:
        Mk = Mr[cidx][:, cidx].toarray()
        Mi = np.linalg.inv(Mk)
        Mi = 0.5 * (Mi + Mi.T)
        Ak = Ab[bidx][:, cidx].toarray()
        Hk = Ak @ Mi @ Ak.T if len(cidx) else np.diag(1.0 / model.bar_length[bidx] ** 2)
        minv.append(Mi.ravel())
        h.append(Hk.ravel())
        g.append((Mi @ Ak.T).ravel())
    return blocks, minv, h, g, kkt, bar_sp


def _compute(model: Model) -> KernelParams:
    blocks, minv, h, g, kkt, bar_sp = _dense_blocks(model)
    contact = contact_arrays(model)
    Q = model.Q_sparse
    ea = model.string_EA
    return KernelParams(
        model.n_nodes, len(model.free_nodes), read_only(Q.indptr.astype(np.int64)),
        read_only(Q.indices.astype(np.int64)), read_only(Q.data.astype(float)), model.X0, _flat(minv), _flat(h),
        _flat(g), read_only(model.bars[:, 0].copy()), read_only(model.bars[:, 1].copy()), model.bar_length,
        read_only(model.segments[:, 0].copy()), read_only(model.segments[:, 1].copy()), model.segment_string,
        read_only((~np.isnan(ea)).astype(np.int64)), read_only(np.nan_to_num(ea)),
        read_only(np.nan_to_num(model.string_stiffness)), model.string_damping, model.rest_length,
        model.actuator_string, model.gravity_forces, *_pulleys(model), model.actuator_delay,
        _ptr([c for c, _ in blocks]), _flat([np.asarray(c, np.int64) for c, _ in blocks]).astype(np.int64),
        _ptr(minv), _ptr([b for _, b in blocks]), _flat([np.asarray(b, np.int64) for _, b in blocks]).astype(np.int64),
        _ptr(h), _ptr(g), read_only(bar_sp), *(read_only(kkt[k]) for k in _KKT_FIELDS),
        *(read_only(contact[k]) for k in _CONTACT_FIELDS), *_supports(model))


def _supports(model: Model) -> tuple:
    """The compliant supports (model/supports.py): (s, 2) nodes ((i, -1) translational, (a, b) rotational),
    stiffness [N/m or N m/rad], damping [N s/m or N m s/rad], (s, 3) anchor [m] or unit rest direction."""
    sup = model.supports
    return (read_only(sup.nodes.astype(np.int64)), read_only(sup.stiffness.astype(float)),
            read_only(sup.damping.astype(float)), read_only(sup.reference.astype(float)))
