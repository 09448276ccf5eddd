"""Measured loads in a comparison (``tensegrity-compare --payload NODE``, ``--load FILE.csv``) and the
static-prediction null.

``--payload NODE``: the simulated model hangs a payload at ``NODE`` (a node with a mass on one string,
docs/model_schema.md "Payloads"); the payload is prescribed as captured: the model is simulated without it
and its cable, under the force ``m (g - a)`` its captured motion puts on the node it hangs from
(:func:`tensegrity_engine.dynamics.loads.payload_loads`). It is not compared (its simulated positions are
unknown). ``--load FILE.csv``: forces per frame on nodes (:func:`~tensegrity_engine.dynamics.loads.load_table_from_csv`).

The **static-prediction null** is the model held still at its static equilibrium under the time-averaged
loads (gravity alone without loads), compared with the same experiment, markers, frames and time offset: a
simulation that explains the motion scores well under it.
"""
from __future__ import annotations

import numpy as np

from tensegrity_engine.dynamics.trajectory import Trajectory

from tensegrity_mocap.compare.core import CompareError, Experiment, compare

START_WINDOW = 0.05           # s, frames of the initial state's quadratic fit (the robot rings faster than it swings)


def payload_table(experiment: Experiment, model, node: str, time_offset: float = 0.0, smoothing=None):
    """(the model without the payload, the Payload, the load table of the captured payload on the
    simulation's clock)."""
    from tensegrity_engine.dynamics.loads import captured_payload
    from tensegrity_engine.errors import InputError, ModelError
    try:
        robot, p, table = captured_payload(model, node, experiment.t + time_offset, experiment.nodes, smoothing)
    except (ModelError, InputError) as exc:
        raise CompareError(f"--payload {node}: {exc}") from None
    return robot, p, table


def start_state(experiment: Experiment, k: int, window: float = START_WINDOW) -> tuple:
    """(positions, velocities) (mu, 3) [m, m/s] of the physical nodes at experiment sample ``k``: a quadratic fit
    over ``window`` [s] from it (noise averaged); the sample itself and zero velocity where a node is seen in
    fewer than 8 of those frames."""
    t = experiment.t[k:]
    n = int(np.searchsorted(t, t[0] + window)) + 1
    tt = t[:n] - t[0]
    X = experiment.nodes[k:k + n]
    P, V = X[0].copy(), np.zeros(X.shape[1:])
    A = np.stack([tt ** j for j in range(3)], axis=1)
    for i in range(X.shape[1]):
        ok = np.isfinite(X[:, i]).all(axis=1)
        if ok.sum() >= 8 and ok[0]:
            c = np.linalg.lstsq(A[ok], X[ok, i], rcond=None)[0]
            P[i], V[i] = c[0], c[1]
    return P, V


def full_trajectory(model, robot, traj: Trajectory) -> Trajectory:
    """``traj`` of ``robot`` (``model`` without its payload) as a trajectory of ``model``: the payload's
    positions and its cable's tension unknown (NaN)."""
    T = len(traj.t)
    cols = [model.node_index(nm) for nm in robot.node_names]
    X = np.full((T, model.n_nodes, 3), np.nan)
    V = np.full_like(X, np.nan)
    X[:, cols], V[:, cols] = traj.nodes, traj.velocities
    strings = [model.string_names.index(s) for s in robot.string_names]
    ten = np.full((T, len(model.string_names)), np.nan)
    lengths = np.full_like(ten, np.nan)
    ten[:, strings], lengths[:, strings] = traj.tensions, traj.string_lengths
    return Trajectory.from_run(model, traj.t, X, V, ten, lengths, traj.inputs, traj.bar_forces,
                               inputs_description=traj.settings.get("inputs", ""), settings=dict(traj.settings))


