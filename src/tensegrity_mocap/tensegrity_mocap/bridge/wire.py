"""The bridge's every-frame messages as serialized bytes (CDR, little endian: what rclpy's own serialization
makes, byte for byte), for ``Publisher.publish(bytes)``.

rclpy converts a message to C field by field: a ``PoseArray`` of 24 poses cost ~230 us to publish and a
``PoseStamped`` ~60 us here, most of a 360 Hz frame's publishing. Writing the bytes with numpy costs a few
microseconds; the topic type and what a subscriber receives are unchanged (``test_bridge_wire.py`` compares
with ``rclpy.serialization.serialize_message``).
"""
from __future__ import annotations

import struct

import numpy as np

_ENCAPSULATION = b"\x00\x01\x00\x00"          # CDR, little endian
_IDENTITY = (0.0, 0.0, 0.0, 1.0)              # quaternion x, y, z, w


def _pad(n: int, align: int) -> int:
    return -n % align


def header_bytes(sec: int, nanosec: int, frame_id: str) -> bytes:
    """std_msgs/Header: stamp (int32 sec, uint32 nanosec) and frame_id (uint32 length with the NUL, chars)."""
    name = frame_id.encode() + b"\x00"
    return struct.pack("<iII", sec, nanosec, len(name)) + name


def pose_array_bytes(header: bytes, X) -> bytes:
    """geometry_msgs/PoseArray: ``header`` (:func:`header_bytes`), positions ``X`` (k,3) [m] with identity
    orientations (NaN rows stay NaN)."""
    X = np.asarray(X, np.float64).reshape(-1, 3)
    out = header + b"\x00" * _pad(len(header), 4) + struct.pack("<I", len(X))
    if not len(X):
        return _ENCAPSULATION + out
    poses = np.empty((len(X), 7), "<f8")
    poses[:, :3] = X
    poses[:, 3:] = _IDENTITY
    return _ENCAPSULATION + out + b"\x00" * _pad(len(out), 8) + poses.tobytes()


def pose_stamped_bytes(header: bytes, position, quaternion) -> bytes:
    """geometry_msgs/PoseStamped: ``header`` (:func:`header_bytes`), position [m], quaternion (x, y, z, w)."""
    return (_ENCAPSULATION + header + b"\x00" * _pad(len(header), 8)
            + struct.pack("<7d", *(float(v) for v in position), *(float(q) for q in quaternion)))


def point_fields_bytes(fields) -> bytes:
    """The ``fields`` sequence of a sensor_msgs/PointCloud2, ``fields`` [(name, offset, datatype, count)],
    for a block that starts 4-byte aligned (as it does after height and width)."""
    out = struct.pack("<I", len(fields))
    for name, offset, datatype, count in fields:
        s = name.encode() + b"\x00"
        out += struct.pack("<I", len(s)) + s
        out += b"\x00" * _pad(len(out), 4) + struct.pack("<IB", offset, datatype)
        out += b"\x00" * 3 + struct.pack("<I", count)                  # count is 4-byte aligned
    return out


def point_cloud_bytes(header: bytes, fields: bytes, width: int, point_step: int, data: bytes,
                      is_dense: bool = True) -> bytes:
    """sensor_msgs/PointCloud2 of one row, little endian points: ``header`` (:func:`header_bytes`), ``fields``
    (:func:`point_fields_bytes`), ``width`` points of ``point_step`` bytes in ``data``."""
    return b"".join((_ENCAPSULATION, header, b"\x00" * _pad(len(header), 4), struct.pack("<II", 1, width), fields,
                     b"\x00\x00\x00\x00", struct.pack("<III", point_step, point_step * width, len(data)), data,
                     b"\x01" if is_dense else b"\x00"))
