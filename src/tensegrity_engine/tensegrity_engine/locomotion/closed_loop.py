"""A :class:`.controller.RollingController` in closed loop with the contact dynamics (Simulator, RK4 at
:func:`.tip_run.check_step`): at each control tick it reads the simulated node positions and commands the inputs
it returns (linear from the last command over the tick, as a motor ramps). For benchmarks, tests and demos."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from tensegrity_engine.dynamics.inputs import table
from tensegrity_engine.dynamics.simulator import Simulator
from tensegrity_engine.locomotion.bar_clearance import BarClearance
from tensegrity_engine.locomotion.support import angle_between, centre_of_mass, face_of, has_left
from tensegrity_engine.locomotion.tip_run import check_step

REST = 0.3          # s: a face counts once the robot has lain on it this long (not the brief touches of a roll)


@dataclass(frozen=True)
class RollRun:
    """``times`` (T,) [s] of the control ticks; ``com`` (T, 3) [m] centre of mass there; ``faces`` the faces
    the robot rested on, in order (at least three ground nodes for REST seconds); ``status`` the controller's at
    the end; ``wall`` [s] wall-clock time of the run; ``positions`` (n, 3) [m] at the end; ``min_clearance``
    [m] the smallest bar-bar clearance at the control ticks (:class:`.bar_clearance.BarClearance`); ``stops``
    the indices into ``times`` where each face after the first was counted (the robot at rest there)."""
    times: np.ndarray
    com: np.ndarray
    faces: list
    status: dict
    wall: float
    positions: np.ndarray
    min_clearance: float = float("inf")
    stops: tuple = ()

    @property
    def faces_changed(self) -> int:
        return len(self.faces) - 1

    @property
    def displacement(self) -> np.ndarray:
        """(2,) [m] net ground-plane displacement of the centre of mass."""
        return self.com[-1, :2] - self.com[0, :2]

    @property
    def distance(self) -> float:
        return float(np.hypot(*self.displacement))

    def heading_error(self, heading: float) -> float:
        """[rad] angle between the net displacement and ``heading``."""
        d = self.displacement
        return angle_between(float(np.arctan2(d[1], d[0])), heading)


def roll(controller, X, duration: float, rate: float = 50.0, faces: int | None = None,
         until_state: tuple = ("arrived", "error"), delay: int = 0, think: float = 0.0,
         clock: float = 1.0, motor_speed: float = np.inf, mocap=None) -> RollRun:
    """Run ``controller`` on its model from X (n, 3) [m] at rest for up to ``duration`` [s] of simulated time
    with control ticks at ``rate`` [Hz]; stops early after ``faces`` face changes or in a state of
    ``until_state``. Like a robot run through ROS: ``delay`` control ticks old measurements; ``think`` [s] the
    robot runs on this long with the last command while each tip is planned (a simulator node runs in real
    time while the controller node computes; 0: the simulation waits for the planner); ``clock`` the
    controller's clock runs this many times as fast as the simulated time (a simulator behind the wall clock);
    ``motor_speed`` [m/s] the inputs follow the commands at most this fast (position-controlled motors: the
    simulator node's default 3 rad/s on a 15 mm spool is 0.045 m/s); ``mocap`` a :class:`.mocap_noise.MocapNoise`:
    the controller's measurements carry its noise, hidden nodes and latency (whole ticks, rounded up; at least
    ``delay``)."""
    m = controller.model
    sim = Simulator(m, integrator="rk4", dt=check_step(m, X))
    sim.reset(positions=X)
    dt = 1.0 / rate
    delay = delay if mocap is None else max(delay, mocap.ticks(rate))
    u = np.zeros(len(m.actuator_names))
    times, com, seen, past = [], [], [face_of(m, X)], [np.asarray(X, float)] * (delay + 1)
    candidate, since, planned, stops = seen[0], 0.0, None, []
    bars, low, busy = BarClearance(m), np.inf, -np.inf
    start = time.perf_counter()
    while sim.t < duration - 1e-9:
        Xs = sim.positions
        past = past[1:] + [Xs if mocap is None else mocap.measure(Xs)]
        times.append(sim.t)
        com.append(centre_of_mass(m, Xs))
        low = min(low, bars.min(Xs))
        face = face_of(m, Xs)
        if face != candidate:
            candidate, since = face, sim.t
        elif has_left(face, seen[-1]) and sim.t - since >= REST:
            seen.append(face)
            stops.append(len(times) - 1)
        if (faces is not None and len(seen) > faces) or controller.status["state"] in until_state:
            break
        target = u if sim.t < busy - 1e-9 else controller.update(sim.t * clock, past[0])
        if think and controller.status["state"] == "tipping" and controller.step is not planned:
            planned, busy, target = controller.step, sim.t + think, u
        target = u + np.clip(target - u, -motor_speed * dt, motor_speed * dt)
        sim.set_inputs(table([sim.t, sim.t + dt], [u, target], "controller"), horizon=2 * dt)
        u = target
        sim.advance(dt)
    return RollRun(np.array(times), np.array(com), seen, controller.status, time.perf_counter() - start,
                   sim.positions, low, tuple(stops))


def at_rest(model, X=None) -> np.ndarray:
    """(n, 3) [m] the robot at rest on its obstacles under gravity from X (default the model's shape)
    (:func:`~tensegrity_engine.statics.equilibrium.settle`)."""
    from tensegrity_engine.statics.equilibrium import settle
    return settle(model, X=model.positions if X is None else X).positions
