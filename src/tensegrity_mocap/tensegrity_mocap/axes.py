"""Motion-capture axes: Motive streams and exports Y-up; ROS (REP-103) and the models are Z-up."""
from __future__ import annotations

import numpy as np


def y_up_to_z_up(P) -> np.ndarray:
    """Motive (Y-up) positions (..., 3) -> ROS / model (Z-up) positions: (x, y, z) -> (x, -z, y).

    This is a proper rotation (+90 deg about x), so handedness and all relative poses are preserved.
    """
    P = np.asarray(P, float)[..., [0, 2, 1]]        # a new array: (x, z, y), then z negated in place
    np.negative(P[..., 1], out=P[..., 1])
    return P


def z_up_to_y_up(P) -> np.ndarray:
    """Inverse of :func:`y_up_to_z_up`: ROS (x, y, z) -> Motive (x, z, -y)."""
    P = np.asarray(P, float)
    return np.stack([P[..., 0], P[..., 2], -P[..., 1]], axis=-1)


def to_ros_frame(P, up_axis: str = "z", offset=(0.0, 0.0, 0.0)) -> np.ndarray:
    """Motion-capture coordinates -> the robot's world frame (REP-103, z up): Motive's Y-up (x, y, z)
    becomes (x, -z, y) (a +90 degree turn about x, right-handed); then ``offset`` [m] is added."""
    P = np.asarray(P, float).reshape(-1, 3)
    if up_axis == "y":
        P = y_up_to_z_up(P)
    elif up_axis != "z":
        raise ValueError(f"up_axis must be 'y' or 'z', got {up_axis!r}")
    return P + np.asarray(offset, float)


def from_ros_frame(P, up_axis: str = "z", offset=(0.0, 0.0, 0.0)) -> np.ndarray:
    """Inverse of :func:`to_ros_frame`."""
    P = np.asarray(P, float).reshape(-1, 3) - np.asarray(offset, float)
    if up_axis == "y":
        return z_up_to_y_up(P)
    if up_axis != "z":
        raise ValueError(f"up_axis must be 'y' or 'z', got {up_axis!r}")
    return P
