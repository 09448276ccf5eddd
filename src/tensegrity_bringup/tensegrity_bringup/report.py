"""Read a suite recording (MCAP) back and make the plots and the summary of a run.

Plots: plate positions and ZYX angles (the manipulator paper's Fig. 6 layout; robots with frames), string
tensions, motor displacements (from the recorded motor angles), minimum clearance with the safety stop, the
publishing intervals of ``node_positions`` (rate and jitter as received through DDS); for a rolling robot
the path, faces, distance, speed and bar-bar clearance (:mod:`.rolling_report`). The summary
(``summary.json``) holds message counts and rates, interval percentiles, clearance extremes, the last
diagnostics of every node, the rolling run's numbers and the plots skipped (with why).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tensegrity_engine.dynamics.trajectory import Trajectory
from tensegrity_ros_common.description import model_from_description
from tensegrity_ros_common.recording import read_recording

from .rolling_report import is_rolling_robot, plot_track, rolling_summary, rolling_track


def _by_stamp(rows):
    return {r[0]: r for r in rows}


def trajectory_from_recording(rec, model) -> Trajectory:
    """An engine Trajectory of the recorded states (samples where positions, strings and motors share a stamp)."""
    pos = sorted(rec["positions"], key=lambda r: r[0])
    strings, joints = _by_stamp(rec["strings"]), _by_stamp(rec["joints"])
    rows = [r for r in pos if r[0] in strings and (r[0] in joints or not model.actuator_names)]
    if len(rows) < 2:
        raise ValueError("the recording has fewer than two complete samples (positions + string states)")
    t = np.array([r[0] for r in rows])
    Xp = np.array([r[2] for r in rows])
    X = model.from_physical(Xp)
    order = [list(strings[t[0]][1]).index(n) for n in model.string_names]
    L = np.array([np.asarray(strings[s][2])[order] for s in t])
    T = np.array([np.asarray(strings[s][3])[order] for s in t])
    if model.actuator_names:
        jorder = [list(joints[t[0]][1]).index(n) for n in model.actuator_names]
        ang = np.array([np.asarray(joints[s][2])[jorder] for s in t])
        u = model.actuator_sign * model.spool_radius * (ang - model.actuator_zero)
    else:
        u = np.zeros((len(t), 0))
    Xd = np.gradient(X, t, axis=0)
    return Trajectory.from_run(model, t - t[0], X, Xd, T, L, u, np.full((len(t), len(model.bar_names)), np.nan),
                               inputs_description="recorded through ROS 2 (tensegrity-bringup)",
                               settings={"source": "MCAP recording"})


def _intervals(rec) -> np.ndarray:
    t = np.sort(np.array([r[1] for r in rec["positions"]]))
    return np.diff(t)


def summarize(rec, duration: float | None = None) -> dict:
    dt = _intervals(rec)
    out = {"messages": rec["counts"]}
    if len(dt):
        out["node_positions_rate_hz"] = float(1.0 / np.mean(dt))
        out["node_positions_interval_ms"] = {q: float(np.percentile(dt, p) * 1e3) for q, p in
                                             (("p1", 1), ("p50", 50), ("p99", 99), ("max", 100))}
        out["node_positions_jitter_ms"] = float(np.std(dt) * 1e3)
    if rec["min_clearance"]:
        c = np.array([v for _, v in rec["min_clearance"]])
        out["min_clearance_m"] = float(np.min(c))
    out["safety_stop_final"] = rec["stop"][-1][1] if rec["stop"] else None
    out["safety_stop_raised_after_start"] = any(s for _, s in rec["stop"][1:]) if rec["stop"] else None
    out["diagnostics"] = rec["diagnostics"]
    if duration:
        out["duration_s"] = duration
    return out


def plot_timing(rec, path) -> Path:
    from tensegrity_engine.plots.figures import new_figure, save_figure
    dt = _intervals(rec) * 1e3
    fig = new_figure(3.2)
    ax = fig.subplots(1, 2)
    if len(dt):
        ax[0].plot(np.arange(len(dt)), dt, ".", ms=2)
        ax[1].hist(dt, bins=60)
    ax[0].set(xlabel="message", ylabel="interval [ms]", title="node_positions arrival intervals")
    ax[1].set(xlabel="interval [ms]", ylabel="count", title="distribution")
    return save_figure(fig, path)


def plot_clearance(rec, path) -> Path:
    from tensegrity_engine.plots.figures import new_figure, save_figure
    fig = new_figure(3.2)
    ax = fig.subplots()
    if rec["min_clearance"]:
        t0 = rec["min_clearance"][0][0]
        t = np.array([a for a, _ in rec["min_clearance"]]) - t0
        ax.plot(t, 1e3 * np.array([v for _, v in rec["min_clearance"]]), lw=1, label="minimum clearance")
        for ts, stop in rec["stop"]:
            if stop and ts >= t0:
                ax.axvline(ts - t0, color="r", lw=1, alpha=0.6)
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set(xlabel="time [s]", ylabel="clearance [mm]", title="self-collision monitor (red: safety stop raised)")
    ax.legend(loc="upper right")
    return save_figure(fig, path)


def make_report(mcap_path, out_dir, namespace: str = "", duration: float | None = None, heading_deg=None,
                goal=None) -> dict:
    """Plots and summary.json of a recording into out_dir. Returns the summary (with 'files' and, for plots
    that do not apply to the robot, 'skipped': {file: why}). A rolling robot's run (``heading_deg`` or
    ``goal`` (x, y) [m]: its command) gets rolling.png and the 'rolling' numbers."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rec = read_recording(mcap_path, namespace)
    summary = summarize(rec, duration)
    summary["skipped"] = {}
    files = [plot_timing(rec, out / "timing.png"), plot_clearance(rec, out / "clearance.png")]
    if rec["description"]:
        model = model_from_description(rec["description"])
        files += _model_plots(rec, model, out, summary)
        if is_rolling_robot(model):
            files.append(_rolling(rec, model, out, summary, heading_deg, goal))
    summary["files"] = [str(f) for f in files]
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    return summary


