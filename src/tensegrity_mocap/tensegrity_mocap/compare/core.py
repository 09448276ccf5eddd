"""Simulation vs experiment (``tensegrity-compare``): per-node position deviations and plate-frame deviations.

Two comparisons of the measured physical nodes with a simulation of the same experiment (a captured
experiment measures markers: where the model puts a node's ``marker`` off the node, the simulated nodes are
turned into the model's marker positions first, :func:`simulated_positions`):

* **nodes** (always): the distance [mm] between each measured node and the simulated node at the same
  (aligned) time; per node its RMS and maximum over time, and the RMS and maximum over all nodes and
  samples. Positions are compared in the world frame, so the capture's world must be the model's (Motive
  CSVs: ``(x, y, z) -> (x, -z, y)`` plus ``--world-offset``; or start the simulation from the experiment,
  ``--initial-from-experiment``).
* **frames** (when there are frames): frames on node triangles (:func:`tensegrity_engine.frames.plate_frame`)
  from the model file or from ``--frame NAME=a,b,c[@x]``. A model with frames C0, C1, C2 (the manipulator
  paper) compares the paper's relative frames ``0C1, 0C2, 1C2``; otherwise one frame is compared in the
  world, and two or more frames as every pair ``A:B`` (frame B expressed in frame A, for each A listed
  before B), which does not depend on where the capture's world is. Per frame: the **position RMS** [mm]
  of the origin distance and the **orientation RMS** [deg] of the geodesic angle (plus per-angle ZYX RMS).

Time: experiment time starts at 0 at its first sample; a sample at ``t`` is compared with the simulation
at ``t + offset``. ``align="auto"`` searches the offset within ``offset ± window`` (20 ms grid on at most
500 samples, then a bounded scalar search) minimising ``position RMS [mm] + orientation RMS [deg]`` over the
frames, or the node RMS [mm] when there are no frames; offsets leaving fewer than half of the valid samples
inside the simulated span are not considered. A periodic input makes whole periods look alike: keep the
window under half a period. Unknown (NaN) nodes skip the samples and frames they affect (counted).

Loading experiments: :mod:`tensegrity_mocap.compare.inputs`; the simulation side:
:mod:`tensegrity_mocap.compare.simulation`; figures: :mod:`tensegrity_mocap.compare.plots`; the command line:
:mod:`tensegrity_mocap.cli.compare`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from tensegrity_engine.frames import (has_paper_frames, paper_relative_frames, plate_frame, relative,
                                      rms_deviation)
from tensegrity_engine.dynamics.trajectory import Trajectory
from tensegrity_engine.model.markers import has_marker_offsets, marker_positions
from tensegrity_engine.model.checks import falls_freely

DEFAULT_WINDOW = 1.0          # s, automatic offset search range (each side)
MIN_OVERLAP = 0.5             # fraction of the valid experiment samples that must overlap the simulation
GRID_STEP = 0.02              # s, coarse grid of the offset search
GRID_SAMPLES = 500            # experiment samples used on the coarse grid
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,63}$")
#: experiment kinds whose positions are motion-capture markers (compared with the model's marker positions,
#: which differ from its nodes where a node's ``marker`` is off it); "mcap" and "trajectory" hold nodes
MARKER_KINDS = ("motive_csv", "motive_csv_map", "motive_csv_tracked", "tracks")


class CompareError(ValueError):
    """The inputs cannot be compared (unknown model, mismatched nodes, no overlap ...); says how to fix it."""


# --- the experiment -------------------------------------------------------------------------------
@dataclass
class Experiment:
    """Measured physical node positions of one experiment, in the model's (Z-up) world frame."""
    t: np.ndarray                  # (T,) s, 0 at the first sample
    nodes: np.ndarray              # (T, n_physical, 3) m, NaN = unknown
    model: object                  # tensegrity_engine Model
    source: str = ""
    kind: str = ""                 # "mcap", "motive_csv", "motive_csv_map", "motive_csv_tracked" or "arrays"
    t0: float = 0.0                # original time of the first sample [s]
    notes: list = field(default_factory=list)

    @property
    def markers(self) -> bool:
        """True if the positions are captured markers (:data:`MARKER_KINDS`), not nodes."""
        return self.kind in MARKER_KINDS

    def full_nodes(self) -> np.ndarray:
        """All model nodes (T, n, 3): virtual nodes sit on their physical node."""
        return expand_nodes(self.model, self.nodes)


