"""Measured node signals for dynamic identification: resampling onto a uniform clock, Savitzky-Golay
smoothing and derivatives, and the equation-error (linear regressor) starting point.

A capture (``t`` (T,) s, ``nodes`` (T, mu, 3) m with NaN where a node was not seen, dropped frames simply
missing) is resampled at its median frame rate; a grid point counts as *seen* for a node when a frame
within half a period saw it and the node's gap there is at most ``MAX_GAP`` s (longer occlusions are not
bridged by interpolation). Positions, velocities and accelerations come from a Savitzky-Golay fit (cubic,
``window`` s).

The regressor: at sample times where every node is seen, the engine's constrained acceleration (its own
kernel, so bar forces and linear constraints are handled exactly as in simulation) is compared with the
smoothed measured acceleration, weighted by the reduced mass matrix (a force error, so the noisy
accelerations of light nodes do not dominate). It is affine in stiffness and damping parameters and linear to first
order in offsets and delay, so one Gauss-Newton step from the model's values (columns by differences of
the kernel) gives the start for the output-error fit.
"""
from __future__ import annotations

import numpy as np
from scipy.signal import savgol_filter

from tensegrity_engine.dynamics import kernels as K
from tensegrity_engine.dynamics.kernel_data import work_ref
from tensegrity_engine.dynamics.kernel_params import kernel_params, kernel_ref
from tensegrity_engine.identify.params import model_with, theta_bounds, values
from tensegrity_engine.model.markers import node_motion_from_markers

MAX_GAP = 0.05           # s, longest occlusion bridged by interpolation for smoothing


def resample(t, nodes):
    """(grid times (G,), positions (G, mu, 3) with gaps interpolated, seen mask (G, mu), rate [Hz])."""
    t = np.asarray(t, float)
    X = np.asarray(nodes, float)
    rate = 1.0 / float(np.median(np.diff(t)))
    G = int(round((t[-1] - t[0]) * rate)) + 1
    tg = t[0] + np.arange(G) / rate
    Xg = np.empty((G,) + X.shape[1:])
    seen = np.zeros((G, X.shape[1]), bool)
    for i in range(X.shape[1]):
        ok = np.isfinite(X[:, i]).all(axis=1)
        if ok.sum() < 2:
            Xg[:, i] = np.nan
            continue
        ti = t[ok]
        for d in range(3):
            Xg[:, i, d] = np.interp(tg, ti, X[ok, i, d])
        k = np.clip(np.searchsorted(ti, tg), 1, len(ti) - 1)
        gap = ti[k] - ti[k - 1]
        near = np.minimum(np.abs(tg - ti[k]), np.abs(tg - ti[k - 1]))
        seen[:, i] = (near <= 0.5 / rate + 1e-9) | (gap <= MAX_GAP)
        seen[:, i] &= (tg >= ti[0] - 0.5 / rate) & (tg <= ti[-1] + 0.5 / rate)
    return tg, Xg, seen, rate


def smooth(Xg, rate: float, window: float = 0.1, deriv: int = 0) -> np.ndarray:
    """Savitzky-Golay (cubic) smoothed positions (deriv 0) [m], velocities (1) [m/s] or accelerations (2)."""
    n = max(5, int(round(window * rate)) | 1)          # odd window length in samples
    if n > len(Xg):
        n = len(Xg) if len(Xg) % 2 else len(Xg) - 1
    return savgol_filter(Xg, n, min(3, n - 1), deriv=deriv, delta=1.0 / rate, axis=0, mode="interp")


def _constrained_accel(model, inputs, t, X, V) -> np.ndarray:
    """The engine's accelerations (S, r, 3) [m/s^2] of the free nodes at states X, V (S, n, 3)."""
    p = kernel_ref(model)
    w = work_ref(K.make_work(kernel_params(model), len(model.actuator_names)))
    fext = np.zeros((model.n_nodes, 3))
    out = np.zeros((len(t), len(model.free_nodes), 3))
    for s in range(len(t)):
        Y = np.ascontiguousarray(X[s][model.free_nodes])
        Vr = np.ascontiguousarray(V[s][model.free_nodes])
        K.accel(p, float(t[s]), Y, Vr, inputs.params, fext, 1.0, model.structural_damping, w, out[s])
    return out


def regressor_start(model, plist, captures, rate_hz: float = 25.0, window: float = 0.5) -> np.ndarray:
    """θ from one Gauss-Newton step on the equation error (module docstring); NaN-free, within bounds."""
    rows_a, rows_D = [], []
    for cap in captures:
        tg, Xg, seen, rate = resample(cap.t, cap.nodes)
        if np.isnan(Xg).any():
            continue
        Xs, Vs, As = node_motion_from_markers(model, *(smooth(Xg, rate, window, d) for d in (0, 1, 2)))
        h = int(round(window * rate))
        step = max(1, int(round(rate / rate_hz)))
        idx = np.array([k for k in range(h, len(tg) - h, step) if seen[max(0, k - h):k + h + 1].all()], int)
        if len(idx) == 0:
            continue
        X, V = model.from_physical(Xs[idx]), model.from_physical(Vs[idx])
        A = model.from_physical(As[idx])[:, model.free_nodes]
        Mr = model.reduced_mass           # force units: light nodes' noisy accelerations must not dominate
        base = _constrained_accel(model, cap.inputs, tg[idx], X, V)
        cols = []
        for i in range(len(plist)):
            e = np.zeros(len(plist))
            e[i] = 1.0
            m_i = model_with(model, plist, values(plist, e))
            cols.append(np.einsum("ij,sjd->sid", Mr, _constrained_accel(m_i, cap.inputs, tg[idx], X, V) - base).ravel())
        rows_a.append(np.einsum("ij,sjd->sid", Mr, base - A).ravel())
        rows_D.append(np.column_stack(cols))
    theta = np.zeros(len(plist))
    if not rows_a:
        return theta
    a, D = np.concatenate(rows_a), np.vstack(rows_D)
    live = np.abs(D).max(axis=0) > 0
    if live.any():
        theta[live] = np.linalg.lstsq(D[:, live], -a, rcond=1e-8)[0]
    lo, hi = theta_bounds(plist)
    # a regressor start is only a start: keep it where it is plausible (within a factor 3 of the scale)
    theta = np.where(np.isfinite(theta) & (np.abs(theta) < 3.0), theta, 0.0)
    return np.clip(theta, lo, hi)


NOISE_FLOOR = 1e-5       # m, smallest noise level assumed (noise-free synthetic data)


def noise_level(captures, window: float = 0.1) -> float:
    """Measurement noise [m] per coordinate: the RMS of raw minus Savitzky-Golay smoothed positions over
    seen samples (cubic over ``window`` s passes the motion and removes white noise), at least NOISE_FLOOR."""
    parts = []
    for cap in captures:
        tg, Xg, seen, rate = resample(cap.t, cap.nodes)
        if np.isnan(Xg).any():
            continue
        n = max(5, int(round(window * rate)) | 1)
        d = (Xg - smooth(Xg, rate, window, 0))[n:-n][seen[n:-n]]
        if d.size:
            parts.append(d.ravel())
    if not parts:
        return NOISE_FLOOR
    d = np.concatenate(parts)
    # the smoother keeps 4 of n degrees of freedom per window: scale the residual RMS up accordingly
    n = max(5, int(round(window * 100)) | 1)
    return max(NOISE_FLOOR, float(np.sqrt(np.mean(d ** 2) / max(1e-3, 1 - 4.0 / n))))
