"""Dynamic gait: tips whose input trajectories are optimised in the contact dynamics and chained.

The quasi-static gait (:mod:`.planner`) ramps its inputs in small rounds with pauses, returns them to zero on
the new face and rests before the next tip. Here a tip starts from the inputs and the motion the robot has
where the last tip landed (no return to zero, no rest): every motor slews at the motors' speed toward a push
target, and from a switch time on toward a release target (back toward zero, or toward what the next tip
needs, while the robot falls over the edge) (:class:`Slews`). Targets and switch time are chosen by the
cross-entropy method (CEM) over candidates simulated together (:class:`~..dynamics.batch.BatchSimulator`: one
compiled call per control tick for all of them), seeded with the quasi-static plan's last waypoint (scaled)
and the steepest reachable input changes of its linear program; the best few are then judged with the next
tip the steering would choose played after them (a two-tip lookahead). Cost: the time until the next tip
can start (the robot on the planned face: three or more ground nodes, one of the old face's lifted, and
``delay`` control ticks on: measurement or actuator delay, the same to a tip played open loop) plus DEFORMED
× the motors' time from the inputs then to the next tip's quasi-static target. Constraints, at every control
tick of every candidate: the bar-bar clearance at least ``planner.clearance`` (the collision monitor's
warn_margin, 10 mm by default), every string's tension at least the planner's taut-string floor while the
old face stands (once taut: a landing's impact may slacken a string for a moment), the inputs within the
model's limits and moving at most the motors' speed, the first face landed on the planned one. Plans are
kept per (face before, face, face after): the actuators move with the body, and a tip chained from the same
tip starts in about the same state of motion."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from tensegrity_engine.dynamics.batch import BatchSimulator
from tensegrity_engine.locomotion.bar_clearance import BarClearance
from tensegrity_engine.locomotion.planner import CannotRoll, TipStep
from tensegrity_engine.locomotion.sensitivity import pinned_sensitivity
from tensegrity_engine.collision.obstacles import model_obstacles
from tensegrity_engine.locomotion.support import (centre_of_mass, contact_tolerance, ground_nodes, has_left,
                                                  node_gaps, support_edges)
from tensegrity_engine.locomotion.tip_run import TOUCH

TICK = 0.02            # s: the control period the tips are played at (50 Hz, as closed_loop.roll)
DELAY = 2              # control ticks from a landing in the positions to the next tip's inputs at the motors
SAMPLES = 24           # candidates simulated together per CEM iteration
ITERATIONS = 4         # CEM iterations per (face before, face, face after)
ELITE = 4              # best candidates the next iteration's distribution is fitted to
HORIZON = 6.0          # s: a candidate that has not landed this long after its start fails
NEVER = HORIZON / TICK  # switch tick of a trajectory that never releases its push
SPANS = (1.0, 1.5, 2.0, 2.5)   # s of motor travel the linear-programme seeds may use
RELEASES = (0.5, 1.0)   # fractions of the push's slew after which the seeds release it toward zero
DEFORMED = 1.0        # s of cost per s the motors would need to bring the handover's inputs back to zero
FOLLOW = (1.0, 0.7, 1.3)  # scales of the next tip's quasi-static inputs tried after a candidate
LOOK = 4               # best candidates judged with the next tip played after them
EXTRA = 2              # more CEM iterations while no candidate has kept the constraints or the best is slow
SLOW = 2.5             # s: a tip slower than this to the handover is slow
FAILED = 1e3           # cost of a candidate that breaks a constraint (then ordered by how far it got)


@dataclass(frozen=True)
class Landing:
    """The state a chained tip starts in: node ``positions`` and ``velocities`` (n, 3) [m, m/s] and the
    inputs ``u`` (alpha,) [m] when the next tip's inputs reach the motors (in the planning run's frame)."""
    positions: np.ndarray
    velocities: np.ndarray
    u: np.ndarray


@dataclass(frozen=True)
class DynamicTip(TipStep):
    """A :class:`.planner.TipStep` of the dynamic gait: ``u`` one ramp at the motors' speed from the inputs
    at its start to its target, ``tip_time`` [s] when the next tip may start (landed, ``delay`` ticks on);
    ``key`` (face before or None from rest, face, face after); ``landing`` the state the next tip starts in."""
    key: tuple = ()
    landing: Landing | None = None


@dataclass(frozen=True)
class Outcome:
    """One candidate's run: ``cost`` [s] (the time to the next tip's start plus DEFORMED × the motors' time from
    its inputs then to the next tip's quasi-static target, or zero; FAILED + ... when a constraint broke),
    ``why`` the first constraint broken ('' if none), ``min_clearance`` [m], ``min_tension`` [N] while the old
    face stood (NaN: never taut), ``landing`` the state at the next tip's start (None if it failed), ``time``
    [s] from the start to the next tip's start."""
    cost: float
    why: str
    min_clearance: float
    min_tension: float
    landing: Landing | None
    time: float = math.inf


