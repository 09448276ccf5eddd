"""Smooth pose trajectories through waypoints: minimum-jerk timing, linear in position, slerp in rotation.

Between waypoints k and k+1 the progress is ``s = 10 τ³ - 15 τ⁴ + 6 τ⁵`` with ``τ = (t - t_k) / (t_k+1 - t_k)``
(the minimum-jerk profile: zero velocity and acceleration at every waypoint), the origin moves along the
straight line ``r_k + s (r_k+1 - r_k)`` and the rotation along the great arc (spherical linear interpolation)
with the same s. Before the first waypoint the path holds it, after the last one too.
"""
from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from tensegrity_engine.control.pose import check_pose


def minimum_jerk(tau) -> np.ndarray:
    """Minimum-jerk progress s(τ) in [0, 1] for τ clipped to [0, 1]."""
    tau = np.clip(np.asarray(tau, float), 0.0, 1.0)
    return tau ** 3 * (10.0 - 15.0 * tau + 6.0 * tau ** 2)


class PosePath:
    """Poses (K, 4, 4) at strictly increasing times (K,) [s]; :meth:`at` gives the smooth pose between."""

    def __init__(self, times, poses):
        t = np.asarray(times, float).ravel()
        P = np.asarray(poses, float)
        if P.ndim != 3 or P.shape[0] != len(t) or len(t) == 0:
            raise ValueError(f"a trajectory needs one 4x4 pose per time: got {len(t)} time(s) and poses of shape "
                             f"{P.shape}")
        if not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
            raise ValueError("trajectory times must be finite and strictly increasing [s]")
        self.times = t
        self.poses = np.stack([check_pose(p) for p in P])
        self._rot = Rotation.from_matrix(self.poses[:, :3, :3])

    def at(self, t: float) -> np.ndarray:
        """The pose (4, 4) at time t [s]."""
        k = int(np.clip(np.searchsorted(self.times, t, side="right") - 1, 0, len(self.times) - 1))
        if k == len(self.times) - 1 or t <= self.times[0]:
            return self.poses[k].copy()
        s = float(minimum_jerk((t - self.times[k]) / (self.times[k + 1] - self.times[k])))
        a, b = self.poses[k], self.poses[k + 1]
        step = (self._rot[k].inv() * self._rot[k + 1]).as_rotvec()       # body-axis rotation from a to b
        out = np.eye(4)
        out[:3, :3] = (self._rot[k] * Rotation.from_rotvec(s * step)).as_matrix()
        out[:3, 3] = a[:3, 3] + s * (b[:3, 3] - a[:3, 3])
        return out

    @property
    def end(self) -> float:
        """Time [s] of the last waypoint."""
        return float(self.times[-1])
