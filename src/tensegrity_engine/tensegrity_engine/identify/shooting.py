"""A model simulated from measured states: the windows of a capture (each from a fully seen, smoothed
state, compared with the capture's frames after it), their position residuals for a parameter vector, and
whole-capture predictions with their errors (the paper's table).

A capture measures markers: where the model puts a node's ``marker`` off the node, a window starts from the
nodes behind the smoothed markers (``model.markers.node_motion_from_markers``) and its simulated nodes are
turned into marker positions before they are compared; predictions are marker positions too.

Simulation: fixed-step RK4 (``dt`` [s]) under the capture's inputs; a window whose simulation diverges gets
:data:`DIVERGED_RESIDUAL` at every sample. Residuals are node positions [m] of every frame and seen non-fixed
node (:func:`compared_nodes`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tensegrity_engine.dynamics.loads import run_loaded
from tensegrity_engine.dynamics.simulator import Simulator
from tensegrity_engine.errors import SimulationDiverged
from tensegrity_engine.frames import model_frames, rotation_angle
from tensegrity_engine.identify.params import model_with, values
from tensegrity_engine.identify.signals import resample, smooth
from tensegrity_engine.model.markers import marker_positions, node_motion_from_markers
from tensegrity_engine.model.model import Model

DIVERGED_RESIDUAL = 1.0     # m, residual given to every sample of a window whose simulation diverged


@dataclass
class _Window:
    """One simulation window: start state and the frames it is compared with."""
    capture: object
    t0: float
    duration: float
    X0: np.ndarray          # (n, 3) m
    V0: np.ndarray          # (n, 3) m/s
    t: np.ndarray           # (F,) frame times [s]
    measured: np.ndarray    # (F, k, 3) m, the compared nodes
    mask: np.ndarray        # (F, k) seen
    nodes: np.ndarray       # (k,) the compared nodes (structure only: the same for every parameter value)


def compared_nodes(model: Model) -> np.ndarray:
    """Physical nodes whose position depends on the state (fixed nodes carry no information)."""
    return np.flatnonzero(np.diff(model.Q_sparse.tocsr().indptr)[:model.n_physical] > 0)


STATE_WINDOW = 0.25     # s, Savitzky-Golay window for window start states (velocity noise ~ window^-1.5)


def shooting_windows(model, cap, length: float | None, window: float = STATE_WINDOW) -> list:
    """Simulation windows of ``length`` s (None: the whole capture), each from a fully seen smoothed state."""
    tg, Xg, seen, rate = resample(cap.t, cap.nodes)
    if np.isnan(Xg).any():
        missing = [model.node_names[i] for i in np.flatnonzero(np.isnan(Xg).any(axis=(0, 2)))]
        raise ValueError(f"capture '{getattr(cap, 'name', '')}': node(s) {', '.join(missing)} never seen; "
                         "identification needs every physical node seen at least twice")
    Xs, Vs = node_motion_from_markers(model, smooth(Xg, rate, window, 0), smooth(Xg, rate, window, 1))
    cmp = compared_nodes(model)
    t = np.asarray(cap.t, float)
    meas = np.asarray(cap.nodes, float)[:, cmp]
    seen_f = np.isfinite(meas).all(axis=2)
    full = seen.all(axis=1)
    out = []
    edges = [tg[0]] if length is None else list(np.arange(tg[0], tg[-1] - 0.25 * length, length))
    for k, a in enumerate(edges):
        b = tg[-1] if (length is None or k == len(edges) - 1) else a + length
        cand = np.flatnonzero(full & (tg >= a) & (tg < b))
        if len(cand) == 0:
            continue
        g = int(cand[0])
        X0, V0 = model.from_physical(Xs[g]), model.from_physical(Vs[g])
        sel = (t >= tg[g]) & (t <= b + 1e-9)
        if sel.sum() < 2:
            continue
        out.append(_Window(cap, float(tg[g]), float(b - tg[g]), X0, V0, t[sel], np.nan_to_num(meas[sel]),
                           seen_f[sel], cmp))
    return out


def _simulate(model, w: _Window, dt: float) -> np.ndarray | None:
    """Marker positions (F, k, 3) of the compared nodes at the window's frame times, or None if it diverged."""
    sim = Simulator(model, integrator="rk4", dt=dt)
    sim.reset(w.X0, w.V0, t=w.t0)
    sim.set_inputs(w.capture.inputs, horizon=w.duration)
    rate = 1.0 / float(np.median(np.diff(w.t))) if len(w.t) > 1 else 100.0
    try:
        if getattr(w.capture, "loads", None) is None:
            traj = sim.run(max(w.duration, 1.0 / rate), rate=rate)
        else:                                   # measured forces over time (identify/data.py, loads:)
            traj = run_loaded(sim, max(w.duration, 1.0 / rate), w.capture.loads, rate=rate)
    except SimulationDiverged:
        return None
    X = marker_positions(model, traj.nodes)[:, w.nodes]
    s = np.clip((w.t - traj.t[0]) * rate, 0, len(traj.t) - 1.000001)
    k = np.floor(s).astype(int)
    f = (s - k)[:, None, None]
    return (1 - f) * X[k] + f * X[np.minimum(k + 1, len(traj.t) - 1)]


