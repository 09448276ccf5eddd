"""Tracking a recorded Motive CSV take offline with the bridge's tracker (no ROS): the node tracks, why each
node was not tracked, a summary, the output files and the figure of ``tensegrity-mocap track`` (its command
line: :mod:`tensegrity_mocap.cli.track`).

Writes to DIR: ``tracks.npz`` (``t`` [s], ``markers`` (T, n, 3) [m, z up, NaN = not tracked] the tracked
markers, ``nodes`` (T, n, 3) the bar ends behind them, as in an engine trajectory (the same array where the
model declares no marker off its nodes; ``model.markers.nodes_from_markers``), ``node_names``, ``reasons``
(T, n) codes into ``reason_names``; files written before ``markers`` existed hold the markers under
``nodes``), ``tracks.csv`` (``t`` and the markers' ``x/y/z``), ``tracking.json`` (per-node tracked share and reasons, re-acquisitions, registration) and
``tracking.png`` (nodes over time coloured by why they were not tracked; tracked count). The same tracker
runs in the mocap bridge, so what this shows is what the bridge publishes (frame-level checks aside).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tensegrity_engine.model.markers import nodes_from_markers
from tensegrity_mocap.axes import to_ros_frame
from tensegrity_mocap.motive import read_motive_csv, replay
from tensegrity_mocap.tracking.tracker import REASONS, NodeTracker


def track_frames(recording, tracker, up_axis=None, offset=(0.0, 0.0, 0.0)):
    """Yield ``(row, t [s], X (n,3) [m])`` for every frame of a Motive CSV recording tracked by ``tracker``
    (unlabeled markers by their column names, so a marker map may name them); ``up_axis`` overrides the
    recording's."""
    axis = recording.up_axis if up_axis is None else up_axis
    for r, (tf, names, P, U) in enumerate(replay(recording, named_unlabeled=True)):
        yield r, tf, tracker.update(tf, names, to_ros_frame(P, axis, offset) if len(P) else P.reshape(0, 3),
                                    to_ros_frame(U, axis, offset) if len(U) else None)


def track_recording(recording, model, marker_map=None, exclude=(), up_axis=None, offset=(0.0, 0.0, 0.0),
                    return_tracker: bool = False, **params) -> tuple:
    """Track every frame of a Motive CSV recording (:class:`tensegrity_mocap.motive.MotiveRecording`) offline:
    ``(t (T,) [s], X (T, n_physical, 3) [m], z up, NaN = not tracked)`` (and the tracker, for its statistics, with
    ``return_tracker``). ``up_axis`` overrides the recording's; ``params`` go to :class:`NodeTracker`."""
    tr = NodeTracker(model, marker_map, exclude, **params)
    t = np.asarray(recording.times, float).copy()
    X = np.full((recording.n_frames, model.n_physical, 3), np.nan)
    for r, _, x in track_frames(recording, tr, up_axis, offset):
        X[r] = x
    return (t, X, tr) if return_tracker else (t, X)


COLOURS = {"tracked": "#2ca02c", "no_marker": "#c7c7c7", "ambiguous": "#ff7f0e", "bar_length": "#d62728",
           "excluded": "#9467bd", "no_prediction": "#7f7f7f", "unregistered": "#000000"}


def track_take(take, model, marker_map=None, exclude=(), up_axis=None, offset=(0.0, 0.0, 0.0), **params) -> dict:
    """Track every frame; returns t (T,), nodes (T,n,3) the tracked markers (the bar ends where no marker is
    off them), reasons (T,n) codes, and the tracker."""
    rec = read_motive_csv(take) if isinstance(take, (str, Path)) else take
    tr = NodeTracker(model, marker_map, exclude, **params)
    T, n = rec.n_frames, model.n_physical
    X, codes = np.full((T, n, 3), np.nan), np.zeros((T, n), np.int8)
    for r, _, x in track_frames(rec, tr, up_axis, offset):
        X[r], codes[r] = x, tr.code
    return {"recording": rec, "t": np.asarray(rec.times, float), "nodes": X, "reasons": codes, "tracker": tr}


def summary(result) -> dict:
    """Per-node tracked share and reason counts, re-acquisitions, registration (JSON-ready)."""
    tr, codes = result["tracker"], result["reasons"]
    names = tr.node_names
    per_node = {}
    for k, name in enumerate(names):
        counts = np.bincount(codes[:, k], minlength=len(REASONS))
        per_node[name] = {"tracked": float(counts[0] / max(len(codes), 1)),
                          **{REASONS[c]: int(counts[c]) for c in range(1, len(REASONS)) if counts[c]}}
    reg = tr.registration.to_dict() if tr.registration is not None else None
    return {"take": str(result["recording"].path), "frames": int(len(codes)), "nodes": len(names),
            "tracked_share": float((codes == 0).mean()) if codes.size else 0.0,
            "all_tracked_frames": int((codes == 0).all(axis=1).sum()),
            "reacquired": tr.stats.reacquired, "registrations": tr.stats.registrations,
            "registration": reg, "registration_note": tr.register_note, "relabels": tr.stats.relabels,
            "per_node": per_node, "last_frame": tr.explain() or "all nodes tracked"}


def write_outputs(result, out) -> list:
    """tracks.npz, tracks.csv, tracking.json, tracking.png in ``out``; returns the paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tr, t, X = result["tracker"], result["t"], result["nodes"]
    np.savez_compressed(out / "tracks.npz", t=t, markers=X, nodes=nodes_from_markers(tr.model, X),
                        node_names=np.array(tr.node_names), reasons=result["reasons"], reason_names=np.array(REASONS))
    header = ["t"] + [f"{nm}.{a}" for nm in tr.node_names for a in "xyz"]
    rows = np.column_stack([t, X.reshape(len(t), -1)])
    np.savetxt(out / "tracks.csv", rows, delimiter=",", header=",".join(header), comments="", fmt="%.6f")
    (out / "tracking.json").write_text(json.dumps(summary(result), indent=1))
    return [out / "tracks.npz", out / "tracks.csv", out / "tracking.json", plot_tracking(result, out / "tracking.png")]


def plot_tracking(result, path) -> Path:
    """Nodes over time coloured by reason (green: tracked), and the number of tracked nodes."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch
    tr, t, codes = result["tracker"], result["t"], result["reasons"]
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(11, 2.0 + 0.22 * tr.n), sharex=True,
                                  gridspec_kw={"height_ratios": [max(tr.n, 4), 3]})
    cmap = ListedColormap([COLOURS[r] for r in REASONS])
    span = (t[0], t[-1]) if len(t) > 1 else (0.0, 1.0)
    ax.imshow(codes.T, aspect="auto", interpolation="nearest", cmap=cmap, vmin=0, vmax=len(REASONS) - 1,
              extent=(span[0], span[1], tr.n - 0.5, -0.5))
    ax.set_yticks(range(tr.n), tr.node_names, fontsize=7)
    ax.set_title(f"{Path(str(result['recording'].path)).name}: node tracking "
                 f"({100 * (codes == 0).mean():.1f} % of node-frames tracked)")
    used = sorted(set(np.unique(codes).tolist()))
    ax.legend(handles=[Patch(color=COLOURS[REASONS[c]], label=REASONS[c]) for c in used],
              loc="upper right", fontsize=7, ncol=len(used))
    ax2.plot(t, (codes == 0).sum(axis=1), lw=0.8)
    ax2.set_ylim(-0.5, tr.n + 0.5)
    ax2.set_ylabel("tracked nodes")
    ax2.set_xlabel("capture time [s]")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)
