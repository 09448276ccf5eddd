"""The cases file of static identification (``tensegrity identify MODEL --static CASES.yaml``), paths
relative to it::

    params: [stiffness]            # optional: stiffness, rest_length, bar_mass, support_stiffness, rest_direction (default [stiffness])
    groups: model                  # optional: none (one stiffness per string) or model (per string group)
    units: m                       # optional: the takes' length unit, m | cm | mm | in (a case may override)
    bar_tolerance: 0.05            # optional: measured bar lengths within 5 % of the model's (null: no check)
    cases:
      - name: empty
        positions: take0.npz       # tracks.npz ('markers') / trajectory.npz ('nodes': bar ends), a CSV with
                                   # '<node>.x' columns (tracks.csv, trajectory.csv), or inline [[x, y, z], ...]
        loads: []                  # required: [] says the case is unloaded
      - name: payload_2kg
        positions: take1.csv
        loads: [{node: n22, mass: 2.0}, {node: n23, force: [5.0, 0, 0]}]   # kg in the model's gravity / N
      - {name: check, positions: take3.npz, loads: [{node: n24, mass: 1.5}], held_out: true}

A file's frames are averaged per node over the frames where that node is seen (NaN = untracked, as the
tracker writes); a node must be seen in at least half of them. Each case's size and bar lengths are checked
against the model (:mod:`.identify_geometry`) before anything is fitted.
"""
from __future__ import annotations

import csv
import warnings
from pathlib import Path

import numpy as np

from tensegrity_engine.identify.case_files import check_keys, read_cases_yaml
from tensegrity_engine.identify.geometry import BAR_TOL, UNITS, geometry_problem
from tensegrity_engine.model.markers import has_marker_offsets, marker_positions

MAX_CASES_BYTES = 50 * 2 ** 20
TOP_KEYS = ("params", "groups", "units", "bar_tolerance", "cases")
CASE_KEYS = ("name", "positions", "loads", "held_out", "units")
# A node must be seen in at least this share of a take's frames: averaging over fewer is fine for the noise
# (0.5 mm / sqrt(n)), but a node the tracker lost for most of a standing-still take is occluded or mislabelled.
MIN_SEEN_SHARE = 0.5


def average_seen(X, names, where: str) -> tuple:
    """(mean positions (mu,3) over the frames where each node is seen, frame statistics) of frames
    X (T, mu, 3) [m] with NaN for an untracked node; ValueError naming nodes seen too rarely."""
    X = np.asarray(X, float)
    seen = np.isfinite(X).all(axis=2)
    count = seen.sum(axis=0)
    need = max(1, int(np.ceil(MIN_SEEN_SHARE * len(X))))
    rare = [f"{n} ({c} of {len(X)} frames)" for n, c in zip(names, count) if c < need]
    if rare:
        raise ValueError(f"{where}: node(s) {', '.join(rare[:5])} seen in fewer than {MIN_SEEN_SHARE:.0%} of the "
                         "frames; a node lost for most of a static take is occluded or mislabelled: fix the "
                         "tracking (marker map) or capture the case again")
    P = np.where(seen[..., None], X, 0.0).sum(axis=0) / count[:, None]
    stats = {"frames": int(len(X)), "frames_with_untracked_nodes": int((~seen.all(axis=1)).sum()),
             "untracked_frames_per_node": {n: int(len(X) - c) for n, c in zip(names, count) if c < len(X)},
             "scatter_m": frame_scatter(X, P, seen, count)}
    return P, stats


def frame_scatter(X, P, seen, count) -> float | None:
    """RMS over nodes and coordinates of the frame-to-frame standard deviation of a static take [file units]:
    the capture noise per coordinate, apart from any model misfit. None with fewer than 2 frames per node."""
    if count.min() < 2:
        return None
    dev = np.where(seen[..., None], X - P, 0.0)
    var = (dev ** 2).sum(axis=0) / (count - 1)[:, None]
    return float(np.sqrt(var.mean()))


