"""Helpers for diagnostic_msgs (integer level constants, one status from a dict of values)."""
from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

# levels as ints (the message field is a byte: DiagnosticStatus.OK == b"\x00" in rclpy)
OK, WARN, ERROR, STALE = 0, 1, 2, 3
LEVEL_NAMES = {OK: "OK", WARN: "WARN", ERROR: "ERROR", STALE: "STALE"}


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def status(name: str, hardware_id: str, level, message: str, values: dict | None = None) -> DiagnosticStatus:
    lvl = level if isinstance(level, bytes) else bytes([int(level)])
    return DiagnosticStatus(level=lvl, name=name, hardware_id=hardware_id, message=message,
                            values=[KeyValue(key=str(k), value=_fmt(v)) for k, v in (values or {}).items()])


def array(header, statuses) -> DiagnosticArray:
    return DiagnosticArray(header=header, status=list(statuses))


def level_of(st: DiagnosticStatus) -> int:
    return st.level[0] if isinstance(st.level, (bytes, bytearray)) else int(st.level)
