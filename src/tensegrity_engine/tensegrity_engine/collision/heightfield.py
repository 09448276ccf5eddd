"""Points and capsules against a height field (compiled): uneven ground, solid below the surface
z = H(x, y), H bilinear in a grid of heights (schema in :mod:`tensegrity_engine.model.world`). Lengths in m.

A height field o is packed as: ``origin`` (3,) (the world point of grid point (0, 0); its z is added to all
heights), ``cell`` (cell_x, cell_y, top) with top the highest height (above origin z), and in a flat array
``grid`` the heights row by row (row j along y, ni per row) from ``at[o] = (offset, ni, nj)``.

**Clearance.** The vertical gap g = z − H(x, y) of an axis point, times the surface normal's z component
n_z = 1 / √(1 + |∇H|²), minus the radius: exact for a planar patch (a tilted field is an inclined plane),
first order in the curvature otherwise. The normal is (−∂H/∂x, −∂H/∂y, 1) n_z, the surface point the axis
point moved by −g n_z along it. The field is a solid column over its footprint (the grid's x, y range):
beside it a point touches its side wall (below the edge's height) or its edge, and a point below the surface
nearer to a side wall than to the surface is pushed out through the wall (:func:`point_contact`), so a body
coming back from beside the field is not thrown up through it.

**Along a bar** (:func:`bar_walk`), g(s) on the segment is one quadratic per grid cell it crosses (bilinear
H on a line), so its minimum is at a cell crossing, an end, or a quadratic's vertex; only the part of the
bar below top + radius is walked (higher points cannot touch: their gap exceeds the radius). The deepest
stretch's ends, as for boxes (``dynamics/contact.py``): the first and the last of those candidate points
whose gap is within ``flat`` of the minimum (a bar on flat ground: the whole bar; over one bump: its top).
"""
from __future__ import annotations

import math

from numba import njit


@njit(cache=True, _nrt=False)
def _cell_heights(grid, at, o, i, j):
    off, ni = at[o, 0], at[o, 1]
    k = off + j * ni + i
    return grid[k], grid[k + 1], grid[k + ni], grid[k + ni + 1]


@njit(cache=True, _nrt=False)
def _cell_of(at, o, u, v):
    """The cell (i, j) holding grid coordinates (u, v) (clamped: the last cell holds its far edge)."""
    i = min(max(int(math.floor(u)), 0), at[o, 1] - 2)
    j = min(max(int(math.floor(v)), 0), at[o, 2] - 2)
    return i, j


@njit(cache=True, _nrt=False)
def surface(grid, at, origin, cell, o, x, y):
    """(inside the footprint, height z [m] (world), ∂H/∂x, ∂H/∂y) of height field o at world (x, y)."""
    u, v = (x - origin[o, 0]) / cell[o, 0], (y - origin[o, 1]) / cell[o, 1]
    inside = 0.0 <= u <= at[o, 1] - 1 and 0.0 <= v <= at[o, 2] - 1
    i, j = _cell_of(at, o, u, v)
    a, b = min(max(u - i, 0.0), 1.0), min(max(v - j, 0.0), 1.0)
    z00, z10, z01, z11 = _cell_heights(grid, at, o, i, j)
    e = z11 - z10 - z01 + z00
    z = origin[o, 2] + z00 + (z10 - z00) * a + (z01 - z00) * b + e * a * b
    return inside, z, ((z10 - z00) + e * b) / cell[o, 0], ((z01 - z00) + e * a) / cell[o, 1]


@njit(cache=True, _nrt=False)
def outside_bound(at, origin, cell, o, p0, p1):
    """A lower bound [m] of the distance from segment p0–p1 to the solid when the segment's bounding box
    is outside the footprint or above the top; 0 when it may touch."""
    x_hi = origin[o, 0] + cell[o, 0] * (at[o, 1] - 1)
    y_hi = origin[o, 1] + cell[o, 1] * (at[o, 2] - 1)
    gx = max(origin[o, 0] - max(p0[0], p1[0]), min(p0[0], p1[0]) - x_hi, 0.0)
    gy = max(origin[o, 1] - max(p0[1], p1[1]), min(p0[1], p1[1]) - y_hi, 0.0)
    gz = max(min(p0[2], p1[2]) - origin[o, 2] - cell[o, 2], 0.0)
    return max(math.sqrt(gx * gx + gy * gy), gz)


@njit(cache=True, _nrt=False)
def point_contact(grid, at, origin, cell, o, x, r, tx, ty):
    """A sphere at world x (3-tuple), radius r, against the solid column of height field o: (clearance,
    normal (3-tuple), surface point (3-tuple)); the surface's slope taken at (x + tx, y + ty) (the side of a
    kink to use). Over the footprint the surface (:func:`gap_contact`), or the side wall when the axis point
    is below the surface and nearer to the footprint's edge than to the surface; beside the footprint the
    side wall below the edge's height, the edge above it."""
    x_hi = origin[o, 0] + cell[o, 0] * (at[o, 1] - 1)
    y_hi = origin[o, 1] + cell[o, 1] * (at[o, 2] - 1)
    cx, cy = min(max(x[0], origin[o, 0]), x_hi), min(max(x[1], origin[o, 1]), y_hi)
    dx, dy = x[0] - cx, x[1] - cy
    dh = math.sqrt(dx * dx + dy * dy)
    z = surface(grid, at, origin, cell, o, cx, cy)[1]
    if dh > 0.0:                                          # beside the footprint
        dz = max(x[2] - z, 0.0)
        dist = math.sqrt(dh * dh + dz * dz)
        return dist - r, (dx / dist, dy / dist, dz / dist), (cx, cy, min(x[2], z))
    zx, zy = surface(grid, at, origin, cell, o, min(max(cx + tx, origin[o, 0]), x_hi),
                     min(max(cy + ty, origin[o, 1]), y_hi))[2:]
    clear, n, q = gap_contact(x, x[2] - z, zx, zy, r)
    edge = min(x[0] - origin[o, 0], x_hi - x[0], x[1] - origin[o, 1], y_hi - x[1])
    if clear + r >= -edge:
        return clear, n, q
    if edge == x[0] - origin[o, 0]:                       # out through the nearest side wall
        return -edge - r, (-1.0, 0.0, 0.0), (origin[o, 0], x[1], x[2])
    if edge == x_hi - x[0]:
        return -edge - r, (1.0, 0.0, 0.0), (x_hi, x[1], x[2])
    if edge == x[1] - origin[o, 1]:
        return -edge - r, (0.0, -1.0, 0.0), (x[0], origin[o, 1], x[2])
    return -edge - r, (0.0, 1.0, 0.0), (x[0], y_hi, x[2])


