"""The controllers' message checks and conversions without a running node: twist to heading, goal poses and
their frames, paths, motor angle trajectories, measured node positions, odometry from measurements."""
import math

import numpy as np
import pytest
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import Point, Pose, PoseArray, PoseStamped, Quaternion, Twist, Vector3
from nav_msgs.msg import Path
from scipy.spatial.transform import Rotation
from std_msgs.msg import Header
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from tensegrity_control.angle_trajectory import from_message
from tensegrity_control.measured_body import MeasuredBody
from tensegrity_control.messages import checked_frame, heading_of, measured_nodes, path_trajectory
from tensegrity_engine import load_model
from tensegrity_engine.dynamics.inputs import u_to_angles
from tensegrity_ros_common.conversions import frame_to_pose, positions_to_pose_array

MODEL = load_model("stacked_manipulator")


def twist(x, y):
    return Twist(linear=Vector3(x=float(x), y=float(y), z=0.0))


def test_cmd_vel_is_a_direction_in_the_odom_frame_and_slow_means_stop():
    assert heading_of(twist(0.0, 0.2), 0.01) == pytest.approx(math.pi / 2)
    assert heading_of(twist(-0.1, 0.0), 0.01) == pytest.approx(math.pi)
    assert heading_of(twist(0.005, 0.005), 0.01) is None      # |v| = 7 mm/s < 10 mm/s
    with pytest.raises(ValueError, match="not finite"):
        heading_of(twist(float("nan"), 0.0), 0.01)


def test_goal_pose_round_trip_and_its_checks():
    C = np.eye(4)
    C[:3, :3] = Rotation.from_euler("zyx", [0.3, -0.2, 0.1]).as_matrix()
    C[:3, 3] = [0.01, -0.02, 0.35]
    back = checked_frame(frame_to_pose(C), "world", "world", "plate_goal")
    assert np.allclose(back, C, atol=1e-12)
    assert np.allclose(checked_frame(frame_to_pose(C), "", "world", "g"), C)    # empty frame: the fixed frame
    with pytest.raises(ValueError, match="frame 'map'.*fixed frame 'world'"):
        checked_frame(frame_to_pose(C), "map", "world", "plate_goal")
    bad = frame_to_pose(C)
    bad.position.x = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        checked_frame(bad, "world", "world", "plate_goal")
    with pytest.raises(ValueError, match="unit quaternion"):
        checked_frame(Pose(orientation=Quaternion(x=0.0, y=0.0, z=0.0, w=0.0)), "world", "world", "plate_goal")


def stamped(t, z):
    return PoseStamped(header=Header(stamp=Time(sec=int(t), nanosec=int(round((t % 1) * 1e9))), frame_id="world"),
                       pose=Pose(position=Point(x=0.0, y=0.0, z=float(z)), orientation=Quaternion(w=1.0)))


def test_path_times_count_from_its_header_stamp_and_must_increase():
    path = Path(header=Header(stamp=Time(sec=100), frame_id="world"),
                poses=[stamped(100.5, 0.3), stamped(101.0, 0.31), stamped(102.25, 0.32)])
    times, poses = path_trajectory(path, "world")
    assert np.allclose(times, [0.5, 1.0, 2.25]) and poses.shape == (3, 4, 4)
    assert np.allclose(poses[:, 2, 3], [0.3, 0.31, 0.32])
    path.poses = [stamped(101.0, 0.3), stamped(100.5, 0.31)]
    with pytest.raises(ValueError, match="increase"):
        path_trajectory(path, "world")
    with pytest.raises(ValueError, match="no poses"):
        path_trajectory(Path(), "world")


def trajectory(names, points):
    return JointTrajectory(joint_names=names, points=[
        JointTrajectoryPoint(positions=[float(v) for v in pos], time_from_start=Duration(sec=int(t),
                                                                                         nanosec=int((t % 1) * 1e9)))
        for t, pos in points])


