"""Exact geometry between capsules (bars: segment p0–p1 with radius r; nodes: radius-0 points) and static
obstacles: half-spaces (ground, inclines, walls) and oriented boxes. Lengths in m.

Every obstacle has a frame: centre c (3,), rotation R (3, 3, columns = local axes), half extents h (3,).
A point x has local coordinates R^T (x − c).
* Half-space ``n·x <= d`` inside (ground: n = (0, 0, 1), d = 0): c = d n, R's third column is n, h unused.
  The height above it, z = n·(x − c), is linear along a segment.
* Box: |local x_i| <= h_i inside.

Per capsule–obstacle pair the kernel writes:
* ``clearance`` [m]: signed; min distance segment–obstacle − r, and for a penetrating segment −(depth + r)
  with depth the **minimum translation** that separates the segment from the obstacle (so capsule
  penetration depth = −clearance, along ``normal``).
* ``normal``: unit, from the obstacle to the capsule (the direction to push the capsule out).
* ``s`` in [0, 1]: the contact point on the segment, p0 + s (p1 − p0) (closest point; for a penetration the
  point that touches once the segment is moved out along the normal).
* ``point`` (3,): the matching point on the obstacle surface.
* ``span`` (2,): [s_lo, s_hi], the part of the segment whose own pointwise clearance (signed distance of
  that segment point to the obstacle − r) is <= ``tol``. A **line contact**: a bar lying flat on the ground
  or on a box face touches along its length, and the dynamics loads it at both ends of the span (for a
  half-space the clearance is linear in s, so the span ends are the clipped ends of the touching part,
  exact in closed form; for a box it is convex in s, linear pieces inside and quadratic pieces of the squared
  distance outside, and the ends are solved on the piece the crossings of the faces bracket). With no
  part within ``tol``, s_lo = s_hi = s.

Segment–box distance is exact: the squared distance g(s) = Σ max(|x_i(s)| − h_i, 0)² is convex and C¹
(each term is a squared ramp), and on each piece between the crossings of ±h_i it is the quadratic of the
coordinates clamped there. So its minimum is at s = 0, 1, or where g' = 0, i.e. at the stationary point of
one of the 26 quadratics (which coordinates are clamped, to which side; one clamped coordinate gives the
crossing itself, which also finds a segment entering the box). All candidates are evaluated with the exact
point–box distance and the smallest kept: the error is rounding only.
Penetration uses the separating-axis theorem with the six axes that are the facet normals of the box swept
along the segment (3 box axes, 3 segment × box-axis cross products): the minimum overlap over them is the
exact minimum translation distance. Never NaN for finite input; zero-length segments are points.
Caveat: the minimum translation is a property of the whole segment, so a bar pierced deep through a thin box
(a wall) can have it along the bar; contact that bounds penetration never gets there, and ``span`` still
gives the pointwise picture (the part of the bar inside the box + r).
* Height field (:mod:`.heightfield`): c = origin, R = I, h = (cell_x, cell_y, top); its heights in ``grid``
  from ``grid_at``. Its clearance is the gap along the surface normal at the bar's deepest point, and its
  span is that point alone (no line contact reported here; the dynamics' slots have their own).
The contact forces are in :mod:`tensegrity_engine.dynamics.contact`,
the obstacles' schema in :mod:`tensegrity_engine.model.world`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from tensegrity_engine.collision.heightfield import bar_walk, point_contact
from tensegrity_engine.model.world import plane_frame

HALF_SPACE = 0
BOX = 1
HEIGHTFIELD = 2
KIND_NAMES = {HALF_SPACE: "half-space", BOX: "box", HEIGHTFIELD: "height field"}
DEFAULT_TOL = 1e-9     # m: span tolerance, far below physical relevance, far above rounding at metre scale


@njit(cache=True, inline="always", _nrt=False)
def _clamp01(x):
    return 0.0 if x < 0.0 else (1.0 if x > 1.0 else x)


@njit(cache=True, inline="always", _nrt=False)
def _out_d2(x, y, z, hx, hy, hz):
    """Squared distance from local point (x, y, z) to the box |x_i| <= h_i (0 inside)."""
    ex = max(abs(x) - hx, 0.0)
    ey = max(abs(y) - hy, 0.0)
    ez = max(abs(z) - hz, 0.0)
    return ex * ex + ey * ey + ez * ez


@njit(cache=True, inline="always", _nrt=False)
def box_sd(x, y, z, hx, hy, hz):
    """Signed distance [m] from local point (x, y, z) to the box (negative inside, = −depth to nearest face)."""
    qx, qy, qz = abs(x) - hx, abs(y) - hy, abs(z) - hz
    inside = min(max(qx, max(qy, qz)), 0.0)
    return math.sqrt(_out_d2(x, y, z, hx, hy, hz)) + inside


@njit(cache=True, inline="always", _nrt=False)
def _try_s(s, best, bs, x0, d, h):
    s = _clamp01(s)
    d2 = _out_d2(x0[0] + s * d[0], x0[1] + s * d[1], x0[2] + s * d[2], h[0], h[1], h[2])
    if d2 < best:
        return d2, s
    return best, bs


@njit(cache=True, _nrt=False)
def segment_box_outside(x0, d, h):
    """(distance, s): exact min over s in [0, 1] of the distance from x0 + s d to the box |x_i| <= h_i
    (local tuples). 0 when the segment meets the box. Candidates: the ends and the stationary points of
    the 26 quadratics (one per choice of clamped coordinates and sides)."""
    best, bs = _out_d2(x0[0], x0[1], x0[2], h[0], h[1], h[2]), 0.0
    best, bs = _try_s(1.0, best, bs, x0, d, h)
    dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
    if dd <= 0.0:
        return math.sqrt(best), bs
    for code in range(1, 27):
        num = 0.0
        den = 0.0
        c = code
        for i in range(3):
            side = c % 3                               # 0 free, 1 clamped at −h_i, 2 clamped at +h_i
            c //= 3
            if side != 0:
                num += (x0[i] - (h[i] if side == 2 else -h[i])) * d[i]
                den += d[i] * d[i]
        if den > 0.0:
            best, bs = _try_s(-num / den, best, bs, x0, d, h)
    return math.sqrt(best), bs


@njit(cache=True, _nrt=False)
def segment_box_sat(x0, d, h):
    """(depth, nx, ny, nz): minimum translation depth [m] of segment x0 + s d out of the box along the
    best of the six separating axes, with that unit axis (local, pointing from the box to the segment).
    depth <= 0: separated (−depth is a lower bound on the distance)."""
    dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
    best, bx, by, bz = math.inf, 0.0, 0.0, 1.0
    for k in range(6):
        if k < 3:
            ux, uy, uz = 1.0 if k == 0 else 0.0, 1.0 if k == 1 else 0.0, 1.0 if k == 2 else 0.0
        elif k == 3:
            ux, uy, uz = 0.0, d[2], -d[1]                # d × e_x
        elif k == 4:
            ux, uy, uz = -d[2], 0.0, d[0]                # d × e_y
        else:
            ux, uy, uz = d[1], -d[0], 0.0                # d × e_z
        uu = ux * ux + uy * uy + uz * uz
        if uu <= 1e-24 * dd or uu <= 0.0:
            continue                                   # d parallel to that box axis: covered by k < 3
        inv = 1.0 / math.sqrt(uu)
        ux, uy, uz = ux * inv, uy * inv, uz * inv
        rb = h[0] * abs(ux) + h[1] * abs(uy) + h[2] * abs(uz)
        a0 = ux * x0[0] + uy * x0[1] + uz * x0[2]
        a1 = a0 + ux * d[0] + uy * d[1] + uz * d[2]
        up = rb - min(a0, a1)                          # move the segment along +u
        dn = rb + max(a0, a1)                          # along −u
        if up <= dn and up < best:
            best, bx, by, bz = up, ux, uy, uz
        elif dn < up and dn < best:
            best, bx, by, bz = dn, -ux, -uy, -uz
    return best, bx, by, bz


@njit(cache=True, _nrt=False)
def point_sd(x0, d, h, s):
    return box_sd(x0[0] + s * d[0], x0[1] + s * d[1], x0[2] + s * d[2], h[0], h[1], h[2])


@njit(cache=True, _nrt=False)
def sd_slope(x0, d, h, s):
    """One-sided derivative (toward +s) of the pointwise signed distance at x0 + s d: outside the gradient
    of the distance (the normal) along d; inside (or on the surface) the largest slope of the faces that
    attain the max of |x_i| − h_i."""
    q = (x0[0] + s * d[0], x0[1] + s * d[1], x0[2] + s * d[2])
    dist2 = 0.0
    num = 0.0
    for i in range(3):
        e = abs(q[i]) - h[i]
        if e > 0.0:
            dist2 += e * e
            num += e * (d[i] if q[i] >= 0.0 else -d[i])
    if dist2 > 0.0:
        return num / math.sqrt(dist2)
    m = max(abs(q[0]) - h[0], max(abs(q[1]) - h[1], abs(q[2]) - h[2]))
    slope = -math.inf
    for i in range(3):
        if abs(q[i]) - h[i] == m:
            slope = max(slope, d[i] if q[i] >= 0.0 else -d[i])
    return slope


@njit(cache=True, _nrt=False)
def _face_level(x0, d, h, s):
    """max_i |x_i(s)| − h_i: the signed distance wherever it is <= 0 (inside), below it outside."""
    return max(abs(x0[0] + s * d[0]) - h[0], max(abs(x0[1] + s * d[1]) - h[1], abs(x0[2] + s * d[2]) - h[2]))


@njit(cache=True, _nrt=False)
def _deepest_inside(x0, d, h):
    """Minimiser over [0, 1] of max_i |x_i(s)| − h_i, a max of six lines: the ends or a crossing of two."""
    best, bs = _face_level(x0, d, h, 0.0), 0.0
    f1 = _face_level(x0, d, h, 1.0)
    if f1 < best:
        best, bs = f1, 1.0
    for a in range(6):
        ia, sa = a // 2, 1.0 - 2.0 * (a % 2)
        for b in range(a + 1, 6):
            ib, sb = b // 2, 1.0 - 2.0 * (b % 2)
            den = sa * d[ia] - sb * d[ib]
            if den != 0.0:
                t = _clamp01((h[ia] - h[ib] - sa * x0[ia] + sb * x0[ib]) / den)
                f = _face_level(x0, d, h, t)
                if f < best:
                    best, bs = f, t
    return bs


@njit(cache=True, _nrt=False)
def deepest_s(x0, d, h):
    """Minimiser s of the pointwise signed distance along the segment x0 + s d (convex in s), in closed
    form: an end whose one-sided slope points inward; else the closest point of a segment outside the box
    (:func:`segment_box_outside`), or the minimum of the six face lines for one that enters it."""
    if sd_slope(x0, d, h, 0.0) >= 0.0:
        return 0.0
    if sd_slope(x0, d, h, 1.0) <= 0.0:
        return 1.0
    dist, s = segment_box_outside(x0, d, h)
    if dist > 1e-9:
        return s                    # clear of the box: its closest point (only the rounding of a touch is
    t = _deepest_inside(x0, d, h)   # ambiguous: a segment entering the box has dist ~1e-17 at the face)
    return t if point_sd(x0, d, h, t) < point_sd(x0, d, h, s) else s


@njit(cache=True, _nrt=False)
def _quadratic_root(x0, d, h, a, b, T):
    """The s between a and b where the squared distance g(s) (one quadratic there: no coordinate crosses
    ±h_i between them) equals T, g(a) <= T < g(b)."""
    m = 0.5 * (a + b)
    A = 0.0
    B = 0.0
    C = -T
    for i in range(3):
        x = x0[i] + m * d[i]
        if abs(x) > h[i]:
            u = x0[i] - (h[i] if x > 0.0 else -h[i])
            A += d[i] * d[i]
            B += 2.0 * d[i] * u
            C += u * u
    lo, hi = min(a, b), max(a, b)
    if A <= 0.0:
        return a
    disc = max(B * B - 4.0 * A * C, 0.0)
    q = -0.5 * (B + math.copysign(math.sqrt(disc), B))
    r1 = q / A
    r2 = C / q if q != 0.0 else r1
    r = r1 if abs(r1 - m) <= abs(r2 - m) else r2        # the root in [lo, hi] (the other lies beyond)
    return min(max(r, lo), hi)


@njit(cache=True, _nrt=False)
def span_end(x0, d, h, inn, out, thr):
    """The end of the sublevel set {pointwise signed distance <= thr} between inn (inside it) and out, in
    closed form. thr <= 0: the set is where every face line |x_i| − h_i <= thr (linear in s); thr > 0: where
    the squared distance g <= thr², g piecewise quadratic between the crossings of ±h_i: those crossings
    bracket the end to one piece, solved there."""
    if point_sd(x0, d, h, out) <= thr:
        return out
    if thr <= 0.0:
        lo, hi = 0.0, 1.0
        for i in range(3):
            if d[i] != 0.0:
                t1, t2 = (h[i] + thr - x0[i]) / d[i], (-h[i] - thr - x0[i]) / d[i]
                lo, hi = max(lo, min(t1, t2)), min(hi, max(t1, t2))
        return _clamp01(hi if out > inn else lo)
    T = thr * thr
    a, b = inn, out
    for i in range(3):
        if d[i] != 0.0:
            for side in (-1.0, 1.0):
                t = (side * h[i] - x0[i]) / d[i]
                if (a < t < b) or (b < t < a):
                    if _out_d2(x0[0] + t * d[0], x0[1] + t * d[1], x0[2] + t * d[2], h[0], h[1], h[2]) <= T:
                        a = t
                    else:
                        b = t
    s = _quadratic_root(x0, d, h, a, b, T)
    lo, hi = min(a, b), max(a, b)
    for _ in range(2):      # Newton on the distance itself: the root of g = thr² loses half the digits
        slope = sd_slope(x0, d, h, s)
        if slope == 0.0:
            break
        s = min(max(s - (point_sd(x0, d, h, s) - thr) / slope, lo), hi)
    return s


@njit(cache=True, _nrt=False)
def box_span(x0, d, h, s_in, thr):
    """[s_lo, s_hi]: the interval of s around s_in where the pointwise signed distance <= thr (a convex
    function's sublevel set), ends in closed form (:func:`span_end`); (s_in, s_in) when s_in is above thr."""
    if point_sd(x0, d, h, s_in) > thr:
        return s_in, s_in
    return span_end(x0, d, h, s_in, 0.0, thr), span_end(x0, d, h, s_in, 1.0, thr)


@njit(cache=True, _nrt=False)
def capsule_box_local(x0, d, h, r, tol):
    """Capsule x0 + s d (local tuples), radius r, vs the box |x_i| <= h_i. Returns (clearance, n (3-tuple,
    local, unit), s, q (3-tuple, local point on the box surface), s_lo, s_hi)."""
    depth, nx, ny, nz = segment_box_sat(x0, d, h)
    scale = max(abs(x0[0]), abs(x0[1]), abs(x0[2]), abs(d[0]), abs(d[1]), abs(d[2]), h[0], h[1], h[2])
    if depth > 0.0:                                    # penetrating: move out along the MTV axis, then touch
        moved = (x0[0] + depth * nx, x0[1] + depth * ny, x0[2] + depth * nz)
        dist, s = segment_box_outside(moved, d, h)
        clear = -depth - r
        px, py, pz = moved[0] + s * d[0], moved[1] + s * d[1], moved[2] + s * d[2]
        s_ref = deepest_s(x0, d, h)
    else:
        dist, s = segment_box_outside(x0, d, h)
        clear = dist - r
        px, py, pz = x0[0] + s * d[0], x0[1] + s * d[1], x0[2] + s * d[2]
        s_ref = s
    qx = min(max(px, -h[0]), h[0])
    qy = min(max(py, -h[1]), h[1])
    qz = min(max(pz, -h[2]), h[2])
    if depth <= 0.0 and dist > 1e-12 * scale:          # clean outside: the exact direction
        nx, ny, nz = (px - qx) / dist, (py - qy) / dist, (pz - qz) / dist
    s_lo, s_hi = box_span(x0, d, h, s_ref, r + tol)
    if s_lo == s_hi:
        s_lo = s_hi = s
    return clear, (nx, ny, nz), s, (qx, qy, qz), s_lo, s_hi


@njit(cache=True, _nrt=False)
def capsule_half_space_local(z0, z1, r, tol):
    """Capsule with end heights z0, z1 [m] above the plane, radius r. Returns (clearance, s, s_lo, s_hi):
    the clearance is linear in s; the span is the clipped part with z(s) − r <= tol (whole bar when flat)."""
    s = 0.0 if z0 <= z1 else 1.0
    clear = min(z0, z1) - r
    thr = r + tol
    if z0 <= thr and z1 <= thr:
        return clear, s, 0.0, 1.0
    if z0 <= thr:
        return clear, s, 0.0, _clamp01((thr - z0) / (z1 - z0))
    if z1 <= thr:
        return clear, s, _clamp01((thr - z0) / (z1 - z0)), 1.0
    return clear, s, s, s


@njit(cache=True, _nrt=False)
def _pair(P0, P1, radius, kind, centre, rot, half, grid, at, tol, i, j):
    """One capsule i vs obstacle j in world coordinates: (clearance, n (3-tuple), s, q (3-tuple), s_lo, s_hi).
    A point (p1 = p0, a node) has no line contact: its span is (s, s)."""
    clear, n, s, q, lo, hi = _pair_any(P0, P1, radius, kind, centre, rot, half, grid, at, tol, i, j)
    if P1[i, 0] == P0[i, 0] and P1[i, 1] == P0[i, 1] and P1[i, 2] == P0[i, 2]:
        lo = hi = s
    return clear, n, s, q, lo, hi


@njit(cache=True, _nrt=False)
def _pair_any(P0, P1, radius, kind, centre, rot, half, grid, at, tol, i, j):
    """:func:`_pair` for any segment."""
    if kind[j] == HEIGHTFIELD:
        return _pair_heightfield(P0, P1, radius, centre, half, grid, at, tol, i, j)
    R = rot[j]
    a = (P0[i, 0] - centre[j, 0], P0[i, 1] - centre[j, 1], P0[i, 2] - centre[j, 2])
    b = (P1[i, 0] - P0[i, 0], P1[i, 1] - P0[i, 1], P1[i, 2] - P0[i, 2])
    if kind[j] == HALF_SPACE:
        z0 = R[0, 2] * a[0] + R[1, 2] * a[1] + R[2, 2] * a[2]
        z1 = z0 + R[0, 2] * b[0] + R[1, 2] * b[1] + R[2, 2] * b[2]
        clear, s, lo, hi = capsule_half_space_local(z0, z1, radius[i], tol)
        z = z0 + s * (z1 - z0)
        n = (R[0, 2], R[1, 2], R[2, 2])
        q = (P0[i, 0] + s * b[0] - z * n[0], P0[i, 1] + s * b[1] - z * n[1], P0[i, 2] + s * b[2] - z * n[2])
        return clear, n, s, q, lo, hi
    x0 = (R[0, 0] * a[0] + R[1, 0] * a[1] + R[2, 0] * a[2], R[0, 1] * a[0] + R[1, 1] * a[1] + R[2, 1] * a[2],
          R[0, 2] * a[0] + R[1, 2] * a[1] + R[2, 2] * a[2])
    d = (R[0, 0] * b[0] + R[1, 0] * b[1] + R[2, 0] * b[2], R[0, 1] * b[0] + R[1, 1] * b[1] + R[2, 1] * b[2],
         R[0, 2] * b[0] + R[1, 2] * b[1] + R[2, 2] * b[2])
    h = (half[j, 0], half[j, 1], half[j, 2])
    clear, nl, s, ql, lo, hi = capsule_box_local(x0, d, h, radius[i], tol)
    n = (R[0, 0] * nl[0] + R[0, 1] * nl[1] + R[0, 2] * nl[2], R[1, 0] * nl[0] + R[1, 1] * nl[1] + R[1, 2] * nl[2],
         R[2, 0] * nl[0] + R[2, 1] * nl[1] + R[2, 2] * nl[2])
    q = (centre[j, 0] + R[0, 0] * ql[0] + R[0, 1] * ql[1] + R[0, 2] * ql[2],
         centre[j, 1] + R[1, 0] * ql[0] + R[1, 1] * ql[1] + R[1, 2] * ql[2],
         centre[j, 2] + R[2, 0] * ql[0] + R[2, 1] * ql[1] + R[2, 2] * ql[2])
    return clear, n, s, q, lo, hi


@njit(cache=True, _nrt=False)
def _pair_heightfield(P0, P1, radius, origin, cell, grid, at, tol, i, j):
    """Capsule i vs height field j: the deepest point of the bar (:func:`.heightfield.bar_walk`) against the
    field's column (:func:`.heightfield.point_contact`), its span that point alone; with no part of the bar
    over the footprint below the top, the nearer of its ends."""
    p0 = (P0[i, 0], P0[i, 1], P0[i, 2])
    d = (P1[i, 0] - p0[0], P1[i, 1] - p0[1], P1[i, 2] - p0[2])
    r = radius[i]
    best, s, _ = bar_walk(grid, at, origin, cell, j, p0, d, r, tol, 0, 1.0)
    if best == math.inf:                  # nothing over the footprint below the top: the nearer end
        c0, n0, q0 = point_contact(grid, at, origin, cell, j, p0, r, 0.0, 0.0)
        p1 = (P1[i, 0], P1[i, 1], P1[i, 2])
        c1, n1, q1 = point_contact(grid, at, origin, cell, j, p1, r, 0.0, 0.0)
        return (c0, n0, 0.0, q0, 0.0, 0.0) if c0 <= c1 else (c1, n1, 1.0, q1, 1.0, 1.0)
    x = (p0[0] + s * d[0], p0[1] + s * d[1], p0[2] + s * d[2])
    clear, n, q = point_contact(grid, at, origin, cell, j, x, r, 0.0, 0.0)
    return clear, n, s, q, s, s


@njit(cache=True, _nrt=False)
def capsules_vs_obstacles(P0, P1, radius, kind, centre, rot, half, grid, at, tol,
                          out_clear, out_normal, out_s, out_point, out_span):
    """All capsules (P0, P1: (N, 3) ends, radius (N,)) against all obstacles (M) in one compiled call (height
    fields' heights in ``grid`` from ``at``, see :class:`Obstacles`); writes out_clear (N, M), out_normal
    (N, M, 3), out_s (N, M), out_point (N, M, 3), out_span (N, M, 2)."""
    for i in range(P0.shape[0]):
        for j in range(kind.shape[0]):
            clear, n, s, q, lo, hi = _pair(P0, P1, radius, kind, centre, rot, half, grid, at, tol, i, j)
            out_clear[i, j] = clear
            out_s[i, j] = s
            out_span[i, j, 0] = lo
            out_span[i, j, 1] = hi
            for k in range(3):
                out_normal[i, j, k] = n[k]
                out_point[i, j, k] = q[k]


@dataclass(frozen=True)
class Obstacles:
    """Static obstacles packed for the kernels (see the module docstring for the frame conventions)."""
    kind: np.ndarray        # (M,) int64, HALF_SPACE, BOX or HEIGHTFIELD
    centre: np.ndarray      # (M, 3) m (a height field's origin)
    rot: np.ndarray         # (M, 3, 3) columns = local axes
    half: np.ndarray        # (M, 3) m, box half extents (zeros for half-spaces; (cell_x, cell_y, top) fields)
    names: tuple = ()
    grid: np.ndarray = field(default_factory=lambda: np.zeros(0))             # (K,) m, height fields' heights
    grid_at: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.int64))  # (M, 3) offset, ni, nj

    def __len__(self):
        return len(self.kind)


