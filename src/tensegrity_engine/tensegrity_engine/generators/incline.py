"""A robot on an inclined plane: :func:`on_incline` tilts a document lying on its ground plane ``z = 0``
(:func:`.mobile.on_ground`) together with that plane, gravity unchanged (along -z), so the robot lies on the
slope as it lay on the level ground (not yet settled: :func:`tensegrity_engine.locomotion.closed_loop.at_rest`)."""
from __future__ import annotations

import math

import numpy as np
from scipy.spatial.transform import Rotation


def incline_rotation(slope: float, uphill: float = 0.0) -> Rotation:
    """The rotation that tilts the level ground by ``slope`` [rad] so that it rises toward the world heading
    ``uphill`` [rad] (0 = +x, counter-clockwise): about the horizontal axis at ``uphill`` + 90°."""
    axis = np.array([-math.sin(uphill), math.cos(uphill), 0.0])
    return Rotation.from_rotvec(-slope * axis)


def on_incline(doc: dict, slope: float, uphill: float = 0.0) -> dict:
    """The document ``doc`` (on its ground plane z = 0 through the origin) and that plane tilted by ``slope``
    [rad] about the horizontal line through the origin, rising toward ``uphill`` [rad]. Raises ValueError
    for a document without a plane or a slope outside [0, 90°)."""
    if not 0.0 <= slope < math.pi / 2:
        raise ValueError(f"slope {math.degrees(slope):g}° must lie in [0, 90°)")
    planes = [o for o in doc.get("obstacles", []) if o.get("type") == "plane"]
    if not planes:
        raise ValueError(f"document '{doc.get('name')}' has no ground plane to tilt (generators.on_ground(doc))")
    R = incline_rotation(slope, uphill)
    out = dict(doc)
    out["nodes"] = [dict(n, position=[float(v) for v in R.apply(n["position"])]) for n in doc["nodes"]]
    out["obstacles"] = [dict(o, normal=[float(v) for v in R.apply(o.get("normal", [0.0, 0.0, 1.0]))],
                             point=[float(v) for v in R.apply(o.get("point", [0.0, 0.0, 0.0]))])
                        if o.get("type") == "plane" else dict(o) for o in doc["obstacles"]]
    return out
