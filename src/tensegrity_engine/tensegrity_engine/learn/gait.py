"""Open-loop periodic gaits: every actuator's target u_a(t) = b_a + c_a sin(2π t / T) + d_a cos(2π t / T) [m]
(clipped to its limits; the motors follow at their speed), saved as a YAML file and played on N robots of a
model in the vectorised environment (:class:`.vector_env.TensegrityVectorEnv`, the same motors, contact and
self-collision measurement as the search that found the gait). ``bench/train_gait.py`` finds one by the
cross-entropy method.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from tensegrity_engine.learn.tasks import RollingTask, centre_of_mass
from tensegrity_engine.learn.vector_env import TensegrityVectorEnv

FORMAT = "tensegrity-periodic-gait"
GAITS = Path(__file__).resolve().parents[1] / "models" / "gaits"    # the gaits shipped with the engine


@dataclass(frozen=True)
class PeriodicGait:
    """``actuators`` names (model order), ``period`` T [s], ``offset`` b, ``sine`` c, ``cosine`` d (alpha,) [m];
    ``heading`` [rad] the world direction it was made for (0 = +x, counter-clockwise), ``model`` the model's
    name, ``control`` [s] the control period it was searched at, ``note`` free text (how it was found)."""
    model: str
    actuators: tuple
    period: float
    offset: np.ndarray
    sine: np.ndarray
    cosine: np.ndarray
    heading: float = 0.0
    control: float = 0.02
    note: str = ""
    extra: dict = field(default_factory=dict)

    def targets(self, t) -> np.ndarray:
        """(..., alpha) targets [m] at times ``t`` [s] (any shape), before the limits."""
        phase = 2 * np.pi * np.asarray(t, float)[..., None] / self.period
        return self.offset + self.sine * np.sin(phase) + self.cosine * np.cos(phase)

    @staticmethod
    def from_array(model, params, period: float, **kw) -> "PeriodicGait":
        """The gait of parameters (3, alpha) (offsets, sines, cosines) [m] for ``model``."""
        b, c, d = (np.asarray(p, float) for p in np.asarray(params, float))
        return PeriodicGait(model.name, tuple(model.actuator_names), float(period), b, c, d, **kw)


def save_gait(gait: PeriodicGait, path) -> Path:
    """Write ``gait`` as YAML to ``path``; returns the path."""
    doc = {"format": FORMAT, "version": 1, "model": gait.model, "heading_deg": math.degrees(gait.heading),
           "period_s": gait.period, "control_s": gait.control, "note": gait.note,
           "actuators": {a: {"offset": float(b), "sine": float(c), "cosine": float(d)}
                         for a, b, c, d in zip(gait.actuators, gait.offset, gait.sine, gait.cosine)},
           **({"measured": gait.extra} if gait.extra else {})}
    path = Path(path)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def load_gait(path) -> PeriodicGait:
    """The gait of a file written by :func:`save_gait` (ValueError naming what is wrong)."""
    doc = yaml.safe_load(Path(path).read_text())
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"{path}: not a periodic gait file (needs 'format: {FORMAT}')")
    acts = doc["actuators"]
    col = [np.array([float(acts[a][k]) for a in acts]) for k in ("offset", "sine", "cosine")]
    period = float(doc["period_s"])
    if not (math.isfinite(period) and period > 0):
        raise ValueError(f"{path}: period_s must be a positive time [s], got {doc['period_s']}")
    return PeriodicGait(str(doc["model"]), tuple(acts), period, *col, math.radians(float(doc.get("heading_deg", 0))),
                        float(doc.get("control_s", 0.02)), str(doc.get("note", "")), dict(doc.get("measured", {})))


@dataclass(frozen=True)
class GaitRun:
    """``times`` (T,) [s]; ``com`` (T, N, 3) [m] each robot's centre of mass; ``min_clearance`` (N,) [m]
    each robot's smallest capsule clearance (bars and strings, :mod:`.self_collision`) over every control
    step; ``bar_clearance`` (N,) [m] the same for bar pairs only; ``status`` (N,) physics status (0: ran);
    ``yaw`` (T, N) [rad] how far each robot has turned about the vertical since the start (summed best-fit
    turns of its nodes' ground-plane positions from one control step to the next)."""
    times: np.ndarray
    com: np.ndarray
    min_clearance: np.ndarray
    bar_clearance: np.ndarray
    status: np.ndarray
    yaw: np.ndarray

    def displacement(self) -> np.ndarray:
        """(N, 2) [m] net ground-plane displacement of each robot's centre of mass."""
        return self.com[-1, :, :2] - self.com[0, :, :2]

    def along(self, heading: float) -> np.ndarray:
        """(N,) [m] distance moved along ``heading`` [rad]."""
        return self.displacement() @ np.array([math.cos(heading), math.sin(heading)])

    def heading_error(self, heading: float) -> np.ndarray:
        """(N,) [rad] angle between each robot's net displacement and ``heading``."""
        d = self.displacement()
        return np.abs(np.angle(np.exp(1j * (np.arctan2(d[:, 1], d[:, 0]) - heading))))


def gait_env(model, start, num_envs: int, control: float = 0.02, dt: float | None = None, heading: float = 0.0,
             randomise: dict | None = None) -> TensegrityVectorEnv:
    """The vectorised rolling environment a gait is searched and played in: ``num_envs`` robots from
    ``start`` (n, 3) [m], control every ``control`` [s], RK4 at ``dt`` [s] (default the check runs' step,
    :func:`~tensegrity_engine.locomotion.tip_run.check_step`), bar and string capsule clearances measured."""
    from tensegrity_engine.locomotion.tip_run import check_step
    dt = check_step(model, start) if dt is None else float(dt)
    skip = max(1, round(control / dt))
    return TensegrityVectorEnv(model, start, RollingTask(model, num_envs, heading), num_envs=num_envs,
                               frame_skip=skip, dt=control / skip, randomise=randomise, max_episode_steps=None,
                               self_collision="penalty", collision_margin=0.0, collision_penalty=0.0)


def play_gait(model, gait: PeriodicGait, start, duration: float, num_envs: int = 1, seed: int = 0,
              randomise: dict | None = None, env: TensegrityVectorEnv | None = None) -> GaitRun:
    """Play ``gait`` on ``num_envs`` robots of ``model`` at rest at ``start`` (n, 3) [m] for ``duration``
    [s] (robot i seeded ``seed + i``: its ``randomise`` draw); ValueError if the gait's actuators are not the
    model's."""
    if tuple(gait.actuators) != tuple(model.actuator_names):
        raise ValueError(f"the gait drives {list(gait.actuators)}, model '{model.name}' has "
                         f"{list(model.actuator_names)}")
    env = env or gait_env(model, start, num_envs, gait.control, heading=gait.heading, randomise=randomise)
    return rollout(env, lambda t: np.broadcast_to(gait.targets(t), env.u.shape), duration, seed)


def rollout(env: TensegrityVectorEnv, targets, duration: float, seed: int = 0) -> GaitRun:
    """Reset ``env`` (seed) and drive it with ``targets(t)`` (num_envs, alpha) [m] for ``duration`` [s]."""
    from tensegrity_engine.locomotion.bar_clearance import BarClearance
    env.reset(seed=seed)
    bars = BarClearance(env.model)
    steps = int(round(duration / env.period))
    times, com = [0.0], [centre_of_mass(env.model, env.batch.positions)]
    low = np.full(env.num_envs, np.inf)
    bar_low = np.array([bars.min(X) for X in env.batch.positions])
    status = np.zeros(env.num_envs, int)
    yaw, before = [np.zeros(env.num_envs)], env.batch.positions.copy()
    for k in range(steps):
        t = k * env.period
        _, _, term, _, info = env.step(np.clip(targets(t + env.period), env.lo, env.hi))
        low = np.minimum(low, info["min_clearance"])
        bar_low = np.minimum(bar_low, [bars.min(X) for X in env.batch.positions])
        status = np.where(status == 0, info["physics_status"], status)
        times.append(t + env.period)
        com.append(centre_of_mass(env.model, env.batch.positions))
        yaw.append(yaw[-1] + turn(before, env.batch.positions))
        before = env.batch.positions.copy()
    return GaitRun(np.array(times), np.array(com), low, bar_low, status, np.array(yaw))


def turn(X0, X1) -> np.ndarray:
    """(N,) [rad] best-fitting turn about the vertical (2-D Kabsch) of node positions X0 -> X1 (N, n, 3)."""
    a = X0[..., :2] - X0[..., :2].mean(axis=1, keepdims=True)
    b = X1[..., :2] - X1[..., :2].mean(axis=1, keepdims=True)
    H = np.einsum("nki,nkj->nij", a, b)
    return np.arctan2(H[:, 0, 1] - H[:, 1, 0], H[:, 0, 0] + H[:, 1, 1])