def half_space(normal, offset: float = 0.0, name: str = "ground") -> Obstacles:
    """The half-space n·x <= offset [m] (n need not be unit; it is normalised with the offset)."""
    n = np.asarray(normal, float)
    norm = float(np.linalg.norm(n))
    if not (norm > 0.0 and np.isfinite(norm) and np.isfinite(offset)):
        raise ValueError(f"half-space {name!r}: normal must be finite and nonzero, offset finite")
    n = n / norm
    return Obstacles(np.array([HALF_SPACE]), (offset / norm * n)[None], plane_frame(n)[None], np.zeros((1, 3)),
                     (name,))


def box(centre, half_extents, rotation=None, name: str = "box") -> Obstacles:
    """An oriented box: centre [m], half extents [m] (> 0), rotation (3, 3) columns = box axes (default I)."""
    R = np.eye(3) if rotation is None else np.asarray(rotation, float)
    h = np.asarray(half_extents, float)
    if R.shape != (3, 3) or not np.allclose(R.T @ R, np.eye(3), atol=1e-9) or np.linalg.det(R) < 0:
        raise ValueError(f"box {name!r}: rotation must be a proper 3x3 rotation matrix")
    if h.shape != (3,) or not np.all(h > 0) or not np.all(np.isfinite(h)):
        raise ValueError(f"box {name!r}: half extents must be three positive finite lengths")
    return Obstacles(np.array([BOX]), np.asarray(centre, float).reshape(1, 3), R[None].copy(), h[None], (name,))


