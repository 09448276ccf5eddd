"""Where the ground is: the highest obstacle surface under a ground point (x, y), for planners.

:func:`surface_below` looks straight down (along −z) at the obstacles of a model file
(:mod:`~tensegrity_engine.model.world`): planes that face up (normal z > 0), the top surfaces of boxes as a
vertical line meets them (any orientation), and height fields (bilinear, normal from the gradient).
Walls and ceilings (planes with normal z <= 0) are never "below". Pure numpy, vectorised over points.
"""
from __future__ import annotations

import numpy as np

_UP = np.array([0.0, 0.0, 1.0])


def heightfield_at(spec, x, y) -> tuple:
    """A height field's surface at points (x, y) (arrays, m): (z [m], dz/dx, dz/dy, inside (bool)) with the
    bilinear interpolation of its grid; outside its footprint z = −inf and the slopes 0."""
    H = np.asarray(spec.heights, float)
    ox, oy, oz = spec.origin
    u, v = (np.asarray(x, float) - ox) / spec.cell[0], (np.asarray(y, float) - oy) / spec.cell[1]
    nj, ni = H.shape
    inside = (u >= 0) & (u <= ni - 1) & (v >= 0) & (v <= nj - 1)
    i = np.clip(np.floor(u), 0, ni - 2).astype(int)
    j = np.clip(np.floor(v), 0, nj - 2).astype(int)
    a, b = np.clip(u - i, 0.0, 1.0), np.clip(v - j, 0.0, 1.0)
    z00, z10, z01, z11 = H[j, i], H[j, i + 1], H[j + 1, i], H[j + 1, i + 1]
    z = oz + (1 - b) * ((1 - a) * z00 + a * z10) + b * ((1 - a) * z01 + a * z11)
    zx = ((1 - b) * (z10 - z00) + b * (z11 - z01)) / spec.cell[0]
    zy = ((1 - a) * (z01 - z00) + a * (z11 - z10)) / spec.cell[1]
    return np.where(inside, z, -np.inf), np.where(inside, zx, 0.0), np.where(inside, zy, 0.0), inside


def heightfield_grid(spec, most: int) -> np.ndarray:
    """A height field's grid points (rows, cols, 3) [m, world] for drawing: every k-th grid line so at most
    ``most`` cells a side, the last line always kept."""
    H = np.asarray(spec.heights, float)
    nj, ni = H.shape
    cols = np.unique(np.r_[np.arange(0, ni, max(1, -(-(ni - 1) // most))), ni - 1])
    rows = np.unique(np.r_[np.arange(0, nj, max(1, -(-(nj - 1) // most))), nj - 1])
    X, Y = np.meshgrid(spec.origin[0] + spec.cell[0] * cols, spec.origin[1] + spec.cell[1] * rows)
    return np.stack([X, Y, spec.origin[2] + H[np.ix_(rows, cols)]], -1)


def _plane(spec, x, y):
    n = np.asarray(spec.normal, float)
    if n[2] <= 1e-12:
        return np.full(x.shape, -np.inf), np.broadcast_to(n, x.shape + (3,))
    p = np.asarray(spec.point, float)
    z = p[2] - (n[0] * (x - p[0]) + n[1] * (y - p[1])) / n[2]
    return z, np.broadcast_to(n, x.shape + (3,))


def _box(spec, x, y):
    """The first surface of the box a vertical line from above meets: (z, outward normal of that face)."""
    c, R, h = spec.frame()
    top = c[2] + float(np.linalg.norm(h)) + 1.0                  # above every corner
    o = (np.stack([x, y, np.full(x.shape, top)], -1) - c) @ R     # local start points (k, 3)
    u = R.T @ -_UP                                                # local direction (down)
    with np.errstate(divide="ignore", invalid="ignore"):
        t1, t2 = (-h - o) / u, (h - o) / u
    t1 = np.where(u == 0, np.where(np.abs(o) <= h, -np.inf, np.inf), t1)     # parallel to a slab: all or
    t2 = np.where(u == 0, np.inf, t2)                                        # nothing of the line in it
    near, far = np.minimum(t1, t2), np.maximum(t1, t2)
    enter, leave = near.max(-1), far.min(-1)
    axis = near.argmax(-1)
    local = np.zeros(x.shape + (3,))
    np.put_along_axis(local, axis[..., None], -np.sign(u[axis])[..., None], -1)
    hit = enter <= leave
    return np.where(hit, top - enter, -np.inf), local @ R.T


def _heightfield(spec, x, y):
    z, zx, zy, _ = heightfield_at(spec, x, y)
    n = np.stack([-zx, -zy, np.ones_like(zx)], -1)
    return z, n / np.linalg.norm(n, axis=-1, keepdims=True)


_SURFACES = {"plane": _plane, "box": _box, "heightfield": _heightfield}


def surface_below(model_or_obstacles, xy) -> tuple:
    """The highest obstacle surface under ground point(s) ``xy`` ((2,) or (k, 2), m): (z [m], unit normal out
    of the solid (3,) or (k, 3)). A model (its ``obstacles``) or a sequence of ObstacleSpec. Where nothing
    is below, z = −inf and the normal (0, 0, 1)."""
    specs = getattr(model_or_obstacles, "obstacles", model_or_obstacles)
    xy = np.asarray(xy, float)
    x, y = xy[..., 0], xy[..., 1]
    best = np.full(x.shape, -np.inf)
    normal = np.broadcast_to(_UP, x.shape + (3,)).copy()
    for spec in specs:
        z, n = _SURFACES[spec.type](spec, x, y)
        higher = z > best
        best = np.where(higher, z, best)
        normal[higher] = np.broadcast_to(n, x.shape + (3,))[higher]
    return (float(best), normal) if best.ndim == 0 else (best, normal)
