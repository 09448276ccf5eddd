"""``RollingController``: the state machine that rolls a robot face to face toward a heading or a goal point
from measured node positions (pure Python; a ROS node wraps it). States: 'idle' (inputs back at zero,
waiting for a command), 'tipping' (playing a planned :class:`.planner.TipStep`), 'recovering' (inputs ramped
back to zero on the new face, waiting for the robot to rest), 'arrived' (within the goal's tolerance),
'stopped' (a goal it cannot get nearer to: the goal lies within a tip, finer than the tips can place the
robot), 'error' (it cannot roll on: no workable tip, no progress toward the goal, an engine failure). With
'stopped' and 'error', ``status['message']`` says why and ``status['reason']`` names it (see REASONS)."""
from __future__ import annotations

import math

import numpy as np

from tensegrity_engine.locomotion.dynamic_gait import gait_for
from tensegrity_engine.locomotion.goal_search import BEAM, DEPTH, SLACK, fewest_tips, next_route
from tensegrity_engine.locomotion.planner import CannotRoll, GaitPlanner
from tensegrity_engine.locomotion.steering import RELINE, best_first, dwell_for, follow
from tensegrity_engine.locomotion.support import (angle_between, beyond, centre_of_mass, face_of, has_left,
                                                  level_ground, start_support)

REASONS = {"arrived": "within the goal's tolerance", "nearest_face": "no resting place in reach comes nearer the "
           "goal (it lies within a tip)", "no_face_toward_goal": "no workable tip from this face", "tip_timed_out":
           "the planned tips timed out on the robot", "blocked": "no progress toward the goal", "engine_failed":
           "an engine error"}
NEARER = 0.05           # m: a route must end this much nearer the goal to count as progress
UNEVEN_STILL = 0.01     # m/s: on ground that is not a level floor the robot is at rest below this node speed
UNEVEN_REST = 1.0       # s: ... for this long (a tip planned from rest but started while the robot still rocked
#                         went astray on a 15° slope and rolled it 250 m down; at these it climbed 6 faces)
UNEVEN_BEAM = 3         # resting places kept per tip of a route off a level floor (each is planned afresh)
PATIENCE = 6            # tips without a new best distance to the goal before the robot counts as blocked
HALTED = ("arrived", "stopped", "error")     # states that end a command (a new one starts again)
WINDOW = math.radians(100.0)    # rad: heading mode weighs every tip within this of the aim (cost decides)
MIN_PROGRESS = 0.4      # of the tips' travel: the progress along the line a heading's tip sequence must make.
#                         Tips zig-zag up to 60° off the line (cos 60° = 0.5); with 12 motors they roll on
#                         farther than they progress, and at 0.5 a sequence 0.22 m from the line was passed
#                         over for missing it by 1 cm, for one that went 0.84 m aside
NOISE_SIGMAS = 3.0      # a node counts as still within this many standard deviations of the difference of two
#                         noisy measurements (``noise``) of where it was when the quiet began, plus still x rest