def combine(*parts: Obstacles) -> Obstacles:
    """One obstacle list from several."""
    offsets = np.cumsum([0] + [len(p.grid) for p in parts])
    at = [np.asarray(_grid_at(p), np.int64) + [off, 0, 0] for p, off in zip(parts, offsets)]
    return Obstacles(np.concatenate([p.kind for p in parts]).astype(np.int64),
                     np.concatenate([p.centre for p in parts]), np.concatenate([p.rot for p in parts]),
                     np.concatenate([p.half for p in parts]), tuple(n for p in parts for n in p.names),
                     np.concatenate([p.grid for p in parts]), np.concatenate(at).reshape(-1, 3))


def _grid_at(obstacles: Obstacles) -> np.ndarray:
    """(M, 3) grid_at of any Obstacles (zeros where it has no height field)."""
    at = np.asarray(obstacles.grid_at, np.int64).reshape(-1, 3)
    return at if len(at) == len(obstacles) else np.zeros((len(obstacles), 3), np.int64)


def heightfield(spec) -> Obstacles:
    """A height field ObstacleSpec (:mod:`~tensegrity_engine.model.world`) packed for the kernels."""
    H = np.asarray(spec.heights, float)
    return Obstacles(np.array([HEIGHTFIELD]), np.asarray(spec.origin, float)[None], np.eye(3)[None],
                     np.array([[spec.cell[0], spec.cell[1], H.max()]]), (spec.name,), H.ravel().copy(),
                     np.array([[0, H.shape[1], H.shape[0]]], np.int64))


