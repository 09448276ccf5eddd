"""PoseController: the pure (clock-free, ROS-free) plate-pose controller a ROS node wraps.

Each :meth:`PoseController.update` computes

* the reference pose at time t (a goal, or a smooth trajectory: :class:`.pose_path.PosePath`), taken at
  t plus the shaper's mean delay (below) so that the shaped commands keep the trajectory's timing;
* the feed-forward ``u_ff`` (:class:`.feed_forward.FeedForward`): exact inverse statics when the reference
  comes to rest (a goal; a trajectory's end is solved when the trajectory is set, which also decides its
  reachability), warm-started; for an unreachable reference the nearest reachable pose ``C_ff``. While a
  trajectory moves the reference, the static map linearised at the last equilibrium, bounded by the limits
  (re-linearised every 2 mm: ~10 ms, instead of a 0.2..1.5 s solve; an exact solve only for a reference
  30 mm or more away);
* the feedback: an integral ``u_i += k_i dt z_f`` of ``z = u_w - u_t`` low-pass filtered (first order, time
  constant ``filter_time``) into ``z_f``, with ``u_t = u_ff + u_i`` the inputs aimed at and ``u_w`` the
  inputs that would put the plant at ``C_ff`` (what the model promises for ``u_ff``): the measured pose,
  moved by the output's lag ``J (u_t - u)`` (``u`` the last output, J the pose Jacobian), has the error
  ``e`` to ``C_ff``, and ``u_w = u_t + δ`` with δ the damped least-squares answer to ``J δ = e``, bounded
  by the actuator limits (:meth:`.FeedForward.wanted`). So the integral stops where the measured pose is
  ``C_ff`` (to the damping), whatever the model error; the lag (shaping, rate limits) winds nothing up;
  while the output lags by more than the linearisation's range (2 mm of pose) or is rate-limited, nothing
  is integrated; and along a direction the limits block (an unreachable goal's nearest pose has actuators
  at their limits) nothing is asked for. ``u_i`` also stays within ``[lo - u_ff, hi - u_ff]``. The filter
  averages the measurement noise;
* the output: ``u_ff + u_i`` clamped to the actuator limits, moved from the last command by at most
  ``max_rate dt`` and ``max_step`` per call, then input-shaped (:mod:`.shaping`: ZVD shapers for the modes
  the plate rings in, from the modal analysis at the feed-forward's equilibrium, re-derived at every exact
  solve), so the commands excite none of the lightly damped modes (the manipulator's 1.5 Hz mode has a
  damping ratio of 0.002) and the feedback loop does not see them either. The shaped command is an
  average of past commands (within the limits, no faster); it is clipped to the step limits once more only
  for uneven update intervals.

The first call has dt = 0 and therefore returns ``u_start`` (default 0, the inputs the robot holds). The
status tells when the plate has arrived (:meth:`PoseController._track_arrival`).
"""
from __future__ import annotations

import numpy as np

from tensegrity_engine.control.arrival import ArrivalWindow
from tensegrity_engine.control.feed_forward import FeedForward
from tensegrity_engine.control.inverse import ANGLE_TOL, POSITION_TOL
from tensegrity_engine.control.pose import check_pose, misses, moved_pose, plate_size, pose_error
from tensegrity_engine.control.pose_path import PosePath
from tensegrity_engine.control.shaping import InputShaper, plate_modes, shaper_for
from tensegrity_engine.control.static_map import clamp_inputs, initial_state, require_actuators

# s: the plate counts as arrived after staying within the tolerances this long, judged on the measured
# poses of this window (1.5 periods of the manipulator's 1.5 Hz mode: a swing shows in the fit; at 50 Hz,
# 50 samples average 0.5 mm of noise per marker to ~0.04 mm and ~0.03 deg), or of the last 30 measured if
# they span longer (slower updates: control/arrival.py)
SETTLE_WINDOW = 1.0


