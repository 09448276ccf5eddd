"""Simulation vs experiment: plate positions and ZYX angles of 0C1, 0C2, 1C2 and their RMS deviations.

This is the manipulator paper's comparison (its Fig. 6 and the RMS table): the relative plate frames
``0C1`` (C1 in C0), ``0C2`` and ``1C2`` are computed from the measured node positions and from a
simulation of the same experiment, plotted over time, and their deviation is summarised as

* the **position RMS deviation** [mm]: RMS over time of the distance between the measured and the
  simulated frame origins;
* the **orientation RMS deviation** [deg]: RMS over time of the geodesic angle between the measured
  and simulated orientations (plus the per-angle ZYX RMS, in rms.json).

Frames, Euler angles, interpolation and the RMS are the engine's (:mod:`tensegrity_engine.frames`); the
figure is the engine's :func:`~tensegrity_engine.plots.plot_plates`. Because the compared frames are
*relative* frames, the result does not depend on where the motion-capture world frame is.

Inputs
------
experiment
    a suite recording (``.mcap``): ``/node_positions`` (PoseArray, physical nodes in model order, NaN =
    unknown) and ``/model_description``; or a Motive CSV export (``.csv``) whose labeled markers are named
    after the model's nodes (``Asset:n1`` or ``n1`` -> node ``n1``), converted from Motive's Y-up frame
    to the model's Z-up frame with ``(x, y, z) -> (x, -z, y)``; the model then comes from ``--model``,
    ``--simulate MODEL``, the trajectory directory's ``model.yaml`` or the trajectory's model name.
simulation
    an engine trajectory directory (``trajectory.npz``, e.g. from ``tensegrity simulate``) or that file
    (its ``trajectory.csv`` export is not read), or
    ``--simulate MODEL``: the paper's experiment (:func:`tensegrity_engine.paper_sinusoid` from rest) run
    for the experiment's duration (plus a positive time offset and the alignment window; at most an hour)
    at ``--sim-rate``.

Time alignment
--------------
Experiment time is measured from its first sample (``t = 0`` there); an experiment sample at time ``t``
is compared with the simulation at time ``t + offset`` with ``offset = --time-offset`` (default 0). With
``--align auto`` the offset is searched within ``--time-offset ± --window`` (default ±1 s): a 20 ms grid
(on at most 500 evenly spread experiment samples), refined by a bounded scalar search on all samples
within one grid step of the best grid point, minimising the disagreement

    cost(offset) = position RMS [mm] + orientation RMS [deg]

over all three relative frames (1 mm counts like 1 degree), on the experiment samples that fall inside
the simulated time span; offsets that leave fewer than half of the valid samples inside are not
considered. The chosen offset is in ``rms.json`` (``time_offset_s``, and ``time_offset_auto_s`` for the
part found by the search). A periodic input makes shifts by whole periods look alike: keep the window
shorter than half the period (the paper's is 7 s).

Unknown nodes
-------------
Experiment samples where a relative frame cannot be computed (a node of either plate is NaN) are
skipped for that frame and counted (``skipped_unknown``); samples outside the simulated time span are
counted as ``outside_simulation`` (an experiment entirely outside it is an error).
``samples_with_unknown_nodes`` counts samples with any physical node unknown (also nodes no plate uses,
which do not affect the frames).

Command line::

    tensegrity-compare EXPERIMENT (--trajectory DIR | --simulate MODEL) [--out DIR] [--time-offset S]
                       [--align auto|none] [--window S] [--model MODEL] [--asset NAME] [--namespace NS]
                       [--sim-rate HZ]

writes ``comparison.png`` (plate positions and ZYX angles, experiment and simulation), ``deviation.png``
(deviation over time) and ``rms.json`` into ``--out``, and prints the RMS table. Exit codes: 0 success,
2 bad arguments or inputs, 3 the simulation diverged.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tensegrity_engine.frames import has_paper_frames, model_frames, paper_relative_frames, rms_deviation
from tensegrity_engine.errors import SimulationDiverged
from tensegrity_engine.paths import output_path_problem
from tensegrity_engine.trajectory import Trajectory

from .motive_csv import MotiveCSVError, MotiveRecording, read_motive_csv, y_up_to_z_up

DEFAULT_WINDOW = 1.0          # s, automatic offset search range (each side)
MIN_OVERLAP = 0.5             # fraction of the valid experiment samples that must overlap the simulation
GRID_STEP = 0.02              # s, coarse grid of the offset search
GRID_SAMPLES = 500            # experiment samples used on the coarse grid
MAX_SIMULATE = 3600.0         # s, longest --simulate run


class CompareError(ValueError):
    """The inputs cannot be compared (unknown model, mismatched nodes, no overlap ...)."""


# --- the experiment -------------------------------------------------------------------------------
@dataclass
class Experiment:
    """Measured physical node positions of one experiment, in the model's (Z-up) world frame."""
    t: np.ndarray                  # (T,) s, 0 at the first sample
    nodes: np.ndarray              # (T, n_physical, 3) m, NaN = unknown
    model: object                  # tensegrity_engine Model
    source: str = ""
    kind: str = ""                 # "mcap", "motive_csv" or "arrays"
    t0: float = 0.0                # original time of the first sample [s]
    notes: list = field(default_factory=list)

    def full_nodes(self) -> np.ndarray:
        """All model nodes (T, n, 3): virtual nodes sit on their physical node."""
        return expand_nodes(self.model, self.nodes)


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
        raise CompareError(f"model '{model.name}' has {model.n_physical} physical nodes, the experiment {X.shape[1]}")
    if len(t) < 2:
        raise CompareError(f"{source}: the experiment has {len(t)} sample(s); at least two are needed")
    order = np.argsort(t, kind="stable")
    t, X = t[order], X[order]
    return Experiment(t=t - t[0], nodes=X, model=model, source=str(source), kind=kind, t0=float(t[0]))


