"""A trajectory of motor angles (from trajectory_msgs/JointTrajectory), linear between its points and held at
its last point; checked against the model's actuators and angle limits (no ROS types here but the message
fields read by :func:`from_message`)."""
from __future__ import annotations

import numpy as np

from tensegrity_ros_common.bounded import MAX_TRAJECTORY_POINTS, check_count
from tensegrity_ros_common.conversions import stamp_to_seconds


class AngleTrajectory:
    """Motor angles [rad] of every actuator as a function of the time [s] since the trajectory started."""

    def __init__(self, times, angles):
        """``times`` (K,) [s] increasing from >= 0; ``angles`` (K, alpha) [rad] for all actuators."""
        self.times = np.asarray(times, float)
        self.angles = np.asarray(angles, float)

    @property
    def duration(self) -> float:
        return float(self.times[-1])

    def __call__(self, t: float) -> np.ndarray:
        """Angles (alpha,) [rad] at ``t`` s after the start (the first point before it, the last after it)."""
        return np.array([np.interp(t, self.times, a) for a in self.angles.T])


def from_message(msg, model, current_angles) -> AngleTrajectory:
    """An AngleTrajectory from a JointTrajectory of motor angles [rad]: joints not named keep
    ``current_angles`` (alpha,) [rad]; a first point later than 0 s starts from ``current_angles``.
    ValueError naming the problem (unknown joint, missing or non-finite positions, times that do not
    increase, angles outside the model's limits, more than ``MAX_TRAJECTORY_POINTS`` points: checked first)."""
    if not msg.joint_names or not msg.points:
        raise ValueError("joint_trajectory needs joint_names and at least one point")
    check_count("joint_trajectory", len(msg.points), MAX_TRAJECTORY_POINTS, "points")
    names, known = list(msg.joint_names), list(model.actuator_names)
    if len(names) > len(known):
        raise ValueError(f"joint_trajectory names {len(names)} joints; this model has {len(known)} actuators "
                         f"{known}")
    unknown = [n for n in names if n not in known]
    if unknown or len(set(names)) != len(names):
        raise ValueError(f"joint_trajectory joint_names {names}: unknown or repeated joint(s) {unknown}; this "
                         f"model's actuators are {known}")
    times = np.array([stamp_to_seconds(p.time_from_start) for p in msg.points])
    if times[0] < 0 or np.any(np.diff(times) <= 0):
        raise ValueError(f"joint_trajectory time_from_start must increase from >= 0, got {times.tolist()} s")
    if any(len(p.positions) != len(names) for p in msg.points):
        raise ValueError(f"every joint_trajectory point needs {len(names)} positions (one per joint name)")
    columns = [known.index(n) for n in names]
    angles = np.tile(np.asarray(current_angles, float), (len(times), 1))
    angles[:, columns] = np.array([list(p.positions) for p in msg.points], float)
    if not np.all(np.isfinite(angles)):
        raise ValueError("joint_trajectory has NaN or infinite positions")
    lo, hi = model.angle_limits[:, 0], model.angle_limits[:, 1]
    outside = np.flatnonzero(np.any((angles < lo) | (angles > hi), axis=0))
    if len(outside):
        k = int(outside[0])
        raise ValueError(f"joint_trajectory angle for '{known[k]}' leaves its limits [{lo[k]:.4g}, {hi[k]:.4g}] "
                         f"rad (values {angles[:, k].min():.4g} .. {angles[:, k].max():.4g})")
    if times[0] > 0:
        times = np.concatenate([[0.0], times])
        angles = np.vstack([np.asarray(current_angles, float), angles])
    return AngleTrajectory(times, angles)
