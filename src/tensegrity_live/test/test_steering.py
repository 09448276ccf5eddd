"""Client messages checked into commands; every kind of bad message rejected with its reason."""
import json

import pytest

from tensegrity_live.steering import MAX_PAYLOAD_BYTES, Command, Rejected, parse

TWIST = "geometry_msgs/msg/Twist"
POSE = "geometry_msgs/msg/PoseStamped"
POINT = "geometry_msgs/msg/PointStamped"


def js(obj) -> bytes:
    return json.dumps(obj).encode()


def pose_msg(**pose):
    return {"header": {"stamp": {"sec": 1, "nsec": 5}, "frame_id": "world"},
            "pose": {"position": {"x": 1.0, "y": 2.0, "z": 0.0}, "orientation": {"x": 0, "y": 0, "z": 0, "w": 1},
                     **pose}}


def test_a_twist_from_the_teleop_panel():
    cmd = parse("/cmd_vel", TWIST, "json", js({"linear": {"x": 0.3, "y": -0.1, "z": 0}, "angular": {"z": 0.5}}))
    assert cmd == Command("cmd_vel", (0.3, -0.1, 0.0, 0.0, 0.0, 0.5), "")
    assert parse("/cmd_vel", "geometry_msgs/Twist", "json", js({})).values == (0.0,) * 6


def test_a_goal_pose_and_a_goal_point_and_a_plate_goal():
    cmd = parse("/goal_pose", POSE, "json", js(pose_msg()))
    assert cmd == Command("goal_pose", (1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 1.0), "world")
    point = parse("/goal_pose", POINT, "json", js({"header": {"frame_id": ""}, "point": {"x": 1, "y": 2, "z": 3}}))
    assert point == Command("goal_pose", (1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0), "")
    assert parse("/plate_goal", POSE, "json", js(pose_msg())).topic == "plate_goal"


@pytest.mark.parametrize("topic, schema, encoding, payload, reason", [
    ("/cmd_vel", TWIST, "json", b" " * (MAX_PAYLOAD_BYTES + 1), "over the limit"),
    ("/cmd_vel", TWIST, "json", b"{not json", "not JSON"),
    ("/cmd_vel", TWIST, "json", b"\xff\xfe", "not JSON"),
    ("/cmd_vel", TWIST, "json", b"[" * 100000 + b"]" * 100000, "over the limit"),
    ("/cmd_vel", TWIST, "json", b"[" * 30000 + b"]" * 30000, "nested too deeply"),
    ("/cmd_vel", TWIST, "json", b'{"linear": {"x": NaN}}', "not JSON"),
    ("/cmd_vel", TWIST, "json", b'{"linear": {"x": Infinity}}', "not JSON"),
    ("/cmd_vel", TWIST, "json", b'{"linear": {"x": 1e999}}', "must be finite"),
    ("/cmd_vel", TWIST, "json", b'{"linear": {"x": 1' + b"0" * 400 + b"}}", "must be finite"),
    ("/cmd_vel", TWIST, "json", js({"linear": {"x": 2e4}}), "must be finite and within"),
    ("/cmd_vel", TWIST, "json", js({"linear": {"x": "fast"}}), "expected a number"),
    ("/cmd_vel", TWIST, "json", js({"linear": {"x": True}}), "expected a number"),
    ("/cmd_vel", TWIST, "json", js({"linear": [1, 2, 3]}), "expected a JSON object"),
    ("/cmd_vel", TWIST, "json", js([1, 2]), "expected a JSON object"),
    ("/cmd_vel", TWIST, "json", js({"linear": {"w": 1}}), "unexpected field"),
    ("/cmd_vel", TWIST, "json", js({"speed": 1}), "unexpected field"),
    ("/cmd_vel", TWIST, "cbor", js({}), "encoding"),
    ("/cmd_vel", POSE, "json", js(pose_msg()), "takes schema"),
    ("/motor_commands", "sensor_msgs/msg/JointState", "json", js({}), "is not taken"),
    ("/plate_goal", POINT, "json", js({"point": {}}), "takes schema"),
    ("/goal_pose", POSE, "json", js(pose_msg(orientation={"x": 0, "y": 0, "z": 0, "w": 0})), "unit quaternion"),
    ("/goal_pose", POSE, "json", js(pose_msg(orientation={"w": 2.0})), "unit quaternion"),
    ("/goal_pose", POSE, "json", js(pose_msg(position={"x": None})), "expected a number"),
    ("/goal_pose", POSE, "json", js({"pose": 3}), "expected a JSON object"),
    ("/goal_pose", POSE, "json", js({**pose_msg(), "header": {"frame_id": "x" * 300}}), "frame_id"),
    ("/goal_pose", POSE, "json", js({**pose_msg(), "header": {"frame_id": 7}}), "frame_id"),
    ("/goal_pose", POSE, "json", js({**pose_msg(), "header": "world"}), "expected a JSON object"),
    ("/goal_pose", POINT, "json", js({"point": {"x": float("1e5")}}), "must be finite and within"),
])
def test_bad_messages_are_rejected_with_the_reason(topic, schema, encoding, payload, reason):
    with pytest.raises(Rejected, match=reason):
        parse(topic, schema, encoding, payload)
