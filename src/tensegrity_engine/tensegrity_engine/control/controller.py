"""PoseController: the pure (clock-free, ROS-free) plate-pose controller a ROS node wraps.

Each :meth:`PoseController.update` computes

* the reference pose at time t (a goal, or a smooth trajectory: :class:`.pose_path.PosePath`);
* the feed-forward ``u_ff`` by inverse statics on the controller's model (re-solved, warm-started, only when
  the reference changes); for an unreachable reference, the nearest reachable pose ``C_ff``. While a
  trajectory moves the reference, within :data:`RESOLVE_STEP` of the last exact answer the feed-forward is
  its first-order update ``u_ff + J⁺ (reference - C_ff)`` (one matrix product instead of a solve, ~0.3 s);
  the reference at rest (a goal, a trajectory's end) is always solved exactly;
* the feedback: an integral ``u_i += k_i dt z_f`` of ``z = J⁺ e + (u - u_ff - u_i)`` low-pass filtered (first
  order, time constant ``filter_time``) into ``z_f``. ``e`` is the measured pose's error against ``C_ff``
  (what the model promises for ``u_ff``; so an unreachable goal winds nothing up), ``J`` the model's pose
  Jacobian d pose / d u at ``u_ff``, J⁺ its damped pseudo-inverse with angles weighted by the length scale,
  ``u`` the last output. The term ``u - u_ff - u_i`` cancels (to first order) the part of J⁺ e due to the
  output not being at its target yet (rate limits, actuator limits, a moving reference), so neither winds
  the integral up. Once the output is at its target, ``z = J⁺ e``: the integral stops where the plant's
  measured pose is ``C_ff`` (to the damping), whatever the model error. Along J's weakest directions it
  converges more slowly (rate k_i s²/(s² + δ²) for a singular value s, δ the damping). The filter keeps
  the loop off the structure's lightly damped modes (the manipulator's lowest, 1.5 Hz, has a damping
  ratio of 0.002: an unfiltered integral faster than ~0.05/s would excite it) and averages the
  measurement noise;
* the output: ``u_ff + u_i`` clamped to the actuator limits, moved from the last output by at most
  ``max_rate dt`` and ``max_step`` per call.

The first call has dt = 0 and therefore returns ``u_start`` (default 0, the inputs the robot holds).
"""
from __future__ import annotations

import numpy as np

from tensegrity_engine.control.inverse import ANGLE_TOL, POSITION_TOL, InverseResult, inverse_statics
from tensegrity_engine.control.pose import check_pose, misses, plate_size, pose_error, pose_jacobian
from tensegrity_engine.control.pose_path import PosePath
from tensegrity_engine.control.static_map import (clamp_inputs, initial_state, require_actuators,
                                                  shape_sensitivity)

# pseudo-inverse damping relative to the largest singular value of the weighted pose Jacobian: the
# manipulator's smallest singular value is ~1e-2 of its largest, so undamped 0.3 mm of pose noise along it
# would move u by 30 mm; damped, that direction is corrected ~10x slower and moves u ~10x less
DAMPING = 0.03
# m (pose distance, angles times the length scale): a moving reference this close to the last exact answer
# takes the first-order feed-forward; its error is second order (~10 um here) and the feedback sees it
RESOLVE_STEP = 5e-3


