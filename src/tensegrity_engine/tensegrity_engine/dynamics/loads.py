"""Measured external loads over time: forces [N] on nodes, a time table interpolated linearly (held outside
its span), as an input to a simulation next to the actuators' schedule.

* :func:`load_table_from_csv`: a CSV ``t,<node>.fx,<node>.fy,<node>.fz,...`` (t in s, forces in N, the model's
  world frame);
* :func:`payload_loads`: the force a hung payload puts on the robot, from its captured positions: the cable is
  the only thing besides gravity that acts on a point mass, so it pulls the robot with ``m (g - a)``, ``a``
  the payload's acceleration (Savitzky-Golay second derivative of the positions). Exact whatever the cable's
  stiffness or damping; the prescribed payload moves as captured;
* :func:`captured_payload`: the model without its payload and that force from the payload's captured track
  (``tensegrity-compare --payload``, identify's ``payload:``);
* :func:`run_loaded`: a :class:`~tensegrity_engine.dynamics.simulator.Simulator` run under a table: between
  consecutive knots of the table and output times the force is held at its value at the interval's midpoint
  (the midpoint rule: the impulse over each interval is exact to O(h^3) for a smooth load).
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tensegrity_engine.errors import InputError

SMOOTHING = 0.1          # s, default Savitzky-Golay window of payload_loads (cubic): 1/7 of a 1.5 Hz swing


@dataclass(frozen=True)
class LoadTable:
    """Forces ``forces`` (K, k, 3) [N] on ``nodes`` (k names) at increasing times ``t`` (K,) [s]."""
    t: np.ndarray
    nodes: tuple
    forces: np.ndarray
    description: str = "load table"

    def __post_init__(self):
        t, F = np.asarray(self.t, float), np.asarray(self.forces, float)
        if t.ndim != 1 or len(t) < 1 or F.shape != (len(t), len(self.nodes), 3):
            raise InputError(f"{self.description}: forces must be (times, nodes, 3) = ({len(t)}, {len(self.nodes)}, "
                             f"3), got {F.shape}")
        if not (np.all(np.isfinite(t)) and np.all(np.isfinite(F))):
            raise InputError(f"{self.description}: times and forces must be finite numbers (no NaN)")
        if np.any(np.diff(t) <= 0):
            raise InputError(f"{self.description}: times must increase strictly")

    def at(self, t: float) -> np.ndarray:
        """(k, 3) forces [N] at time ``t`` [s] (linear between knots, held outside)."""
        t_ = np.asarray(self.t, float)
        if len(t_) == 1 or t <= t_[0]:
            return np.asarray(self.forces[0], float)
        if t >= t_[-1]:
            return np.asarray(self.forces[-1], float)
        i = int(np.searchsorted(t_, t, side="right")) - 1
        w = (t - t_[i]) / (t_[i + 1] - t_[i])
        return (1 - w) * self.forces[i] + w * self.forces[i + 1]

    def nodal(self, model, t: float) -> np.ndarray:
        """(n, 3) forces [N] on every node of ``model`` at ``t`` (zero off the table's nodes)."""
        out = np.zeros((model.n_nodes, 3))
        np.add.at(out, [model.node_index(n) for n in self.nodes], self.at(t))
        return out

    def mean(self, model) -> np.ndarray:
        """(n, 3) time-averaged forces [N] over the table's span (trapezoidal; the static load)."""
        t = np.asarray(self.t, float)
        F = np.asarray(self.forces, float)
        avg = F[0] if len(t) == 1 else np.trapezoid(F, t, axis=0) / (t[-1] - t[0])
        out = np.zeros((model.n_nodes, 3))
        np.add.at(out, [model.node_index(n) for n in self.nodes], avg)
        return out


def check_nodes(table: LoadTable, model) -> None:
    """InputError unless every node of ``table`` is a physical node of ``model``."""
    names = model.node_names[:model.n_physical]
    bad = [n for n in table.nodes if n not in names]
    if bad:
        raise InputError(f"{table.description}: model '{model.name}' has no node(s) {', '.join(bad)}; "
                         f"name its nodes ({', '.join(names[:8])}{' ...' if len(names) > 8 else ''})")


def load_table_from_csv(path, model) -> LoadTable:
    """A load table from a CSV with a header ``t,<node>.fx,<node>.fy,<node>.fz,...`` (every node with its three
    components); InputError naming the file, the column and the fix."""
    path = Path(path)
    try:
        with path.open(newline="") as fh:
            rows = list(csv.reader(fh))
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if len(rows) < 2 or not rows[0] or rows[0][0].strip() != "t":
        raise InputError(f"{path}: expected a header 't,<node>.fx,<node>.fy,<node>.fz,...' and at least one row")
    head = [h.strip() for h in rows[0][1:]]
    nodes = []
    for h in head:
        node, _, comp = h.rpartition(".")
        if comp not in ("fx", "fy", "fz") or not node:
            raise InputError(f"{path}: column {h!r} is not '<node>.fx', '.fy' or '.fz' (forces in N)")
        if node not in nodes:
            nodes.append(node)
    want = [f"{n}.{c}" for n in nodes for c in ("fx", "fy", "fz")]
    if sorted(head) != sorted(want):
        raise InputError(f"{path}: give each node's three columns once ({', '.join(want)}), got {', '.join(head)}")
    try:
        data = np.array([[float(v) for v in r] for r in rows[1:] if r], float)
    except ValueError as exc:
        raise InputError(f"{path}: a value is not a number ({exc})") from None
    if data.shape[1] != len(head) + 1:
        raise InputError(f"{path}: every row needs {len(head) + 1} values")
    cols = [head.index(w) + 1 for w in want]
    table = LoadTable(data[:, 0], tuple(nodes), data[:, cols].reshape(len(data), len(nodes), 3),
                      description=f"{path.name} (forces on {', '.join(nodes)})")
    check_nodes(table, model)
    return table


def payload_loads(t, positions, mass: float, node: str, gravity, smoothing: float = SMOOTHING) -> LoadTable:
    """The force ``m (g - a)`` [N] a hung payload of ``mass`` [kg] puts on ``node`` at the capture times ``t``
    (K,) [s], from its captured positions (K, 3) [m] (NaN: unseen, interpolated); ``a`` by a cubic
    Savitzky-Golay filter over ``smoothing`` [s]."""
    from scipy.signal import savgol_filter
    t = np.asarray(t, float)
    P = np.asarray(positions, float)
    seen = np.isfinite(P).all(axis=1)
    if seen.sum() < 8:
        raise InputError(f"payload '{node}': seen in {int(seen.sum())} frames; at least 8 are needed")
    dt = float(np.median(np.diff(t)))
    grid = np.arange(t[0], t[-1] + 0.5 * dt, dt)                     # a uniform grid for the filter
    Pg = np.stack([np.interp(grid, t[seen], P[seen, k]) for k in range(3)], axis=1)
    win = max(5, int(round(smoothing / dt)) | 1)
    if win > len(grid):
        raise InputError(f"payload '{node}': the capture ({len(grid)} frames) is shorter than the smoothing "
                         f"window ({win} frames, {smoothing:g} s); give a longer capture or a smaller smoothing")
    a = savgol_filter(Pg, win, 3, deriv=2, delta=dt, axis=0, mode="interp")
    F = mass * (np.asarray(gravity, float)[None] - a)
    return LoadTable(grid, (node,), F[:, None, :], description=f"payload on {node} ({mass:g} kg, captured)")


def captured_payload(model, node: str, t, nodes, smoothing=None) -> tuple:
    """(``model`` without its payload at ``node`` and the cable, the
    :class:`~tensegrity_engine.model.payload.Payload`, the table of the force ``m (g - a)`` on its hook from the
    payload's captured track ``nodes[:, k]`` of the physical nodes ``nodes`` (T, mu, 3) [m] at ``t`` (T,) [s]).
    ModelError when ``node`` is no payload of ``model``, InputError when the track is too short."""
    from tensegrity_engine.model.payload import split_payload
    robot, p = split_payload(model, node)
    track = np.asarray(nodes, float)[:, model.node_index(node)]
    table = payload_loads(t, track, p.mass, p.hang, model.gravity, SMOOTHING if smoothing is None else smoothing)
    return robot, p, table


def combined(tables, model) -> LoadTable | None:
    """One table with every node of ``tables`` on the union of their times (None when there is none)."""
    tables = [tb for tb in tables if tb is not None]
    if not tables:
        return None
    t = np.unique(np.concatenate([np.asarray(tb.t, float) for tb in tables]))
    nodes = tuple(dict.fromkeys(n for tb in tables for n in tb.nodes))
    F = np.zeros((len(t), len(nodes), 3))
    for tb in tables:
        cols = [nodes.index(n) for n in tb.nodes]
        for k, tk in enumerate(t):
            F[k, cols] += tb.at(tk)
    return LoadTable(t, nodes, F, description=" + ".join(tb.description for tb in tables))


def run_loaded(sim, duration: float, loads: LoadTable, inputs=None, rate: float = 100.0):
    """``sim.run`` under the time-varying ``loads`` (module docstring): a Trajectory sampled at ``rate`` [Hz]
    from the current time for ``duration`` [s]. The simulator's constant external forces are added."""
    from tensegrity_engine.dynamics.trajectory import Trajectory
    if not (math.isfinite(duration) and duration > 0 and math.isfinite(rate) and rate > 0):
        raise ValueError(f"duration and rate must be positive, got {duration}, {rate}")
    check_nodes(loads, sim.model)
    if inputs is not None:
        sim.set_inputs(inputs, horizon=duration)
    t0, base = sim.t, sim.external_forces.copy()
    t_out = t0 + np.arange(int(round(duration * rate)) + 1) / rate
    knots = np.asarray(loads.t, float)
    knots = knots[(knots > t_out[0]) & (knots < t_out[-1])]
    ends = np.union1d(t_out[1:], knots)
    recorded = np.isin(ends, t_out[1:])
    sim.external_forces[:] = base + loads.nodal(sim.model, t0)
    parts = [[a[None] for a in sim._sample_now()]]
    try:
        start = t0
        for end, keep in zip(ends, recorded):
            sim.external_forces[:] = base + loads.nodal(sim.model, 0.5 * (start + end))
            out = sim._integrate(np.array([end]))
            if keep:
                parts.append(out)
            start = end
    finally:
        sim.external_forces[:] = base
    cat = [np.concatenate([p[i] for p in parts]) for i in range(6)]
    settings = dict(sim.settings(), loads=loads.description)
    return Trajectory.from_run(sim.model, t_out, *cat, inputs_description=sim.inputs.description,
                               settings=settings)
