"""The simulation side of :mod:`tensegrity_mocap.compare.core`: engine trajectories, and simulating the
experiment's model.

Inputs (``--input``), all reeled-in string lengths ``u`` [m] per actuator:

* ``none``: u = 0, the model's own motion from its initial state (e.g. a free robot falling under gravity);
* ``paper``: the manipulator paper's phase-shifted sinusoids (:func:`tensegrity_engine.paper_sinusoid`);
  the default for models with six actuators (as ``tensegrity simulate``), else ``none``;
* ``FILE.csv``: an engine inputs CSV ``t,<actuator names>`` (t in s, u in m; piecewise linear);
* ``recording`` / ``joint_states`` / ``motor_goals``: the motor angles [rad] recorded in the MCAP experiment
  (``recording`` = ``joint_states``, the measured angles, else ``motor_goals``, the commanded ones), by
  actuator name, mapped to u through each actuator's spool (``u = sign * spool_radius * (angle - zero)``)
  and applied piecewise linearly at the recorded times on the experiment's clock (plus the time offset).
  The model's initial state is u = 0: a recording whose first angles are not the actuators' ``zero`` makes
  the rest lengths jump at the start.

``--initial-from-experiment``: the simulation starts at the experiment's first sample with every node
known, from those positions at rest, projected onto the bar lengths and constraints; a bar measured more
than the tolerance off the model's length (or a node the projection moves further) is an error.
"""
from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import numpy as np

from tensegrity_engine.dynamics.trajectory import Trajectory
from tensegrity_engine.model.markers import nodes_from_markers

from tensegrity_mocap.compare.core import CompareError, Experiment

MAX_SIMULATE = 3600.0         # s, longest --simulate run
INITIAL_TOL = 0.005           # m, default --initial-tol
RECORDED_INPUTS = ("recording", "joint_states", "motor_goals")


def load_trajectory(tp: Path) -> Trajectory:
    """An engine trajectory: a directory holding ``trajectory.npz`` or the file itself."""
    tp = Path(tp)
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


def recorded_angles(path, topic: str, namespace: str = "") -> list:
    """``[(stamp [s], names, angles [rad]), ...]`` of the ``sensor_msgs/JointState`` messages on ``topic``
    (``joint_states`` or ``motor_goals``) in an MCAP recording, in time order."""
    from tensegrity_ros_common.recording import RecordingError, iter_messages
    pre = "/" + namespace.strip("/") if namespace.strip("/") else ""
    full = f"{pre}/{topic}"
    rows = []
    for t, msg, _ in iter_messages(path):
        if t != full:
            continue
        try:
            rows.append((msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec, list(msg.name),
                         [float(a) for a in msg.position]))
        except (AttributeError, TypeError, ValueError):
            raise RecordingError(f"{path}: topic {full} does not hold sensor_msgs/JointState messages") from None
    return sorted(rows, key=lambda r: r[0])


def recorded_schedule(experiment: Experiment, model, choice: str, namespace: str = "", time_offset: float = 0.0):
    """An input table from the motor angles of an MCAP experiment (module docstring)."""
    from tensegrity_engine.dynamics.inputs import angles_to_u, table
    if experiment.kind != "mcap":
        raise CompareError(f"--input {choice}: the motor angles come from an MCAP experiment; "
                           f"{experiment.source} is a {experiment.kind.replace('_', ' ')}")
    names = list(model.actuator_names)
    if not names:
        raise CompareError(f"--input {choice}: model '{model.name}' has no actuators; use --input none")
    topics = ("joint_states", "motor_goals") if choice == "recording" else (choice,)
    for topic in topics:
        rows = recorded_angles(experiment.source, topic, namespace)
        if rows:
            break
    else:
        raise CompareError(f"--input {choice}: {experiment.source} has no {' or '.join(topics)} messages")
    t, A = [], []
    for stamp, msg_names, angles in rows:
        by_name = dict(zip(msg_names, angles))
        if not all(n in by_name for n in names):
            continue
        row = [by_name[n] for n in names]
        if np.all(np.isfinite(row)):
            t.append(stamp)
            A.append(row)
    if not t:
        seen = sorted({n for r in rows for n in r[1]})
        raise CompareError(f"--input {choice}: no {topic} message gives every actuator of model '{model.name}' "
                           f"({', '.join(names)}); the recording's joints: {', '.join(seen) or 'none'}")
    t = np.asarray(t) - experiment.t0 + time_offset
    t, keep = np.unique(t, return_index=True)             # a repeated stamp keeps its first message
    u = angles_to_u(model, np.asarray(A)[keep])
    return table(t, u, description=f"recorded {topic} ({len(t)} samples, motor angles -> u)")


def input_schedule(choice, model, experiment: Experiment | None = None, namespace: str = "",
                   time_offset: float = 0.0):
    """The schedule for ``--input`` ``choice`` (None: paper for six-actuator models, else none)."""
    from tensegrity_engine.dynamics.inputs import from_csv, no_input, paper_sinusoid
    if choice is None:
        choice = "paper" if len(model.actuator_names) == 6 else "none"
    if choice == "none":
        return no_input(len(model.actuator_names))
    if choice == "paper":
        return paper_sinusoid(model)
    if choice in RECORDED_INPUTS:
        return recorded_schedule(experiment, model, choice, namespace, time_offset)
    if not Path(choice).is_file():
        raise CompareError(f"--input {choice}: not none, paper, {', '.join(RECORDED_INPUTS)} or an inputs CSV file")
    return from_csv(choice, model)