def arrivals(u0, targets, rate: float, tick: float = TICK) -> np.ndarray:
    """(..., alpha) whole control ticks each actuator takes from u0 to ``targets`` (..., alpha) [m] at
    ``rate`` [m/s] (at least 1): each motor slews to its own target at full speed, as a position-controlled
    motor does, instead of all of them ramping together at the pace of the one that moves most."""
    need = np.abs(np.asarray(targets, float) - np.asarray(u0, float)) / (rate * tick)
    return np.maximum(1, np.ceil(need - 1e-9))


def inputs_at(u0, targets, ticks, j) -> np.ndarray:
    """(..., alpha) [m] the inputs ``j`` control ticks after the start of slews from u0 to ``targets`` taking
    ``ticks`` (:func:`arrivals`)."""
    return u0 + np.clip(j / ticks, 0.0, 1.0) * (targets - u0)


class Slews:
    """Candidate input trajectories from u0 (alpha,) [m] (or one per candidate, (N, alpha)): rows of ``theta``
    (N, 2 alpha + 1) are (push target w, release target r, switch tick s): every motor slews at ``rate``
    [m/s] toward w, and from control tick s on (wherever it is then) toward r, e.g. back toward zero while the
    robot falls over the edge, so that the next tip starts from a less deformed robot. s >= NEVER: one slew."""

    def __init__(self, u0, theta, rate: float, tick: float = TICK):
        theta = np.atleast_2d(np.asarray(theta, float))
        a = np.shape(u0)[-1]
        self.u0, self.w, self.r, self.s = np.asarray(u0, float), theta[:, :a], theta[:, a:2 * a], theta[:, 2 * a:]
        self.t1 = arrivals(self.u0, self.w, rate, tick)
        self.us = inputs_at(self.u0, self.w, self.t1, self.s)
        self.t2 = arrivals(self.us, self.r, rate, tick)
        self.tick = tick

    def at(self, j) -> np.ndarray:
        """(N, alpha) [m] the inputs ``j`` control ticks after the start."""
        return np.where((j <= self.s) | (self.s >= NEVER), inputs_at(self.u0, self.w, self.t1, j),
                        inputs_at(self.us, self.r, self.t2, j - self.s))

    def waypoints(self, i: int = 0) -> tuple:
        """(times (K,) [s], U (K, alpha) [m]) of candidate ``i``: a waypoint wherever a motor arrives or the
        switch happens, linear in between (as :func:`.controller.waypoint_inputs` plays them)."""
        s, t1 = float(self.s[i, 0]), self.t1[i]
        knots = [0.0, *t1] if s >= NEVER else [0.0, *t1[t1 < s], s, *(s + self.t2[i])]
        knots = np.unique(knots)
        return knots * self.tick, np.array([self.at(j)[i] for j in knots])


