"""Captures for dynamic identification: node positions over time with the commands that drove them.

A :class:`DynamicCapture` holds times ``t`` (T,) [s] on the commands' clock, physical node positions
``nodes`` (T, mu, 3) [m] in model order (NaN = not seen in that frame) and the commanded reeled-in
lengths ``inputs`` (an :class:`~tensegrity_engine.dynamics.inputs.InputSchedule`, u [m]).

Sources (:func:`load_capture`): an engine trajectory (a directory or its ``trajectory.npz``; inputs: its
recorded u), a suite ``.mcap`` recording (inputs: its ``joint_states``, else ``motor_goals``, through the
spools) and a Motive ``.csv`` export (inputs must be given). The last two are read by plugins: the
engine imports no mocap or ROS package but looks a :class:`CaptureReader` up by file suffix in the
entry-point group ``tensegrity_engine.capture_readers`` (:func:`capture_reader`); ``tensegrity_mocap``
registers ``csv`` and ``mcap``.
:func:`read_dynamic_cases` reads the CLI's cases file (YAML, paths relative to it)::

    params: [stiffness, string_damping]    # optional, from PARAMS (default: all of them)
    groups: model                          # optional: model | none
    shooting: 1.0                          # optional: multiple-shooting segment length [s]
    captures:
      - name: train
        data: run1/trajectory.npz          # or take.csv (Motive), rec.mcap (suite recording)
        inputs: recording                  # optional: recording | paper | none | FILE.csv
        marker_map: map.yaml               # optional, Motive CSV only (file or 'label=node,...')
        start: 0.0                         # optional window [s] from the capture's first sample
        end: 14.0
        loads: forces.csv                  # optional: measured forces t,<node>.fx,.fy,.fz [s, N], capture's clock
        payload: payload                   # optional: a payload node of the model, prescribed as captured
        payload_smoothing: 0.1             # optional [s]: its acceleration's Savitzky-Golay window
      - {name: check, data: run2/trajectory.npz, held_out: true}

``payload: NODE`` (the same node in every capture: the fit has one model) takes the payload and its cable out
of the model and drives the node it hangs from with the force ``m (g - a)`` of the payload's captured track
(:func:`~tensegrity_engine.dynamics.loads.captured_payload`, as ``tensegrity-compare --payload``); the
captures then hold the robot's nodes only and the options ``model`` (the robot) and ``payload`` (what was
taken out).

Every problem raises :class:`~tensegrity_engine.errors.InputError` naming the source and the fix.
"""
from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Protocol

import numpy as np

from tensegrity_engine.errors import InputError
from tensegrity_engine.identify.case_files import check_keys, read_cases_yaml
from tensegrity_engine.model.markers import marker_positions
from tensegrity_engine.dynamics.inputs import InputSchedule, from_csv, no_input, paper_sinusoid, table

from tensegrity_engine.identify.params import DEFAULT_PARAMS, DYNAMIC_PARAMS as PARAMS  # noqa: F401  (one list)
MIN_FRAMES = 10
PAYLOAD_MIN_FRAMES = 8                     # frames seeing a payload's marker (payload_loads' cubic filter)
MIN_RATE, MAX_RATE = 50.0, 5000.0          # Hz, accepted median frame rates
MAX_CASES_BYTES = 1 * 2 ** 20              # a cases file refers to captures; it holds no data
TOP_KEYS = ("params", "groups", "shooting", "captures")
CAPTURE_KEYS = ("name", "data", "inputs", "marker_map", "start", "end", "held_out", "namespace", "asset",
                "exclude", "loads", "payload", "payload_smoothing")


@dataclass
class DynamicCapture:
    """Node positions over time and the commanded inputs (module docstring)."""
    t: np.ndarray              # (T,) s, strictly increasing, on the inputs' clock
    nodes: np.ndarray          # (T, mu, 3) m, physical nodes in model order, NaN = not seen that frame
    inputs: InputSchedule      # commanded reeled-in lengths u(t) [m], one per model actuator
    name: str = ""
    source: str = ""
    held_out: bool = False
    loads: object = None       # LoadTable (dynamics/loads.py): measured forces [N] on nodes over t, or None


