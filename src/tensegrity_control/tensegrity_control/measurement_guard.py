"""Which ``node_positions`` a controller may act on: only its own robot's (no ROS).

Two robots on one network without namespaces publish on one topic; a relay may mix their data; a tracker may
swap in a stray marker. A message is rejected (with the reason) when a value is infinite, every node is unseen,
a bar's measured length is off the model's by more than BAR_TOLERANCE (another model, a stray marker) or a node
moved farther since the last accepted message than any node of a rolling robot can in the time since the
previous message (another robot of the same model; that time from the middleware's arrival times or the header
stamps, never from when a stalled process got round to the message). While two or more publishers were heard within WINDOW, or for WINDOW after a rejected message, the
controller holds (:meth:`MeasurementGuard.hold_reason`): it cannot tell which data are its robot's. Positions
that stay consistent among themselves after a jump while the old ones have stopped for WINDOW (a restarted
simulator or tracker, a robot carried elsewhere) are taken as the robot's new place, and the command in force
is dropped (:meth:`MeasurementGuard.take_relocation`): a goal reached on another robot's data is no arrival.
"""
from __future__ import annotations

import math
import time

import numpy as np
from tensegrity_ros_common.publisher_window import PublisherWindow

WINDOW = 1.0            # s: a second publisher or a rejected message holds the controller this long after it
BAR_TOLERANCE = 0.03    # relative: the simulator's bars are rigid (error ~1e-12) and a tracked node is fitted to
#                         ~1 cm (0.7 % of a 1.5 m bar), so 3 % is 4x that and still flags a model 5 % larger
JUMP_MARGIN = 0.1       # of the mean bar length: noise and messages queued together under CPU load (0.15 m on
#                         the 1.5 m six-bar: a node tipping at 0.5 m/s moves that in 0.3 s of queue)
GRAVITY = 9.81          # m/s^2