def test_joint_trajectory_interpolates_holds_the_others_and_checks_names_and_limits():
    names = list(MODEL.actuator_names)
    current = u_to_angles(MODEL, np.zeros(len(names)))
    traj = from_message(trajectory([names[1]], [(1.0, [0.5]), (2.0, [1.0])]), MODEL, current)
    # starts from the current angles at 0 s, linear in between, holds the last point
    assert np.allclose(traj(0.0), current)
    assert traj(0.5)[1] == pytest.approx(current[1] + 0.5 * (0.5 - current[1]))
    assert traj(1.5)[1] == pytest.approx(0.75) and traj(9.0)[1] == pytest.approx(1.0)
    others = [k for k in range(len(names)) if k != 1]
    assert np.allclose(traj(1.5)[others], current[others])
    with pytest.raises(ValueError, match="unknown or repeated joint.*'nope'"):
        from_message(trajectory(["nope"], [(1.0, [0.0])]), MODEL, current)
    with pytest.raises(ValueError, match="increase"):
        from_message(trajectory([names[0]], [(1.0, [0.0]), (0.5, [0.1])]), MODEL, current)
    hi = MODEL.angle_limits[0, 1]
    with pytest.raises(ValueError, match="leaves its limits"):
        from_message(trajectory([names[0]], [(1.0, [hi + 0.1])]), MODEL, current)
    with pytest.raises(ValueError, match="NaN"):
        from_message(trajectory([names[0]], [(1.0, [float("nan")])]), MODEL, current)


def test_measured_nodes_keep_unseen_rows_and_check_the_count():
    X = MODEL.positions[:MODEL.n_physical].copy()
    X[3] = np.nan
    out = measured_nodes(positions_to_pose_array(X, Header()), MODEL)
    assert out.shape == (MODEL.n_nodes, 3) and np.isnan(out[3]).all()
    assert np.allclose(out[:3], X[:3])
    with pytest.raises(ValueError, match="physical nodes"):
        measured_nodes(PoseArray(poses=[Pose()] * 3), MODEL)


def test_odometry_from_measurements_follows_a_rigid_translation():
    """Two complete measurements 0.1 s apart, the robot moved 5 mm in +y: the fitted body moves 5 mm and
    its velocity is 0.05 m/s (a rigid motion is fitted exactly, to rounding)."""
    prism = load_model("prism3")
    body = MeasuredBody(prism)
    X = prism.positions
    assert body.update(0.0, X) is None                         # no velocity from one sample
    state = body.update(0.1, X + [0.0, 0.005, 0.0])
    assert np.allclose(state.velocity, [0.0, 0.05, 0.0], atol=1e-9)
    assert np.allclose(state.rotation, np.eye(3), atol=1e-9)
    Y = X.copy()
    Y[0] = np.nan
    assert body.update(0.2, Y) is None                         # an unseen node: no fit


def test_paths_and_trajectories_over_the_stated_size_are_refused_before_any_work():
    """Issue 33 #7: a path or trajectory longer than the documented limit is refused, naming the limit (a
    10,000-pose path took 2.5 s to check before); one at the limit is taken."""
    from tensegrity_ros_common.bounded import MAX_PATH_POSES, MAX_TRAJECTORY_POINTS
    path = Path(header=Header(frame_id="world"), poses=[stamped(0.01 * (k + 1), 0.3) for k in range(MAX_PATH_POSES)])
    assert len(path_trajectory(path, "world")[0]) == MAX_PATH_POSES
    path.poses.append(stamped(0.01 * (MAX_PATH_POSES + 1), 0.3))
    with pytest.raises(ValueError, match=f"{MAX_PATH_POSES + 1} poses, over the limit of {MAX_PATH_POSES}"):
        path_trajectory(path, "world")
    current = u_to_angles(MODEL, np.zeros(len(MODEL.actuator_names)))
    points = [(0.01 * (k + 1), [0.0]) for k in range(MAX_TRAJECTORY_POINTS)]
    assert len(from_message(trajectory(["m1"], points), MODEL, current).times) == MAX_TRAJECTORY_POINTS + 1
    points.append((0.01 * (MAX_TRAJECTORY_POINTS + 1), [0.0]))
    with pytest.raises(ValueError, match=f"over the limit of {MAX_TRAJECTORY_POINTS}"):
        from_message(trajectory(["m1"], points), MODEL, current)
    with pytest.raises(ValueError, match="names 7 joints; this model has 6"):
        from_message(trajectory([f"j{k}" for k in range(7)], [(1.0, [0.0] * 7)]), MODEL, current)


def test_the_byte_limit_names_the_size_and_the_limit():
    from tensegrity_ros_common.bounded import MAX_BYTES, pose_array_bytes, too_large
    assert too_large("plate_path", MAX_BYTES["plate_path"], MAX_BYTES["plate_path"]) == ""
    reason = too_large("joint_trajectory", 4_800_036, MAX_BYTES["joint_trajectory"])
    assert "4800036 bytes serialized, over this node's limit of 1048576 bytes" in reason
    # a node_positions of the model's size, with a long frame id, is within its limit
    from rclpy.serialization import serialize_message
    msg = positions_to_pose_array(np.zeros((MODEL.n_physical, 3)), Header(frame_id="w" * 1000))
    assert len(serialize_message(msg)) <= pose_array_bytes(MODEL.n_physical)