def simulated_positions(model, experiment: Experiment, X_sim) -> tuple:
    """(positions (T, n, 3) [m] of the simulation ``X_sim`` (T, n, 3) as the experiment measures them, "markers"
    or "nodes"): the model's marker positions (virtual nodes on their physical node's) for a captured
    experiment of a model with markers off its nodes, else the nodes."""
    if experiment.markers and has_marker_offsets(model):
        return model.from_physical(marker_positions(model, X_sim)), "markers"
    return np.asarray(X_sim, float), "nodes"


def expand_nodes(model, Xp) -> np.ndarray:
    """Physical node positions (..., mu, 3) -> all model nodes (..., n, 3) (virtual on their physical node)."""
    Xp = np.asarray(Xp, float)
    if Xp.shape[-2] != model.n_physical:
        raise CompareError(f"expected {model.n_physical} physical nodes for model '{model.name}', got {Xp.shape[-2]}")
    return model.from_physical(Xp)


def experiment_from_arrays(model, t, nodes, source="arrays", kind="arrays") -> Experiment:
    """An :class:`Experiment` from times (T,) [s] and physical (or all) node positions (T, mu|n, 3) [m]."""
    t = np.asarray(t, float).ravel()
    X = np.asarray(nodes, float)
    if X.ndim != 3 or X.shape[0] != len(t) or X.shape[2] != 3:
        raise CompareError(f"node positions must be (T, nodes, 3) with T = {len(t)}, got {X.shape}")
    if X.shape[1] == model.n_nodes and model.n_nodes != model.n_physical:
        X = X[:, :model.n_physical]
    if X.shape[1] != model.n_physical:
        raise CompareError(f"model '{model.name}' has {model.n_physical} physical nodes, the experiment "
                           f"{X.shape[1]}: compare with the model of the robot that was captured")
    if len(t) < 2:
        raise CompareError(f"{source}: the experiment has {len(t)} sample(s); at least two are needed")
    order = np.argsort(t, kind="stable")
    t, X = t[order], X[order]
    return Experiment(t=t - t[0], nodes=X, model=model, source=str(source), kind=kind, t0=float(t[0]))


# --- frames ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FrameDef:
    """A frame on the node triangle a->b->c (z = its normal), x toward node ``x`` (indices into all nodes)."""
    name: str
    a: int
    b: int
    c: int
    x: int


def model_frame_defs(model) -> list:
    """The model file's frames as :class:`FrameDef` s."""
    fn, fx = np.asarray(model.frame_nodes), np.asarray(model.frame_x)
    return [FrameDef(n, int(fn[i, 0]), int(fn[i, 1]), int(fn[i, 2]), int(fx[i]))
            for i, n in enumerate(model.frame_names)]


def parse_frame(text: str, model) -> FrameDef:
    """``NAME=a,b,c`` (x toward a) or ``NAME=a,b,c@x`` with node names of ``model``, as in a model's
    ``frames:`` (origin at the centroid, z = (b-a) x (c-a) normalised); the nodes must not be collinear
    in the model's initial configuration."""
    name, sep, rest = str(text).partition("=")
    name, rest = name.strip(), rest.strip()
    tri, _, xn = rest.partition("@")
    nodes = [s.strip() for s in tri.split(",")]
    if not sep or len(nodes) != 3 or not all(nodes) or ("@" in rest and not xn.strip()):
        raise CompareError(f"--frame {text!r}: use NAME=a,b,c or NAME=a,b,c@x with three node names "
                           "(x toward a, or toward node x)")
    if not _NAME.match(name):
        raise CompareError(f"--frame {text!r}: the name {name!r} must be an identifier (letters, digits, _ . -)")
    idx = []
    for n in nodes + ([xn.strip()] if xn.strip() else []):
        if n not in model.node_names:
            raise CompareError(f"--frame {text!r}: model '{model.name}' has no node {n!r} (its nodes: "
                               f"{', '.join(model.node_names[:model.n_physical][:12])}"
                               f"{' ...' if model.n_physical > 12 else ''})")
        idx.append(model.node_index(n))
    if len(set(idx[:3])) < 3:
        raise CompareError(f"--frame {text!r}: the three nodes must differ")
    P = np.asarray(model.positions)[idx[:3]]
    if np.linalg.norm(np.cross(P[1] - P[0], P[2] - P[0])) <= 1e-9 * max(1.0, np.ptp(P)) ** 2:
        raise CompareError(f"--frame {text!r}: nodes {', '.join(nodes)} lie on one line in the model; pick a "
                           "triangle")
    return FrameDef(name, idx[0], idx[1], idx[2], idx[3] if len(idx) > 3 else idx[0])


