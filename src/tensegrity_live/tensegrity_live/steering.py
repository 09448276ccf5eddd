"""Commands from a Foxglove client (pure): a client publish (topic, schema name, encoding, payload bytes)
checked into a :class:`Command` or rejected with the reason (:class:`Rejected`).

Accepted (JSON only, at most MAX_PAYLOAD_BYTES):

- ``/cmd_vel`` geometry_msgs/msg/Twist (or geometry_msgs/Twist): ``{"linear": {x, y, z}, "angular": {x, y, z}}``
  [m/s, rad/s]; absent coordinates are 0, as in ROS.
- ``/goal_pose`` geometry_msgs/msg/PoseStamped or geometry_msgs/msg/PointStamped (the 3D panel's "publish pose"
  and "publish point"): a point becomes a pose with the identity orientation.
- ``/plate_goal`` geometry_msgs/msg/PoseStamped.

The checks are on shape only (size, JSON, known topic and schema, objects and numbers where the message has
them, finite values within MAX_ABS_VALUE, a unit quaternion, a short frame id): the controllers that take the
republished ROS message keep doing their own checks and obey the safety stop.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

MAX_PAYLOAD_BYTES = 64 * 1024       # a Twist or PoseStamped in JSON takes < 300 bytes
MAX_ABS_VALUE = 1e4                 # m, m/s, rad/s: far beyond any robot of this suite; larger is an error
MAX_FRAME_ID = 256                  # characters of a header's frame_id
QUATERNION_TOLERANCE = 1e-3         # | |q| - 1 |: what a client's float32 rounding leaves, far below a typo
TWIST = ("geometry_msgs/msg/Twist", "geometry_msgs/Twist")
POSE = ("geometry_msgs/msg/PoseStamped", "geometry_msgs/PoseStamped")
POINT = ("geometry_msgs/msg/PointStamped", "geometry_msgs/PointStamped")
ACCEPTED = {"/cmd_vel": TWIST, "/goal_pose": POSE + POINT, "/plate_goal": POSE}
ROS_TOPIC = {"/cmd_vel": "cmd_vel", "/goal_pose": "goal_pose", "/plate_goal": "plate_goal"}   # relative ROS names


class Rejected(ValueError):
    """A client message that is not taken; the text says why."""


@dataclass(frozen=True)
class Command:
    """A checked command. ``topic`` is the relative ROS topic (cmd_vel, goal_pose, plate_goal); ``values``
    are (linear x, y, z [m/s], angular x, y, z [rad/s]) for cmd_vel, else (x, y, z [m], qx, qy, qz, qw);
    ``frame_id`` the client's header frame ('' for none and for a Twist)."""
    topic: str
    values: tuple
    frame_id: str = ""


def check_channel(topic: str, schema_name: str, encoding: str):
    """Rejected unless a client channel (topic, schema name, encoding) is one this view takes."""
    if topic not in ACCEPTED:
        raise Rejected(f"topic {_show(topic)} is not taken; publish on one of {', '.join(ACCEPTED)}")
    if schema_name not in ACCEPTED[topic]:
        raise Rejected(f"{topic} takes schema {' or '.join(ACCEPTED[topic])}, not {_show(schema_name)}")
    if encoding != "json":
        raise Rejected(f"{topic}: encoding {_show(encoding)} is not taken; publish JSON")


def parse(topic: str, schema_name: str, encoding: str, payload: bytes) -> Command:
    """The command in a client's message; Rejected naming the problem."""
    check_channel(topic, schema_name, encoding)
    if len(payload) > MAX_PAYLOAD_BYTES:
        raise Rejected(f"{topic}: message of {len(payload)} bytes, over the limit of {MAX_PAYLOAD_BYTES}")
    try:
        data = json.loads(bytes(payload).decode("utf-8"), parse_constant=_no_constant)
    except RecursionError:
        raise Rejected(f"{topic}: JSON nested too deeply") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise Rejected(f"{topic}: not JSON ({_show(str(exc))})") from None
    _need_object(data, topic)
    if schema_name in TWIST:
        _only(data, ("linear", "angular"), topic)
        return Command(ROS_TOPIC[topic], _vector(data, "linear", topic) + _vector(data, "angular", topic))
    _only(data, ("header", "pose", "point"), topic)
    frame_id = _frame_id(data.get("header"), topic)
    if schema_name in POINT:
        return Command(ROS_TOPIC[topic], _vector(data, "point", topic) + (0.0, 0.0, 0.0, 1.0), frame_id)
    pose = data.get("pose")
    _need_object(pose, f"{topic}.pose")
    _only(pose, ("position", "orientation"), f"{topic}.pose")
    return Command(ROS_TOPIC[topic], _vector(pose, "position", f"{topic}.pose") + _quaternion(pose, topic), frame_id)


def _no_constant(name):
    raise ValueError(f"{name} is not a number JSON allows")


def _show(value, most: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= most else text[:most] + "..."


def _need_object(value, where: str):
    if not isinstance(value, dict):
        raise Rejected(f"{where}: expected a JSON object, got {type(value).__name__}")


def _only(obj: dict, keys, where: str):
    extra = sorted(str(k) for k in obj if k not in keys)
    if extra:
        raise Rejected(f"{where}: unexpected field(s) {_show(extra)}; expected {', '.join(keys)}")


def _number(obj: dict, key: str, where: str, default: float = 0.0) -> float:
    value = obj.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Rejected(f"{where}.{key}: expected a number, got {_show(value)}")
    try:
        value = float(value)
    except OverflowError:                      # an integer beyond any float
        value = math.inf
    if not math.isfinite(value) or abs(value) > MAX_ABS_VALUE:
        raise Rejected(f"{where}.{key} = {value!r}: must be finite and within +-{MAX_ABS_VALUE:g}")
    return value


def _vector(obj: dict, key: str, where: str) -> tuple:
    """(x, y, z) of the object ``obj[key]`` (absent: zeros)."""
    v = obj.get(key, {})
    _need_object(v, f"{where}.{key}")
    _only(v, ("x", "y", "z"), f"{where}.{key}")
    return tuple(_number(v, c, f"{where}.{key}") for c in "xyz")


def _quaternion(pose: dict, topic: str) -> tuple:
    where = f"{topic}.pose.orientation"
    q = pose.get("orientation", {"w": 1.0})
    _need_object(q, where)
    _only(q, ("x", "y", "z", "w"), where)
    values = tuple(_number(q, c, where) for c in "xyzw")
    norm = math.sqrt(sum(v * v for v in values))
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        raise Rejected(f"{where}: not a unit quaternion (|q| = {norm:.4g}); the identity is x=y=z=0, w=1")
    return values


def _frame_id(header, topic: str) -> str:
    if header is None:
        return ""
    _need_object(header, f"{topic}.header")
    frame = header.get("frame_id", "")
    if not isinstance(frame, str) or len(frame) > MAX_FRAME_ID or not frame.isprintable():
        raise Rejected(f"{topic}.header.frame_id: expected printable text of at most {MAX_FRAME_ID} characters, "
                       f"got {_show(frame)}")
    return frame