def _npz_frames(path: Path, names, model, where: str) -> np.ndarray:
    """The measured markers (T, mu, 3) of an .npz: a tracks.npz's ``markers`` (files from before it existed
    hold them under ``nodes``), or an engine trajectory's ``nodes`` (bar ends, metres) turned into the
    model's markers (``model.markers.marker_positions``)."""
    with np.load(path, allow_pickle=False) as z:
        key = "markers" if "markers" in z else "nodes"
        if key not in z:
            raise ValueError(f"{where}: {path} has no 'nodes' array; use an engine trajectory.npz or the "
                             "tracker's tracks.npz")
        X = np.asarray(z[key], float)
        file_names = [str(s) for s in z["node_names"]] if "node_names" in z else None
        trajectory = key == "nodes" and "n_physical" in z
    X = X[None] if X.ndim == 2 else X
    if file_names is not None:
        missing = [n for n in names if n not in file_names]
        if missing:
            raise ValueError(f"{where}: {path} has no node(s) {', '.join(missing[:5])} of model '{model.name}'; "
                             "use a capture of this model (or map its markers to the model's node names)")
        X = X[:, [file_names.index(n) for n in names]]
    if trajectory and X.shape[1:] == (len(names), 3):
        return marker_positions(model, X)
    if key == "nodes" and not trajectory and has_marker_offsets(model):
        warnings.warn(f"{where}: {path} has no 'markers' array (a tracks.npz written before they were split from "
                      "the bar ends): its 'nodes' are read as the tracked markers", stacklevel=2)
    return X


def _number(cell: str) -> float:
    return float(cell) if cell.strip() else float("nan")       # an empty cell: not tracked


def _csv_frames(path: Path, names, model, where: str) -> np.ndarray:
    """The measured markers (T, mu, 3) of a CSV with ``<node>.x`` columns; an engine trajectory.csv (it has
    string tension columns ``T.<string>``) holds bar ends, turned into the model's markers."""
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows:
        raise ValueError(f"{where}: {path} is empty")
    head = [h.strip() for h in rows[0]]
    missing = [n for n in names if f"{n}.x" not in head]
    if missing:
        raise ValueError(f"{where}: {path} lacks columns {', '.join(f'{n}.x' for n in missing[:4])}; "
                         "write '<node>.x,<node>.y,<node>.z' per physical node (as trajectory.csv)")
    cols = [head.index(f"{n}.{c}") for n in names for c in "xyz"]
    try:
        data = np.array([[_number(r[i]) for i in cols] for r in rows[1:] if r], float)
    except (ValueError, IndexError):
        raise ValueError(f"{where}: {path} has a non-numeric or short row") from None
    if not len(data):
        raise ValueError(f"{where}: {path} has no data rows")
    X = data.reshape(len(data), len(names), 3)
    return marker_positions(model, X) if any(h.startswith("T.") for h in head) else X


def read_positions(model, spec, base: Path, where: str) -> tuple:
    """(physical node positions (mu,3) [file units], frame statistics or None) from an inline list, an
    ``.npz`` ('nodes' (T, n, 3), optional 'node_names') or a CSV with ``<node>.x`` columns."""
    names = list(model.node_names[:model.n_physical])
    if isinstance(spec, (list, tuple)):
        try:
            return np.asarray(spec, float), None
        except (TypeError, ValueError):
            raise ValueError(f"{where}: inline positions must be [[x, y, z], ...] numbers in m") from None
    if not isinstance(spec, str):
        raise ValueError(f"{where}: 'positions' must be a file name (.npz/.csv) or [[x, y, z], ...], got {spec!r}")
    path = base / spec
    if not path.is_file():
        raise ValueError(f"{where}: positions file {path} not found; give a path relative to the cases file")
    if path.suffix not in (".npz", ".csv"):
        raise ValueError(f"{where}: positions file {path} must be .npz (engine trajectory, tracks.npz) or .csv")
    X = _npz_frames(path, names, model, where) if path.suffix == ".npz" else _csv_frames(path, names, model, where)
    if X.ndim != 3 or X.shape[1:] != (len(names), 3):
        return X.mean(axis=0) if X.ndim == 3 else X, None     # wrong shape: the shape check names it
    return average_seen(X, names, f"{where}: {path}")


