"""Motion of the synthetic six-bar robot and its payload (used by :mod:`tensegrity_mocap.synthetic.capture`;
NumPy only, no ROS).

All positions in metres, z up (REP-103), times in seconds, angles in radians. Every function is
vectorised over the frames: arrays are (N, ...) for N time samples.

* :func:`body_motion`: nodes and stray markers in the robot's frame;
* :func:`bar_rotations`: each bar turns a few degrees about its own centre, smoothly (string actuation);
  bar lengths are kept exactly (a rotation of each bar's half vector);
* :func:`rolling_motion`: a rigid rotation + translation of the robot rolling over the floor (world-frame
  angular velocity about a horizontal axis that turns slowly, translation = rolling radius x rate), kept
  on the ground (lowest node at z = 0 in every frame);
* :func:`payload_motion`: a 3-marker rigid body suspended from the robot's centroid region, swinging
  inside the robot with its own frequencies and phases (independent of the robot's motion), kept a
  margin inside the robot's hull.
"""
from __future__ import annotations

import numpy as np

def rotation_matrices(axis, angle) -> np.ndarray:
    """Rodrigues: rotations (..., 3, 3) by ``angle`` (...) [rad] about the unit ``axis`` (..., 3)."""
    axis = np.asarray(axis, float)
    angle = np.asarray(angle, float)
    x, y, z = axis[..., 0], axis[..., 1], axis[..., 2]
    c, s = np.cos(angle), np.sin(angle)
    C = 1.0 - c
    R = np.empty(np.broadcast_shapes(axis.shape[:-1], angle.shape) + (3, 3))
    R[..., 0, 0] = c + x * x * C
    R[..., 0, 1] = x * y * C - z * s
    R[..., 0, 2] = x * z * C + y * s
    R[..., 1, 0] = y * x * C + z * s
    R[..., 1, 1] = c + y * y * C
    R[..., 1, 2] = y * z * C - x * s
    R[..., 2, 0] = z * x * C - y * s
    R[..., 2, 1] = z * y * C + x * s
    R[..., 2, 2] = c + z * z * C
    return R


def rotation_between(a, b) -> np.ndarray:
    """The (3, 3) rotation that turns unit vector ``a`` into unit vector ``b`` (shortest arc)."""
    a = np.asarray(a, float) / np.linalg.norm(a)
    b = np.asarray(b, float) / np.linalg.norm(b)
    axis = np.cross(a, b)
    s = np.linalg.norm(axis)
    if s < 1e-12:
        if a @ b > 0:
            return np.eye(3)
        p = np.cross(a, [1.0, 0.0, 0.0] if abs(a[0]) < 0.9 else [0.0, 1.0, 0.0])
        return rotation_matrices(p / np.linalg.norm(p), np.pi)
    return rotation_matrices(axis / s, np.arctan2(s, a @ b))


def perpendicular_unit(v, rng) -> np.ndarray:
    """A random unit vector perpendicular to ``v`` (3,)."""
    v = np.asarray(v, float) / np.linalg.norm(v)
    while True:
        w = np.cross(v, rng.normal(size=3))
        n = np.linalg.norm(w)
        if n > 1e-6:
            return w / n


def smoothstep(x) -> np.ndarray:
    """0 for x <= 0, 1 for x >= 1, C1-smooth in between."""
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def bump(t, start, end) -> np.ndarray:
    """Raised-cosine window: 0 outside [start, end] s, 1 at its middle, C1-smooth."""
    x = np.clip((np.asarray(t, float) - start) / max(end - start, 1e-9), 0.0, 1.0)
    return 0.5 - 0.5 * np.cos(2.0 * np.pi * x)


def bar_rotations(t, half_vectors, rng, amplitude=(0.025, 0.05), frequency=(0.12, 0.4)) -> np.ndarray:
    """(N, B, 3, 3) rotation of each bar about its centre: angle A (sin(2 pi f t + phi) - sin phi) about a
    random axis perpendicular to the bar; A [rad] and f [Hz] uniform in the given ranges. Identity at t = 0."""
    H = np.asarray(half_vectors, float)
    B = len(H)
    axes = np.array([perpendicular_unit(h, rng) for h in H])
    A = rng.uniform(*amplitude, B)
    f = rng.uniform(*frequency, B)
    phi = rng.uniform(0.0, 2.0 * np.pi, B)
    t = np.asarray(t, float)[:, None]
    angle = A * (np.sin(2.0 * np.pi * f * t + phi) - np.sin(phi))
    return rotation_matrices(axes[None, :, :], angle)