@dataclass
class ObstacleContacts:
    """Capsule (rows) × obstacle (columns) results of :func:`capsule_contacts`; see the module docstring."""
    clearance: np.ndarray   # (N, M) m, negative = penetration depth
    normal: np.ndarray      # (N, M, 3) unit, obstacle -> capsule
    s: np.ndarray           # (N, M) contact point on the segment
    point: np.ndarray       # (N, M, 3) m, contact point on the obstacle surface
    span: np.ndarray        # (N, M, 2) [s_lo, s_hi], the part of the segment within tol

    def segment_points(self, P0, P1, which: str = "s"):
        """World points (N, M, 3) on the segments at ``s`` (or ``lo`` / ``hi`` span ends)."""
        s = {"s": self.s, "lo": self.span[..., 0], "hi": self.span[..., 1]}[which]
        P0, P1 = np.asarray(P0, float), np.asarray(P1, float)
        return P0[:, None, :] + s[..., None] * (P1 - P0)[:, None, :]


def capsule_contacts(obstacles: Obstacles, P0, P1, radius, tol: float = DEFAULT_TOL) -> ObstacleContacts:
    """All capsules (ends P0, P1 (N, 3) m, radius (N,) m or scalar) against all obstacles, one kernel call."""
    P0 = np.ascontiguousarray(P0, dtype=float).reshape(-1, 3)
    P1 = np.ascontiguousarray(P1, dtype=float).reshape(-1, 3)
    r = np.ascontiguousarray(np.broadcast_to(np.asarray(radius, float), (len(P0),)))
    N, M = len(P0), len(obstacles)
    out = ObstacleContacts(np.empty((N, M)), np.empty((N, M, 3)), np.empty((N, M)), np.empty((N, M, 3)),
                           np.empty((N, M, 2)))
    capsules_vs_obstacles(P0, P1, r, np.ascontiguousarray(obstacles.kind, dtype=np.int64),
                          np.ascontiguousarray(obstacles.centre, dtype=float),
                          np.ascontiguousarray(obstacles.rot, dtype=float),
                          np.ascontiguousarray(obstacles.half, dtype=float),
                          np.ascontiguousarray(obstacles.grid, dtype=float), np.ascontiguousarray(_grid_at(obstacles)),
                          float(tol),
                          out.clearance, out.normal, out.s, out.point, out.span)
    return out


