"""Inverse statics: the actuator inputs that hold a model frame at a requested pose at rest.

Bounded Gauss-Newton (``scipy.optimize.least_squares``, trust-region reflective, bounds = the actuator
limits) on u with the residual ``[r - r_target; ℓ θ]`` (θ the rotation vector from the target to the reached
orientation, ℓ a length scale [m], default the plate's size), each evaluation a warm-started equilibrium
(:func:`.static_map.settle_inputs`) and the Jacobian from the implicit derivative of the equilibrium
(:func:`.static_map.shape_sensitivity`). A pose no input within the limits reaches gives the nearest one
(least squares in that metric) and the miss.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import optimize

from tensegrity_engine.control.pose import (check_pose, frame_index, frame_pose, misses, plate_size, pose_error,
                                            pose_jacobian)
from tensegrity_engine.control.static_map import (StaticState, clamp_inputs, initial_state, require_actuators,
                                                  settle_inputs, shape_sensitivity)

POSITION_TOL = 1e-3              # m: a pose reached closer than this (and ANGLE_TOL) counts as reachable
ANGLE_TOL = np.radians(0.2)      # rad
MAX_EVALUATIONS = 60             # equilibria per solve (a reachable pose takes 4..10 from u = 0)


@dataclass(frozen=True)
class InverseResult:
    """Inputs ``u`` (alpha,) [m] and their settled shape ``X`` (n, 3) [m]; ``pose`` (4, 4) the frame reached;
    ``miss_position`` [m] and ``miss_angle`` [rad] from the target; ``reachable``: within tolerance, every
    string taut, inputs within limits; ``min_tension`` [N]; ``message`` says what limits the answer;
    ``state`` the equilibrium (with bar force densities) to warm-start the next solve from."""
    u: np.ndarray
    X: np.ndarray
    pose: np.ndarray
    miss_position: float
    miss_angle: float
    reachable: bool
    min_tension: float
    message: str
    state: StaticState | None = field(default=None, repr=False, compare=False)


class _Equilibria:
    """Equilibria already solved in one inverse solve (with their dX/du once computed); each new one starts
    from the nearest in u, moved to first order when its derivative is known."""

    def __init__(self, model, start: StaticState):
        self.model = model
        self.states = [start]
        self.sensitivities = {}

    def at(self, u) -> StaticState:
        u = np.asarray(u, float)
        for s in reversed(self.states):
            if np.array_equal(s.u, u):
                return s
        near = min(self.states, key=lambda s: float(np.abs(s.u - u).max()))
        state = settle_inputs(self.model, u, near, self.sensitivities.get(id(near)))
        self.states = (self.states + [state])[-8:]
        return state

    def sensitivity(self, u) -> tuple:
        """(state, dX/du (n, 3, alpha)) at u."""
        s = self.at(u)
        if id(s) not in self.sensitivities:
            self.sensitivities = {k: v for k, v in self.sensitivities.items() if k in map(id, self.states)}
            self.sensitivities[id(s)] = shape_sensitivity(self.model, s)
        return s, self.sensitivities[id(s)]


def _residual_and_jacobian(model, frame, target, scale, cache):
    weights = np.r_[np.ones(3), np.full(3, scale)]

    def residual(u):
        return -weights * pose_error(frame_pose(model, frame, cache.at(u).X), target)

    def jacobian(u):
        s, dX = cache.sensitivity(u)
        return weights[:, None] * pose_jacobian(model, frame, s.X, dX)

    return residual, jacobian


def inverse_statics(model, frame: str, target, u0=None, *, start: StaticState | None = None,
                    length_scale: float | None = None, position_tol: float = POSITION_TOL,
                    angle_tol: float = ANGLE_TOL, min_tension: float = 0.0) -> InverseResult:
    """Inputs u [m] that hold ``frame`` at the 4x4 world pose ``target`` in static equilibrium.

    ``u0`` (alpha,) [m]: first guess (default: ``start``'s inputs, else 0); ``start``: a known equilibrium
    to warm-start from (e.g. the previous answer's ``state``). ``length_scale`` [m] weighs angles against
    positions (default: the plate's size). ``reachable`` needs misses within ``position_tol`` [m] and
    ``angle_tol`` [rad] and every tension above ``min_tension`` [N]."""
    require_actuators(model)
    frame_index(model, frame)
    target = check_pose(target)
    start = initial_state(model) if start is None else start
    cache = _Equilibria(model, start)
    x0 = clamp_inputs(model, start.u if u0 is None else u0)
    scale = plate_size(model, frame, start.X) if length_scale is None else float(length_scale)
    residual, jacobian = _residual_and_jacobian(model, frame, target, scale, cache)
    lo, hi = model.u_limits[:, 0], model.u_limits[:, 1]
    fit = optimize.least_squares(residual, x0, jac=jacobian, bounds=(lo, hi), method="trf", x_scale=hi - lo,
                                 xtol=1e-10, ftol=1e-10, gtol=1e-10, max_nfev=MAX_EVALUATIONS)
    return _result(model, frame, target, cache.at(fit.x), position_tol, angle_tol, min_tension)


def _result(model, frame, target, state, position_tol, angle_tol, min_tension) -> InverseResult:
    pose = frame_pose(model, frame, state.X)
    dp, da = misses(pose, target)
    lo, hi = model.u_limits[:, 0], model.u_limits[:, 1]
    t_min = float(state.tensions.min()) if len(state.tensions) else np.inf
    near = dp <= position_tol and da <= angle_tol
    taut = t_min > min_tension
    inside = bool(np.all(state.u >= lo - 1e-12) and np.all(state.u <= hi + 1e-12))
    at_limit = [model.actuator_names[a] for a in np.flatnonzero((state.u <= lo + 1e-9) | (state.u >= hi - 1e-9))]
    if near and taut and inside:
        msg = "reached"
    elif not near:
        msg = (f"unreachable: nearest pose misses by {dp * 1e3:.2f} mm, {np.degrees(da):.3f} deg"
               + (f" (at the limit: {', '.join(at_limit)})" if at_limit else ""))
    else:
        slack = [model.string_names[c] for c in np.flatnonzero(state.tensions <= min_tension)]
        msg = f"pose reached but string(s) {', '.join(slack)} at or below {min_tension:g} N"
    return InverseResult(state.u.copy(), state.X.copy(), pose, dp, da, bool(near and taut and inside), t_min, msg,
                         state)
