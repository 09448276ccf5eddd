"""Experiments for :mod:`tensegrity_mocap.compare.core`: suite MCAP recordings, Motive CSV exports and the tracks of
``tensegrity-mocap track`` (``tracks.npz``), as node positions (Z-up, m).

A Motive CSV gives the physical nodes in one of three ways, tried in this order:

(a) **labeled markers named after the nodes** (``Asset:n1`` or ``n1`` -> node ``n1``; ``asset`` picks one
    asset);
(b) a **marker map** ``{label: node}`` (``--marker-map``): a label is a marker name of the CSV (labeled
    or unlabeled, e.g. ``Unlabeled 1008``), a labeled marker's name without its asset, or a marker ID.
    Several labels may map to one node (Motive relabelled it during the take): per frame the first of
    them that is visible counts. Every label must be in the CSV and every node in the model;
(c) **no map**: the markers are tracked with the mocap tracker
    (:func:`tensegrity_mocap.tracking.takes.track_recording`), as the bridge tracks a live stream.

Positions are converted from Motive's Y-up with ``(x, y, z) -> (x, -z, y)`` and ``offset`` [m] is added
(the bridge's ``world_offset``). Markers whose name matches an ``exclude`` glob are ignored. Any experiment
can then be mapped into the model's frame by a rigid transform (:func:`transform_experiment`, e.g. the
``capture_zup_to_robot`` of ``tensegrity-mocap model``'s report).
"""
from __future__ import annotations

import fnmatch
from pathlib import Path

import numpy as np

from tensegrity_mocap.axes import y_up_to_z_up
from tensegrity_mocap.compare.core import CompareError, Experiment, experiment_from_arrays
from tensegrity_mocap.motive import MotiveRecording, read_motive_csv
from tensegrity_mocap.tracking import labels, takes as tracking_takes


def _excluded(name, exclude) -> bool:
    return any(fnmatch.fnmatchcase(str(name), g) for g in exclude)


def node_markers(recording: MotiveRecording, node_names, asset: str | None = None, exclude=()) -> dict:
    """node name -> marker name: a marker ``Asset:node`` or ``node`` (``asset`` picks one asset)."""
    found = {}
    for marker in recording.markers:
        prefix, _, base = marker.rpartition(":")
        if (asset is not None and prefix != asset) or _excluded(marker, exclude):
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


# --- marker maps ----------------------------------------------------------------------------------
def _map_entries_from_yaml(data, path):
    """The ``marker_map`` list of a ROS parameter file (any ``<node>: ros__parameters: marker_map``) or of a
    plain ``marker_map:`` document."""
    stack = [data]
    while stack:
        d = stack.pop(0)
        if isinstance(d, dict):
            if "marker_map" in d:
                entries = d["marker_map"]
                if isinstance(entries, str):
                    entries = [entries]
                if not isinstance(entries, list):
                    raise CompareError(f"{path}: marker_map must be a list of 'label=node' texts")
                return [str(e) for e in entries]
            stack.extend(d.values())
    raise CompareError(f"{path}: no marker_map in the file (expected '<node>: ros__parameters: marker_map: "
                       "[\"label=node\", ...]', as the model-from-capture tool writes it)")


