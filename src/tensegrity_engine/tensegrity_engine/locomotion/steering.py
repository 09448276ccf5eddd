"""Where to tip next: the commanded line a heading is held on, the choice among the workable tips of a face, and
the rest between tips that meets a commanded speed. Pure geometry on the ground plane (xy) [m]; no dynamics.

A rolling robot moves in discrete tips whose directions are the normals of its support polygon's edges, so it
cannot follow a heading exactly: it zig-zags, and from most faces only one edge points forward. Each tip is
chosen by where it ends (the end of its check run, moved with the robot): in heading mode as the first of the
sequence of tips (a few ahead, over the faces they lead to) that keeps the robot nearest the commanded line
while it moves along it (:func:`best_first`), so sideways drift is corrected before it builds up; in goal mode
as the tip ending nearest the goal."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tensegrity_engine.locomotion.support import angle_between

RELINE = math.radians(10.0)     # rad: a heading change beyond this starts a new line from where the robot is


@dataclass(frozen=True)
class Line:
    """The commanded line: through ``origin`` (2,) [m] along ``heading`` [rad] (world, 0 = +x, counter-clockwise)."""
    origin: np.ndarray
    heading: float

    @property
    def unit(self) -> np.ndarray:
        return np.array([math.cos(self.heading), math.sin(self.heading)])

    def offsets(self, c) -> tuple:
        """(along, cross) [m]: how far the point c (2,) lies along the line from its origin, and to its left."""
        d = np.asarray(c, float) - self.origin
        u = self.unit
        return float(u @ d), float(u[0] * d[1] - u[1] * d[0])

    def point(self, along: float) -> np.ndarray:
        return self.origin + along * self.unit


def follow(line: Line | None, heading: float, c) -> Line:
    """The line for a (new) commanded ``heading`` [rad] with the robot's centre of mass at c (2,) [m]: the same
    line while the heading stays within RELINE of it (a repeated cmd_vel), turned about the robot's foot point
    on it for a small change (so a slow turn keeps the sideways offset to correct), a new line through c for a
    larger one."""
    c = np.asarray(c, float)
    if line is None or angle_between(heading, line.heading) > RELINE:
        return Line(c.copy(), float(heading))
    if heading == line.heading:
        return line
    return Line(line.point(line.offsets(c)[0]), float(heading))


def best_first(line: Line, c, sequences: list, least: float, back: tuple = ()):
    """The first tip of the best of ``sequences`` [(first tip, [centre of mass (2,) [m] after each tip])] from c
    (2,) [m]: the one whose stops lie nearest ``line`` (least sum of squared sideways offsets) among those
    that get at least ``least`` [m] along it (the robot neither stalls nor circles to stay on the line), else
    the one that gets farthest. Sequences whose first tip goes back to the face ``back`` the robot came from are
    weighed only if nothing else is left: judged from the next face the same way, the way forward looks as it
    did before, and the robot tipped back and forth between two faces."""
    ahead = [q for q in sequences if tuple(q[0].face_to) != tuple(back)] or sequences
    along0 = line.offsets(c)[0]
    scored = [(q[0], sum(line.offsets(e)[1] ** 2 for e in q[1]), line.offsets(q[1][-1])[0] - along0)
              for q in ahead]
    moving = [q for q in scored if q[2] >= least]
    best = min(moving, key=lambda q: q[1]) if moving else max(scored, key=lambda q: q[2])
    return best[0]


def cycle_time(step, rate: float, rest: float) -> float:
    """[s] one tip with no extra rest: its waypoints, the inputs' ramp back to zero at ``rate`` [m/s], the ``rest``
    [s] the robot must lie still before the next tip."""
    back = float(np.abs(step.u[-1]).max()) / rate if rate > 0 else 0.0
    return float(step.times[-1]) + back + rest


def dwell_for(speed: float | None, step, rate: float, rest: float) -> tuple:
    """(dwell [s], the fastest speed [m/s] the gait reaches with ``step``): how much longer than ``rest`` the
    robot waits on the face ``step`` leads to so that its centre of mass moves at ``speed`` [m/s] on average
    (None, or at or above the fastest: 0, capped). The tip itself is never slowed: a planned tip may need the
    momentum of its ramps to go over the edge."""
    cycle = cycle_time(step, rate, rest)
    travel = step.travel if math.isfinite(step.travel) else 0.0
    fastest = travel / cycle if cycle > 0 else math.inf
    if speed is None or speed >= fastest or travel <= 0:
        return 0.0, fastest
    return travel / speed - cycle, fastest