def window_residuals(model, windows, dt) -> np.ndarray:
    parts = []
    for w in windows:
        P = _simulate(model, w, dt)
        r = np.full(w.measured.shape, DIVERGED_RESIDUAL) if P is None else (P - w.measured)
        parts.append(np.where(w.mask[..., None], r, 0.0).ravel())
    return np.concatenate(parts)


def predict(model: Model, capture, dt: float = 1e-3) -> np.ndarray:
    """Marker positions of the physical nodes (T, mu, 3) [m] that ``model`` predicts for the whole capture, simulated from
    its first fully seen (smoothed) state under its inputs; NaN before that state or if it diverged."""
    w = shooting_windows(model, capture, None)[0]
    cmp = compared_nodes(model)
    out = np.full(np.shape(capture.nodes), np.nan)
    P = _simulate(model, w, dt)
    sel = np.asarray(capture.t) >= w.t0
    if P is not None:
        out[sel] = marker_positions(model, model.positions)    # fixed nodes stay put
        out[np.ix_(np.flatnonzero(sel), cmp)] = P
    return out


def prediction_rms(model: Model, capture, dt: float = 1e-3) -> float:
    """RMS [m] over seen nodes and frames between the capture and :func:`predict`."""
    P = predict(model, capture, dt)
    d = np.linalg.norm(P - np.asarray(capture.nodes, float), axis=-1)
    d = d[:, compared_nodes(model)]
    return float(np.sqrt(np.nanmean(d ** 2)))


def residuals_at(model, plist, windows, dt, theta) -> np.ndarray:
    """Position residuals [m] of all windows for the parameters θ (the optimiser's unknowns)."""
    return window_residuals(model_with(model, plist, values(plist, theta)), windows, dt)


def prediction_errors(model: Model, predicted, reference) -> dict:
    """The paper's table for predicted vs reference physical node positions (T, mu, 3) [m] (NaN = unknown):
    per frame of the model (except frames on fixed nodes) the RMS origin distance [m] and RMS geodesic angle
    [deg] over samples where both are known, and the per-node RMS distance [m] (fixed nodes left out)."""
    P, R = np.asarray(predicted, float), np.asarray(reference, float)
    out = {"frames": {}, "nodes": {}}
    Fp, Fr = model_frames(model, model.from_physical(P)), model_frames(model, model.from_physical(R))
    moving = set(compared_nodes(model).tolist())
    for k, name in enumerate(Fp):
        if not moving & set(np.asarray(model.frame_nodes[k]).tolist()):
            continue                      # a frame on fixed nodes (a base) cannot be wrong
        ok = np.isfinite(Fp[name]).all(axis=(1, 2)) & np.isfinite(Fr[name]).all(axis=(1, 2))
        if not ok.any():
            continue
        d = np.linalg.norm(Fp[name][ok, :3, 3] - Fr[name][ok, :3, 3], axis=1)
        a = np.degrees(rotation_angle(Fp[name][ok], Fr[name][ok]))
        out["frames"][name] = {"position_rms_m": float(np.sqrt(np.mean(d ** 2))),
                               "angle_rms_deg": float(np.sqrt(np.mean(a ** 2))), "frames": int(ok.sum())}
    d = np.linalg.norm(P - R, axis=-1)
    for i in compared_nodes(model):
        ok = np.isfinite(d[:, i])
        if ok.any():
            out["nodes"][model.node_names[i]] = float(np.sqrt(np.mean(d[ok, i] ** 2)))
    vals = np.array(list(out["nodes"].values()))
    out["node_rms_m"] = float(np.sqrt(np.mean(vals ** 2))) if len(vals) else float("nan")
    return out
