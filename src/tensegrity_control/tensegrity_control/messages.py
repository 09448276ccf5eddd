"""The controllers' input messages to engine arrays (SI units), each checked first: a malformed message
raises ValueError saying what is wrong and how to send it right, and the node reports it and keeps its
last safe state."""
from __future__ import annotations

import math

import numpy as np

from tensegrity_ros_common.bounded import MAX_PATH_POSES, check_count
from tensegrity_ros_common.conversions import pose_array_to_positions, pose_to_frame, stamp_to_seconds

QUATERNION_TOLERANCE = 1e-3     # |q| may differ from 1 by this much (float32 round trips, hand-typed goals)


def heading_of(twist, min_speed: float) -> float | None:
    """The rolling direction [rad] in the odom frame (0 = +x, counter-clockwise) of a cmd_vel Twist: the
    direction of (linear.x, linear.y); None (stop) when that vector is shorter than ``min_speed`` [m/s].
    A rolling tensegrity has no front, so the twist is read in the odom frame, not the body frame."""
    return rolling_command(twist, min_speed)[0]


def rolling_command(twist, min_speed: float) -> tuple:
    """(heading [rad] or None, speed [m/s], turn rate [rad/s]) of a cmd_vel Twist: the direction and length
    of (linear.x, linear.y) in the odom frame (None: shorter than ``min_speed``, stop) and angular.z, which
    turns the heading over time. ValueError for a non-finite value."""
    vx, vy, wz = float(twist.linear.x), float(twist.linear.y), float(twist.angular.z)
    if not all(math.isfinite(v) for v in (vx, vy, wz)):
        raise ValueError(f"cmd_vel linear ({vx}, {vy}) or angular.z {wz} is not finite")
    speed = math.hypot(vx, vy)
    return (math.atan2(vy, vx) if speed >= min_speed else None), speed, wz


def checked_frame(pose, frame_id: str, fixed_frame: str, what: str, same: tuple = ()) -> np.ndarray:
    """A geometry_msgs/Pose in ``frame_id`` as a 4x4 homogeneous pose [m]; ValueError unless ``frame_id`` is
    ``fixed_frame`` (empty is taken as it) or one of the frames ``same`` that coincide with it, the position
    is finite and the quaternion has unit length."""
    if frame_id not in ("", fixed_frame, *same):
        also = "".join(f" or '{f}'" for f in same)
        raise ValueError(f"{what} is in frame '{frame_id}'; send it in the fixed frame '{fixed_frame}'{also} "
                         "(parameter frame_id; this node does not transform between frames)")
    p, q = pose.position, pose.orientation
    values = np.array([p.x, p.y, p.z, q.x, q.y, q.z, q.w], float)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{what} has a NaN or infinite value: position {values[:3].tolist()}, "
                         f"orientation {values[3:].tolist()}")
    norm = float(np.linalg.norm(values[3:]))
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        raise ValueError(f"{what} orientation is not a unit quaternion (|q| = {norm:.4g}); the identity is "
                         "x=y=z=0, w=1")
    return pose_to_frame(pose)


def path_trajectory(path, fixed_frame: str) -> tuple:
    """(times (K,) [s from the path's header stamp], poses (K,4,4)) of a nav_msgs/Path whose pose stamps
    are the times to be at each pose. A path with a zero header stamp takes its pose stamps as seconds
    from now. Times must start at >= 0 and increase; at most ``MAX_PATH_POSES`` poses (checked first)."""
    if not path.poses:
        raise ValueError("plate_path has no poses")
    check_count("plate_path", len(path.poses), MAX_PATH_POSES, "poses")
    t0 = stamp_to_seconds(path.header.stamp)
    times = np.array([stamp_to_seconds(p.header.stamp) - t0 for p in path.poses])
    if times[0] < 0 or np.any(np.diff(times) <= 0):
        raise ValueError(f"plate_path pose stamps must increase and not precede the path's header stamp; the "
                         f"times from its start are {np.round(times, 3).tolist()} s")
    frames = [checked_frame(p.pose, p.header.frame_id or path.header.frame_id, fixed_frame,
                            f"plate_path pose {k}") for k, p in enumerate(path.poses)]
    return times, np.array(frames)


def measured_nodes(msg, model, frames: tuple = ()) -> np.ndarray:
    """All model nodes (n,3) [m] from a node_positions PoseArray of the physical nodes (NaN rows stay NaN:
    unseen); ValueError for a wrong count (checked before the poses are read), or a header frame not among
    ``frames`` (if given; '' is taken as the first)."""
    if frames and msg.header.frame_id not in ("", *frames):
        raise ValueError(f"node_positions is in frame '{msg.header.frame_id}', expected "
                         + " or ".join(f"'{f}'" for f in frames) + " (this node does not transform between frames)")
    if len(msg.poses) != model.n_physical:
        raise ValueError(f"node_positions has {len(msg.poses)} poses, model '{model.name}' has {model.n_physical} "
                         "physical nodes (is the simulator or mocap bridge running another model?)")
    return model.from_physical(pose_array_to_positions(msg))
