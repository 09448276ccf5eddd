"""``RollingController``: the state machine that rolls a robot face to face toward a heading or a goal point
from measured node positions (pure Python; a ROS node wraps it). States: 'idle' (inputs back at zero,
waiting for a command), 'tipping' (playing a planned :class:`.planner.TipStep`), 'recovering' (inputs ramped
back to zero on the new face, waiting for the robot to rest), 'arrived' (goal reached), 'error' (the planner
cannot tip the robot toward the command: ``status['message']`` says why)."""
from __future__ import annotations

import numpy as np

from tensegrity_engine.locomotion.planner import CannotRoll, GaitPlanner
from tensegrity_engine.locomotion.support import centre_of_mass, face_of, has_left


class RollingController:
    """Rolls ``model`` with the ``actuators`` allowed (default all). Tuning: ``rate`` [m/s] input speed of
    the ramps (default the planner's); ``still`` [m/s] fastest node speed of a robot at rest; ``lookahead``
    [m] distance along the commanded line the robot steers to (it corrects sideways drift of the zig-zag;
    default 0.4 mean bar lengths, about one tip); ``timeout`` [s] a tip that has not left its face this long
    after its last waypoint is given up and replanned; ``rest`` [s] how long new measurements must show the robot
    still before the next tip is planned (repeated measurements do not count: through a network the same
    positions may arrive twice); the rest goes to :class:`.planner.GaitPlanner`."""

    def __init__(self, model, actuators=None, rate: float | None = None, still: float = 0.05,
                 lookahead: float | None = None, timeout: float = 4.0, rest: float = 0.2, **tuning):
        self.model = model
        self.planner = GaitPlanner(model, actuators, rate=rate, **tuning)
        self.rate = self.planner.rate
        size = float(np.mean(model.bar_length)) if len(model.bar_length) else 1.0
        self.lookahead = 0.4 * size if lookahead is None else float(lookahead)
        self.still, self.timeout, self.rest = float(still), float(timeout), float(rest)
        self.heading = None
        self.goal, self.tolerance, self.origin = None, 0.2, None
        self.state, self.face, self.faces_changed, self.message = "idle", (), 0, ""
        self.detours = 0                         # tips over an edge outside the window (none in it tipped)
        self.u = np.zeros(len(model.actuator_names))
        self.step = None
        self.t0, self.ramp_from = 0.0, self.u.copy()
        self.last_t, self.last_X = None, None
        self.quiet_since = None                  # s: since when every node has moved slower than ``still``

    # --- commands ------------------------------------------------------------------------------
    def set_heading(self, heading: float | None):
        """Roll toward world ``heading`` [rad] (0 = +x, counter-clockwise); None: finish the tip, then hold."""
        self.goal = None
        self.heading = None if heading is None else float(heading)
        self.origin = None                       # the commanded line starts where the robot is now
        if self.state in ("arrived", "error"):
            self.state = "idle"

    def recover_from(self, u, t: float) -> None:
        """Ramp from the inputs u (alpha,) [m] (e.g. held through a safety stop) back to neutral from time
        t [s], before the next tip is planned."""
        self.state, self.t0, self.ramp_from, self.step = "recovering", float(t), np.array(u, float), None

    def set_goal(self, xy, tolerance: float = 0.2):
        """Roll toward the point ``xy`` (2,) [m] in the world xy-plane; within ``tolerance`` [m] it stops ('arrived'),
        also when the next tip would end no closer (the tolerance is finer than a tip; the message says)."""
        self.heading = None
        self.goal = None if xy is None else np.asarray(xy, float).reshape(2)
        self.tolerance = float(tolerance)
        if self.state in ("arrived", "error"):
            self.state = "idle"

    @property
    def status(self) -> dict:
        return {"state": self.state, "face": self.face, "faces_changed": self.faces_changed, "message": self.message,
                "detours": self.detours}

    # --- the loop ------------------------------------------------------------------------------
    def update(self, t: float, X) -> np.ndarray:
        """The inputs u (alpha,) [m] to command at time ``t`` [s] given node positions X (n, 3) [m] (NaN rows:
        unseen nodes, taken from the last measurement; until one measurement shows every node, nothing
        moves)."""
        X = self.fill(X)
        if X is None:
            self.message = "waiting for a measurement that shows every node"
            return self.u.copy()
        if self.last_X is None or np.any(X != self.last_X):     # a new measurement (not the last one again)
            speed = 0.0 if self.last_t is None or t <= self.last_t else \
                float(np.abs(X - self.last_X).max()) / (t - self.last_t)
            quiet = speed < self.still
            self.quiet_since = (t if self.quiet_since is None else self.quiet_since) if quiet else None
            self.last_t, self.last_X = t, X
        self.face = face_of(self.model, X)
        if self.state == "tipping":
            self.u = self.play(t, X)
        elif self.state in ("recovering", "idle", "arrived", "error"):
            self.u = self.ramp_to_zero(t)
            if not np.any(self.u) and self.at_rest(t) and self.state in ("recovering", "idle"):
                self.next_step(t, X)
        return self.u.copy()

    def at_rest(self, t) -> bool:
        """True once the measurements have shown the robot still for ``rest`` [s] on a face of three or more
        ground nodes (a robot on two is still rolling over its edge; after ten times as long it counts too)."""
        quiet = -np.inf if self.quiet_since is None else t - self.quiet_since
        return quiet >= (self.rest if len(self.face) >= 3 else 10.0 * self.rest)

    def fill(self, X):
        """X (n, 3) with unseen (NaN) rows from the last measurement; None before a complete one."""
        X = np.array(X, float)
        if X.shape != (self.model.n_nodes, 3):
            raise ValueError(f"update needs ({self.model.n_nodes}, 3) node positions [m] (model.from_physical for "
                             f"physical nodes only), got {X.shape}")
        seen = np.all(np.isfinite(X), axis=1)
        if not seen.all():
            if self.last_X is None:
                return None
            X[~seen] = self.last_X[~seen]
        return X

    def play(self, t, X) -> np.ndarray:
        """The tip's inputs at t; on leaving the face (or after the timeout) the recovering ramp starts."""
        s = self.step
        self.t0 = t if self.t0 is None else self.t0
        u = waypoint_inputs(s.times, s.u, t - self.t0)
        left = has_left(self.face, s.face_from)
        if left or t - self.t0 > s.times[-1] + self.timeout:
            self.faces_changed += int(left)
            self.message = (f"tipped from {s.face_from} to {self.face}" if left else
                            f"tip from {s.face_from} timed out; replanning over another edge")
            if not left:
                self.planner.reject(s, f"the planned tip did not leave the face within {self.timeout:.1f} s "
                                       "after its last waypoint on the robot")
            self.state, self.t0, self.ramp_from = "recovering", t, u
        return u

    def ramp_to_zero(self, t) -> np.ndarray:
        span = float(np.abs(self.ramp_from).max()) / self.rate
        return self.ramp_from * max(0.0, 1.0 - (t - self.t0) / span) if span > 0 else np.zeros_like(self.u)

    def next_step(self, t, X):
        """At rest with the inputs at zero: plan the next tip toward the command, or stop."""
        direction = self.direction(X)
        if direction is None:
            self.state = "arrived" if self.state == "arrived" else "idle"
            return
        detour = ""
        try:
            self.step = self.planner.plan_step(X, direction)
        except CannotRoll:
            try:                                 # no edge toward the command tips: any other edge, nearest first
                self.step = self.planner.plan_step(X, direction, max_angle=np.pi)
            except CannotRoll as none:
                self.state, self.message = "error", str(none)    # every edge's reason, the window's too
                return
            detour = f" (detour: no edge within {np.degrees(self.planner.max_angle):.0f}° of the command tips)"
            self.detours += 1
        if self.goal is not None and self.overshoots(X):
            return
        self.state, self.t0 = "tipping", None    # the tip starts at the next update: planning may take a while
        self.message = f"tipping from {self.step.face_from} toward {np.degrees(self.step.direction):.0f}°" + detour

    def overshoots(self, X) -> bool:
        """In goal mode: True (and 'arrived') if the planned tip would end no closer to the goal than now (the
        goal lies within a tip of this face, finer than a tip can place the robot)."""
        c = centre_of_mass(self.model, X)[:2]
        s = self.step
        after = c + s.travel * np.array([np.cos(s.direction), np.sin(s.direction)])
        now, then = float(np.hypot(*(self.goal - c))), float(np.hypot(*(self.goal - after)))
        if then < now:
            return False
        self.arrive(f"stopped {now:.2f} m from the goal: the next tip would end {then:.2f} m from it (a tip moves "
                    f"the robot {s.travel:.2f} m, more than the tolerance {self.tolerance:.2f} m allows)")
        return True

    def arrive(self, message: str):
        self.goal, self.step, self.state, self.message = None, None, "arrived", message

    def direction(self, X):
        """The heading [rad] to tip toward now, or None (no command, or the goal reached)."""
        c = centre_of_mass(self.model, X)[:2]
        if self.goal is not None:
            d = self.goal - c
            dist = float(np.hypot(*d))
            if dist <= self.tolerance:
                return self.arrive(f"arrived within {dist:.2f} m of the goal")
            return float(np.arctan2(d[1], d[0]))
        if self.heading is None:
            return None
        if self.origin is None:
            self.origin = c
        h = np.array([np.cos(self.heading), np.sin(self.heading)])
        ahead = self.origin + (h @ (c - self.origin) + self.lookahead) * h
        d = ahead - c
        return float(np.arctan2(d[1], d[0]))


def waypoint_inputs(times, U, t: float) -> np.ndarray:
    """Inputs (alpha,) [m] at ``t`` [s] on waypoints ``U`` (K, alpha) at ``times`` (K,): linear in between,
    the first before and the last after them."""
    k = int(np.clip(np.searchsorted(times, t, side="right") - 1, 0, len(times) - 1))
    if k == len(times) - 1:
        return U[k].copy()
    w = max(0.0, (t - times[k]) / (times[k + 1] - times[k]))
    return U[k] + w * (U[k + 1] - U[k])
