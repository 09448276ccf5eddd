"""The vectorised environment: N robots of one model, stepped together by one compiled call per control step
(:class:`~tensegrity_engine.dynamics.batch.BatchSimulator`), following ``gymnasium.vector.VectorEnv``.

Actions (float32, per robot, actuators in model order): ``action_mode="target"``: the inputs u to reach [m
reeled in], a Box within ``model.u_limits``; each control step moves u linearly towards the target by at
most ``max_rate`` × period; ``"rate"``: u̇ [m/s] in ±``max_rate``, u held within the limits. Observations
(float32): node positions relative to the centre of mass (n×3) [m], node velocities (n×3) [m/s], per node
the contact force magnitude [N] (models with obstacles), the inputs u (alpha) [m], then the task's own
(tasks.py). Autoreset: gymnasium's next-step mode (a robot that finished is reset by the following
``step``, whose action it ignores, with reward 0).
"""
from __future__ import annotations

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from tensegrity_engine.dynamics.batch import BatchSimulator
from tensegrity_engine.learn.randomise import Randomiser
from tensegrity_engine.learn.tasks import centre_of_mass

ACTION_MODES = ("target", "rate")


class TensegrityVectorEnv(VectorEnv):
    """``num_envs`` robots of ``model`` (starting at rest at ``start`` (n,3) [m]) doing ``task`` (tasks.py).

    ``frame_skip`` physics steps of RK4 at ``dt`` [s] per control step; ``randomise`` {sweep parameter:
    ("uniform", lo, hi) | ("normal", mean, sd[, lo, hi])} drawn per robot at each reset (docs/sweeps.md's
    parameters; ``velocity_sigma`` [m/s] gives random initial node velocities); ``random_yaw`` turns each
    robot about the vertical through its centre of mass by a uniform angle at reset; episodes end after
    ``max_episode_steps`` control steps (truncation) or when a robot's physics fails (termination,
    ``infos['physics_status']`` != 0)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, model, start, task, num_envs: int = 1, frame_skip: int = 20, dt: float = 1e-3,
                 action_mode: str = "target", max_rate: float = 0.5, randomise: dict | None = None,
                 random_yaw: bool = False, max_episode_steps: int = 250, autoreset: bool = True):
        if action_mode not in ACTION_MODES:
            raise ValueError(f"action_mode must be one of {ACTION_MODES}, got {action_mode!r}")
        if not (int(frame_skip) == frame_skip and frame_skip >= 1 and max_episode_steps >= 1 and max_rate > 0):
            raise ValueError("frame_skip and max_episode_steps must be positive integers and max_rate [m/s] > 0")
        if not len(model.actuator_names):
            raise ValueError(f"model '{model.name}' has no actuators: there is nothing to act with")
        self.model, self.task, self.start = model, task, np.asarray(start, float)
        self.num_envs, self.frame_skip, self.period = int(num_envs), int(frame_skip), frame_skip * float(dt)
        self.action_mode, self.max_rate, self.random_yaw = action_mode, float(max_rate), bool(random_yaw)
        self.max_episode_steps, self.autoreset = int(max_episode_steps), bool(autoreset)
        self.batch = BatchSimulator(model, self.num_envs, dt=dt)
        self.randomiser = Randomiser(model, randomise or {})
        self.lo, self.hi = model.u_limits[:, 0].astype(float), model.u_limits[:, 1].astype(float)
        self._contacts = bool(model.obstacles)
        self.single_action_space = (spaces.Box(self.lo.astype(np.float32), self.hi.astype(np.float32))
                                    if action_mode == "target" else
                                    spaces.Box(-self.max_rate, self.max_rate, (len(self.lo),), np.float32))
        size = model.n_nodes * (6 + self._contacts) + len(self.lo) + task.extra_size
        self.single_observation_space = spaces.Box(-np.inf, np.inf, (size,), np.float32)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.u = np.zeros((self.num_envs, len(self.lo)))
        self.steps = np.zeros(self.num_envs, np.int64)
        self._rngs = [np.random.default_rng() for _ in range(self.num_envs)]
        self._done = np.zeros(self.num_envs, bool)

    def reset(self, *, seed=None, options=None):
        """Reset every robot (new parameters, start, task goal); ``seed`` (int) makes the run reproducible:
        robot i then draws from ``numpy.random.default_rng([seed, i])``. ``options``: the task's (e.g.
        ``heading`` [rad], ``target`` 4x4 pose)."""
        super().reset(seed=seed)
        if seed is not None:
            self._rngs = [np.random.default_rng([int(seed), i]) for i in range(self.num_envs)]
        for i in range(self.num_envs):
            self._reset_robot(i, options or {})
        self._done[:] = False
        return self._observe(), {}

    def _reset_robot(self, i: int, options: dict):
        rng = self._rngs[i]
        variant, velocities = self.randomiser.draw(rng)
        self.batch.set_model(i, variant)
        X = self.start
        if self.random_yaw:
            c = centre_of_mass(self.model, X)
            a = rng.uniform(-np.pi, np.pi)
            Rz = np.array([[np.cos(a), -np.sin(a), 0.0], [np.sin(a), np.cos(a), 0.0], [0.0, 0.0, 1.0]])
            X = (X - c) @ Rz.T + c
            velocities = None if velocities is None else velocities @ Rz.T
        self.batch.reset(i, X, velocities)
        self.u[i] = 0.0
        self.steps[i] = 0
        self.task.begin(i, rng, self.batch.positions[i:i + 1], options)

    def targets(self, actions) -> np.ndarray:
        """The inputs u (num_envs, alpha) [m] the actions lead to by the end of this control step."""
        a = np.asarray(actions, float).reshape(self.u.shape)
        if not np.all(np.isfinite(a)):
            raise ValueError("actions must be finite numbers")
        step = self.max_rate * self.period
        if self.action_mode == "rate":
            return np.minimum(np.maximum(self.u + np.minimum(np.maximum(a * self.period, -step), step), self.lo),
                              self.hi)
        target = np.minimum(np.maximum(a, self.lo), self.hi)
        return np.minimum(np.maximum(target, self.u - step), self.u + step)

    def step(self, actions):
        """One control step of every robot: (observations, rewards, terminations, truncations, infos)."""
        u_to = self.targets(actions)
        resetting = self._done.copy() if self.autoreset else np.zeros(self.num_envs, bool)
        X0 = self.batch.positions.copy()
        status = self.batch.advance(self.period, self.u, u_to, active=~resetting).copy()
        moved = ~resetting & (status == 0)
        self.u[moved] = u_to[moved]
        rewards = np.where(moved, self.task.reward(X0, self.batch.positions, self.period), 0.0)
        self.steps[~resetting] += 1
        terminated = (status != 0) & ~resetting
        truncated = (self.steps >= self.max_episode_steps) & ~terminated & ~resetting
        for i in np.flatnonzero(resetting):
            self._reset_robot(i, {})
        self._done = terminated | truncated
        return (self._observe(), rewards.astype(np.float64), terminated, truncated,
                {"physics_status": status})

    def _observe(self) -> np.ndarray:
        X, V = self.batch.positions, self.batch.velocities
        c = centre_of_mass(self.model, X)
        parts = [(X - c[:, None, :]).reshape(self.num_envs, -1), V.reshape(self.num_envs, -1)]
        if self._contacts:
            parts.append(self.batch.contact_forces())
        parts += [self.u, self.task.extra(X)]
        return np.concatenate(parts, axis=1).astype(np.float32)
