"""The static map from actuator inputs to the settled shape, and its derivative.

``u`` (alpha,) [m] is the string length each actuator has reeled in: the rest length of string c is
``rest0_c - sum of u over its actuators``. :func:`settle_inputs` finds the equilibrium shape for u by
Newton's method on the static balance warm-started from a nearby equilibrium (continuation in u when the
step is large), falling back on the full :func:`~tensegrity_engine.statics.equilibrium.settle` (dynamic
relaxation first) when Newton does not converge. :func:`shape_sensitivity` differentiates the equilibrium
implicitly: with ``Kt`` the tangent stiffness and ``J`` the bar Jacobian,

    [[Kt, -Jᵀ], [J, 0]] [dY; dλ] = [∂F/∂u du; 0],   ∂F/∂u_a = -Qᵀ ∇L_c ∂t_c/∂u_a,

where ``∂t/∂u`` is the spring stiffness or ``EA L / ξ²`` of an EA string (ξ the rest length).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from tensegrity_engine.statics.balance import static_forces, string_lengths
from tensegrity_engine.statics.equilibrium import settle
from tensegrity_engine.statics.equilibrium_sparse import settle_newton
from tensegrity_engine.statics.modal import bar_jacobian, string_gradients, tangent_stiffness

# Newton converges from a start this close in u [m] on the manipulator (its strings stretch ~1 cm under the
# prestress); larger changes are taken in steps of this size (continuation).
CONTINUATION_STEP = 0.01
NEWTON_TOL = 1e-9          # N: force residual of a settled shape (the strings carry 10..250 N)


@dataclass(frozen=True)
class StaticState:
    """An equilibrium for inputs ``u`` [m]: node positions ``X`` (n, 3) [m], bar force densities ``lam``
    [N/m], string ``tensions`` [N], force ``residual`` [N]."""
    u: np.ndarray
    X: np.ndarray
    lam: np.ndarray
    tensions: np.ndarray
    residual: float


def rest_lengths(model, u) -> np.ndarray:
    """Rest lengths (sigma_c,) [m] of the strings for actuator inputs u (alpha,) [m reeled in]."""
    rest = np.array(model.rest_length, float)
    np.subtract.at(rest, model.actuator_string, np.asarray(u, float))
    return rest


def clamp_inputs(model, u) -> np.ndarray:
    """u (alpha,) [m] clipped to the actuator limits ``model.u_limits``."""
    return np.clip(np.asarray(u, float), model.u_limits[:, 0], model.u_limits[:, 1])


def require_actuators(model):
    """Raise ValueError when the model has no actuators (there is nothing to control)."""
    if not len(model.actuator_names):
        raise ValueError(f"model '{model.name}' has no actuators: add 'actuators:' to the model file "
                         "(docs/model_schema.md) to control its pose")


def _state(model, u, X, lam, rest, residual) -> StaticState:
    _, t = static_forces(model, X, rest)
    return StaticState(np.array(u, float), X, lam, t, float(residual))


def _newton(model, u, start: StaticState, X_guess=None):
    """(state, converged) from one Newton solve started at ``X_guess`` (default: ``start``'s shape)."""
    rest = rest_lengths(model, u)
    if np.any(rest <= 0):
        raise ValueError(f"inputs {np.round(u, 6)} m leave a string with no rest length; stay within u_limits")
    X0 = start.X if X_guess is None else X_guess
    Y, lam, residual, ok = settle_newton(model, model.reduce(X0), rest, tol=NEWTON_TOL)
    return _state(model, u, model.expand(Y), lam, rest, residual), bool(ok and residual <= 1e3 * NEWTON_TOL)


def settle_inputs(model, u, start: StaticState | None = None, sensitivity=None) -> StaticState:
    """The equilibrium for inputs u (alpha,) [m], warm-started from ``start`` (default: the model's shape,
    taken as the equilibrium of u = 0). Steps of at most :data:`CONTINUATION_STEP` in u; if Newton fails on
    the way, the full ``settle`` (dynamic relaxation, then Newton) from the last good shape. ``sensitivity``:
    ``start``'s dX/du (n, 3, alpha) (:func:`shape_sensitivity`) for a first-order predicted start."""
    u = np.asarray(u, float)
    if start is None:
        start = initial_state(model)
    n_steps = max(1, int(np.ceil(np.abs(u - start.u).max() / CONTINUATION_STEP)))
    state = start
    for k in range(1, n_steps + 1):
        uk = start.u + (u - start.u) * (k / n_steps)
        guess = None if sensitivity is None or k > 1 else start.X + sensitivity @ (uk - start.u)
        nxt, ok = _newton(model, uk, state, guess)
        if not ok and guess is not None:
            nxt, ok = _newton(model, uk, state)
        if not ok:
            return relaxed_state(model, u, state.X)
        state = nxt
    return state


def relaxed_state(model, u, X=None) -> StaticState:
    """The equilibrium for inputs u [m] by the full ``settle`` (dynamic relaxation, then Newton) from X."""
    rest = rest_lengths(model, u)
    eq = settle(model, rest_lengths=rest, X=X, tol=NEWTON_TOL)
    lam = eq.bar_forces / model.bar_length          # force densities [N/m]; the bars keep their lengths
    return _state(model, u, eq.positions, lam, rest, eq.residual)


def initial_state(model) -> StaticState:
    """The equilibrium for u = 0: Newton from the model's positions (they are usually settled already)."""
    u0 = np.zeros(len(model.actuator_names))
    seed = StaticState(u0, np.array(model.positions, float), np.zeros(len(model.bars)), np.zeros(0), np.inf)
    state, ok = _newton(model, u0, seed)
    return state if ok else relaxed_state(model, u0)


def input_force_gradient(model, state: StaticState) -> np.ndarray:
    """∂F/∂u (3r, alpha) [N/m]: change of the reduced nodal force per metre reeled in, at ``state``."""
    rest = rest_lengths(model, state.u)
    L = string_lengths(model, state.X)
    taut = L > rest
    ea = np.asarray(model.string_EA, float)
    dtdu = np.where(np.isfinite(ea), np.nan_to_num(ea) * L / rest ** 2, model.string_stiffness_at(rest))
    dtdu = np.where(taut, dtdu, 0.0)[model.actuator_string]
    Q3 = sp.kron(model.Q_sparse, sp.identity(3), format="csr")
    GQ = (string_gradients(model, state.X) @ Q3).toarray()          # (sigma_c, 3r)
    return -GQ[model.actuator_string].T * dtdu


def shape_sensitivity(model, state: StaticState) -> np.ndarray:
    """dX/du (n, 3, alpha) [m/m]: first-order change of the settled node positions per metre reeled in."""
    r = model.Q.shape[1]
    rest = rest_lengths(model, state.u)
    Kt = tangent_stiffness(model, state.X, rest, lam=state.lam)
    B = input_force_gradient(model, state)
    if len(model.bars):
        J = bar_jacobian(model, state.X)
        A = np.block([[Kt, -J.T], [J, np.zeros((len(J), len(J)))]])
        rhs = np.vstack([B, np.zeros((len(J), B.shape[1]))])
    else:
        A, rhs = Kt, B
    dY = np.linalg.lstsq(A, rhs, rcond=None)[0][:3 * r]             # lstsq: a clamped bar has a zero row
    return (model.Q @ dY.reshape(r, 3 * B.shape[1])).reshape(model.n_nodes, 3, B.shape[1])
