"""A tip in the contact dynamics: ramp the actuator inputs through waypoints from a robot at rest and watch
which face it comes to rest on (Simulator, RK4, 1 ms steps)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tensegrity_engine.dynamics.inputs import table
from tensegrity_engine.dynamics.simulator import Simulator
from tensegrity_engine.locomotion.support import face_of, ground_nodes, has_left

CHUNK = 0.05          # s between looks at the face
TOUCH = 0.003         # m: gap of a node still standing (the quasi-static part of a tip ends when one lifts)
STILL = 0.05          # m/s: the fastest node is slower than this, the robot rests


@dataclass(frozen=True)
class TipRun:
    """``face`` where the robot rests at the end (node names), ``t_change`` [s] when the ground nodes first
    differed from the start face (None: never), ``positions`` (n, 3) [m] at the end, ``min_tension`` [N]
    smallest string tension while every start node
    still touched (the quasi-static part), ``duration`` [s] simulated."""
    face: tuple
    t_change: float | None
    positions: np.ndarray
    min_tension: float
    duration: float


def run_tip(model, X, times, U, rate: float, settle_time: float = 3.0, sim: Simulator | None = None) -> TipRun:
    """Simulate from X (n, 3) at rest with inputs ``U`` (K, alpha) [m] at ``times`` (K,) [s] (held after
    the last); once the robot has left its face (:func:`.support.has_left`) the inputs return to zero at
    ``rate`` [m/s] as :class:`.controller.RollingController` does. Ends when the robot is still after that,
    or ``settle_time`` [s] after the schedule's end without a change."""
    sim = sim or Simulator(model, integrator="rk4", dt=1e-3)
    sim.reset(positions=X)
    times = np.asarray(times, float)
    sim.set_inputs(table(times, U, "tip"), horizon=float(times[-1]) + 2 * settle_time + 1.0)
    start = face_of(model, X)
    base = ground_nodes(model, X)
    t_change, low, back = None, np.inf, np.inf
    end = float(times[-1]) + settle_time
    while sim.t < end - 1e-9:
        sim.advance(CHUNK)
        if t_change is None:
            if set(ground_nodes(model, sim.positions, TOUCH)) >= set(base):
                low = min(low, float(sim.forces()[0].min()))
            if has_left(face_of(model, sim.positions), start):
                t_change = sim.t
                back = sim.t + recover(sim, rate)           # inputs back at zero then
                end = back + settle_time
        elif sim.t >= back and np.abs(sim.velocities).max() < STILL:
            break
    return TipRun(face_of(model, sim.positions), t_change, sim.positions, low, sim.t)


def recover(sim: Simulator, rate: float) -> float:
    """Ramp the simulator's inputs from their present values to zero at ``rate`` [m/s]; the ramp's length [s]."""
    u_now, _ = sim.inputs(sim.t)
    span = max(float(np.abs(u_now).max()) / rate, 1e-3)
    sim.set_inputs(table([sim.t, sim.t + span], [u_now, np.zeros_like(u_now)], "recover"), horizon=span + 10.0)
    return span