def frame_series(model, X, frames=None) -> dict:
    """Compared frames ``{name: (T, 4, 4)}`` of all-node positions X (T, n, 3) (module docstring).

    ``frames`` (list of :class:`FrameDef`) replaces the model's frames; ``{}`` when there are none."""
    if frames is None:
        if has_paper_frames(model):
            return paper_relative_frames(model, X)
        frames = model_frame_defs(model)
    if not frames:
        return {}
    names = [f.name for f in frames]
    if len(set(names)) != len(names):
        raise CompareError(f"frame names must be unique, got {', '.join(names)}")
    C = plate_frame(X, *(np.array([getattr(f, k) for f in frames]) for k in "abcx"))
    world = {f.name: C[..., i, :, :] for i, f in enumerate(frames)}
    if len(frames) == 1:
        return world
    return {f"{A}:{B}": relative(world[A], world[B]) for i, A in enumerate(names) for B in names[i + 1:]}


# --- deviations -----------------------------------------------------------------------------------
def _stack(frames: dict) -> np.ndarray:
    return np.stack(list(frames.values()), axis=1)          # (T, k, 4, 4)


def _frame_cost(dev) -> float:
    return dev["position_rms"] * 1e3 + np.degrees(dev["orientation_rms"])


def interpolate_nodes(t_sim, X_sim, t) -> np.ndarray:
    """Node positions X_sim (Ts, k, 3) at increasing times t_sim [s], linearly interpolated to t (clipped)."""
    t_sim = np.asarray(t_sim, float)
    t = np.clip(np.asarray(t, float), t_sim[0], t_sim[-1])
    if len(t_sim) == 1:
        return np.repeat(X_sim[:1], len(t), axis=0)
    i = np.clip(np.searchsorted(t_sim, t, side="right") - 1, 0, len(t_sim) - 2)
    w = ((t - t_sim[i]) / (t_sim[i + 1] - t_sim[i]))[:, None, None]
    return (1 - w) * X_sim[i] + w * X_sim[i + 1]


def node_deviation(t_a, X_exp, t_sim, X_sim) -> np.ndarray:
    """|experiment - simulation| [m] (T, k) per sample and node; NaN where unknown or outside the span."""
    t_a = np.asarray(t_a, float)
    lo, hi = float(t_sim[0]), float(t_sim[-1])
    tol = 1e-9 * max(1.0, hi - lo)
    inside = (t_a >= lo - tol) & (t_a <= hi + tol)
    d = np.full(np.asarray(X_exp).shape[:2], np.nan)
    if inside.any():
        d[inside] = np.linalg.norm(np.asarray(X_exp)[inside] - interpolate_nodes(t_sim, X_sim, t_a[inside]), axis=-1)
    return d


def search_offset(t_exp, valid, span, cost_of, centre=0.0, window=DEFAULT_WINDOW) -> tuple:
    """Offset [s] in ``centre ± window`` minimising ``cost_of(indices, offset)`` over the valid experiment
    samples inside the simulated ``span`` (module docstring); returns (offset, cost)."""
    from scipy.optimize import minimize_scalar
    iv = np.flatnonzero(valid)
    if len(iv) < 2:
        raise CompareError("fewer than two experiment samples with what is compared known: cannot align in time")
    lo, hi = span
    step = GRID_STEP
    coarse = np.unique(np.linspace(0, len(iv) - 1, min(len(iv), GRID_SAMPLES)).round().astype(int))

    def cost(off, sub=slice(None)):
        ii = iv[sub]
        t = t_exp[ii] + off
        inside = (t >= lo - 1e-9) & (t <= hi + 1e-9)
        if inside.sum() < max(2, MIN_OVERLAP * len(ii)):
            return np.inf
        return cost_of(ii[inside], off)

    grid = centre + np.linspace(-window, window, max(1, int(round(2 * window / step)) + 1))
    costs = np.array([cost(o, coarse) for o in grid])
    if not np.isfinite(costs).any():
        raise CompareError(f"no time offset within {centre:g} ± {window:g} s overlaps the simulation "
                           f"([{lo:g}, {hi:g}] s) with at least {MIN_OVERLAP:.0%} of the experiment")
    k = int(np.argmin(costs))
    a, b = max(grid[k] - step, centre - window), min(grid[k] + step, centre + window)
    best, best_cost = float(grid[k]), cost(float(grid[k]))
    if b > a:
        res = minimize_scalar(cost, bounds=(a, b), method="bounded", options={"xatol": 1e-5})
        if res.success and np.isfinite(res.fun) and res.fun < best_cost:
            best, best_cost = float(res.x), float(res.fun)
    return best, best_cost