def node_markers(recording: MotiveRecording, node_names, asset: str | None = None) -> dict:
    """node name -> marker name: a marker ``Asset:node`` or ``node`` (``asset`` picks one asset)."""
    found = {}
    for marker in recording.markers:
        prefix, _, base = marker.rpartition(":")
        if asset is not None and prefix != asset:
            continue
        if base in node_names:
            found.setdefault(base, []).append(marker)
    out = {}
    for node, ms in found.items():
        if len(ms) > 1:
            raise CompareError(f"{recording.path}: node {node!r} matches several markers ({', '.join(ms)}); "
                               "choose the asset with --asset")
        out[node] = ms[0]
    return out


def experiment_from_motive(recording: MotiveRecording, model, asset: str | None = None) -> Experiment:
    """Physical node positions from a Motive recording (labeled markers named after the nodes), Z-up."""
    names = list(model.node_names[:model.n_physical])
    mapping = node_markers(recording, set(names), asset)
    if not mapping:
        raise CompareError(f"{recording.path}: no labeled marker is named after a node of model '{model.name}' "
                           f"(nodes {', '.join(names[:6])}...; markers {', '.join(list(recording.markers)[:6]) or 'none'})"
                           + (f" in asset {asset!r}" if asset else ""))
    Xy = np.full((recording.n_frames, len(names), 3), np.nan)
    for k, n in enumerate(names):
        if n in mapping:
            Xy[:, k] = recording.markers[mapping[n]]
    exp = experiment_from_arrays(model, recording.times, y_up_to_z_up(Xy), source=recording.path, kind="motive_csv")
    missing = [n for n in names if n not in mapping]
    if missing:
        exp.notes.append(f"no marker for node(s) {', '.join(missing)} (unknown in every sample)")
    return exp