def point_contacts(obstacles: Obstacles, X, radius=0.0, tol: float = DEFAULT_TOL) -> ObstacleContacts:
    """Points (nodes: X (N, 3) m, radius [m], default 0) against all obstacles (s is 0 throughout)."""
    return capsule_contacts(obstacles, X, X, radius, tol)


def bar_contacts(model, X, obstacles: Obstacles, tol: float = DEFAULT_TOL) -> ObstacleContacts:
    """The model's bars as capsules of their radius at node positions X (n, 3) against the obstacles."""
    X = np.asarray(X, float)
    return capsule_contacts(obstacles, X[model.bars[:, 0]], X[model.bars[:, 1]], model.bar_radius, tol)


def model_obstacles(model) -> Obstacles:
    """The obstacles of a model file (``model.obstacles``, :mod:`~tensegrity_engine.model.world`) packed for
    the kernels; an empty set for a model without any."""
    specs = getattr(model, "obstacles", ())
    if not specs:
        return Obstacles(np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 3, 3)), np.zeros((0, 3)), ())
    fields = [heightfield(o) for o in specs if o.type == "heightfield"]
    frames = [o.frame() for o in specs]
    kind = np.array([{"plane": HALF_SPACE, "box": BOX}.get(o.type, HEIGHTFIELD) for o in specs], np.int64)
    half = np.array([f[2] for f in frames])
    half[kind == HEIGHTFIELD] = np.array([f.half[0] for f in fields]).reshape(-1, 3)   # (cell_x, cell_y, top)
    at = np.zeros((len(specs), 3), np.int64)
    at[kind == HEIGHTFIELD] = np.array([f.grid_at[0] for f in fields], np.int64).reshape(-1, 3)
    at[kind == HEIGHTFIELD, 0] = np.cumsum([0] + [len(f.grid) for f in fields])[:-1]
    return Obstacles(kind, np.array([f[0] for f in frames]), np.array([f[1] for f in frames]), half,
                     tuple(o.name for o in specs), np.concatenate([f.grid for f in fields] + [np.zeros(0)]), at)