def _deviation_summary(t_a, C_a, t_sim, C_sim) -> dict:
    """rms_deviation plus the counts of skipped and out-of-span samples; RMS in mm and degrees."""
    finite_a = np.isfinite(C_a.reshape(len(t_a), -1)).all(axis=1)
    lo, hi = float(t_sim[0]), float(t_sim[-1])
    tol = 1e-9 * max(1.0, hi - lo)
    inside = (t_a >= lo - tol) & (t_a <= hi + tol)
    out = {"samples": int(len(t_a)), "compared": int((inside & finite_a).sum()),
           "skipped_unknown": int((inside & ~finite_a).sum()), "outside_simulation": int((~inside).sum())}
    if not (inside & finite_a).any():
        out.update(position_rms_mm=None, orientation_rms_deg=None, euler_rms_deg=None,
                   error="no experiment sample with known nodes inside the simulated time span")
        return out
    d = rms_deviation(t_a, C_a, t_sim, C_sim)
    out.update(position_rms_mm=d["position_rms"] * 1e3, orientation_rms_deg=float(np.degrees(d["orientation_rms"])),
               euler_rms_deg=dict(zip(("psi_z", "theta_y", "phi_x"), np.degrees(d["euler_rms_zyx"]).tolist())))
    return out


def _node_summary(t_a, D, names, outside: int) -> dict:
    """Per-node and overall RMS / max [mm] of the deviations D (T, k) [m] (NaN = not compared); ``compared``
    counts samples with at least one node compared, ``outside`` those outside the simulated span."""
    ok = np.isfinite(D)
    rows = ok.any(axis=1)
    out = {"samples": int(len(t_a)), "compared": int(rows.sum()), "outside_simulation": int(outside),
           "rms_mm": None, "max_mm": None, "max_node": None, "max_time_s": None, "per_node": {}}
    for k, n in enumerate(names):
        d = D[ok[:, k], k]
        out["per_node"][n] = {"rms_mm": float(np.sqrt(np.mean(d ** 2)) * 1e3) if len(d) else None,
                              "max_mm": float(d.max() * 1e3) if len(d) else None, "compared": int(len(d))}
    if ok.any():
        i, k = np.unravel_index(np.nanargmax(np.where(ok, D, -1.0)), D.shape)
        out.update(rms_mm=float(np.sqrt(np.mean(D[ok] ** 2)) * 1e3), max_mm=float(D[i, k] * 1e3),
                   max_node=names[k], max_time_s=float(t_a[i]))
    return out