def _units(value, where: str) -> float:
    if value not in UNITS:
        raise ValueError(f"{where}: units must be one of {', '.join(UNITS)}, got {value!r}")
    return UNITS[value]


def _bar_tolerance(doc, path) -> float | None:
    tol = doc.get("bar_tolerance", BAR_TOL)
    if tol is not None and (isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 < tol < 1):
        raise ValueError(f"{path}: bar_tolerance must be a fraction between 0 and 1 (e.g. 0.05 for 5 %) or null "
                         f"(no bar check), got {tol!r}")
    return tol


def _case(model, item, k: int, path: Path, unit: float, tol):
    """(StaticCase, frame statistics or None, held out) of one entry of ``cases:``."""
    from tensegrity_engine.identify.static import StaticCase, load_forces
    if not isinstance(item, dict) or "positions" not in item:
        raise ValueError(f"{path}: case {k} must be a mapping with 'positions' and 'loads'")
    name = str(item.get("name", f"case {k}"))
    where = f"{path}: case '{name}'"
    check_keys(item, CASE_KEYS, where)
    if not isinstance(item.get("loads"), list):
        raise ValueError(f"{where}: 'loads' is {'missing' if 'loads' not in item else repr(item['loads'])}; list "
                         "the case's loads ([{node: NAME, mass: KG} or {node: NAME, force: [fx, fy, fz]}]), or "
                         "write loads: [] for an unloaded case")
    P, stats = read_positions(model, item["positions"], path.parent, where)
    scale = _units(item["units"], where) if "units" in item else unit
    P = P * scale
    noise = stats["scatter_m"] * scale if stats and stats.get("scatter_m") is not None else None
    if stats and noise is not None:
        stats["scatter_m"] = noise
    mu = model.n_physical
    if P.shape != (mu, 3):
        raise ValueError(f"{where}: positions have shape {P.shape}, model '{model.name}' has {mu} physical nodes; "
                         f"give one [x, y, z] row per physical node in model order ({', '.join(model.node_names[:3])}, "
                         "...)")
    problem = np.isfinite(P).all() and geometry_problem(model, P, tol)
    if problem:
        raise ValueError(f"{where}: {problem}")
    F = load_forces(model, item["loads"], where=where)
    return StaticCase(P, F, name, noise=noise), stats, bool(item.get("held_out"))


def read_cases(model, path):
    """(fit cases, held-out cases, options) from a cases YAML file; StaticCase lists. Options: params,
    groups, bar_tolerance and frames ({case name: frame statistics} of the cases read from files)."""
    path = Path(path)
    doc = read_cases_yaml(path, "cases", "{name: ..., positions: ..., loads: [...]}", MAX_CASES_BYTES, "--static")
    check_keys(doc, TOP_KEYS, str(path))
    unit, tol = _units(doc.get("units", "m"), str(path)), _bar_tolerance(doc, path)
    fit, held, frames = [], [], {}
    for k, item in enumerate(doc["cases"]):
        case, stats, is_held = _case(model, item, k, path, unit, tol)
        (held if is_held else fit).append(case)
        if stats:
            frames[case.name] = stats
    if not fit:
        raise ValueError(f"{path}: every case is held out; fit at least one")
    params = doc.get("params", ["stiffness"])
    groups = doc.get("groups")
    if groups not in (None, "none", "model"):
        raise ValueError(f"{path}: 'groups' must be none or model, got {groups!r}")
    return fit, held, {"params": tuple(params) if isinstance(params, list) else (params,),
                       "groups": None if groups in (None, "none") else "model", "bar_tolerance": tol,
                       "frames": frames}
