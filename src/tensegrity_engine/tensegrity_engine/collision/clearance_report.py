"""Clearance over a trajectory (``tensegrity clearance DIR``) and all-pairs clearances of raw segments
(``tensegrity clearance --segments FILE.csv``)."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from tensegrity_engine.collision.capsules import Elements, check, model_elements, pair_names


def trajectory_clearance(model, nodes, t, margin: float = 0.0, source: str = "trajectory") -> dict:
    """Minimum clearance per sample and the first violation (clearance < margin) of a trajectory.

    ``nodes`` (T, n, 3) must hold the model's n nodes (model order) at the T times ``t``; ``source`` names
    the trajectory (file) in errors. Without checked pairs ``overall_min_m`` and ``overall_min_time_s``
    are None.
    """
    nodes = np.asarray(nodes, float)
    t = np.asarray(t, float)
    if nodes.ndim != 3 or nodes.shape[1:] != (model.n_nodes, 3) or len(t) != len(nodes):
        raise ValueError(f"{source}: node positions of shape {nodes.shape} (at {len(t)} times) do not match model "
                         f"'{model.name}' ({model.source}: {model.n_nodes} nodes, so ({len(t)}, {model.n_nodes}, 3)); "
                         "use the model the trajectory was simulated with")
    if not np.all(np.isfinite(nodes)):
        raise ValueError(f"{source}: node positions contain NaN or inf; use a trajectory of a finished simulation")
    el = model_elements(model)
    T = len(t)
    min_clear = np.empty(T)
    per_pair_min = np.full(len(el.pair_i), np.inf)
    first = None
    for k in range(T):
        res = check(el, nodes[k], margin)
        min_clear[k] = res.min_clearance
        np.minimum(per_pair_min, res.clearance, out=per_pair_min)
        if first is None and len(res.violating):
            j = int(res.violating[np.argmin(res.clearance[res.violating])])
            first = {"time_s": float(t[k]), "pair": list(pair_names(el, j)), "clearance_m": float(res.clearance[j])}
    found = T > 0 and len(el.pair_i) > 0
    worst = int(np.argmin(min_clear)) if found else 0
    j = int(np.argmin(per_pair_min)) if found else -1
    return {"elements": el, "min_clearance": min_clear, "per_pair_min": per_pair_min,
            "overall_min_m": float(min_clear[worst]) if found else None,
            "overall_min_time_s": float(t[worst]) if found else None,
            "closest_pair": list(pair_names(el, j)) if j >= 0 else [], "first_violation": first,
            "pairs_checked": int(len(el.pair_i)), "margin_m": margin}


def plot_clearance(report: dict, t, path, title: str = "", show: int = 6) -> Path:
    """Minimum clearance over time [mm] and the closest pairs' clearances."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(10, 4.5), dpi=120, layout="constrained")
    ax = fig.subplots()
    ax.plot(t, report["min_clearance"] * 1e3, color="k", lw=2, label="minimum over all pairs")
    ax.axhline(report["margin_m"] * 1e3, color="r", ls="--", lw=1, label=f"margin {report['margin_m'] * 1e3:g} mm")
    if report["first_violation"]:
        ax.axvline(report["first_violation"]["time_s"], color="r", lw=1, alpha=0.6, label="first violation")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("clearance [mm]")
    ax.grid(True, alpha=0.4)
    ax.legend(fontsize="small")
    ax.set_title(title or "self-collision clearance (capsules: distance − r_i − r_j)")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def read_segments(path) -> tuple:
    """Segments (k,2,3) [m] and radii (k,) from a CSV: x1,y1,z1,x2,y2,z2[,radius]; '#' lines and a
    non-numeric header row are skipped."""
    rows = []
    try:
        fh = Path(path).open(newline="")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read segments file ({exc.strerror})") from None
    with fh:
        try:
            lines = fh.read().splitlines()
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: not UTF-8 text (byte {exc.start}); save the file as UTF-8") from None
        for n, row in enumerate(csv.reader(lines), 1):
            if not row or row[0].lstrip().startswith("#"):
                continue
            try:
                vals = [float(x) for x in row]
            except ValueError:
                if not rows and n == 1:
                    continue                      # header
                raise ValueError(f"{path}: line {n}: non-numeric value in {row}") from None
            if len(vals) not in (6, 7) or not np.all(np.isfinite(vals)):
                raise ValueError(f"{path}: line {n}: need 6 or 7 finite numbers (x1,y1,z1,x2,y2,z2[,radius])")
            if len(vals) == 7 and vals[6] < 0:
                raise ValueError(f"{path}: line {n}: radius {vals[6]:g} is negative; give a radius >= 0 [m]")
            rows.append(vals if len(vals) == 7 else vals + [0.0])
    if len(rows) < 2:
        raise ValueError(f"{path}: need at least two segments")
    a = np.array(rows)
    return a[:, :6].reshape(-1, 2, 3), a[:, 6]


def segments_clearance(segs, radii) -> list:
    """All pairs of raw segments: [{i, j, distance, clearance}] (no pair is excluded)."""
    k = len(segs)
    X = np.ascontiguousarray(segs.reshape(-1, 3))
    ends = np.arange(2 * k, dtype=np.int64).reshape(k, 2)
    ii, jj = np.triu_indices(k, k=1)
    el = Elements(tuple(str(i) for i in range(k)), ends, np.asarray(radii, float), np.zeros(k, np.int64),
                  ii.astype(np.int64), jj.astype(np.int64), radii[ii] + radii[jj])
    res = check(el, X)
    return [{"i": int(i), "j": int(j), "distance": float(d), "clearance": float(c)}
            for i, j, d, c in zip(ii, jj, res.distance, res.clearance)]
