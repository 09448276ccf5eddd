"""Actuator commands and the built-in experiment as engine input schedules (no ROS).

Motors are position controlled: a new goal is approached at ``speed_limit`` [rad/s] per motor (a
piecewise-linear schedule of u, so rest lengths and their rates stay finite). The experiment is the
manipulator paper's phase-shifted sinusoids around the current input, started at the current time.
Every command is validated first; a rejected one changes nothing and says why.
"""
from __future__ import annotations

import math

import numpy as np

from tensegrity_engine.errors import InputError
from tensegrity_engine.dynamics.inputs import angles_to_u, no_input, paper_sinusoid, table, u_to_angles


_FOREVER = 1e9   # s: check limits over the whole schedule (exact bounds, see InputSchedule.bounds)


class CommandRejected(ValueError):
    """A command that was not applied; the message says why."""


class Actuation:
    def __init__(self, model, speed_limit: float = 3.0):
        if not (speed_limit > 0 and math.isfinite(speed_limit)):
            raise ValueError(f"speed_limit must be positive [rad/s], got {speed_limit}")
        self.model = model
        self.speed_limit = float(speed_limit)
        self.names = tuple(model.actuator_names)
        self.experiment_on = False

    @property
    def n(self) -> int:
        return len(self.names)

    def hold(self, sim, t: float | None = None):
        """Hold the inputs at their current values."""
        t = sim.t if t is None else t
        u, _ = sim.inputs(t)
        sim.set_inputs(table([t], [u], description="hold"), horizon=_FOREVER)
        self.experiment_on = False

    def zero(self, sim):
        """All inputs back to zero at once (used on reset, with the state reset to the equilibrium)."""
        sim.set_inputs(no_input(self.n), horizon=_FOREVER)
        self.experiment_on = False

    def goal_angles(self, sim, indices, angles):
        """Move motors ``indices`` to ``angles`` [rad] (others keep their current goal)."""
        m = self.model
        angles = np.asarray(angles, float)
        lo, hi = m.angle_limits[indices, 0], m.angle_limits[indices, 1]
        if not np.all(np.isfinite(angles)):
            raise CommandRejected("goal angle is NaN or infinite")
        out = (angles < lo) | (angles > hi)
        if np.any(out):
            k = int(np.flatnonzero(out)[0])
            raise CommandRejected(f"goal {angles[k]:.4g} rad for '{self.names[indices[k]]}' is outside its limits "
                                  f"[{lo[k]:.4g}, {hi[k]:.4g}] rad")
        t = sim.t
        u_now, _ = sim.inputs(t)
        goal = self._goal_u(sim, t).copy()
        goal[indices] = angles_to_u(m, self._full(indices, angles, u_to_angles(m, goal)))[indices]
        self._ramp(sim, t, u_now, goal)

    def goal_displacements(self, sim, indices, u_goal):
        """Move motors ``indices`` so their strings are reeled in by ``u_goal`` [m]."""
        u_goal = np.asarray(u_goal, float)
        if not np.all(np.isfinite(u_goal)):
            raise CommandRejected("goal displacement is NaN or infinite")
        angles = u_to_angles(self.model, self._full(indices, u_goal, np.zeros(self.n)))[indices]
        self.goal_angles(sim, indices, angles)

    def experiment(self, sim, period: float, amplitudes, ramp: float = 1.0):
        """The paper's sinusoids around the current inputs from now, checked against the actuators' limits
        (raises CommandRejected)."""
        t = sim.t
        u_now, _ = sim.inputs(t)
        try:
            sched = paper_sinusoid(self.model, period=float(period), amplitudes=list(amplitudes), ramp=float(ramp),
                                   offsets=u_now, start=t)
            sched.check_limits(self.model, _FOREVER)
        except (InputError, TypeError) as exc:
            raise CommandRejected(f"experiment not started: {exc}") from None
        return sched

    def start_experiment(self, sim, period: float, amplitudes, ramp: float = 1.0):
        """The paper's sinusoids around the current inputs, starting now (raises CommandRejected)."""
        sim.set_inputs(self.experiment(sim, period, amplitudes, ramp), horizon=_FOREVER)
        self.experiment_on = True

    def stop_experiment(self, sim):
        self.hold(sim)

    # --- internals ---------------------------------------------------------------------------------
    def _full(self, indices, values, base):
        v = np.array(base, float)
        v[indices] = values
        return v

    def _goal_u(self, sim, t):
        """The current goal: the end of a ramp table, else the current value."""
        p = sim.inputs.params
        if p.mode == 2 and not self.experiment_on:
            return np.array(p.tab_u[-1])
        u, _ = sim.inputs(t)
        return u

    def _ramp(self, sim, t, u_now, goal):
        m = self.model
        speed_u = self.speed_limit * m.spool_radius          # m/s per actuator
        T = np.abs(goal - u_now) / speed_u                    # s per actuator
        knots = np.unique(np.concatenate([[t], t + T[T > 0]]))
        if len(knots) == 1:
            knots = np.array([t, t + 1e-3])
        frac = np.ones((len(knots), self.n))
        moving = T > 0
        frac[:, moving] = np.clip((knots[:, None] - t) / T[moving], 0.0, 1.0)
        values = u_now + frac * (goal - u_now)
        try:
            sim.set_inputs(table(knots, values, description="motor goals"), horizon=_FOREVER)
        except InputError as exc:
            raise CommandRejected(str(exc)) from None
        self.experiment_on = False
