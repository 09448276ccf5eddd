"""Pose errors of a model frame and their derivative with respect to the actuator inputs.

A pose is a 4x4 homogeneous world transform (:mod:`tensegrity_engine.frames`). The error of a pose ``C``
against a target ``T`` is the 6-vector ``[r_T - r_C; θ]`` with ``θ`` the rotation vector (axis x angle,
world axes) of ``R_T R_Cᵀ``; its position part is in m, its angle part in rad. Weighted by a length scale
ℓ [m] (angle x ℓ) both parts are lengths, which the least-squares fits and the feedback combine.
"""
from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from tensegrity_engine.frames import model_frames, plate_frame, rotation_angle

FD_STEP = 1e-6           # m: node displacement for the pose's derivative (the frame is smooth at mm scale)


def frame_index(model, frame: str) -> int:
    """Index of ``frame`` in ``model.frame_names``; ValueError naming the model's frames if absent."""
    if frame not in model.frame_names:
        have = ", ".join(model.frame_names) or "none"
        raise ValueError(f"model '{model.name}' has no frame '{frame}' (its frames: {have}); add it under "
                         "'frames:' in the model file or pick one of these")
    return model.frame_names.index(frame)


def frame_pose(model, frame: str, X) -> np.ndarray:
    """Pose (..., 4, 4) of ``frame`` for node positions X (..., n, 3) [m]."""
    return model_frames(model, X)[frame]


def check_pose(target) -> np.ndarray:
    """``target`` as a float (4, 4) rigid transform; ValueError saying what is wrong otherwise."""
    T = np.asarray(target, float)
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise ValueError(f"a pose must be a finite 4x4 homogeneous transform, got shape {T.shape}")
    R = T[:3, :3]
    if np.abs(R.T @ R - np.eye(3)).max() > 1e-6 or np.linalg.det(R) < 0:
        raise ValueError("the pose's 3x3 block is not a rotation (orthonormal, determinant +1); "
                         "build it with scipy.spatial.transform.Rotation or frames.plate_frame")
    return T


def pose_error(C, target) -> np.ndarray:
    """(..., 6) error of poses C against ``target``: [target origin - origin [m]; rotation vector [rad]
    that turns C's axes onto the target's, in world axes]."""
    C = np.asarray(C, float)
    T = np.asarray(target, float)
    D = T[..., :3, :3] @ np.swapaxes(C[..., :3, :3], -1, -2)
    rv = Rotation.from_matrix(D.reshape(-1, 3, 3)).as_rotvec().reshape(D.shape[:-2] + (3,))
    return np.concatenate([T[..., :3, 3] - C[..., :3, 3], rv], axis=-1)


def moved_pose(C, delta) -> np.ndarray:
    """The pose C (4, 4) moved by a pose error ``delta`` (6,) (:func:`pose_error` of C against the result)."""
    out = np.array(C, float)
    out[:3, 3] += delta[:3]
    out[:3, :3] = Rotation.from_rotvec(delta[3:]).as_matrix() @ out[:3, :3]
    return out


def misses(C, target) -> tuple:
    """(position miss [m], angle miss [rad]) of pose C against ``target``."""
    return (float(np.linalg.norm(np.asarray(target)[:3, 3] - np.asarray(C)[:3, 3])),
            float(rotation_angle(C, target)))


def plate_size(model, frame: str, X) -> float:
    """Mean distance [m] of the frame's three nodes from their centroid (the default length scale)."""
    nodes = np.asarray(model.frame_nodes)[frame_index(model, frame)]
    P = np.asarray(X, float)[nodes]
    return float(np.linalg.norm(P - P.mean(axis=0), axis=1).mean())


def pose_jacobian(model, frame: str, X, dX) -> np.ndarray:
    """(6, alpha): first-order change of the frame's pose (origin [m]; small rotation vector [rad], world
    axes) per unit input, for node positions X (n, 3) moving by dX (n, 3, alpha) per unit input (central
    differences of the frame along each column)."""
    i = frame_index(model, frame)
    a, b, c = np.asarray(model.frame_nodes)[i]
    xn = int(np.asarray(model.frame_x)[i])
    scale = FD_STEP / max(np.abs(dX).max(), 1e-300)
    steps = scale * np.moveaxis(dX, -1, 0)                                          # (alpha, n, 3)
    Cp = plate_frame(X[None] + steps, a, b, c, xn)
    Cm = plate_frame(X[None] - steps, a, b, c, xn)
    return (pose_error(Cm, Cp) / (2 * scale)).T
