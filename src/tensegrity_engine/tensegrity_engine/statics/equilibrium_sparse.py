"""Sparse prestress for large models: no dense SVD of the equilibrium matrix.

The prestress problem of :func:`.equilibrium.prestress` is the convex quadratic programme

    minimise ½ Σ t²   subject to   E [t; f] = -W_r,   t >= t_min       (f, the bar forces, free)

The dense path solves it in the self-stress coordinates of an SVD. Here it is solved on the sparse E:

1. a linear programme (HiGHS, sparse) for the least *total* tension gives a feasible start, or proves that
   the shape is not an all-taut equilibrium;
2. a primal-dual active-set iteration (Hintermüller, Ito & Kunisch) on the bounds, started from the LP's
   active set: each step is an equality-constrained QP solved exactly through its sparse KKT system;
3. every answer is checked by us (balance residual, bounds, no worse than the LP start) before it is taken;
   otherwise the LP start, projected onto the balance equations, is used.

E has more rows than columns and is rank deficient (rigid-body motions, mechanisms), so the KKT systems are
singular. They are solved with a quasi-definite regularisation ``[[H + δI, Cᵀ], [C, -δI]]`` (a sparse LU
that exists for any C) plus iterative refinement against the exact KKT matrix: the refinement is the
proximal method of multipliers and converges to an exact solution whenever the system is consistent.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy import optimize
from scipy.sparse.linalg import splu

from tensegrity_engine.statics.balance import applied_forces

# Relative tolerance of the checks (balance residual and bounds), as in the dense path: 1e-9 of the force
# scale max(1 N, |W|, t_min) keeps the residual of the tests (<= 1e-9 N at 1-100 N) while leaving ~1e6
# rounding units of room for sums over a few thousand members.
CHECK_TOL = 1e-9
# Regularisation of the KKT systems, relative to the unit Hessian of ½ Σ t²: small enough that each
# refinement step gains ~8 digits, large enough that the LU of the regularised matrix is well conditioned.
KKT_DELTA = 1e-8


def equilibrium_matrix_sparse(model, X, external=None):
    """(E CSR (3r, sigma_c + beta), W_r (3r,)): :func:`.equilibrium.equilibrium_matrix` without dense arrays.
    Columns: unit string tension [N], unit bar compression [N]; rows: reduced forces, ``3 i + d``."""
    X = np.asarray(X, float)
    nc, nb = len(model.string_names), len(model.bar_names)
    seg = model.segments
    d = X[seg[:, 1]] - X[seg[:, 0]]
    u = d / np.linalg.norm(d, axis=1, keepdims=True)
    b = X[model.bars[:, 0]] - X[model.bars[:, 1]]
    bh = b / np.linalg.norm(b, axis=1, keepdims=True)
    ends = np.r_[seg[:, 0], seg[:, 1], model.bars[:, 0], model.bars[:, 1]]
    col = np.r_[model.segment_string, model.segment_string, nc + np.arange(nb), nc + np.arange(nb)]
    vec = np.r_[u, -u, bh, -bh]
    rows = (3 * ends[:, None] + np.arange(3)).ravel()
    full = sp.csr_matrix((vec.ravel(), (rows, np.repeat(col, 3))), shape=(3 * model.n_nodes, nc + nb))
    Q3 = sp.kron(model.Q_sparse, sp.identity(3), format="csr")
    W = applied_forces(model, X, external)
    return (Q3.T @ full).tocsr(), np.asarray(Q3.T @ W.ravel()).ravel()


def solve_eq_qp(H, h, C, d, delta=KKT_DELTA, max_refine=30):
    """Minimise ½ xᵀ diag(H) x - hᵀ x subject to C x = d (C sparse, possibly rank deficient).

    Returns (x, y, converged): y the multipliers of ``H x + Cᵀ y = h``. The refinement stops when the KKT
    residual no longer halves (rounding floor, ~1e-12 of the solution on the 1,000-bar tower); converged when
    it is below 1e-10 of the right-hand side (the caller checks the balance to its own tolerance)."""
    n, m = C.shape[1], C.shape[0]
    C = sp.csr_matrix(C)
    K = sp.bmat([[sp.diags(H), C.T], [C, None]], format="csc")
    Kd = (K + sp.diags(np.r_[np.full(n, delta), np.full(m, -delta)])).tocsc()
    try:
        lu = splu(Kd)
    except RuntimeError:
        return np.zeros(n), np.zeros(m), False
    rhs = np.r_[h, d]
    z = np.zeros(n + m)
    res, last = rhs.copy(), np.inf
    for _ in range(max_refine):
        z += lu.solve(res)
        res = rhs - K @ z
        now = np.abs(res).max()
        if not now < 0.5 * last:
            break
        last = now
    ok = bool(np.all(np.isfinite(z)) and np.abs(res).max() <= 1e-10 * max(1.0, np.abs(rhs).max()))
    return z[:n], z[n:], ok


def _lp_start(E, Wr, nc, min_tension):
    """Least total tension with every string >= min_tension in exact balance (HiGHS on the sparse E), or
    None when no such state exists (the shape is not an all-taut equilibrium)."""
    nv = E.shape[1]
    cost = np.r_[np.ones(nc), np.zeros(nv - nc)]
    bounds = [(min_tension, None)] * nc + [(None, None)] * (nv - nc)
    # interior point (then crossover to a vertex): 2 s on the 1,000-bar class-1 tower where dual simplex
    # takes 3-5 s. Default tolerances (1e-7): tighter ones made HiGHS call feasible towers infeasible; the
    # balance is made exact afterwards (active-set QP or projection) and checked by us.
    lp = optimize.linprog(cost, A_eq=E, b_eq=-Wr, bounds=bounds, method="highs-ipm")
    return lp.x if lp.status == 0 else None


def _active_set_qp(E, Wr, nc, min_tension, x0, tol, max_iter=40):
    """Primal-dual active-set iteration for min ½ Σ t² s.t. E x = -Wr, t >= min_tension, from the bounds
    active at x0. Returns x or None (did not settle on an active set with an exact KKT solution)."""
    nv = E.shape[1]
    H = np.r_[np.ones(nc), np.zeros(nv - nc)]
    active = x0[:nc] <= min_tension + tol
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        S = sp.csr_matrix((np.ones(len(idx)), (np.arange(len(idx)), idx)), shape=(len(idx), nv))
        x, y, ok = solve_eq_qp(H, np.zeros(nv), sp.vstack([E, S]), np.r_[-Wr, np.full(len(idx), min_tension)])
        if not ok:
            return None
        mu = np.zeros(nc)
        mu[idx] = -y[E.shape[0]:]                      # multipliers of t >= t_min (>= 0 at the optimum)
        new = np.where(active, mu > -tol, x[:nc] < min_tension - tol)
        if np.array_equal(new, active):
            return x
        active = new
    return None


def prestress_sparse(E, Wr, nc, min_tension, scale):
    """(x = [t; f] or None, note): the least-squares prestress on the sparse E (module docstring); None when
    the shape is not an all-taut equilibrium (the caller then balances in least squares)."""
    x0 = _lp_start(E, Wr, nc, min_tension)
    if x0 is None:
        return None, ""
    tol = CHECK_TOL * scale

    def valid(x):
        return (x is not None and np.all(np.isfinite(x)) and np.abs(E @ x + Wr).max() <= tol
                and (nc == 0 or x[:nc].min() >= min_tension - tol))

    x = _active_set_qp(E, Wr, nc, min_tension, x0, 1e-12 * scale) if nc else None
    if valid(x) and x[:nc] @ x[:nc] <= x0[:nc] @ x0[:nc] * (1 + 1e-12):
        return x, ""
    # the LP start, projected onto the balance equations (HiGHS balances to ~1e-10, not to rounding)
    xp, _, _ = solve_eq_qp(np.ones(len(x0)), x0, E, -Wr)
    if valid(xp):
        return xp, "least total tension (the least-squares refinement did not converge)"
    return x0, "least total tension (the least-squares refinement did not converge)"


def balance_least_squares(E, Wr, nc, min_tension):
    """Best balance with every tension >= min_tension when no all-taut equilibrium exists (the dense path's
    regularised bounded least squares, on the sparse E)."""
    nv = E.shape[1]
    eps = 1e-6
    reg = sp.hstack([np.sqrt(eps) * sp.identity(nc), sp.csr_matrix((nc, nv - nc))])
    A = sp.vstack([E, reg]).tocsr()
    lo = np.r_[np.full(nc, min_tension), np.full(nv - nc, -np.inf)]
    sol = optimize.lsq_linear(A, np.r_[-Wr, np.zeros(nc)], bounds=(lo, np.inf), tol=1e-12, max_iter=10000,
                              lsmr_tol="auto")
    return sol.x


def _newton_state(model, Y, lam, rest, external):
    """(F (3r,) reduced force [N] incl. bar forces Jᵀλ, g (beta,) = (|b|² - l²)/2 [m²])."""
    from tensegrity_engine.statics.balance import kkt_residual
    F, g = kkt_residual(model, Y, lam, rest, external)
    return F.ravel(), g


def project_bars(model, Y, sweeps: int = 4):
    """Free coordinates (r, 3) moved the least (Gauss-Newton, ``ΔY = -Jᵀ (J Jᵀ)⁻¹ g``) to put every bar back at
    its length: a Newton step is linear in the bar constraints, and on a slender tower its rotations of the
    bars stretch them by ~1e-4 of l², which would otherwise cost many steps (second-order correction)."""
    from tensegrity_engine.statics.modal import bar_jacobian
    Y = np.asarray(Y, float).copy()
    L2 = model.bar_length ** 2
    for _ in range(sweeps):
        X = model.expand(Y)
        b = X[model.bars[:, 0]] - X[model.bars[:, 1]]
        g = 0.5 * (np.sum(b * b, axis=1) - L2)
        if np.abs(g / L2).max() <= 1e-15:
            break
        J = bar_jacobian(model, X, sparse=True)
        JJ = (J @ J.T + sp.diags((np.asarray(abs(J).sum(axis=1)).ravel() == 0).astype(float))).tocsc()
        Y -= np.asarray(J.T @ splu(JJ).solve(g)).reshape(Y.shape)
    return Y


def settle_newton(model, Y, rest, external=None, tol: float = 1e-10, max_iter: int = 60):
    """Newton's method on the static balance with the bars as constraints, from free coordinates Y (r, 3):
    sparse KKT steps ``[[Kt + μM, -Jᵀ], [J, 0]] [ΔY; Δλ] = [F; -g]`` with the analytic tangent stiffness,
    Levenberg-Marquardt style: μ starts at 1e-10 of the largest stiffness per unit mass (which keeps the 6
    rigid-body modes of a free structure from making the matrix singular; its residual has no rigid-body
    part, so the shift only damps those directions) and grows x10 while a step does not lower the scaled
    residual (slack strings, far starts), shrinking again after each accepted step.

    Returns (Y, λ, force residual [N], converged): converged when max |F| <= tol and the bars are at length
    to 1e-12 of l², or when the residual stalls (3 steps without halving, or no descent) at its rounding
    floor, below 1e-6 of the start's: on a 60 m tall tower that floor is ~2e-10 N (coordinates of 60 m carry 1e-14 m of
    rounding, times 7e3 N/m string stiffness, summed over a node's members). Finds the equilibrium nearest
    the start, stable or not."""
    from tensegrity_engine.statics.modal import bar_jacobian, bar_multipliers, tangent_stiffness
    Y = np.asarray(Y, float).copy()
    r = Y.shape[0]
    nb = len(model.bar_names)
    L2 = model.bar_length ** 2
    M3 = sp.kron(model.reduced_mass_sparse, sp.identity(3), format="csr")
    lam = bar_multipliers(model, model.expand(Y), rest, external, sparse=True) if nb else np.zeros(0)
    F, g = _newton_state(model, Y, lam, rest, external)
    fscale = max(1.0, np.abs(F).max())
    start = np.abs(F).max()

    def merit(F, g):
        return np.linalg.norm(F) / fscale + (np.linalg.norm(g / L2) if nb else 0.0)

    def done(F, g):
        return np.abs(F).max() <= tol and (nb == 0 or np.abs(g / L2).max() <= 1e-12)

    best, stalled, shift = merit(F, g), 0, 1e-10
    for _ in range(max_iter):
        if done(F, g) or stalled >= 3:
            break
        X = model.expand(Y)
        Kt = tangent_stiffness(model, X, rest, lam=lam, external=external, sparse=True)
        unit = max(abs(Kt).max(), 1e-300) / max(M3.diagonal().max(), 1e-300)     # stiffness per unit mass
        J = bar_jacobian(model, X, sparse=True)
        # an immobile bar (both ends fixed: a clamped bar) has a zero row: a unit pivot keeps its λ at 0
        immobile = sp.diags((np.asarray(abs(J).sum(axis=1)).ravel() == 0).astype(float)) if nb else None
        while shift < 1e3:
            A = Kt + shift * unit * M3
            A = sp.bmat([[A, -J.T], [J, immobile]], format="csc") if nb else A.tocsc()
            try:
                step = splu(A).solve(np.r_[F, -g])
            except RuntimeError:
                step = None
            if step is not None:
                Y1 = project_bars(model, Y + step[:3 * r].reshape(r, 3)) if nb else Y + step[:3 * r].reshape(r, 3)
                F1, g1 = _newton_state(model, Y1, lam + step[3 * r:], rest, external)
                if merit(F1, g1) < merit(F, g):
                    break
            shift *= 10.0                            # Levenberg-Marquardt: shorter, more gradient-like step
        else:
            stalled = 3                               # no descent: stop (at the floor if near it)
            break
        shift = max(shift / 10.0, 1e-10)
        Y, lam, F, g = Y1, lam + step[3 * r:], F1, g1
        near_floor = np.abs(F).max() <= 1e-6 * max(start, 1.0)
        stalled = 0 if (merit(F, g) < 0.5 * best or not near_floor) else stalled + 1
        best = min(best, merit(F, g))
    residual = float(np.abs(F).max())
    floor = stalled >= 3 and residual <= 1e-6 * max(start, 1.0)
    return Y, lam, residual, bool(done(F, g) or floor)
