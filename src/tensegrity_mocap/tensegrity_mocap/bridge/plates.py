"""The plate frames of one frame's node positions in plain Python floats, for the bridge's frame thread.

The engine's :func:`tensegrity_engine.frames.plate_frame` is vectorised over time; for the three plates of
one 360 Hz frame its ~30 small numpy calls (gathers, two ``np.cross``, two norms) cost more than the
arithmetic. :func:`plate_axes` does the same operations in the same order on Python floats (IEEE doubles,
like numpy's element-wise loops; numpy sums a length-3 last axis left to right), so its results are the
engine's bit for bit (``test_bridge_plates.py`` checks it on random and degenerate triangles).
:func:`axes_quaternion` is ``tensegrity_ros_common.conversions.matrix_to_quaternion`` (Shepperd's method) the
same way, except the final normalisation's sum of squares, which numpy leaves to BLAS (its summation order
is the library's): within 2 ulp (4e-16) of it.
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


def axes_quaternion(x, y, z) -> tuple:
    """Unit quaternion (x, y, z, w), w >= 0, of the rotation whose columns are the axes ``x``, ``y``, ``z``
    (3-sequences of floats): ``matrix_to_quaternion``'s steps on floats (the largest of w, x, y, z first).
    NaN axes (a degenerate plate) give NaN."""
    r00, r10, r20 = x
    r01, r11, r21 = y
    r02, r12, r22 = z
    tr = (r00 + r11) + r22
    if tr != tr or r00 != r00 or r11 != r11 or r22 != r22:
        return nan, nan, nan, nan
    diag = (tr, r00, r11, r22)
    k = max(range(4), key=diag.__getitem__)         # the first of equal maxima, like np.argmax
    R = ((r00, r01, r02), (r10, r11, r12), (r20, r21, r22))
    if k == 0:
        w = 0.5 * sqrt(1.0 + tr)
        q = [(r21 - r12) / (4 * w), (r02 - r20) / (4 * w), (r10 - r01) / (4 * w), w]
    else:
        i = k - 1
        j, m = (i + 1) % 3, (i + 2) % 3
        v = 0.5 * sqrt(((1.0 + R[i][i]) - R[j][j]) - R[m][m])
        q = [0.0, 0.0, 0.0, (R[m][j] - R[j][m]) / (4 * v)]
        q[i] = v
        q[j] = (R[j][i] + R[i][j]) / (4 * v)
        q[m] = (R[m][i] + R[i][m]) / (4 * v)
    n = sqrt(((q[0] * q[0] + q[1] * q[1]) + q[2] * q[2]) + q[3] * q[3])
    q = [c / n for c in q]
    return tuple(-c for c in q) if q[3] < 0 else tuple(q)
