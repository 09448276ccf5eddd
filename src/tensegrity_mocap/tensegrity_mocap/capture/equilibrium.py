"""Prestress / equilibrium check of a captured shape (no ROS): are there string tensions within bounds and bar
forces that balance the shape a model was made from (capture/model.py, ``tensegrity-mocap model``)?"""
from __future__ import annotations

import math

import numpy as np

from tensegrity_mocap.capture.document import CaptureModelError, build_document


def _least_tension_balance(E, Wr, lower, upper, nc: int, unit: float):
    """(x, exact): forces x [N] with ``E x + Wr = 0`` and ``lower <= x <= upper`` (±inf: free) minimising
    the sum of squares of the first ``nc`` (the string tensions). ``exact``: such x exists; otherwise x is
    the bounded least-squares balance (as the engine's ``prestress`` does). Solved in units of ``unit``
    [N] from a feasible LP vertex of that size (never from an unbounded one)."""
    from scipy import linalg, optimize
    lo, hi = np.asarray(lower, float) / unit, np.asarray(upper, float) / unit
    W = np.asarray(Wr, float) / unit
    U, sv, Vt = linalg.svd(E)
    rank = int(np.sum(sv > max(E.shape) * np.finfo(float).eps * (sv[0] if len(sv) else 1.0) * 1e3))
    x_p = Vt[:rank].T @ ((U[:, :rank].T @ -W) / sv[:rank])            # minimum-norm balance
    Z = Vt[rank:].T                                                     # self-stress basis
    bl, bh = np.isfinite(lo), np.isfinite(hi)
    k = Z.shape[1]
    A = np.vstack([-Z[bl], Z[bh]])                                     # bounds as A c <= slack
    slack = np.r_[x_p[bl] - lo[bl], hi[bh] - x_p[bh]]
    if np.abs(E @ x_p + W).max() <= 1e-9 * max(1.0, np.abs(W).max()):
        inside = bool(np.all(slack >= -1e-12))
        if inside and not k:
            return x_p * unit, True
        lp = None if inside or not k else optimize.linprog(np.zeros(k), A_ub=A, b_ub=slack,
                                                           bounds=[(None, None)] * k, method="highs")
        if inside or (lp is not None and lp.status == 0):
            c0 = np.zeros(k) if inside else lp.x
            Zt, t_p = Z[:nc], x_p[:nc]
            res = optimize.minimize(lambda c: 0.5 * np.sum((t_p + Zt @ c) ** 2), c0,
                                    jac=lambda c: Zt.T @ (t_p + Zt @ c), method="SLSQP",
                                    constraints=[{"type": "ineq", "fun": lambda c: slack - A @ c,
                                                  "jac": lambda c: -A}], options={"ftol": 1e-14, "maxiter": 500})
            ok = res.success and np.min(slack - A @ res.x) >= -1e-9
            return (x_p + Z @ (res.x if ok else c0)) * unit, True
    eps = 1e-6                                          # no exact state: bounded least squares
    reg = np.zeros((nc, E.shape[1]))
    reg[:, :nc] = np.sqrt(eps) * np.eye(nc)
    sol = optimize.lsq_linear(np.vstack([E, reg]), np.r_[-W, np.zeros(nc)], bounds=(lo, hi), tol=1e-12,
                              max_iter=10000)
    return sol.x * unit, False


def _floor_supports(model, X, g, ground_tol) -> list:
    """Indices of the nodes within ``ground_tol`` [m] of the lowest one along gravity ``g``: the floor that
    carries the model; none without gravity, or for a model held by fixed nodes and with no obstacle."""
    if not np.any(g) or (len(model.fixed_nodes) and not model.obstacles):
        return []
    h = X[:model.n_physical] @ (-g / np.linalg.norm(g))
    return [i for i in range(model.n_physical) if h[i] - h.min() <= ground_tol]


