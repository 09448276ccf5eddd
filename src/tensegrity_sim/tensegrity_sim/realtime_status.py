"""Whether a paced simulation keeps real time: OK / WARN / ERROR from its measured lag and overruns (no ROS).

Fed once per diagnostics window with the pacer's running totals, plus the lag of each tick in between. The
verdict looks at the window (lag) and at the recent history (overruns and skipped simulated time in the last
``history_s`` wall seconds), so a run that overran a few seconds ago is not reported as keeping real time:

* OK: lag below ``warn_lag_s`` and no overrun and no skipped simulated time in the recent history;
* WARN: an overrun or skipped simulated time in the recent history, or lag at or above ``warn_lag_s``;
* ERROR: lag at or above ``error_lag_s``, or more than ``error_skip_fraction`` of the simulated time owed in
  the recent history skipped (owed over the whole ``history_s``, also while the run is younger).

Lag is the wall time the physics is owed when a tick starts (the pacer's ``due`` steps), and at the
diagnostics instant; a tick period's worth is normal, so both lag thresholds are at least 2 and 5 tick
periods. Levels are ints equal to ``diagnostic_msgs/DiagnosticStatus`` levels.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

OK, WARN, ERROR = 0, 1, 2


@dataclass
class Verdict:
    level: int
    message: str
    figures: str                    # "3 overruns, 0.4 s of simulated time skipped (4 %) in the last 10 s, lag 9 ms"
    values: dict = field(default_factory=dict)


def _delta(now: float, before: float) -> float:
    """Growth of a running total; a total that went down was restarted (counted from 0 again)."""
    return now - before if now >= before else now


class RealTimeStatus:
    def __init__(self, dt: float, tick_period: float, warn_lag_s: float = 0.05, error_lag_s: float = 0.25,
                 error_skip_fraction: float = 0.10, history_s: float = 10.0, wall_start: float | None = None):
        """dt: physics step [s of simulated time]; tick_period: wall seconds between ticks; wall_start: wall
        time [s] the pacer's totals count from (zero then); None: from the first ``assess``."""
        self.dt = float(dt)
        self.warn_lag = max(float(warn_lag_s), 2.0 * tick_period)
        self.error_lag = max(float(error_lag_s), 5.0 * tick_period)
        self.error_skip = float(error_skip_fraction)
        self.history_s = float(history_s)
        self._lags: list[float] = []            # lag at each tick of this window [s]
        self._history: deque = deque()          # (window start, end, overruns, skipped steps, owed steps)
        # (wall, overruns, skipped steps, owed steps) at the last call
        self._totals = None if wall_start is None else (float(wall_start), 0, 0, 0)

    def record_lag(self, lag_s: float):
        """The lag of one tick [wall s]."""
        self._lags.append(max(float(lag_s), 0.0))

    def assess(self, wall_now: float, overruns: int, skipped_steps: int, owed_steps: int,
               lag_now: float = 0.0) -> Verdict:
        """Close the window at ``wall_now`` [s] given the pacer's totals (overruns, skipped steps, steps owed
        = taken + skipped) and the lag now [s]; returns the level, a message with the figures and values."""
        lags = np.array(self._lags + [max(float(lag_now), 0.0)])
        self._lags = []
        start, o0, s0, n0 = self._totals or (wall_now, overruns, skipped_steps, owed_steps)
        self._totals = (wall_now, overruns, skipped_steps, owed_steps)
        window = (start, wall_now, _delta(overruns, o0), _delta(skipped_steps, s0), _delta(owed_steps, n0))
        self._history.append(window)
        while self._history and self._history[0][1] < wall_now - self.history_s:
            self._history.popleft()
        span = wall_now - self._history[0][0]
        recent_overruns = sum(w[2] for w in self._history)
        recent_skipped = self.dt * sum(w[3] for w in self._history)
        owed = self.dt * sum(w[4] for w in self._history)
        # over the whole history even while the run is younger (owed scaled to history_s): one overrun in the
        # first second is a WARN, not ERROR (0.2 s skipped of 1 s run would read 20 %)
        owed *= max(1.0, self.history_s / span) if span > 0 else 1.0
        fraction = recent_skipped / owed if owed > 0 else 0.0
        lag, lag_p99 = float(lags.max()), float(np.percentile(lags, 99))
        values = {
            "realtime_lag_max_ms": 1e3 * lag, "realtime_lag_p99_ms": 1e3 * lag_p99,
            "overruns_in_window": window[2], "skipped_sim_time_in_window_s": self.dt * window[3],
            "overruns_recent": recent_overruns, "skipped_sim_time_recent_s": recent_skipped,
            "skipped_fraction_recent": fraction, "recent_window_s": span,
            "realtime_warn_lag_ms": 1e3 * self.warn_lag, "realtime_error_lag_ms": 1e3 * self.error_lag,
            "realtime_error_skip_fraction": self.error_skip,
        }
        figures = (f"{recent_overruns} overruns, {recent_skipped:.3g} s of simulated time skipped "
                   f"({fraction:.0%}) in the last {span:.0f} s, lag {1e3 * lag:.0f} ms")
        if lag >= self.error_lag or fraction > self.error_skip:
            return Verdict(ERROR, f"far behind real time: {figures}", figures, values)
        if recent_overruns or recent_skipped > 0 or lag >= self.warn_lag:
            return Verdict(WARN, f"behind real time: {figures}", figures, values)
        return Verdict(OK, self._ok_message(overruns, skipped_steps), figures, values)

    def _ok_message(self, overruns: int, skipped_steps: int) -> str:
        """Steady while it holds (no changing figures: a status change is a log line for some listeners)."""
        if not overruns and not skipped_steps:
            return "running in real time"
        return (f"running in real time (no overrun in the last {self.history_s:g} s; {overruns} overruns, "
                f"{self.dt * skipped_steps:.3g} s skipped since the start)")