def _model_plots(rec, model, out: Path, summary: dict) -> list:
    """trajectory/, plates.png (robots with frames), tensions.png, inputs.png; numbers into ``summary``."""
    from tensegrity_engine.plots.figures import plot_inputs, plot_plates, plot_tensions
    traj = trajectory_from_recording(rec, model)
    traj.save(out / "trajectory")
    summary["samples"] = len(traj.t)
    summary["max_bar_length_error"] = float(np.nanmax(np.abs(traj.bar_length_error)))
    summary["min_tension_n"] = float(np.min(traj.tensions))
    files = [plot_tensions(traj, model, out / "tensions.png"), plot_inputs(traj, model, out / "inputs.png")]
    if len(model.frame_names):
        files.insert(0, plot_plates(traj, model, out / "plates.png", label="twin (through ROS 2)"))
    else:
        summary["skipped"]["plates.png"] = f"model '{model.name}' defines no frames (plates)"
    return files


def _rolling(rec, model, out: Path, summary: dict, heading_deg, goal) -> Path:
    """rolling.png and summary['rolling'] of a robot on the ground."""
    track = rolling_track(rec, model)
    controller = next((v for k, v in rec["diagnostics"].items()
                       if k.endswith(": controller") and "faces_changed" in v), None)
    summary["rolling"] = rolling_summary(track, heading_deg, goal, controller)
    t0 = min(r[0] for r in rec["positions"])
    # the monitor's samples carry their log time, the positions their stamp: both the wall clock here
    monitor = [(t - t0, c) for t, c in rec["min_clearance"] if t >= t0]
    return plot_track(track, summary["rolling"], out / "rolling.png", monitor)