def _fail(where: str, text: str):
    raise InputError(f"{where}: {text}")


def capture_from_arrays(model, t, nodes, inputs, name="", source="arrays") -> DynamicCapture:
    """A validated capture from times ``t`` (T,) [s], positions ``nodes`` (T, mu or n, 3) [m] (virtual nodes
    dropped) and an InputSchedule ``inputs`` (u [m]). Nothing is dropped or reordered: bad data is an error."""
    where = f"capture '{name}' ({source})" if name else f"capture {source}"
    mu, n = model.n_physical, model.n_nodes
    t = np.asarray(t, float)
    X = np.asarray(nodes, float)
    if t.ndim != 1:
        _fail(where, f"t must be a 1-D array of times [s], got shape {t.shape}")
    if X.ndim != 3 or X.shape[2] != 3:
        _fail(where, f"nodes must be (frames, nodes, 3) positions [m], got shape {X.shape}")
    if X.shape[1] == n and n != mu:
        X = X[:, :mu]
    if X.shape[1] != mu:
        _fail(where, f"{X.shape[1]} nodes per frame, but model '{model.name}' has {mu} physical nodes"
                     f"{f' ({n} with virtual ones)' if n != mu else ''}: use the model of the captured robot, or "
                     "give the physical nodes in model order")
    if len(t) != X.shape[0]:
        _fail(where, f"{len(t)} times but {X.shape[0]} frames of nodes: give one time per frame")
    if not np.all(np.isfinite(t)):
        _fail(where, f"t[{int(np.argmin(np.isfinite(t)))}] is not a finite number; remove or fix that frame")
    if len(t) < MIN_FRAMES:
        _fail(where, f"{len(t)} frames; at least {MIN_FRAMES} are needed (a longer capture or a wider window)")
    dt = np.diff(t)
    if np.any(dt <= 0):
        k = int(np.argmax(dt <= 0)) + 1
        _fail(where, f"times must increase strictly: t[{k}] = {t[k]:.6g} s after t[{k - 1}] = {t[k - 1]:.6g} s; "
                     "sort the frames and remove repeated ones")
    rate = 1.0 / float(np.median(dt))
    if not MIN_RATE <= rate <= MAX_RATE:
        _fail(where, f"frame rate {rate:.4g} Hz (median interval) is outside {MIN_RATE:g}..{MAX_RATE:g} Hz: "
                     "check that t is in seconds, or resample the capture")
    if np.isinf(X).any():
        k = int(np.argwhere(np.isinf(X))[0][0])
        _fail(where, f"frame {k} (t = {t[k]:.4g} s) has an infinite position; use NaN for a node not seen")
    seen = np.isfinite(X).all(axis=2)
    if not seen.all(axis=1).any():
        best = int(np.argmax(seen.sum(axis=1)))
        _fail(where, f"no frame has every node seen (at best {int(seen[best].sum())} of {mu} at t = "
                     f"{t[best]:.4g} s); the fit needs one complete frame: fix the marker map or the tracking")
    if not isinstance(inputs, InputSchedule):
        _fail(where, f"inputs must be an InputSchedule, got {type(inputs).__name__}")
    names = list(model.actuator_names)
    if inputs.n_actuators != len(names):
        _fail(where, f"inputs '{inputs.description}' command {inputs.n_actuators} actuator(s), model "
                     f"'{model.name}' has {len(names)} ({', '.join(names) or 'none'}): give one column per actuator")
    if inputs.params.mode == 2:
        tk = inputs.params.tab_t
        frame = float(np.median(dt))
        if tk[-1] < t[-1] - frame:
            _fail(where, f"the commands end at {tk[-1]:.4g} s but the capture runs to {t[-1]:.4g} s: give "
                         "inputs covering the whole capture, or end the capture earlier (end:)")
        if tk[0] > t[0] + frame:
            _fail(where, f"the commands start at {tk[0]:.4g} s but the capture starts at {t[0]:.4g} s: give "
                         "inputs covering the whole capture, or start the capture later (start:)")
    return DynamicCapture(t=t.copy(), nodes=np.ascontiguousarray(X), inputs=inputs, name=str(name),
                          source=str(source))


