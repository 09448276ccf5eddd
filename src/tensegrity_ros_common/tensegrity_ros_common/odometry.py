"""nav_msgs/Odometry of a robot's body frame (:mod:`.body_frame`): what the simulator publishes for a mobile
robot, and the locomotion controller for a robot seen by motion capture."""
from __future__ import annotations

from geometry_msgs.msg import Point, Pose, Quaternion, Twist, Vector3
from nav_msgs.msg import Odometry

from .conversions import matrix_to_quaternion


def body_pose(state) -> Pose:
    """The body frame's Pose from a :class:`~tensegrity_ros_common.body_frame.BodyState`."""
    x, y, z, w = matrix_to_quaternion(state.rotation)
    px, py, pz = state.position.tolist()
    return Pose(position=Point(x=px, y=py, z=pz), orientation=Quaternion(x=float(x), y=float(y), z=float(z),
                                                                        w=float(w)))


def odometry_message(state, header, child_frame: str) -> Odometry:
    """nav_msgs/Odometry: pose in ``header.frame_id``, twist in the body frame (as nav_msgs specifies);
    covariances zero (the simulator's ground truth)."""
    R = state.rotation
    v, w = (R.T @ state.velocity).tolist(), (R.T @ state.angular_velocity).tolist()
    msg = Odometry(header=header, child_frame_id=child_frame)
    msg.pose.pose = body_pose(state)
    msg.twist.twist = Twist(linear=Vector3(x=v[0], y=v[1], z=v[2]), angular=Vector3(x=w[0], y=w[1], z=w[2]))
    return msg