def experiment_from_mcap(path, model=None, namespace: str = "") -> Experiment:
    """Node positions and the model from a suite recording (``/node_positions``, ``/model_description``)."""
    from tensegrity_ros_common.recording import read_recording
    from tensegrity_ros_common.description import model_from_description
    rec = read_recording(str(path), namespace)
    if model is None:
        if not rec["description"]:
            raise CompareError(f"{path}: the recording has no /model_description; give the model with --model")
        model = model_from_description(rec["description"])
    if len(rec["positions"]) < 2:
        raise CompareError(f"{path}: the recording has {len(rec['positions'])} /node_positions message(s); "
                           "at least two are needed")
    rows = sorted(rec["positions"], key=lambda r: r[0])
    bad = [len(r[2]) for r in rows if len(r[2]) != model.n_physical]
    if bad:
        raise CompareError(f"{path}: /node_positions has {bad[0]} poses but model '{model.name}' has "
                           f"{model.n_physical} physical nodes")
    t = np.array([r[0] for r in rows])
    X = np.array([r[2] for r in rows], float).reshape(len(rows), model.n_physical, 3)
    return experiment_from_arrays(model, t, X, source=str(path), kind="mcap")


def load_experiment(path, model=None, asset=None, namespace: str = "") -> Experiment:
    """A ``.mcap`` recording or a Motive ``.csv`` export (which needs ``model``)."""
    p = Path(path)
    if not p.is_file():
        raise CompareError(f"{path}: no such file")
    if p.suffix.lower() == ".mcap":
        return experiment_from_mcap(p, model, namespace)
    if p.suffix.lower() == ".csv":
        if model is None:
            raise CompareError(f"{path}: a Motive CSV has no model; give --model, --simulate MODEL, or a "
                               "trajectory directory with model.yaml")
        return experiment_from_motive(read_motive_csv(p), model, asset)
    raise CompareError(f"{path}: unknown experiment type (expected a .mcap recording or a Motive .csv export)")


# --- frames and deviation -------------------------------------------------------------------------
def frame_series(model, X) -> dict:
    """The paper's relative frames (``0C1, 0C2, 1C2``) of all-node positions X (T, n, 3); for a model
    without frames C0, C1, C2 every model frame in the world (then the mocap world must be the model's)."""
    if has_paper_frames(model):
        return paper_relative_frames(model, X)
    frames = model_frames(model, X)
    if not frames:
        raise CompareError(f"model '{model.name}' defines no frames to compare")
    return frames


def _cost(dev) -> float:
    return dev["position_rms"] * 1e3 + np.degrees(dev["orientation_rms"])


def _stack(frames: dict) -> np.ndarray:
    return np.stack(list(frames.values()), axis=1)          # (T, k, 4, 4)


def search_offset(t_exp, C_exp, t_sim, C_sim, centre=0.0, window=DEFAULT_WINDOW) -> tuple:
    """Offset [s] in ``centre ± window`` minimising the cost (module docstring); returns (offset, cost)."""
    from scipy.optimize import minimize_scalar
    valid = np.isfinite(C_exp.reshape(len(t_exp), -1)).all(axis=1)
    n_valid = int(valid.sum())
    if n_valid < 2:
        raise CompareError("fewer than two experiment samples with all frames known: cannot align in time")
    te, Ce = t_exp[valid], C_exp[valid]
    lo, hi = float(t_sim[0]), float(t_sim[-1])
    step = GRID_STEP
    coarse = np.unique(np.linspace(0, n_valid - 1, min(n_valid, GRID_SAMPLES)).round().astype(int))

    def cost(off, idx=slice(None)):
        t, C = te[idx], Ce[idx]
        inside = (t + off >= lo - 1e-9) & (t + off <= hi + 1e-9)
        if inside.sum() < max(2, MIN_OVERLAP * len(t)):
            return np.inf
        return _cost(rms_deviation(t[inside] + off, C[inside], t_sim, C_sim))

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


