"""The pose controller's model side: the inputs for a reference pose (exact inverse statics, or the static
map linearised at the last equilibrium solved) and the input correction for a measured pose error.

* :meth:`FeedForward.solve`: exact inverse statics (warm-started at the last equilibrium); for an unreachable
  reference the nearest reachable pose. It also linearises there: the pose Jacobian J = d pose / d u and
  its damped, weighted pseudo-inverse (the gain).
* :meth:`FeedForward.follow`: for a moving reference, ``u + gain (reference - pose)`` from the last
  equilibrium (one matrix product), promising the pose ``pose + J (u - u_eq)``; once that is
  :data:`RELINEARISE_STEP` away, the equilibrium
  of that first-order answer is solved (Newton warm-started with its first-order shape, ~5 ms) and the map
  re-linearised there (~3 ms), instead of a full inverse solve (0.2..1.5 s). None when the answer would leave
  the actuator limits (the caller then solves exactly: the reference may be unreachable).
* :meth:`FeedForward.wanted`: the inputs that would move the plant from a measured pose to the
  feed-forward's, by the same damped least squares but bounded by the actuator limits: an actuator at a
  limit that the correction would push further is held there and the others do what they can, so no
  direction the limits block is ever asked for (the pose controller integrates toward these inputs).
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import lsq_linear

from tensegrity_engine.control.inverse import InverseResult, inverse_statics
from tensegrity_engine.control.pose import frame_pose, moved_pose, pose_error, pose_jacobian
from tensegrity_engine.control.static_map import StaticState, clamp_inputs, settle_inputs, shape_sensitivity

# pseudo-inverse damping relative to the largest singular value of the weighted pose Jacobian: the
# manipulator's smallest singular value is ~1e-2 of its largest, so undamped 0.3 mm of pose noise along it
# would move u by 30 mm; damped, that direction is corrected ~10x slower and moves u ~10x less
DAMPING = 0.03
# m (pose distance, angles times the length scale): first-order inputs this close to the last equilibrium
# keep its linearisation; their error is second order (measured along a path: 20 um at 2 mm, 0.12 mm at 5 mm)
RELINEARISE_STEP = 2e-3
# m (pose distance): a reference farther than this from the last equilibrium is solved exactly (a path
# moves ~1 mm per update, its first update leads by the shaper's delay: ~15 mm at 30 mm/s)
FOLLOW_RANGE = 0.03


class FeedForward:
    """Inputs for reference poses of ``frame`` on ``model`` (module docstring). ``scale`` [m] weighs angles
    against positions; ``tolerances`` (position [m], angle [rad]) decide reachability; ``start`` the first
    equilibrium to warm-start from."""

    def __init__(self, model, frame: str, scale: float, tolerances: tuple, start: StaticState):
        self.model, self.frame, self.scale, self.tolerances = model, frame, float(scale), tolerances
        self.weights = np.r_[np.ones(3), np.full(3, self.scale)]
        self.exact: InverseResult | None = None      # the last exact solve
        self.state = start                           # the last equilibrium solved (exact or re-linearised)
        self.pose = None                             # its frame pose (4, 4)
        self.u = None                                # the inputs in use (alpha,) [m]
        self.promised = None                         # the pose they give by the model (4, 4)
        self._sensitivity = None                     # dX/du at ``state``
        self.gain = None                             # (alpha, 6) damped weighted pseudo-inverse of J
        self._jacobian = None                        # (6, alpha) J at ``state``
        self._stacked = None                         # [W J; d I] (12, alpha): the bounded correction's matrix

    def solve(self, reference) -> InverseResult:
        """Exact inverse statics for ``reference`` from the last equilibrium (and the inputs in use)."""
        return self.adopt(self.check(reference))

    def adopt(self, res: InverseResult) -> InverseResult:
        """Use the exact solve ``res`` (of :meth:`check`) from now on: its inputs, pose and linearisation."""
        self.exact = res
        self._linearise(res.state)
        self.u, self.promised = res.u.copy(), res.pose
        return res

    def check(self, pose) -> InverseResult:
        """Exact inverse statics for ``pose`` from the last equilibrium, changing nothing here (a path's end)."""
        return inverse_statics(self.model, self.frame, pose, u0=self.u, start=self.state, length_scale=self.scale,
                               position_tol=self.tolerances[0], angle_tol=self.tolerances[1])

    def follow(self, reference):
        """First-order inputs for a moving ``reference`` by the damped gain, bounded by the actuator limits
        (the straight way between two reachable poses may leave the thin reachable set; along its weak
        directions the damping keeps the inputs smooth), marching in re-linearised steps of RELINEARISE_STEP
        when they would move the pose farther. None if the reference is more than FOLLOW_RANGE away or
        nothing was solved yet. ``promised``: the model's pose for them (first order)."""
        if self.gain is None:
            return None
        for _ in range(int(FOLLOW_RANGE / RELINEARISE_STEP) + 3):
            step = pose_error(self.pose, reference)
            if np.linalg.norm(self.weights * step) > FOLLOW_RANGE:
                return None
            du = self._bounded(step, self.state.u)
            move = np.linalg.norm(self.weights * (self._jacobian @ du))
            if move < RELINEARISE_STEP:
                self.u = self.state.u + du
                self.promised = moved_pose(self.pose, self._jacobian @ du)
                return self.u
            toward = self.state.u + du * (RELINEARISE_STEP / move)     # within the limits: between two inside
            self._linearise(settle_inputs(self.model, toward, self.state, self._sensitivity))
        return None

    def _linearise(self, state: StaticState):
        self.state, self.pose = state, frame_pose(self.model, self.frame, state.X)
        self._sensitivity = shape_sensitivity(self.model, state)
        self._jacobian = pose_jacobian(self.model, self.frame, state.X, self._sensitivity)
        WJ = self.weights[:, None] * self._jacobian
        U, s, Vt = np.linalg.svd(WJ, full_matrices=False)
        d = DAMPING * s.max()
        self.gain = (Vt.T * (s / (s ** 2 + d ** 2))) @ U.T @ np.diag(self.weights)
        self._stacked = np.vstack([WJ, d * np.eye(WJ.shape[1])])

    def near(self, u, target) -> bool:
        """True if the inputs u (alpha,) [m] the plant has move the model's pose from that of the ``target``
        inputs by less than RELINEARISE_STEP: :meth:`wanted`'s first-order lag correction holds there."""
        return bool(np.linalg.norm(self.weights * (self._jacobian @ (u - target))) < RELINEARISE_STEP)

    def wanted(self, measured, u, target) -> np.ndarray:
        """Inputs (alpha,) [m] within the actuator limits that would put the plant at the promised pose, given
        its measured pose at the inputs u it has while the controller aims at ``target``: the measured pose
        is first moved by J (target - u) (the output's lag, taken out to first order, undamped), then
        ``target + δ``, δ its error to the promised pose through the bounded damped least squares."""
        at_target = moved_pose(measured, self._jacobian @ (target - u))
        return target + self._bounded(pose_error(at_target, self.promised), target)

    def _bounded(self, error, base) -> np.ndarray:
        """δ (alpha,) [m]: the damped least-squares answer to ``J δ = error`` (pose error (6,)) with
        ``base + δ`` within the actuator limits: an actuator at a limit that δ would push further stays there
        and the others do what they can."""
        delta = self.gain @ error
        lo, hi = self.model.u_limits[:, 0] - base, self.model.u_limits[:, 1] - base
        if np.all(delta >= lo) and np.all(delta <= hi):
            return delta
        stacked_error = np.r_[self.weights * error, np.zeros(len(base))]
        return lsq_linear(self._stacked, stacked_error, bounds=(np.minimum(lo, 0.0), np.maximum(hi, 0.0)),
                          method="bvls").x