class PoseController:
    """Feed-forward (inverse statics) plus filtered integral feedback on the measured pose of ``frame``.

    ``max_rate`` [m/s] and ``max_step`` [m] limit how fast the output moves; ``integral_gain`` [1/s] sets
    how fast the feedback removes a pose error (time constant ~1/k_i); ``filter_time`` [s] is the feedback's
    low-pass time constant; ``length_scale`` [m] weighs angles against positions (default: the plate's
    size); ``u_start`` (alpha,) [m] the inputs held before the first update; ``position_tol`` [m] and
    ``angle_tol`` [rad] decide whether a goal counts as reachable and the plate as arrived; ``shaping``
    shapes the output (module docstring)."""

    def __init__(self, model, frame: str, max_rate: float = 0.01, max_step: float = 0.002, *,
                 integral_gain: float = 0.5, filter_time: float = 0.5, length_scale: float | None = None, u_start=None,
                 position_tol: float = POSITION_TOL, angle_tol: float = ANGLE_TOL, shaping: bool = True):
        require_actuators(model)
        for name, v in (("max_rate", max_rate), ("max_step", max_step), ("integral_gain", integral_gain),
                        ("filter_time", filter_time)):
            if not (np.isfinite(v) and v > 0):
                raise ValueError(f"PoseController: {name} must be a finite number > 0, got {v}")
        self.model, self.frame = model, frame
        self.max_rate, self.max_step, self.integral_gain = float(max_rate), float(max_step), float(integral_gain)
        self.filter_time, self.shaping = float(filter_time), bool(shaping)
        self._tol = (position_tol, angle_tol)
        start = initial_state(model)
        self.scale = plate_size(model, frame, start.X) if length_scale is None else float(length_scale)
        self._ff = FeedForward(model, frame, self.scale, self._tol, start)
        na = len(model.actuator_names)
        self.u = clamp_inputs(model, np.zeros(na) if u_start is None else u_start)
        self._raw = self.u.copy()                    # the rate-limited command before shaping
        self._target = self.u.copy()                 # what the rate limits move it toward
        self._limited = False                        # the rate limits held the last command back
        self._shaper = InputShaper()
        self.u_integral = np.zeros(na)
        self._filtered = np.zeros(na)
        self._path: PosePath | None = None
        self._pending = None             # (times, poses) set before the first update: anchored at its t
        self._ref = None                 # the reference the feed-forward is for
        self._t = None
        self._within_since = None        # time [s] since when the output has been at rest (no measurement)
        self._window = ArrivalWindow(SETTLE_WINDOW)      # the measured pose errors since the plate came to rest
        self._swing_hz = None            # the frequency [Hz] of the mode the plate rings in most
        self._end = None                 # the exact solve of the path's end, made when the path came
        self._before = None              # the state before the last update (not_sent takes it back)
        self._status = {"goal": None, "error_position": float("nan"), "error_angle": float("nan"),
                        "reachable": False, "miss_position": float("nan"), "miss_angle": float("nan"),
                        "message": "no goal", "nearest": None, "solves": 0, **self._not_arrived()}

    @staticmethod
    def _not_arrived() -> dict:
        return {"arrived": False, "arrived_at": float("nan"), "arrived_pose": None}

    def set_goal(self, pose):
        """Go to the 4x4 world pose ``pose`` (a step in the reference; the output's rate limits smooth it)."""
        self.set_trajectory([0.0], [check_pose(pose)])

    def set_trajectory(self, times, poses):
        """Follow poses (K, 4, 4) at times (K,) [s from now] (the next update's t if none came yet), smooth in
        between (minimum-jerk, slerp). A first time after 0 starts from the pose the plate is being sent to
        now (the current reference, or, if that is unreachable, its nearest reachable pose)."""
        times = np.asarray(times, float).ravel()
        poses = np.asarray(poses, float)
        PosePath(times, poses)                           # validate now: the caller learns of bad input here
        self._pending = (times, poses)
        if self._t is not None:
            self._anchor(self._t)

    def _anchor(self, t0: float):
        times, poses = self._pending
        self._pending = None
        if times[0] > 0 and self._ff.promised is not None:
            current = self._ff.promised if self._path is None else self._path.at(t0)
            if self._ff.exact is not None and not self._ff.exact.reachable:
                current = self._ff.exact.pose            # the plate was sent to the nearest pose, not there
            times, poses = np.r_[0.0, times], np.concatenate([current[None], poses])
        self._path = PosePath(t0 + times, poses)
        self._status.update(goal=self._path.poses[-1].copy(), **self._not_arrived())
        self._within_since = None
        self._window.clear()
        self._end = None
        if self._path.end > t0:                           # a path: its end decides its reachability, now
            self._end = self._ff.check(self._path.poses[-1])
            self._report_goal(self._end)

    def _report_goal(self, res):
        """Status of the goal (the path's end) from its exact solve ``res``: reachable, miss, nearest pose."""
        self._status.update(reachable=res.reachable, miss_position=res.miss_position, miss_angle=res.miss_angle,
                            message=res.message, nearest=res.pose.copy(), solves=self._status["solves"] + 1)

    def update(self, t: float, measured_pose=None) -> np.ndarray:
        """The inputs u (alpha,) [m] to command at time t [s], given the measured 4x4 pose of the frame (None,
        or a pose with NaN as from lost markers: feed-forward only, the integral held)."""
        self._before = self._output_state()
        dt = 0.0 if self._t is None else max(float(t) - self._t, 0.0)
        self._t = float(t)
        if self._pending is not None:
            self._anchor(self._t)
        if self._path is None:
            return self._output(self.u, dt)
        ahead = self._t + self._shaper.delay          # the shaper delays a smooth path by this: lead it
        self._feed_forward(self._path.at(ahead), moving=ahead < self._path.end)
        measured = None
        if measured_pose is not None and np.all(np.isfinite(measured_pose)):
            measured = check_pose(measured_pose)
            self._integrate(measured, dt)
            dp, da = misses(measured, self._path.at(self._t))
            self._status.update(error_position=dp, error_angle=da)
        u = self._output(clamp_inputs(self.model, self._ff.u + self.u_integral), dt)
        self._track_arrival(measured)
        return u

    def not_sent(self):
        """The output of the last :meth:`update` was never sent (a safety gate closed while it was computed): its
        time, output, shaper history and feedback are taken back, so the next output moves from the last one
        sent, within ``max_step`` and ``max_rate`` times the time since that one."""
        if self._before is not None:
            (self._t, self.u, self._raw, self._target, self._limited, history, self.u_integral, self._filtered,
             self._within_since, arrival) = self._before
            self._shaper.restore(history)
            self._status.update(arrival)
            self._before = None

    def sent(self, t: float):
        """The output of the last :meth:`update` went out at time ``t`` [s] (later than the update's time when
        the update took long, e.g. an exact solve): the next output's rate limit counts from then, so the
        rate holds between the commands as sent, not only as computed."""
        if self._t is not None:
            self._t = max(self._t, float(t))
        self._before = None

    def _output_state(self) -> tuple:
        """What one update changes besides the reference and the feed-forward (for :meth:`not_sent`)."""
        arrival = {k: self._status[k] for k in self._not_arrived()}
        return (self._t, self.u.copy(), self._raw.copy(), self._target.copy(), self._limited, self._shaper.history,
                self.u_integral.copy(), self._filtered.copy(), self._within_since, arrival)

    def _output(self, target, dt: float) -> np.ndarray:
        """Rate-limit toward ``target``, shape, and keep the step limits."""
        self._target = target
        limit = min(self.max_step, self.max_rate * dt)
        self._limited = bool(np.any(np.abs(target - self._raw) > limit))
        self._raw = clamp_inputs(self.model, self._raw + np.clip(target - self._raw, -limit, limit))
        shaped = self._shaper(self._t, self._raw)
        self.u = clamp_inputs(self.model, self.u + np.clip(shaped - self.u, -limit, limit))
        return self.u.copy()

    def _feed_forward(self, reference, moving: bool):
        if self._ref is not None and np.array_equal(reference, self._ref):
            return
        self._ref = reference
        if moving and self._ff.follow(reference) is not None:
            return
        if not moving and self._end is not None and np.array_equal(reference, self._path.poses[-1]):
            res = self._ff.adopt(self._end)               # solved when the path came
        else:
            res = self._ff.solve(reference)
        modes = plate_modes(self.model, self.frame, res.state)
        if self.shaping:
            self._shaper.set_shaper(shaper_for(modes, self.max_rate, *self._tol))
        strongest = max(modes, key=lambda m: m.ringing_position / self._tol[0] + m.ringing_angle / self._tol[1],
                        default=None)
        self._swing_hz = None if strongest is None else strongest.frequency_hz
        if not moving and self._end is None:              # a goal (a path's end was solved when it came)
            self._report_goal(res)

    def _integrate(self, measured, dt: float):
        target = self._ff.u + self.u_integral                 # within the limits (u_integral is clipped)
        if self._limited or not self._ff.near(self.u, target):     # the output far behind: wait
            return
        z = self._ff.wanted(measured, self.u, target) - target
        self._filtered += dt / (self.filter_time + dt) * (z - self._filtered)
        lo, hi = self.model.u_limits[:, 0] - self._ff.u, self.model.u_limits[:, 1] - self._ff.u
        self.u_integral = np.clip(self.u_integral + self.integral_gain * dt * self._filtered, lo, hi)

    def _track_arrival(self, measured):
        """Arrived: the reference at rest and the rate limits no longer holding the output back, and the
        measured poses of the last SETTLE_WINDOW, fitted with an offset and a swing at the plate's strongest
        mode, within the tolerances of the feed-forward's pose at every phase (:mod:`.arrival`: measurement
        noise averages out; the arrival pose is the fitted offset). Without a measurement at rest:
        SETTLE_WINDOW after the shaped output has arrived. Once per goal or trajectory."""
        if self._status["arrived"]:
            return
        if not (self._t >= self._path.end and np.allclose(self._target, self._raw, rtol=0.0, atol=1e-12)):
            self._within_since = None
            self._window.clear()
            return
        self._within_since = self._t if self._within_since is None else self._within_since
        if measured is not None:
            self._window.add(self._t, pose_error(measured, self._ff.promised))
            ok, offset = self._window.judge(self._swing_hz, *self._tol)
            if ok:
                self._arrive(moved_pose(self._ff.promised, -offset))
        elif self._window.empty and self._t - self._within_since >= SETTLE_WINDOW + self._shaper.duration:
            self._arrive(self._ff.promised)

    def _arrive(self, pose):
        self._status.update(arrived=True, arrived_at=self._t, arrived_pose=np.array(pose, float))

    @property
    def status(self) -> dict:
        """``goal`` (4x4 or None), ``error_position`` [m] / ``error_angle`` [rad] (measured vs reference, NaN
        before a measurement), ``reachable``, ``miss_position`` [m] / ``miss_angle`` [rad] (goal vs the
        nearest reachable pose), ``message``; ``nearest`` (4x4: the nearest reachable pose of the reference at
        rest, None before one was solved) and ``solves`` (how many such solves: a new one is a new nearest
        pose); ``arrived`` (the plate settled there), ``arrived_at`` [s] and ``arrived_pose`` (4x4, measured,
        or the model's if there is no measurement)."""
        out = dict(self._status)
        for key in ("goal", "nearest", "arrived_pose"):
            if out[key] is not None:
                out[key] = out[key].copy()
        return out