@dataclass
class Comparison:
    """Result of :func:`compare`: the RMS table and the two frame series on the simulation's time axis."""
    model: object
    experiment: Experiment
    simulation: Trajectory
    time_offset: float                   # s, t_sim = t_exp + time_offset
    time_offset_auto: float              # s, the part found by the automatic search
    align: str
    frames: dict                         # name -> summary (see _deviation_summary)
    overall: dict                        # all frames together (samples where every frame is known)
    samples_with_unknown_nodes: int
    exp_frames: dict = field(repr=False, default_factory=dict)
    sim_frames: dict = field(repr=False, default_factory=dict)

    @property
    def t_exp(self) -> np.ndarray:
        """Experiment sample times on the simulation's time axis [s]."""
        return self.experiment.t + self.time_offset

    def to_dict(self) -> dict:
        return {
            "experiment": self.experiment.source, "experiment_kind": self.experiment.kind,
            "simulation": self.simulation.settings.get("source", self.simulation.model_name),
            "model": self.model.name, "frames_compared": list(self.frames),
            "relative_frames": has_paper_frames(self.model),
            "align": self.align, "time_offset_s": self.time_offset, "time_offset_auto_s": self.time_offset_auto,
            "experiment_samples": int(len(self.experiment.t)),
            "experiment_duration_s": float(self.experiment.t[-1]),
            "simulation_span_s": [float(self.simulation.t[0]), float(self.simulation.t[-1])],
            "samples_with_unknown_nodes": self.samples_with_unknown_nodes,
            "frames": self.frames, "overall": self.overall, "notes": list(self.experiment.notes),
        }

    def table(self) -> str:
        rows = [f"{'frame':<8}{'position RMS [mm]':>19}{'orientation RMS [deg]':>23}{'samples':>9}"
                f"{'skipped':>9}{'outside':>9}"]
        for name, d in list(self.frames.items()) + [("all", self.overall)]:
            pos = "-" if d["position_rms_mm"] is None else f"{d['position_rms_mm']:.3f}"
            ang = "-" if d["orientation_rms_deg"] is None else f"{d['orientation_rms_deg']:.3f}"
            rows.append(f"{name:<8}{pos:>19}{ang:>23}{d['compared']:>9}{d['skipped_unknown']:>9}"
                        f"{d['outside_simulation']:>9}")
        return "\n".join(rows)


def compare(experiment: Experiment, simulation: Trajectory, model=None, time_offset: float = 0.0,
            align: str = "none", window: float = DEFAULT_WINDOW) -> Comparison:
    """Compare the relative plate frames of ``experiment`` with ``simulation`` (module docstring)."""
    model = model or experiment.model
    if align not in ("none", "auto"):
        raise ValueError(f"align must be 'auto' or 'none', got {align!r}")
    if not (np.isfinite(time_offset) and np.isfinite(window) and window >= 0):
        raise ValueError("time_offset and window must be finite (window >= 0)")
    phys = tuple(model.node_names[:model.n_physical])
    sim_phys = tuple(simulation.node_names[:simulation.n_physical])
    if sim_phys != phys or simulation.nodes.shape[1] != model.n_nodes:
        raise CompareError(f"the simulation ('{simulation.model_name}', {simulation.n_physical} physical nodes) "
                           f"and the experiment's model ('{model.name}', {model.n_physical}) have different nodes")
    Fe = frame_series(model, experiment.full_nodes())
    Fs = frame_series(model, simulation.nodes)
    names = list(Fe)
    Ce, Cs = _stack(Fe), _stack(Fs)
    t_sim = np.asarray(simulation.t, float)
    auto = 0.0
    if align == "auto":
        best, _ = search_offset(experiment.t, Ce, t_sim, Cs, centre=time_offset, window=window)
        auto = best - time_offset
        time_offset = best
    t_a = experiment.t + time_offset
    if t_a[-1] < t_sim[0] or t_a[0] > t_sim[-1]:
        raise CompareError(f"no overlap in time: the experiment (t + {time_offset:g} s) spans [{t_a[0]:g}, "
                           f"{t_a[-1]:g}] s, the simulation [{t_sim[0]:g}, {t_sim[-1]:g}] s; check the time offset")
    frames = {name: _deviation_summary(t_a, Fe[name], t_sim, Fs[name]) for name in names}
    overall = _deviation_summary(t_a, Ce, t_sim, Cs)
    unknown = int((~np.isfinite(experiment.nodes).all(axis=(1, 2))).sum())
    return Comparison(model=model, experiment=experiment, simulation=simulation, time_offset=float(time_offset),
                      time_offset_auto=float(auto), align=align, frames=frames, overall=overall,
                      samples_with_unknown_nodes=unknown, exp_frames=Fe, sim_frames=Fs)