class RollingController:
    """Rolls ``model`` with the ``actuators`` allowed (default all). Tuning: ``rate`` [m/s] input speed of
    the ramps (default the planner's: the motors' speed); ``still`` [m/s] fastest node speed of a robot at
    rest; ``lookahead`` [m] how far ahead on the commanded line the tips aim (the tip ending nearest that point
    is taken, which corrects sideways drift at every face; default 0.4 mean bar lengths, about one tip);
    ``timeout`` [s] a tip that has not left its face this long after its last waypoint is tried again, then
    given up for that face (planner ATTEMPTS); ``rest`` [s] how long new measurements must show the robot still
    before the next tip is planned (repeated measurements do not count: through a network the same positions
    may arrive twice; on ground that is not a level floor ``still`` is at most UNEVEN_STILL and ``rest`` at least
    UNEVEN_REST); ``noise`` [m] the standard deviation of the measured coordinates (motion capture: about
    0.002): above 0, the robot is still while every node stays within ``still`` x ``rest`` + NOISE_SIGMAS x
    sqrt(2) x ``noise`` of where it was when the quiet began (speeds differenced from noisy positions 20 ms
    apart never fall below ``still``); ``gait`` "quasi_static" (each tip from rest with the inputs at zero) or
    "dynamic" (:mod:`.dynamic_gait`: tips optimised in the dynamics, each chained from where the last landed);
    the rest goes to :class:`.planner.GaitPlanner`."""

    def __init__(self, model, actuators=None, rate: float | None = None, still: float = 0.05,
                 lookahead: float | None = None, timeout: float = 4.0, rest: float = 0.2, horizon: int = 3,
                 noise: float = 0.0, gait: str = "quasi_static", **tuning):
        self.model = model
        self.planner = GaitPlanner(model, actuators, rate=rate, **tuning)
        self.gait = gait_for(gait, self)
        self.rate = self.planner.rate
        size = float(np.mean(model.bar_length)) if len(model.bar_length) else 1.0
        self.lookahead = 0.4 * size if lookahead is None else float(lookahead)
        self.still, self.timeout, self.rest, self.horizon = float(still), float(timeout), float(rest), int(horizon)
        if not level_ground(model):              # slopes, steps: the planned tips start from a robot truly at rest
            self.still, self.rest = min(self.still, UNEVEN_STILL), max(self.rest, UNEVEN_REST)
        self.window = float(tuning.get("max_angle", WINDOW))    # rad: the tips weighed (planner max_angle if given)
        self.heading, self.speed, self.line = None, None, None
        self.goal, self.tolerance, self.best, self.stale = None, 0.2, math.inf, 0
        self.route = None                        # goal mode: the route (goal_search.Route) the last tip began
        self.state, self.face, self.faces_changed, self.message, self.reason = "idle", (), 0, "", ""
        self.came_from = ()                      # the face the last tip left (heading mode: not tipped back to)
        self.detours = 0                         # tips over an edge outside the window (none in it tipped)
        self.dwell, self.fastest = 0.0, math.nan  # s: extra rest per face for the commanded speed; m/s without
        self.u = np.zeros(len(model.actuator_names))
        self.step = None
        self.support = ()                        # the support polygon's edges where the tip started
        self.t0, self.ramp_from = 0.0, self.u.copy()
        self.last_t, self.last_X = None, None
        self.quiet_since = None                  # s: since when every node has moved slower than ``still``
        self.noise, self.quiet_at = float(noise), None    # m; (n, 3) [m] where the nodes were when quiet began

    # --- commands ------------------------------------------------------------------------------
    def set_heading(self, heading: float | None, speed: float | None = None):
        """Roll toward world ``heading`` [rad] (0 = +x, counter-clockwise) at ``speed`` [m/s] (None: as fast as
        the motors allow); None: finish the tip, then hold. The commanded line is kept while the heading stays
        within :data:`.steering.RELINE` of it (:func:`.steering.follow`)."""
        self.goal = None
        if heading is None or self.heading is None or angle_between(heading, self.heading) > RELINE:
            self.came_from = ()                  # a new line: the way back may be the way now
        self.heading = None if heading is None else float(heading)
        self.speed = None if speed is None else float(speed)
        if heading is None:
            self.line = None
        self.restart()

    def set_goal(self, xy, tolerance: float = 0.2, speed: float | None = None):
        """Roll toward the point ``xy`` (2,) [m] in the world xy-plane at ``speed`` [m/s] (None: the motors'
        fastest); 'arrived' within ``tolerance`` [m], 'stopped' (with the distance) where no tip ends nearer."""
        self.heading, self.line, self.speed = None, None, None if speed is None else float(speed)
        self.goal = None if xy is None else np.asarray(xy, float).reshape(2)
        self.tolerance, self.best, self.stale, self.route = float(tolerance), math.inf, 0, None
        self.planner.forgive()
        self.restart()

    def restart(self):
        if self.state in HALTED:
            self.state, self.reason = "idle", ""

    def recover_from(self, u, t: float) -> None:
        """Ramp from the inputs u (alpha,) [m] (e.g. held through a safety stop) back to neutral from time
        t [s], before the next tip is planned."""
        self.state, self.t0, self.ramp_from, self.step = "recovering", float(t), np.array(u, float), None

    @property
    def status(self) -> dict:
        return {"state": self.state, "face": self.face, "faces_changed": self.faces_changed, "message": self.message,
                "detours": self.detours, "reason": self.reason, "speed_limit": self.fastest,
                "speed_capped": self.speed_capped}

    @property
    def speed_capped(self) -> bool:
        """True while the commanded speed is above what the motors let the gait reach."""
        return self.speed is not None and self.speed > self.fastest

    # --- the loop ------------------------------------------------------------------------------
    def update(self, t: float, X) -> np.ndarray:
        """The inputs u (alpha,) [m] to command at time ``t`` [s] given node positions X (n, 3) [m] (NaN rows:
        unseen nodes, taken from the last measurement; until one measurement shows every node, nothing
        moves). An engine failure while planning ends in 'error' (reason 'engine_failed'), never raises."""
        X = self.fill(X)
        if X is None:
            self.message = "waiting for a measurement that shows every node"
            return self.u.copy()
        self.note_motion(t, X)
        self.face = face_of(self.model, X)
        if self.state == "tipping":
            self.u = self.play(t, X)
            if self.gait is not None and self.state == "recovering":
                self.gait.chain(self, X)         # dynamic gait: the next tip starts from the landing
        else:
            self.u = self.ramp_to_zero(t)
            if not np.any(self.u) and self.at_rest(t) and self.state in ("recovering", "idle"):
                try:
                    self.next_step(X)
                except Exception as exc:         # noqa: BLE001 - an engine failure stops the gait, reported
                    self.halt("error", "engine_failed", f"planning failed in the engine: {type(exc).__name__}: {exc}")
        return self.u.copy()

    def note_motion(self, t, X):
        """Track since when the robot has been still (only new measurements count)."""
        if self.noise > 0:
            return self.note_noisy_motion(t, X)
        if self.last_X is None or np.any(X != self.last_X):
            speed = 0.0 if self.last_t is None or t <= self.last_t else \
                float(np.abs(X - self.last_X).max()) / (t - self.last_t)
            quiet = speed < self.still
            self.quiet_since = (t if self.quiet_since is None else self.quiet_since) if quiet else None
            self.last_t, self.last_X = t, X

    def note_noisy_motion(self, t, X):
        """``note_motion`` for noisy measurements: quiet while every node stays near where the quiet began."""
        reach = self.still * self.rest + NOISE_SIGMAS * math.sqrt(2.0) * self.noise
        if self.quiet_at is None or np.linalg.norm(X - self.quiet_at, axis=1).max() > reach:
            self.quiet_at, self.quiet_since = X, t
        self.last_t, self.last_X = t, X

    def at_rest(self, t) -> bool:
        """True once the measurements have shown the robot still for ``rest`` [s] on a face of three or more
        ground nodes (a robot on two is still rolling over its edge; after ten times as long it counts too)."""
        quiet = -np.inf if self.quiet_since is None else t - self.quiet_since
        return quiet >= (self.rest + self.dwell if len(self.face) >= 3 else 10.0 * self.rest)

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
        """The tip's inputs at t; on leaving the face (over an edge, not before the step's ``release``) the
        recovering ramp starts; after the timeout too, and the tip is tried again or given up (planner
        ATTEMPTS)."""
        s = self.step
        self.t0 = t if self.t0 is None else self.t0
        u = waypoint_inputs(s.times, s.u, t - self.t0)
        left = (has_left(self.face, s.face_from) and t - self.t0 >= s.release
                and beyond(self.model, X, self.support))
        if left or t - self.t0 > s.times[-1] + self.timeout:
            self.faces_changed += int(left)
            self.came_from = s.face_from if left else self.came_from
            self.message = f"tipped from {s.face_from} to {self.face}"
            if not left:
                if self.gait is not None:
                    self.gait.timed_out(s)       # the dynamic gait plays this tip quasi-statically from now on
                again = self.planner.reject(s, f"the planned tip did not leave the face within {self.timeout:.1f} s "
                                               "after its last waypoint on the robot")
                self.message = (f"tip from {s.face_from} timed out; " +
                                ("trying it again" if again else "giving this edge up, replanning"))
            self.state, self.t0, self.ramp_from = "recovering", t, u
        return u

    def ramp_to_zero(self, t) -> np.ndarray:
        span = float(np.abs(self.ramp_from).max()) / self.rate
        return self.ramp_from * max(0.0, 1.0 - (t - self.t0) / span) if span > 0 else np.zeros_like(self.u)

    def next_step(self, X):
        """At rest with the inputs at zero: choose and start the next tip toward the command, or stop."""
        c = centre_of_mass(self.model, X)[:2]
        target = self.target(c)
        if target is None:
            self.state = self.state if self.state in HALTED else "idle"
            return
        direction = math.atan2(*(target - c)[::-1]) if np.any(target != c) else self.heading or 0.0
        if self.goal is not None:
            return self.toward_goal(X, c, direction)
        step, why = self.pick(X, direction, c, target, detour=False)
        detour = ""
        if step is None and self.state not in HALTED:   # nothing toward the command: any other edge
            step, why = self.pick(X, direction, c, target, detour=True)
            if step is None and self.state not in HALTED:
                self.halt("error", "tip_timed_out" if self.planner.gave_up(self.face) else "no_face_toward_goal", why)
            detour = f" (detour: no edge within {np.degrees(self.window):.0f}° of the command tips)"
            self.detours += int(step is not None)
        if step is not None and self.state not in HALTED:
            self.support = start_support(self.model, X)
            self.start(step, detour)

    def pick(self, X, direction: float, c, target, detour: bool) -> tuple:
        """(the tip to take or None, why none): among the workable tips over edges within the window of
        ``direction`` [rad] (``detour``: any edge), the first of the best sequence of ``horizon`` tips."""
        try:
            options = self.planner.plan_options(X, direction, np.pi if detour else self.window)
        except CannotRoll as none:
            return None, str(none)
        sequences = [seq for s in options for seq in self.sequences(s, c, self.horizon)]
        least = MIN_PROGRESS * self.horizon * np.median([s.travel for s in options])
        return best_first(self.line, c, sequences, least, self.came_from), ""

    def toward_goal(self, X, c, direction: float):
        """Goal mode: the first tip of the route over every edge of every face to the resting place nearest the
        goal (:func:`.goal_search.next_route`: the fewest tips to one within the tolerance; the rest of the route
        taken before unless a better one is found), if it ends there or
        NEARER nearer than now; else 'stopped' where the goal lies within a tip, 'error' otherwise. A first tip more
        than the window off the goal's ``direction`` [rad] counts as a detour."""
        try:
            first = self.planner.plan_options(X, direction, np.pi)
        except CannotRoll as none:
            return self.halt("error", "tip_timed_out" if self.planner.gave_up(self.face) else "no_face_toward_goal",
                             str(none))
        now = float(np.hypot(*(self.goal - c)))
        fewest = fewest_tips(now, float(np.median([s.travel for s in first])))
        # off a level floor plans hold only where they were made (planner.POSE): routes of many tips would plan
        # every face afresh (a 3 m crossing of 20 boxes ran over 20 min): two tips deep, the 3 nearest kept
        depth, width = (DEPTH, BEAM) if self.planner.level else (max(2, self.horizon), UNEVEN_BEAM)
        self.route = next_route(self.planner, X, self.goal, self.tolerance, fewest, self.route, depth, width)
        route = self.route
        if route.first is not None and (route.distance < now - NEARER or route.distance <= self.tolerance):
            self.detours += int(angle_between(route.first.direction, direction) > self.window)
            return self.start(route.first, f" (route: {route.tips} tips to {route.distance:.2f} m from the goal)")
        reach = max(float(np.hypot(*(self.end_of(s) - c))) for s in first)
        if now > reach:
            return self.halt("error", "blocked", f"blocked {now:.2f} m from the goal: no resting place within "
                             f"{fewest + 1} tips comes nearer")
        return self.halt("stopped", "nearest_face", f"stopped {now:.2f} m from the goal: no resting place within "
                         f"{min(DEPTH, fewest + SLACK)} tips lies within the tolerance {self.tolerance:.2f} m, none "
                         f"within {fewest + 1} tips {NEARER:.2f} m nearer (a tip moves the robot about {reach:.2f} m)")

    def end_of(self, step) -> np.ndarray:
        """(2,) [m] the centre of mass expected after ``step``."""
        return centre_of_mass(self.model, step.end)[:2]

    def aim(self, c) -> np.ndarray:
        """(2,) [m] the point heading mode's tips from c (2,) [m] aim at: ``lookahead`` ahead on the line."""
        return self.line.point(self.line.offsets(c)[0] + self.lookahead)

    def sequences(self, step, c, depth: int) -> list:
        """[(first step, [the centre of mass (2,) [m] after each tip])] of every sequence of up to ``depth``
        tips that starts with ``step`` from c (2,) [m], each next tip planned from where the one before ends over
        the edges within the window of the aim."""
        after = self.end_of(step)
        if depth <= 1:
            return [(step, [after])]
        aim = self.aim(after)
        try:
            nxt = self.planner.plan_options(step.end, math.atan2(*(aim - after)[::-1]), self.window)
        except CannotRoll:
            return [(step, [after])]             # a dead end: judged on its first tip alone
        return [(step, [after] + ends) for s in nxt for _, ends in self.sequences(s, after, depth - 1)]

    def target(self, c):
        """The point (2,) [m] the next tip should end nearest (the goal, or ``lookahead`` ahead on the
        commanded line), or None: no command, the goal reached ('arrived') or no progress ('error')."""
        if self.goal is not None:
            dist = float(np.hypot(*(self.goal - c)))
            if dist <= self.tolerance:
                return self.halt("arrived", "arrived", f"arrived within {dist:.2f} m of the goal")
            self.best, self.stale = (dist, 0) if dist < self.best - NEARER else (self.best, self.stale + 1)
            if self.stale > PATIENCE:
                return self.halt("error", "blocked", f"blocked: {PATIENCE} tips brought the robot no nearer the goal "
                                 f"than {self.best:.2f} m; it is {dist:.2f} m away")
            return self.goal
        if self.heading is None:
            return None
        self.line = follow(self.line, self.heading, c)
        return self.aim(c)

    def start(self, step, detour: str):
        """Begin playing ``step``; the rest after it is lengthened to meet the commanded speed."""
        if self.gait is not None:
            step = self.gait.tip(step, self.last_X, self.u)
            if step is None:                     # no dynamic tip from the landing: back to zero, rest, again
                self.state = "recovering"
                return
        self.step = step
        self.dwell, self.fastest = dwell_for(self.speed, step, self.rate, self.rest)
        capped = f"; speed capped at {self.fastest:.3f} m/s (the motors)" if self.speed_capped else ""
        self.state, self.t0, self.reason = "tipping", None, ""   # the tip starts at the next update
        self.message = f"tipping from {step.face_from} toward {np.degrees(step.direction):.0f}°" + detour + capped

    def halt(self, state: str, reason: str, message: str):
        """End the command in ``state`` (HALTED) for ``reason`` (REASONS); returns None."""
        self.goal, self.heading, self.line = None, None, None
        self.step, self.state, self.reason, self.message = None, state, reason, message
        return None


def waypoint_inputs(times, U, t: float) -> np.ndarray:
    """Inputs (alpha,) [m] at ``t`` [s] on waypoints ``U`` (K, alpha) at ``times`` (K,): linear in between,
    the first before and the last after them."""
    k = int(np.clip(np.searchsorted(times, t, side="right") - 1, 0, len(times) - 1))
    if k == len(times) - 1:
        return U[k].copy()
    w = max(0.0, (t - times[k]) / (times[k + 1] - times[k]))
    return U[k] + w * (U[k + 1] - U[k])