def body_motion(P, bars, t, strays, rng_shape, rng_stray, moving: bool = True, at_bar_length: bool = False):
    """Node and stray-marker positions in the robot's own frame over time.

    ``P`` (12, 3): rest positions relative to the centroid [m]; ``bars`` (6, 2); ``strays``: [(node,
    distance [m])]: a marker fixed in the frame of that node's bar, ``distance`` from the node, pointing
    outwards about perpendicular to the bar (tilted 5-17 deg towards the bar's centre, turned up to
    +-46 deg about it). ``at_bar_length``: tilted instead so that the stray is exactly a bar length from
    the node's bar partner (it keeps the bar as well as the node does). ``moving``: each bar turns about
    its centre (:func:`bar_rotations`), else rest. Returns (nodes (N, 12, 3), strays (N, S, 3))."""
    N = len(t)
    centres = 0.5 * (P[bars[:, 0]] + P[bars[:, 1]])
    half = 0.5 * (P[bars[:, 0]] - P[bars[:, 1]])
    sign = np.ones(len(P))
    sign[bars[:, 1]] = -1.0
    bar_of = np.empty(len(P), int)
    bar_of[bars[:, 0]], bar_of[bars[:, 1]] = np.arange(len(bars)), np.arange(len(bars))
    U0 = np.zeros((len(strays), 3))
    for s, (n, d) in enumerate(strays):
        e = sign[n] * half[bar_of[n]] / np.linalg.norm(half[bar_of[n]])          # bar centre -> node
        out = P[n] - (P[n] @ e) * e
        out = rotation_matrices(e, rng_stray.uniform(-0.8, 0.8)) @ (out / np.linalg.norm(out))
        tau = rng_stray.uniform(0.08, 0.3)
        if at_bar_length:                         # |2 h e + d U| = 2 h  <=>  sin(tau) = d / (4 h)
            tau = np.arcsin(min(d / (4.0 * np.linalg.norm(half[bar_of[n]])), 1.0))
        U0[s] = np.cos(tau) * out - np.sin(tau) * e
    Q = bar_rotations(t, half, rng_shape) if moving else np.broadcast_to(np.eye(3), (N, len(bars), 3, 3))
    hq = np.einsum("nbij,bj->nbi", Q, half)
    nodes = centres[None, bar_of] + sign[None, :, None] * hq[:, bar_of]
    if not strays:
        return nodes, np.zeros((N, 0, 3))
    idx = [n for n, _ in strays]
    dist = np.array([d for _, d in strays])
    return nodes, nodes[:, idx] + dist[None, :, None] * np.einsum("nsij,sj->nsi", Q[:, bar_of[idx]], U0)


def rolling_motion(t, body, rng, radius: float, base_rate: float = 0.9, peak_rate: float = 1.8,
                   fast=(0.55, 0.8)):
    """Rigid motion of a robot rolling on the floor.

    ``body`` (N, n, 3): node positions in the robot's own frame over time (shape changes included), with
    the robot's rest pose at the origin of rotation (its centroid). World angular velocity = roll rate
    ``w`` [rad/s] about the horizontal axis z x d(psi) + a small side wobble about d(psi) + a slowly
    varying heading rate about z; the centroid moves horizontally by ``radius`` [m] x the horizontal
    angular velocity (rolling), vertically so that the lowest point of ``body`` touches z = 0. The roll
    rate ramps up from 0, cruises at ``base_rate`` and reaches ``peak_rate`` in a fast segment (fractions
    ``fast`` of the take). Returns (R (N, 3, 3), D (N, 3)): world = R body + D, R = I and D horizontally
    0 at t = 0.
    """
    t = np.asarray(t, float)
    N = len(t)
    dur = float(t[-1] - t[0]) if N > 1 else 0.0
    ramp = smoothstep((t - t[0]) / max(min(0.5, 0.1 * dur), 1e-9))
    w_roll = ramp * (base_rate + (peak_rate - base_rate) * bump(t, t[0] + fast[0] * dur, t[0] + fast[1] * dur))
    p1, p2 = rng.uniform(0.0, 2.0 * np.pi, 2)
    w_side = ramp * 0.3 * np.sin(2.0 * np.pi * 0.6 * t + p1)
    psi_rate = 0.35 * np.sin(2.0 * np.pi * t / 7.0 + p2)
    dt = np.diff(t)
    psi = rng.uniform(0.0, 2.0 * np.pi) + np.concatenate([[0.0], np.cumsum(0.5 * (psi_rate[1:] + psi_rate[:-1]) * dt)])
    d = np.stack([np.cos(psi), np.sin(psi), np.zeros(N)], axis=1)          # rolling direction
    a = np.stack([-np.sin(psi), np.cos(psi), np.zeros(N)], axis=1)         # roll axis z x d
    omega = w_roll[:, None] * a + w_side[:, None] * d
    omega[:, 2] += psi_rate
    v = radius * (w_roll[:, None] * d - w_side[:, None] * a)                # horizontal rolling velocity
    xy = np.concatenate([np.zeros((1, 3)), np.cumsum(0.5 * (v[1:] + v[:-1]) * dt[:, None], axis=0)])
    # incremental world-frame rotations: R[i+1] = exp(omega_mid dt) R[i]
    om = 0.5 * (omega[1:] + omega[:-1]) * dt[:, None]
    ang = np.linalg.norm(om, axis=1)
    ax = np.where(ang[:, None] > 0, om / np.where(ang > 0, ang, 1.0)[:, None], [0.0, 0.0, 1.0])
    steps = rotation_matrices(ax, ang)
    R = np.empty((N, 3, 3))
    R[0] = np.eye(3)
    for i in range(N - 1):
        R[i + 1] = steps[i] @ R[i]
    X = np.einsum("nij,nkj->nki", R, body)
    D = xy.copy()
    D[:, 2] = -X[:, :, 2].min(axis=1)                                        # on the ground
    return R, D


