"""ROS messages <-> the live view's data (needs the ROS message packages; no rclpy node): raw mocap markers
from a PointCloud2, odometry as Foxglove frame transforms, checked commands as ROS messages."""
from __future__ import annotations

import numpy as np
from foxglove.messages import FrameTransforms
from geometry_msgs.msg import Point, Pose, PoseStamped, Quaternion, Twist, Vector3

from tensegrity_ros_common.conversions import pose_to_frame, stamp_to_seconds

from . import scene

CLOUD_FIELDS = ("x", "y", "z", "node")      # the mocap bridge's markers/raw: float32 x, y, z [m] and node index


def cloud_points(msg) -> tuple:
    """(points (k, 3) [m], node (k,) int) of a PointCloud2 with float32 fields x, y, z, node; ValueError for
    a cloud without them or whose data is shorter than its size says."""
    offsets = {f.name: f.offset for f in msg.fields if f.datatype == 7}          # PointField.FLOAT32
    missing = [n for n in CLOUD_FIELDS if n not in offsets]
    if missing:
        raise ValueError(f"markers/raw has no float32 field(s) {missing}")
    n, step = int(msg.width) * int(msg.height), int(msg.point_step)
    data = np.frombuffer(bytes(msg.data), np.uint8)
    if step < 4 or max(offsets[f] for f in CLOUD_FIELDS) + 4 > step or len(data) < n * step:
        raise ValueError(f"markers/raw: {len(data)} bytes cannot hold {n} points of {step} bytes")
    rows = data[:n * step].reshape(n, step)
    endian = ">f4" if msg.is_bigendian else "<f4"
    cols = [rows[:, offsets[f]:offsets[f] + 4].copy().view(endian).ravel().astype(float) for f in CLOUD_FIELDS]
    return np.column_stack(cols[:3]).reshape(-1, 3), np.nan_to_num(np.rint(cols[3]), nan=-1).astype(np.int64)


def transform_of(odom, world_frame: str) -> FrameTransforms:
    """The odometry's transform odom frame -> body frame, after world -> odom frame (the identity: the
    simulator's odometry frame coincides with its fixed frame) when the two frames differ."""
    t = scene.stamp(stamp_to_seconds(odom.header.stamp))
    odom_frame = odom.header.frame_id or world_frame
    out = [scene.frame_transform(t, odom_frame, odom.child_frame_id, pose_to_frame(odom.pose.pose))]
    if odom_frame != world_frame:
        out.insert(0, scene.frame_transform(t, world_frame, odom_frame, np.eye(4)))
    return FrameTransforms(transforms=out)


def command_message(command, header):
    """The ROS message of a checked :class:`.steering.Command` (Twist, or PoseStamped with ``header``)."""
    v = [float(x) for x in command.values]
    if command.topic == "cmd_vel":
        return Twist(linear=Vector3(x=v[0], y=v[1], z=v[2]), angular=Vector3(x=v[3], y=v[4], z=v[5]))
    return PoseStamped(header=header, pose=Pose(position=Point(x=v[0], y=v[1], z=v[2]),
                                                orientation=Quaternion(x=v[3], y=v[4], z=v[5], w=v[6])))
