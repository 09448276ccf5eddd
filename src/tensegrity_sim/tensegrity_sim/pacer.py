"""Real-time pacing of a fixed-step simulation against a monotonic wall clock (no ROS).

The number of physics steps owed is computed from a fixed wall-clock origin, so rounding never
accumulates (no drift). When the simulation falls behind by more than ``max_lag`` wall seconds it skips
the excess (the simulation runs slower than real time for that instant instead of spiralling) and counts
an overrun, which the node reports. The steps of one call are also capped by compute time (``max_lag``
wall seconds at the measured cost per step), so one call never blocks for long, whatever the rates.
"""
from __future__ import annotations

import math


class RealTimePacer:
    def __init__(self, dt: float, real_time_factor: float = 1.0, max_lag: float = 0.1):
        if not (dt > 0 and math.isfinite(dt)):
            raise ValueError(f"dt must be positive, got {dt}")
        if not (real_time_factor > 0 and math.isfinite(real_time_factor)):
            raise ValueError(f"real_time_factor must be positive, got {real_time_factor}")
        if not (max_lag > 0 and math.isfinite(max_lag)):
            raise ValueError(f"max_lag must be positive, got {max_lag}")
        self.dt = float(dt)
        self.rtf = float(real_time_factor)
        self.max_lag = float(max_lag)
        self.origin = None          # wall time [s] at which step 0 happened
        self.steps = 0              # steps taken (plus skipped) since the origin
        self.overruns = 0
        self.skipped_steps = 0
        self.max_lag_seen = 0.0     # wall seconds
        self.last_lag = 0.0         # wall seconds owed at the last steps_due call
        self.step_cost = 0.0        # wall seconds per step, smoothed (0: not measured yet)

    def start(self, wall_now: float):
        self.origin = float(wall_now)
        self.steps = 0

    def steps_due(self, wall_now: float) -> int:
        """Steps to take now so simulated time catches up with the wall clock."""
        if self.origin is None:
            self.start(wall_now)
        target = math.floor((wall_now - self.origin) * self.rtf / self.dt + 1e-9)
        due = target - self.steps
        self.last_lag = max(due, 0) * self.dt / self.rtf
        if due <= 0:
            return 0
        lag = self.last_lag
        self.max_lag_seen = max(self.max_lag_seen, lag)
        limit = max(1, int(self.max_lag * self.rtf / self.dt))
        if self.step_cost > 0:       # what fits in max_lag wall seconds of compute
            limit = min(limit, max(1, int(self.max_lag / self.step_cost)))
        else:                        # cost not known yet: a small first batch measures it
            limit = min(limit, 100)
        if due > limit:
            self.overruns += 1
            self.skipped_steps += due - limit
            self.steps += due - limit
            due = limit
        return due

    def done(self, steps: int, wall_seconds: float | None = None):
        """Record that ``steps`` were taken, in ``wall_seconds`` of compute if measured."""
        self.steps += int(steps)
        if wall_seconds is not None and steps > 0 and wall_seconds >= 0:
            cost = wall_seconds / steps
            self.step_cost = cost if self.step_cost == 0 else 0.8 * self.step_cost + 0.2 * cost

    def lag(self, wall_now: float) -> float:
        """Wall seconds the simulation is behind (negative: ahead) at ``wall_now``."""
        if self.origin is None:
            return 0.0
        return (wall_now - self.origin) - self.steps * self.dt / self.rtf

    def rebase(self, wall_now: float):
        """Continue from now without owing the time spent paused."""
        self.origin = float(wall_now) - self.steps * self.dt / self.rtf
