"""The fit behind :func:`.static.identify_static`: the balance equations, linear in the parameters, and
their Gauss-Helmert solution.

The unknowns are linear parameters ``theta`` (string tensions ``t = G(L) theta + h(L)`` at string lengths
``L``, bar masses directly): per stiffness group the spring stiffness kappa [N/m] (or EA [N] for EA
groups); per string kappa xi0 [N] with the stiffness, xi0 [m] without (EA strings: EA/xi0 [N/m] and 1/xi0
[1/m]); per bar its mass [kg]; per compliant support its stiffness [N/m or N m/rad] (the support forces
are linear in it, :func:`~tensegrity_engine.dynamics.supports.unit_support_forces`), and per rotational
support with its rest direction the vector stiffness × rest direction (:mod:`.static_supports`).
:meth:`StaticEquations.natural` maps theta back to the natural parameters.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg

from tensegrity_engine.identify import static_supports as sc
from tensegrity_engine.model.model import Model
from tensegrity_engine.statics.balance import equilibrium_matrix, reduce_forces


def string_groups(model: Model, groups) -> list:
    """List of (group name, [string indices]); strings sharing a stiffness parameter."""
    if groups is None:
        return [(s, [c]) for c, s in enumerate(model.string_names)]
    if groups == "model":
        labels = [g or s for g, s in zip(model.string_group, model.string_names)]
    else:
        labels = [groups.get(s, s) for s in model.string_names]
    out: dict = {}
    for c, g in enumerate(labels):
        out.setdefault(g, []).append(c)
    for g, members in out.items():
        modes = {bool(np.isnan(model.string_EA[c])) for c in members}
        if len(modes) > 1:
            raise ValueError(f"group {g!r} mixes EA strings and spring strings "
                             f"({', '.join(model.string_names[c] for c in members)}); they cannot share a stiffness "
                             "parameter: split the group")
    return list(out.items())


@dataclass
class StaticEquations:
    """The reduced balance of every case as linear equations in ``theta``, for the parameters being fitted.

    Built by :func:`static_equations`. Order of theta: stiffness groups, strings (rest lengths), bars (masses),
    supports (stiffnesses).
    """
    model: Model
    fit_k: bool                     # stiffness per group
    fit_r: bool                     # rest length per string
    fit_m: bool                     # mass per bar
    groups: list                    # [(group name, [string indices])]
    g_of: np.ndarray                # group index of each string
    ea_mode: np.ndarray             # bool per string: EA string (else spring)
    k_nom: np.ndarray               # model EA [N] or kappa [N/m] per string
    rest0: np.ndarray               # model rest lengths [m]
    lin_nom: np.ndarray             # theta at the model's values
    scale: np.ndarray               # |lin_nom| (1 where 0): theta = lin_nom + scale * delta
    bar_w: np.ndarray               # (3r, bars) reduced gravity of a bar of unit mass [N/kg]
    kap0: np.ndarray                # model stiffness per string at its rest length [N/m]
    sup_cols: sc.SupportColumns = sc.SupportColumns()   # the fitted supports' columns (the last ones)

    @property
    def nc(self) -> int:
        return len(self.model.string_names)

    @property
    def nb(self) -> int:
        return len(self.model.bar_names)

    @property
    def ng(self) -> int:
        return len(self.groups)

    @property
    def nk(self) -> int:
        """Stiffness parameters in theta."""
        return self.ng if self.fit_k else 0

    @property
    def nr(self) -> int:
        """Rest-length parameters in theta."""
        return self.nc if self.fit_r else 0

    @property
    def fit_s(self) -> bool:
        """Some support is fitted (its stiffness, or a rotational one's stiffness and rest direction)."""
        return self.sup_cols.n > 0

    @property
    def ns(self) -> int:
        """Support parameters in theta (the last ones)."""
        return self.sup_cols.n

    @property
    def p(self) -> int:
        return len(self.lin_nom)

    def tension_map(self, L):
        """(G (sigma_c, p), h (sigma_c,)): string tensions t = G theta + h at string lengths L [m]."""
        nc, ea_mode, k_nom, rest0, g_of = self.nc, self.ea_mode, self.k_nom, self.rest0, self.g_of
        G = np.zeros((nc, self.p))
        h = np.zeros(nc)
        c = np.arange(nc)
        if self.fit_k and self.fit_r:
            G[c, g_of] = np.where(ea_mode, -1.0, L)
            G[c, self.nk + c] = np.where(ea_mode, L, -1.0)
        elif self.fit_k:
            G[c, g_of] = np.where(ea_mode, L / rest0 - 1.0, L - rest0)
        elif self.fit_r:
            G[c, c] = np.where(ea_mode, k_nom * L, -k_nom)
            h = np.where(ea_mode, -k_nom, k_nom * L)
        else:
            h = self.kap0 * (L - rest0)
        return G, h

    def system(self, P, forces):
        """(A (3r,p), B (3r,beta), b (3r,)) with reduced balance residual A theta + B f - b at positions P."""
        model, nc = self.model, self.nc
        X = model.from_physical(P)
        F = np.zeros((model.n_nodes, 3))
        F[:model.n_physical] = forces
        E, Wr = equilibrium_matrix(model, X, F)
        Et = E[:, :nc]
        if self.fit_m:                              # known gravity only from point masses
            Wr = Wr - self.bar_w @ model.bar_mass
        G, h = self.tension_map(model.string_lengths(X))
        A = Et @ G
        if self.fit_m:
            A[:, self.nk + self.nr:self.p - self.ns] = self.bar_w
        if self.fit_s:                              # the fitted supports' columns, their own forces out of Wr
            U, own = sc.columns(model, X, self.sup_cols)
            Wr = Wr - own
            A[:, self.p - self.ns:] = U
        return A, E[:, nc:], -(Wr + Et @ h)

    def jac_positions(self, P, forces, th, f):
        """d(residual)/d(physical positions) (3r, 3 mu), central differences (h = 1e-6 m)."""
        cols = []
        for q in range(P.size):
            d = np.zeros(P.size)
            d[q] = 1e-6
            r = [Ak @ th + Bk @ f - bk
                 for Ak, Bk, bk in (self.system(P + s * d.reshape(P.shape), forces) for s in (1, -1))]
            cols.append((r[0] - r[1]) / 2e-6)
        return np.stack(cols, axis=1)

    def natural(self, th):
        """(natural values (p,), D = d natural / d theta (p, p)); the order of theta: groups, strings, bars."""
        val, D = th.copy(), np.eye(self.p)
        if self.fit_r:
            ea_mode, g_of = self.ea_mode, self.g_of
            r = self.nk + np.arange(self.nc)
            tc, tg = th[r], (th[g_of] if self.fit_k else None)
            with np.errstate(divide="ignore", invalid="ignore"):
                if self.fit_k:      # xi0 = EA / (EA/xi0), spring: (kappa xi0) / kappa
                    val[r] = np.where(ea_mode, tg / tc, tc / tg)
                    D[r, r] = np.where(ea_mode, -tg / tc ** 2, 1.0 / tg)
                    D[r, g_of] = np.where(ea_mode, 1.0 / tc, -tc / tg ** 2)
                else:               # xi0 = 1 / (1/xi0), spring: xi0
                    val[r] = np.where(ea_mode, 1.0 / tc, tc)
                    D[r, r] = np.where(ea_mode, -1.0 / tc ** 2, 1.0)
        if self.fit_s:
            q = slice(self.p - self.ns, self.p)
            val[q], D[q, q] = sc.natural(self.model, self.sup_cols, th[q])
        return val, D

    def parameter_table(self) -> tuple:
        """(names, kinds, units, model values (p,)) of the natural parameters, in the order of theta."""
        model, nc, nb = self.model, self.nc, self.nb
        names, kinds, units, init = [], [], [], []
        for gname, members in (self.groups if self.fit_k else []):
            names.append(f"stiffness:{gname}")
            kinds.append("stiffness")
            units.append("N" if self.ea_mode[members[0]] else "N/m")
            init.append(self.k_nom[members[0]])
        if self.fit_r:
            names += [f"rest_length:{s}" for s in model.string_names]
            kinds += ["rest_length"] * nc
            units += ["m"] * nc
            init += list(self.rest0)
        if self.fit_m:
            names += [f"bar_mass:{bn}" for bn in model.bar_names]
            kinds += ["bar_mass"] * nb
            units += ["kg"] * nb
            init += list(model.bar_mass)
        if self.fit_s:
            more = sc.table(model, self.sup_cols)
            names, kinds, units, init = (x + y for x, y in zip((names, kinds, units, init), more))
        return names, kinds, units, np.asarray(init, float)


def static_equations(model: Model, params: tuple, groups) -> StaticEquations:
    """The equations for fitting ``params`` (see :func:`.static.identify_static`) with stiffness ``groups``."""
    ea_mode = ~np.isnan(model.string_EA)
    k_nom = np.where(ea_mode, model.string_EA, model.string_stiffness)   # EA [N] or kappa [N/m]
    rest0 = model.rest_length.copy()
    grp = string_groups(model, groups)
    g_of = np.empty(len(model.string_names), int)
    for gi, (_, members) in enumerate(grp):
        g_of[members] = gi
    fit_k, fit_r, fit_m = "stiffness" in params, "rest_length" in params, "bar_mass" in params
    cols = _support_columns(model, params)
    if not (fit_k or fit_r or fit_m or cols.n):
        raise ValueError("nothing to identify")
    lin_nom = _nominal_theta(model, grp, ea_mode, k_nom, rest0, fit_k, fit_r, fit_m)
    scale = np.where(np.abs(lin_nom) > 0, np.abs(lin_nom), 1.0)
    s_nom, s_scale = sc.nominal(model, cols)
    return StaticEquations(model, fit_k, fit_r, fit_m, grp, g_of, ea_mode, k_nom, rest0, np.r_[lin_nom, s_nom],
                           np.r_[scale, s_scale], _unit_bar_weights(model), model.string_stiffness_at(rest0), cols)


def _support_columns(model: Model, params: tuple) -> sc.SupportColumns:
    """The supports ``params`` fits (``support_stiffness``, ``rest_direction``); an error when there are none."""
    fit_s, fit_d = "support_stiffness" in params, "rest_direction" in params
    if fit_s and not len(model.supports):
        raise ValueError(f"support_stiffness: model '{model.name}' has no compliant supports (a 'supports:' entry "
                         "of type translational or rotational); drop the parameter or add the support")
    if fit_d and not model.supports.rotational.any():
        raise ValueError(f"rest_direction: model '{model.name}' has no rotational support (a 'supports:' entry "
                         "of type rotational); drop the parameter or add the support")
    return sc.support_columns(model, fit_s, fit_d)


def _nominal_theta(model: Model, grp, ea_mode, k_nom, rest0, fit_k, fit_r, fit_m) -> np.ndarray:
    """theta at the model's values: group kappa (or EA); per string kappa xi0 / xi0 (EA: EA/xi0 / 1/xi0);
    bar masses [kg]."""
    lin_nom = []
    if fit_k:      # group: spring kappa (or EA for EA groups)
        lin_nom += [k_nom[m[0]] for _, m in grp]
    if fit_r:      # per string: spring kappa*xi0 (both) / xi0 (rest only); EA: EA/xi0 (both) / 1/xi0 (rest only)
        for c in range(len(model.string_names)):
            if fit_k:
                lin_nom.append(k_nom[c] / rest0[c] if ea_mode[c] else k_nom[c] * rest0[c])
            else:
                lin_nom.append(1.0 / rest0[c] if ea_mode[c] else rest0[c])
    if fit_m:
        lin_nom += list(model.bar_mass)
    return np.asarray(lin_nom, float)


def _unit_bar_weights(model: Model) -> np.ndarray:
    """(3r, bars): the reduced nodal forces of each bar's weight at unit mass, half on each end [N/kg]."""
    nb = len(model.bar_names)
    grav_end = np.zeros((model.n_nodes, 3, nb))
    for i, (j, k) in enumerate(model.bars):
        grav_end[j, :, i] += 0.5 * model.gravity
        grav_end[k, :, i] += 0.5 * model.gravity
    return np.einsum("nr,ndb->rdb", model.Q, grav_end).reshape(3 * model.Q.shape[1], nb)


@dataclass
class StaticFit:
    """The Gauss-Helmert solution: theta, the corrected positions and what the error analysis needs."""
    theta: np.ndarray               # linear parameters at the solution
    resid: np.ndarray               # whitened residual of the last least-squares step
    S: np.ndarray                   # its singular values (column-normalised relative units)
    keep: np.ndarray                # bool: singular values above rcond x the largest
    nl: int                         # columns some equation sees
    rows_A: list                    # per case: whitened reduced rows d residual / d theta
    corrected: list                 # per case: corrected physical positions (mu, 3) [m]


def gauss_helmert(eq: StaticEquations, cases: list, rcond: float, regularization: float,
                  max_iter: int) -> StaticFit:
    """Solve for theta and corrected positions: the measured positions are noisy, so find the smallest
    position corrections that make every case an exact equilibrium, weighting each case's force residual
    by (J J^T)^-1 with J = d residual / d positions. The first pass is an unweighted equation-error fit;
    at least 2 passes, at most ``max_iter``, stopping when theta moves less than 1e-9 (relative)."""
    corrected = [c.positions.copy() for c in cases]
    theta = eq.lin_nom.copy()
    bar_f = [np.zeros(eq.nb) for _ in cases]
    for it in range(max(int(max_iter), 2)):
        parts = [_whitened_case(eq, case, corrected[k], theta, bar_f[k], weighted=it > 0)
                 for k, case in enumerate(cases)]
        rows_A = [N.T @ A for N, (A, B, b, J) in parts]
        rows_b = [N.T @ b for N, (A, B, b, J) in parts]
        A = np.vstack(rows_A) * eq.scale            # relative units: theta = lin_nom + scale * delta
        b = np.concatenate(rows_b) - np.vstack(rows_A) @ eq.lin_nom
        delta, S, keep, nl = _solve(A, b, rcond, regularization)
        new = eq.lin_nom + eq.scale * delta
        step = np.max(np.abs(new - theta) / eq.scale)
        theta = new
        for k, (_, part) in enumerate(parts):
            bar_f[k], v = _bar_forces_and_correction(eq, part, theta)
            if v is not None:
                corrected[k] = cases[k].positions + v.reshape(-1, 3)
        if it > 0 and step < 1e-9:
            break
    return StaticFit(theta, b - A @ delta, S, keep, nl, rows_A, corrected)


def _whitener(J):
    """Lower Cholesky factor of J J^T (a tiny ridge keeps it positive definite)."""
    C = J @ J.T
    return linalg.cholesky(C + 1e-12 * np.trace(C) / len(C) * np.eye(len(C)), lower=True)


def _whitened_case(eq: StaticEquations, case, P, theta, bar_f, weighted: bool) -> tuple:
    """(N, (A, B, b, J)) of one case at corrected positions P: its balance (whitened by J J^T when
    ``weighted``, with J = d residual / d positions, else J None) and N, the null space of B^T, which
    eliminates the case's bar forces."""
    A, B, b = eq.system(P, case.forces)
    J = None
    if weighted:
        J = eq.jac_positions(P, case.forces, theta, bar_f)
        b = b - J @ (case.positions - P).ravel()
        Lc = _whitener(J)
        A, B, b = (linalg.solve_triangular(Lc, M, lower=True) for M in (A, B, b))
    N = linalg.null_space(B.T) if eq.nb else np.eye(len(b))
    return N, (A, B, b, J)


def _bar_forces_and_correction(eq: StaticEquations, part: tuple, theta) -> tuple:
    """(bar forces of the case at theta, position correction v = -J^T C^-1 (misclosure) or None unweighted)."""
    Ak, Bk, bk, J = part
    rk = bk - Ak @ theta
    bar_f = linalg.lstsq(Bk, rk)[0] if eq.nb else np.zeros(0)
    if J is None:
        return bar_f, None
    w = Ak @ theta + Bk @ bar_f - bk
    return bar_f, -J.T @ linalg.solve_triangular(_whitener(J).T, w, lower=False)


def _solve(A, b, rcond: float, regularization: float) -> tuple:
    """(δ (p,), singular values S (p,), kept mask (p,), live column count) of least squares ``A δ ≈ b`` in
    column-normalised units: δ = 0 along singular values below ``rcond`` × the largest, or Tikhonov
    damping by ``regularization`` > 0."""
    p = A.shape[1]
    colnorm = np.linalg.norm(A, axis=0)
    dead = colnorm <= 1e-12 * max(colnorm.max(), 1e-300)
    cn = np.where(dead, 1.0, colnorm)
    # SVD of the live columns; a column no equation sees (e.g. a string between two fixed nodes) is
    # its own null direction
    live = np.flatnonzero(~dead)
    nl = len(live)
    Ul, Sl, Vtl = linalg.svd(A[:, live] / cn[live], full_matrices=True)
    S, Vt, U = np.zeros(p), np.zeros((p, p)), np.zeros((len(b), p))
    S[:len(Sl)] = Sl
    Vt[:nl, live] = Vtl
    Vt[np.arange(nl, p), np.flatnonzero(dead)] = 1.0
    U[:, :min(Ul.shape[1], nl)] = Ul[:, :nl]
    keep = S > rcond * max(S[0], 1e-300)
    filt = (S / (S ** 2 + regularization ** 2) if regularization > 0
            else np.where(keep, 1.0 / np.where(keep, S, 1.0), 0.0))
    return (Vt.T @ (filt * (U.T @ b))) / cn, S, keep, nl