class DynamicGait:
    """Dynamic tips for the :class:`.planner.GaitPlanner` ``planner`` (its model, allowed actuators, ramp
    rate = motor speed, clearance margin and taut-string floor). ``delay`` control ticks from a landing to the
    next tip's inputs; ``samples``, ``iterations``, ``elite`` the CEM's; ``seed`` its random generator."""

    def __init__(self, planner, delay: int = DELAY, samples: int = SAMPLES, iterations: int = ITERATIONS,
                 elite: int = ELITE, seed: int = 0, deformed: float = DEFORMED):
        self.planner, self.model = planner, planner.model
        self.delay, self.samples, self.iterations, self.elite = int(delay), int(samples), int(iterations), int(elite)
        self.rng, self.deformed = np.random.default_rng(seed), float(deformed)
        self.bars = BarClearance(self.model)
        self.obstacles = model_obstacles(self.model)      # the ground as support.face_of sees it (any obstacle)
        self.touch, self.names = contact_tolerance(self.model), np.array(self.model.node_names)
        self.batch = {}                         # robots -> BatchSimulator, made when first needed
        self.memo = {}                          # key -> (theta (2 alpha + 1,), Outcome) or why none works (str)
        self.incoming = None                    # the DynamicTip the robot just landed from (chain)
        self.wall = 0.0                         # s: wall time spent optimising
        self._floor = None                      # N: the taut-string floor once known (floor)
        self.controller = None                  # the RollingController whose steering says what comes next
        self.ready = np.zeros(len(self.model.actuator_names))

    # --- what the controller calls ----------------------------------------------------------------------
    def tip(self, step: TipStep, X, u0) -> TipStep | None:
        """The dynamic version of the quasi-static ``step`` from the robot at X (n, 3) [m] with inputs u0
        (alpha,) [m]: chained from :attr:`incoming` (then None if no candidate works: the controller returns
        the inputs to zero and rests first), or from rest (then ``step`` itself if none works)."""
        came = self.incoming
        self.incoming = None
        key = (came.face_from if came is not None else None, tuple(step.face_from), tuple(step.face_to))
        if key not in self.memo:
            start = came.landing if came is not None else Landing(np.asarray(X, float), np.zeros_like(X),
                                                                  np.zeros(len(self.model.actuator_names)))
            self.memo[key] = self.optimise(step, start, self.preview(step))
        plan = self.memo[key]
        if isinstance(plan, str):
            return None if came is not None else step
        theta, out = plan
        times, U = Slews(u0, theta, self.planner.rate).waypoints()
        return DynamicTip(times, U, step.face_from, step.face_to, step.direction, out.min_tension, out.time,
                          step.travel, out.min_clearance, step.end, key=key, landing=out.landing)

    def chain(self, ctl, X):
        """The controller ``ctl`` has just seen its tip land (state 'recovering'): if it was a dynamic tip on its
        planned face, the next tip starts from here (``ctl.next_step``); otherwise, or if none does, the inputs
        return to zero and the robot rests first, as in the quasi-static gait."""
        s = ctl.step
        if not (isinstance(s, DynamicTip) and ctl.face == tuple(s.face_to)):
            return
        self.incoming = s
        try:
            ctl.next_step(X)
        except Exception as exc:                 # noqa: BLE001 - an engine failure stops the gait, reported
            ctl.halt("error", "engine_failed", f"planning failed in the engine: {type(exc).__name__}: {exc}")
        self.incoming = None
        if ctl.state == "idle":                  # no command left: the inputs go back to zero
            ctl.state = "recovering"

    def timed_out(self, step: TipStep):
        """A dynamic tip did not leave its face on the robot: play the quasi-static tip from there on."""
        if isinstance(step, DynamicTip):
            self.memo[step.key] = "it timed out on the robot"

    # --- the optimiser ----------------------------------------------------------------------------------
    def preview(self, step: TipStep):
        """The quasi-static tip the controller would choose after ``step`` (heading mode: its steering from the
        expected end of ``step``), or None when that is unknown (goal mode, no controller, no tip)."""
        ctl = self.controller
        if ctl is None or ctl.goal is not None or ctl.line is None:
            return None
        after = centre_of_mass(self.model, step.end)[:2]
        aim = ctl.aim(after)
        try:
            nxt, _ = ctl.pick(step.end, math.atan2(*(aim - after)[::-1]), after, aim, detour=False)
        except CannotRoll:
            return None
        return nxt if nxt is not None and tuple(nxt.face_from) == tuple(step.face_to) else None

    def optimise(self, step: TipStep, start: Landing, nxt: TipStep | None = None):
        """(theta (2 alpha + 1,) of :class:`Slews`, its :class:`Outcome`) of the best candidate that keeps
        every constraint, by CEM from the quasi-static ``step``'s last waypoint; or a sentence why none did.
        ``nxt``: the quasi-static tip expected next (if known): the CEM's cost counts DEFORMED × the motors'
        time from the handover's inputs to its last waypoint (else to zero), and the best few candidates are
        judged with the next tip played after them (:meth:`lookahead`)."""
        self.ready = np.zeros(len(start.u)) if nxt is None else np.asarray(nxt.u[-1], float)
        t0 = time.perf_counter()
        pool = []
        mean = self.clip(np.r_[step.u[-1], step.u[-1], NEVER])
        reach = max(0.25 * float(np.abs(mean[:-1]).max()), 0.005)
        sd = self.clip(np.r_[np.full(len(mean) - 1, reach), 0.5 / TICK], shift=False)
        best, why = None, "no candidate ran"
        for it in range(self.iterations + EXTRA):
            if it >= self.iterations and best is not None and best[1].time <= SLOW:
                break
            cand = self.candidates(mean, sd, self.seeds(step, start, mean) if it == 0 else ())
            outs = self.rollout(start, cand, step.face_from, step.face_to, best[1].cost if best else HORIZON)
            order = np.argsort([o.cost for o in outs])
            pool += [(outs[j].cost, cand[j], outs[j]) for j in order if outs[j].cost < FAILED]
            if outs[order[0]].cost < FAILED and (best is None or outs[order[0]].cost < best[1].cost):
                best = (cand[order[0]], outs[order[0]])
            why = best and "" or outs[order[0]].why
            elite = cand[order[:self.elite]]
            mean, sd = elite.mean(axis=0), self.clip(np.maximum(elite.std(axis=0), 0.002), shift=False)
        if best is not None and nxt is not None:
            best = self.lookahead(sorted(pool, key=lambda q: q[0])[:LOOK], nxt) or best
        self.wall += time.perf_counter() - t0
        return best if best is not None else f"no dynamic tip kept the constraints ({why})"

    def lookahead(self, pool, nxt: TipStep):
        """(theta, Outcome) of the candidate in ``pool`` [(cost, theta, Outcome)] after which the quasi-static
        tip ``nxt`` gets the robot to its next handover soonest, counted from this tip's start: each followed
        by one slew to ``nxt``'s last waypoint scaled by FOLLOW, to its own inputs (held) and to the steepest
        targets from its landing (:meth:`steepest`); None if no follow-up lands."""
        w = np.asarray(nxt.u[-1], float)
        starts, thetas, owner = [], [], []
        for k, (_, _, out) in enumerate(pool):
            for v in [f * w for f in FOLLOW] + [out.landing.u] + self.steepest(nxt, out.landing):
                starts.append(out.landing)
                thetas.append(self.clip(np.r_[v, v, NEVER]))
                owner.append(k)
        outs = self.rollout(starts, np.array(thetas), nxt.face_from, nxt.face_to)
        then = np.full(len(pool), np.inf)
        np.minimum.at(then, owner, [o.time for o in outs])
        total = np.array([q[2].time for q in pool]) + then
        k = int(np.argmin(total))
        return (pool[k][1], pool[k][2]) if np.isfinite(total[k]) else None

    def clip(self, theta, shift: bool = True) -> np.ndarray:
        """``theta`` (..., 2 alpha + 1) with both targets within the model's input limits (``shift``) and zero
        where the actuator is not allowed, the switch tick whole and within [1, NEVER]."""
        theta = np.array(theta, float)
        a = len(self.planner.allowed)
        mask = np.r_[self.planner.allowed, self.planner.allowed, True].astype(float)
        if shift:
            lim = self.model.u_limits
            for part in (slice(0, a), slice(a, 2 * a)):
                theta[..., part] = np.clip(theta[..., part], lim[:, 0], lim[:, 1])
            theta[..., -1] = np.clip(np.round(theta[..., -1]), 1, NEVER)
        return theta * mask

    def candidates(self, mean, sd, seeds=()) -> np.ndarray:
        """(samples, 2 alpha + 1) thetas drawn about ``mean`` with ``sd``, the first ones replaced by ``seeds``,
        clipped (:meth:`clip`)."""
        cand = mean + sd * self.rng.standard_normal((self.samples, len(mean)))
        seeds = list(seeds)[:self.samples]
        if seeds:
            cand[:len(seeds)] = seeds
        return self.clip(cand)

    def seeds(self, step: TipStep, start: Landing, mean) -> list:
        """First-iteration thetas: one slew (:class:`Slews`) to the quasi-static plan's last waypoint w
        (``mean``'s) scaled by 0.6-1.4, to the start's inputs (held) and to them plus w, and to the input
        changes that move the centre of mass furthest over the pivot edge to first order (the planner's linear
        program at the start's shape, taut strings, no sparsity) reachable by the motors in SPANS seconds;
        then w and the two longest of those released toward zero or toward the inputs the next tip would like to
        start from (:meth:`ready_for`) at RELEASES of their slews' duration."""
        u0, w = start.u, mean[:len(start.u)]
        pushes = self.pushes(step, start, w)
        out = [np.r_[v, v, NEVER] for v in pushes]
        for v in pushes[:1] + pushes[-2:]:
            slow = float(arrivals(u0, v, self.planner.rate).max())
            out += [np.r_[v, r, f * slow] for r in (0.0 * v, self.ready) for f in RELEASES]
        return out

    def pushes(self, step: TipStep, start: Landing, w) -> list:
        """Push targets (alpha,) [m] to seed the CEM with (:meth:`seeds`)."""
        u0 = start.u
        return [w, 0.6 * w, 0.8 * w, 1.2 * w, 1.4 * w, u0, u0 + w] + self.steepest(step, start)

    def steepest(self, step: TipStep, start: Landing) -> list:
        """Targets (alpha,) [m]: the input changes from ``start`` that move the centre of mass furthest over
        ``step``'s pivot edge to first order, every string taut (the planner's linear program at the start's
        shape, no sparsity), reachable by the motors in SPANS seconds; none if the start is not on a face."""
        out, u0 = [], start.u
        m, p = self.model, self.planner
        X = start.positions
        ground = ground_nodes(m, X)
        pivot = {m.node_names.index(a) for a in set(step.face_from) & set(step.face_to)}
        edge = [e for e in support_edges(X, list(ground)) if {e[0], e[1]} == pivot]
        if not edge or len(ground) < 3:
            return out
        s = pinned_sensitivity(m, X, u0, ground)
        gain = edge[0][2] @ s.com_du[:2]
        box = p.step
        try:
            for span in SPANS:
                p.step = p.rate * span
                du = p.increment(gain, s.tension, s.tension_du, u0, self.floor(start), 0.0)
                if du is not None:
                    out.append(u0 + du)
        finally:
            p.step = box
        return out

    def rollout(self, start, theta, face_from, face_to, bound: float = HORIZON) -> list:
        """:class:`Outcome` per candidate ``theta`` (N, 2 alpha + 1) (:class:`Slews` from the start's inputs)
        played in the dynamics from ``start`` (a :class:`Landing`, or one per candidate), every control tick
        checked against the constraints, for at most ``bound`` [s] (a candidate slower than the best so far
        need not finish)."""
        m, n = self.model, len(theta)
        starts = [start] * n if isinstance(start, Landing) else list(start)
        batch = self.batches(n)
        for i, s in enumerate(starts):
            batch.reset(i, positions=s.positions, velocities=s.velocities)
        slews = Slews(np.array([s.u for s in starts]), theta, self.planner.rate)
        base = [set(int(k) for k in ground_nodes(m, s.positions)) for s in starts]
        floor = self.floor(starts[0])
        clear = np.full(n, np.inf)
        low = np.array([np.inf if not np.any(s.velocities) else np.nan for s in starts])   # nan: not yet taut
        landed, done = np.full(n, -1), [None] * n
        for k in range(int(round(bound / TICK))):
            live = np.array([o is None for o in done])
            if not live.any():
                break
            u_a, u_b = slews.at(k), slews.at(k + 1)
            status = batch.advance(TICK, u_a, u_b, live)
            gaps = node_gaps(m, batch.positions, self.obstacles)      # (N, n) [m] above the ground
            for i in np.flatnonzero(live):
                done[i] = self.judge(i, k + 1, batch, status[i], u_b[i], gaps[i], base[i], floor, face_from, face_to,
                                     clear, low, landed)
        return [o if o is not None else Outcome(FAILED + 1.0, f"not on {face_to} after {bound:.1f} s",
                                                clear[i], low[i], None) for i, o in enumerate(done)]

    def judge(self, i, k, batch, status, u, gap, base, floor, face_from, face_to, clear, low, landed):
        """Candidate ``i`` after tick ``k`` (``gap`` (n,) [m] its nodes' capsule surfaces above the ground):
        its :class:`Outcome` once it failed or its next tip starts, else None (``clear``, ``low``, ``landed``
        updated in place)."""
        X = batch.positions[i]
        if status != 0:
            return Outcome(FAILED + 2.0, f"the dynamics failed (status {status})", clear[i], low[i], None)
        clear[i] = min(clear[i], self.bars.min(X))
        if clear[i] < self.planner.clearance:
            return Outcome(FAILED + 3.0, f"bars came {1e3 * clear[i]:.0f} mm apart", clear[i], low[i], None)
        if landed[i] < 0 and base <= set(np.flatnonzero(gap < TOUCH).tolist()):
            tension = float(batch.tensions[i].min())
            if not np.isnan(low[i]) or tension >= floor:  # armed once taut (a landing's impact may slacken one)
                low[i] = np.fmin(low[i], tension)
            if low[i] < floor:
                return Outcome(FAILED + 4.0, f"a string's tension fell to {low[i]:.0f} N", clear[i], low[i], None)
        face = tuple(sorted(self.names[gap < self.touch]))
        if landed[i] < 0 and has_left(face, face_from):
            if face != tuple(face_to):
                return Outcome(FAILED + 5.0, f"it landed on {face}, not {tuple(face_to)}", clear[i], low[i], None)
            landed[i] = k
        if landed[i] >= 0 and k >= landed[i] + self.delay + 1:
            away = float(np.abs(u - self.ready).max()) / self.planner.rate
            return Outcome(k * TICK + self.deformed * away, "", clear[i], low[i],
                           Landing(X.copy(), batch.velocities[i].copy(), np.asarray(u, float).copy()), k * TICK)
        return None

    def floor(self, start: Landing) -> float:
        """[N] the taut-string floor: the planner's ``min_tension``, else a tenth of the median tension at the
        first start optimised from (the quasi-static planner's default; the controller's first tip starts at
        rest)."""
        if self.planner.min_tension is not None:
            return float(self.planner.min_tension)
        if self._floor is None:
            X = start.positions
            s = pinned_sensitivity(self.model, X, start.u, ground_nodes(self.model, X))
            self._floor = 0.1 * float(np.median(s.tension))
        return self._floor

    def batches(self, n: int) -> BatchSimulator:
        """A batch of ``n`` robots (made once per size, at the planner's check step)."""
        if n not in self.batch:
            self.batch[n] = BatchSimulator(self.model, n, dt=self.planner.dt)
        return self.batch[n]


GAITS = ("quasi_static", "dynamic")


def gait_for(gait: str, controller):
    """The gait hook of ``controller`` (a RollingController) for ``gait`` (GAITS): None for the quasi-static
    gait, else a :class:`DynamicGait` on its planner. Raises ValueError naming the choices."""
    if gait not in GAITS:
        raise ValueError(f"gait must be one of {GAITS}, got {gait!r}")
    if gait == "quasi_static":
        return None
    out = DynamicGait(controller.planner)
    out.controller = controller
    return out