# --- sources --------------------------------------------------------------------------------------
#: entry-point group of the capture readers (``name`` = file suffix without the dot, e.g. ``csv``, ``mcap``;
#: the value a :class:`CaptureReader`); tensegrity_mocap registers the Motive CSV and MCAP readers
READER_GROUP = "tensegrity_engine.capture_readers"


class CaptureReader(Protocol):
    """Reads a capture file the engine itself does not know (found by suffix in :data:`READER_GROUP`).

    Returns ``(t, nodes, schedule)``: ``t`` (T,) [s] on the commands' clock, ``nodes`` (T, mu, 3) [m]
    physical nodes in model order (NaN = not seen) and, when ``recorded`` is true, the recorded commands
    as an :class:`~tensegrity_engine.dynamics.inputs.InputSchedule` (else None). ``namespace`` (MCAP),
    ``asset``, ``marker_map`` and ``exclude`` (Motive CSV) are passed as :func:`load_capture` got them.
    Every problem raises :class:`~tensegrity_engine.errors.InputError` naming the file and the fix.
    """

    def __call__(self, model, path: Path, *, recorded: bool, namespace: str, asset, marker_map,
                 exclude: tuple) -> tuple: ...


def capture_reader(suffix: str) -> CaptureReader | None:
    """The installed reader for ``suffix`` (e.g. ``"csv"``), or None when no package registers one; a
    registered reader that cannot be imported raises ImportError."""
    for ep in entry_points(group=READER_GROUP):
        if ep.name == suffix:
            return ep.load()
    return None


def _reader(path, suffix: str) -> CaptureReader:
    """The reader for ``suffix``; without one (none registered, or it cannot be imported) an InputError
    saying to install tensegrity_mocap."""
    try:
        reader = capture_reader(suffix)
        why = f"no capture reader for .{suffix} files is installed (entry-point group {READER_GROUP})"
    except ImportError as exc:
        reader, why = None, str(exc)
    if reader is None:
        raise InputError(f"{path}: reading .csv and .mcap captures needs the tensegrity_mocap package "
                         f"({why}); install it (pip install -e src/tensegrity_mocap) or convert the capture "
                         "to an engine trajectory.npz")
    return reader


def _trajectory(model, path: Path):
    """(t, physical nodes, recorded-u schedule) of an engine trajectory."""
    from tensegrity_engine.dynamics.trajectory import Trajectory
    try:
        traj = Trajectory.load(path)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    mu = traj.n_physical
    want = list(model.node_names[:model.n_physical])
    have = list(traj.node_names[:mu])
    if have != want:
        raise InputError(f"{path}: its {mu} physical nodes ({', '.join(have[:6])}{' ...' if mu > 6 else ''}) are "
                         f"not model '{model.name}''s {len(want)} ({', '.join(want[:6])}"
                         f"{' ...' if len(want) > 6 else ''}): identify with the model that made the trajectory")
    names = list(model.actuator_names)
    if sorted(traj.actuator_names) != sorted(names):
        raise InputError(f"{path}: recorded inputs for actuators {list(traj.actuator_names)}, model "
                         f"'{model.name}' has {names}: give inputs (paper, none or FILE.csv) or the right model")
    seen = marker_positions(model, traj.nodes[:, :mu])   # what a capture of it sees: the markers (model/markers.py)
    if not names:
        return traj.t, seen, no_input(0)
    u = np.asarray(traj.inputs, float)[:, [list(traj.actuator_names).index(a) for a in names]]
    return traj.t, seen, table(traj.t, u, description=f"{path}: recorded inputs")


def _schedule(model, spec, path):
    """An InputSchedule from 'paper', 'none', a schedule or an inputs CSV path (None/'recording': caller)."""
    if isinstance(spec, InputSchedule):
        return spec
    if spec == "paper":
        return paper_sinusoid(model)
    if spec == "none":
        return no_input(len(model.actuator_names))
    if isinstance(spec, (str, Path)):
        if not Path(spec).is_file():
            raise InputError(f"{path}: inputs {spec}: no such file; give recording, paper, none or an inputs CSV "
                             f"'t,{','.join(model.actuator_names)}' (t [s], u [m])")
        return from_csv(spec, model)
    raise InputError(f"{path}: inputs must be an InputSchedule, 'paper', 'none', 'recording' or a CSV path, "
                     f"got {spec!r}")


