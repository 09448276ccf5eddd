"""Full ROS 2 message definitions (``ros2msg`` schema text for MCAP) from the installed .msg files.

The text is the type's own .msg file followed by every message type it uses, each after a separator line
and ``MSG: pkg/Type`` (the layout rosbag2 and Foxglove read).
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

PRIMITIVES = {"bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
              "int64", "uint64", "string", "wstring"}
SEPARATOR = "=" * 80


def _share_dirs() -> list:
    dirs = [Path(sys.prefix) / "share"]
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if prefix:
            dirs.append(Path(prefix) / "share")
    return dirs


def msg_file(type_name: str) -> Path:
    """Path of 'pkg/msg/Type' or 'pkg/Type'."""
    pkg, _, name = type_name.replace("/msg/", "/").partition("/")
    for d in _share_dirs():
        p = d / pkg / "msg" / f"{name}.msg"
        if p.is_file():
            return p
    raise FileNotFoundError(f"no .msg file for {type_name} under {', '.join(map(str, _share_dirs()))}")


def _field_types(text: str, package: str) -> list:
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) < 2 or "=" in parts[1] or (len(parts) > 2 and parts[2].startswith("=")):
            continue                                      # constant
        base = re.sub(r"\[.*\]$", "", parts[0])
        base = re.sub(r"<=\d+$", "", base)
        if base in PRIMITIVES:
            continue
        if "/" not in base:
            base = f"{package}/{base}"
        out.append(base.replace("/msg/", "/"))
    return out


def definition(type_name: str) -> str:
    """Concatenated definition of 'pkg/msg/Type' and all its dependencies (depth first, each once)."""
    root = type_name.replace("/msg/", "/")
    text = msg_file(root).read_text()
    parts = [text.rstrip("\n")]
    seen = {root}
    stack = list(reversed(_field_types(text, root.split("/")[0])))
    order = []
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        order.append(t)
        sub = msg_file(t).read_text()
        stack.extend(reversed(_field_types(sub, t.split("/")[0])))
    for t in order:
        parts.append(f"{SEPARATOR}\nMSG: {t}\n{msg_file(t).read_text().rstrip(chr(10))}")
    return "\n".join(parts) + "\n"