# --- figures --------------------------------------------------------------------------------------
def experiment_trajectory(experiment: Experiment, model, time_offset: float = 0.0) -> Trajectory:
    """The experiment as an engine :class:`Trajectory` (node positions only; other fields zero or NaN)."""
    X = experiment.full_nodes()
    T = len(experiment.t)
    ns, na, nb = len(model.string_names), len(model.actuator_names), len(model.bar_names)

    def z(k):
        return np.zeros((T, k))
    return Trajectory(t=experiment.t + time_offset, nodes=X, velocities=np.zeros_like(X), tensions=z(ns),
                      string_lengths=z(ns), inputs=z(na),
                      bar_forces=np.full((T, nb), np.nan), node_names=tuple(model.node_names),
                      n_physical=model.n_physical, bars=np.array(model.bars), bar_names=tuple(model.bar_names),
                      strings=np.array(model.segments), segment_string=np.array(model.segment_string),
                      string_names=tuple(model.string_names), actuator_names=tuple(model.actuator_names),
                      rest_lengths=z(ns), motor_angles=z(na), bar_length_error=model.bar_length_error(X),
                      model_name=model.name, settings={"source": experiment.source})


def plot_comparison(result: Comparison, path, label_exp="experiment", label_sim="simulation") -> Path:
    """``comparison.png``: the engine's plate figure, simulation solid, experiment dashed."""
    from tensegrity_engine.plots import plot_plates
    exp_traj = experiment_trajectory(result.experiment, result.model, result.time_offset)
    return plot_plates(result.simulation, result.model, path, compare=[(label_exp, exp_traj)], label=label_sim)


def plot_deviation(result: Comparison, path) -> Path:
    """``deviation.png``: position deviation [mm] and orientation deviation [deg] over time per frame."""
    from tensegrity_engine.frames import interpolate_frames, rotation_angle
    from tensegrity_engine.plots import _figure, _save
    t_sim = result.simulation.t
    t_a = result.t_exp
    inside = (t_a >= t_sim[0]) & (t_a <= t_sim[-1])
    fig = _figure(4.2)
    axp, axa = fig.subplots(1, 2, sharex=True)
    for c, name in enumerate(result.frames):
        Ce = result.exp_frames[name][inside]
        Cs = interpolate_frames(t_sim, result.sim_frames[name], t_a[inside])
        dp = np.linalg.norm(Ce[:, :3, 3] - Cs[:, :3, 3], axis=-1) * 1e3
        da = np.degrees(rotation_angle(Ce, Cs))
        axp.plot(t_a[inside], dp, color=f"C{c}", lw=1.2, label=name)
        axa.plot(t_a[inside], da, color=f"C{c}", lw=1.2, label=name)
    axp.set(xlabel="time [s]", ylabel="position deviation [mm]", title="|r_exp − r_sim|")
    axa.set(xlabel="time [s]", ylabel="orientation deviation [deg]", title="angle of R_exp^T R_sim")
    for ax in (axp, axa):
        ax.grid(True, alpha=0.4)
        ax.legend(fontsize="small")
    fig.suptitle(f"{result.model.name}: experiment vs simulation (offset {result.time_offset:+.3f} s)")
    return _save(fig, path)


