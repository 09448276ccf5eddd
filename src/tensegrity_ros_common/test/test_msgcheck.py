"""The int-in-float-field finder (the PyPI rclpy wheel serialises Float64(data=5) as 5e-324)."""
import pytest

pytest.importorskip("rclpy")
from geometry_msgs.msg import Point, Pose, PoseArray  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64  # noqa: E402

from tensegrity_ros_common.msgcheck import int_float_fields  # noqa: E402


def test_the_hazard_is_real_in_this_rclpy():
    """If this ever fails, the wheel got fixed and the guard is only belt and braces."""
    sent = deserialize_message(serialize_message(Float64(data=5)), Float64).data
    assert sent != 5.0


def test_nested_scalar_ints_are_found_and_floats_and_sequences_pass():
    pa = PoseArray(poses=[Pose(position=Point(x=1.0, y=2.0, z=3.0)), Pose(position=Point(x=1.0, y=2, z=3.0))])
    assert int_float_fields(pa) == ["poses[1].position.y"]
    pa.poses[1].position.y = 2.0
    pa.poses[0].orientation.w = True
    assert int_float_fields(pa) == ["poses[0].orientation.w"]
    assert int_float_fields(JointState(position=[1, 2], velocity=[0.5])) == []   # array('d') converts
    assert int_float_fields(Float64(data=0.0)) == [] and int_float_fields(Float64(data=0)) == ["data"]