def parse_marker_map(spec, model=None) -> dict:
    """``{label: node}`` from a parameter file path, a ``'label=node,label=node'`` text or a list of
    ``'label=node'`` entries (:func:`tensegrity_mocap.tracking.labels.parse_marker_map` checks them); nodes
    checked against ``model``'s physical nodes when given."""
    source = "--marker-map"
    if isinstance(spec, (str, Path)) and Path(str(spec)).is_file():
        import yaml
        source = str(spec)
        try:
            entries = _map_entries_from_yaml(yaml.safe_load(Path(spec).read_text(encoding="utf-8")), spec)
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise CompareError(f"{spec}: not a readable YAML parameter file ({type(exc).__name__}: "
                               f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
    elif isinstance(spec, str):
        if "=" not in spec:
            raise CompareError(f"--marker-map {spec!r}: no such file, and not 'label=node,...' entries")
        entries = spec.split(",")
    else:
        entries = list(spec)
    names = None if model is None else list(model.node_names[:model.n_physical])
    try:
        out = labels.parse_marker_map(entries, names, "csv", None if model is None else model.name)
    except ValueError as exc:
        raise CompareError(f"{source}: {exc}") from None
    if not out:
        raise CompareError(f"{source}: the marker map is empty")
    return out


def _resolve_label(recording: MotiveRecording, label: str):
    """The (T, 3) track of marker ``label``: exact name, labeled name without asset, or marker ID."""
    for d in (recording.markers, recording.unlabeled):
        if label in d:
            return d[label]
    base = [m for m in recording.markers if m.rpartition(":")[2] == label]
    by_id = [m for m, i in recording.marker_ids.items() if str(i).strip() == label]
    by_id += [m for m, i in recording.unlabeled_ids.items() if str(i).strip() == label]
    hits = list(dict.fromkeys(base or by_id))
    if len(hits) > 1:
        raise CompareError(f"{recording.path}: marker map label {label!r} matches several markers "
                           f"({', '.join(hits)}); use the full marker name")
    if hits:
        return recording.markers.get(hits[0], recording.unlabeled.get(hits[0]))
    return None


def _with_offset(Xy, offset) -> np.ndarray:
    return y_up_to_z_up(Xy) + np.asarray(offset, float).reshape(3)


def experiment_from_motive(recording: MotiveRecording, model, asset: str | None = None, marker_map=None,
                           exclude=(), offset=(0.0, 0.0, 0.0)) -> Experiment:
    """Physical node positions [m, Z-up] from a Motive recording: (a) node-named markers, (b) ``marker_map``
    ``{label: node}``, or (c) the tracker (module docstring)."""
    names = list(model.node_names[:model.n_physical])
    Xy = np.full((recording.n_frames, len(names), 3), np.nan)
    notes = []
    if marker_map:
        unknown = [n for n in marker_map.values() if n not in names]
        if unknown:
            raise CompareError(f"marker map names node(s) {', '.join(unknown)} that model '{model.name}' lacks")
        missing = []
        for label, node in marker_map.items():
            if _excluded(label, exclude):
                notes.append(f"marker {label!r} ({node}) excluded by --exclude")
                continue
            track = _resolve_label(recording, label)
            if track is None:
                missing.append(label)
                continue
            k = names.index(node)
            fill = ~np.isfinite(Xy[:, k, 0])
            Xy[fill, k] = track[fill]
        if missing:
            have = list(recording.markers) + list(recording.unlabeled)
            raise CompareError(f"{recording.path}: marker map label(s) {', '.join(map(repr, missing[:6]))} are not "
                               f"markers of the CSV (its markers: {', '.join(have[:8]) or 'none'}"
                               f"{' ...' if len(have) > 8 else ''}); the map belongs to another take?")
        kind = "motive_csv_map"
    else:
        mapping = node_markers(recording, set(names), asset, exclude)
        if mapping:
            for k, n in enumerate(names):
                if n in mapping:
                    Xy[:, k] = recording.markers[mapping[n]]
            kind = "motive_csv"
        elif asset is not None:
            raise CompareError(f"{recording.path}: no labeled marker in asset {asset!r} is named after a node of "
                               f"model '{model.name}' (nodes {', '.join(names[:6])}...; markers "
                               f"{', '.join(list(recording.markers)[:6]) or 'none'})")
        else:
            return _tracked(recording, model, exclude, offset)
    exp = experiment_from_arrays(model, recording.times, _with_offset(Xy, offset), source=recording.path, kind=kind)
    never = [n for k, n in enumerate(names) if not np.isfinite(exp.nodes[:, k, 0]).any()]
    if len(never) == len(names):
        raise CompareError(f"{recording.path}: no node has a position in any frame (all mapped markers are gaps)")
    if never:
        notes.append(f"no marker for node(s) {', '.join(never)} (unknown in every sample)")
    exp.notes.extend(notes)
    return exp


def _tracked(recording, model, exclude, offset) -> Experiment:
    """(c): the markers tracked onto the nodes by :func:`tensegrity_mocap.tracking.takes.track_recording`."""
    names = list(model.node_names[:model.n_physical])
    track = tracking_takes.track_recording
    t, X = track(recording, model, marker_map=None, exclude=tuple(exclude), up_axis=None, offset=tuple(offset))
    X = np.asarray(X, float)
    if X.ndim != 3 or X.shape[1] != len(names):
        raise CompareError(f"{recording.path}: the tracker returned {X.shape[1] if X.ndim == 3 else '?'} nodes, "
                           f"model '{model.name}' has {len(names)} physical nodes")
    exp = experiment_from_arrays(model, t, X, source=recording.path, kind="motive_csv_tracked")
    seen = np.isfinite(exp.nodes[..., 0]).any(axis=0)
    if not seen.any():
        raise CompareError(f"{recording.path}: the tracker matched no marker to a node of model '{model.name}': "
                           "the markers are not near the model's configuration (check --world-offset, the model) "
                           "or give --marker-map 'label=node,...'")
    exp.notes.append(f"markers tracked onto the nodes (no marker map): {int(seen.sum())} of {len(names)} nodes "
                     f"tracked, {np.isfinite(exp.nodes[..., 0]).mean():.1%} of node samples known")
    if not seen.all():
        exp.notes.append(f"never tracked: {', '.join(n for n, s in zip(names, seen) if not s)}")
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
                           f"{model.n_physical} physical nodes: give the recorded robot's model with --model")
    t = np.array([r[0] for r in rows])
    X = np.array([r[2] for r in rows], float).reshape(len(rows), model.n_physical, 3)
    return experiment_from_arrays(model, t, X, source=str(path), kind="mcap")


