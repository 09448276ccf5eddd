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
determine them when the stiffnesses and rest lengths behind them are not. The equations and the
Gauss-Helmert iteration are in :mod:`.static_fit`; this module checks the input and reports the result.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from scipy import linalg

from tensegrity_engine.identify.boundary import resting_supports
from tensegrity_engine.statics.equilibrium import settle
from tensegrity_engine.identify.geometry import BAR_TOL, geometry_problem
from tensegrity_engine.identify import static_supports as sc
from tensegrity_engine.identify.static_fit import StaticEquations, StaticFit, gauss_helmert, static_equations
from tensegrity_engine.identify.uncertainty import (NULL_SHARE, case_influence, classify, functional_se, information,
                                   jackknife_se, larger_se, null_share, reference, relative_jacobian)
from tensegrity_engine.model.build import build_model
from tensegrity_engine.model.load import load_model
from tensegrity_engine.model.markers import marker_positions, nodes_from_markers
from tensegrity_engine.model.model import Model

PARAM_KINDS = ("stiffness", "rest_length", "bar_mass", "support_stiffness", "rest_direction")


@dataclass
class StaticCase:
    """One equilibrium capture: the physical nodes' measured marker positions (mu,3) [m] (the nodes, unless the
    model puts a ``marker`` off them: the fit then starts from the bar ends behind them) and external nodal
    forces (mu,3) [N];
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
    support_stiffness: dict = field(default_factory=dict)  # per compliant support [N/m or N m/rad]
    rest_direction: dict = field(default_factory=dict)     # per rotational support: unit rest direction (3,)
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
            "rest_direction": {k: [float(x) for x in v] for k, v in self.rest_direction.items()},
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
    P = nodes_from_markers(model, P)          # the measured markers' bar ends (the markers where none is off)
    F = np.zeros((mu, 3)) if case.forces is None else np.asarray(case.forces, float)
    if F.shape == (model.n_nodes, 3):
        F = F[:mu]
    if F.shape != (mu, 3) or not np.all(np.isfinite(F)):
        raise ValueError(f"{name}: forces must be finite, shape ({mu}, 3) [N], got shape {F.shape}; "
                         "build them with load_forces(model, [{'node': ..., 'mass': ...}])")
    return StaticCase(P, F, name, case.noise)


def identify_static(model: Model, cases, params=("stiffness",), groups=None, regularization: float = 0.0,
                    rcond: float = 1e-8, rel_tol: float = 0.025,
                    max_iter: int = 8, bar_tol: float | None = BAR_TOL,
                    noise: float | None = None) -> StaticIdentification:
    """Identify ``params`` (subset of 'stiffness', 'rest_length', 'bar_mass') from equilibrium ``cases``
    (:class:`StaticCase` or (positions (mu,3) m, forces (mu,3) N) tuples). A model with obstacles stands on
    them: the nodes resting on them in the first case are its supports (:func:`.boundary.resting_supports`).

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
    params = _checked_options(regularization, params)
    cases = [_check_case(model, c, k, bar_tol) for k, c in enumerate(cases)]
    if not cases:
        raise ValueError("no cases: give at least one (positions, forces) equilibrium capture")
    notes = []
    if model.obstacles:               # a robot standing on the floor: the nodes it stands on are its supports
        model, resting = resting_supports(model, cases[0].positions)
        notes.append(f"supports: the nodes resting on the obstacles in '{cases[0].name}' ({', '.join(resting)}) "
                     "carry unknown reactions (fixed where that take measured them)")
    eq = static_equations(model, params, groups)
    fit = gauss_helmert(eq, cases, rcond, regularization, max_iter)
    dof, misfit, cond = _fit_quality(fit)
    names, kinds, units, init = eq.parameter_table()
    est, D = eq.natural(fit.theta)
    noise = _noise_level(cases, noise)
    err = _reported_errors(eq, fit, est, D, _reference(est, init, kinds), max(misfit, noise or 0.0), rcond)
    p = eq.p
    ident, weak = classify(names, err.ref, err.se[:p], err.info, rel_tol)
    warnings = _misfit_warnings(misfit, noise, [c.name for c in cases], names, err.se_model[:p],
                                err.se_jackknife[:p], err.top[:p], err.share[:p])
    warnings += _slack_warnings(eq, cases, fit.corrected, err.value, est) + notes
    case_rms = [float(np.sqrt(np.mean((fit.corrected[k] - c.positions) ** 2))) for k, c in enumerate(cases)]
    res = StaticIdentification(names, kinds, units, init, est, err.se[:p], ident, cond, weak, misfit, case_rms,
                               [c.name for c in cases], dof,
                               {g: [model.string_names[c] for c in m] for g, m in eq.groups},
                               warnings=warnings, noise=noise, std_error_model=err.se_model[:p],
                               std_error_jackknife=err.se_jackknife[:p], std_error_method=err.method[:p])
    _set_tensions(res, err, len(cases), eq.nc, p)
    _set_natural_values(res, eq, est)
    return res


