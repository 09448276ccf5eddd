"""Rigid registration of a model's nodes to a cloud of unlabeled markers (no ROS).

A lab's model is written in the robot's own frame (z up, origin at the robot), the capture in the
capture's frame: before the first frame can be tracked, the model must be placed by a rotation and a
translation and its nodes matched to markers. Raw proximity in the model's frame cannot do that (and
mistakes a stray marker 3 cm from a node for the node). :func:`register` searches the rigid placements
that bars allow:

1. every model bar (a, b) is matched to every marker pair whose distance equals the bar length (within
   ``tol``), both ways round; a third node c (far from the bar's line) fixes the rotation about the bar: its
   marker must be at the model's distances from a and b (within ``shape_tol``: the robot may be deformed);
2. each triple gives a rigid placement (Kabsch); all placements are scored at once (vectorised): placed
   nodes are matched to their nearest markers, inliers are nodes within ``tol`` of a marker;
3. the best placements are refined (Kabsch on all inliers, one-to-one assignment, repeated) and compared:
   the winner needs the most inliers and an RMS clearly below every placement with a *different*
   node->marker assignment (the **ambiguity margin**: ``rms2 >= AMBIGUITY_RATIO * rms1`` and
   ``sqrt(rms2^2 - rms1^2) >= AMBIGUITY_FLOOR``). A symmetric robot whose model does not tell its orientations apart is
   **ambiguous**: no nodes are assigned, and the caller says so (a marker map resolves it).

A node whose nearest marker is not clearly nearer than its second nearest (by ``margin``) is left
unassigned (a stray marker close to a node is never taken: the tracker picks the node up later).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.spatial import cKDTree

AMBIGUITY_RATIO = 1.5        # a distinct placement must fit 50 % worse than the best (RMS) ...
AMBIGUITY_FLOOR = 0.0005     # ... and add a misfit of at least 0.5 mm RMS (in quadrature: sqrt(rms2^2 - rms1^2))
                             # [m]: a systematic shape difference above marker noise (0.1-0.5 mm), not noise
MAX_HYPOTHESES = 4000        # placements scored per call (bounds the time on a crowded capture)
REFINE = 8                   # best placements refined and compared
THIRD_NODES = 2              # third nodes tried per anchor bar


@dataclass
class Registration:
    """A rigid placement of the model: x_capture = R @ x_model + t, and the node -> marker assignment."""
    R: np.ndarray                # (3,3)
    t: np.ndarray                # (3,) m
    assignment: np.ndarray       # (n,) marker index per node, -1 unassigned
    rms: float                   # m, RMS distance of the assigned nodes to their markers
    inliers: int
    second_rms: float            # m, RMS of the best placement with another assignment (inf: none)
    ambiguous: bool
    hypotheses: int

    def to_dict(self) -> dict:
        return {"rotation": self.R.tolist(), "translation_m": self.t.tolist(), "rms_m": self.rms,
                "inliers": self.inliers, "second_rms_m": self.second_rms, "ambiguous": self.ambiguous,
                "hypotheses": self.hypotheses}


def kabsch(A, B, w=None) -> tuple:
    """Rotation R (...,3,3) and translation t (...,3) minimising sum w |R a + t - b|^2 over the rows of
    A, B (...,k,3); w (...,k) weights (0 masks a row). Batched over leading axes; proper rotations."""
    A, B = np.asarray(A, float), np.asarray(B, float)
    w = np.ones(A.shape[:-1]) if w is None else np.asarray(w, float)
    ws = np.maximum(w.sum(-1, keepdims=True), 1e-300)
    ca = (w[..., None] * A).sum(-2) / ws
    cb = (w[..., None] * B).sum(-2) / ws
    H = np.einsum("...ki,...kj->...ij", w[..., None] * (A - ca[..., None, :]), B - cb[..., None, :])
    U, _, Vt = np.linalg.svd(H)
    d = np.sign(np.linalg.det(np.swapaxes(Vt, -1, -2) @ np.swapaxes(U, -1, -2)))
    d = np.where(d == 0, 1.0, d)
    D = np.zeros(H.shape)
    D[..., 0, 0] = 1.0
    D[..., 1, 1] = 1.0
    D[..., 2, 2] = d
    R = np.swapaxes(Vt, -1, -2) @ D @ np.swapaxes(U, -1, -2)
    t = cb - np.einsum("...ij,...j->...i", R, ca)
    return R, t


def _third_nodes(M, a, b, k) -> np.ndarray:
    """The k nodes farthest from the line through model nodes a and b (well-conditioned triangles)."""
    u = (M[b] - M[a]) / max(np.linalg.norm(M[b] - M[a]), 1e-12)
    r = M - M[a]
    d = np.linalg.norm(r - np.outer(r @ u, u), axis=1)
    d[[a, b]] = -1.0
    return np.argsort(-d)[:k]


def _hypotheses(M, bars, lengths, Q, tol, shape_tol) -> tuple:
    """Model index triples (H,3) and marker index triples (H,3) consistent with a bar and a third node."""
    D = np.linalg.norm(Q[:, None] - Q[None], axis=2)
    model_tri, marker_tri = [], []
    count = 0
    for (a, b), L in zip(bars, lengths):
        m1, m2 = np.nonzero(np.abs(D - L) <= tol)           # ordered pairs: both orientations
        if not len(m1):
            continue
        for c in _third_nodes(M, a, b, THIRD_NODES):
            dac, dbc = np.linalg.norm(M[c] - M[a]), np.linalg.norm(M[c] - M[b])
            ok = (np.abs(D[m1] - dac) <= shape_tol) & (np.abs(D[m2] - dbc) <= shape_tol)   # (pairs, markers)
            p, m3 = np.nonzero(ok)
            keep = (m3 != m1[p]) & (m3 != m2[p])
            p, m3 = p[keep], m3[keep]
            model_tri.append(np.tile([a, b, c], (len(p), 1)))
            marker_tri.append(np.stack([m1[p], m2[p], m3], axis=1))
            count += len(p)
            if count >= MAX_HYPOTHESES:
                break
        if count >= MAX_HYPOTHESES:
            break
    if not model_tri:
        return np.zeros((0, 3), int), np.zeros((0, 3), int)
    return np.concatenate(model_tri)[:MAX_HYPOTHESES], np.concatenate(marker_tri)[:MAX_HYPOTHESES]


def assign(placed, Q, tol, margin) -> np.ndarray:
    """One-to-one node -> marker assignment of placed nodes (n,3) to markers Q (m,3): minimum total distance
    among pairs within ``tol``; a node whose marker is not ``margin`` nearer than any other marker (or than
    the marker's distance to another node) is left unassigned (-1)."""
    n = len(placed)
    out = np.full(n, -1)
    if not len(Q):
        return out
    D = np.linalg.norm(placed[:, None] - Q[None], axis=2)
    big = 1e6
    cost = np.where(D <= tol, D, big)
    rows, cols = linear_sum_assignment(cost)
    ok = cost[rows, cols] < big
    rows, cols = rows[ok], cols[ok]
    d = D[rows, cols]
    Dr = D[rows].copy()
    Dr[np.arange(len(rows)), cols] = np.inf
    Dc = D[:, cols].copy()
    Dc[rows, np.arange(len(rows))] = np.inf
    clear = (Dr.min(axis=1, initial=np.inf) >= d + margin) & (Dc.min(axis=0, initial=np.inf) >= d + margin)
    out[rows[clear]] = cols[clear]
    return out


def _refine(M, Q, R, t, tol, margin, rounds=3, first_tol=None) -> tuple:
    """Iterate assignment and Kabsch on the inliers (the first round within ``first_tol``, default
    ``tol``); (R, t, assignment, rms)."""
    a = np.full(len(M), -1)
    for i in range(rounds):
        a = assign(M @ R.T + t, Q, first_tol if (i == 0 and first_tol is not None) else tol, margin)
        sel = a >= 0
        if sel.sum() < 3:
            break
        R, t = kabsch(M[sel], Q[a[sel]])
    sel = a >= 0
    rms = float(np.sqrt(np.mean(np.sum((M[sel] @ R.T + t - Q[a[sel]]) ** 2, axis=1)))) if sel.any() else np.inf
    return R, t, a, rms


def register(model_positions, bars, bar_lengths, markers, tol: float = 0.02, shape_tol: float | None = None,
             margin: float = 0.01, prior_tol: float | None = None, prior_only: bool = False) -> Registration | None:
    """Best rigid placement of ``model_positions`` (n,3) [m] on ``markers`` (m,3) [m] (see the module doc).
    ``bars`` (b,2) node index pairs with ``bar_lengths`` (b,) [m]; ``tol`` [m]: bar-length and inlier
    tolerance; ``shape_tol`` [m] (default 2 tol): tolerance on non-bar distances (deformation); ``margin``
    [m]: per-node nearest vs second-nearest. ``prior_tol`` [m]: also try the model where it is written
    (first matching within prior_tol), which wins ties with other placements; ``prior_only``: only that
    (models with fixed nodes). None when no placement puts 3 nodes on markers."""
    M = np.asarray(model_positions, float)
    Q = np.asarray(markers, float).reshape(-1, 3)
    Q = Q[np.isfinite(Q).all(axis=1)]
    shape_tol = 2.0 * tol if shape_tol is None else float(shape_tol)
    if len(Q) < 3 or len(M) < 3:
        return None
    results, seen = [], set()
    if prior_tol is not None or prior_only:
        first = tol if prior_tol is None else max(float(prior_tol), tol)
        Rh, th, a, rms = _refine(M, Q, np.eye(3), np.zeros(3), tol, margin, first_tol=first)
        if (a >= 0).sum() >= 3:
            results.append((int((a >= 0).sum()), rms, Rh, th, a, True))
            seen.add(tuple(a))
    n_hyp = 0
    if not prior_only:
        mt, qt = _hypotheses(M, np.asarray(bars, int).reshape(-1, 2), np.asarray(bar_lengths, float), Q, tol,
                             shape_tol)
        n_hyp = len(mt)
        if n_hyp:
            R, t = kabsch(M[mt], Q[qt])                               # (H,3,3), (H,3)
            placed = np.einsum("hij,nj->hni", R, M) + t[:, None, :]   # (H,n,3)
            dmin = cKDTree(Q).query(placed.reshape(-1, 3))[0].reshape(placed.shape[:2])  # (H,n) nearest marker
            inl = dmin <= tol
            score = inl.sum(axis=1) - np.where(inl, dmin, 0.0).sum(axis=1) / (tol * len(M) + 1e-12)
            refined = 0
            for h in np.argsort(-score):
                if refined >= REFINE:
                    break
                Rh, th, a, rms = _refine(M, Q, R[h], t[h], tol, margin)
                key = tuple(a)
                if (a >= 0).sum() < 3 or key in seen:
                    continue
                seen.add(key)
                refined += 1
                results.append((int((a >= 0).sum()), rms, Rh, th, a, False))
    if not results:
        return None
    results.sort(key=lambda r: (-r[0], r[1]))
    best = results[0]
    tied = [r for r in results[1:] if r[0] >= best[0] - 1 and _distinct(r[4], best[4])
            and not _clearly_worse(r[1], best[1])]
    ambiguous = bool(tied)
    if ambiguous:
        prior = [r for r in [best] + tied if r[5]]
        if prior:                                     # the model where it is written breaks the tie
            best, ambiguous = prior[0], False
    others = [r[1] for r in results if r is not best and r[0] >= best[0] - 1 and _distinct(r[4], best[4])]
    return Registration(R=best[2], t=best[3], assignment=best[4], rms=best[1], inliers=best[0],
                        second_rms=float(min(others, default=np.inf)), ambiguous=ambiguous, hypotheses=n_hyp)


def _clearly_worse(rms2: float, rms1: float) -> bool:
    """A placement of RMS ``rms2`` [m] fits clearly worse than one of ``rms1``: AMBIGUITY_RATIO times the
    RMS and AMBIGUITY_FLOOR of added misfit."""
    return rms2 >= AMBIGUITY_RATIO * rms1 and rms2 ** 2 - rms1 ** 2 >= AMBIGUITY_FLOOR ** 2


def _distinct(a, b) -> bool:
    """Two assignments put some node on different markers (not merely one more or one fewer node)."""
    both = (a >= 0) & (b >= 0)
    return bool(np.any(a[both] != b[both]))


#: the fixed nodes fix a rotation when they leave a line by at least this much [m] (RMS distance from their
#: principal line): a clamped bar alone (two collinear ends) leaves the turn about it free
FIXED_SPREAD = 0.01


def fixed_part_transform(model_positions, fixed, measured) -> tuple:
    """The rigid transform that puts measured node positions on the model's frame by the model's fixed part.

    ``model_positions`` (n, 3) [m] where the model file puts its nodes, ``fixed`` their indices held by the
    world (``model.fixed_nodes``), ``measured`` (n, 3) [m] (NaN: unknown) their markers. With the fixed nodes
    known and at least FIXED_SPREAD off a line: Kabsch on them alone; otherwise (a single clamped bar) the
    fixed nodes weighted 1000:1 over the other known nodes (they fix the turn about the bar). Returns
    (T (4, 4): ``p_model = T[:3, :3] @ p + T[:3, 3]``, RMS distance [m] of the fixed nodes after it, a
    sentence saying how), or None when fewer than 3 usable nodes are known."""
    M, Q = np.asarray(model_positions, float), np.asarray(measured, float)
    fixed = np.asarray(fixed, int)
    known = np.isfinite(Q).all(axis=1)
    fk = fixed[known[fixed]]
    if len(fk) >= 3 and _line_spread(M[fk]) >= FIXED_SPREAD:
        w, how = np.isin(np.arange(len(M)), fk).astype(float), f"the {len(fk)} fixed nodes' markers"
    elif known.sum() >= 3 and len(fk) >= 1:
        w = np.where(np.isin(np.arange(len(M)), fk), 1000.0, 1.0) * known
        how = f"the {len(fk)} fixed nodes' markers (on a line: the other {int(known.sum()) - len(fk)} nodes fix the turn)"
    else:
        return None
    R, t = kabsch(np.where(known[:, None], Q, 0.0), M, w)
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, t
    rms = float(np.sqrt(np.mean(np.sum((Q[fk] @ R.T + t - M[fk]) ** 2, axis=1)))) if len(fk) else np.inf
    return T, rms, how


def _line_spread(P) -> float:
    """RMS distance [m] of the points P (k, 3) from their principal line."""
    s = np.linalg.svd(P - P.mean(axis=0), compute_uv=False)
    return float(np.sqrt(np.sum(s[1:] ** 2) / len(P)))


#: the free part of a rig in a base is first matched this far from where its fixed part puts it [m]: hung
#: weights moved a lab rig's free part 34-61 mm
FREE_PART_TOL = 0.10


def register_fixed_part(model_positions, fixed, bars, bar_lengths, markers, tol: float = 0.02,
                        margin: float = 0.01, prior_tol: float = 0.05) -> Registration | None:
    """A model with fixed nodes placed by its fixed part, then the rest matched from there: for a rig held in
    a base whose free part a load has moved (tens of mm: a whole-shape fit then finds no clear placement).

    1. the fixed nodes alone (with the bars between them) are registered on the markers (:func:`register`);
       they must be at least 3 and span more than a line (FIXED_SPREAD);
    2. the other nodes, placed with them, are matched to the remaining markers by one rigid correction of
       their own (first within FREE_PART_TOL, then ``tol`` [m]: :func:`register` with ``prior_only``).

    The placement (R, t) is the fixed part's; the assignment covers both parts. None when the fixed part
    cannot be placed (or only ambiguously)."""
    M = np.asarray(model_positions, float)
    Q = np.asarray(markers, float).reshape(-1, 3)
    Q = Q[np.isfinite(Q).all(axis=1)]
    fixed = np.asarray(sorted(set(int(i) for i in fixed)), int)
    if len(fixed) < 3 or _line_spread(M[fixed]) < FIXED_SPREAD:
        return None
    bars = np.asarray(bars, int).reshape(-1, 2)
    lengths = np.asarray(bar_lengths, float)
    fixed_reg = register(M[fixed], *_sub_bars(fixed, bars, lengths), Q, tol=tol, margin=margin, prior_tol=prior_tol)
    if fixed_reg is None or fixed_reg.ambiguous:
        return None
    a = np.full(len(M), -1)
    a[fixed] = fixed_reg.assignment
    free = np.setdiff1d(np.arange(len(M)), fixed)
    rest = np.setdiff1d(np.arange(len(Q)), a[a >= 0])
    placed = M @ fixed_reg.R.T + fixed_reg.t
    if len(free) >= 3 and len(rest) >= 3:
        free_reg = register(placed[free], *_sub_bars(free, bars, lengths), Q[rest], tol=tol, margin=margin,
                            prior_tol=max(prior_tol, FREE_PART_TOL), prior_only=True)
        if free_reg is not None:
            a[free] = np.where(free_reg.assignment >= 0, rest[np.maximum(free_reg.assignment, 0)], -1)
            placed[free] = placed[free] @ free_reg.R.T + free_reg.t
    sel = a >= 0
    rms = float(np.sqrt(np.mean(np.sum((placed[sel] - Q[a[sel]]) ** 2, axis=1))))
    return Registration(R=fixed_reg.R, t=fixed_reg.t, assignment=a, rms=rms, inliers=int(sel.sum()),
                        second_rms=fixed_reg.second_rms, ambiguous=False, hypotheses=fixed_reg.hypotheses)


def _sub_bars(nodes, bars, lengths) -> tuple:
    """(bars (b, 2) re-indexed into ``nodes``, their lengths) of the bars with both ends in ``nodes``."""
    where = {int(n): k for k, n in enumerate(nodes)}
    keep = [k for k, (i, j) in enumerate(bars) if int(i) in where and int(j) in where]
    sub = np.array([[where[int(bars[k, 0])], where[int(bars[k, 1])]] for k in keep], int).reshape(-1, 2)
    return sub, lengths[keep]
