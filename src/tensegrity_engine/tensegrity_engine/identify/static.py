"""Static identification: string stiffnesses, rest lengths and bar masses from equilibrium captures.

Each case is a measured equilibrium shape (physical node positions [m]) under known external nodal forces
[N] (e.g. a payload's weight). At a measured shape the reduced balance of :mod:`.equilibrium`

    E_t(X) t + E_b(X) f + W_r(X) = 0

is linear in the string tensions ``t`` and bar forces ``f``; with ``t_c = kappa_c (L_c - xi0_c)`` (kappa the
spring stiffness [N/m], or ``EA/xi0`` for EA strings, as in :meth:`Model.string_stiffness_at`) every tension
is ``t_c = a_c L_c - b_c`` with ``a = kappa``, ``b = kappa xi0`` (for EA strings ``b = EA``), linear in the
unknowns below. Bar forces (one per bar and case) are eliminated exactly by projecting each case's rows onto
the complement of its bar columns; rows of fixed nodes are not in the reduced balance (reactions).

Parameters (natural units): ``stiffness`` per string group (spring ``stiffness`` [N/m] or ``EA`` [N],
whichever the model file uses), ``rest_length`` per string [m], ``bar_mass`` per bar [kg] (gravity lumped
half on each end, as the engine does). The least-squares problem is solved for relative deviations from
the model's values. The measured positions are noisy and enter the regressor, which biases plain equation-
error least squares (noise makes the prestress look unbalanced, so it shrinks); the fit is therefore a
Gauss-Helmert iteration that also corrects the positions (the smallest corrections, in m, that make every
case an exact equilibrium), i.e. each case's force residual is weighted by ``(J J^T)^-1`` with
``J = d residual / d positions``. Directions the data cannot determine (singular values below ``rcond``
of the largest) keep the model's values. Identifiability and standard errors are judged at the solution in
relative natural units (:mod:`.identify_uncertainty`), so they do not depend on the starting values: the
misfit (RMS of the whitened residual, [m]) is reported apart from the capture noise (``noise``, or the
cases' own), and with two or more cases the standard error is the larger of the model-based one
and the leave-one-case-out jackknife (which sees a model error). The string tensions of every case (and
their mean, the prestress level in an unloaded case) are reported with standard errors: the data often
determine them when the stiffnesses and rest lengths behind them are not.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from scipy import linalg

from tensegrity_engine.statics.equilibrium import equilibrium_matrix, settle
from tensegrity_engine.identify.geometry import BAR_TOL, geometry_problem
from tensegrity_engine.identify.uncertainty import (NULL_SHARE, case_influence, classify, functional_se, information,
                                   jackknife_se, larger_se, null_share, reference, relative_jacobian)
from tensegrity_engine.model.model import Model, build_model, load_model

PARAM_KINDS = ("stiffness", "rest_length", "bar_mass")


@dataclass
class StaticCase:
    """One equilibrium capture: physical node positions (mu,3) [m] and external nodal forces (mu,3) [N];
    ``noise``: noise level per coordinate of ``positions`` [m] if known (e.g. the take's frame scatter)."""
    positions: np.ndarray
    forces: np.ndarray
    name: str = ""
    noise: float | None = None


@dataclass
class StaticIdentification:
    """Result of :func:`identify_static`. Natural units: N/m or N (stiffness), m (rest length), kg (mass)."""
    names: list                     # parameter names, e.g. 'stiffness:stage1 passive', 'rest_length:sc4'
    kinds: list                     # 'stiffness' | 'rest_length' | 'bar_mass'
    units: list
    initial: np.ndarray             # model values
    estimate: np.ndarray
    std_error: np.ndarray           # reported: the larger of std_error_model and std_error_jackknife; inf: null
    identifiable: np.ndarray        # bool: std_error <= rel_tol of |estimate| and in no null direction
    condition_number: float         # of the column-scaled regressor (relative units)
    unidentifiable: list            # [{'parameters': [names], 'kind': 'null'|'weak', 'std_error_rel': x}]
    misfit_rms: float               # m, RMS position misfit per coordinate (sqrt(chi^2 / dof)), not the noise
    case_residual_rms: list         # m per case: RMS correction of the measured positions
    case_names: list
    dof: int
    groups: dict                    # group parameter name -> member string names
    noise: float | None = None      # m per coordinate: the captures' noise (given / frame scatter), None: unknown
    std_error_model: np.ndarray = None       # s^2 (J^T J)^-1 with s = max(misfit, noise)
    std_error_jackknife: np.ndarray = None   # leave-one-case-out; NaN: < 2 cases or one case alone sees it
    std_error_method: list = field(default_factory=list)   # per parameter: 'model' | 'jackknife' (the larger)
    tensions: np.ndarray = None               # (cases, strings) N at the corrected shapes
    tension_std_error: np.ndarray = None      # (cases, strings) N (larger of model and jackknife; inf: unknown)
    mean_tension: np.ndarray = None           # (cases,) N over the strings the data see: the prestress level
    mean_tension_std_error: np.ndarray = None
    string_stiffness: dict = field(default_factory=dict)   # per string: (kind 'stiffness'|'EA', value)
    rest_lengths: dict = field(default_factory=dict)       # per string [m]
    bar_masses: dict = field(default_factory=dict)         # per bar [kg]
    warnings: list = field(default_factory=list)           # e.g. strings slack in a case (model assumes taut)

    @property
    def noise_estimate(self) -> float:
        """Old name of :attr:`misfit_rms` (it is the misfit, which includes model error, not the noise)."""
        return self.misfit_rms

    def unidentifiable_names(self) -> list:
        """Names of all parameters the data cannot determine (in a weak or null direction)."""
        return [n for n, ok in zip(self.names, self.identifiable) if not ok]

    def as_dict(self) -> dict:
        """JSON-ready report."""
        def num(x):
            return float(x) if np.isfinite(x) else None
        strings = list(self.string_stiffness)
        return {
            "parameters": [{"name": n, "kind": k, "unit": u, "initial": num(i), "estimate": num(e),
                            "std_error": num(s), "std_error_model": num(sm), "std_error_jackknife": num(sj),
                            "std_error_method": m, "identifiable": bool(ok)}
                           for n, k, u, i, e, s, sm, sj, m, ok in
                           zip(self.names, self.kinds, self.units, self.initial, self.estimate, self.std_error,
                               self.std_error_model, self.std_error_jackknife, self.std_error_method,
                               self.identifiable)],
            "condition_number": num(self.condition_number),
            "unidentifiable": self.unidentifiable, "unidentifiable_names": self.unidentifiable_names(),
            "misfit_rms_m": num(self.misfit_rms), "noise_m": None if self.noise is None else num(self.noise),
            "cases": [{"name": n, "position_correction_rms_m": num(r), "mean_tension_N": num(mt),
                       "mean_tension_std_error_N": num(ms),
                       "tensions_N": {s: num(x) for s, x in zip(strings, t)},
                       "tension_std_error_N": {s: num(x) for s, x in zip(strings, ts)}}
                      for n, r, mt, ms, t, ts in zip(self.case_names, self.case_residual_rms, self.mean_tension,
                                                     self.mean_tension_std_error, self.tensions,
                                                     self.tension_std_error)],
            "dof": self.dof, "groups": self.groups, "warnings": self.warnings,
        }


def load_forces(model: Model, loads, where: str = "case") -> np.ndarray:
    """External forces (mu,3) [N] from loads ``[{'node': name, 'mass': kg} | {'node': name, 'force': [fx,fy,fz]}]``
    (a mass hangs in the model's gravity)."""
    F = np.zeros((model.n_physical, 3))
    for i, ld in enumerate(loads or []):
        if not isinstance(ld, dict) or "node" not in ld or (("mass" in ld) == ("force" in ld)):
            raise ValueError(f"{where}: load {i} must be {{node: NAME, mass: KG}} or {{node: NAME, force: [fx, fy, fz]}},"
                             f" got {ld!r}")
        name = ld["node"]
        if name not in model.node_names[:model.n_physical]:
            raise ValueError(f"{where}: load {i} names unknown node {name!r}; use one of the model's nodes "
                             f"({', '.join(model.node_names[:min(8, model.n_physical)])}, ...)")
        if "mass" in ld and not np.any(model.gravity):
            raise ValueError(f"{where}: load {i} hangs {ld['mass']!r} kg on {name!r}, but model '{model.name}' has "
                             "zero gravity, so a mass weighs nothing: give gravity in the model file (e.g. "
                             "gravity: [0, 0, -9.81]) or the load as force: [fx, fy, fz] in N")
        if "mass" in ld:
            f = float(ld["mass"]) * model.gravity
        else:
            f = np.asarray(ld["force"], float)
            if f.shape != (3,):
                raise ValueError(f"{where}: load {i}: force must be [fx, fy, fz] in N, got {ld['force']!r}")
        if not np.all(np.isfinite(f)):
            raise ValueError(f"{where}: load {i} on {name!r} is not finite; give a finite mass [kg] or force [N]")
        F[model.node_names.index(name)] += f
    return F


def _check_case(model: Model, case, k: int, bar_tol=None) -> StaticCase:
    if not isinstance(case, StaticCase):
        pos, forces = case
        case = StaticCase(pos, forces, f"case {k}")
    name = case.name or f"case {k}"
    P = np.asarray(case.positions, float)
    mu = model.n_physical
    if P.shape != (mu, 3):
        raise ValueError(f"{name}: positions have shape {P.shape}, model '{model.name}' has {mu} physical nodes; "
                         f"give one [x, y, z] row per physical node in model order ({', '.join(model.node_names[:3])}, ...)")
    bad = ~np.all(np.isfinite(P), axis=1)
    if bad.any():
        raise ValueError(f"{name}: positions of {', '.join(np.array(model.node_names[:mu])[bad][:5])} are not finite "
                         "(NaN/inf, e.g. an occluded marker); use a capture where every node is seen, or fill the gap")
    problem = geometry_problem(model, P, bar_tol)
    if problem:
        raise ValueError(f"{name}: {problem}")
    F = np.zeros((mu, 3)) if case.forces is None else np.asarray(case.forces, float)
    if F.shape == (model.n_nodes, 3):
        F = F[:mu]
    if F.shape != (mu, 3) or not np.all(np.isfinite(F)):
        raise ValueError(f"{name}: forces must be finite, shape ({mu}, 3) [N], got shape {F.shape}; "
                         "build them with load_forces(model, [{'node': ..., 'mass': ...}])")
    return StaticCase(P, F, name, case.noise)


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


def _groups(model: Model, groups):
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


def identify_static(model: Model, cases, params=("stiffness",), groups=None, regularization: float = 0.0,
                    rcond: float = 1e-8, rel_tol: float = 0.025,
                    max_iter: int = 8, bar_tol: float | None = BAR_TOL,
                    noise: float | None = None) -> StaticIdentification:
    """Identify ``params`` (subset of 'stiffness', 'rest_length', 'bar_mass') from equilibrium ``cases``
    (:class:`StaticCase` or (positions (mu,3) m, forces (mu,3) N) tuples).

    ``groups``: None (one stiffness per string), 'model' (strings with the same model ``group`` share one)
    or {string: label}. ``regularization`` λ ≥ 0: Tikhonov damping of the deviation from the model's values
    (in column-normalised relative units, so singular values below λ, of at most 1, are pulled toward the
    model); 0 keeps the model's values only in null directions (singular values < ``rcond`` × largest).
    A parameter is flagged unidentifiable when its standard error exceeds ``rel_tol`` of its estimate
    (default 2.5 %, so about 2 standard errors stay within 5 %) or it lies in a null direction. ``noise``
    [m]: the captures' noise per coordinate (default: the cases' own ``noise``, else unknown). ``max_iter``:
    Gauss-Helmert iterations (at least 2; the first is an unweighted equation-error fit). Before fitting,
    each case's size and bar lengths are checked against the model (a take in mm, swapped node labels:
    :func:`.identify_geometry.geometry_problem`, bars within ``bar_tol``, relative; None skips the bars).
    """
    if not (np.isfinite(regularization) and regularization >= 0):
        raise ValueError(f"regularization must be a finite number >= 0, got {regularization!r}")
    params = tuple(params)
    if not params or any(p not in PARAM_KINDS for p in params):
        raise ValueError(f"params must be a non-empty subset of {PARAM_KINDS}, got {params!r}")
    cases = [_check_case(model, c, k, bar_tol) for k, c in enumerate(cases)]
    if not cases:
        raise ValueError("no cases: give at least one (positions, forces) equilibrium capture")
    nc, nb = len(model.string_names), len(model.bar_names)
    ea_mode = ~np.isnan(model.string_EA)
    k_nom = np.where(ea_mode, model.string_EA, model.string_stiffness)   # EA [N] or kappa [N/m]
    rest0 = model.rest_length.copy()
    grp = _groups(model, groups)
    g_of = np.empty(nc, int)
    for gi, (_, members) in enumerate(grp):
        g_of[members] = gi
    fit_k, fit_r, fit_m = "stiffness" in params, "rest_length" in params, "bar_mass" in params
    if not (fit_k or fit_r) and not fit_m:
        raise ValueError("nothing to identify")
    # linear parameters theta (tension t = G theta + h) and their nominal values
    ng = len(grp)
    lin_nom = []
    if fit_k:      # group: spring kappa (or EA for EA groups)
        lin_nom += [k_nom[m[0]] for _, m in grp]
    if fit_r:      # per string: spring kappa*xi0 (both) / xi0 (rest only); EA: EA/xi0 (both) / 1/xi0 (rest only)
        for c in range(nc):
            if fit_k:
                lin_nom.append(k_nom[c] / rest0[c] if ea_mode[c] else k_nom[c] * rest0[c])
            else:
                lin_nom.append(1.0 / rest0[c] if ea_mode[c] else rest0[c])
    if fit_m:
        lin_nom += list(model.bar_mass)
    lin_nom = np.asarray(lin_nom, float)
    scale = np.where(np.abs(lin_nom) > 0, np.abs(lin_nom), 1.0)
    nk = ng if fit_k else 0
    nr = nc if fit_r else 0
    p = len(lin_nom)

    grav_end = np.zeros((model.n_nodes, 3, nb))       # unit bar mass: half its weight on each end
    for i, (j, k) in enumerate(model.bars):
        grav_end[j, :, i] += 0.5 * model.gravity
        grav_end[k, :, i] += 0.5 * model.gravity
    bar_w = np.einsum("nr,ndb->rdb", model.Q, grav_end).reshape(3 * model.Q.shape[1], nb)
    kap0 = model.string_stiffness_at(rest0)

    def tension_map(L):
        """(G (sigma_c, p), h (sigma_c,)): string tensions t = G theta + h at string lengths L [m]."""
        G = np.zeros((nc, p))
        h = np.zeros(nc)
        c = np.arange(nc)
        if fit_k and fit_r:
            G[c, g_of] = np.where(ea_mode, -1.0, L)
            G[c, nk + c] = np.where(ea_mode, L, -1.0)
        elif fit_k:
            G[c, g_of] = np.where(ea_mode, L / rest0 - 1.0, L - rest0)
        elif fit_r:
            G[c, c] = np.where(ea_mode, k_nom * L, -k_nom)
            h = np.where(ea_mode, -k_nom, k_nom * L)
        else:
            h = kap0 * (L - rest0)
        return G, h

    def system(P, forces):
        """(A (3r,p), B (3r,beta), b (3r,)) with reduced balance residual A theta + B f - b at positions P."""
        X = model.from_physical(P)
        F = np.zeros((model.n_nodes, 3))
        F[:model.n_physical] = forces
        E, Wr = equilibrium_matrix(model, X, F)
        Et = E[:, :nc]
        if fit_m:                                   # known gravity only from point masses
            Wr = Wr - bar_w @ model.bar_mass
        G, h = tension_map(model.string_lengths(X))
        A = Et @ G
        if fit_m:
            A[:, nk + nr:] = bar_w
        return A, E[:, nc:], -(Wr + Et @ h)

    def jac_positions(P, forces, th, f):
        """d(residual)/d(physical positions) (3r, 3 mu), central differences (h = 1e-6 m)."""
        cols = []
        for q in range(P.size):
            d = np.zeros(P.size)
            d[q] = 1e-6
            r = [Ak @ th + Bk @ f - bk for Ak, Bk, bk in (system(P + s * d.reshape(P.shape), forces) for s in (1, -1))]
            cols.append((r[0] - r[1]) / 2e-6)
        return np.stack(cols, axis=1)

    # Gauss-Helmert iteration: the measured positions are noisy, so solve for corrected positions too
    # (smallest position corrections that make every case an exact equilibrium), weighting each case's
    # force residual by (J J^T)^-1 with J = d residual / d positions.
    corrected = [c.positions.copy() for c in cases]
    weights = [None] * len(cases)
    theta = lin_nom.copy()
    bar_f = [np.zeros(nb) for _ in cases]
    for it in range(max(int(max_iter), 2)):        # the first pass is unweighted
        rows_A, rows_b, case_rows, parts = [], [], [], []
        for k, case in enumerate(cases):
            A, B, b = system(corrected[k], case.forces)
            J = None
            if weights[k] is not None:
                J = jac_positions(corrected[k], case.forces, theta, bar_f[k])
                b = b - J @ (case.positions - corrected[k]).ravel()
                C = J @ J.T
                Lc = linalg.cholesky(C + 1e-12 * np.trace(C) / len(C) * np.eye(len(C)), lower=True)
                A, B, b = (linalg.solve_triangular(Lc, M, lower=True) for M in (A, B, b))
            N = linalg.null_space(B.T) if nb else np.eye(len(b))   # eliminate the bar forces of this case
            rows_A.append(N.T @ A)
            rows_b.append(N.T @ b)
            case_rows.append(N.shape[1])
            parts.append((A, B, b, J))
        A = np.vstack(rows_A) * scale               # relative units: theta = lin_nom + scale * delta
        b = np.concatenate(rows_b) - np.vstack(rows_A) @ lin_nom
        delta, S, keep, nl = _solve(A, b, rcond, regularization)
        new = lin_nom + scale * delta
        step = np.max(np.abs(new - theta) / scale)
        theta = new
        for k, (Ak, Bk, bk, J) in enumerate(parts):
            rk = bk - Ak @ theta
            bar_f[k] = linalg.lstsq(Bk, rk)[0] if nb else np.zeros(0)
            if J is not None:                       # corrections v = -J^T C^-1 (misclosure), whitened
                w = Ak @ theta + Bk @ bar_f[k] - bk
                C = J @ J.T
                Lc = linalg.cholesky(C + 1e-12 * np.trace(C) / len(C) * np.eye(len(C)), lower=True)
                v = -J.T @ linalg.solve_triangular(Lc.T, w, lower=False)
                corrected[k] = cases[k].positions + v.reshape(-1, 3)
            weights[k] = True
        if it > 0 and step < 1e-9:
            break
    resid = b - A @ delta
    dof = max(len(b) - int(keep.sum()), 1)
    misfit = float(np.sqrt(resid @ resid / dof))
    cond = float(S[0] / S[nl - 1]) if nl and S[nl - 1] > 0 else float("inf")   # of the columns some row sees

    names, kinds, units, init = [], [], [], []
    for gname, members in (grp if fit_k else []):
        names.append(f"stiffness:{gname}")
        kinds.append("stiffness")
        units.append("N" if ea_mode[members[0]] else "N/m")
        init.append(k_nom[members[0]])
    if fit_r:
        names += [f"rest_length:{s}" for s in model.string_names]
        kinds += ["rest_length"] * nc
        units += ["m"] * nc
        init += list(rest0)
    if fit_m:
        names += [f"bar_mass:{bn}" for bn in model.bar_names]
        kinds += ["bar_mass"] * nb
        units += ["kg"] * nb
        init += list(model.bar_mass)
    init = np.asarray(init, float)

    def natural(th):
        """(natural values (p,), D = d natural / d theta (p, p)); the order of theta: groups, strings, bars."""
        val, D = th.copy(), np.eye(p)
        if fit_r:
            r = nk + np.arange(nc)
            tc, tg = th[r], (th[g_of] if fit_k else None)
            with np.errstate(divide="ignore", invalid="ignore"):
                if fit_k:      # xi0 = EA / (EA/xi0), spring: (kappa xi0) / kappa
                    val[r] = np.where(ea_mode, tg / tc, tc / tg)
                    D[r, r] = np.where(ea_mode, -tg / tc ** 2, 1.0 / tg)
                    D[r, g_of] = np.where(ea_mode, 1.0 / tc, -tc / tg ** 2)
                else:          # xi0 = 1 / (1/xi0), spring: xi0
                    val[r] = np.where(ea_mode, 1.0 / tc, tc)
                    D[r, r] = np.where(ea_mode, -1.0 / tc ** 2, 1.0)
        return val, D

    est, D = natural(theta)
    noise = _noise_level(cases, noise)
    ref = reference(est, init)
    M = linalg.pinv(D) * ref                        # d theta / d(relative natural parameters)
    tmaps = [tension_map(model.string_lengths(model.from_physical(P))) for P in corrected]
    info = information(relative_jacobian(np.vstack(rows_A), D, ref), max(misfit, noise or 0.0), rcond)
    T_rows = [G @ M for G, _ in tmaps]              # d tensions / d(relative parameters), per case
    seen = [np.isfinite(functional_se(info, R)) for R in T_rows]
    Q = np.vstack([np.diag(ref)] + T_rows + [R[m].mean(axis=0, keepdims=True) if m.any() else np.zeros((1, p))
                                             for R, m in zip(T_rows, seen)])

    def quantities(th):
        """Natural parameters, tensions per case [N], mean tension per case [N] at theta."""
        t = [G @ th + h for G, h in tmaps]
        return np.concatenate([natural(th)[0]] + t + [[x[m].mean() if m.any() else np.nan] for x, m in zip(t, seen)])

    se_m = functional_se(info, Q)
    se_j, top, share = _jackknife(info, resid, rows_A, D, ref, Q, rcond)
    se_all, method = larger_se(se_m, se_j)
    ident, weak = classify(names, ref, se_all[:p], info, rel_tol)
    q = quantities(theta)
    ncase = len(cases)
    split = [p, p + ncase * nc]

    res_warn = _misfit_warnings(misfit, noise, [c.name for c in cases], names, se_m[:p], se_j[:p],
                                top[:p], share[:p])
    r_off = ng if fit_k else 0
    rest_est = est[r_off:r_off + nc] if fit_r else rest0
    for k, case in enumerate(cases):                 # the balance assumes taut strings: check the estimate
        L = model.string_lengths(model.from_physical(corrected[k]))
        t = q[split[0] + k * nc:split[0] + (k + 1) * nc]
        for c in np.flatnonzero((t <= 0) | (L <= rest_est)):
            res_warn.append(f"{case.name}: string '{model.string_names[c]}' comes out slack ({t[c]:.3g} N) but the "
                            "equations assume every string taut; leave this case out or check its loads")
    case_rms = [float(np.sqrt(np.mean((corrected[k] - c.positions) ** 2))) for k, c in enumerate(cases)]

    res = StaticIdentification(names, kinds, units, init, est, se_all[:p], ident, cond, weak, misfit, case_rms,
                               [c.name for c in cases], dof, {g: [model.string_names[c] for c in m] for g, m in grp},
                               warnings=res_warn, noise=noise, std_error_model=se_m[:p],
                               std_error_jackknife=se_j[:p], std_error_method=method[:p],
                               tensions=q[split[0]:split[1]].reshape(ncase, nc),
                               tension_std_error=se_all[split[0]:split[1]].reshape(ncase, nc),
                               mean_tension=q[split[1]:], mean_tension_std_error=se_all[split[1]:])
    res.string_stiffness = {model.string_names[c]: ("EA" if ea_mode[c] else "stiffness",
                                                    float(est[g_of[c]]) if fit_k else float(k_nom[c]))
                            for c in range(nc)}
    res.rest_lengths = {model.string_names[c]: float(est[r_off + c]) if fit_r else float(rest0[c]) for c in range(nc)}
    m_off = r_off + (nc if fit_r else 0)
    res.bar_masses = {bn: float(est[m_off + i]) if fit_m else float(model.bar_mass[i])
                      for i, bn in enumerate(model.bar_names)}
    return res


# The misfit is "well above" the noise beyond this ratio: with a correct model misfit/noise is 1 within
# ~1/sqrt(2 dof) (< 25 % for dof >= 8), and a frame scatter overstates the noise of averaged positions.
MISFIT_RATIO = 2.0


def _noise_level(cases, noise):
    """The captures' noise per coordinate [m]: ``noise`` if given, else the RMS of the cases' own, else None."""
    if noise is not None:
        if not (np.isfinite(noise) and noise >= 0):
            raise ValueError(f"noise must be a finite number >= 0 [m], got {noise!r}")
        return float(noise)
    own = [c.noise for c in cases if c.noise is not None and np.isfinite(c.noise)]
    return float(np.sqrt(np.mean(np.square(own)))) if own else None


def _jackknife(info, resid, rows_A, D, ref, Q, rcond) -> tuple:
    """Leave-one-case-out jackknife standard errors of the quantities ``Q δ`` and the case contributing most
    to each (NaN: fewer than 2 cases, or a quantity one case alone determines: without its rows it lies in
    a null direction)."""
    n = len(rows_A)
    ok = [null_share(information(relative_jacobian(np.vstack(rows_A[:k] + rows_A[k + 1:]), D, ref), 1.0, rcond), Q)
          < NULL_SHARE for k in range(n)] if n > 1 else []
    return jackknife_se(case_influence(info, resid, [len(R) for R in rows_A]), Q, ok)


# One case "dominates" a jackknife error when its replicate gives over 90 % of the variance (of 3+ cases
# contributing evenly none gives more than ~2/3) and the error is over twice the model-based one.
DOMINANT_SHARE = 0.9


def _misfit_warnings(misfit, noise, case_names, names, se_model, se_jack, top, share) -> list:
    """Warnings: the misfit well above the noise; parameters the jackknife cannot check (one case alone
    determines them); jackknife errors that come from leaving out one case (the estimate hinges on it)."""
    out = []
    if noise is not None and misfit > MISFIT_RATIO * noise:
        out.append(f"the misfit ({misfit * 1e3:.3g} mm RMS) is {misfit / max(noise, 1e-300):.3g}x the capture noise "
                   f"({noise * 1e3:.3g} mm): the model does not explain the captures to their noise (model error); "
                   + ("standard errors are the larger of the model-based and the leave-one-case-out jackknife"
                      if len(case_names) > 1 else "with one case the standard errors cannot be checked across cases "
                      "and, treating the misfit as random, may be too small: add cases"))
    lone = [n for n, m, j in zip(names, se_model, se_jack) if np.isfinite(m) and not np.isfinite(j)]
    if len(case_names) > 1 and lone:
        out.append(f"{', '.join(lone[:5])}{' ...' if len(lone) > 5 else ''}: determined by a single case only, so "
                   "the jackknife cannot check the standard error (model-based only)")
    for k, case in enumerate(case_names):
        hinge = [n for n, m, j, t, f in zip(names, se_model, se_jack, top, share)
                 if t == k and f > DOMINANT_SHARE and j > 2 * m]
        if hinge and len(case_names) > 2:
            out.append(f"{', '.join(hinge[:5])}{' ...' if len(hinge) > 5 else ''}: the jackknife error comes from "
                       f"leaving out '{case}' (the estimate hinges on that case; add cases like it)")
    return out


def identified_model(model: Model, result: StaticIdentification) -> Model:
    """A copy of ``model`` with the identified stiffnesses, rest lengths and bar masses."""
    spec = model.spec
    strings = []
    for s in spec.strings:
        mode, val = result.string_stiffness[s.name]
        kw = {"EA": val} if mode == "EA" else {"stiffness": val}
        strings.append(replace(s, rest_length=result.rest_lengths[s.name], tension=None, **kw))
    bars = tuple(replace(b, mass=result.bar_masses[b.name]) for b in spec.bars)
    for name, val in list(result.string_stiffness.items()) + [(k, (None, v)) for k, v in result.rest_lengths.items()]:
        if not (np.isfinite(val[1]) and val[1] > 0):
            raise ValueError(f"identified value for string {name!r} is {val[1]!r}, not a positive number: the data "
                             "do not support it; add load cases or identify fewer parameters")
    return build_model(replace(spec, strings=tuple(strings), bars=bars))


def predict(model: Model, forces, X=None, boundary=None) -> np.ndarray:
    """Equilibrium shape (mu,3) [m] of ``model`` under external nodal forces (mu,3) or (n,3) [N] (via settle).
    ``boundary``: a take's measured positions (mu,3) [m]; the model is first moved rigidly onto its fixed
    nodes there (:func:`.identify_boundary.placed_at`), so the shape is in the take's frame."""
    if boundary is not None:
        from tensegrity_engine.identify.boundary import placed_at
        model, X = placed_at(model, boundary)[0], None
    F = np.zeros((model.n_nodes, 3))
    f = np.asarray(forces, float)
    F[:f.shape[0]] = f
    eq = settle(model, X=X, external=F)
    return eq.positions[:model.n_physical]


def apply(model_document_or_path, result: StaticIdentification, source: str = "") -> dict:
    """The model document (YAML-ready dict) with the identified values and a provenance note in ``notes``
    (the schema's free-text field; the loader rejects unknown top-level keys)."""
    src = model_document_or_path
    if isinstance(src, Model):
        model = src
    elif isinstance(src, dict):
        from tensegrity_engine.model.spec import spec_from_dict
        model = build_model(spec_from_dict(src, "<document>"))
    else:
        model = load_model(src if not isinstance(src, Path) else str(src))
    title = (f"Identified (static) {{stamp}} from {len(result.case_names)} case(s)" + (f" of {source}" if source else "")
             + f": misfit {result.misfit_rms * 1e3:.3g} mm RMS"
             + (f" (capture noise {result.noise * 1e3:.3g} mm)" if result.noise is not None else "")
             + f", condition number {result.condition_number:.3g}.")
    return document_with_provenance(identified_model(model, result), title, result)


def document_with_provenance(identified: Model, title: str, result) -> dict:
    """``identified``'s document with ``title`` (``{stamp}`` -> UTC time) and one line per parameter of
    ``result`` (names, units, initial, estimate, std_error, identifiable) appended to ``notes``."""
    from tensegrity_engine.model.write import spec_to_dict
    doc = _plain(spec_to_dict(identified))
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [title.replace("{stamp}", stamp)]
    for n, u, i, e, s, ok in zip(result.names, result.units, result.initial, result.estimate, result.std_error,
                                 result.identifiable):
        lines.append(f"{n}: {i:.6g} -> {e:.6g} +- {s:.2g} {u}" + ("" if ok else " (not identifiable, check)"))
    prov = "\n".join(lines)
    old = doc.get("notes", "")
    text = (old + "\n\n" if old else "") + prov
    if len(text) > 10_000:                         # schema limit for notes
        text = (old + "\n\n" if old else "") + lines[0]
        text = text[-10_000:]
    doc["notes"] = text
    return doc


def _plain(obj):
    """Plain dicts and lists (the model writer's flow-style subclasses are not safe_dump-able)."""
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj
