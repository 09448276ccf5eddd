"""The live view's numeric streams (pure): JSON schemas and messages of tensions, inputs, clearance,
odometry and the safety stop, plus the small bookkeeping the node does between ticks (tension scale over a
window, measured rate, path so far)."""
from __future__ import annotations

import collections
import math
import time

import numpy as np


# The Foxglove app and Lichtblick read a JSON schema's fields from "properties", each with ONE type: a type list
# (["number", "null"]) fails the whole channel, an object without "properties" crashes Foxglove 1.x. A null value
# still passes (shown as no value); names known only at run time (strings, actuators) come as extra properties.
def _numbers_schema(title: str, description: str) -> dict:
    return {"title": title, "description": description, "type": "object",
            "properties": {}, "additionalProperties": {"type": "number"}}


def named_schema(schema: dict, names) -> dict:
    """``schema`` (of /tensions or /inputs) with one number property per name (the model's strings or
    actuators), so the apps' plot path editors offer /tensions.<name>."""
    return dict(schema, properties={str(n): {"type": "number"} for n in names})


TENSIONS_SCHEMA = _numbers_schema("tensions [N]", "string name -> tension [N] (string_states effort)")
INPUTS_SCHEMA = _numbers_schema("inputs [rad]", "actuator name -> motor angle [rad] (joint_states position)")
CLEARANCE_SCHEMA = {
    "title": "clearance [m]", "type": "object",
    "properties": {"min_m": {"type": "number", "description": "smallest clearance between elements [m]"},
                   "min_obstacle_m": {"type": "number", "description": "smallest bar-obstacle clearance [m]"},
                   "closest_pair": {"type": "string", "description": "the closest pair, e.g. b1-b4"}}}
ODOMETRY_SCHEMA = {
    "title": "odometry [m, rad, m/s]", "type": "object",
    "properties": {k: {"type": "number"} for k in ("x", "y", "z", "yaw_rad", "vx", "vy", "speed_m_s")}}
SAFETY_SCHEMA = {
    "title": "safety stop", "type": "object",
    "properties": {"stopped": {"type": "boolean", "description": "the collision monitor's safety_stop"},
                   "since_s": {"type": "number", "description": "seconds since it last changed"}}}


def named_values(names, values) -> dict:
    """{name: value} of two equally long sequences (extra entries of the longer are left out)."""
    return {str(n): float(v) for n, v in zip(names, values)}


def yaw_of(qx: float, qy: float, qz: float, qw: float) -> float:
    """Heading [rad] (rotation about z) of a unit quaternion."""
    return math.atan2(2.0 * (qw * qz + qx * qy), 1.0 - 2.0 * (qy * qy + qz * qz))


def odometry_values(position, orientation, linear) -> dict:
    """The /odometry JSON from position (3,) [m], orientation (x, y, z, w) and linear velocity (3,) [m/s]
    (body frame: the planar speed and velocity in the world follow from the heading)."""
    x, y, z = (float(v) for v in position)
    yaw = yaw_of(*(float(v) for v in orientation))
    bx, by = float(linear[0]), float(linear[1])
    vx, vy = bx * math.cos(yaw) - by * math.sin(yaw), bx * math.sin(yaw) + by * math.cos(yaw)
    return {"x": x, "y": y, "z": z, "yaw_rad": yaw, "vx": vx, "vy": vy, "speed_m_s": math.hypot(vx, vy)}


class WindowMax:
    """The largest value seen over the last ``window`` seconds (at least ``floor``): the tension colour scale."""

    def __init__(self, window: float = 10.0, floor: float = 1.0):
        self.window, self.floor = float(window), float(floor)
        self.samples = collections.deque()          # (time [s], max of one update)

    def update(self, values, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        v = np.asarray(values, float)
        v = v[np.isfinite(v)]
        if len(v):
            self.samples.append((now, float(v.max())))
        while self.samples and self.samples[0][0] < now - self.window:
            self.samples.popleft()
        return max([self.floor] + [m for _, m in self.samples])


class RateMeter:
    """Events per second over the last ``window`` seconds."""

    def __init__(self, window: float = 2.0):
        self.window = float(window)
        self.times = collections.deque()

    def tick(self, now: float | None = None):
        self.times.append(time.monotonic() if now is None else now)

    def rate(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        while self.times and self.times[0] < now - self.window:
            self.times.popleft()
        return len(self.times) / self.window


class Path:
    """Positions (k, 3) [m] so far, at most ``length`` (the oldest dropped), one kept per ``step`` m moved."""

    def __init__(self, length: int, step: float = 0.005):
        self.points = collections.deque(maxlen=max(int(length), 2))
        self.step = float(step)

    def add(self, p):
        p = np.asarray(p, float)
        if not np.all(np.isfinite(p)):
            return
        if not self.points or np.linalg.norm(p - self.points[-1]) >= self.step:
            self.points.append(p)

    def array(self) -> np.ndarray:
        return np.array(self.points).reshape(-1, 3)
