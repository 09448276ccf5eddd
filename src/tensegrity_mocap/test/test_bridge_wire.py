"""The bridge's hand-serialized every-frame messages are rclpy's own serialization (same length, the same bytes
but for the alignment padding, which rclpy leaves uninitialised) and read back to the values written."""
import numpy as np
import pytest
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, Pose, PoseArray, PoseStamped, Quaternion
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Header

from tensegrity_mocap.bridge.output import MarkerCloud, cloud_arrays
from tensegrity_mocap.bridge.wire import header_bytes, pose_array_bytes, pose_stamped_bytes


def same_but_padding(raw: bytes, ref: bytes, padding) -> bool:
    """``raw`` == ``ref`` outside the byte ranges ``padding`` [(start, end)]; ``raw``'s padding is zeros."""
    a, b = bytearray(raw), bytearray(ref)
    for i, j in padding:
        assert a[i:j] == bytes(j - i)
        b[i:j] = a[i:j]
    return a == b


def padding_after_header(frame_id: str, align: int, extra: int = 0) -> list:
    """[(start, end)] of the padding after the header (4 encapsulation + 12 + name + NUL bytes), before a
    4-byte count (``extra`` 4, then to 8) or a double (align 8)."""
    end = 4 + 12 + len(frame_id) + 1
    first = (end, end + (-(end - 4) % align))
    if not extra:
        return [first]
    after = first[1] + extra
    return [first, (after, after + (-(after - 4) % 8))]


@pytest.mark.parametrize("frame_id", ["", "w", "map", "world", "robot1/world_frame"])   # every padding case
@pytest.mark.parametrize("k", [0, 1, 24])
def test_pose_array_bytes_are_rclpy_serialization(frame_id, k):
    rng = np.random.default_rng(k + len(frame_id))
    X = rng.normal(size=(k, 3))
    if k > 1:
        X[1] = np.nan                                  # an untracked node
    h = Header(stamp=Time(sec=1_795_976_746, nanosec=50_230_006), frame_id=frame_id)
    msg = PoseArray(header=h, poses=[Pose(position=Point(x=x, y=y, z=z)) for x, y, z in X.tolist()])
    raw = pose_array_bytes(header_bytes(h.stamp.sec, h.stamp.nanosec, frame_id), X)
    assert same_but_padding(raw, serialize_message(msg), padding_after_header(frame_id, 4, 4 if k else 0))
    back = deserialize_message(raw, PoseArray)
    assert back.header == h and len(back.poses) == k
    got = np.array([(p.position.x, p.position.y, p.position.z) for p in back.poses]).reshape(-1, 3)
    assert np.array_equal(got, X, equal_nan=True)
    assert all((p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w) == (0, 0, 0, 1) for p in back.poses)


@pytest.mark.parametrize("frame_id", ["", "w", "map", "world", "robot1/world_frame"])
def test_pose_stamped_bytes_are_rclpy_serialization(frame_id):
    h = Header(stamp=Time(sec=7, nanosec=999_999_999), frame_id=frame_id)
    pos, q = (0.1, -2.5, 3e-9), (0.5, -0.5, 0.5, 0.5)
    msg = PoseStamped(header=h, pose=Pose(position=Point(x=pos[0], y=pos[1], z=pos[2]),
                                          orientation=Quaternion(x=q[0], y=q[1], z=q[2], w=q[3])))
    raw = pose_stamped_bytes(header_bytes(7, 999_999_999, frame_id), pos, q)
    assert same_but_padding(raw, serialize_message(msg), padding_after_header(frame_id, 8))
    assert deserialize_message(raw, PoseStamped) == msg


@pytest.mark.parametrize("frame_id", ["", "w", "map", "world", "robot1/world_frame"])
@pytest.mark.parametrize("k", [0, 1, 26])
def test_marker_cloud_bytes_are_the_marker_cloud(frame_id, k):
    """markers/raw serialized by hand reads back as the message built field by field (same length too)."""
    rng = np.random.default_rng(k)
    P, node = rng.normal(size=(k, 3)), rng.integers(-2, 24, k)
    h = Header(stamp=Time(sec=12, nanosec=345), frame_id=frame_id)
    cloud = MarkerCloud()
    raw = cloud.serialized(header_bytes(12, 345, frame_id), P, node)
    msg = cloud(h, P, node)
    assert len(raw) == len(serialize_message(msg))
    back = deserialize_message(raw, PointCloud2)
    assert back == msg
    got, got_node = cloud_arrays(back)
    assert np.allclose(got, P.astype(np.float32), rtol=0, atol=0) and np.array_equal(got_node, node)


def test_reused_tf_pose_is_the_plate_frame():
    """TF's pose (ROS installs: tf2_ros) is set in place on a reused Pose: the same as a new one."""
    from scipy.spatial.transform import Rotation
    from tensegrity_mocap.bridge.node import set_pose
    from tensegrity_ros_common.conversions import frame_to_pose
    pose = Pose()
    for angles in ([0.3, -1.2, 2.0], [np.pi, 0.0, 0.0], [0.0, 0.0, 0.0]):
        C = np.eye(4)
        C[:3, :3] = Rotation.from_euler("xyz", angles).as_matrix()
        C[:3, 3] = angles
        assert set_pose(pose, C) == frame_to_pose(C)
