"""The plate frames of one frame's node positions in plain Python floats, for the bridge's frame thread.

The engine's :func:`tensegrity_engine.frames.plate_frame` is vectorised over time; for the three plates of
one 360 Hz frame its ~30 small numpy calls (gathers, two ``np.cross``, two norms) cost more than the
arithmetic. :func:`plate_axes` does the same operations in the same order on Python floats (IEEE doubles,
like numpy's element-wise loops; numpy sums a length-3 last axis left to right), so its results are the
engine's bit for bit (``test_bridge_plates.py`` checks it on random and degenerate triangles).
"""
from __future__ import annotations

from math import copysign, inf, nan, sqrt


def _unit(x: float, y: float, z: float) -> tuple:
    n = sqrt((x * x + y * y) + z * z)
    if n == 0.0:                               # numpy's x / 0: NaN for 0 (or NaN), +-inf otherwise
        return tuple(nan if c == 0.0 or c != c else copysign(inf, c) for c in (x, y, z))
    return x / n, y / n, z / n


def plate_axes(na, nb, nc, nx) -> tuple:
    """(origin, x, y, z axes), each (x, y, z) floats [m, unit vectors], of the plate on the node triangle
    a->b->c with its x axis towards ``nx`` (positions as 3-sequences of floats): engine ``plate_frame``'s
    columns. A degenerate triangle gives NaN axes."""
    ax, ay, az = na
    bx, by, bz = nb
    cx, cy, cz = nc
    r = ((ax + bx) + cx) / 3.0, ((ay + by) + cy) / 3.0, ((az + bz) + cz) / 3.0
    ux, uy, uz = bx - ax, by - ay, bz - az
    vx, vy, vz = cx - ax, cy - ay, cz - az
    z = _unit(uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx)
    px, py, pz = nx[0] - r[0], nx[1] - r[1], nx[2] - r[2]
    d = (px * z[0] + py * z[1]) + pz * z[2]
    x = _unit(px - d * z[0], py - d * z[1], pz - d * z[2])
    y = z[1] * x[2] - z[2] * x[1], z[2] * x[0] - z[0] * x[2], z[0] * x[1] - z[1] * x[0]
    return r, x, y, z