@njit(cache=True, inline="always", _nrt=False)
def gap_contact(x, gap, zx, zy, r):
    """(clearance, normal, surface point) of axis point x with vertical gap [m] over a surface of slopes zx, zy."""
    nz = 1.0 / math.sqrt(1.0 + zx * zx + zy * zy)
    n = (-zx * nz, -zy * nz, nz)
    dist = gap * nz
    return dist - r, n, (x[0] - dist * n[0], x[1] - dist * n[1], x[2] - dist * n[2])


@njit(cache=True, _nrt=False)
def _walk_range(at, origin, cell, o, p0, d, zcap):
    """[s_a, s_b]: the part of the segment p0 + s d over the footprint and below zcap (world z)."""
    sa, sb = 0.0, 1.0
    for k in range(2):
        lo = origin[o, k]
        hi = lo + cell[o, k] * (at[o, 1 + k] - 1)
        if d[k] != 0.0:
            t1, t2 = (lo - p0[k]) / d[k], (hi - p0[k]) / d[k]
            sa, sb = max(sa, min(t1, t2)), min(sb, max(t1, t2))
        elif not lo <= p0[k] <= hi:
            return 1.0, 0.0
    if d[2] > 0.0:
        sb = min(sb, (zcap - p0[2]) / d[2])
    elif d[2] < 0.0:
        sa = max(sa, (zcap - p0[2]) / d[2])
    elif p0[2] > zcap:
        return 1.0, 0.0
    return sa, sb


@njit(cache=True, _nrt=False)
def _next_crossing(g0, dg, s):
    """The smallest s' > s where the grid coordinate g0 + s' dg is an integer (inf if dg = 0)."""
    if dg == 0.0:
        return math.inf
    g = g0 + s * dg
    k = math.floor(g) + 1.0 if dg > 0.0 else math.ceil(g) - 1.0
    return (k - g0) / dg


@njit(cache=True, _nrt=False)
def _piece(grid, at, o, u0, du, v0, dv, z0, dz, s, t):
    """The gap g(q) = z − H on [s, t] (one cell) as c0 + c1 q + c2 q²."""
    m = 0.5 * (s + t)
    i, j = _cell_of(at, o, u0 + m * du, v0 + m * dv)
    z00, z10, z01, z11 = _cell_heights(grid, at, o, i, j)
    e = z11 - z10 - z01 + z00
    a0, b0 = u0 - i, v0 - j
    h0 = z00 + (z10 - z00) * a0 + (z01 - z00) * b0 + e * a0 * b0
    h1 = (z10 - z00) * du + (z01 - z00) * dv + e * (a0 * dv + b0 * du)
    return z0 - h0, dz - h1, -e * du * dv


@njit(cache=True, _nrt=False)
def bar_walk(grid, at, origin, cell, o, p0, d, r, flat, side, skip):
    """Bar p0 + s d (world tuples), radius r, over height field o: (minimum gap [m], its s, the first
    (side 0) or last (side 1) candidate s with gap <= minimum + flat; the minimum's s itself when that is
    within ``skip`` of the bar's end on that side). Minimum gap inf when no part of the bar is over the
    footprint below top + r + flat."""
    zcap = origin[o, 2] + cell[o, 2] + r + 2.0 * flat
    sa, sb = _walk_range(at, origin, cell, o, p0, d, zcap)
    if sa > sb:
        return math.inf, 0.5, 0.5
    u0, du = (p0[0] - origin[o, 0]) / cell[o, 0], d[0] / cell[o, 0]
    v0, dv = (p0[1] - origin[o, 1]) / cell[o, 1], d[1] / cell[o, 1]
    z0 = p0[2] - origin[o, 2]
    best, bs, first, last = math.inf, sa, sa, sa
    for sweep in range(2):              # 0: the minimum; 1: the candidates within flat of it
        if sweep == 1:
            first, last = bs, bs
            if abs(bs - (0.0 if side == 0 else 1.0)) <= skip:
                break                   # the stretch's end is nearer to the bar's end than skip: not needed
        s = sa
        for _ in range(2 * (at[o, 1] + at[o, 2]) + 4):     # each crossing once (twice if rounding splits it)
            t = min(_next_crossing(u0, du, s), _next_crossing(v0, dv, s), sb)
            c0, c1, c2 = _piece(grid, at, o, u0, du, v0, dv, z0, d[2], s, t)
            for k in range(3):
                q = s if k == 0 else (t if k == 1 else (-c1 / (2.0 * c2) if c2 > 0.0 else s))
                if not s <= q <= t:
                    continue
                g = c0 + c1 * q + c2 * q * q
                if sweep == 0 and g < best:
                    best, bs = g, q
                elif sweep == 1 and g <= best + flat:
                    first, last = min(first, q), max(last, q)
            if t >= sb:
                break
            s = t
    return best, bs, (first if side == 0 else last)
