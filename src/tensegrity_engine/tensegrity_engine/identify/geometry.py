"""Checks of a captured shape against the model before static identification: units and node labels.

A take in millimetres, or two nodes whose labels are swapped, still "fit": the result is a negative
stiffness with no word about the cause. The bars say it first: their lengths are fixed by the model
(``Model.bar_length`` [m]), so a capture whose bars are all ~1000× too long is in millimetres, and a
capture where a few bars are off while exchanging two nodes' positions makes every bar right has those
two nodes' labels swapped. :func:`geometry_problem` returns that diagnosis as text (None if the shape fits).
"""
from __future__ import annotations

import itertools

import numpy as np

from tensegrity_engine.model.markers import nodes_from_markers

# Relative bar-length tolerance. Noise (< 1 mm) and markers on the end caps rather than at the bar axis ends
# (~5 mm on a 0.3-0.6 m bar) change a measured bar length by at most ~2 %; swapping two nodes on different
# bars changes some bar by 12-50 % in the six-bar and by >= 7.5 % in the stacked manipulator (every pair).
BAR_TOL = 0.05
# How far the overall size may be off before it is a unit problem, not a labelling one: bars 2× or
# ½× the model's are neither noise nor a swap (a swap moves some bars, not the median).
SCALE_TOL = 2.0
UNITS = {"mm": 1e-3, "cm": 1e-2, "in": 0.0254, "m": 1.0}    # metres per unit


def _sizes(model, P) -> tuple:
    """(measured, model) lengths [m]: the bars, or (no bars) each physical node's distance from the centroid."""
    X = model.from_physical(P)
    if len(model.bar_names):
        b = model.bars
        return np.linalg.norm(X[b[:, 0]] - X[b[:, 1]], axis=1), np.asarray(model.bar_length, float)
    mu = model.n_physical
    M = model.positions[:mu]
    return (np.linalg.norm(P - P.mean(axis=0), axis=1), np.linalg.norm(M - M.mean(axis=0), axis=1))


def units_problem(model, P):
    """Text naming the likely unit of positions ``P`` (mu,3) if the overall size is off by > ``SCALE_TOL``."""
    meas, ref = _sizes(model, P)
    ok = ref > 0
    if not ok.any():
        return None
    ratio = float(np.median(meas[ok] / ref[ok]))
    if 1.0 / SCALE_TOL <= ratio <= SCALE_TOL:
        return None
    what = "bar lengths" if len(model.bar_names) else "node distances from the centroid"
    name, per_m = min(UNITS.items(), key=lambda kv: abs(np.log(ratio * kv[1])))
    if name != "m" and abs(np.log(ratio * per_m)) < np.log(1.2):
        return (f"the measured {what} are {ratio:.4g}× the model's (median): the positions look like {name}, "
                f"the model is in metres; set 'units: {name}' for this case (or for the whole cases file), "
                "or convert the take to metres")
    if abs(np.log(ratio * 1e3)) < np.log(1.2):
        return (f"the measured {what} are {ratio:.4g}× the model's (median): the model file looks like millimetres; "
                "model files are in metres: rescale the model (positions, lengths, stiffnesses)")
    return (f"the measured {what} are {ratio:.4g}× the model's (median): the take is not this robot, or not in "
            "metres; check the model file and the take's units (units: m, cm, mm or in)")


def _bad_bars(model, P, tol) -> np.ndarray:
    meas = np.linalg.norm(np.diff(model.from_physical(P)[model.bars], axis=1)[:, 0], axis=1)
    return np.flatnonzero(np.abs(meas / model.bar_length - 1.0) > tol)


def _string_misfit(model, P) -> float:
    """Sum of squared relative differences of the string lengths from the model's (strings stretch, but a
    swapped label stretches them far more)."""
    L0 = model.string_lengths(model.positions)
    return float(np.sum((model.string_lengths(model.from_physical(P)) / np.where(L0 > 0, L0, 1.0) - 1.0) ** 2))


def fixing_swaps(model, P, tol) -> list:
    """Pairs (i, j) of physical node indices whose exchanged positions put every bar within ``tol``, the
    likeliest first (smallest string-length misfit: bar lengths alone cannot tell a swap of two nodes from
    a swap of their bar partners)."""
    phys = model.physical_index
    suspects = sorted({int(phys[k]) for k in model.bars[_bad_bars(model, P, tol)].ravel()})
    found = []
    for i, j in itertools.product(suspects, range(model.n_physical)):
        if j == i or (j in suspects and j < i):
            continue
        Q = P.copy()
        Q[[i, j]] = Q[[j, i]]
        if not len(_bad_bars(model, Q, tol)):
            found.append((_string_misfit(model, Q), min(i, j), max(i, j)))
    return [(i, j) for _, i, j in sorted(found)]


def bars_problem(model, P, tol=BAR_TOL):
    """Text naming the bars whose measured length differs from the model's by more than ``tol`` (relative)
    and, where exchanging two nodes' positions fixes all of them, that pair; None if every bar fits."""
    bad = _bad_bars(model, P, tol) if len(model.bar_names) else []
    if not len(bad):
        return None
    X = model.from_physical(P)
    names = model.node_names
    listed = ", ".join(
        f"{model.bar_names[k]} ({names[a]}-{names[b]}: {np.linalg.norm(X[a] - X[b]) * 1e3:.1f} mm, model "
        f"{model.bar_length[k] * 1e3:.1f} mm)" for k, (a, b) in zip(bad[:4], model.bars[bad[:4]]))
    more = f" and {len(bad) - 4} more" if len(bad) > 4 else ""
    text = f"bar(s) {listed}{more} differ from the model's lengths by more than {tol:.0%}"
    swaps = fixing_swaps(model, P, tol)
    if swaps:
        i, j = (names[k] for k in swaps[0])
        others = "; ".join(f"{names[a]} and {names[b]}" for a, b in swaps[1:3])
        return (f"{text}: nodes {i} and {j} look swapped (with their positions exchanged every bar is within "
                f"{tol:.0%}" + (f"; so it is with {others}, but the string lengths favour {i} and {j}" if others
                                else "") + "); fix the node labels (marker map) of this take")
    return (f"{text}: check the node labels (marker map) of this take, and that the model's bars match the "
            "robot; if markers sit in from the bar ends, declare how far on their nodes in the model file "
            "('marker: {along_bar: 0.148}', docs/model_schema.md)")


def geometry_problem(model, P, tol=BAR_TOL):
    """The units problem, else the bars problem, of measured marker positions ``P`` (mu,3) [m] for ``model``
    (checked at the nodes behind them, model/markers.py); None if none. ``tol`` None skips the bar check."""
    P = nodes_from_markers(model, np.asarray(P, float))
    return units_problem(model, P) or (None if tol is None else bars_problem(model, P, tol))