def _no_commands(model, path) -> str:
    """The error for a Motive CSV given without inputs: the fix that fits the model."""
    if not model.actuator_names:
        return (f"{path}: a Motive CSV holds no commands; model '{model.name}' has no actuators, so there are none "
                "to give: write inputs: none")
    return (f"{path}: a Motive CSV holds no commands; give inputs: FILE.csv (t,{','.join(model.actuator_names)}; "
            f"t [s], u [m]) with the commands of the take, or paper if the take ran the paper's sinusoids")


def _number(value, what: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{where}: {what} must be a number of seconds, got {value!r}")
    return float(value)


def load_capture(model, path, inputs=None, marker_map=None, namespace="", asset=None, exclude=(), start=None,
                 end=None, name="", payload=None, payload_smoothing=None) -> DynamicCapture:
    """A capture of ``model`` from ``path``: an engine trajectory (directory or ``.npz``), a Motive ``.csv``
    or a suite ``.mcap`` recording. ``inputs``: None (the trajectory's u / the recording's motor angles;
    a CSV has none), 'recording' (the same), 'paper', 'none', an InputSchedule or an inputs CSV path.
    ``marker_map``, ``asset``, ``exclude``: Motive CSV (see ``tensegrity_mocap.compare.inputs``);
    ``namespace``: MCAP; both formats are read by the :class:`CaptureReader` installed for the suffix.
    ``start``/``end`` [s] keep the frames within that window, counted from the first sample; t stays on
    the inputs' clock. ``payload``: a payload node of ``model``, prescribed as captured (module docstring):
    the capture is then one of the model without it, with its force in ``loads``."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{path}: no such file or directory; give an engine trajectory, a Motive .csv or an .mcap")
    suffix = "npz" if p.is_dir() else p.suffix.lower().lstrip(".")
    name = name or (p.name if p.is_dir() or p.name != "trajectory.npz" else p.parent.name) or str(p)
    want_recorded = inputs is None or (isinstance(inputs, str) and inputs == "recording")
    if marker_map is not None and suffix != "csv":
        raise InputError(f"{path}: marker_map is for Motive CSV exports; other captures are in model order")
    if suffix == "npz":
        t, X, recorded = _trajectory(model, p)
        sched = recorded if want_recorded else _schedule(model, inputs, p)
    elif suffix in ("csv", "mcap"):
        if suffix == "csv" and want_recorded:
            raise InputError(_no_commands(model, path))
        t, X, recorded = _reader(p, suffix)(model, p, recorded=want_recorded, namespace=namespace, asset=asset,
                                            marker_map=marker_map, exclude=_strings(exclude))
        sched = recorded if want_recorded else _schedule(model, inputs, p)
    else:
        raise InputError(f"{path}: unknown capture type '.{suffix}'; give an engine trajectory (directory or "
                         "trajectory.npz), a Motive .csv export or an .mcap recording")
    t = np.asarray(t, float)
    if start is not None or end is not None:
        lo = -math.inf if start is None else _number(start, "start", str(p))
        hi = math.inf if end is None else _number(end, "end", str(p))
        if hi <= lo:
            raise InputError(f"{path}: end ({hi:g} s) must be after start ({lo:g} s)")
        rel = t - t[0] if len(t) else t
        keep = (rel >= lo - 1e-9) & (rel <= hi + 1e-9)
        t, X = t[keep], np.asarray(X)[keep]
    if payload is None:
        return capture_from_arrays(model, t, X, sched, name=name, source=str(p))
    robot, X, table = _without_payload(model, t, X, payload, payload_smoothing, str(p))
    cap = capture_from_arrays(robot, t, X, sched, name=name, source=str(p))
    cap.loads = table
    return cap


def _without_payload(model, t, X, node, smoothing, where: str) -> tuple:
    """(the model without its payload at ``node``, the robot's physical node tracks, the payload's force on its
    hook from its track) for ``payload: node``."""
    from tensegrity_engine.dynamics.loads import captured_payload
    from tensegrity_engine.errors import ModelError
    X = np.asarray(X, float)
    if node in model.node_names[:model.n_physical]:
        seen = int(np.isfinite(X[:, model.node_index(node)]).all(axis=1).sum())
        if seen < PAYLOAD_MIN_FRAMES:
            raise InputError(f"{where}: payload '{node}': its marker is seen in {seen} of {len(X)} frames (at least "
                             f"{PAYLOAD_MIN_FRAMES}): map the payload's marker to node '{node}' (marker_map) and track "
                             "it, or leave out payload: and give its force as loads: FILE.csv")
    try:
        robot, _, table = captured_payload(model, node, t, X, smoothing)
    except (ModelError, InputError) as exc:
        raise InputError(f"{where}: payload {node}: {exc}") from None
    cols = [model.node_index(n) for n in robot.node_names[:robot.n_physical]]
    return robot, X[:, cols], table


def _options(doc: dict, path: Path) -> dict:
    params = doc.get("params", list(DEFAULT_PARAMS))
    params = [params] if isinstance(params, str) else params
    if not isinstance(params, list) or not params:
        raise InputError(f"{path}: params must be a list of names from {', '.join(PARAMS)}")
    for q in params:
        if q not in PARAMS:
            close = difflib.get_close_matches(str(q), PARAMS, n=1)
            raise InputError(f"{path}: unknown param {q!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                             + f"; choose from {', '.join(PARAMS)}")
    groups = doc.get("groups")
    if groups not in (None, "none", "model"):
        raise InputError(f"{path}: groups must be model or none, got {groups!r}")
    shooting = doc.get("shooting", 1.0)
    if isinstance(shooting, bool) or not isinstance(shooting, (int, float)) or not 0 < shooting < math.inf:
        raise InputError(f"{path}: shooting must be a segment length > 0 in seconds, got {shooting!r}")
    return {"params": tuple(dict.fromkeys(params)), "groups": None if groups in (None, "none") else "model",
            "shooting": float(shooting)}


def _strings(value) -> tuple:
    return (value,) if isinstance(value, str) else tuple(str(v) for v in value or ())


def _capture_item(model, item, k: int, base: Path, path: Path, robot=None) -> DynamicCapture:
    """One entry of ``captures:`` loaded (paths relative to the cases file); ``robot``: the model without the
    payload its ``payload:`` names (the fit's model)."""
    if not isinstance(item, dict) or "data" not in item:
        raise InputError(f"{path}: capture {k} must be a mapping with 'data: FILE' (and name, inputs, start, end, "
                         "held_out)")
    name = str(item.get("name", item["data"]))
    where = f"{path}: capture {k} '{name}'"
    check_keys(item, CAPTURE_KEYS, where)
    if not isinstance(item["data"], str) or not (base / item["data"]).exists():
        raise InputError(f"{where}: data file {base / str(item['data'])} not found; give a path relative to the "
                         "cases file")
    spec = item.get("inputs")
    if isinstance(spec, str) and spec not in ("recording", "paper", "none"):
        if not (base / spec).is_file():
            raise InputError(f"{where}: inputs file {base / spec} not found; give recording, paper, none or an "
                             "inputs CSV relative to the cases file")
        spec = base / spec
    elif spec is not None and not isinstance(spec, str):
        raise InputError(f"{where}: inputs must be recording, paper, none or a CSV file name, got {spec!r}")
    mm = item.get("marker_map")
    if isinstance(mm, str) and (base / mm).is_file():
        mm = str(base / mm)
    held = item.get("held_out", False)
    if not isinstance(held, bool):
        raise InputError(f"{where}: held_out must be true or false, got {held!r}")
    start = None if item.get("start") is None else _number(item["start"], "start", where)
    end = None if item.get("end") is None else _number(item["end"], "end", where)
    if start is not None and end is not None and end <= start:
        raise InputError(f"{where}: end ({end:g} s) must be after start ({start:g} s)")
    try:
        cap = load_capture(model, base / item["data"], inputs=spec, marker_map=mm,
                           namespace=str(item.get("namespace", "")), asset=item.get("asset"),
                           exclude=_strings(item.get("exclude")), start=start, end=end, name=name,
                           payload=item.get("payload"), payload_smoothing=_smoothing(item, where))
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    from tensegrity_engine.dynamics.loads import combined
    cap.held_out = held
    robot = model if robot is None else robot
    cap.loads = combined([cap.loads, _loads(robot, item.get("loads"), base, where)], robot)
    return cap


def _smoothing(item: dict, where: str):
    """``payload_smoothing`` [s] (None: the default), only with ``payload``."""
    value = item.get("payload_smoothing")
    if value is None:
        return None
    if "payload" not in item:
        raise InputError(f"{where}: payload_smoothing without payload; name the payload node (payload: NODE)")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise InputError(f"{where}: payload_smoothing must be a window > 0 in seconds (e.g. 0.1), got {value!r}")
    return float(value)


def _fit_model(model, items, path: Path) -> tuple:
    """(the fit's model, what was taken out of it as a dict or None): ``model`` without the payload the
    captures name; InputError unless every capture names the same payload node, or none does."""
    from tensegrity_engine.errors import ModelError
    from tensegrity_engine.model.payload import split_payload
    named = [(k, it.get("payload") if isinstance(it, dict) else None) for k, it in enumerate(items)]
    for k, node in named:
        if node is not None and not isinstance(node, str):
            raise InputError(f"{path}: capture {k}: payload must be a node name, got {node!r}")
    nodes = {n for _, n in named}
    if nodes == {None}:
        return model, None
    if len(nodes) > 1:
        which = ", ".join(f"{k}: {n or 'none'}" for k, n in named)
        raise InputError(f"{path}: the captures name different payloads ({which}); the fit has one model: give "
                         "every capture the same payload: NODE (a take without it needs a model without it)")
    node = named[0][1]
    try:
        robot, p = split_payload(model, node)
    except ModelError as exc:
        k = next(k for k, n in named if n == node)
        raise InputError(f"{path}: capture {k}: payload {node}: {exc}") from None
    return robot, {"node": p.node, "hang": p.hang, "mass_kg": p.mass, "cable": p.cable,
                   "cable_length_m": p.cable_length}


def _loads(model, spec, base: Path, where: str):
    """The capture's measured loads (``loads: FILE.csv``, t,<node>.fx,<node>.fy,<node>.fz on the capture's
    clock, relative to the cases file), or None."""
    from tensegrity_engine.dynamics.loads import load_table_from_csv
    if spec is None:
        return None
    if not isinstance(spec, str) or not (base / spec).is_file():
        raise InputError(f"{where}: loads file {base / str(spec)} not found; give a CSV t,<node>.fx,<node>.fy,"
                         "<node>.fz [s, N] relative to the cases file")
    try:
        return load_table_from_csv(base / spec, model)
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None


def read_dynamic_cases(model, path) -> tuple:
    """(fit captures, held-out captures, options {params: tuple, groups: 'model' | None, shooting: s, model: the
    model to fit (``model`` without a payload the captures name), payload: dict or None}) from a cases YAML
    file (module docstring)."""
    path = Path(path)
    doc = read_cases_yaml(path, "captures", "{name: ..., data: FILE, inputs: ...}", MAX_CASES_BYTES)
    check_keys(doc, TOP_KEYS, str(path))
    opts = _options(doc, path)
    opts["model"], opts["payload"] = _fit_model(model, doc["captures"], path)
    fit, held, names = [], [], {}
    for k, item in enumerate(doc["captures"]):
        cap = _capture_item(model, item, k, path.parent, path, opts["model"])
        if cap.name in names:
            raise InputError(f"{path}: captures {names[cap.name]} and {k} are both named '{cap.name}'; give each "
                             "a unique name")
        names[cap.name] = k
        (held if cap.held_out else fit).append(cap)
    if not fit:
        raise InputError(f"{path}: every capture is held out; fit at least one (remove held_out: true from one)")
    return fit, held, opts
