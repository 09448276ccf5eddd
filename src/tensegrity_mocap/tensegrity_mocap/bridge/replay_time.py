"""Time of a Motive CSV replay (no ROS): header stamps from the capture's own clock and pacing.

A replay's messages carry the time the frame was **captured**, whatever the replay speed or the machine's
load (a wall-clock publish time would stretch or squeeze the take):

* ``capture``: the stamp is the frame's capture time itself, the CSV's ``Time (Seconds)`` column [s]
  (to the nanosecond); with ``csv.publish_clock`` the same time goes out on ``/clock`` before each frame,
  for consumers with ``use_sim_time``;
* ``replay_start`` (default): the stamp is the wall time when the replay started plus ``t - t_first``:
  the capture's intervals exactly, on the clock the other nodes use.

Looping (``csv.loop``): pass ``k`` (0, 1, ...) adds ``k`` times the loop's span to the capture time, the
span being the take's duration plus one frame period (``t_last - t_first + 1/frame_rate``): the first
frame of a loop comes one frame period after the last frame of the previous one, so stamps never go
backwards and keep the capture's intervals across the seam.

Pacing: frame ``t`` of pass ``k`` is due ``(t - t_first + k * span) / rate_scale`` seconds after the
replay started (``rate_scale`` 0: as fast as possible, nothing waits). A replay that falls behind (a
loaded machine) does not sleep until it has caught up, and the stamps are unaffected either way.
"""
from __future__ import annotations

import math

import numpy as np

STAMP_MODES = ("replay_start", "capture")


def frame_period(times, frame_rate: float) -> float:
    """Seconds between frames: 1 / ``frame_rate`` if that is a positive finite rate, else the median step
    of ``times`` (0 for a single frame)."""
    if frame_rate and math.isfinite(frame_rate) and frame_rate > 0:
        return 1.0 / float(frame_rate)
    steps = np.diff(np.asarray(times, float))
    steps = steps[steps > 0]
    return float(np.median(steps)) if len(steps) else 0.0


def seconds_to_ns(t: float) -> int:
    """Seconds -> integer nanoseconds, rounded to the nearest (a capture time of 1.008333 s becomes
    1 008 333 000 ns, not 1 008 332 999)."""
    return int(round(float(t) * 1e9))


class ReplayTime:
    """Stamps [ns] and due times [s since the replay started] of the frames of one recording.

    ``times`` (T,) [s] the capture times (non-decreasing), ``frame_rate`` [Hz] (for the loop seam),
    ``mode`` one of :data:`STAMP_MODES`, ``rate_scale`` (0: as fast as possible), ``start_ns`` the wall
    time [ns] the replay started (used by ``replay_start``)."""

    def __init__(self, times, frame_rate: float, mode: str = "replay_start", rate_scale: float = 1.0,
                 start_ns: int = 0):
        times = np.asarray(times, float)
        if mode not in STAMP_MODES:
            raise ValueError(f"csv.stamps must be one of {', '.join(STAMP_MODES)}, got {mode!r}")
        if not (math.isfinite(rate_scale) and rate_scale >= 0):
            raise ValueError(f"rate_scale must be finite and >= 0, got {rate_scale}")
        self.mode = mode
        self.rate_scale = float(rate_scale)
        self.start_ns = int(start_ns)
        self.t_first = float(times[0]) if len(times) else 0.0
        self.t_last = float(times[-1]) if len(times) else 0.0
        self.span = self.t_last - self.t_first + frame_period(times, frame_rate)    # s, one pass of a loop

    def elapsed(self, t: float, k: int = 0) -> float:
        """Capture seconds from the replay's first frame to frame ``t`` of pass ``k``."""
        return float(t) - self.t_first + k * self.span

    def stamp_ns(self, t: float, k: int = 0) -> int:
        """Header stamp [ns] of frame ``t`` [s] of pass ``k`` (see the module docstring)."""
        if self.mode == "capture":
            return seconds_to_ns(float(t) + k * self.span) if k else seconds_to_ns(t)
        return self.start_ns + seconds_to_ns(self.elapsed(t, k))

    def due(self, t: float, k: int = 0) -> float:
        """Seconds after the replay's start at which frame ``t`` of pass ``k`` is published (0 when the
        replay runs as fast as possible)."""
        return self.elapsed(t, k) / self.rate_scale if self.rate_scale > 0 else 0.0


def stamp_msg(ns: int):
    """builtin_interfaces/Time of ``ns`` >= 0 nanoseconds."""
    from builtin_interfaces.msg import Time
    ns = int(ns)
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)