# --- command line ---------------------------------------------------------------------------------
def _load_model(name):
    from tensegrity_engine import load_model
    return load_model(name)


def simulate_paper(model, duration: float, rate: float = 100.0) -> Trajectory:
    """The paper's experiment (paper sinusoids from rest) for ``duration`` [s] sampled at ``rate`` [Hz]."""
    from tensegrity_engine import Simulator, paper_sinusoid
    traj = Simulator(model).run(duration, inputs=paper_sinusoid(model), rate=rate)
    traj.settings["source"] = f"simulated: {model.name}, paper sinusoids, {duration:g} s at {rate:g} Hz"
    return traj


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tensegrity-compare",
        description="Compare an experiment (suite MCAP or Motive CSV) with a simulation: plate positions and "
                    "ZYX angles of 0C1, 0C2, 1C2, and their position [mm] / orientation [deg] RMS deviations.")
    p.add_argument("experiment", help="suite recording (.mcap) or Motive CSV export (.csv)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--trajectory", metavar="DIR", help="engine trajectory directory (trajectory.npz) or file")
    src.add_argument("--simulate", metavar="MODEL", help="simulate the paper's experiment with this model "
                     "(built-in name or YAML file) for the experiment's duration")
    p.add_argument("--out", metavar="DIR", default=None, help="output directory (default runs/compare-<experiment>)")
    p.add_argument("--time-offset", type=float, default=0.0, metavar="S",
                   help="compare experiment time t with simulation time t + S (default 0)")
    p.add_argument("--align", choices=("auto", "none"), default="none",
                   help="auto: search the offset within --time-offset ± --window minimising "
                        "position RMS [mm] + orientation RMS [deg]; none (default): use --time-offset")
    p.add_argument("--window", type=float, default=DEFAULT_WINDOW, metavar="S", help="auto search half-width [s]")
    p.add_argument("--model", default=None, help="model of a Motive CSV experiment (name or YAML file)")
    p.add_argument("--asset", default=None, help="Motive asset whose markers are the nodes (Asset:n1)")
    p.add_argument("--namespace", default="", help="topic namespace in the MCAP recording")
    p.add_argument("--sim-rate", type=float, default=100.0, metavar="HZ", help="--simulate output rate [Hz]")
    return p


def _trajectory_model(traj_path: Path, traj: Trajectory):
    d = traj_path if traj_path.is_dir() else traj_path.parent
    if (d / "model.yaml").is_file():
        return _load_model(str(d / "model.yaml"))
    if traj.model_name:
        return _load_model(traj.model_name)
    return None


def load_trajectory(tp: Path) -> Trajectory:
    """An engine trajectory: a directory holding ``trajectory.npz`` or the file itself."""
    npz = tp / "trajectory.npz" if tp.is_dir() else tp
    if not npz.is_file():
        raise CompareError(f"{tp}: no trajectory.npz" if tp.is_dir() else f"{tp}: no such file")
    if npz.suffix.lower() != ".npz":
        raise CompareError(f"{tp}: --trajectory takes an engine trajectory directory or its trajectory.npz "
                           "(the engine's trajectory.csv is an export for other tools and is not read back)")
    try:
        traj = Trajectory.load(npz)
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
        if isinstance(exc, ValueError) and str(npz) in str(exc):       # the engine's own message names the file
            raise CompareError(str(exc)) from None
        raise CompareError(f"{npz}: not an engine trajectory.npz ({type(exc).__name__}: {exc})") from None
    traj.settings["source"] = str(tp)
    return traj


