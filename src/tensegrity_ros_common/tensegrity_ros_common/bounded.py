"""Subscriptions whose messages are size-checked before they are parsed.

rclpy turns a message into Python objects before the callback sees it: a 100,000-point JointTrajectory
took 4-8 s (one Python object per point), and with a single-threaded executor the safety stop waited that
long. A bounded subscription takes the serialized bytes (``raw=True``), rejects a message over its byte
limit with the reason (the node's ``reject(what, reason)``: counted, logged, in the diagnostics) and parses
only the rest. The limits of each topic are in :data:`MAX_BYTES` (and docs/controllers.md): far above any
real use, and small enough that a message at the limit parses in well under 0.1 s.
"""
from __future__ import annotations

import inspect

from rclpy.serialization import deserialize_message

MAX_TRAJECTORY_POINTS = 1000      # joint_trajectory points: 20 s at 50 Hz
MAX_PATH_POSES = 1000             # plate_path poses
# the largest serialized message [bytes] taken per topic: this bounds the parse; the counts above, checked
# after it, are the limits a user meets (a message of that many elements is far below these bytes)
MAX_BYTES = {
    "joint_trajectory": 1 << 20,      # 1 MiB: 1000 points of 24 joints with all four arrays is 0.8 MB
    "plate_path": 1 << 18,            # 256 KiB: 1000 poses take ~80 kB (72 bytes + their frame ids)
    "commands": 1 << 16,              # 64 KiB: a JointState of 24 actuators takes < 2 kB
    "model_description": 1 << 24,     # 16 MiB of JSON: the stacked manipulator's takes 8.6 kB
}
POSE_BYTES = 56                   # a geometry_msgs/Pose serialized: 7 float64
HEADER_ALLOWANCE = 4096           # bytes for a header (its frame_id) and the sequence lengths
NODES_WITHOUT_MODEL = 1000        # node_positions poses taken before the model is known (then dropped)


def pose_array_bytes(n_poses: int) -> int:
    """Largest serialized size [bytes] of a PoseArray of ``n_poses`` poses accepted (a frame_id of up to
    ~4000 characters)."""
    return HEADER_ALLOWANCE + POSE_BYTES * n_poses


def too_large(what: str, size: int, max_bytes: int) -> str:
    """'' if ``size`` [bytes] is within ``max_bytes``, else the reason for the rejection."""
    if size <= max_bytes:
        return ""
    return (f"{what} is {size} bytes serialized, over this node's limit of {max_bytes} bytes; not parsed "
            "(docs/controllers.md lists the size limits)")


def check_count(what: str, count: int, limit: int, unit: str):
    """ValueError with the reason if ``count`` ``unit`` (points, poses) exceed ``limit``."""
    if count > limit:
        raise ValueError(f"{what} has {count} {unit}, over the limit of {limit}; send it in parts "
                         "(docs/controllers.md)")


def bounded_subscription(node, msg_type, topic: str, callback, qos, max_bytes, reject, thread=None):
    """A subscription to ``topic`` whose ``callback(msg)`` (or ``callback(msg, info)``, rclpy's MessageInfo,
    when it takes two arguments) sees only messages of at most ``max_bytes`` serialized bytes (an int, or a
    callable giving it at the time: a limit that depends on a model that arrives later); a larger one is
    passed to ``reject(topic, reason)`` unparsed. With ``thread`` (an :class:`.input_thread.InputThread`) the
    executor only checks the size and queues the bytes (the QoS depth newest): parsing and ``callback`` run on
    that thread, never delaying the executor's other callbacks."""
    limit = max_bytes if callable(max_bytes) else (lambda: max_bytes)
    with_info = len(inspect.signature(callback).parameters) == 2

    def parse(item):
        data, info = item
        msg = deserialize_message(data, msg_type)
        if with_info:
            callback(msg, info)
        else:
            callback(msg)

    handle = parse if thread is None else thread.queue(parse, qos.depth)

    def take(data: bytes, info):
        reason = too_large(topic, len(data), limit())
        if reason:
            reject(topic, reason)
            return
        handle((data, info))

    return node.create_subscription(msg_type, topic, take, qos, raw=True)
