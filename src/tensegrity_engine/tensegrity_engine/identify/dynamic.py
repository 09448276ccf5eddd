"""Dynamic identification: stiffness, string/structural/pulley damping and actuator offsets/delay from
captured trajectories with their commanded inputs, by output-error least squares on the simulation.

    result = identify_dynamic(model, [capture, ...], params=DYNAMIC_PARAMS, groups="model")
    better = result.model()                       # the identified Model
    before, after = predict(model, held_out), predict(better, held_out)   # identify.shooting

A capture is anything with ``t`` (T,) [s], ``nodes`` (T, mu, 3) [m] (NaN = not seen) and ``inputs`` (an
:class:`~tensegrity_engine.dynamics.inputs.InputSchedule` on the capture's clock), e.g.
:class:`~tensegrity_engine.identify.data.DynamicCapture`.

Three stages, each from the previous one's parameters:

1. **linear regressor** (:func:`~tensegrity_engine.identify.signals.regressor_start`): the equation error of
   the constrained accelerations at smoothed measured states; kept as the start only if its simulation
   fits the captures better than the model's own values (a noisy regressor is biased);
2. **multiple shooting**: the capture is cut into windows of ``shooting`` seconds, each simulated from the
   measured (smoothed) state at its start, and the positions of all frames compared. Short windows keep
   the fit out of the local minima of a long simulation that has drifted out of phase;
3. **single shooting** over each whole capture from its first fully seen state: the output error a
   prediction makes, so what is minimised is what is reported. With ``start_states`` that state is
   estimated for the current parameters (:mod:`~tensegrity_engine.identify.sensitivity_start`) and the
   stage runs twice (start, fit, start, fit): a start held at the smoothed capture biases damping and delay.

A stage stops at scipy's tolerances or its evaluation limit (``stopped_by`` in its ``stages`` row says
which; a looser stop learnt nothing on a narrow cost valley: docs/identification.md "Convergence").

Simulation: fixed-step RK4 (``dt`` [s]); Jacobians by finite differences, or (``jacobian="sensitivity"``)
by forward sensitivities, the exact derivative of that simulation
(:mod:`~tensegrity_engine.identify.sensitivity`: same estimates, today 1.3-2x slower).
Residuals are node positions [m] of every frame and seen non-fixed node. Standard errors are
``s² (JᵀJ)⁻¹`` at the solution (``s`` the RMS residual: the misfit, reported apart from the captures'
noise level, which :func:`~tensegrity_engine.identify.signals.noise_level` measures); parameters
the data cannot determine are named (a null or weak direction of J, or a standard error above
``rel_tol`` of the value's scale) and pairs the data cannot separate (correlation above 0.95) are listed.
A stage that stops at its evaluation limit (``max_nfev``) has not converged: the result says so in
``converged`` and ``warnings``, and its standard errors and flags are those of an unfinished fit.
``excitation`` says per parameter how strongly the captures respond to it against their noise, what was
not excited and how to excite it (:mod:`~tensegrity_engine.identify.sensitivity_report`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import least_squares

from tensegrity_engine.identify.parallel import ResidualPool
from tensegrity_engine.identify.params import DEFAULT_PARAMS, model_with, parameters, theta_bounds, values
from tensegrity_engine.identify.sensitivity import unsupported
from tensegrity_engine.identify.sensitivity_start import refine_start
from tensegrity_engine.identify.sensitivity_report import excitation_report
from tensegrity_engine.identify.shooting import prediction_rms, residuals_at, shooting_windows, window_residuals
from tensegrity_engine.identify.signals import noise_level, regressor_start
from tensegrity_engine.model.model import Model


@dataclass
class DynamicIdentification:
    """Result of :func:`identify_dynamic` (natural units per ``units``)."""
    base: Model
    params: list                       # identify_params.Param
    names: list
    kinds: list
    units: list
    initial: np.ndarray
    start: np.ndarray                  # the linear regressor's values
    estimate: np.ndarray
    std_error: np.ndarray
    identifiable: np.ndarray
    unidentifiable: list               # [{'parameters': [...], 'kind': 'null'|'weak'|'correlated', ...}]
    misfit_rms: float                  # m, RMS position residual of the final fit (model error + noise)
    rms_before: list                   # m per fitted capture (whole-capture prediction, initial model)
    rms_after: list                    # m per fitted capture (identified model)
    capture_names: list
    stages: list = field(default_factory=list)    # [{'stage', 'cost', 'evaluations', 'seconds'}]
    settings: dict = field(default_factory=dict)
    noise: float = float("nan")        # m per coordinate, the captures' noise level (identify_signals.noise_level)
    converged: bool = True             # False: the final stage stopped at its evaluation limit
    warnings: list = field(default_factory=list)
    excitation: list = field(default_factory=list)   # identify.sensitivity_report.excitation_report rows

    @property
    def noise_estimate(self) -> float:
        """Old name of :attr:`misfit_rms` (the final fit's residual, not the capture noise)."""
        return self.misfit_rms

    def model(self) -> Model:
        """The identified model."""
        return model_with(self.base, self.params, self.estimate)

    def as_dict(self) -> dict:
        """JSON-ready report."""
        def num(x):
            return float(x) if np.isfinite(x) else None
        return {
            "parameters": [{"name": n, "kind": k, "unit": u, "initial": num(i), "regressor_start": num(s),
                            "estimate": num(e), "std_error": num(se), "identifiable": bool(ok)}
                           for n, k, u, i, s, e, se, ok in zip(self.names, self.kinds, self.units, self.initial,
                                                                self.start, self.estimate, self.std_error,
                                                                self.identifiable)],
            "unidentifiable": self.unidentifiable, "misfit_rms_m": self.misfit_rms, "noise_m": num(self.noise),
            "converged": bool(self.converged), "warnings": list(self.warnings),
            "excitation": [{k: (num(v) if isinstance(v, float) else v) for k, v in row.items()}
                           for row in self.excitation],
            "captures": [{"name": n, "rms_before_m": b, "rms_identified_m": a}
                         for n, b, a in zip(self.capture_names, self.rms_before, self.rms_after)],
            "stages": self.stages, "settings": self.settings}


DIFF_STEP = 1e-3        # finite-difference step in θ (relative to max(1, |θ|)): 0.1 % of a stiffness


STATUS = {0: "evaluation limit", 1: "gradient (gtol)", 2: "cost change (ftol)", 3: "step (xtol)", 4: "cost and step"}

UNCERTAINTY_STEP = 1e-2   # θ step of the central differences for standard errors (averages over kinks)


def _central_jacobian(pool, theta, f0, lo, hi) -> np.ndarray:
    """Central differences (one-sided at a bound) of the residuals at θ, for the standard errors: a tension
    clamp or a string going slack puts kinks in the residuals, where a forward difference can be far off."""
    n = len(theta)
    h = UNCERTAINTY_STEP * np.maximum(1.0, np.abs(theta))
    up = np.minimum(theta + h, hi) - theta
    dn = theta - np.maximum(theta - h, lo)
    E = np.eye(n)
    cols = pool.map([theta + up[i] * E[i] for i in range(n)] + [theta - dn[i] * E[i] for i in range(n)])
    J = np.empty((len(f0), n))
    for i in range(n):
        if up[i] > 0 and dn[i] > 0:
            J[:, i] = (cols[i] - cols[n + i]) / (up[i] + dn[i])
        else:
            J[:, i] = (cols[i] - f0) / up[i] if up[i] > 0 else (f0 - cols[n + i]) / dn[i]
    return J


def _fit(model, plist, windows, theta0, dt, max_nfev, label, stages, progress, workers=1, scheduler=None,
         final_jacobian=False, prior_w=None, jacobian="fd"):
    """Bounded least squares (trust region reflective) on the windows plus the prior rows ``prior_w * θ``.
    Jacobians (``jacobian``): ``"sensitivity"``, the exact derivative of the simulation by forward
    sensitivities (:mod:`~tensegrity_engine.identify.sensitivity`), or ``"fd"``, forward differences; the
    parameters' columns split between the workers
    (:class:`~tensegrity_engine.identify.parallel.ResidualPool`). ``final_jacobian`` (finite differences
    only): replace ``res.jac`` by central differences at the solution."""
    lo, hi = theta_bounds(plist)
    prior_w = np.zeros(len(plist)) if prior_w is None else np.asarray(prior_w, float)
    calls = [0, 0]
    last = {}
    t0 = time.monotonic()

    def fun(theta):
        calls[0] += 1
        r = np.concatenate([residuals_at(model, plist, windows, dt, theta), prior_w * theta])
        last["theta"], last["r"] = np.array(theta), r
        return r

    def exact_jac(theta):
        calls[1] += 1
        if progress:
            progress(f"{label}: sensitivities {calls[1]}")
        return np.vstack([pool.jacobian(theta), np.diag(prior_w)])

    def jac(theta):
        calls[1] += 1
        f0 = last["r"] if "theta" in last and np.array_equal(last["theta"], theta) else fun(theta)
        h = DIFF_STEP * np.maximum(1.0, np.abs(theta))
        h = np.where(theta + h > hi, -h, h)                  # stay inside the bounds
        cols = [np.concatenate([c, prior_w * (theta + hk * e)]) for c, hk, e in
                zip(pool.map([theta + hk * e for hk, e in zip(h, np.eye(len(theta)))]), h, np.eye(len(theta)))]
        if progress:
            progress(f"{label}: Jacobian {calls[1]} ({calls[0] + calls[1] * len(theta)} simulations)")
        return np.column_stack([(c - f0) / hk for c, hk in zip(cols, h)])

    with ResidualPool(model, plist, windows, dt, workers, scheduler) as pool:
        res = least_squares(fun, np.clip(theta0, lo, hi), jac=exact_jac if jacobian == "sensitivity" else jac,
                            bounds=(lo, hi), method="trf", x_scale=1.0,
                            max_nfev=max_nfev, xtol=1e-10, ftol=1e-12)
        if final_jacobian and jacobian != "sensitivity":
            m = len(res.fun) - len(theta0)
            res.jac = np.vstack([_central_jacobian(pool, res.x, res.fun[:m], lo, hi), np.diag(prior_w)])
    stages.append({"stage": label, "windows": len(windows), "cost_m2": float(2 * res.cost),
                   "rms_m": _data_rms(res.fun, len(plist)),
                   "evaluations": calls[0] + (calls[1] if jacobian == "sensitivity" else calls[1] * len(plist)),
                   "jacobians": calls[1], "jacobian": jacobian,
                   "seconds": round(time.monotonic() - t0, 2), "status": int(res.status),
                   "stopped_by": STATUS.get(int(res.status), res.message)})
    return res


def _better_start(model, plist, windows, theta, dt, stages):
    """The regressor's θ if its simulation fits the windows better than the model's values, else 0."""
    if not np.any(theta):
        return theta
    t0 = time.monotonic()
    cost = [float(np.sum(window_residuals(model_with(model, plist, values(plist, th)), windows, dt) ** 2))
            for th in (np.zeros_like(theta), theta)]
    stages.append({"stage": "start", "regressor_cost_m2": cost[1], "model_cost_m2": cost[0],
                   "chosen": "regressor" if cost[1] < cost[0] else "model",
                   "seconds": round(time.monotonic() - t0, 2)})
    return theta if cost[1] < cost[0] else np.zeros_like(theta)


def _start_states(model, plist, windows, theta, dt, stages, say, noise) -> list:
    """The windows, each from its start state estimated for θ (identify.sensitivity_start)."""
    say("window start states")
    t0 = time.monotonic()
    out = [refine_start(model, plist, theta, w, dt, noise) for w in windows]
    moved = [float(np.abs(a.X0 - w.X0).max()) for a, w in zip(out, windows)]
    stages.append({"stage": "start states", "windows": len(windows), "max_position_change_m": max(moved),
                   "seconds": round(time.monotonic() - t0, 2)})
    return out


def _data_rms(fun, n_params) -> float:
    """RMS [m] of the position residuals (the last ``n_params`` rows are the prior's; masked samples are 0)."""
    data = fun[:len(fun) - n_params]
    return float(np.sqrt(data @ data / max(1, np.count_nonzero(data))))


def _uncertainty(plist, res, rel_tol):
    """(std errors in natural units, identifiable mask, [unidentifiable groups], correlation matrix) from the
    final Jacobian."""
    J = np.asarray(res.jac, float)
    names = [p.name for p in plist]
    data = res.fun[:len(res.fun) - len(plist)]          # without the prior rows
    dof = max(1, np.count_nonzero(data) - len(plist))
    s2 = float(data @ data) / dof
    U, S, Vt = np.linalg.svd(J, full_matrices=False)
    keep = S > 1e-8 * max(S[0], 1e-300)
    cov = (Vt[keep].T / S[keep] ** 2) @ Vt[keep] * s2
    scale = np.array([p.scale for p in plist])
    se = np.sqrt(np.clip(np.diag(cov), 0, None)) * scale
    groups = []
    for i in np.flatnonzero(~keep):
        v = np.abs(Vt[i]) / np.abs(Vt[i]).max()
        groups.append({"parameters": [names[j] for j in np.flatnonzero(v >= 0.3)], "kind": "null"})
        se[v >= 0.3] = np.inf
    d = np.sqrt(np.clip(np.diag(cov), 1e-300, None))
    corr = cov / np.outer(d, d)
    for i in range(len(plist)):
        for j in range(i + 1, len(plist)):
            if abs(corr[i, j]) > 0.95:
                groups.append({"parameters": [names[i], names[j]], "kind": "correlated",
                               "correlation": float(corr[i, j])})
    ok = np.isfinite(se) & (se <= rel_tol * scale)
    for j in np.flatnonzero(~ok & np.isfinite(se)):
        groups.append({"parameters": [names[j]], "kind": "weak", "std_error_rel": float(se[j] / scale[j])})
    return se, ok, groups, corr


def _stage_warnings(stages, max_nfev) -> list:
    """A warning per optimiser stage that stopped at its evaluation limit (scipy status 0)."""
    return [f"the {st['stage']} stage stopped at its evaluation limit ({st['evaluations']} simulations, max_nfev "
            f"{max_nfev}) before converging: " + ("the estimates are where it stopped, not the best fit, and their "
                                                 "standard errors and 'identifiable' flags are those of an unfinished"
                                                 " fit; raise --max-nfev" if st["stage"] == "single shooting" else
                                                 "the final stage starts from an unfinished fit")
            for st in stages if st.get("status") == 0]


def identify_dynamic(model: Model, captures, params=DEFAULT_PARAMS, groups="model", shooting: float = 1.0,
                     dt: float = 1e-3, max_nfev: int = 20, rel_tol: float = 0.1, regressor: bool = True,
                     progress=None, workers: int = 1, scheduler=None, prior: float | None = 3.0,
                     jacobian: str = "fd", start_states: bool = False) -> DynamicIdentification:
    """Fit ``params`` of ``model`` to ``captures`` (module docstring). ``shooting`` [s] window length of the
    multiple-shooting stage (0: skip it); ``max_nfev`` caps the optimiser's iterations per stage;
    ``progress(text)`` is called as simulations run; ``workers`` local processes or a Dask ``scheduler``
    simulate the Jacobian columns (same result either way); ``prior``: each θ ~ N(0, prior²) (in units of
    its parameter's scale, weighed against the capture's noise level): what the captures cannot determine
    stays near the model's value instead of drifting along a flat direction (None: no prior);
    ``jacobian``: ``"fd"`` (forward differences; central at the solution) or ``"sensitivity"`` (exact, by
    forward sensitivities; finite differences with a warning for a model they do not cover);
    ``start_states``: each capture's start state estimated for the current parameters before the
    single-shooting stage, which runs twice (start, fit, start, fit;
    :mod:`~tensegrity_engine.identify.sensitivity_start`), instead of held at the smoothed capture.
    Raises ValueError on unusable data."""
    captures = list(captures)
    if not captures:
        raise ValueError("no capture to identify from")
    if jacobian not in ("sensitivity", "fd"):
        raise ValueError(f"jacobian must be 'sensitivity' or 'fd', got {jacobian!r}")
    notes = []
    why = unsupported(model) if jacobian == "sensitivity" or start_states else None
    if why and jacobian == "sensitivity":
        notes.append(f"the sensitivities do not cover {why}: Jacobians by finite differences (slower)")
        jacobian = "fd"
    if why and start_states:
        notes.append(f"the sensitivities do not cover {why}: window start states smoothed from the capture")
        start_states = False
    say = progress or (lambda text: None)
    plist = parameters(model, params, groups)
    sigma = noise_level(captures)
    prior_w = np.full(len(plist), sigma / prior if prior else 0.0)
    stages = []
    t0 = time.monotonic()
    theta = np.zeros(len(plist))
    if regressor:
        say("linear regressor start")
        theta = regressor_start(model, plist, captures)
        stages.append({"stage": "regressor", "seconds": round(time.monotonic() - t0, 2)})
    if shooting and shooting > 0:
        wins = [w for c in captures for w in shooting_windows(model, c, shooting)]
        theta = _better_start(model, plist, wins, theta, dt, stages)
        start = values(plist, theta)
        theta = _fit(model, plist, wins, theta, dt, max_nfev, "multiple shooting", stages, say, workers,
                     scheduler, prior_w=prior_w, jacobian=jacobian).x
    else:
        theta = _better_start(model, plist, [w for c in captures for w in shooting_windows(model, c, None)], theta,
                              dt, stages)
        start = values(plist, theta)
    smoothed = [w for c in captures for w in shooting_windows(model, c, None)]
    for final in ((False, True) if start_states else (True,)):
        whole = _start_states(model, plist, smoothed, theta, dt, stages, say, sigma) if start_states else smoothed
        res = _fit(model, plist, whole, theta, dt, max_nfev, "single shooting", stages, say, workers, scheduler,
                   final_jacobian=final, prior_w=prior_w, jacobian=jacobian)
        theta = res.x
    se, ok, unid, corr = _uncertainty(plist, res, rel_tol)
    excitation = excitation_report(model, plist, np.asarray(res.jac)[:len(res.fun) - len(plist)], sigma, se, corr,
                                   captures, rel_tol)
    est = values(plist, res.x)
    ident = model_with(model, plist, est)
    before = [prediction_rms(model, c, dt) for c in captures]
    after = [prediction_rms(ident, c, dt) for c in captures]
    return DynamicIdentification(
        model, plist, [p.name for p in plist], [p.kind for p in plist], [p.unit for p in plist],
        np.array([p.initial for p in plist]), start, est, se, ok, unid,
        _data_rms(res.fun, len(plist)), before, after,
        [getattr(c, "name", f"capture {i}") for i, c in enumerate(captures)], stages,
        {"params": list(params), "groups": groups, "shooting_s": shooting, "dt_s": dt, "max_nfev": max_nfev,
         "workers": "dask" if scheduler is not None else workers, "prior_scales": prior, "jacobian": jacobian,
         "noise_level_m": sigma, "start_states": start_states, "seconds": round(time.monotonic() - t0, 1)},
        noise=sigma, converged=res.status != 0, warnings=notes + _stage_warnings(stages, max_nfev),
        excitation=excitation)