@dataclass
class Comparison:
    """Result of :func:`compare`: the RMS tables, the frame series and the node deviations."""
    model: object
    experiment: Experiment
    simulation: Trajectory
    time_offset: float                   # s, t_sim = t_exp + time_offset
    time_offset_auto: float              # s, the part found by the automatic search
    align: str
    frames: dict                         # name -> summary (see _deviation_summary); {} without frames
    overall: dict | None                 # all frames together (samples where every frame is known)
    samples_with_unknown_nodes: int
    nodes: dict = field(default_factory=dict)                 # see _node_summary
    exp_frames: dict = field(repr=False, default_factory=dict)
    sim_frames: dict = field(repr=False, default_factory=dict)
    node_dev: np.ndarray = field(repr=False, default=None)    # (T, mu) m, NaN = not compared
    frame_defs: dict = field(default_factory=dict)            # name -> [a, b, c, x] node names
    warnings: list = field(default_factory=list)              # loud ones: the simulation is not comparable
    compared: str = "nodes"              # "markers": the model's marker positions were compared (markers off nodes)
    sim_positions: np.ndarray = field(repr=False, default=None)   # (Ts, mu, 3) m, the compared simulated positions
    null: dict | None = None             # the static-prediction null (compare/loads.py static_null)

    @property
    def t_exp(self) -> np.ndarray:
        """Experiment sample times on the simulation's time axis [s]."""
        return self.experiment.t + self.time_offset

    def to_dict(self) -> dict:
        return {
            "experiment": self.experiment.source, "experiment_kind": self.experiment.kind,
            "simulation": self.simulation.settings.get("source", self.simulation.model_name),
            "model": self.model.name, "frames_compared": list(self.frames),
            "relative_frames": (any(":" in k for k in self.frames)
                                or (not self.frame_defs and has_paper_frames(self.model))),
            "frame_definitions": self.frame_defs,
            "align": self.align, "time_offset_s": self.time_offset, "time_offset_auto_s": self.time_offset_auto,
            "experiment_samples": int(len(self.experiment.t)),
            "experiment_duration_s": float(self.experiment.t[-1]),
            "simulation_span_s": [float(self.simulation.t[0]), float(self.simulation.t[-1])],
            "samples_with_unknown_nodes": self.samples_with_unknown_nodes, "compared": self.compared,
            "frames": self.frames, "overall": self.overall, "nodes": self.nodes,
            "notes": list(self.experiment.notes), "warnings": list(self.warnings), "static_null": self.null,
        }

    def table(self) -> str:
        """The frame table (when there are frames) and the per-node table, as text."""
        rows = []
        if self.frames:
            rows.append(f"{'frame':<8}{'position RMS [mm]':>19}{'orientation RMS [deg]':>23}{'samples':>9}"
                        f"{'skipped':>9}{'outside':>9}")
            for name, d in list(self.frames.items()) + [("all", self.overall)]:
                pos = "-" if d["position_rms_mm"] is None else f"{d['position_rms_mm']:.3f}"
                ang = "-" if d["orientation_rms_deg"] is None else f"{d['orientation_rms_deg']:.3f}"
                rows.append(f"{name:<8}{pos:>19}{ang:>23}{d['compared']:>9}{d['skipped_unknown']:>9}"
                            f"{d['outside_simulation']:>9}")
            rows.append("")
        w = max([8] + [len(n) + 2 for n in self.nodes["per_node"]])

        def fmt(v):
            return "-" if v is None else f"{v:.3f}"
        rows.append(f"{'node':<{w}}{'RMS [mm]':>12}{'max [mm]':>12}{'samples':>9}")
        for n, d in self.nodes["per_node"].items():
            rows.append(f"{n:<{w}}{fmt(d['rms_mm']):>12}{fmt(d['max_mm']):>12}{d['compared']:>9}")
        n = self.nodes
        worst = f" (max at {n['max_node']}, t = {n['max_time_s']:.3f} s)" if n["max_node"] else ""
        rows.append(f"{'all':<{w}}{fmt(n['rms_mm']):>12}{fmt(n['max_mm']):>12}{n['compared']:>9}{worst}")
        return "\n".join(rows)


BOX_MARGIN = (0.05, 0.1)      # (m, fraction of the capture box's diagonal): world_warnings


