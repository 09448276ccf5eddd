"""ROS messages the live view reads and writes: the mocap bridge's raw marker cloud, odometry as frame
transforms, checked commands as ROS messages."""
import numpy as np
import pytest

pytest.importorskip("rclpy")
from geometry_msgs.msg import Pose, Quaternion  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from tensegrity_live.ros_inputs import cloud_points, command_message, transform_of  # noqa: E402
from tensegrity_live.steering import Command  # noqa: E402

from foxglove_decoding import decode  # noqa: E402


def test_the_bridges_raw_marker_cloud_reads_back():
    output = pytest.importorskip("tensegrity_mocap.bridge.output")
    P = np.array([[0.1, 0.2, 0.3], [1.0, -2.0, 0.5], [0.0, 0.0, 0.0]])
    node = np.array([3, output.UNASSIGNED, output.EXCLUDED])
    points, got = cloud_points(output.marker_cloud(Header(frame_id="world"), P, node))
    assert np.allclose(points, P, atol=1e-7) and got.tolist() == node.tolist()      # float32 fields
    short = output.marker_cloud(Header(), P, node)
    short.data = short.data[:20]
    with pytest.raises(ValueError, match="cannot hold"):
        cloud_points(short)


def test_odometry_becomes_the_frame_chain_world_odom_body():
    odom = Odometry(header=Header(frame_id="odom"), child_frame_id="base_link")
    odom.pose.pose = Pose(orientation=Quaternion(x=0.0, y=0.0, z=0.0, w=1.0))
    odom.pose.pose.position.x = 1.5
    chain = decode(transform_of(odom, "world")).transforms
    assert [(t.parent_frame_id, t.child_frame_id) for t in chain] == [("world", "odom"), ("odom", "base_link")]
    assert chain[1].translation.x == 1.5


def test_commands_become_ros_messages_with_float_fields():
    twist = command_message(Command("cmd_vel", (1, 0, 0, 0, 0, 2)), Header())
    assert twist.linear.x == 1.0 and isinstance(twist.angular.z, float)
    pose = command_message(Command("goal_pose", (1, 2, 3, 0, 0, 0, 1), "world"), Header(frame_id="world"))
    assert pose.header.frame_id == "world" and pose.pose.position.z == 3.0 and pose.pose.orientation.w == 1.0
