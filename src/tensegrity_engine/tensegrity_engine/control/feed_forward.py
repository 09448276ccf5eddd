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
  direction the limits block is ever asked for (the pose controller integrates toward these inputs). Its
  Jacobian is the model's at the inputs the controller aims at (re-linearised every
  :data:`FEEDBACK_STEP` of input), not at the feed-forward's: a plant that differs from the model may need
  inputs far from the feed-forward's (strings 10 % softer: 30 mm more reel-out), where the map bends; at a
  fold of the map (the plate's highest point along a direction) the correction there vanishes instead of
  pushing on past it.

Pose directions the inputs hardly move (singular value below :data:`CUT` of the largest) are cut from the
pseudo-inverse: nothing is asked for along them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import lsq_linear

from tensegrity_engine.control.inverse import InverseResult, inverse_statics
from tensegrity_engine.control.pose import frame_pose, moved_pose, pose_error, pose_jacobian
from tensegrity_engine.control.static_map import StaticState, settle_inputs, shape_sensitivity

# pseudo-inverse damping relative to the largest singular value of the weighted pose Jacobian: the
# manipulator's smallest kept singular value is ~0.07 of its largest, so undamped 0.3 mm of pose noise along
# it would move u by 4 mm; damped, that direction is corrected ~1.2x slower and moves u less
DAMPING = 0.03
# pose directions whose singular value is below this fraction of the largest are not asked for (cut from the
# pseudo-inverse): the inputs cannot move the pose along them. The manipulator's C2 has one, its yaw
# (2e-5..6e-4 of the largest at the goals of the tests; the next is 0.07..0.12): 0.1 deg of yaw would need
# ~0.3 m of input. A plant that differs from the model (strings 10 % softer) puts the goals ~0.1 deg of yaw
# off what it can reach; chasing that yaw through the damped inverse, whose gain there is not zero, drove
# the inputs into their limits and the plate away (docs/manipulation.md)
CUT = 1e-2
# m (pose distance, angles times the length scale): first-order inputs this close to the last equilibrium
# keep its linearisation; their error is second order (measured along a path: 20 um at 2 mm, 0.12 mm at 5 mm)
RELINEARISE_STEP = 2e-3
# m (pose distance): a reference farther than this from the last equilibrium is solved exactly (a path
# moves ~1 mm per update, its first update leads by the shaper's delay: ~15 mm at 30 mm/s)
FOLLOW_RANGE = 0.03
# m (largest input change): the feedback's Jacobian is re-linearised at the inputs aimed at once they are this
# far from where it was (the manipulator's map bends over ~25 mm of input: its plate's height along the lower
# stage's common mode peaks ~24 mm from a goal's inputs; 2 mm keeps the slope there within ~10 %)
FEEDBACK_STEP = 2e-3


@dataclass(frozen=True)
class Linearisation:
    """The static map linearised at an equilibrium ``state``: its frame ``pose`` (4, 4), ``sensitivity`` dX/du,
    ``jacobian`` J (6, alpha), ``gain`` (alpha, 6) the damped weighted pseudo-inverse with the directions below
    CUT removed, ``axes`` (r, 6) the weighted pose error -> the r kept singular axes, ``stacked`` (r + alpha,
    alpha) [S_r V_rᵀ; d I] (the bounded correction's least-squares matrix)."""
    state: StaticState
    pose: np.ndarray
    sensitivity: np.ndarray
    jacobian: np.ndarray
    gain: np.ndarray
    axes: np.ndarray
    stacked: np.ndarray

    @classmethod
    def at(cls, model, frame: str, weights, state: StaticState) -> "Linearisation":
        sensitivity = shape_sensitivity(model, state)
        J = pose_jacobian(model, frame, state.X, sensitivity)
        U, s, Vt = np.linalg.svd(weights[:, None] * J, full_matrices=False)
        keep = s >= CUT * s.max()
        d = DAMPING * s.max()
        axes = U[:, keep].T * weights
        gain = (Vt[keep].T * (s[keep] / (s[keep] ** 2 + d ** 2))) @ axes
        stacked = np.vstack([s[keep, None] * Vt[keep], d * np.eye(Vt.shape[1])])
        return cls(state, frame_pose(model, frame, state.X), sensitivity, J, gain, axes, stacked)

    def bounded(self, error, base, limits) -> np.ndarray:
        """δ (alpha,) [m]: the damped least-squares answer to ``J δ = error`` (pose error (6,)) with
        ``base + δ`` within ``limits`` (alpha, 2): an actuator at a limit that δ would push further stays
        there and the others do what they can."""
        delta = self.gain @ error
        lo, hi = limits[:, 0] - base, limits[:, 1] - base
        if np.all(delta >= lo) and np.all(delta <= hi):
            return delta
        stacked_error = np.r_[self.axes @ error, np.zeros(len(base))]
        return lsq_linear(self.stacked, stacked_error, bounds=(np.minimum(lo, 0.0), np.maximum(hi, 0.0)),
                          method="bvls").x


class FeedForward:
    """Inputs for reference poses of ``frame`` on ``model`` (module docstring). ``scale`` [m] weighs angles
    against positions; ``tolerances`` (position [m], angle [rad]) decide reachability; ``start`` the first
    equilibrium to warm-start from."""

    def __init__(self, model, frame: str, scale: float, tolerances: tuple, start: StaticState):
        self.model, self.frame, self.scale, self.tolerances = model, frame, float(scale), tolerances
        self.weights = np.r_[np.ones(3), np.full(3, self.scale)]
        self.exact: InverseResult | None = None      # the last exact solve
        self.state = start                           # the last equilibrium solved (exact or re-linearised)
        self.u = None                                # the inputs in use (alpha,) [m]
        self.promised = None                         # the pose they give by the model (4, 4)
        self.lin: Linearisation | None = None        # the map linearised at ``state``
        self.feedback: Linearisation | None = None   # the map linearised near the inputs the feedback aims at

    @property
    def pose(self):
        """The frame's pose (4, 4) at ``state`` (None before the first solve)."""
        return None if self.lin is None else self.lin.pose

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
        if self.lin is None:
            return None
        for _ in range(int(FOLLOW_RANGE / RELINEARISE_STEP) + 3):
            lin = self.lin
            step = pose_error(lin.pose, reference)
            if np.linalg.norm(self.weights * step) > FOLLOW_RANGE:
                return None
            du = lin.bounded(step, lin.state.u, self.model.u_limits)
            move = np.linalg.norm(self.weights * (lin.jacobian @ du))
            if move < RELINEARISE_STEP:
                self.u = lin.state.u + du
                self.promised = moved_pose(lin.pose, lin.jacobian @ du)
                return self.u
            toward = lin.state.u + du * (RELINEARISE_STEP / move)     # within the limits: between two inside
            self._linearise(settle_inputs(self.model, toward, lin.state, lin.sensitivity))
        return None

    def _linearise(self, state: StaticState):
        self.state = state
        self.lin = Linearisation.at(self.model, self.frame, self.weights, state)

    def aim(self, target):
        """Linearise the feedback's map near the inputs ``target`` (alpha,) [m] it aims at: kept while within
        FEEDBACK_STEP, else the model's equilibrium there, warm-started from the nearer known one."""
        fb = self.feedback
        if fb is not None and np.abs(fb.state.u - target).max() <= FEEDBACK_STEP:
            return
        if np.abs(self.lin.state.u - target).max() <= FEEDBACK_STEP:
            self.feedback = self.lin
            return
        near = self.lin if fb is None or np.abs(fb.state.u - target).max() > np.abs(self.lin.state.u - target).max() \
            else fb
        state = settle_inputs(self.model, target, near.state, near.sensitivity)
        self.feedback = Linearisation.at(self.model, self.frame, self.weights, state)

    def near(self, u, target) -> bool:
        """True if the inputs u (alpha,) [m] the plant has move the model's pose from that of the ``target``
        inputs by less than RELINEARISE_STEP: :meth:`wanted`'s first-order lag correction holds there."""
        J = (self.feedback or self.lin).jacobian
        return bool(np.linalg.norm(self.weights * (J @ (u - target))) < RELINEARISE_STEP)

    def wanted(self, measured, u, target) -> np.ndarray:
        """Inputs (alpha,) [m] within the actuator limits that would put the plant at the promised pose, given
        its measured pose at the inputs u it has while the controller aims at ``target``: the measured pose
        is first moved by J (target - u) (the output's lag, taken out to first order, undamped), then
        ``target + δ``, δ its error to the promised pose through the bounded damped least squares; J the
        model's at ``target`` (:meth:`aim` first)."""
        self.aim(target)
        fb = self.feedback
        at_target = moved_pose(measured, fb.jacobian @ (target - u))
        return target + fb.bounded(pose_error(at_target, self.promised), target, self.model.u_limits)
