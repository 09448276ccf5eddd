"""Find float fields that hold a Python ``int`` in a ROS message.

The PyPI rclpy wheels accept ``Float64(data=5)`` and serialise the int's bits as a double: 5 goes out on
the wire as 5e-324. Sequences (``array('d')``) convert correctly; scalar ``float``/``double`` fields, also
nested ones (``Point.x`` inside a ``Pose`` inside a ``PoseArray``), do not. The test suite runs every
published message through :func:`int_float_fields` (see the repository's conftest.py).
"""
from __future__ import annotations

FLOAT_TYPES = ("double", "float")


def int_float_fields(msg, path: str = "") -> list:
    """Dotted paths of the scalar float fields of ``msg`` (recursively) whose value is a Python int/bool."""
    fields = getattr(type(msg), "get_fields_and_field_types", None)
    if fields is None:
        return []
    found = []
    for name, kind in fields().items():
        value = getattr(msg, name)
        where = f"{path}.{name}" if path else name
        if kind in FLOAT_TYPES:
            if isinstance(value, int):           # bool is an int too
                found.append(where)
        elif kind.startswith("sequence<") and "/" in kind:
            for k, item in enumerate(value):
                found += int_float_fields(item, f"{where}[{k}]")
        elif "/" in kind and "<" not in kind and "[" not in kind:
            found += int_float_fields(value, where)
        elif kind.endswith("]") and "/" in kind:  # fixed-size array of messages
            for k, item in enumerate(value):
                found += int_float_fields(item, f"{where}[{k}]")
    return found
