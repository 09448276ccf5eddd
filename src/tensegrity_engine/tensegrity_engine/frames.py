"""Body frames on node triangles ("plates"), relative frames, Euler angles and trajectory comparison.

A frame is a 4x4 homogeneous transform ``C = [[R, r], [0, 1]]`` mapping frame coordinates to world
coordinates (positions in m). Following the manipulator paper, a frame on the nodes ``a, b, c`` has

* origin ``r`` = centroid of ``n_a, n_b, n_c``;
* ``z`` = unit normal of the oriented triangle a->b->c, ``unit((n_b - n_a) x (n_c - n_a))``
  (the paper's C0: ``(n3 - r0) x (n1 - r0)`` is the normal of n1->n2->n3);
* ``x`` = ``unit(n_x - r)`` (``n_x`` defaults to ``n_a``), re-orthogonalised against ``z`` so the
  frame is exactly orthonormal even for noisy measured nodes;
* ``y = z x x``.

Everything is vectorised over any leading axes (time, frames); no loops over samples.
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy.spatial.transform import Rotation, Slerp

PAPER_FRAMES = ("C0", "C1", "C2")
PAPER_RELATIVE = {"0C1": ("C0", "C1"), "0C2": ("C0", "C2"), "1C2": ("C1", "C2")}


def _unit(v):
    with np.errstate(invalid="ignore", divide="ignore"):
        return v / np.linalg.norm(v, axis=-1, keepdims=True)


def plate_frame(X, a, b, c, x_node=None) -> np.ndarray:
    """Frame (..., 4, 4) of the node triangle a->b->c for node positions X (..., n, 3) [m].

    ``a, b, c, x_node`` are node indices (ints, or equal-shape integer arrays (k,) giving k frames,
    result (..., k, 4, 4)). ``x_node`` (default ``a``) is the node the x axis points to.
    A degenerate triangle (collinear nodes) gives NaN axes.
    """
    X = np.asarray(X, float)
    x_node = a if x_node is None else x_node
    na, nb, nc, nx = (X[..., np.asarray(i), :] for i in (a, b, c, x_node))
    r = (na + nb + nc) / 3.0
    z = _unit(np.cross(nb - na, nc - na))
    x = nx - r
    x = _unit(x - np.sum(x * z, axis=-1, keepdims=True) * z)
    y = np.cross(z, x)
    C = np.zeros(r.shape[:-1] + (4, 4))
    C[..., :3, 0] = x
    C[..., :3, 1] = y
    C[..., :3, 2] = z
    C[..., :3, 3] = r
    C[..., 3, 3] = 1.0
    return C


def model_frames(model, X) -> dict:
    """All frames of ``model`` for node positions X (..., n, 3): ``{name: (..., 4, 4)}``."""
    if not len(model.frame_names):
        return {}
    fn = np.asarray(model.frame_nodes)
    C = plate_frame(X, fn[:, 0], fn[:, 1], fn[:, 2], np.asarray(model.frame_x))   # (..., k, 4, 4)
    return {name: C[..., i, :, :] for i, name in enumerate(model.frame_names)}


def rigid_inverse(C) -> np.ndarray:
    """Inverse (..., 4, 4) of rigid transforms C: ``[[R^T, -R^T r], [0, 1]]``."""
    C = np.asarray(C, float)
    Rt = np.swapaxes(C[..., :3, :3], -1, -2)
    inv = np.zeros(C.shape)
    inv[..., :3, :3] = Rt
    inv[..., :3, 3] = -np.einsum("...ij,...j->...i", Rt, C[..., :3, 3])
    inv[..., 3, 3] = 1.0
    return inv


def relative(Ca, Cb) -> np.ndarray:
    """Pose of frame b in frame a, ``inv(Ca) @ Cb`` (..., 4, 4), with the rigid inverse."""
    return rigid_inverse(Ca) @ np.asarray(Cb, float)


def _rotations(R):
    """scipy Rotation of the matrices R (..., 3, 3) flattened, and the mask of finite ones (NaN -> identity)."""
    flat = R.reshape(-1, 3, 3)
    ok = np.isfinite(flat).all(axis=(1, 2))
    return Rotation.from_matrix(np.where(ok[:, None, None], flat, np.eye(3))), ok


def euler_zyx(R, unwrap=False) -> np.ndarray:
    """ZYX Euler angles [rad] (..., 3) ordered ``(psi, theta, phi)`` = (about z, about y, about x).

    ``R`` is (..., 3, 3) or a transform (..., 4, 4); ``R = Rz(psi) @ Ry(theta) @ Rx(phi)``, with
    psi, phi in (-pi, pi] and theta in [-pi/2, pi/2]. ``unwrap=True`` removes 2*pi jumps along the
    first axis (time), for plotting.
    """
    R = np.asarray(R, float)[..., :3, :3]
    lead = R.shape[:-2]
    rot, ok = _rotations(R)
    with warnings.catch_warnings():       # gimbal lock: scipy warns and sets phi = 0
        warnings.simplefilter("ignore", UserWarning)
        ang = np.where(ok[:, None], rot.as_euler("ZYX"), np.nan).reshape(lead + (3,))
    return unwrap_time(ang) if unwrap and len(lead) else ang


def unwrap_time(a) -> np.ndarray:
    """``np.unwrap`` along the first (time) axis that tolerates NaN samples (they stay NaN)."""
    a = np.asarray(a, float)
    ok = np.isfinite(a)
    if ok.all():
        return np.unwrap(a, axis=0)
    last = np.maximum.accumulate(np.where(ok, np.arange(len(a)).reshape((-1,) + (1,) * (a.ndim - 1)), 0), axis=0)
    filled = np.nan_to_num(np.take_along_axis(a, last, axis=0))     # forward fill; leading NaN -> 0
    return np.where(ok, np.unwrap(filled, axis=0), np.nan)


def rotation_angle(Ra, Rb) -> np.ndarray:
    """Geodesic angle [rad] (...) between rotations Ra and Rb (..., 3, 3) (or transforms), i.e. |Ra^T Rb|."""
    Ra = np.asarray(Ra, float)[..., :3, :3]
    Rb = np.asarray(Rb, float)[..., :3, :3]
    D = np.swapaxes(Ra, -1, -2) @ Rb
    rot, ok = _rotations(D)
    return np.where(ok, rot.magnitude(), np.nan).reshape(D.shape[:-2])


def _wrap(a):
    """Angles wrapped to [-pi, pi)."""
    return (np.asarray(a) + np.pi) % (2 * np.pi) - np.pi


def interpolate_frames(t_b, C_b, t) -> np.ndarray:
    """Frames C_b (Tb, [k,] 4, 4) sampled at increasing times t_b [s], interpolated to times t [s].

    Positions are interpolated linearly, rotations by spherical linear interpolation (scipy Slerp).
    ``t`` must lie within ``[t_b[0], t_b[-1]]``; repeated time stamps in ``t_b`` keep their first sample,
    samples with non-finite frames are skipped.
    """
    t_b = np.asarray(t_b, float)
    C_b = np.asarray(C_b, float)
    t = np.asarray(t, float)
    finite = np.isfinite(C_b.reshape(len(t_b), -1)).all(axis=1) & np.isfinite(t_b)
    t_b, keep = np.unique(t_b[finite], return_index=True)
    C_b = C_b[finite][keep]
    if len(t_b) < 2:
        if len(t_b) == 1 and np.all(t == t_b[0]):
            return np.repeat(C_b, len(t), axis=0)
        raise ValueError("need at least two distinct time stamps to interpolate frames")
    frame_shape = C_b.shape[1:-2]
    Cb = C_b.reshape(len(t_b), -1, 4, 4)                            # (Tb, K, 4, 4)
    out = np.zeros((len(t), Cb.shape[1], 4, 4))
    i = np.clip(np.searchsorted(t_b, t, side="right") - 1, 0, len(t_b) - 2)
    w = ((t - t_b[i]) / (t_b[i + 1] - t_b[i]))[:, None, None]
    out[..., :3, 3] = (1 - w) * Cb[i, :, :3, 3] + w * Cb[i + 1, :, :3, 3]
    for k in range(Cb.shape[1]):                                    # loop over frames, not samples
        out[:, k, :3, :3] = Slerp(t_b, Rotation.from_matrix(Cb[:, k, :3, :3]))(t).as_matrix()
    out[..., 3, 3] = 1.0
    return out.reshape((len(t),) + frame_shape + (4, 4))


def rms_deviation(t_a, C_a, t_b, C_b) -> dict:
    """RMS deviation of frames C_b (Tb, [k,] 4, 4) at times t_b from frames C_a (Ta, [k,] 4, 4) at t_a.

    C_b is interpolated to the samples of t_a that lie in the time span of t_b (see
    :func:`interpolate_frames`); RMS over those samples and all frames (samples where C_a is not
    finite, e.g. a lost marker, are skipped). Returns

    * ``position_rms`` [m]: RMS of the origin distance |r_a - r_b|;
    * ``orientation_rms`` [rad]: RMS of the geodesic angle of ``R_a^T R_b``;
    * ``euler_rms`` [rad]: RMS of the wrapped ZYX angle differences over all three angles;
      ``euler_rms_zyx`` (3,) [rad] per angle (psi, theta, phi);
    * ``n_samples``: number of compared time samples.
    """
    t_a = np.asarray(t_a, float)
    t_b = np.asarray(t_b, float)
    C_a = np.asarray(C_a, float)
    C_b = np.asarray(C_b, float)
    if C_a.shape[1:] != C_b.shape[1:]:
        raise ValueError(f"frame shapes differ: {C_a.shape[1:]} vs {C_b.shape[1:]}")
    finite_b = np.isfinite(C_b.reshape(len(t_b), -1)).all(axis=1) & np.isfinite(t_b)
    if not finite_b.any():
        raise ValueError("C_b has no finite sample")
    lo, hi = t_b[finite_b].min(), t_b[finite_b].max()
    tol = 1e-9 * max(1.0, hi - lo)
    sel = (t_a >= lo - tol) & (t_a <= hi + tol) & np.isfinite(C_a.reshape(len(t_a), -1)).all(axis=1)
    if not sel.any():
        raise ValueError(f"no (finite) overlap between the time spans [{t_a.min():g}, {t_a.max():g}] s "
                         f"and [{lo:g}, {hi:g}] s")
    A = C_a[sel]
    B = interpolate_frames(t_b, C_b, np.clip(t_a[sel], lo, hi))
    dp = np.linalg.norm(A[..., :3, 3] - B[..., :3, 3], axis=-1)
    dang = rotation_angle(A, B)
    de = _wrap(euler_zyx(B) - euler_zyx(A)).reshape(-1, 3)
    return {"position_rms": float(np.sqrt(np.mean(dp ** 2))),
            "orientation_rms": float(np.sqrt(np.mean(dang ** 2))),
            "euler_rms": float(np.sqrt(np.mean(de ** 2))),
            "euler_rms_zyx": np.sqrt(np.mean(de ** 2, axis=0)),
            "n_samples": int(sel.sum())}


def paper_relative_frames(model, X) -> dict:
    """The manipulator paper's relative frames ``{'0C1', '0C2', '1C2': (..., 4, 4)}`` for positions X.

    ``'iCj'`` is frame Cj expressed in frame Ci. Requires frames named C0, C1 and C2 in the model.
    """
    missing = [f for f in PAPER_FRAMES if f not in model.frame_names]
    if missing:
        have = ", ".join(model.frame_names) or "none"
        raise ValueError(f"model '{model.name}' has no frame(s) {', '.join(missing)} (its frames: {have}); "
                         "the paper's relative frames need frames named C0, C1 and C2")
    C = model_frames(model, X)
    return {key: relative(C[a], C[b]) for key, (a, b) in PAPER_RELATIVE.items()}


def has_paper_frames(model) -> bool:
    """True when the model defines frames C0, C1 and C2."""
    return all(f in model.frame_names for f in PAPER_FRAMES)
