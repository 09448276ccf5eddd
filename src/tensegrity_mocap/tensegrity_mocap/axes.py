"""Motion-capture axes: Motive streams and exports Y-up; ROS (REP-103) and the models are Z-up."""
from __future__ import annotations

import numpy as np


def y_up_to_z_up(P) -> np.ndarray:
    """Motive (Y-up) positions (..., 3) -> ROS / model (Z-up) positions: (x, y, z) -> (x, -z, y).

    This is a proper rotation (+90 deg about x), so handedness and all relative poses are preserved.
    """
    P = np.asarray(P, float)
    return np.stack([P[..., 0], -P[..., 2], P[..., 1]], axis=-1)


def z_up_to_y_up(P) -> np.ndarray:
    """Inverse of :func:`y_up_to_z_up`: ROS (x, y, z) -> Motive (x, z, -y)."""
    P = np.asarray(P, float)
    return np.stack([P[..., 0], P[..., 2], -P[..., 1]], axis=-1)
