"""A model of your own tensegrity robot from a static motion-capture take (no ROS).

A lab measures its robot standing still (a Motive CSV export, or a few frames of marker positions),
lists which marker pairs are bars (and, optionally, which are strings), and gets a model file in the
engine's schema (``docs/model_schema.md``) in the **robot's own frame**, the marker map for the bridge
and, with strings, a prestress / equilibrium check of the captured shape. Workflow and file formats:
``docs/bring_your_own_robot.md``.

Robot frame (all lengths in metres):

* z up (the capture's up axis; Motive exports are Y-up and are turned with
  :func:`~tensegrity_mocap.axes.y_up_to_z_up`, ``(x, y, z) -> (x, -z, y)``);
* origin at the horizontal centroid (mean x, y) of the nodes, with z = 0 at the lowest node (the floor
  the robot stands on);
* x axis: the horizontal direction from the centroid toward node ``n1`` (``heading="first-node"``), or the
  capture's own x axis (``heading="capture"``: then capture and robot frame differ by a translation only);
  y = z × x.

:attr:`CaptureModel.transform` is the 4×4 homogeneous transform from the capture's z-up frame to the
robot frame (``p_robot = T[:3, :3] @ p_capture + T[:3, 3]``); its inverse takes the model back into the
capture.

Node names: bar ``k`` (1-based, in the order given) is ``b<k>`` between nodes ``n<2k-1>`` (its first
marker) and ``n<2k>`` (its second); strings are ``s1, s2, ...`` in the order given.
"""
from __future__ import annotations

import difflib
import fnmatch
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from tensegrity_engine import build_model, load_spec
from tensegrity_engine.model.markers import bar_ends_from_markers

from tensegrity_mocap.axes import y_up_to_z_up
from tensegrity_mocap.capture.document import CaptureModelError, model_document
from tensegrity_mocap.capture.equilibrium import equilibrium_report
from tensegrity_mocap.capture.holding import FLOOR_TOL, Holding, detect_holding, further_take_markers
from tensegrity_mocap.motive import MotiveRecording, read_motive_csv

__all__ = ["CaptureModel", "model_from_capture", "write_capture_model", "parse_pairs", "read_pairs", "take_markers",
           "robot_frame", "sidecar_paths", "MIN_BAR_LENGTH", "SHORT_BAR", "parse_marker_offsets", "short_bars"]

#: shortest accepted bar [m]: two markers closer than this are one marker seen twice, not a bar
MIN_BAR_LENGTH = 0.001
#: a bar this much (relative) shorter than the median bar is flagged: hand-built bars of one robot differ by a
#: few per cent, a marker glued 5 cm in from a 0.5 m bar's end makes it 10 % shorter
SHORT_BAR = 0.10
#: node positions of captured models are rounded to this many decimals of a metre (0.1 µm, far below
#: marker noise)
POSITION_DECIMALS = 7


# --- bar and string lists -------------------------------------------------------------------------
def _end(text: str):
    """A marker reference: a 1-based index (all digits) or a marker name."""
    text = text.strip().strip('"').strip("'").strip()
    return int(text) if text.isdigit() else text


def _split_pair(text: str, source, where):
    for sep in (" - ", ",", "\t"):
        if sep in text:
            parts = text.split(sep)
            break
    else:
        parts = [text]
    if len(parts) != 2 or not all(p.strip() for p in parts):
        raise CaptureModelError(source, f"{where}: {text.strip()!r} is not a pair of markers",
                                "write two marker names or 1-based marker indices separated by a comma or ' - ', "
                                "e.g. 'Unlabeled 1008, Unlabeled 1012' or '3 - 7'")
    return _end(parts[0]), _end(parts[1])


def parse_pairs(text: str, source="--bars") -> list:
    """Marker pairs from text: one pair per line or separated by ';'; the two ends separated by a comma or
    ' - ' (a tab also works); '#' starts a comment. An end is a marker name or a 1-based marker index."""
    out = []
    lines = [ln.split("#", 1)[0] for ln in str(text).splitlines()]
    for n, line in enumerate(lines, 1):
        for k, item in enumerate(line.split(";")):
            if item.strip():
                where = f"line {n}" if len(lines) > 1 else f"pair {k + 1}"
                out.append(_split_pair(item, source, where))
    return out