class MeasurementGuard:
    """Checks each node_positions message (all model nodes (n,3) [m], NaN rows unseen) of ``model`` against
    the model and the last accepted one; ``clock`` the monotonic time [s] of receipt."""

    def __init__(self, model, clock=time.monotonic):
        self.model = model
        self.clock = clock
        size = float(np.mean(model.bar_length)) if len(model.bar_length) else 1.0
        # m/s: twice the speed of a fall from the robot's size, faster than any node of a robot on the ground
        self.max_speed = 2.0 * math.sqrt(2.0 * GRAVITY * size)
        self.margin = JUMP_MARGIN * size
        self.window = PublisherWindow(WINDOW, clock)   # node_positions publishers heard lately
        self.ref = None                  # (X, time [s]) of the last accepted message
        self.last_at = (-math.inf, 0.0)  # (arrival [s], header stamp [s]) of the last message checked for motion
        self.candidate = None            # (X, since [s]) of positions consistent among themselves after a jump:
        #                                  the last of them, and when the first came
        self.problem, self.problem_at = "", -math.inf
        self.relocated = False

    def heard(self, source):
        """A node_positions message came from publisher ``source`` (any hashable identity; None if the
        middleware gives none), good or not."""
        self.window.heard(source)

    def accept(self, X, waited: float = 0.0, stamp: float = 0.0) -> np.ndarray:
        """X (n,3) [m] if it is this robot's, else ValueError saying why (noted: the controller holds).
        ``waited`` [s]: how long the message waited in this process's queue (a process stalled by a loaded CPU
        takes messages late and must not count the stall as time the robot moved); ``stamp`` [s]: its header
        stamp (0: none)."""
        try:
            self.check_values(X)
            self.check_motion(np.asarray(X, float), self.clock() - max(0.0, waited), stamp)
        except ValueError as exc:
            self.rejected(str(exc))
            raise
        return X

    def rejected(self, why: str):
        """A message was not this robot's (``why``; also one the node rejected itself): hold for WINDOW."""
        self.problem, self.problem_at = why, self.clock()

    def check_values(self, X):
        """ValueError for infinite values, no node seen, or a bar whose length is not the model's."""
        X = np.asarray(X, float)
        if np.any(np.isinf(X)):
            raise ValueError("node_positions has an infinite coordinate (NaN marks an unseen node)")
        seen = np.all(np.isfinite(X), axis=1)
        if not seen.any():
            raise ValueError("every node is unseen (NaN)")
        bars = self.model.bars[seen[self.model.bars].all(axis=1)]
        if len(bars):
            length = np.linalg.norm(X[bars[:, 0]] - X[bars[:, 1]], axis=1)
            expected = self.model.bar_length[seen[self.model.bars].all(axis=1)]
            off = np.abs(length - expected) / expected
            k = int(np.argmax(off))
            if off[k] > BAR_TOLERANCE:
                names = self.model.node_names
                raise ValueError(f"bar {names[bars[k, 0]]}-{names[bars[k, 1]]} measures {length[k]:.3f} m, model "
                                 f"'{self.model.name}' has {expected[k]:.3f} m (off by more than "
                                 f"{100 * BAR_TOLERANCE:.0f} %): another robot's data or a stray marker?")

    def check_motion(self, X, now: float, stamp: float = 0.0):
        """ValueError when a node moved farther since the last accepted message than the robot can in the time
        since the last message (of any source: a rejected one too, so the allowance does not grow while
        another robot's data come): the arrival times' difference, or the stamps' if smaller (both stamped)."""
        (last, last_stamp), self.last_at = self.last_at, (now, stamp)
        if self.ref is None:
            self.ref = (X, now)
            return
        moved = largest_move(self.ref[0], X)
        dt = max(0.0, now - last)        # arrival less the wait in the queue may reorder messages by a few ms
        if stamp > 0.0 and last_stamp > 0.0 and stamp > last_stamp:
            dt = min(dt, stamp - last_stamp)
        if moved <= self.margin + self.max_speed * dt:
            self.ref, self.candidate = (X, now), None
            return
        c = self.candidate
        if c is None or largest_move(c[0], X) > self.margin + self.max_speed * dt:
            self.candidate = (X, now)
        elif now - c[1] >= WINDOW and now - self.ref[1] >= WINDOW:   # the old data stopped, these go on
            self.ref, self.candidate, self.relocated = (X, now), None, True
            return
        else:
            self.candidate = (X, c[1])
        raise ValueError(f"a node jumped {moved:.2f} m in {dt:.2f} s, faster than the robot moves "
                         f"({self.max_speed:.1f} m/s): another robot's data on this topic, or the robot was "
                         f"moved (taken as its new place once only such data come for {WINDOW:g} s)")

    def publishers(self) -> int:
        """How many node_positions publishers were heard within WINDOW."""
        return self.window.count()

    def hold_reason(self) -> str:
        """Why the controller must not act on the positions now ('' when it may)."""
        if self.publishers() > 1:
            return (f"node_positions comes from {self.publishers()} publishers (two robots' simulators or trackers "
                    "on one topic?): cannot tell which is this robot; give each robot its own namespace")
        age = self.clock() - self.problem_at
        if age <= WINDOW:
            return (f"node_positions rejected {age:.2f} s ago ({self.problem}); holding until they are good for "
                    f"{WINDOW:g} s")
        return ""

    def take_relocation(self) -> bool:
        """True once after the robot's positions were taken at a new place (the command must be dropped)."""
        moved, self.relocated = self.relocated, False
        return moved


def largest_move(A, B) -> float:
    """[m] the largest distance between the rows of A and B (n,3) seen (finite) in both (0 if none is)."""
    both = np.all(np.isfinite(A), axis=1) & np.all(np.isfinite(B), axis=1)
    return float(np.linalg.norm(A[both] - B[both], axis=1).max()) if both.any() else 0.0