def static_null(result, sim_model, loads=None, payload: str | None = None, frames=None) -> dict:
    """The static-prediction null (module docstring) of a :class:`Comparison` ``result``: its node RMS
    [mm] (and frame RMS), and the ratio null / simulation."""
    from tensegrity_engine.statics.equilibrium import settle
    model = result.model
    robot = sim_model
    if payload is not None:
        from tensegrity_engine.model.payload import split_payload
        robot, _ = split_payload(sim_model, payload)
    external = None if loads is None else loads.mean(robot)
    try:
        X = settle(robot, external=external).positions
    except (ValueError, RuntimeError, ArithmeticError) as exc:          # SimulationDiverged is a RuntimeError
        return {"nodes_rms_mm": None, "frames": {}, "ratio_null_over_simulation": None,
                "loads": f"no static equilibrium ({type(exc).__name__}: {exc})"}
    size = float(np.ptp(robot.positions[:robot.n_physical], axis=0).max())
    if np.linalg.norm(X - robot.positions, axis=1).max() > size:        # nothing holds it: it fell while settling
        return {"nodes_rms_mm": None, "frames": {}, "ratio_null_over_simulation": None,
                "loads": "no static equilibrium (nothing holds the model: it falls)"}
    t = np.asarray(result.simulation.t, float)[[0, -1]]
    held = Trajectory.from_run(robot, t, np.repeat(X[None], 2, 0), np.zeros((2, robot.n_nodes, 3)),
                               np.zeros((2, len(robot.string_names))), np.zeros((2, len(robot.string_names))),
                               np.zeros((2, len(robot.actuator_names))), np.zeros((2, len(robot.bar_names))),
                               settings={"source": "static-prediction null"})
    if robot is not model and tuple(robot.node_names) != tuple(model.node_names):
        held = full_trajectory(model, robot, held)
    null = compare(result.experiment, held, model, time_offset=result.time_offset, align="none", frames=frames)
    out = {"nodes_rms_mm": null.nodes["rms_mm"], "frames": {k: v.get("position_rms_mm") for k, v in null.frames.items()},
           "loads": "time-averaged loads" if loads is not None else "gravity only"}
    sim = result.nodes["rms_mm"]
    out["ratio_null_over_simulation"] = (None if not sim or out["nodes_rms_mm"] is None
                                         else out["nodes_rms_mm"] / sim)
    return out


def measured_loads(experiment: Experiment, sim_model, payload=None, load_csv=None, time_offset: float = 0.0,
                   smoothing=None) -> tuple:
    """(the model simulated: ``sim_model`` without the payload when there is one, the combined load table
    or None) for ``--payload`` and ``--load``."""
    from tensegrity_engine.dynamics.loads import combined, load_table_from_csv
    from tensegrity_engine.errors import InputError
    robot, tables = sim_model, []
    if payload:
        robot, _, table = payload_table(experiment, sim_model, payload, time_offset, smoothing)
        tables.append(table)
    if load_csv:
        try:
            tables.append(load_table_from_csv(load_csv, robot))
        except InputError as exc:
            raise CompareError(f"--load {exc}") from None
    return robot, combined(tables, robot)


def loaded_start(experiment: Experiment, sim_model, robot, loads, initial=None, time_offset: float = 0.0):
    """``simulate``'s start for a loaded run of ``robot``: with ``initial = (k, all-node positions of
    sim_model)`` (``--initial-from-experiment``) those positions and the velocities the experiment shows
    there; else at rest at the static equilibrium under the loads at the start (t = 0)."""
    from tensegrity_engine.statics.equilibrium import settle
    if initial is None:
        return 0.0, settle(robot, external=loads.nodal(robot, 0.0)).positions
    k, X = initial
    P, V = (sim_model.from_physical(a) for a in start_state(experiment, k))
    X = np.where(np.isfinite(P), P, X)
    cols = [sim_model.node_index(nm) for nm in robot.node_names]
    return float(experiment.t[k]) + time_offset, X[cols], V[cols]


def null_line(result) -> str:
    """The printed static-prediction null next to the simulation's node RMS."""
    n = result.null
    if n["nodes_rms_mm"] is None or result.nodes["rms_mm"] is None:
        why = n["loads"] if n["loads"].startswith("no static") else "no known nodes"
        return f"static-prediction null: not compared ({why})"
    ratio = n["ratio_null_over_simulation"]
    return (f"static-prediction null (held at its static equilibrium, {n['loads']}): node RMS "
            f"{n['nodes_rms_mm']:.3f} mm; the simulation {result.nodes['rms_mm']:.3f} mm"
            + ("" if ratio is None else f": null / simulation = {ratio:.2f}"))