def equilibrium_report(document: dict, min_tension: float = 1.0, max_tension: float | None = None,
                       ground_tol: float = 0.01, tolerance: float = 0.05) -> dict:
    """Prestress / equilibrium check of a model's shape on the engine's equilibrium equations
    (``tensegrity_engine.statics.equilibrium.equilibrium_matrix``, as used by ``prestress``).

    String tensions in [``min_tension``, ``max_tension``] [N] (default max: 10 × min; the bound keeps a
    noisy shape from being "balanced" by huge forces along a nearly singular direction) and bar forces
    that balance the shape, with the least sum of squared tensions. Zero gravity: a self-stress of the free
    structure. Gravity: the load is the bars' weight (half of each bar's mass at each end, as the engine
    lumps it), carried by the nodes within ``ground_tol`` [m] of the lowest one, which can only push
    against gravity (reactions ≥ 0; a robot that would tip over fails); the report then also has
    ``self_stress``, the zero-gravity check of the string layout alone (a noisy shape on three supports
    is often balanced exactly by forces the noise sets). A model with fixed nodes (``fixed: true``, clamps)
    and no obstacle carries the load on those alone (their reactions take any direction). The document is not
    changed.
    ``residual_N``: largest force [N] left unbalanced; ``relative_residual`` = residual / min_tension,
    roughly the shape's distance from an equilibrium in string lengths (moving a node by δ turns a force
    t by t·δ/ℓ): noise and marker placement leave ~1 %, a missing or wrong string tens of %.
    ``feasible``: relative residual ≤ ``tolerance``; ``exact``: a balance within the bounds exists at
    exactly this shape. ``rest_lengths_m`` give the tensions with the document's string stiffness.
    """
    from tensegrity_engine.statics.equilibrium import self_stress_states
    from tensegrity_engine.statics.balance import equilibrium_matrix
    if not (math.isfinite(min_tension) and min_tension > 0):
        raise CaptureModelError("equilibrium check", f"min_tension must be > 0 N, got {min_tension!r}")
    max_tension = 10.0 * min_tension if max_tension is None else float(max_tension)
    if not max_tension > min_tension:
        raise CaptureModelError("equilibrium check", f"max_tension ({max_tension!r} N) must be more than "
                                f"min_tension ({min_tension!r} N)")
    model = build_document(document, source=f"<equilibrium check of '{document.get('name', 'robot')}'>")
    X = model.positions
    E, Wr = equilibrium_matrix(model, X)
    nc, nb = len(model.string_names), len(model.bar_names)
    g = np.asarray(model.gravity, float)
    supports = _floor_supports(model, X, g, ground_tol)
    if np.any(g):
        up = -g / np.linalg.norm(g)
        F = np.zeros((model.n_nodes, 3, len(supports)))
        for k, i in enumerate(supports):
            F[i, :, k] = up
        E = np.hstack([E, np.einsum("nr,ndk->rdk", model.Q, F).reshape(E.shape[0], len(supports))])
    lower = np.r_[np.full(nc, min_tension), np.full(nb, -np.inf), np.zeros(len(supports))]
    upper = np.r_[np.full(nc, max_tension), np.full(nb + len(supports), np.inf)]
    x, exact = _least_tension_balance(E, Wr, lower, upper, nc, min_tension)
    t, f, r = x[:nc], x[nc:nc + nb], x[nc + nb:]
    residual = float(np.abs(E @ x + Wr).max())
    L = model.string_lengths(X)
    rest = model.rest_length_for_tension(t, L)
    message = "" if exact else ("no all-taut equilibrium at exactly this shape: the forces are the least-squares "
                                "balance with every string in [min_tension, max_tension]")
    if nc and np.any(rest <= 0):
        i = int(np.argmin(rest))
        message += ("; " if message else "") + (f"string '{model.string_names[i]}' would need a rest length <= 0 "
                                                f"for {t[i]:.4g} N: its stiffness is too low for this prestress")
    rel = float(residual / min_tension)
    bl = np.asarray(model.bar_length)
    names = model.node_names
    out = {
        "load": ("bar weight on floor supports" if supports else "bar weight on the fixed nodes"
                 if len(model.fixed_nodes) and np.any(g) else "none (self-stress)"),
        "fixed_nodes": [names[i] for i in model.fixed_nodes],
        "gravity_m_s2": g.tolist(), "supports": [names[i] for i in supports], "ground_tol_m": ground_tol,
        "min_tension_N": min_tension, "max_tension_N": max_tension, "residual_N": residual, "relative_residual": rel,
        "tolerance": tolerance, "feasible": bool(rel <= tolerance), "exact": bool(exact),
        "self_stress_states": int(self_stress_states(model, X)), "message": message,
        "tensions_N": dict(zip(model.string_names, map(float, t))),
        "force_densities_N_per_m": dict(zip(model.string_names, map(float, t / L))),
        "rest_lengths_m": dict(zip(model.string_names, map(float, rest))),
        "bar_forces_N": dict(zip(model.bar_names, map(float, f))),
        "bar_force_densities_N_per_m": dict(zip(model.bar_names, map(float, f / bl))),
        "support_reactions_N": {names[i]: float(v) for i, v in zip(supports, r)},
    }
    if supports or (len(model.fixed_nodes) and np.any(g)):
        free = equilibrium_report(dict(document, gravity=[0.0, 0.0, 0.0]), min_tension, max_tension, ground_tol,
                                  tolerance)
        out["self_stress"] = {k: free[k] for k in ("residual_N", "relative_residual", "feasible", "exact")}
    return out


# --- capture -> model -----------------------------------------------------------------------------