class PoseController:
    """Feed-forward (inverse statics) plus filtered integral feedback on the measured pose of ``frame``.

    ``max_rate`` [m/s] and ``max_step`` [m] limit how fast the output moves; ``integral_gain`` [1/s] sets
    how fast the feedback removes a pose error (time constant ~1/k_i); ``filter_time`` [s] is the feedback's
    low-pass time constant; ``length_scale`` [m] weighs angles against positions (default: the plate's
    size); ``u_start`` (alpha,) [m] the inputs held before the first update; ``position_tol`` [m] and
    ``angle_tol`` [rad] decide whether a goal counts as reachable."""

    def __init__(self, model, frame: str, max_rate: float = 0.01, max_step: float = 0.002, *,
                 integral_gain: float = 0.2, filter_time: float = 2.0, length_scale: float | None = None, u_start=None,
                 position_tol: float = POSITION_TOL, angle_tol: float = ANGLE_TOL):
        require_actuators(model)
        for name, v in (("max_rate", max_rate), ("max_step", max_step), ("integral_gain", integral_gain),
                        ("filter_time", filter_time)):
            if not (np.isfinite(v) and v > 0):
                raise ValueError(f"PoseController: {name} must be a finite number > 0, got {v}")
        self.model, self.frame = model, frame
        self.max_rate, self.max_step, self.integral_gain = float(max_rate), float(max_step), float(integral_gain)
        self.filter_time = float(filter_time)
        self._tol = (position_tol, angle_tol)
        self._start = initial_state(model)
        self.scale = plate_size(model, frame, self._start.X) if length_scale is None else float(length_scale)
        na = len(model.actuator_names)
        self.u = clamp_inputs(model, np.zeros(na) if u_start is None else u_start)
        self.u_integral = np.zeros(na)
        self._filtered = np.zeros(na)
        self._path: PosePath | None = None
        self._pending = None             # (times, poses) set before the first update: anchored at its t
        self._ff: InverseResult | None = None
        self._ff_ref = None
        self._u_ff = self._pose_ff = None            # the feed-forward in use (exact or first-order)
        self._gain_matrix = None
        self._t = None
        self._status = {"goal": None, "error_position": float("nan"), "error_angle": float("nan"),
                        "reachable": False, "miss_position": float("nan"), "miss_angle": float("nan"),
                        "message": "no goal"}

    def set_goal(self, pose):
        """Go to the 4x4 world pose ``pose`` (a step in the reference; the output's rate limits smooth it)."""
        self.set_trajectory([0.0], [check_pose(pose)])

    def set_trajectory(self, times, poses):
        """Follow poses (K, 4, 4) at times (K,) [s from now] (the next update's t if none came yet), smooth in
        between (minimum-jerk, slerp). A first time after 0 starts from the current reference pose."""
        times = np.asarray(times, float).ravel()
        poses = np.asarray(poses, float)
        PosePath(times, poses)                           # validate now: the caller learns of bad input here
        self._pending = (times, poses)
        if self._t is not None:
            self._anchor(self._t)

    def _anchor(self, t0: float):
        times, poses = self._pending
        self._pending = None
        if times[0] > 0 and (self._ff is not None or self._path is not None):
            current = self._path.at(t0) if self._path is not None else self._pose_ff
            times, poses = np.r_[0.0, times], np.concatenate([current[None], poses])
        self._path = PosePath(t0 + times, poses)
        self._status["goal"] = self._path.poses[-1].copy()

    def update(self, t: float, measured_pose=None) -> np.ndarray:
        """The inputs u (alpha,) [m] to command at time t [s], given the measured 4x4 pose of the frame (None,
        or a pose with NaN as from lost markers: feed-forward only, the integral held)."""
        dt = 0.0 if self._t is None else max(float(t) - self._t, 0.0)
        self._t = float(t)
        if self._pending is not None:
            self._anchor(self._t)
        if self._path is None:
            return self.u.copy()
        reference = self._path.at(self._t)
        self._feed_forward(reference, moving=self._t < self._path.end)
        if measured_pose is not None and np.all(np.isfinite(measured_pose)):
            measured = check_pose(measured_pose)
            self._integrate(measured, dt)
            dp, da = misses(measured, reference)
            self._status.update(error_position=dp, error_angle=da)
        target = clamp_inputs(self.model, self._u_ff + self.u_integral)
        limit = min(self.max_step, self.max_rate * dt)
        self.u = clamp_inputs(self.model, self.u + np.clip(target - self.u, -limit, limit))
        return self.u.copy()

    def _feed_forward(self, reference, moving: bool):
        if self._ff_ref is not None and np.array_equal(reference, self._ff_ref):
            return
        self._ff_ref = reference
        if moving and self._ff is not None and self._ff.reachable:
            step = pose_error(self._ff.pose, reference)                 # reference minus the exact answer
            if np.linalg.norm(np.r_[step[:3], self.scale * step[3:]]) < RESOLVE_STEP:
                self._u_ff, self._pose_ff = clamp_inputs(self.model, self._ff.u + self._gain_matrix @ step), reference
                return
        start = self._ff.state if self._ff is not None else self._start
        ff = inverse_statics(self.model, self.frame, reference, start=start, length_scale=self.scale,
                             position_tol=self._tol[0], angle_tol=self._tol[1])
        self._ff, self._u_ff, self._pose_ff = ff, ff.u, ff.pose
        weights = np.r_[np.ones(3), np.full(3, self.scale)]
        J = pose_jacobian(self.model, self.frame, ff.X, shape_sensitivity(self.model, ff.state))
        U, s, Vt = np.linalg.svd(weights[:, None] * J, full_matrices=False)
        d = DAMPING * s.max()
        self._gain_matrix = (Vt.T * (s / (s ** 2 + d ** 2))) @ U.T @ np.diag(weights)
        self._status.update(reachable=ff.reachable, miss_position=ff.miss_position, miss_angle=ff.miss_angle,
                            message=ff.message)

    def _integrate(self, measured, dt: float):
        error = pose_error(measured, self._pose_ff)                 # what the model promised minus what is
        z = self._gain_matrix @ error + (self.u - self._u_ff - self.u_integral)
        self._filtered += dt / (self.filter_time + dt) * (z - self._filtered)
        self.u_integral = self.u_integral + self.integral_gain * dt * self._filtered

    @property
    def status(self) -> dict:
        """``goal`` (4x4 or None), ``error_position`` [m] / ``error_angle`` [rad] (measured vs reference, NaN
        before a measurement), ``reachable``, ``miss_position`` [m] / ``miss_angle`` [rad] (goal vs the
        nearest reachable pose), ``message``."""
        out = dict(self._status)
        if out["goal"] is not None:
            out["goal"] = out["goal"].copy()
        return out
