"""The model description round trip and its error messages; message conversions."""
import json

import numpy as np
import pytest
from std_msgs.msg import Header

from tensegrity_engine import load_model
from tensegrity_engine.collision.capsules import model_elements
from tensegrity_ros_common.conversions import (expand_physical, frame_to_pose, joint_positions_by_name,
                                               pose_array_to_positions, pose_to_frame, positions_to_pose_array)
from tensegrity_ros_common.description import DescriptionError, describe, model_from_description, parse
from sensor_msgs.msg import JointState


@pytest.mark.parametrize("name", ["stacked_manipulator", "prism3"])
def test_round_trip_rebuilds_the_same_model(name):
    m = load_model(name)
    text = describe(m)
    d = parse(text)
    assert d["node_names"] == list(m.node_names[:m.n_physical]) and d["actuator_names"] == list(m.actuator_names)
    m2 = model_from_description(text)
    assert m2.node_names == m.node_names and np.array_equal(m2.positions, m.positions)
    assert np.array_equal(m2.rest_length, m.rest_length) and np.array_equal(m2.Q, m.Q)
    e1, e2 = model_elements(m), model_elements(m2)
    assert np.array_equal(e1.pair_i, e2.pair_i) and np.array_equal(e1.pair_j, e2.pair_j)


@pytest.mark.parametrize("text, match", [
    ("not json", "not JSON"),
    (json.dumps({"format": "other"}), "format"),
    (json.dumps({"format": "tensegrity_ros/model_description", "version": 99, "model": {}}), "version 99"),
    (json.dumps({"format": "tensegrity_ros/model_description", "version": 1}), "no 'model'"),
    (json.dumps({"format": "tensegrity_ros/model_description", "version": 1, "model": {"nodes": 3}}),
     "valid model"),
])
def test_bad_descriptions_are_refused_with_a_reason(text, match):
    with pytest.raises(DescriptionError, match=match):
        model_from_description(text)


def test_positions_frames_and_commands_convert_both_ways():
    m = load_model("stacked_manipulator")
    X = m.positions[:m.n_physical].copy()
    X[3] = np.nan
    msg = positions_to_pose_array(X, Header(frame_id="world"))
    back = pose_array_to_positions(msg)
    assert np.array_equal(np.isnan(back), np.isnan(X)) and np.allclose(back[~np.isnan(X)], X[~np.isnan(X)])
    full = expand_physical(m, m.positions[:m.n_physical])
    assert np.array_equal(full, m.positions)                    # virtual nodes sit on their physical nodes
    C = np.eye(4)
    C[:3, :3] = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1.0]])
    C[:3, 3] = (0.1, -0.2, 0.3)
    assert np.allclose(pose_to_frame(frame_to_pose(C)), C, atol=1e-15)
    idx, pos = joint_positions_by_name(JointState(name=["m3", "m1"], position=[0.5, -0.25]), m.actuator_names)
    assert list(idx) == [2, 0] and list(pos) == [0.5, -0.25]
    for bad, why in [(JointState(name=["m9"], position=[0.0]), "unknown"),
                     (JointState(name=["m1"], position=[float("nan")]), "non-finite"),
                     (JointState(name=["m1", "m2"], position=[0.0]), "2 names but 1"),
                     (JointState(name=["m1", "m1"], position=[0.0, 0.0]), "twice"),
                     (JointState(), "no joints"),
                     # issue 33 #7: an absurd length is refused on its count, before any per-name work
                     (JointState(name=[f"j{k}" for k in range(100_000)]), "names 100000 joints; this model has 6")]:
        with pytest.raises(ValueError, match=why):
            joint_positions_by_name(bad, m.actuator_names)


def test_matrix_to_quaternion_matches_scipy_for_all_rotations():
    from scipy.spatial.transform import Rotation
    from tensegrity_ros_common.conversions import matrix_to_quaternion
    rots = Rotation.random(2000, random_state=3)
    special = Rotation.from_rotvec([[np.pi, 0, 0], [0, np.pi, 0], [0, 0, np.pi], [0, 0, 0],
                                    [np.pi / np.sqrt(2), np.pi / np.sqrt(2), 0]])
    for R in list(rots.as_matrix()) + list(special.as_matrix()):
        q = matrix_to_quaternion(R)
        # same rotation (q and -q are one rotation): rotation matrices agree to rounding
        assert np.allclose(Rotation.from_quat(q).as_matrix(), R, atol=1e-14)
        assert abs(np.linalg.norm(q) - 1) < 1e-15 and q[3] >= 0


def test_pose_array_builder_matches_the_plain_conversion_through_serialisation():
    """The reusing builder gives what fresh messages give on the wire, for NaN rows, successive calls
    (reused poses updated) and a change of size."""
    from geometry_msgs.msg import PoseArray
    from rclpy.serialization import deserialize_message, serialize_message
    from tensegrity_ros_common.conversions import PoseArrayBuilder
    build, h = PoseArrayBuilder(), Header(frame_id="world")
    rng = np.random.default_rng(1)
    for k in (24, 24, 6, 0, 24):
        X = rng.normal(size=(k, 3))
        if k:
            X[rng.integers(k)] = np.nan
        a, b = (deserialize_message(serialize_message(msg), PoseArray)
                for msg in (build(X, h), positions_to_pose_array(X, h)))
        assert np.array_equal(pose_array_to_positions(a), X, equal_nan=True)
        assert np.array_equal(pose_array_to_positions(b), X, equal_nan=True)
        assert [p.orientation for p in a.poses] == [p.orientation for p in b.poses] and a.header == b.header
    assert isinstance(build(X, h), PoseArray)