def run(args) -> Comparison:
    model = _load_model(args.model) if args.model else None
    traj = None
    if args.trajectory:
        tp = Path(args.trajectory)
        traj = load_trajectory(tp)
        if model is None and Path(args.experiment).suffix.lower() == ".csv":
            model = _trajectory_model(tp, traj)
    else:
        sim_model = _load_model(args.simulate)
        if model is None and Path(args.experiment).suffix.lower() == ".csv":
            model = sim_model
    exp = load_experiment(args.experiment, model, asset=args.asset, namespace=args.namespace)
    model = exp.model
    if traj is None:
        if tuple(sim_model.node_names) != tuple(model.node_names):
            raise CompareError(f"model '{sim_model.name}' and the experiment's model '{model.name}' have "
                               "different nodes")
        extra = args.window + max(args.time_offset, 0.0) if args.align == "auto" else max(args.time_offset, 0.0)
        duration = float(exp.t[-1]) + extra
        if duration > MAX_SIMULATE:
            raise CompareError(f"--simulate would run {duration:g} s (experiment {exp.t[-1]:g} s + time offset"
                               f"{' + window' if args.align == 'auto' else ''}), more than {MAX_SIMULATE:g} s: "
                               "use a smaller --time-offset, or --trajectory")
        traj = simulate_paper(sim_model, duration, rate=args.sim_rate)
    return compare(exp, traj, model, time_offset=args.time_offset, align=args.align, window=args.window)


def _make_out_dir(out: Path) -> list:
    """Create ``out`` (and its missing parents) before the work; returns the created directories, deepest
    first. Raises CompareError when it cannot be created or written."""
    created = []
    for d in (out, *out.parents):
        if d.exists() or d.is_symlink():
            break
        created.append(d)
    problem = output_path_problem(out)
    if problem:
        raise CompareError(f"--out {out}: {problem}")
    return created


def _remove_dirs(created):
    for d in created:                    # deepest first; stop at the first that is not empty
        try:
            d.rmdir()
        except OSError:
            break


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not math.isfinite(args.time_offset):
        parser.error(f"argument --time-offset: must be a finite number of seconds, got {args.time_offset}")
    if not (math.isfinite(args.window) and args.window >= 0):
        parser.error(f"argument --window: must be a finite number of seconds >= 0, got {args.window}")
    if not (math.isfinite(args.sim_rate) and args.sim_rate > 0):
        parser.error(f"argument --sim-rate: must be a positive number (Hz), got {args.sim_rate}")
    out = Path(args.out or f"runs/compare-{Path(args.experiment).stem}")
    created = []
    try:
        created = _make_out_dir(out)
        result = run(args)
    except (CompareError, MotiveCSVError, FileNotFoundError) as exc:
        _remove_dirs(created)
        print(f"tensegrity-compare: error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:            # model, description, recording and input errors
        _remove_dirs(created)
        print(f"tensegrity-compare: error: {exc}", file=sys.stderr)
        return 2
    except SimulationDiverged as exc:
        _remove_dirs(created)
        print(f"tensegrity-compare: error: the simulation diverged: {exc}", file=sys.stderr)
        return 3
    files = [plot_comparison(result, out / "comparison.png"), plot_deviation(result, out / "deviation.png")]
    summary = result.to_dict()
    summary["files"] = [str(f) for f in files] + [str(out / "rms.json")]
    (out / "rms.json").write_text(json.dumps(summary, indent=2))
    print(f"{result.model.name}: {Path(args.experiment).name} vs {summary['simulation']}")
    print(f"time offset {result.time_offset:+.4f} s" + (f" (auto {result.time_offset_auto:+.4f} s)"
                                                         if result.align == "auto" else ""))
    print(result.table())
    if result.samples_with_unknown_nodes:
        print(f"{result.samples_with_unknown_nodes} experiment sample(s) have unknown nodes")
    for note in result.experiment.notes:
        print("note:", note)
    print(f"wrote {out}/: " + ", ".join(Path(f).name for f in summary["files"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
