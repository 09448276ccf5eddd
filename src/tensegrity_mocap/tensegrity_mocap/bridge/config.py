"""Configuration of the mocap bridge that needs no ROS: the addresses of the NatNet stream. Marker labels and
the marker map: :mod:`tensegrity_mocap.tracking.labels`."""
from __future__ import annotations


def check_address(name: str, value: str) -> str:
    """An IPv4 address in dotted form (Motive's addresses are numeric), else ValueError naming it."""
    import ipaddress
    try:
        return str(ipaddress.IPv4Address(str(value).strip()))
    except ValueError:
        raise ValueError(f"parameter '{name}' must be an IPv4 address like 192.168.1.10, got {value!r}") from None