def payload_offsets(rng, sides=(0.045, 0.052, 0.058)) -> np.ndarray:
    """(3, 3) marker positions [m] of the payload rigid body in its own frame: a scalene triangle with the
    given side lengths (|m2-m3|, |m1-m3|, |m1-m2|), centroid at the origin, in the body's x-y plane, with a
    random small tilt so no two payloads look alike."""
    a, b, c = sides
    x3 = (b * b + c * c - a * a) / (2.0 * c)
    P = np.array([[0.0, 0.0, 0.0], [c, 0.0, 0.0], [x3, np.sqrt(max(b * b - x3 * x3, 0.0)), 0.0]])
    P -= P.mean(axis=0)
    return P @ rotation_matrices(perpendicular_unit([0, 0, 1.0], rng), rng.uniform(0.0, 0.3)).T


def hull_reach(P, faces, u) -> np.ndarray:
    """(N,) distance [m] from the centroid of points ``P`` (N, n, 3) along unit directions ``u`` (N, 3)
    to the boundary of the convex polyhedron with triangles ``faces`` (F, 3)."""
    c = P.mean(axis=1)
    A, B, C = P[:, faces[:, 0]], P[:, faces[:, 1]], P[:, faces[:, 2]]
    n = np.cross(B - A, C - A)
    n /= np.linalg.norm(n, axis=2, keepdims=True)
    h = np.einsum("nfi,nfi->nf", n, A - c[:, None])              # signed face distances from the centroid
    n = n * np.sign(h)[..., None]
    h = np.abs(h)
    nu = np.einsum("nfi,ni->nf", n, u)
    return np.min(np.where(nu > 1e-9, h / np.where(nu > 1e-9, nu, 1.0), np.inf), axis=1)


def payload_motion(t, body, faces, rng, margin: float = 0.045, frequency=(0.15, 0.35), moving: bool = True):
    """Payload suspended in the robot from its centroid region, swinging in the robot's frame.

    ``body`` (N, n, 3): the robot's nodes in its own frame; ``faces``: its hull triangles. The payload's
    origin follows a 3-D Lissajous path (per-axis frequencies in ``frequency`` [Hz], random phases) mapped
    into the hull: along direction u it reaches at most (hull distance - ``margin`` [m]), so it keeps
    ``margin`` from every face and passes close to the nodes when u points at one. Its orientation
    wobbles about three axes. Not moving: hangs at rest below the centroid.
    Returns (origin (N, 3), rotation (N, 3, 3)), both in the robot's frame."""
    t = np.asarray(t, float)
    N = len(t)
    R0 = rotation_matrices(perpendicular_unit([0, 0, 1.0], rng), rng.uniform(0.0, 0.3)) @ \
        rotation_matrices(np.array([0.0, 0.0, 1.0]), rng.uniform(0.0, 2.0 * np.pi))
    ex, ey, ez = np.eye(3)
    c = body.mean(axis=1)
    if not moving:
        u = np.broadcast_to(-ez, (N, 3))
        return c + 0.6 * (hull_reach(body, faces, u) - margin)[:, None] * u, np.broadcast_to(R0, (N, 3, 3)).copy()
    f = rng.uniform(*frequency, 3)
    ph = rng.uniform(0.0, 2.0 * np.pi, (3, 4))
    v = np.sin(2.0 * np.pi * f * t[:, None] + ph[:, 0])                  # (N, 3), each in [-1, 1]
    r = np.linalg.norm(v, axis=1)
    u = v / np.where(r > 1e-12, r, 1.0)[:, None]
    u[r <= 1e-12] = -ez
    rho = np.tanh(1.2 * r)
    origin = c + (rho * np.maximum(hull_reach(body, faces, u) - margin, 0.0))[:, None] * u
    ang = [0.5, 0.4, 0.9] * np.sin(2.0 * np.pi * 0.3 * f * t[:, None] + ph[:, 1])
    Rb = np.einsum("nij,njk,nkl->nil", rotation_matrices(ex, ang[:, 0]), rotation_matrices(ey, ang[:, 1]),
                   rotation_matrices(ez, ang[:, 2])) @ R0
    return origin, Rb


def quaternions(R) -> np.ndarray:
    """(N, 4) unit quaternions [qx qy qz qw] (qw >= 0) of rotation matrices (N, 3, 3)."""
    from scipy.spatial.transform import Rotation
    q = Rotation.from_matrix(np.asarray(R, float)).as_quat()
    return q * np.where(q[:, 3:4] < 0, -1.0, 1.0)
