"""Identifiability and standard errors of identified parameters, judged from the data at the solution.

Everything is in *relative* natural units: ``J_rel = d residual / d(φ/|φ̂|)`` is the (whitened) residual's
sensitivity to a relative change of each natural parameter φ (stiffness, rest length, mass, ...) at the
estimate φ̂, so neither the starting values nor the internal parameterisation (e.g. ``κ ξ0`` for a rest
length) change the verdict. With ``s`` the residual scale [m] the Fisher information is ``J_relᵀ J_rel / s²``:

* a **null** direction has a singular value (of the column-normalised ``J_rel``) below ``rcond`` of the
  largest: no data moves along it; every parameter with a share of at least :data:`NULL_SHARE` in that
  null space has an infinite standard error;
* a parameter is **identifiable** when its reported standard error is at most ``rel_tol`` of |φ̂|;
  **weak** directions are eigen-directions of the relative covariance along which one standard deviation
  moves some parameter by more than ``rel_tol`` (each named by those parameters);
* what the data do determine when these are not, e.g. the string tensions and the prestress level, are
  quantities ``Q δ`` linear in the relative changes δ: :func:`functional_se` gives their errors.

Standard errors: the model-based ``s² (J_relᵀ J_rel)⁻¹`` assumes independent residuals; a model error
makes them systematic per capture. :func:`jackknife_se` is the leave-one-case-out jackknife (to first
order at the converged weights, without refits: on the six-bar under ±20 % per-string stiffness error
fitted with one shared stiffness, 18.1 N/m against 17.7 from refits and a model-based 8.3), which sees
that; the reported standard error is the larger of the two (:func:`larger_se`). With a few unequal
cases the jackknife is conservative (about 1.3-1.5x the model-based one on a correct model), and where
leaving out one case leaves a direction barely determined it says so loudly (98 % for a stiffness the
model-based error puts at 1.8 %): the estimate then hinges on that case.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg

# A parameter whose share of a null space (norm of its row in an orthonormal null basis, in column-normalised
# units; 1 = the parameter is itself a null direction) is below 1e-3 moves by < 0.1 % of the null direction's
# size: for an unknown change of order 100 % that stays far inside rel_tol (2.5 %), so it is still determined.
NULL_SHARE = 1e-3
NAME_SHARE = 0.3      # a direction is named by the parameters with at least 30 % of its largest component


@dataclass
class Information:
    """Fisher analysis at the solution in relative natural units."""
    cov_rel: np.ndarray      # (p, p) model-based covariance of φ/|φ̂| (null directions left out)
    null_basis: np.ndarray   # (p, k) orthonormal null basis in column-normalised units
    colnorm: np.ndarray      # (p,) column norms of J_rel
    null_dirs: list          # [(p,) relative direction] per null direction
    singular: np.ndarray     # singular values of column-normalised J_rel, relative to the largest
    left: np.ndarray         # (m, r) left singular vectors of the kept directions
    sv: np.ndarray           # (r,) their singular values (column-normalised units)
    right: np.ndarray        # (p, r) their right singular vectors


def reference(estimate, initial) -> np.ndarray:
    """|φ̂| (|initial| where the estimate is 0, else 1): the size a relative change is measured against."""
    ref = np.abs(np.asarray(estimate, float))
    ref = np.where(ref > 0, ref, np.abs(np.asarray(initial, float)))
    return np.where(np.isfinite(ref) & (ref > 0), ref, 1.0)


def relative_jacobian(A, D, ref) -> np.ndarray:
    """``J_rel`` (m, p): ``A`` = d residual / dθ (m, p), ``D`` = dφ/dθ (p, p), ``ref`` = |φ̂| (p,)."""
    return (A @ linalg.pinv(D)) * ref


def information(J_rel, s: float, rcond: float) -> Information:
    """Fisher analysis of ``J_rel`` with residual scale ``s`` [m]; null below ``rcond`` × largest singular value."""
    p = J_rel.shape[1]
    cn = np.linalg.norm(J_rel, axis=0)
    # a column below 1e-12 of the largest is rounding left by eliminating the bar forces (no equation sees
    # that parameter, e.g. a string between fixed nodes): zero it, or normalising would blow the noise up
    dead = cn <= 1e-12 * max(cn.max(), 1e-300)
    cn = np.where(dead, 1.0, cn)
    U, S, Vt = linalg.svd(np.where(dead, 0.0, J_rel) / cn, full_matrices=True)
    S = np.concatenate([S, np.zeros(p - len(S))])
    keep = S > rcond * max(S[0], 1e-300)
    N = Vt[~keep].T                                  # orthonormal null basis, column-normalised units
    W = Vt.T / cn[:, None]                           # direction i in relative units: W[:, i]
    cov = (W[:, keep] / S[keep] ** 2) @ W[:, keep].T * s ** 2
    return Information(cov, N, cn, [W[:, i] for i in np.flatnonzero(~keep)], S / max(S[0], 1e-300),
                       U[:, np.flatnonzero(keep)], S[keep], Vt[keep].T)


def null_share(info: Information, G) -> np.ndarray:
    """(q,) share of each quantity ``G δ`` (rows of G (q, p) per relative parameter change δ) in the null
    space: 0 determined, 1 only along null directions."""
    Gx = np.atleast_2d(G) / info.colnorm
    size = np.linalg.norm(Gx, axis=1)
    return np.linalg.norm(Gx @ info.null_basis, axis=1) / np.where(size > 0, size, 1.0)


def functional_se(info: Information, G) -> np.ndarray:
    """(q,) model-based standard errors of the quantities ``G δ`` (inf where they involve a null direction)."""
    G = np.atleast_2d(G)
    se = np.sqrt(np.clip(np.einsum("ij,jk,ik->i", G, info.cov_rel, G), 0, None))
    return np.where(null_share(info, G) < NULL_SHARE, se, np.inf)


def case_influence(info: Information, resid, case_rows) -> np.ndarray:
    """(n, p) change of the relative parameters when each case is left out, to first order at the solution:
    ``-(JᵀJ)⁻¹ J_kᵀ (I - H_kk)⁻¹ r_k`` (``resid`` r (m,) whitened, ``case_rows`` rows per case in order, H
    the hat matrix): the leave-one-case-out jackknife without refits."""
    out, start = [], 0
    for m in case_rows:
        Uk, rk = info.left[start:start + m], resid[start:start + m]
        start += m
        lam, E = linalg.eigh(np.eye(m) - Uk @ Uk.T)
        # a direction only this case sees (1 - h = 0) has no residual and no replicate: see jackknife_se
        f = np.where(lam > 1e-8, 1.0 / np.clip(lam, 1e-300, None), 0.0)
        out.append(-(info.right @ ((Uk.T @ (E @ (f * (E.T @ rk)))) / info.sv)) / info.colnorm)
    return np.array(out)


def jackknife_se(influence, Q, estimable) -> tuple:
    """((q,) leave-one-case-out jackknife standard errors of the quantities ``Q δ`` (rows of Q (q, p) per
    relative parameter change) from :func:`case_influence`; (q,) the case whose replicate contributes
    most; (q,) its share of the variance). NaN where some case alone determines the quantity
    (``estimable`` (n, q) False without it), or for fewer than 2 cases."""
    n, q = len(influence), len(Q)
    if n < 2:
        return np.full(q, np.nan), np.zeros(q, int), np.zeros(q)
    d = np.asarray(influence) @ np.asarray(Q).T
    sq = (d - d.mean(axis=0)) ** 2
    total = sq.sum(axis=0)
    se = np.sqrt((n - 1) / n * total)
    top = np.argmax(sq, axis=0)
    return (np.where(np.all(estimable, axis=0) & np.isfinite(se), se, np.nan), top,
            sq[top, np.arange(q)] / np.where(total > 0, total, 1.0))


def larger_se(se_model, se_jack) -> tuple:
    """(reported standard errors, method per quantity): the larger of model-based and jackknife (NaN: model)."""
    use = np.isfinite(se_jack) & np.isfinite(se_model) & (se_jack > se_model)
    return np.where(use, se_jack, se_model), ["jackknife" if u else "model" for u in use]


def _named(names, v, share=NAME_SHARE) -> list:
    a = np.abs(v)
    return [names[j] for j in np.flatnonzero(a >= share * a.max())]


def _distinct(entries) -> list:
    """The entries with a (kind, parameter set) not seen before, in order."""
    seen, out = set(), []
    for d in entries:
        key = (d["kind"], frozenset(d["parameters"]))
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def classify(names, ref, se, info: Information, rel_tol: float) -> tuple:
    """(identifiable (p,) bool, [unidentifiable directions, named]) (module docstring)."""
    ident = np.isfinite(se) & (se <= rel_tol * ref) & (null_share(info, np.eye(len(ref))) < NULL_SHARE)
    out = [{"parameters": _named(names, v), "kind": "null", "std_error_rel": None} for v in info.null_dirs]
    lam, vec = linalg.eigh(info.cov_rel)
    move = np.sqrt(np.clip(lam, 0, None)) * np.abs(vec)        # relative change per SD, per parameter
    for i in np.flatnonzero(move.max(axis=0) > rel_tol):
        out.append({"parameters": [names[j] for j in np.flatnonzero(move[:, i] > rel_tol)] or _named(names, vec[:, i]),
                    "kind": "weak", "std_error_rel": float(move[:, i].max())})
    out = _distinct(out)                    # a null space of dimension > 1 names the same set per direction
    named = {n for d in out for n in d["parameters"]}
    for j in np.flatnonzero(~ident):        # flagged by a standard error no direction above shows (jackknife)
        if names[j] not in named:
            out.append({"parameters": [names[j]], "kind": "weak", "std_error_rel": float(se[j] / ref[j])})
    return ident, out
