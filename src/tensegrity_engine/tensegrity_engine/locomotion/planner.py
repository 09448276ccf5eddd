"""Gait planning for a robot lying on the ground: one tip from face to face toward a heading.

For the support polygon's edges nearest the heading, a sequence of small linear programs on the quasi-static
sensitivity (ground nodes held, :mod:`.sensitivity`) pushes the centre of mass toward and over the edge with
the allowed actuators, within their limits, every string kept taut; each increment is applied in the contact
dynamics (:mod:`.tip_run`), which also confirms that the robot comes to rest on a face through that edge.
Plans are remembered per (face, edge): the actuators move with the body, so a plan holds wherever the robot
lies on that face."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog
from scipy.spatial.transform import Rotation

from tensegrity_engine.dynamics.simulator import Simulator
from tensegrity_engine.errors import SimulationDiverged
from tensegrity_engine.locomotion.bar_clearance import BarClearance
from tensegrity_engine.locomotion.sensitivity import pinned_sensitivity
from tensegrity_engine.locomotion.support import (angle_between, centre_of_mass, face_of, ground_frame,
                                                  ground_gaps, ground_nodes, ground_slope, level_ground,
                                                  support_edges)
from tensegrity_engine.locomotion.tip_run import SETTLE, STILL, TipTrial, check_step


MOTOR_SPEED = 3.0      # rad/s: a position-controlled string motor (the ROS simulator's default motor_speed_limit)
ATTEMPTS = 2           # a planned tip that times out on the robot is tried this often before its edge is given up
KEEP = 1.5             # the linear program keeps bars KEEP x the clearance margin apart (the tip's fall comes on top)
LEVEL = np.radians(1.0)  # rad: ground sloping less than this is level (tips released as soon as they left)
TURN = np.radians(1.0)   # rad: a plan on a slope must also hold with the robot turned this much on the ground (a
#                          few times the pose a reused plan may be off, POSE, projected on a 15° slope)
POSE = np.radians(0.25)  # rad: off a level floor a face's plan holds only while the robot lies on it tilted no
#                          more than this from the pose it was planned in (the pull of gravity across the face
#                          differs with the pose: on a 15° slope a plan reused 0.84° off, 9 cm away, tipped the
#                          robot onto another edge and it rolled 270 m down). Mocap noise of 2 mm tilts a 1.5 m
#                          robot's fit by ~0.2°; on a level floor any two rests on a face are the same pose


class CannotRoll(ValueError):
    """The robot cannot tip toward the commanded heading with the allowed actuators (the message says why)."""


@dataclass(frozen=True)
class TipStep:
    """One planned tip: inputs ``u`` (K, alpha) [m] at ``times`` (K,) [s] from the step's start (linear in
    between, held after the last); ``face_from`` / ``face_to`` the ground nodes before and after;
    ``direction`` [rad] the world heading of the tip (outward normal of the pivot edge); ``min_tension`` [N]
    the smallest string tension while the robot still stood on ``face_from`` in the verifying run;
    ``tip_time`` [s] when it left that face there; ``travel`` [m] how far its centre of mass moved in the
    ground plane there (tip and recovery); ``min_clearance`` [m] the smallest bar-bar clearance there; ``end``
    (n, 3) [m] where the nodes are expected after the tip from where it starts (the verifying run's end,
    moved with the robot: :func:`moved_like`); ``release`` [s] the inputs may return to zero only after this
    (on a slope the verifying run stood off its face earlier but rocked back when released there; 0: as soon
    as the robot has left its face)."""
    times: np.ndarray
    u: np.ndarray
    face_from: tuple
    face_to: tuple
    direction: float
    min_tension: float = float("nan")
    tip_time: float = float("nan")
    travel: float = float("nan")
    min_clearance: float = float("nan")
    end: np.ndarray | None = None
    release: float = 0.0


@dataclass(frozen=True)
class EdgePlan:
    """A verified tip over one edge of a face (inputs as in :class:`TipStep`, ``pivot`` the edge's node names;
    ``start`` and ``end`` (n, 3) [m] the verifying run's first and last node positions)."""
    times: np.ndarray
    u: np.ndarray
    pivot: tuple
    face_to: tuple
    min_tension: float
    tip_time: float
    travel: float
    min_clearance: float
    start: np.ndarray
    end: np.ndarray
    release: float = 0.0


def rollable(model, actuators: list | None = None) -> np.ndarray:
    """(alpha,) bool: the actuators of ``model`` the gait may move (``actuators`` names, default all). Raises
    ValueError (no ground or gravity, gravity off -z, unknown names) or :class:`CannotRoll` (nothing to move) saying how to
    fix the model file: the checks a gait planner makes before it plans anything."""
    up, _ = ground_frame(model)
    if up[2] < 1.0 - 1e-9:
        raise ValueError(f"model '{model.name}': gravity {list(model.gravity)} is not along -z; headings and goals "
                         "are in the world xy-plane: give gravity [0, 0, -g] and tilt the ground instead")
    names = list(model.actuator_names)
    wanted = names if actuators is None else list(actuators)
    unknown = [a for a in wanted if a not in names]
    if unknown:
        raise ValueError(f"unknown actuator(s) {unknown}; model '{model.name}' has {names}")
    if not wanted:
        raise CannotRoll(f"model '{model.name}' has no actuators to move (allowed: {wanted}): rolling changes "
                         "string rest lengths; add actuators to the model file or allow some")
    return np.array([a in wanted for a in names], bool)


class GaitPlanner:
    """Plans tips of a robot on its ground plane (``model`` with a plane obstacle and actuators).

    ``actuators``: names allowed to move (default all; the others stay at u = 0). Tuning: ``max_angle``
    [rad] widest angle between heading and tip direction tried (the six-bar's open faces, isosceles with a
    48° apex, have an edge within 66° of any heading);
    ``rate`` [m/s] input speed of the ramps (default a tenth of the mean bar length per second, at most what a
    motor at MOTOR_SPEED reels on the smallest spool: a faster plan tips by momentum the motors cannot give);
    ``step`` [m]
    largest input change per planning round (default 4 % of the mean bar length);
    ``pause`` [s] hold after each ramp; ``hold`` [s] how long holding the inputs may take to tip the robot
    (a copy of the run is held that long: if it does not tip, the next round starts from its settled
    shape); ``rounds`` planning rounds per edge;
    ``min_tension`` [N] taut-string margin (default a tenth of the median tension at rest); ``sparsity``
    the L1 weight on the inputs, as a fraction of the largest gain (fewer actuators move); ``clearance`` [m]
    smallest bar-bar clearance (capsule surface to surface) a tip may reach anywhere in its verifying run
    (every CHUNK of :mod:`.tip_run`): a plan that comes closer is rejected with the two bars named."""

    def __init__(self, model, actuators: list | None = None, max_angle: float = np.radians(70.0),
                 rate: float | None = None, step: float | None = None, pause: float = 0.4, hold: float = 2.0,
                 rounds: int = 12, min_tension: float | None = None, sparsity: float = 0.2, clearance: float = 0.01):
        self.model = model
        self.allowed = rollable(model, actuators)
        size = float(np.mean(model.bar_length)) if len(model.bar_length) else 1.0
        motor = MOTOR_SPEED * float(np.min(model.spool_radius)) if len(model.spool_radius) else np.inf
        self.rate = min(0.1 * size, motor) if rate is None else float(rate)
        self.step = 0.04 * size if step is None else float(step)
        self.max_angle, self.pause, self.hold, self.rounds = float(max_angle), float(pause), float(hold), int(rounds)
        self.min_tension, self.sparsity, self.clearance = min_tension, float(sparsity), float(clearance)
        self.dt = check_step(model)       # s: RK4 step of the check runs (the model's stiffest mode and contacts)
        self.sim = Simulator(model, integrator="rk4", dt=self.dt)
        self.bars = BarClearance(model)
        self.plans = {}                   # (face, pivot) -> EdgePlan or the reason it failed (str)
        self.poses = {}                   # (face, pivot) -> (n, 3) [m] where that plan was made
        self.basis = ground_frame(model)[1]   # (3, 2) horizontal plane (under gravity along -z: x, y)
        self.level = level_ground(model)      # a level floor: a face's plans hold wherever the robot lies on it
        self.timeouts = {}                # (face, pivot) -> how often its plan timed out on the robot

    def plan_step(self, X, heading: float, max_angle: float | None = None) -> TipStep:
        """The tip from the face the robot lies on at X (n, 3) [m] toward ``heading`` [rad] (world, 0 = +x,
        counter-clockwise) over the edge nearest the heading that works, among those within ``max_angle``
        [rad] of it (default the planner's; π: every edge). Raises :class:`CannotRoll` with every edge's reason
        when none works."""
        return self.plan_options(X, heading, max_angle, first=True)[0]

    def plan_options(self, X, heading: float, max_angle: float | None = None, first: bool = False) -> list:
        """Every workable tip (:class:`TipStep`) from the face at X (n, 3) [m] over an edge within ``max_angle``
        [rad] (default the planner's; π: every edge) of ``heading`` [rad], nearest the heading first (``first``:
        only the first that works). Raises :class:`CannotRoll` with every edge's reason when none works; an
        engine failure while planning becomes that edge's reason."""
        widest = self.max_angle if max_angle is None else float(max_angle)
        m = self.model
        X = np.asarray(X, float)
        if X.shape != (m.n_nodes, 3) or not np.all(np.isfinite(X)):
            raise ValueError(f"plan_step needs all {m.n_nodes} node positions as finite (n, 3) [m], got shape "
                             f"{X.shape}; fill unseen nodes first (model.from_physical, the last known shape)")
        ground = ground_nodes(m, X)
        face = face_of(m, X)
        self.check_friction(X, ground, face)
        edges = [e for e in support_edges(X, list(ground), self.basis)
                 if angle_between(np.arctan2(e[2][1], e[2][0]), heading) <= widest]
        if len(ground) < 2 or not edges:
            raise CannotRoll(f"robot '{m.name}' rests on {face or 'no node'}: no support edge within "
                             f"{np.degrees(widest):.0f}° of heading {np.degrees(heading):.0f}°")
        edges.sort(key=lambda e: angle_between(np.arctan2(e[2][1], e[2][0]), heading))
        options, reasons = [], []
        for a, b, normal, mid in edges:
            key = (face, tuple(sorted((m.node_names[a], m.node_names[b]))))
            if key not in self.plans or not (self.level or same_pose(self.poses[key], X)):
                self.plans[key] = self.checked_plan(X, ground, (a, b, normal, mid))
                self.poses[key] = X.copy()
                self.timeouts.pop(key, None)
            plan = self.plans[key]
            direction = float(np.arctan2(normal[1], normal[0]))
            if isinstance(plan, EdgePlan):
                options.append(TipStep(plan.times, plan.u, face, plan.face_to, direction, plan.min_tension,
                                       plan.tip_time, plan.travel, plan.min_clearance,
                                       moved_like(plan.start, X, plan.end), plan.release))
                if first:
                    return options
            else:
                reasons.append(f"edge {key[1][0]}-{key[1][1]} (tip direction {np.degrees(direction):.0f}°): {plan}")
        if not options:
            raise CannotRoll(f"robot '{m.name}' on face {face} cannot tip toward {np.degrees(heading):.0f}°: "
                             + "; ".join(reasons))
        return options

    def check_friction(self, X, ground, face):
        """Raise :class:`CannotRoll` if the ground under the robot's ``ground`` nodes is steeper than its
        friction holds (tan(slope) > μ: the robot slides down, whatever the strings do)."""
        if len(ground) < 3:
            return
        slope, mu = ground_slope(self.model, X, ground)
        if np.tan(slope) > mu:
            raise CannotRoll(f"robot '{self.model.name}' on face {face} slides: the ground under it slopes "
                             f"{np.degrees(slope):.1f}°, tan {np.degrees(slope):.1f}° = {np.tan(slope):.2f} > μ = "
                             f"{mu:.2f} (friction cannot hold it; the steepest it can rest on is "
                             f"{np.degrees(np.arctan(mu)):.1f}°)")

    def robust(self, X, plan, ground):
        """``plan`` if it also holds with the robot at X turned by TURN about the ground's normal under its
        ``ground`` nodes (the contacts' gaps unchanged): on a slope a tip that ends on its face only just may
        roll on down; else why not."""
        _, _, normal = ground_gaps(self.model, X)
        n = normal[ground].mean(axis=0)
        centre = X[ground].mean(axis=0)
        start = Rotation.from_rotvec(TURN * n / np.linalg.norm(n)).apply(X - centre) + centre
        trial = TipTrial(self.model, start, self.rate, self.sim)
        times, U = plan.times, plan.u
        left = any(trial.ramp(U[k - 1], U[k], times[k] - times[k - 1], times[k + 1] - times[k])
                   for k in range(1, len(times) - 1, 2)) or trial.ramp(U[-1], U[-1], 0.0, self.hold)
        run = trial.finish()
        if left and run.face == plan.face_to and run.speed < STILL:
            return plan
        return (f"fragile on the slope: turned {np.degrees(TURN):.0f}° on the ground the same inputs end on "
                f"{run.face} ({'at rest' if run.speed < STILL else f'still rolling at {run.speed:.1f} m/s'}), "
                f"not {plan.face_to}")

    def sloping(self, X, ground) -> bool:
        """True if the ground under the ``ground`` nodes slopes more than LEVEL: a tip released a moment
        earlier than in its verifying run may rock back (or roll on down), so the release waits for that time."""
        return len(ground) >= 3 and ground_slope(self.model, X, ground)[0] > LEVEL

    def checked_plan(self, X, ground, edge):
        """:meth:`plan_edge`, with an engine failure on the way (a diverged check run, a singular statics
        solve) as the edge's reason instead of an exception."""
        try:
            return self.plan_edge(X, ground, edge)
        except (SimulationDiverged, ArithmeticError, np.linalg.LinAlgError, ValueError) as exc:
            return f"planning failed in the engine ({type(exc).__name__}: {exc})"

    def reject(self, step: TipStep, reason: str) -> bool:
        """A tip of ``step`` failed on the robot (it timed out): True if it is to be tried again (fewer than
        ATTEMPTS failures), else its edge is not tried again from that face (``reason`` is reported instead)
        until :meth:`forgive`."""
        for key, plan in self.plans.items():
            if key[0] == step.face_from and isinstance(plan, EdgePlan) and plan.u is step.u:
                self.timeouts[key] = self.timeouts.get(key, 0) + 1
                if self.timeouts[key] < ATTEMPTS:
                    return True
                self.plans[key] = f"{reason} ({self.timeouts[key]} attempts)"
        return False

    def gave_up(self, face: tuple) -> bool:
        """True if a tip from ``face`` was given up after timing out ATTEMPTS times on the robot."""
        return any(key[0] == face and n >= ATTEMPTS for key, n in self.timeouts.items())

    def forgive(self):
        """Forget the tips given up on the robot (a new command: the robot may lie differently now); they are
        planned afresh when their face comes up."""
        for key in self.timeouts:
            if not isinstance(self.plans.get(key), EdgePlan):
                self.plans.pop(key, None)
        self.timeouts = {}

    def plan_edge(self, X, ground, edge):
        """An :class:`EdgePlan` tipping the robot at rest at X over ``edge`` (a, b, outward normal, midpoint),
        or a sentence why not."""
        m = self.model
        a, b, normal, mid = edge
        u = np.zeros(len(m.actuator_names))
        times, U, t = [0.0], [u], 0.0
        trial = TipTrial(m, X, self.rate, self.sim)
        Xk = X
        for _ in range(self.rounds):
            s = pinned_sensitivity(m, Xk, u, ground_nodes(m, Xk))   # the nodes touching now: a deformed robot may rest on others
            gain = normal @ (self.basis.T @ s.com_du)           # m of centre-of-mass travel over the edge per m
            floor = self.min_tension if self.min_tension is not None else 0.1 * float(np.median(s.tension))
            keep = KEEP * self.clearance
            rows = self.bars.rows(Xk, s.nodes_du, keep, keep + 2 * self.step)    # bars apart, to first order
            du = self.increment(gain, s.tension, s.tension_du, u, floor, self.sparsity, rows)
            if du is None and self.sparsity > 0:               # near the limits every actuator may count
                du = self.increment(gain, s.tension, s.tension_du, u, floor, 0.0, rows)
            margin = float(normal @ (s.com @ self.basis - mid))   # the centre of mass projected along gravity
            if du is None:
                why = (f"no increment keeps every string taut and the bars {1e3 * keep:.0f} mm apart within the "
                       "limits" if np.abs(gain).max() > 1e-9 else
                       f"with its {len(ground)} ground nodes held no actuator moves the centre of mass (it lies flat)")
                return self.stuck_reason(margin, gain, u, why)
            ramp = max(float(np.abs(du).max()) / self.rate, 0.05)
            times += [t + ramp, t + ramp + self.pause]
            U += [u + du, u + du]
            t += ramp + self.pause
            left = trial.ramp(u, u + du, ramp, self.pause)
            u = u + du
            if not left:
                tips, Xk = trial.settled(self.hold)
                left = tips and trial.ramp(u, u, 0.0, self.hold)     # holding tips it: hold in the trial too
            if left:
                sloping = self.sloping(X, ground)
                plan = self.judge(X, trial.finish(), (a, b, normal), np.array(times), np.array(U),
                                  trial.t_change if trial.premature or sloping else 0.0)
                return self.robust(X, plan, ground) if sloping and isinstance(plan, EdgePlan) else plan
        return self.stuck_reason(margin, gain, u, f"still on the face after {self.rounds} rounds")

    def judge(self, X, run, edge, times, U, release: float = 0.0):
        """The :class:`EdgePlan` if the tip went over the edge (a, b, normal) or on the planned way, else why
        not (``release`` [s]: :attr:`TipStep.release`)."""
        m = self.model
        a, b, normal = edge
        pivot = {m.node_names[a], m.node_names[b]}
        moved = (centre_of_mass(m, run.positions) - centre_of_mass(m, X)) @ self.basis
        off = angle_between(np.arctan2(moved[1], moved[0]), np.arctan2(normal[1], normal[0]))
        if run.face == face_of(m, X):
            return "it rocked back onto its face"
        size = float(np.mean(m.bar_length))
        if run.speed < STILL and np.hypot(*moved) > size:
            return (f"it rolled on over several faces ({np.hypot(*moved):.2f} m, more than a bar length {size:.2f} m: "
                    "momentum it cannot stop, e.g. down a slope)")
        if run.speed >= STILL:
            return (f"it does not come to rest: still rolling at {run.speed:.1f} m/s {SETTLE:.0f} s after the tip "
                    "(runs away, e.g. down a slope)")
        if not pivot <= set(run.face) and off > self.max_angle:
            return f"it rolled on to {run.face}, {np.degrees(off):.0f}° off this edge's direction (too much momentum)"
        if run.min_clearance < self.clearance:
            return (f"bars {run.closest[0]} and {run.closest[1]} came {1e3 * run.min_clearance:.0f} mm apart, closer "
                    f"than the clearance margin {1e3 * self.clearance:.0f} mm (a real robot's bars would collide)")
        return EdgePlan(times, U, tuple(sorted(pivot)), run.face, run.min_tension, float(run.t_change),
                        float(np.hypot(*moved)), run.min_clearance, np.asarray(X, float).copy(), run.positions,
                        release)

    def increment(self, gain, tension, tension_du, u, floor, sparsity, rows=None):
        """Input change (alpha,) [m] that moves the centre of mass furthest over the edge to first order
        (an L1-penalised linear program: few actuators), within ``step``, the limits, tensions >= floor and
        ``rows`` (A (k, alpha), b (k,): A du <= b, the bars apart); None if it would not move it."""
        k = np.flatnonzero(self.allowed)
        lim = self.model.u_limits[k]
        up = np.clip(lim[:, 1] - u[k], 0.0, self.step)
        down = np.clip(u[k] - lim[:, 0], 0.0, self.step)
        g = gain[k]
        eps = sparsity * float(np.abs(g).max()) if len(g) else 0.0
        T = np.vstack([-tension_du[:, k]] + ([] if rows is None else [rows[0][:, k]]))
        b = np.r_[np.maximum(tension - floor, 0.0), [] if rows is None else rows[1]]
        res = linprog(np.r_[-g + eps, g + eps], A_ub=np.hstack([T, -T]),
                      b_ub=b, bounds=list(zip(np.zeros(2 * len(k)), np.r_[up, down])),
                      method="highs")
        if res.status != 0 or -res.fun < 1e-4:
            return None
        du = np.zeros_like(u)
        du[k] = res.x[:len(k)] - res.x[len(k):]
        return du

    def stuck_reason(self, margin, gain, u, why) -> str:
        """Why a tip over an edge failed: how far the centre of mass got and which actuators would help."""
        names = np.array(self.model.actuator_names)
        used = ", ".join(names[np.abs(u) > 1e-6]) or "none"
        helpful = np.flatnonzero(~self.allowed & (np.abs(gain) > 0.1 * np.abs(gain).max()))
        helpful = helpful[np.argsort(-np.abs(gain[helpful]))][:6]
        would = ", ".join(f"{names[k]} ({'in' if gain[k] > 0 else 'out'})" for k in helpful)
        size = float(np.mean(self.model.bar_length))
        if margin <= 0.0:
            got = f"the centre of mass stayed {-margin:.3f} m inside the edge"
        elif margin < size:
            got = (f"the centre of mass got {margin:.3f} m past the edge, but the robot stood on other nodes and "
                   "rocked back when released (on a slope: gravity pulls it back)")
        else:
            got = f"the robot rolled away over the edge ({margin:.1f} m past it) without coming to rest (a runaway)"
        return (f"{why}; {got} (inputs used: {used})" + (f"; actuators that would help: {would}" if would else ""))


def pose_change(start, X) -> tuple:
    """(rotation (3, 3), centroid of start (3,), centroid of X (3,)): the rigid motion that best maps the
    node positions ``start`` onto X (both (n, 3) [m], Kabsch)."""
    a, b = np.asarray(start, float), np.asarray(X, float)
    ca, cb = a.mean(axis=0), b.mean(axis=0)
    U, _, Vt = np.linalg.svd((a - ca).T @ (b - cb))
    d = np.sign(np.linalg.det(Vt.T @ U.T))
    return Vt.T @ np.diag([1.0, 1.0, d]) @ U.T, ca, cb


def same_pose(start, X) -> bool:
    """True if the robot at X (n, 3) [m] lies as at ``start`` up to a turn about the vertical and a shift:
    the rigid motion between them tilts the vertical (+z) by at most POSE."""
    R, _, _ = pose_change(start, X)
    return bool(R[2, 2] >= np.cos(POSE))


def moved_like(start, X, end) -> np.ndarray:
    """``end`` (n, 3) [m] moved as the robot moved from ``start`` to X (both (n, 3) at rest on the same face
    in the same pose, :func:`same_pose`): the best-fitting turn about the vertical (3-D Kabsch, its
    vertical part) and shift (on a slope the shift climbs with the ground)."""
    R, ca, cb = pose_change(start, X)
    angle = np.arctan2(R[1, 0] - R[0, 1], R[0, 0] + R[1, 1])
    c, s = np.cos(angle), np.sin(angle)
    Rz = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return (np.asarray(end, float) - ca) @ Rz.T + cb