def _fit_quality(fit: StaticFit) -> tuple:
    """(degrees of freedom, misfit [m]: RMS of the whitened residual per dof, condition number of the
    columns some equation sees)."""
    dof = max(len(fit.resid) - int(fit.keep.sum()), 1)
    misfit = float(np.sqrt(fit.resid @ fit.resid / dof))
    S, nl = fit.S, fit.nl
    cond = float(S[0] / S[nl - 1]) if nl and S[nl - 1] > 0 else float("inf")
    return dof, misfit, cond


def _checked_options(regularization, params) -> tuple:
    """``params`` as a tuple, after checking it and ``regularization`` (ValueError naming the fix)."""
    if not (np.isfinite(regularization) and regularization >= 0):
        raise ValueError(f"regularization must be a finite number >= 0, got {regularization!r}")
    params = tuple(params)
    if not params or any(p not in PARAM_KINDS for p in params):
        raise ValueError(f"params must be a non-empty subset of {PARAM_KINDS}, got {params!r}")
    return params


@dataclass
class _ReportedErrors:
    """The reported quantities at the solution and their standard errors. Quantities, in this order: the
    natural parameters (p), the string tensions of every case [N] (cases x strings), the mean tension of
    every case [N] over the strings the data see."""
    value: np.ndarray               # the quantities at the solution
    se: np.ndarray                  # the larger of se_model and se_jackknife
    method: list                    # per quantity: 'model' | 'jackknife'
    se_model: np.ndarray
    se_jackknife: np.ndarray        # NaN: < 2 cases or one case alone sees it
    top: np.ndarray                 # the case contributing most to the jackknife error
    share: np.ndarray               # its share of the jackknife variance
    info: object                    # information of the relative natural parameters
    ref: np.ndarray                 # reference values the relative parameters are scaled by


def _reported_errors(eq: StaticEquations, fit: StaticFit, est, D, ref, sigma: float,
                     rcond: float) -> _ReportedErrors:
    """Values and standard errors (model-based at residual scale ``sigma`` [m], and jackknife) of the
    natural parameters ``est`` (D = d est / d theta), tensions and mean tensions, in relative natural units."""
    p, model = eq.p, eq.model
    M = linalg.pinv(D) * ref                        # d theta / d(relative natural parameters)
    tmaps = [eq.tension_map(model.string_lengths(model.from_physical(P))) for P in fit.corrected]
    info = information(relative_jacobian(np.vstack(fit.rows_A), D, ref), sigma, rcond)
    T_rows = [G @ M for G, _ in tmaps]              # d tensions / d(relative parameters), per case
    seen = [np.isfinite(functional_se(info, R)) for R in T_rows]
    Q = np.vstack([np.diag(ref)] + T_rows + [R[m].mean(axis=0, keepdims=True) if m.any() else np.zeros((1, p))
                                             for R, m in zip(T_rows, seen)])
    t = [G @ fit.theta + h for G, h in tmaps]       # tensions per case [N]
    value = np.concatenate([est] + t + [[x[m].mean() if m.any() else np.nan] for x, m in zip(t, seen)])
    se_m = functional_se(info, Q)
    se_j, top, share = _jackknife(info, fit.resid, fit.rows_A, D, ref, Q, rcond)
    se_all, method = larger_se(se_m, se_j)
    return _ReportedErrors(value, se_all, method, se_m, se_j, top, share, info, ref)


def _slack_warnings(eq: StaticEquations, cases: list, corrected: list, q, est) -> list:
    """The balance assumes taut strings: a warning for every string whose estimated tension (in ``q``, after
    the p parameters) is not positive, or whose length is not above its rest length, in a case."""
    model, nc, p = eq.model, eq.nc, eq.p
    r_off = eq.ng if eq.fit_k else 0
    rest_est = est[r_off:r_off + nc] if eq.fit_r else eq.rest0
    out = []
    for k, case in enumerate(cases):
        L = model.string_lengths(model.from_physical(corrected[k]))
        t = q[p + k * nc:p + (k + 1) * nc]
        for c in np.flatnonzero((t <= 0) | (L <= rest_est)):
            out.append(f"{case.name}: string '{model.string_names[c]}' comes out slack ({t[c]:.3g} N) but the "
                       "equations assume every string taut; leave this case out or check its loads")
    return out


