"""Declaring a node's parameters from its table ``{name: (default, description)}``."""
from __future__ import annotations

from rcl_interfaces.msg import ParameterDescriptor


def declare(node, table: dict, prefix: str = ""):
    """Declare every parameter of ``table`` on ``node`` (names prefixed with ``prefix``), with descriptions."""
    for name, (default, text) in table.items():
        node.declare_parameter(prefix + name, default, ParameterDescriptor(description=text))