def read_pairs(arg) -> list:
    """Marker pairs from ``arg``: a YAML file (``.yaml``/``.yml``: a list of two-item lists or of 'A, B'
    texts), a text file (see :func:`parse_pairs`), inline text ``"A,B;C,D"``, or already a list of pairs."""
    if not isinstance(arg, (str, Path)):
        return [tuple(p) for p in arg]
    path = Path(arg)
    try:
        is_file = path.suffix.lower() in (".yaml", ".yml", ".txt", ".csv") or path.is_file()
    except OSError:                                    # e.g. a long inline list is no valid file name
        is_file = False
    if not is_file:
        return parse_pairs(str(arg), "inline pairs")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise CaptureModelError(path, f"cannot read the pair list ({getattr(exc, 'strerror', None) or exc})",
                                "check the path") from None
    if path.suffix.lower() not in (".yaml", ".yml"):
        return parse_pairs(text, path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CaptureModelError(path, f"not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, list):
        raise CaptureModelError(path, "must be a YAML list of pairs", "write e.g. '- [Unlabeled 1008, "
                                "Unlabeled 1012]'")
    out = []
    for k, item in enumerate(data):
        if isinstance(item, str):
            out.append(_split_pair(item, path, f"item {k + 1}"))
        elif isinstance(item, list) and len(item) == 2 and all(type(e) in (str, int) for e in item):
            out.append(tuple(_end(str(e)) for e in item))
        else:
            raise CaptureModelError(path, f"item {k + 1}: {item!r} is not a pair of markers",
                                    "write '- [A, B]' with two marker names or 1-based indices")
    return out


# --- the take -------------------------------------------------------------------------------------
def take_markers(recording: MotiveRecording) -> list:
    """Marker names of a take in the order 1-based indices count them: labeled markers, then unlabeled
    ones, each in file column order (Motive exports labeled columns first)."""
    return list(recording.markers) + list(recording.unlabeled)


def _source(recording_or_path):
    """(label, marker names, {name: (T,3)}, frame numbers (T,), default up axis)."""
    rec = recording_or_path
    if isinstance(rec, (str, Path)):
        rec = read_motive_csv(rec)
    if isinstance(rec, MotiveRecording):
        data = {**rec.markers, **rec.unlabeled}
        return rec.path, take_markers(rec), data, np.asarray(rec.frames), rec.up_axis
    if isinstance(rec, dict):
        data = {}
        for nm, a in rec.items():
            a = np.asarray(a, float)
            a = a[None] if a.shape == (3,) else a
            if a.ndim != 2 or a.shape[1] != 3:
                raise CaptureModelError("<frames>", f"marker {nm!r}: positions must be (3,) or (T, 3), got "
                                        f"{a.shape}")
            data[str(nm)] = a
        T = {len(a) for a in data.values()}
        if len(T) > 1:
            raise CaptureModelError("<frames>", f"markers have different frame counts {sorted(T)}")
        return "<frames>", list(data), data, np.arange(T.pop() if T else 0), "z"
    raise TypeError(f"expected a MotiveRecording, a CSV path or a dict of marker positions, got {type(rec).__name__}")


def _resolve(end, names, excluded, source, what):
    if isinstance(end, int):
        if not 1 <= end <= len(names):
            raise CaptureModelError(source, f"{what}: marker index {end} is out of range (the take has "
                                    f"{len(names)} markers)", "use 1-based indices as 'tensegrity-mocap model "
                                    "TAKE --list' numbers them, or marker names")
        end = names[end - 1]
    if end not in names:
        close = difflib.get_close_matches(end, names, n=3)
        raise CaptureModelError(source, f"{what}: marker {end!r} is not in the take"
                                + (f" (did you mean {', '.join(map(repr, close))}?)" if close else ""),
                                "use a marker name of this take ('tensegrity-mocap model TAKE --list' prints them)")
    if end in excluded:
        raise CaptureModelError(source, f"{what}: marker {end!r} is excluded (--exclude {excluded[end]!r})",
                                "remove it from the bar list or narrow the exclude pattern")
    return end


def _frame_rows(frame_numbers, frames, source) -> np.ndarray:
    rows = (np.arange(len(frame_numbers)) if frames is None
            else np.flatnonzero(np.isin(frame_numbers, np.asarray(list(frames), np.int64))))
    if not len(rows):
        span = f"{frame_numbers[0]}..{frame_numbers[-1]}" if len(frame_numbers) else "none"
        raise CaptureModelError(source, "no frames selected (the take's frame numbers: " + span + ")",
                                "choose frames the take has (--frames FIRST:LAST)")
    return rows


def robot_frame(P, heading: str = "first-node") -> np.ndarray:
    """4×4 transform capture (z-up) -> robot frame for node positions P (n,3) [m] (module docstring)."""
    P = np.asarray(P, float)
    c = P.mean(axis=0)
    origin = np.array([c[0], c[1], P[:, 2].min()])
    if heading == "capture":
        R = np.eye(3)
    elif heading == "first-node":
        d = P[0, :2] - c[:2]
        r = float(np.hypot(*d))
        if r < MIN_BAR_LENGTH:
            raise CaptureModelError("robot frame", f"node n1 is {r * 1e3:.2f} mm from the vertical through the "
                                    "centroid, so it cannot give the x axis", "use heading 'capture', or list first "
                                    "a bar whose first marker is off the robot's vertical axis")
        ex = np.array([d[0] / r, d[1] / r, 0.0])
        R = np.vstack([ex, np.cross([0.0, 0.0, 1.0], ex), [0.0, 0.0, 1.0]])
    else:
        raise CaptureModelError("robot frame", f"heading must be 'first-node' or 'capture', got {heading!r}")
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = -R @ origin
    return T


def _model_name(label: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.\-]", "_", Path(label).stem.strip()) or "robot"
    if not re.match(r"[A-Za-z_]", stem):
        stem = "robot_" + stem
    return stem[:64]


@dataclass
class CaptureModel:
    """Result of :func:`model_from_capture`. Lengths in m; positions in the robot frame."""
    document: dict                 # model dict (engine schema)
    marker_map: dict               # marker name -> node name
    transform: np.ndarray          # (4, 4) capture z-up frame -> robot frame
    equilibrium: dict | None       # equilibrium_report(...) with strings, else None
    scatter: dict                  # node name -> RMS 3-D distance of its marker from its mean over the frames [m]
    source: str = ""               # take path (or "<frames>")
    up_axis: str = "y"             # up axis of the take's coordinates ("y": Motive, turned to z-up)
    heading: str = "first-node"
    frames_used: int = 0           # frames in the selection
    frame_range: tuple = ()        # (first, last) frame number of the selection
    visible: dict = field(default_factory=dict)   # node name -> fraction of the selected frames its marker was seen
    marker_offsets: dict = field(default_factory=dict)   # node name -> its marker's distance in from it [m]
    warnings: list = field(default_factory=list)  # e.g. bars much shorter than the others (markers off the ends?)
    holding: Holding | None = None                # what holds the rig (supports, floor) and why

    @property
    def positions(self) -> np.ndarray:
        """(n, 3) node positions [m], robot frame."""
        return np.array([nd["position"] for nd in self.document["nodes"]], float)

    @property
    def bar_lengths(self) -> dict:
        """bar name -> length [m]."""
        return {b["name"]: b["length"] for b in self.document["bars"]}

    def report(self) -> dict:
        """Everything but the model, JSON-ready (the ``<stem>.report.json`` file)."""
        doc = self.document
        node_marker = {v: k for k, v in self.marker_map.items()}
        return {
            "source": self.source, "up_axis": self.up_axis, "heading": self.heading,
            "frames_used": self.frames_used, "frame_range": list(self.frame_range),
            "robot_frame": "z up; origin at the nodes' horizontal centroid, z = 0 at the lowest node; x toward "
                           + ("node n1" if self.heading == "first-node" else "the capture's x axis"),
            "capture_zup_to_robot": self.transform.tolist(),
            "nodes": {nd["name"]: {"marker": node_marker.get(nd["name"]), "position_m": nd["position"],
                                   "scatter_m": self.scatter[nd["name"]], "visible": self.visible.get(nd["name"])}
                      for nd in doc["nodes"]},
            "bars": {b["name"]: {"nodes": b["nodes"], "length_m": b["length"]} for b in doc["bars"]},
            "strings": {s["name"]: {"nodes": s["path"], "rest_length_m": s["rest_length"]}
                        for s in doc.get("strings", [])},
            "max_scatter_m": max(self.scatter.values()),
            "marker_offsets_m": dict(self.marker_offsets),
            "warnings": list(self.warnings),
            "equilibrium": self.equilibrium,
            "holding": self.holding.to_dict() if self.holding is not None else None,
        }


def _bar_ends(bar_pairs, names, excluded, label) -> tuple:
    """(marker of each node in order n1, n2, ..., {marker: its bar number})."""
    node_markers, owner = [], {}
    for k, (a, b) in enumerate(bar_pairs, 1):
        for end in (a, b):
            m = _resolve(end, names, excluded, label, f"bar {k}")
            if m in owner:
                where = f"both ends of bar {k}" if owner[m] == k else f"an end of bar {owner[m]} and of bar {k}"
                raise CaptureModelError(label, f"marker {m!r} is {where}", "every bar end needs its own marker "
                                        "(a node in two bars is a class-k joint; this tool makes class-1 models)")
            owner[m] = k
            node_markers.append(m)
    return node_markers, owner


def _string_ends(string_pairs, node_markers, names, excluded, label) -> list:
    """0-based node index pairs of the strings; every end must be a bar-end marker."""
    node_of = {m: i for i, m in enumerate(node_markers)}
    out, seen = [], {}
    for k, (a, b) in enumerate(string_pairs, 1):
        ij = []
        for end in (a, b):
            m = _resolve(end, names, excluded, label, f"string {k}")
            if m not in node_of:
                raise CaptureModelError(label, f"string {k}: marker {m!r} is not a bar end",
                                        "strings join bar ends: add the bar or correct the string")
            ij.append(node_of[m])
        if ij[0] == ij[1]:
            raise CaptureModelError(label, f"string {k}: both ends are marker {node_markers[ij[0]]!r}",
                                    "a string joins two different bar ends")
        key = tuple(sorted(ij))
        if key in seen:
            raise CaptureModelError(label, f"string {k} joins the same markers as string {seen[key]}",
                                    "list every string once")
        seen[key] = k
        out.append(tuple(ij))
    return out


def _medians(data, node_markers, owner, rows, min_visible, label) -> tuple:
    """(positions (n,3): per-axis median over the visible frames, scatter [m], visible fraction) per node."""
    P, scatter, visible = np.zeros((len(node_markers), 3)), [], []
    for i, m in enumerate(node_markers):
        x = data[m][rows]
        ok = np.isfinite(x).all(axis=1)
        if ok.sum() <= min_visible * len(rows) or not ok.any():
            raise CaptureModelError(label, f"marker {m!r} (bar {owner[m]}) is seen in only {int(ok.sum())} of the "
                                    f"{len(rows)} frames", "choose frames where it is visible (--frames), or check "
                                    "that it is this robot's marker")
        P[i] = np.median(x[ok], axis=0)
        scatter.append(float(np.sqrt(np.sum(np.var(x[ok], axis=0)))))
        visible.append(float(ok.mean()))
    return P, scatter, visible


def model_from_capture(recording_or_path, bars, strings=None, frames=None, up_axis=None, exclude=(), name=None,
                       heading: str = "first-node", min_visible: float = 0.5, min_tension: float = 1.0,
                       max_tension: float | None = None, ground_tol: float = 0.01, tolerance: float = 0.05,
                       marker_offsets=None, ground="auto", supports="auto", fixed=(), floor_z: float = 0.0,
                       floor_tol: float = FLOOR_TOL, still_tol: float | None = None, still_from=(),
                       **model_params) -> CaptureModel:
    """A model of the robot in a static take, in the robot frame (module docstring).

    ``recording_or_path``: a :class:`MotiveRecording`, a Motive CSV path, or ``{marker name: (T,3) or (3,)}``
    (z-up unless ``up_axis``). ``bars``/``strings``: pairs of marker names or 1-based indices into
    :func:`take_markers` (or anything :func:`read_pairs` reads). ``frames``: frame numbers to use (default
    all). Each bar-end marker must be seen in more than ``min_visible`` of them; its position is the
    per-axis median. ``exclude``: glob patterns of markers that must not be used. ``model_params`` go to
    :func:`model_document` (``bar_mass``, ``gravity``, ...); ``min_tension``, ``max_tension``,
    ``ground_tol``, ``tolerance`` to :func:`equilibrium_report`. ``marker_offsets`` {node name (``n5``) or
    marker: distance [m]}: that marker sits so far in from its bar end (toward the other end); the model gets
    the true bar ends and ``marker: {along_bar: ...}`` on the node. ``ground``: the floor the robot stands
    on, written as a ground plane obstacle: "auto" (under gravity, when nodes rest on the capture's floor:
    under the lowest of them, less the bar radius; no floor when none does), "none", or a height [m] in the
    robot frame. ``supports``: "auto" (nodes that never move over all frames of the take and of the takes
    ``still_from`` become ``fixed: true`` or a bar's ``clamp``; :mod:`~tensegrity_mocap.capture.holding`) or
    "none"; ``fixed``: node names (``fixed: true``) and bar names (clamped) that hold the rig instead.
    ``floor_z`` [m]: the capture's floor along its up axis; ``floor_tol`` [m]: nodes this near it rest on it;
    ``still_tol`` [m]: stillness threshold (default from the marker noise). What was chosen and why:
    :attr:`CaptureModel.holding`. Bars much shorter than the others
    (:data:`SHORT_BAR`) without a declared offset are named in ``warnings``. Raises
    :class:`CaptureModelError` naming the take, the marker and a fix.
    """
    label, names, data, frame_numbers, default_up = _source(recording_or_path)
    up = default_up if up_axis is None else str(up_axis).lower()
    if up not in ("y", "z"):
        raise CaptureModelError(label, f"up_axis must be 'y' or 'z', got {up_axis!r}")
    if not 0.0 <= float(min_visible) < 1.0:
        raise CaptureModelError(label, f"min_visible must be in [0, 1), got {min_visible!r}")
    patterns = [exclude] if isinstance(exclude, str) else list(exclude or ())
    excluded = {n: p for n in names for p in patterns if fnmatch.fnmatchcase(n, p)}
    bar_pairs, string_pairs = read_pairs(bars), read_pairs(strings or [])
    if not bar_pairs:
        raise CaptureModelError(label, "the bar list is empty", "give every bar as a pair of its two end markers")
    if len(bar_pairs) < 2:
        raise CaptureModelError(label, "only 1 bar: a tensegrity robot has at least 2", "list every bar of the robot")
    node_markers, owner = _bar_ends(bar_pairs, names, excluded, label)
    string_ij = _string_ends(string_pairs, node_markers, names, excluded, label)
    rows = _frame_rows(frame_numbers, frames, label)
    P, scatter, visible = _medians(data, node_markers, owner, rows, min_visible, label)
    if up == "y":
        P = y_up_to_z_up(P)
    _check_bar_lengths(P, node_markers, label)
    offsets = _marker_offsets(marker_offsets, node_markers, label)
    P = _ends_behind_markers(P, offsets)
    T = robot_frame(P, heading)
    X = np.round(P @ T[:3, :3].T + T[:3, 3], POSITION_DECIMALS) + 0.0          # + 0.0: no -0.0 in the file
    node_names = [f"n{i + 1}" for i in range(len(X))]
    nm = _model_name(label) if name is None else name
    first, last = int(frame_numbers[rows[0]]), int(frame_numbers[rows[-1]])
    model_params.setdefault("description", f"Captured from {Path(label).name}, frames {first}..{last} "
                            f"({len(rows)} used), by tensegrity-mocap model: robot frame z up, origin at the "
                            f"nodes' horizontal centroid on the floor (lowest node), x toward "
                            + ("n1." if heading == "first-node" else "the capture's x axis."))
    doc = model_document(node_names, X, [(2 * k, 2 * k + 1) for k in range(len(bar_pairs))], string_ij,
                         name=nm, markers=offsets, **model_params)
    holding = _holding(data, node_markers, P, bar_pairs, up_axis, floor_z, floor_tol, still_tol, still_from, label)
    holds = _apply_holding(doc, holding, supports, fixed, label) if supports != "none" or fixed else []
    floor = floor_height(ground, doc, label, [X[node_names.index(nm), 2] for nm in holding.on_floor])
    if floor is not None:
        doc["obstacles"] = [{"name": "ground", "type": "plane", "point": [0.0, 0.0, floor]}]
    eq = equilibrium_report(doc, min_tension, max_tension, ground_tol, tolerance) if string_ij else None
    warnings = short_bars(X, node_markers, offsets) + _unheld(doc, holding, holds, floor)
    return CaptureModel(doc, dict(zip(node_markers, node_names)), T, eq, dict(zip(node_names, scatter)), label, up,
                        heading, len(rows), (first, last), dict(zip(node_names, visible)),
                        {node_names[i]: d for i, d in sorted(offsets.items())}, warnings, holding)


def _holding(data, node_markers, P, bar_pairs, up_axis, floor_z, floor_tol, still_tol, still_from, label) -> Holding:
    """:func:`detect_holding` on every frame of the take (and of the takes ``still_from``, each turned z-up by
    its own up axis unless ``up_axis`` is given), capture frame z up."""
    tracks = [data[m] for m in node_markers]
    further = [further_take_markers(p, up_axis) for p in ([still_from] if isinstance(still_from, (str, Path))
                                                     else list(still_from or ()))]
    z0 = _height(floor_z, label, f"the capture's floor height must be a number in m, got {floor_z!r}")
    h = detect_holding([f"n{i + 1}" for i in range(len(tracks))], tracks, P,
                       [(2 * k, 2 * k + 1) for k in range(len(bar_pairs))], z0, float(floor_tol), still_tol, further)
    h.takes = [str(label)] + [f for f, _ in further]
    return h


def _apply_holding(doc, holding, supports, fixed, label) -> list:
    """Write the supports (detected, or the names in ``fixed``) into ``doc``; returns the held names."""
    if supports not in ("auto", "none"):
        raise CaptureModelError(label, f"supports must be 'auto' or 'none', got {supports!r}")
    given = [s.strip() for s in (fixed.split(",") if isinstance(fixed, str) else fixed or ()) if s.strip()]
    nodes = {nd["name"]: nd for nd in doc["nodes"]}
    bars = {b["name"] for b in doc["bars"]}
    bad = [g for g in given if g not in nodes and g not in bars]
    if bad:
        raise CaptureModelError(label, f"--fixed {', '.join(bad)}: no such node or bar",
                                f"name nodes n1..n{len(nodes)} (fixed: true) or bars b1..b{len(bars)} (clamped)")
    if given:
        pins, clamps = [g for g in given if g in nodes], [g for g in given if g in bars]
        holding.reasons.append(f"held as given (--fixed): {', '.join(given)}")
        holding.fixed, holding.clamped = pins, clamps
    else:
        pins, clamps = holding.fixed, holding.clamped
    for nm in pins:
        nodes[nm]["fixed"] = True
    if clamps:
        doc["supports"] = [{"name": f"clamp_{b}", "type": "clamp", "bar": b} for b in clamps]
    return pins + clamps


def _unheld(doc, holding, holds, floor) -> list:
    """A warning when gravity acts and nothing holds the model (no support, no floor)."""
    if holds or floor is not None or not any(doc.get("gravity", (0.0, 0.0, 0.0))):
        return []
    return ["nothing holds the model: " + "; ".join(holding.reasons[1:]) + ". Under gravity it falls freely (the "
            "equilibrium check assumes it stands on its lowest nodes). Fix: name the held nodes or bars (--fixed), "
            "give a take where the free part moves (--still-from), or give the floor (--ground Z, --capture-floor)"]


def floor_height(ground, doc: dict, label: str, resting=None):
    """The height [m] of the ground plane for ``ground`` ("auto", "none" or a number; see model_from_capture),
    None for no ground. ``resting``: robot-frame heights [m] of the nodes on the capture's floor ("auto" puts
    the plane under the lowest of them, less the bar radius; None: under the lowest node, z = 0)."""
    if ground is None or ground == "none":
        return None
    if ground == "auto":
        if not any(doc.get("gravity", (0.0, 0.0, 0.0))) or (resting is not None and not len(resting)):
            return None
        low = 0.0 if resting is None else float(min(resting))
        return low - float(max(b.get("radius", 0.0) for b in doc["bars"]))
    return _height(ground, label, f"ground must be 'auto', 'none' or a height in m, got {ground!r}")


def _height(value, label, problem) -> float:
    """``value`` as a finite float [m]; else CaptureModelError(label, problem)."""
    try:
        z = float(value)
    except (TypeError, ValueError):
        z = math.nan
    if not math.isfinite(z):
        raise CaptureModelError(label, problem)
    return z


def _check_bar_lengths(P, node_markers, label):
    """Every bar's two markers (nodes 2k, 2k+1 of P) at least MIN_BAR_LENGTH apart."""
    for k in range(len(P) // 2):
        d = float(np.linalg.norm(P[2 * k] - P[2 * k + 1]))
        if d < MIN_BAR_LENGTH:
            raise CaptureModelError(label, f"bar {k + 1} ({node_markers[2 * k]!r} - {node_markers[2 * k + 1]!r}) "
                                    f"has zero length (the markers are {d * 1e3:.2f} mm apart)",
                                    "list the two markers at the ends of the bar")


def parse_marker_offsets(items) -> dict:
    """{node or marker: distance [m]} from 'NODE=DIST' texts (``--marker-offset n5=0.148``) or a mapping."""
    if isinstance(items, dict):
        return dict(items)
    out = {}
    for text in items or ():
        key, sep, value = str(text).rpartition("=")
        try:
            out[key.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep or not key.strip():
            raise CaptureModelError("--marker-offset", f"{text!r} is not NODE=DIST",
                                    "write e.g. --marker-offset n5=0.148 (metres from the bar end to the marker)")
    return out


def _marker_offsets(given, node_markers, label) -> dict:
    """{node index: distance [m]} of the declared offsets; a key is a node name (n5) or a bar-end marker."""
    out = {}
    for key, d in parse_marker_offsets(given).items():
        m = re.fullmatch(r"n(\d+)", str(key))
        i = int(m.group(1)) - 1 if m else (node_markers.index(key) if key in node_markers else -1)
        if not 0 <= i < len(node_markers):
            raise CaptureModelError(label, f"marker offset {key!r}: no such node or bar-end marker",
                                    f"name a node n1..n{len(node_markers)} or a bar-end marker of the bar list")
        if not (np.isfinite(d) and d >= 0):
            raise CaptureModelError(label, f"marker offset of {key!r} is {d!r}",
                                    "give the distance from the bar end to the marker in metres (>= 0)")
        out[i] = float(d)
    return out


def _ends_behind_markers(P, offsets) -> np.ndarray:
    """Bar-end positions from the markers P (n, 3) [m]: each bar's declared offsets {node: m} taken back along
    the line of its two markers."""
    P = P.copy()
    for k in range(len(P) // 2):
        a, b = 2 * k, 2 * k + 1
        if a in offsets or b in offsets:
            P[a], P[b] = bar_ends_from_markers(P[a], P[b], offsets.get(a, 0.0), offsets.get(b, 0.0))
    return P


def short_bars(X, node_markers, offsets) -> list:
    """Warnings naming each bar (nodes 2k, 2k+1 of X (n, 3) [m]) more than SHORT_BAR shorter than the median
    bar whose ends declare no marker offset, with the option that declares one."""
    L = np.linalg.norm(X[0::2] - X[1::2], axis=1)
    ref = float(np.median(L))
    out = []
    for k in np.flatnonzero(L < (1.0 - SHORT_BAR) * ref):
        a, b = 2 * k, 2 * k + 1
        if a in offsets or b in offsets:
            continue
        gap = ref - L[k]
        out.append(f"bar b{k + 1} (n{a + 1}-n{b + 1}, markers {node_markers[a]!r} - {node_markers[b]!r}) is "
                   f"{L[k] * 1e3:.0f} mm, {gap * 1e3:.0f} mm ({gap / ref:.0%}) shorter than the median bar "
                   f"({ref * 1e3:.0f} mm): if its markers sit in from the bar ends, declare how far, e.g. "
                   f"--marker-offset n{a + 1}={gap:.3f} (or n{b + 1}=..., the distances of both ends adding up to "
                   f"about {gap:.3f} m); otherwise check the bar list")
    return out


# --- files ----------------------------------------------------------------------------------------
class _Flow(dict):            # a model element, written on one line
    pass


class _FlowList(list):
    pass


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Flow, lambda d, x: d.represent_mapping("tag:yaml.org,2002:map", x.items(), flow_style=True))
_Dumper.add_representer(_FlowList, lambda d, x: d.represent_sequence("tag:yaml.org,2002:seq", x, flow_style=True))


def sidecar_paths(model_path) -> tuple:
    """(marker map path, report path) beside ``model_path``: ``<stem>.markers.yaml``, ``<stem>.report.json``."""
    p = Path(model_path)
    return p.with_name(p.stem + ".markers.yaml"), p.with_name(p.stem + ".report.json")


def write_capture_model(result: CaptureModel, path) -> tuple:
    """Write the model YAML to ``path``, the marker map (a ROS 2 parameter file for the mocap bridge) and
    the report JSON beside it (:func:`sidecar_paths`). Returns (model path, marker map path)."""
    path = Path(path)
    markers_path, report_path = sidecar_paths(path)
    doc = dict(result.document, gravity=_FlowList(result.document["gravity"]))
    for key in ("nodes", "bars", "strings"):
        if key in doc:
            doc[key] = [_Flow(e) for e in doc[key]]
    head = (f"# Model of '{doc['name']}' from the static take {result.source} (tensegrity-mocap model).\n"
            f"# Robot frame: {result.report()['robot_frame']}.\n"
            f"# Marker map: {markers_path.name}; scatter, transform and equilibrium: {report_path.name}.\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(head + yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=120, allow_unicode=True),
                    encoding="utf-8")
    build_model(load_spec(path))                                  # what we wrote loads back
    entries = ", ".join(json.dumps(f"{m}={n}") for m, n in result.marker_map.items())
    markers_path.write_text(
        "# Marker map for the mocap bridge (--params-file). Unlabeled names ('Unlabeled 1008') are valid only\n"
        f"# in the take they come from ({Path(result.source).name}): Motive renumbers them in every take, so\n"
        "# on other takes leave marker_map empty and the bridge registers the model by a rigid fit.\n"
        "# Labeled names (Asset:Marker) stay valid. '/**/mocap_bridge' matches the bridge in any namespace.\n"
        "/**/mocap_bridge:\n  ros__parameters:\n"
        f"    model: {json.dumps(str(path.resolve()))}\n"
        f"    up_axis: {json.dumps(result.up_axis)}\n"
        f"    marker_map: [{entries}]\n", encoding="utf-8")
    report_path.write_text(json.dumps(result.report(), indent=1, allow_nan=False) + "\n", encoding="utf-8")
    return path, markers_path