def compare(experiment: Experiment, simulation: Trajectory, model=None, time_offset: float = 0.0,
            align: str = "none", window: float = DEFAULT_WINDOW, frames=None) -> Comparison:
    """Compare ``experiment`` with ``simulation`` (module docstring). ``frames``: list of :class:`FrameDef`
    replacing the model's frames (None: the model's)."""
    model = model or experiment.model
    if align not in ("none", "auto"):
        raise ValueError(f"align must be 'auto' or 'none', got {align!r}")
    if not (np.isfinite(time_offset) and np.isfinite(window) and window >= 0):
        raise ValueError("time_offset and window must be finite (window >= 0)")
    mu = model.n_physical
    phys = tuple(model.node_names[:mu])
    sim_phys = tuple(simulation.node_names[:simulation.n_physical])
    if sim_phys != phys or simulation.nodes.shape[1] != model.n_nodes:
        raise CompareError(f"the simulation ('{simulation.model_name}', {simulation.n_physical} physical nodes) "
                           f"and the experiment's model ('{model.name}', {mu}) have different nodes: simulate "
                           "the experiment's model")
    Xs_all, compared = simulated_positions(model, experiment, simulation.nodes)
    Fe = frame_series(model, experiment.full_nodes(), frames)
    Fs = frame_series(model, Xs_all, frames)
    t_sim = np.asarray(simulation.t, float)
    Xe, Xs = experiment.nodes, Xs_all[:, :mu]
    auto = 0.0
    if align == "auto":
        if Fe:
            Ce, Cs = _stack(Fe), _stack(Fs)
            valid = np.isfinite(Ce.reshape(len(experiment.t), -1)).all(axis=1)

            def cost_of(ii, off):
                return _frame_cost(rms_deviation(experiment.t[ii] + off, Ce[ii], t_sim, Cs))
        else:
            valid = np.isfinite(Xe).all(axis=2).any(axis=1)

            def cost_of(ii, off):
                d = np.linalg.norm(Xe[ii] - interpolate_nodes(t_sim, Xs, experiment.t[ii] + off), axis=-1)
                return float(np.sqrt(np.nanmean(d ** 2)) * 1e3)
        best, _ = search_offset(experiment.t, valid, (t_sim[0], t_sim[-1]), cost_of, centre=time_offset,
                                window=window)
        auto = best - time_offset
        time_offset = best
    t_a = experiment.t + time_offset
    if t_a[-1] < t_sim[0] or t_a[0] > t_sim[-1]:
        raise CompareError(f"no overlap in time: the experiment (t + {time_offset:g} s) spans [{t_a[0]:g}, "
                           f"{t_a[-1]:g}] s, the simulation [{t_sim[0]:g}, {t_sim[-1]:g}] s; check the time offset")
    summaries = {name: _deviation_summary(t_a, Fe[name], t_sim, Fs[name]) for name in Fe}
    overall = _deviation_summary(t_a, _stack(Fe), t_sim, _stack(Fs)) if Fe else None
    D = node_deviation(t_a, Xe, t_sim, Xs)
    tol = 1e-9 * max(1.0, t_sim[-1] - t_sim[0])
    outside = int(((t_a < t_sim[0] - tol) | (t_a > t_sim[-1] + tol)).sum())
    unknown = int((~np.isfinite(Xe).all(axis=(1, 2))).sum())
    names = model.node_names
    defs = {f.name: [names[f.a], names[f.b], names[f.c], names[f.x]] for f in (frames or [])}
    return Comparison(model=model, experiment=experiment, simulation=simulation, time_offset=float(time_offset),
                      time_offset_auto=float(auto), align=align, frames=summaries, overall=overall,
                      samples_with_unknown_nodes=unknown, nodes=_node_summary(t_a, D, list(phys), outside),
                      exp_frames=Fe, sim_frames=Fs, node_dev=D, frame_defs=defs,
                      warnings=world_warnings(model, Xe, Xs), compared=compared, sim_positions=Xs)


def world_warnings(model, Xe, Xs) -> list:
    """Warnings when the simulation cannot be compared with the capture: it leaves the capture's bounding box
    by more than BOX_MARGIN (the larger of 50 mm and 10 % of the box's diagonal), then the likely cause (a
    model under gravity with neither fixed nodes nor obstacles falls freely; a captured drop stays inside)."""
    known = Xe[np.isfinite(Xe).all(axis=-1)]
    if not len(known):
        return []
    lo, hi = known.min(axis=0), known.max(axis=0)
    margin = max(BOX_MARGIN[0], BOX_MARGIN[1] * float(np.linalg.norm(hi - lo)))
    beyond = np.maximum(lo - Xs, Xs - hi).max(axis=-1)               # (T, mu) m, > 0 outside the box
    if not np.nanmax(beyond) > margin:
        return []
    k, j = np.unravel_index(int(np.nanargmax(beyond)), beyond.shape)
    out = [f"the simulation leaves the capture's bounding box: node {model.node_names[j]} ends up "
           f"{beyond[k, j] * 1e3:.0f} mm outside it (sample {k}); the deviations below compare a different motion"]
    if falls_freely(model):
        out.append(f"model '{model.name}' is under gravity with neither fixed nodes nor obstacles: it falls "
                   "freely; give it the floor it stands on (tensegrity-compare --ground Z, or 'obstacles:' in "
                   "the model file, docs/model_schema.md)")
    return out
