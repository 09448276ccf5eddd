"""Static equilibrium: prestress (rest lengths for a given shape), settling (shape for given rest lengths),
and stability / natural frequencies about an equilibrium.

Static balance in the free coordinates (linear constraints eliminated as in the dynamics):

    E [t; f] + W_r = 0,

with ``t`` (sigma_c) composite-string tensions [N] (one per composite string, the same along its path),
``f`` (beta) bar compressive forces [N], ``E`` the reduced equilibrium matrix (unit-tension nodal forces
mapped by Qᵀ) and ``W_r = Qᵀ (gravity + external)``. Reactions of fixed nodes and other constraints are
eliminated with the constraints, so the residual is the force the structure cannot balance.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg, optimize

from tensegrity_engine.errors import ModelError
from tensegrity_engine.model.model import Model
from tensegrity_engine.statics.contact_loads import ContactLoads
from tensegrity_engine.statics.balance import (equilibrium_matrix, kkt_residual, numerical_rank, require_free_nodes,
                                              static_forces, string_lengths)


@dataclass
class Equilibrium:
    """Result of :func:`prestress` / :func:`settle`. Forces in N, lengths in m."""
    positions: np.ndarray          # (n, 3)
    tensions: np.ndarray           # (sigma_c,)
    bar_forces: np.ndarray         # (beta,) compression positive
    rest_lengths: np.ndarray       # (sigma_c,)
    string_lengths: np.ndarray     # (sigma_c,)
    residual: float                # max |unbalanced reduced force| [N]
    self_stress_states: int | None  # dimension of the self-stress space (null space of E); None: not computed
    message: str = ""

    def summary(self, model) -> str:
        states = ("self-stress states not counted (large model: sparse path)" if self.self_stress_states is None
                  else f"{self.self_stress_states} state(s) of self-stress")
        lines = [f"equilibrium of '{model.name}': residual {self.residual:.3e} N, {states}"]
        if self.message:
            lines.append(self.message)
        lines.append(f"{'string':<12}{'length [m]':>12}{'rest [m]':>12}{'tension [N]':>13}")
        for nm, L, r, t in zip(model.string_names, self.string_lengths, self.rest_lengths, self.tensions):
            lines.append(f"{nm:<12}{L:>12.6f}{r:>12.6f}{t:>13.4f}")
        lines.append(f"{'bar':<12}{'force [N] (+ compression)':>30}")
        for nm, f in zip(model.bar_names, self.bar_forces):
            lines.append(f"{nm:<12}{f:>30.4f}")
        return "\n".join(lines)


def self_stress_states(model: Model, X) -> int:
    """Dimension of the self-stress space at node positions X (n,3): string tensions and bar forces in
    equilibrium with no load (null space of the equilibrium matrix)."""
    E, _ = equilibrium_matrix(model, X)
    return E.shape[1] - numerical_rank(E, linalg.svd(E, compute_uv=False))


# Above this many free coordinates (3r, ~100 bars) the sparse paths are used: a dense SVD of E or a dense
# eigenproblem costs O((3r)^3) (0.1 s at 600, 26 min at 1,000 bars) while the sparse ones grow ~linearly.
DENSE_MAX_DOF = 600


def use_sparse(model: Model, method: str = "auto") -> bool:
    """True for the sparse paths: ``method`` 'sparse', or 'auto' above :data:`DENSE_MAX_DOF` coordinates."""
    if method not in ("auto", "dense", "sparse"):
        raise ValueError(f"method must be 'auto', 'dense' or 'sparse', not {method!r}")
    return method == "sparse" or (method == "auto" and 3 * len(model.free_nodes) > DENSE_MAX_DOF)


def prestress(model: Model, X=None, min_tension: float = 1.0, external=None, method: str = "auto") -> Equilibrium:
    """Tensions and rest lengths that hold configuration X in equilibrium with every string at least
    ``min_tension`` [N] (the prestress level), minimising the sum of squared tensions among all such states.

    If X is not an equilibrium shape for any tensions the least-squares balance is used and the
    residual reports the unbalanced force (``message`` says so); ``settle`` then finds the nearby
    equilibrium shape. Raises ModelError (naming the model file) only if a string would need a
    non-positive rest length. ``method``: 'dense' (SVD of the equilibrium matrix, self-stress states
    counted), 'sparse' (:mod:`.equilibrium_sparse`: LP + active-set QP on the sparse matrix, self-stress
    states not counted: ``None``) or 'auto' (sparse above :data:`DENSE_MAX_DOF` free coordinates).
    """
    require_free_nodes(model)
    X = model.positions if X is None else np.asarray(X, float)
    nc = len(model.string_names)
    if use_sparse(model, method):
        x, E, Wr, msg = _prestress_sparse_x(model, X, min_tension, external)
        states = None
    else:
        x, E, Wr, msg, states = _prestress_dense_x(model, X, min_tension, external)
    t, f = x[:nc], x[nc:]
    L = string_lengths(model, X)
    rest = model.rest_length_for_tension(t, L)
    if np.any(rest <= 0):
        i = int(np.argmin(rest))
        raise ModelError(model.source, f"string '{model.string_names[i]}'",
                         f"would need a rest length <= 0 for {t[i]:.4g} N: its stiffness is too low for this "
                         "prestress", "lower min_tension or raise the string's EA or stiffness")
    residual = float(np.abs(E @ x + Wr).max())
    return Equilibrium(X.copy(), t, f, rest, L, residual, states, msg)


_NOT_TAUT = ("this shape is not an all-taut equilibrium: tensions are the least-squares balance with every "
             "string >= min_tension; settle() finds the nearby equilibrium shape for these rest lengths")


def _prestress_sparse_x(model, X, min_tension, external):
    """([t; f], E sparse, W_r, message) by :mod:`.equilibrium_sparse`."""
    from tensegrity_engine.statics.equilibrium_sparse import (balance_least_squares, equilibrium_matrix_sparse,
                                                              prestress_sparse)
    nc = len(model.string_names)
    E, Wr = equilibrium_matrix_sparse(model, X, external)
    scale = max(1.0, np.abs(Wr).max(), min_tension)
    x, msg = prestress_sparse(E, Wr, nc, min_tension, scale)
    if x is None:
        x, msg = balance_least_squares(E, Wr, nc, min_tension), _NOT_TAUT
    return x, E, Wr, msg


def _prestress_dense_x(model, X, min_tension, external):
    """([t; f], E, W_r, message, self-stress states) from the SVD of the dense equilibrium matrix."""
    nc = len(model.string_names)
    E, Wr = equilibrium_matrix(model, X, external)
    scale = max(1.0, np.abs(Wr).max(), min_tension)
    U, s, Vt = linalg.svd(E)
    rank = numerical_rank(E, s)
    x_p = Vt[:rank].T @ ((U[:, :rank].T @ -Wr) / s[:rank])   # minimum-norm least-squares balance
    Z = Vt[rank:].T                                   # self-stress basis (sigma_c + beta, k)
    Zt = Z[:nc]
    t_p = x_p[:nc]
    msg = ""
    x = None
    if Z.shape[1] and np.any(np.abs(Zt) > 1e-12):
        x = _least_prestress(x_p, Z, Zt, t_p, min_tension, scale)
    elif nc == 0 or t_p.min() >= min_tension - 1e-9 * scale:
        x = x_p
    if x is None:
        # no all-taut equilibrium at this exact shape: best balance with every tension >= min_tension
        eps = 1e-6
        A = np.vstack([E, np.c_[np.sqrt(eps) * np.eye(nc), np.zeros((nc, E.shape[1] - nc))]])
        lo = np.r_[np.full(nc, min_tension), np.full(E.shape[1] - nc, -np.inf)]
        sol = optimize.lsq_linear(A, np.r_[-Wr, np.zeros(nc)], bounds=(lo, np.inf), tol=1e-12, max_iter=10000)
        x = sol.x
        msg = _NOT_TAUT
    return x, E, Wr, msg, Z.shape[1]


def _least_prestress(x_p, Z, Zt, t_p, min_tension, scale):
    """Balance ``x_p + Z c`` with every tension ``t_p + Zt c >= min_tension`` and the least sum of squared
    tensions, or None if no such c exists. A linear programme (least total tension; bounded because every
    tension is bounded below) gives a valid start; SLSQP then minimises sum t^2 and its answer is taken when
    *we* verify it (bounds met, no worse than the start), whatever its success flag says."""
    # HiGHS meets constraints to its feasibility tolerance (1e-7), so ask for a hair more than min_tension
    # (1e-6 relative: invisible in the prestress) lest the start fail our own 1e-9 check below
    for margin in (1e-6 * max(min_tension, 1e-3 * scale), 0.0):
        lp = optimize.linprog(Zt.sum(axis=0), A_ub=-Zt, b_ub=t_p - min_tension - margin,
                              bounds=[(None, None)] * Z.shape[1], method="highs")
        if lp.status == 0:
            break
    if lp.status != 0:
        return None
    c0 = lp.x
    t0 = t_p + Zt @ c0
    tol = 1e-9 * scale
    if t0.min() < min_tension - tol:
        return None
    res = optimize.minimize(lambda c: 0.5 * np.sum((t_p + Zt @ c) ** 2), c0, jac=lambda c: Zt.T @ (t_p + Zt @ c),
                            constraints=[{"type": "ineq", "fun": lambda c: t_p + Zt @ c - min_tension,
                                          "jac": lambda c: Zt}], method="SLSQP",
                            options={"ftol": 1e-15, "maxiter": 500})
    t1 = t_p + Zt @ res.x
    ok = np.all(np.isfinite(t1)) and t1.min() >= min_tension - tol and t1 @ t1 <= t0 @ t0 * (1 + 1e-12)
    return x_p + Z @ (res.x if ok else c0)


def settle(model: Model, rest_lengths=None, X=None, external=None, tol: float = 1e-10,
           relax_time: float = 30.0, node_damping: float | None = None, method: str = "auto") -> Equilibrium:
    """Find the static equilibrium shape for the given rest lengths (default: the model's), starting from X.

    Dense path: dynamic relaxation (the real dynamics with added mass-proportional damping, so it ends in a
    *stable* equilibrium), then Newton polishing of the equilibrium equations to ``tol`` [N]. Sparse path
    (``method`` 'sparse', or 'auto' above :data:`DENSE_MAX_DOF` coordinates): sparse Newton steps from X
    directly (:func:`.equilibrium_sparse.settle_newton`), with dynamic relaxation first only if they do not
    converge; the self-stress states are then not counted (``None``). A model whose every node is held (fixed,
    clamped or constrained) is in equilibrium where it is held: its tensions follow from the rest lengths and
    its supports carry every load (the Simulator runs it unchanged in time).
    """
    rest = model.rest_length if rest_lengths is None else np.asarray(rest_lengths, float)
    m = model if rest_lengths is None else with_rest_lengths(model, rest)
    if not len(m.free_nodes):
        return _settled(m, m.positions, np.zeros(len(m.bar_names)), rest, external, 0.0, tol, None,
                        "every node is held: the equilibrium is the held configuration (the supports carry the loads)")
    if use_sparse(m, method) and not m.obstacles:
        return _settle_sparse(m, rest, X, external, tol, relax_time, node_damping)
    Y, work = _relax(m, X, external, relax_time, node_damping)
    if m.obstacles:                   # the contacts at rest, anchored where the relaxation left them
        external = ContactLoads(m, external).anchors_from(work)
    r, nb = Y.shape[0], len(m.bar_names)
    # bar forces from least squares at the relaxed shape
    Fr, g = kkt_residual(m, Y, np.zeros(nb), rest, external)
    X = m.expand(Y)
    b = X[m.bars[:, 0]] - X[m.bars[:, 1]]
    Ab = m.Q[m.bars[:, 0]] - m.Q[m.bars[:, 1]]
    J = np.stack([np.outer(Ab[i], b[i]).ravel() for i in range(nb)], axis=1) if nb else np.zeros((3 * r, 0))
    lam0 = linalg.lstsq(J, -Fr.ravel())[0] if nb else np.zeros(0)

    def fun(z):
        Fk, gk = kkt_residual(m, z[:3 * r].reshape(r, 3), z[3 * r:], rest, external)
        return np.r_[Fk.ravel(), gk]

    sol = optimize.root(fun, np.r_[Y.ravel(), lam0], method="hybr", options={"xtol": 1e-14})
    z = sol.x if np.abs(fun(sol.x)).max() < np.abs(fun(np.r_[Y.ravel(), lam0])).max() else np.r_[Y.ravel(), lam0]
    Y = z[:3 * r].reshape(r, 3)
    Fk, _ = kkt_residual(m, Y, z[3 * r:], rest, external)
    X = m.expand(Y)
    return _settled(m, X, z[3 * r:], rest, external, float(np.abs(Fk).max()), tol, self_stress_states(m, X))


def _relax(m, X, external, relax_time, node_damping):
    """(Free coordinates (r, 3) after dynamic relaxation from X (damped dynamics, contacts included, until the
    nodes are still), the simulator's work buffers (its friction anchors))."""
    from tensegrity_engine.dynamics.simulator import Simulator
    sim = Simulator(m, integrator="dopri5", rtol=1e-8, atol=1e-10, damping=True, max_steps=200_000,
                    node_damping=node_damping if node_damping is not None else _relax_damping(m))
    sim.reset(positions=X)
    if external is not None:
        sim.external_forces[:] = external
    chunk = 0.5
    t = 0.0
    while t < relax_time:
        sim.advance(chunk)
        t += chunk
        if np.abs(sim.velocities).max() < 1e-7:
            break
    return sim.Y.copy(), sim._work


def _settle_sparse(m, rest, X, external, tol, relax_time, node_damping):
    from tensegrity_engine.statics.equilibrium_sparse import settle_newton
    Y0 = m.reduce(m.positions if X is None else np.asarray(X, float))
    Y, lam, residual, ok = settle_newton(m, Y0, rest, external, tol)
    if not ok:                                   # too far for Newton: relax dynamically, then Newton again
        Y, lam, residual, ok = settle_newton(m, _relax(m, X, external, relax_time, node_damping)[0], rest, external,
                                             tol)
    return _settled(m, m.expand(Y), lam, rest, external, residual, tol, None)


def _settled(m, X, lam, rest, external, residual, tol, states, note: str = "") -> Equilibrium:
    """The Equilibrium of a settled shape X with bar force densities lam [N/m]."""
    _, t = static_forces(m, X, rest, external)
    bl = np.linalg.norm(X[m.bars[:, 0]] - X[m.bars[:, 1]], axis=1)
    msg = note if residual < tol else f"warning: residual {residual:.3g} N above tol {tol:.1g} N"
    return Equilibrium(X, t, lam * bl, rest, string_lengths(m, X), residual, states, msg)


def _relax_damping(model) -> float:
    """A node damping rate [1/s] of the order of the structure's stiffest mode (fast relaxation)."""
    if not len(model.string_names):
        # only gravity restores (a hanging pendulum): rate of the order of sqrt(g / bar length)
        L = float(np.mean(model.bar_length)) if len(model.bar_length) else 1.0
        return float(2.0 * np.sqrt(max(float(np.linalg.norm(model.gravity)), 1e-3) / max(L, 1e-3)))
    kap = model.string_stiffness_at(model.rest_length)
    m = max(model.total_mass() / max(model.n_nodes, 1), 1e-6)
    return float(2.0 * np.sqrt(np.median(kap) / m))


def stability(model: Model, X, rest_lengths=None, external=None, lam=None, method: str = "auto",
              n_modes: int = 10) -> dict:
    """Linearised dynamics about an equilibrium X on the bar-constraint tangent space: ``eigenvalues``
    are the mass-normalised squared angular frequencies ω² [1/s²] (the analytic tangent stiffness of
    :mod:`.modal`, including the geometric stiffness of prestress and bar forces), ``frequencies_hz`` =
    ω/2π. ``stable`` is True when every non-rigid-body eigenvalue is above 1e-11 of the largest |ω²|.

    ``method`` 'dense': every eigenvalue (dense eigenproblem); 'sparse': the rigid-body plus ``n_modes``
    lowest ones (:mod:`.stability_sparse`, with an inertia count proving none lies further down);
    'auto': sparse above :data:`DENSE_MAX_DOF` free coordinates. ``method`` in the result says which."""
    from tensegrity_engine.statics.modal import bar_jacobian, bar_multipliers, tangent_stiffness
    rest = model.rest_length if rest_lengths is None else np.asarray(rest_lengths, float)
    Y = model.reduce(X)
    r, nb = Y.shape[0], len(model.bar_names)
    Xf = model.expand(Y)
    if use_sparse(model, method):
        from tensegrity_engine.statics.stability_sparse import stability_sparse
        return stability_sparse(model, Xf, rest, external, lam, n_modes)
    J = bar_jacobian(model, Xf)
    if lam is None:
        lam = bar_multipliers(model, Xf, rest, external) if nb else np.zeros(0)
    Kt = tangent_stiffness(model, Xf, rest, lam=lam, external=external)
    T = linalg.null_space(J) if nb else np.eye(3 * r)
    Ks = T.T @ Kt @ T
    Ms = T.T @ np.kron(model.reduced_mass, np.eye(3)) @ T
    ev = linalg.eigh(Ks, Ms, eigvals_only=True)
    # a structure with no fixed node and no support floats: its 6 rigid-body modes have zero stiffness
    rigid = 0 if len(model.fixed_nodes) or len(model.supports) else min(6, len(ev))
    elastic = ev[rigid:]
    from tensegrity_engine.statics.stability_sparse import ZERO_TOL
    tol = ZERO_TOL * max(1.0, np.abs(ev).max())        # numerical zero (see stability_sparse.ZERO_TOL)
    freqs = np.sqrt(np.clip(ev, 0, None)) / (2 * np.pi)
    return {"stable": bool(len(elastic) == 0 or elastic.min() > tol), "eigenvalues": ev,
            "frequencies_hz": freqs, "rigid_body_modes": rigid, "dof": int(T.shape[1]), "method": "dense"}


def with_rest_lengths(model: Model, rest_lengths, positions=None) -> Model:
    """A copy of ``model`` with new rest lengths (sigma_c,) [m] and optionally new node positions (n,3)."""
    from dataclasses import replace
    from tensegrity_engine.model.build import build_model
    rest = np.asarray(rest_lengths, float)
    if rest.shape != (len(model.string_names),) or not np.all(np.isfinite(rest)) or np.any(rest <= 0):
        bad = [model.string_names[i] for i in np.flatnonzero(~(np.isfinite(rest) & (rest > 0)))] \
            if rest.shape == (len(model.string_names),) else "shape"
        raise ValueError(f"rest lengths must be {len(model.string_names)} positive finite values [m]; bad: {bad}")
    spec = model.spec
    strings = tuple(replace(s, rest_length=float(r), tension=None) for s, r in zip(spec.strings, rest))
    nodes = spec.nodes
    if positions is not None:
        P = np.asarray(positions, float)
        nodes = tuple(replace(nd, position=tuple(float(v) for v in P[i])) for i, nd in enumerate(nodes))
    return build_model(replace(spec, strings=strings, nodes=nodes))
