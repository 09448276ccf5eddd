"""Self-collision geometry: exact distances between segments and clearances between capsules.

Every bar and every simple string is a capsule: a segment with a radius. Two elements collide when the
distance between their segments is below the sum of their radii (the condition d >= d_min of the
self-collision paper). **Boundary convention:** clearance = distance − (r_i + r_j); touching capsules
have clearance exactly 0 and count as *not* violating (a violation is ``clearance < margin`` — strict),
so with margin 0 only an actual overlap is reported.

Segment–segment distance (:func:`segment_distance`) is the convex minimisation of
|P0 + s d1 − Q0 − t d2| over s, t in [0, 1], solved in closed form with the parameters computed without
the usual cancellation: with n = d1 × d2 and r = P0 − Q0 the unconstrained minimiser is
s = n·(d2 × r)/|n|², t = n·(d1 × r)/|n|² (Lagrange's identity turns a·e − b² into |n|²), which stays exact
for long, nearly parallel segments where the Gram formula (a e − b²) loses every digit. Then the usual
clamping to the square; for (nearly) parallel pairs the four endpoint-to-segment candidates are also
checked and the smallest real point-to-point distance is kept, so the result is never below the true
minimum and equals it to rounding. Zero-length segments reduce to point–segment and point–point.
Never NaN for finite input.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from tensegrity_engine.model.model import constraint_groups


@njit(cache=True, inline="always", _nrt=False)
def _clamp01(x):
    return 0.0 if x < 0.0 else (1.0 if x > 1.0 else x)


@njit(cache=True, inline="always", _nrt=False)
def _point_segment_t(px, py, pz, q0x, q0y, q0z, dx, dy, dz, e):
    """Parameter of the point of segment Q0 + t d closest to p (e = |d|²)."""
    if e <= 0.0:
        return 0.0
    return _clamp01(((px - q0x) * dx + (py - q0y) * dy + (pz - q0z) * dz) / e)


@njit(cache=True, inline="always", _nrt=False)
def _dist2(p0x, p0y, p0z, d1x, d1y, d1z, s, q0x, q0y, q0z, d2x, d2y, d2z, t):
    x = (p0x - q0x) + s * d1x - t * d2x
    y = (p0y - q0y) + s * d1y - t * d2y
    z = (p0z - q0z) + s * d1z - t * d2z
    return x * x + y * y + z * z


@njit(cache=True, _nrt=False)
def segment_distance_st(p0x, p0y, p0z, p1x, p1y, p1z, q0x, q0y, q0z, q1x, q1y, q1z):
    """(distance, s, t) between segments P0P1 and Q0Q1; closest points P0 + s(P1−P0), Q0 + t(Q1−Q0)."""
    d1x, d1y, d1z = p1x - p0x, p1y - p0y, p1z - p0z
    d2x, d2y, d2z = q1x - q0x, q1y - q0y, q1z - q0z
    rx, ry, rz = p0x - q0x, p0y - q0y, p0z - q0z
    a = d1x * d1x + d1y * d1y + d1z * d1z
    e = d2x * d2x + d2y * d2y + d2z * d2z
    if a <= 0.0 and e <= 0.0:                      # point - point
        return math.sqrt(rx * rx + ry * ry + rz * rz), 0.0, 0.0
    if a <= 0.0:                                   # point P0 - segment Q
        t = _point_segment_t(p0x, p0y, p0z, q0x, q0y, q0z, d2x, d2y, d2z, e)
        return math.sqrt(_dist2(p0x, p0y, p0z, 0.0, 0.0, 0.0, 0.0, q0x, q0y, q0z, d2x, d2y, d2z, t)), 0.0, t
    if e <= 0.0:                                   # segment P - point Q0
        s = _point_segment_t(q0x, q0y, q0z, p0x, p0y, p0z, d1x, d1y, d1z, a)
        return math.sqrt(_dist2(p0x, p0y, p0z, d1x, d1y, d1z, s, q0x, q0y, q0z, 0.0, 0.0, 0.0, 0.0)), s, 0.0
    nx = d1y * d2z - d1z * d2y
    ny = d1z * d2x - d1x * d2z
    nz = d1x * d2y - d1y * d2x
    nn = nx * nx + ny * ny + nz * nz
    b = d1x * d2x + d1y * d2y + d1z * d2z
    c = d1x * rx + d1y * ry + d1z * rz
    f = d2x * rx + d2y * ry + d2z * rz
    if nn > 0.0:
        # s = n.(d2 x r)/|n|^2 without the a e - b^2 cancellation
        cx = d2y * rz - d2z * ry
        cy = d2z * rx - d2x * rz
        cz = d2x * ry - d2y * rx
        s = (nx * cx + ny * cy + nz * cz) / nn
        s = _clamp01(s) if s == s else 0.0             # NaN only on overflow (|x| > 1e75): fall back
    else:
        s = 0.0
    t = (b * s + f) / e
    if t < 0.0:
        t = 0.0
        s = _clamp01(-c / a)
    elif t > 1.0:
        t = 1.0
        s = _clamp01((b - c) / a)
    best = _dist2(p0x, p0y, p0z, d1x, d1y, d1z, s, q0x, q0y, q0z, d2x, d2y, d2z, t)
    if nn <= 1e-6 * a * e:
        # (nearly) parallel: also try the four endpoint-to-segment candidates, keep the smallest real distance
        for k in range(4):
            if k == 0:
                ss, tt = 0.0, _point_segment_t(p0x, p0y, p0z, q0x, q0y, q0z, d2x, d2y, d2z, e)
            elif k == 1:
                ss, tt = 1.0, _point_segment_t(p1x, p1y, p1z, q0x, q0y, q0z, d2x, d2y, d2z, e)
            elif k == 2:
                ss, tt = _point_segment_t(q0x, q0y, q0z, p0x, p0y, p0z, d1x, d1y, d1z, a), 0.0
            else:
                ss, tt = _point_segment_t(q1x, q1y, q1z, p0x, p0y, p0z, d1x, d1y, d1z, a), 1.0
            d2 = _dist2(p0x, p0y, p0z, d1x, d1y, d1z, ss, q0x, q0y, q0z, d2x, d2y, d2z, tt)
            if d2 < best:
                best, s, t = d2, ss, tt
    return math.sqrt(best), s, t


def segment_distance(p0, p1, q0, q1) -> float:
    """Distance [m] between segments p0–p1 and q0–q1 (3-vectors)."""
    return segment_distance_st(*map(float, p0), *map(float, p1), *map(float, q0), *map(float, q1))[0]


def closest_points(p0, p1, q0, q1):
    """(distance, point on p0–p1, point on q0–q1)."""
    d, s, t = segment_distance_st(*map(float, p0), *map(float, p1), *map(float, q0), *map(float, q1))
    p0, p1, q0, q1 = (np.asarray(v, float) for v in (p0, p1, q0, q1))
    return d, p0 + s * (p1 - p0), q0 + t * (q1 - q0)


@njit(cache=True, _nrt=False)
def _element_distance(X, ends, i, j):
    """(distance, s, t) between elements i and j (segments X[ends[k,0]] – X[ends[k,1]])."""
    a0, a1, b0, b1 = ends[i, 0], ends[i, 1], ends[j, 0], ends[j, 1]
    return segment_distance_st(X[a0, 0], X[a0, 1], X[a0, 2], X[a1, 0], X[a1, 1], X[a1, 2],
                               X[b0, 0], X[b0, 1], X[b0, 2], X[b1, 0], X[b1, 1], X[b1, 2])


@njit(cache=True, _nrt=False)
def sweep_pairs(X, ends, pair_i, pair_j, out_d, out_s, out_t):
    """Distances for element pairs: element k is the segment X[ends[k,0]] – X[ends[k,1]]."""
    for m in range(pair_i.shape[0]):
        d, s, t = _element_distance(X, ends, pair_i[m], pair_j[m])
        out_d[m] = d
        out_s[m] = s
        out_t[m] = t


@njit(cache=True, _nrt=False)
def sweep_pairs_pruned(X, ends, radius, pair_i, pair_j, margin, cen, half, out_d, out_s, out_t, out_c, out_exact):
    """Certified pruning: skip a pair when a lower bound on its clearance proves it can neither violate
    (clearance < margin) nor be the minimum.

    Lower bound: any point of segment k lies within half-length h_k of its midpoint c_k, so
    dist ≥ |c_i − c_j| − h_i − h_j and clearance ≥ that − r_i − r_j. The pair with the smallest bound is
    computed first; afterwards a pair is computed exactly iff its bound < max(margin, best exact so far).
    Skipped pairs get out_d = NaN, out_c = their lower bound, out_exact = 0. Returns the number computed.
    """
    E = ends.shape[0]
    for k in range(E):
        a, b = ends[k, 0], ends[k, 1]
        hx = 0.5 * (X[b, 0] - X[a, 0])
        hy = 0.5 * (X[b, 1] - X[a, 1])
        hz = 0.5 * (X[b, 2] - X[a, 2])
        cen[k, 0] = X[a, 0] + hx
        cen[k, 1] = X[a, 1] + hy
        cen[k, 2] = X[a, 2] + hz
        half[k] = math.sqrt(hx * hx + hy * hy + hz * hz)
    m = pair_i.shape[0]
    best_lb = math.inf
    first = -1
    for q in range(m):
        i, j = pair_i[q], pair_j[q]
        dx = cen[i, 0] - cen[j, 0]
        dy = cen[i, 1] - cen[j, 1]
        dz = cen[i, 2] - cen[j, 2]
        lb = math.sqrt(dx * dx + dy * dy + dz * dz) - half[i] - half[j] - radius[i] - radius[j]
        out_c[q] = lb
        out_exact[q] = 0
        out_d[q] = math.nan
        if lb < best_lb:
            best_lb = lb
            first = q
    best = math.inf
    computed = 0
    for it in range(m + 1):
        q = first if it == 0 else it - 1
        if q < 0 or (it > 0 and q == first):
            continue
        if out_c[q] >= margin and out_c[q] >= best:
            continue
        i, j = pair_i[q], pair_j[q]
        d, s, t = _element_distance(X, ends, i, j)
        out_d[q] = d
        out_s[q] = s
        out_t[q] = t
        c = d - (radius[i] + radius[j])
        out_c[q] = c
        out_exact[q] = 1
        computed += 1
        if c < best:
            best = c
    return computed


@dataclass(frozen=True)
class Elements:
    """Capsules of a model: bars then simple strings (model order), with the checked pair list."""
    names: tuple            # bar names, then "<string>.<k>" segment names
    ends: np.ndarray        # (E, 2) node indices
    radius: np.ndarray      # (E,) m
    kind: np.ndarray        # (E,) 0 bar, 1 string
    pair_i: np.ndarray      # (m,) element index
    pair_j: np.ndarray      # (m,)
    radius_sum: np.ndarray  # (m,) r_i + r_j


def _attached_groups(model) -> np.ndarray:
    """Group id per node: nodes joined by a virtual-node coincidence or any linear constraint share it
    (e.g. a stage-2 base node fixed to the middle of a plate bar counts as attached to that bar's ends)."""
    return constraint_groups(model.n_nodes, model.constraint_terms)


def model_elements(model) -> Elements:
    """The model's capsules and the pairs to check: all pairs except those sharing a node (by index,
    through virtual nodes or linear constraints). Built once per model."""
    ends = np.vstack([model.bars, model.segments]).astype(np.int64)
    radius = np.r_[model.bar_radius, model.string_radius[model.segment_string]]
    kind = np.r_[np.zeros(len(model.bars), np.int64), np.ones(len(model.segments), np.int64)]
    g = _attached_groups(model)
    ge = g[ends]                                               # (E, 2) groups of the ends
    E = len(ends)
    ii, jj = np.triu_indices(E, k=1)
    share = ((ge[ii, 0] == ge[jj, 0]) | (ge[ii, 0] == ge[jj, 1]) | (ge[ii, 1] == ge[jj, 0]) | (ge[ii, 1] == ge[jj, 1]))
    ii, jj = ii[~share].astype(np.int64), jj[~share].astype(np.int64)
    return Elements(tuple(model.bar_names) + tuple(model.segment_names), ends, radius, kind, ii, jj,
                    radius[ii] + radius[jj])


@dataclass
class Clearances:
    """Result of :func:`check` for one configuration. Distances and clearances in m, per checked pair
    (``elements.pair_i/pair_j`` order); ``s``/``t`` locate the closest points on the two segments."""
    distance: np.ndarray
    clearance: np.ndarray
    s: np.ndarray
    t: np.ndarray
    violating: np.ndarray   # indices into the pair list with clearance < margin
    min_clearance: float
    argmin: int
    exact: np.ndarray = None  # (m,) bool; False where pruning skipped the pair (clearance = lower bound)

    def points(self, elements: "Elements", X, pairs=None):
        """Closest points (k,3), (k,3) of the given pair indices (default: all) for positions X."""
        X = np.asarray(X, float)
        k = np.arange(len(self.distance)) if pairs is None else np.atleast_1d(pairs)
        ea, eb = elements.ends[elements.pair_i[k]], elements.ends[elements.pair_j[k]]
        pa = X[ea[:, 0]] + self.s[k, None] * (X[ea[:, 1]] - X[ea[:, 0]])
        pb = X[eb[:, 0]] + self.t[k, None] * (X[eb[:, 1]] - X[eb[:, 0]])
        return pa, pb


def check(elements: Elements, X, margin: float = 0.0, prune: bool = False) -> Clearances:
    """All-pairs clearances for node positions X (n,3); pairs with clearance < margin are violating.

    ``prune=True``: certified pruning (:func:`sweep_pairs_pruned`). Guarantee: every violating pair is
    computed exactly and reported, the minimum clearance and its pair are exact; pairs proven farther
    away keep ``distance`` NaN and a *lower bound* in ``clearance`` (``exact`` False).
    """
    X = np.ascontiguousarray(X, dtype=float)
    m = len(elements.pair_i)
    d, s, t = np.empty(m), np.zeros(m), np.zeros(m)
    if prune:
        E = len(elements.ends)
        clear = np.empty(m)
        exact = np.empty(m, np.int64)
        sweep_pairs_pruned(X, elements.ends, np.ascontiguousarray(elements.radius, dtype=float), elements.pair_i,
                           elements.pair_j, float(margin), np.empty((E, 3)), np.empty(E), d, s, t, clear, exact)
        exact = exact.astype(bool)
    else:
        sweep_pairs(X, elements.ends, elements.pair_i, elements.pair_j, d, s, t)
        clear = d - elements.radius_sum
        exact = np.ones(m, bool)
    k = int(np.argmin(clear)) if m else -1
    return Clearances(d, clear, s, t, np.flatnonzero(exact & (clear < margin)), float(clear[k]) if m else math.inf,
                      k, exact)


def pair_names(elements: Elements, k) -> tuple:
    """(name of element a, name of element b) of checked pair k."""
    return elements.names[elements.pair_i[k]], elements.names[elements.pair_j[k]]