def experiment_from_npz(path, model) -> Experiment:
    """Marker positions from ``tracks.npz`` (``tensegrity-mocap track``: ``t``, ``markers`` (T, n, 3) z up, or
    ``nodes`` in files written before ``markers`` existed, ``node_names``) or node positions from an engine
    ``trajectory.npz``; the node names must be the model's physical nodes."""
    import zipfile
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in ("t", "nodes", "markers", "node_names", "n_physical") if k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise CompareError(f"{path}: not a readable .npz archive ({type(exc).__name__})") from None
    if not {"t", "nodes", "node_names"} <= set(data):
        raise CompareError(f"{path}: expected the arrays t, nodes and node_names (tensegrity-mocap track's "
                           "tracks.npz or an engine trajectory.npz)")
    n = int(data["n_physical"]) if "n_physical" in data else len(data["node_names"])
    names = [str(x) for x in data["node_names"][:n]]
    want = list(model.node_names[:model.n_physical])
    if names != want:
        raise CompareError(f"{path}: its nodes ({', '.join(names[:6])}{' ...' if len(names) > 6 else ''}; "
                           f"{len(names)}) "
                           f"are not model '{model.name}''s physical nodes ({', '.join(want[:6])}"
                           f"{' ...' if len(want) > 6 else ''}; {len(want)}): track with the same model")
    kind = "trajectory" if "n_physical" in data else "tracks"
    seen = data["markers"] if kind == "tracks" and "markers" in data else data["nodes"]   # old tracks: markers
    return experiment_from_arrays(model, data["t"], np.asarray(seen, float)[:, :n], source=str(path), kind=kind)


def read_transform(path) -> np.ndarray:
    """A 4x4 rigid transform from JSON: the model-from-capture report's ``capture_zup_to_robot`` or a bare
    4x4 list; the rotation block must be orthonormal with determinant +1."""
    import json
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CompareError(f"--capture-transform {path}: not a readable JSON file ({type(exc).__name__})") from None
    T = data.get("capture_zup_to_robot") if isinstance(data, dict) else data
    try:
        T = np.asarray(T, float)
    except (TypeError, ValueError):
        T = np.zeros(0)
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise CompareError(f"--capture-transform {path}: expected capture_zup_to_robot (a 4x4 list of numbers), "
                           "as in the report of 'tensegrity-mocap model'")
    R = T[:3, :3]
    if not (np.allclose(R.T @ R, np.eye(3), atol=1e-6) and np.linalg.det(R) > 0 and np.allclose(T[3], [0, 0, 0, 1])):
        raise CompareError(f"--capture-transform {path}: the 4x4 matrix is not a rigid transform (rotation + "
                           "translation)")
    return T


def transform_experiment(exp: Experiment, T) -> Experiment:
    """Node positions mapped by the 4x4 rigid transform T: ``p -> T[:3, :3] p + T[:3, 3]`` (in place)."""
    T = np.asarray(T, float)
    exp.nodes = exp.nodes @ T[:3, :3].T + T[:3, 3]
    exp.notes.append("positions mapped by the capture transform (capture z-up -> robot frame)")
    return exp


def load_experiment(path, model=None, asset=None, namespace: str = "", marker_map=None, exclude=(),
                    offset=(0.0, 0.0, 0.0)) -> Experiment:
    """A ``.mcap`` recording, a Motive ``.csv`` export or ``tracks.npz`` (these two need ``model``);
    ``marker_map``: a ``{label: node}`` dict or anything :func:`parse_marker_map` reads."""
    p = Path(path)
    if not p.is_file():
        raise CompareError(f"{path}: no such file")
    if marker_map and p.suffix.lower() != ".csv":
        raise CompareError(f"{path}: --marker-map is for Motive CSV exports; recorded node positions and tracks "
                           "are already in model order")
    if p.suffix.lower() == ".mcap":
        return experiment_from_mcap(p, model, namespace)
    if p.suffix.lower() == ".csv":
        if model is None:
            raise CompareError(f"{path}: a Motive CSV has no model; give --model, --simulate MODEL, or a "
                               "trajectory directory with model.yaml")
        if marker_map is not None and not isinstance(marker_map, dict):
            marker_map = parse_marker_map(marker_map, model)
        return experiment_from_motive(read_motive_csv(p), model, asset, marker_map, exclude, offset)
    if p.suffix.lower() == ".npz":
        if model is None:
            raise CompareError(f"{path}: tracks have no model; give --model or --simulate MODEL")
        return experiment_from_npz(p, model)
    raise CompareError(f"{path}: unknown experiment type (expected a .mcap recording, a Motive .csv export or "
                       "tracks.npz)")
