"""A tip in the contact dynamics (Simulator, RK4 at :func:`check_step`): from a robot at rest, input ramps are
applied one after the other while the face it rests on is watched; once it has left that face the inputs return
to zero as :class:`.controller.RollingController` does and the run ends when the robot is still."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tensegrity_engine.dynamics.inputs import table
from tensegrity_engine.dynamics.simulator import Simulator
from tensegrity_engine.errors import ModelError
from tensegrity_engine.locomotion.bar_clearance import BarClearance
from tensegrity_engine.locomotion.support import beyond, face_of, ground_nodes, has_left, start_support
from tensegrity_engine.statics.step_accuracy import plan_substeps

CHUNK = 0.05          # s between looks at the face and the bar-bar clearance
TOUCH = 0.003         # m: gap of a node still standing (the quasi-static part of a tip ends when one lifts)
STILL = 0.05          # m/s: the fastest node is slower than this, the robot rests
SETTLE = 3.0          # s: longest wait for the robot to come to rest after its inputs are back at zero
PROBE_EVERY = 0.25    # s: the release is tried on a copy at most this often while the robot stands off its face


@dataclass(frozen=True)
class TipRun:
    """``face`` where the robot rests at the end (node names), ``t_change`` [s] when it left the start face
    (None: never), ``positions`` (n, 3) [m] at the end, ``min_tension`` [N] smallest string tension while
    every start node still touched (the quasi-static part), ``min_clearance`` [m] smallest bar-bar clearance
    (:class:`.bar_clearance.BarClearance`) every CHUNK seconds of the whole run and ``closest`` the two bars'
    names there; ``speed`` [m/s] the fastest node's speed at the end (below STILL: at rest; above: still
    rolling SETTLE seconds after the inputs were back, e.g. down a slope)."""
    face: tuple
    t_change: float | None
    positions: np.ndarray
    min_tension: float
    min_clearance: float = float("inf")
    closest: tuple = ()
    speed: float = 0.0


def check_step(model, X=None, max_substeps: int = 100) -> float:
    """The RK4 step [s] for check runs of ``model``: 1 ms split into the substeps its stiffest mode about X
    (default its file's shape) and its contacts need, as the simulator node plans them
    (:func:`~tensegrity_engine.statics.step_accuracy.plan_substeps`, at most ``max_substeps``). A 1.5 m six-bar
    with 3.5 kg bars needs one; a 0.6 m one with 0.3 kg bars five (1 ms diverges)."""
    return 1e-3 / plan_substeps(model, 1e-3, X, max_substeps=max_substeps).substeps


class TipTrial:
    """One tip tried in the dynamics from X (n, 3) [m] at rest; inputs return to zero at ``rate`` [m/s] once
    the robot has left its face (:func:`.support.has_left`)."""

    def __init__(self, model, X, rate: float, sim: Simulator | None = None):
        self.model, self.rate = model, float(rate)
        self.sim = sim or Simulator(model, integrator="rk4", dt=check_step(model, X))
        self.sim.reset(positions=X)
        self.start, self.base = face_of(model, X), set(ground_nodes(model, X).tolist())
        self.support = start_support(model, X)
        self.premature = False            # the robot stood off its face before but rocked back when released
        self.next_probe, self.releaser = -np.inf, None
        self.t_change, self.low = None, np.inf
        self.probe = None
        self.bars, self.clear, self.closest = BarClearance(model), np.inf, ()
        self.watch()

    def watch(self):
        """Note the bar-bar clearance of the trial's present shape."""
        c, a, b = self.bars.worst(self.sim.positions)
        if c < self.clear:
            self.clear, self.closest = c, (a, b)

    def off_face(self, X) -> bool:
        """True if the robot at X (n, 3) [m] has left its start face (:func:`.support.has_left`) with its centre
        of mass over an edge of it (:func:`.support.beyond`)."""
        return has_left(face_of(self.model, X), self.start) and beyond(self.model, X, self.support)

    def left(self) -> bool:
        """True if the robot has left its start face (:meth:`off_face`) and stays off it when its inputs return
        to zero now (tried on a copy, at most every PROBE_EVERY: on a slope a robot pushed far enough to stand
        on other nodes may still rock back; then ``premature`` notes that the tip must not be released earlier)."""
        sim = self.sim
        if not self.off_face(sim.positions) or sim.t < self.next_probe:
            return False
        self.next_probe = sim.t + PROBE_EVERY
        if self.releaser is None:
            self.releaser = Simulator(self.model, integrator="rk4", dt=sim.dt)
        probe = self.releaser
        probe.reset(positions=sim.positions, velocities=sim.velocities, t=sim.t)
        u_now, _ = sim.inputs(sim.t)
        try:
            self.recover(probe, u_now)
        except ModelError:     # the copy starts in mid-impact (a node deep in the ground): not a rest to release
            self.next_probe = sim.t + CHUNK      # from; the simulator's start check refuses it. Try a tick later
            return False
        if has_left(face_of(self.model, probe.positions), self.start):
            return True
        self.premature = True
        return False

    def recover(self, sim, u_now, watch: bool = False):
        """Inputs of ``sim`` from ``u_now`` back to zero at ``rate``, then until the robot is still (at most
        SETTLE seconds after); ``watch``: note the clearance on the way. Returns the fastest node's speed [m/s]
        at the end."""
        span = max(float(np.abs(u_now).max()) / self.rate, 1e-3)
        sim.set_inputs(table([sim.t, sim.t + span], [u_now, np.zeros_like(u_now)], "recover"),
                       horizon=span + SETTLE + 1.0)
        end, back = sim.t + span + SETTLE, sim.t + span
        while sim.t < end - 1e-9:
            sim.advance(CHUNK)
            if watch:
                self.watch()
            if sim.t >= back and np.abs(sim.velocities).max() < STILL:
                break
        return float(np.abs(sim.velocities).max())

    def ramp(self, u_from, u_to, duration: float, hold: float) -> bool:
        """Inputs from ``u_from`` to ``u_to`` (alpha,) [m] over ``duration`` [s], then held ``hold`` [s];
        True as soon as the robot has left its face."""
        sim = self.sim
        t0 = sim.t
        knots = ([t0, t0 + duration], [u_from, u_to]) if duration > 0 else ([t0], [u_to])
        sim.set_inputs(table(knots[0] + [t0 + duration + hold + 10.0], knots[1] + [u_to], "tip"),
                       horizon=duration + hold + 1.0)
        while sim.t < t0 + duration + hold - 1e-9 and self.t_change is None:
            sim.advance(min(CHUNK, t0 + duration + hold - sim.t))
            self.watch()
            if self.base <= set(ground_nodes(self.model, sim.positions, TOUCH).tolist()):
                self.low = min(self.low, float(sim.forces()[0].min()))
            if self.left():
                self.t_change = sim.t
        return self.t_change is not None

    def settled(self, hold: float):
        """(True if holding the present inputs ``hold`` [s] tips the robot off its face, the positions (n, 3)
        [m] after that hold), from a copy of the present state: the trial itself does not move on."""
        if self.probe is None:
            self.probe = Simulator(self.model, integrator="rk4", dt=self.sim.dt)
        sim, probe = self.sim, self.probe
        probe.reset(positions=sim.positions, velocities=sim.velocities, t=sim.t)
        u_now, _ = sim.inputs(sim.t)
        probe.set_inputs(table([sim.t, sim.t + hold + 10.0], [u_now, u_now], "hold"), horizon=hold + 1.0)
        end = sim.t + hold
        while probe.t < end - 1e-9:
            probe.advance(min(CHUNK, end - probe.t))
            if self.off_face(probe.positions):
                return True, probe.positions
            if np.abs(probe.velocities).max() < 0.1 * STILL:
                break
        return False, probe.positions

    def finish(self) -> TipRun:
        """Inputs back to zero at ``rate``, then until the robot is still (at most SETTLE seconds after)."""
        sim = self.sim
        u_now, _ = sim.inputs(sim.t)
        speed = self.recover(sim, u_now, watch=True)
        return TipRun(face_of(self.model, sim.positions), self.t_change, sim.positions, self.low, self.clear,
                      self.closest, speed)