def initial_state(experiment: Experiment, model, tol: float = INITIAL_TOL) -> tuple:
    """(index, all-node positions (n, 3) [m]) of the experiment's first sample with every physical node
    known; CompareError when none exists or a bar is more than ``tol`` [m] off the model's length."""
    known = np.isfinite(experiment.nodes).all(axis=(1, 2))
    if not known.any():
        counts = np.isfinite(experiment.nodes[..., 0]).sum(axis=1)
        k = int(np.argmax(counts))
        raise CompareError(f"--initial-from-experiment: no experiment sample has every node known (at best "
                           f"{counts[k]} of {model.n_physical}, t = {experiment.t[k]:.3f} s); drop the option")
    k = int(np.argmax(known))
    P = experiment.nodes[k]
    X = model.from_physical(nodes_from_markers(model, P) if experiment.markers else P)   # markers off the bar ends
    b = np.asarray(model.bars)
    if len(b):
        err = np.linalg.norm(X[b[:, 0]] - X[b[:, 1]], axis=1) - np.asarray(model.bar_length)
        j = int(np.argmax(np.abs(err)))
        if abs(err[j]) > tol:
            n0, n1 = (model.node_names[i] for i in b[j])
            raise CompareError(
                f"--initial-from-experiment: bar {model.bar_names[j]} ({n0}-{n1}) measures "
                f"{(model.bar_length[j] + err[j]) * 1e3:.1f} mm at t = {experiment.t[k]:.3f} s, the model's is "
                f"{model.bar_length[j] * 1e3:.1f} mm ({err[j] * 1e3:+.1f} mm, more than --initial-tol "
                f"{tol * 1e3:g} mm): check the marker map (a marker on the wrong node), the model's bar lengths, "
                "or raise --initial-tol")
    return k, X


def simulate(model, duration: float, schedule, rate: float = 100.0, start=None, tol: float = INITIAL_TOL,
             description: str = "", loads=None) -> Trajectory:
    """Run ``model`` for ``duration`` [s] at ``rate`` [Hz] under ``schedule`` from its initial state at rest
    (t = 0), or from ``start = (t0 [s], positions (n, 3) [m][, velocities (n, 3) [m/s]])`` (at rest without
    velocities), projected onto the constraints (a node moved more than ``tol`` [m] by the projection is an
    error). ``loads``: a :class:`~tensegrity_engine.dynamics.loads.LoadTable` of measured forces over time."""
    from tensegrity_engine import Simulator
    if duration > MAX_SIMULATE:
        raise CompareError(f"--simulate would run {duration:g} s, more than {MAX_SIMULATE:g} s: "
                           "use a smaller --time-offset, or --trajectory")
    sim = Simulator(model)
    note = ""
    if start is not None:
        t0, X, V = (*start, None) if len(start) == 2 else start
        sim.reset(positions=X, velocities=V, t=float(t0))
        moved = np.linalg.norm(sim.positions[:model.n_physical] - X[:model.n_physical], axis=1)
        j = int(np.argmax(moved))
        if moved[j] > tol:
            raise CompareError(_start_off_the_model(model, moved, j, tol))
        note = f", from the experiment at t = {t0:.3f} s (projection moved nodes <= {moved[j] * 1e3:.2f} mm)"
    if loads is None:
        traj = sim.run(duration, inputs=schedule, rate=rate)
    else:
        from tensegrity_engine.dynamics.loads import run_loaded
        traj = run_loaded(sim, duration, loads, inputs=schedule, rate=rate)
        description = f"{description or schedule.description}, loads: {loads.description}"
    traj.settings["source"] = (f"simulated: {model.name}, {description or schedule.description}, {duration:g} s "
                               f"at {rate:g} Hz{note}")
    return traj


def simulate_paper(model, duration: float, rate: float = 100.0) -> Trajectory:
    """The paper's experiment (paper sinusoids from rest) for ``duration`` [s] sampled at ``rate`` [Hz]."""
    from tensegrity_engine import paper_sinusoid
    return simulate(model, duration, paper_sinusoid(model), rate)


def _start_off_the_model(model, moved, j: int, tol: float) -> str:
    """Why the experiment's start does not fit the model (``moved`` [m] per physical node onto its constraints):
    a fixed node far from its marker means another frame; otherwise a marker or a bar length is wrong."""
    head = (f"--initial-from-experiment: node {model.node_names[j]} moves {moved[j] * 1e3:.1f} mm onto the "
            f"model's constraints, more than --initial-tol {tol * 1e3:g} mm: ")
    fixed = [int(i) for i in model.fixed_nodes if i < model.n_physical and moved[i] > tol]
    if fixed:
        names = ",".join(model.node_names[i] for i in fixed)
        return head + (f"the fixed node(s) {names} are {moved[fixed].max() * 1e3:.1f} mm from their markers, so "
                       "the capture is in another frame than the model file: register it with --register-fixed "
                       "(on the fixed nodes' markers) or --capture-transform REPORT.json (--world-offset for a "
                       "pure shift)")
    return head + ("the captured bar lengths do not fit the model's (a marker on the wrong node, or bars of "
                   "other lengths: check the marker map and the model)")