def _set_tensions(res: StaticIdentification, err: _ReportedErrors, ncase: int, nc: int, p: int):
    """Tensions per case and string [N] and mean tension per case [N], with standard errors."""
    split = [p, p + ncase * nc]
    res.tensions = err.value[split[0]:split[1]].reshape(ncase, nc)
    res.tension_std_error = err.se[split[0]:split[1]].reshape(ncase, nc)
    res.mean_tension = err.value[split[1]:]
    res.mean_tension_std_error = err.se[split[1]:]


def _set_natural_values(res: StaticIdentification, eq: StaticEquations, est):
    """Per string its stiffness (kind, value) and rest length [m], per bar its mass [kg]: estimated where
    fitted, the model's otherwise."""
    model, nc = eq.model, eq.nc
    r_off = eq.ng if eq.fit_k else 0
    res.string_stiffness = {model.string_names[c]: ("EA" if eq.ea_mode[c] else "stiffness",
                                                    float(est[eq.g_of[c]]) if eq.fit_k else float(eq.k_nom[c]))
                            for c in range(nc)}
    res.rest_lengths = {model.string_names[c]: float(est[r_off + c]) if eq.fit_r else float(eq.rest0[c])
                        for c in range(nc)}
    m_off = r_off + (nc if eq.fit_r else 0)
    res.bar_masses = {bn: float(est[m_off + i]) if eq.fit_m else float(model.bar_mass[i])
                      for i, bn in enumerate(model.bar_names)}
    k, r = sc.values(model, eq.sup_cols, est[eq.p - eq.ns:])
    res.support_stiffness = k
    res.rest_direction = r if "rest_direction" in res.kinds else {}


def _reference(est, init, kinds) -> np.ndarray:
    """The sizes relative standard errors are judged against: |estimate|, and for an angle (near 0, with no
    relative size) :data:`.static_supports.ANGLE_REF`."""
    ref = reference(est, init)
    return np.where(np.asarray(kinds) == "rest_direction", sc.ANGLE_REF, ref)


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
    found = getattr(result, "support_stiffness", None) or {}
    turned = getattr(result, "rest_direction", None) or {}
    supports = tuple(replace(s, stiffness=found[s.name]) if s.name in found else s for s in spec.supports)
    supports = tuple(replace(s, reference=tuple(float(x) for x in turned[s.name])) if s.name in turned else s
                     for s in supports)
    for name, val in list(result.string_stiffness.items()) + [(k, (None, v)) for k, v in result.rest_lengths.items()]:
        if not (np.isfinite(val[1]) and val[1] > 0):
            raise ValueError(f"identified value for string {name!r} is {val[1]!r}, not a positive number: the data "
                             "do not support it; add load cases or identify fewer parameters")
    for name, val in found.items():
        if not (np.isfinite(val) and val > 0):
            raise ValueError(f"identified stiffness of support {name!r} is {val!r}, not a positive number: the data "
                             "do not support it; add load cases that turn or push the support, or fix its stiffness")
    return build_model(replace(spec, strings=tuple(strings), bars=bars, supports=supports))


def predict(model: Model, forces, X=None, boundary=None) -> np.ndarray:
    """Equilibrium shape (mu,3) [m] of ``model`` under external nodal forces (mu,3) or (n,3) [N] (via settle).
    ``boundary``: a take's measured (marker) positions (mu,3) [m]; the model is first moved rigidly onto its
    fixed nodes there (:func:`.identify_boundary.placed_at`), so the shape is in the take's frame. Returns
    node positions: :func:`predict_markers` gives what a capture sees."""
    if boundary is not None:
        from tensegrity_engine.identify.boundary import placed_at
        model, X = placed_at(model, boundary)[0], None
    F = np.zeros((model.n_nodes, 3))
    f = np.asarray(forces, float)
    F[:f.shape[0]] = f
    eq = settle(model, X=X, external=F)
    return eq.positions[:model.n_physical]


def predict_markers(model: Model, forces, boundary=None) -> np.ndarray:
    """The markers' positions (mu,3) [m] of the equilibrium shape :func:`predict` gives (the nodes themselves
    unless the model puts a ``marker`` off them): what a held-out capture is compared with."""
    return marker_positions(model, predict(model, forces, boundary=boundary))


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
