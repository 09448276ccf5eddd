"""The vectorised environment: N robots of one model, stepped together by one compiled call per control step
(:class:`~tensegrity_engine.dynamics.batch.BatchSimulator`), following ``gymnasium.vector.VectorEnv``.

Actions (float32, per robot, actuators in model order): ``action_mode="target"``: the inputs u to reach [m
reeled in], a Box within ``model.u_limits``; each control step moves u linearly towards the target by at
most the motors' speed × period; ``"rate"``: u̇ [m/s] within ± the motors' speed, u held within the limits.
Observations (float32): node positions relative to the centre of mass (n×3) [m], node velocities (n×3)
[m/s], per node the contact force magnitude [N] (models with obstacles), the inputs u (alpha) [m], then the
task's own (tasks.py). Autoreset: any of gymnasium's modes (``autoreset_mode``, default next-step); infos
carry gymnasium's ``_key`` masks (``VectorEnv._add_info``): a robot has ``physics_status`` (and
``min_clearance`` [m] with self-collision on) when it was stepped, not when it was reset.
"""
from __future__ import annotations

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from tensegrity_engine.dynamics.batch import BatchSimulator
from tensegrity_engine.learn.randomise import Randomiser
from tensegrity_engine.learn.realism import MOTOR_SPEED, CommandDelay, Sensors, input_rates, whole_steps
from tensegrity_engine.learn.self_collision import SelfCollision
from tensegrity_engine.learn.tasks import centre_of_mass

ACTION_MODES = ("target", "rate")
NO_LIMIT = (None, -1)          # max_episode_steps meaning "never truncate" (gymnasium.make's -1 included)


class TensegrityVectorEnv(VectorEnv):
    """``num_envs`` robots of ``model`` (starting at rest at ``start`` (n,3) [m]) doing ``task`` (tasks.py).

    Physics: ``frame_skip`` steps of RK4 at ``dt`` [s] per control step. Motors: u changes at most
    ``max_rate`` [m/s] (one or per actuator; default ``motor_speed`` [rad/s] × the spool radii).
    ``randomise`` {sweep parameter: ("uniform", lo, hi) | ("normal", mean, sd[, lo, hi])} drawn per robot at
    each reset (docs/sweeps.md); ``random_yaw`` turns each robot about the vertical at reset. Episodes end
    after ``max_episode_steps`` control steps (truncation; None or -1: never), when a robot's physics fails
    (termination, ``physics_status`` != 0) or, with ``self_collision="terminate"``, when its smallest capsule
    clearance falls below ``collision_margin`` [m] (``"penalty"``: the reward loses ``collision_penalty``
    per m below it). Realism options (off by default): ``position_noise`` [m], ``velocity_noise`` [m/s],
    ``contact_noise`` [N] (Gaussian standard deviations on those observations), ``observation_latency`` [s]
    (observations that old), ``actuator_delay`` [s] (actions act that much later; both whole control periods),
    ``occlusion`` (fraction of frames with hidden nodes, which repeat their last report: realism.Sensors)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, model, start, task, num_envs: int = 1, frame_skip: int = 20, dt: float = 1e-3,
                 action_mode: str = "target", motor_speed: float = MOTOR_SPEED, max_rate=None,
                 randomise: dict | None = None, random_yaw: bool = False, max_episode_steps: int | None = None,
                 autoreset_mode=AutoresetMode.NEXT_STEP, position_noise: float = 0.0, velocity_noise: float = 0.0,
                 contact_noise: float = 0.0, observation_latency: float = 0.0, actuator_delay: float = 0.0,
                 occlusion: float = 0.0, self_collision=None, collision_margin: float = 0.0,
                 collision_penalty: float = 10.0):
        if action_mode not in ACTION_MODES:
            raise ValueError(f"action_mode must be one of {ACTION_MODES}, got {action_mode!r}")
        if not (int(frame_skip) == frame_skip and frame_skip >= 1):
            raise ValueError(f"frame_skip must be a positive integer, got {frame_skip}")
        if max_episode_steps not in NO_LIMIT and not (int(max_episode_steps) == max_episode_steps >= 1):
            raise ValueError("max_episode_steps must be a positive integer (None or -1: no limit), "
                             f"got {max_episode_steps}")
        if not len(model.actuator_names):
            raise ValueError(f"model '{model.name}' has no actuators: there is nothing to act with")
        self.model, self.task, self.start = model, task, np.asarray(start, float)
        self.num_envs, self.frame_skip, self.period = int(num_envs), int(frame_skip), frame_skip * float(dt)
        self.action_mode, self.random_yaw = action_mode, bool(random_yaw)
        self.max_rate = input_rates(model, motor_speed, max_rate)
        self.max_episode_steps = None if max_episode_steps in NO_LIMIT else int(max_episode_steps)
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = {**type(self).metadata, "autoreset_mode": self.autoreset_mode}
        self.batch = BatchSimulator(model, self.num_envs, dt=dt)
        self.randomiser = Randomiser(model, randomise or {})
        self.collision = SelfCollision(model, self_collision, collision_margin, collision_penalty)
        self.lo, self.hi = model.u_limits[:, 0].astype(float), model.u_limits[:, 1].astype(float)
        self._contacts = bool(model.obstacles)
        self._spaces(task)
        self.delay = CommandDelay(whole_steps(actuator_delay, self.period, "actuator_delay"), self.num_envs,
                                  len(self.lo))
        self.sensors = Sensors(whole_steps(observation_latency, self.period, "observation_latency"),
                               self._noise_levels(position_noise, velocity_noise, contact_noise), self.num_envs,
                               occlusion, self._node_of_entry())
        self.u = np.zeros((self.num_envs, len(self.lo)))
        self.steps = np.zeros(self.num_envs, np.int64)
        self._rngs, self._noise_rngs = [None] * self.num_envs, [None] * self.num_envs
        for i in range(self.num_envs):
            self.seed_robot(i, np.random.default_rng())
        self._done = np.zeros(self.num_envs, bool)
        self._obs = np.zeros(self.observation_space.shape, np.float32)

    def _spaces(self, task):
        self.single_action_space = (spaces.Box(self.lo.astype(np.float32), self.hi.astype(np.float32))
                                    if self.action_mode == "target" else
                                    spaces.Box(-self.max_rate.astype(np.float32), self.max_rate.astype(np.float32)))
        size = self.model.n_nodes * (6 + self._contacts) + len(self.lo) + task.extra_size
        self.single_observation_space = spaces.Box(-np.inf, np.inf, (size,), np.float32)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)

    def _noise_levels(self, position: float, velocity: float, contact: float) -> np.ndarray:
        """Per observation entry, the standard deviation of its sensor noise (in the entry's unit)."""
        levels = np.array([position, velocity, contact], float)
        if not (np.all(np.isfinite(levels)) and np.all(levels >= 0)):
            raise ValueError(f"position_noise [m], velocity_noise [m/s] and contact_noise [N] must be finite "
                             f"and >= 0, got {position}, {velocity}, {contact}")
        n = self.model.n_nodes
        parts = [np.full(3 * n, position), np.full(3 * n, velocity)] + ([np.full(n, contact)] if self._contacts else [])
        out = np.zeros(self.single_observation_space.shape)
        out[:sum(map(len, parts))] = np.concatenate(parts)
        return out

    def _node_of_entry(self) -> np.ndarray:
        """(size,) the node each observation entry belongs to (positions, velocities, contacts), -1 for none."""
        n = self.model.n_nodes
        nodes = [np.repeat(np.arange(n), 3)] * 2 + ([np.arange(n)] if self._contacts else [])
        out = np.full(self.single_observation_space.shape, -1)
        out[:sum(map(len, nodes))] = np.concatenate(nodes)
        return out

    def seed_robot(self, i: int, generator):
        """Robot ``i`` draws its parameters, start and goal from ``generator`` (numpy Generator) from now on,
        its sensor noise from a generator spawned from it."""
        self._rngs[i], self._noise_rngs[i] = generator, generator.spawn(1)[0]

    def reset(self, *, seed=None, options=None):
        """Reset every robot, or those of ``options['reset_mask']`` ((num_envs,) bool), as gymnasium's vector
        environments do: new parameters, start, task goal. ``seed``: an int s seeds robot i with
        ``numpy.random.default_rng(s + i)``, a list gives each robot's seed (None: fresh entropy). Other
        ``options`` go to the task (``heading`` [rad], ``target`` 4x4 pose)."""
        super().reset(seed=int(seed) if isinstance(seed, (int, np.integer)) else None)
        options = dict(options or {})
        mask = _reset_mask(options.pop("reset_mask", None), self.num_envs)
        if seed is not None:
            seeds = [seed + i for i in range(self.num_envs)] if isinstance(seed, (int, np.integer)) else list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"a list of seeds needs one per robot ({self.num_envs}), got {len(seeds)}")
            for i in np.flatnonzero(mask):
                self.seed_robot(i, np.random.default_rng(seeds[i]))
        robots = np.flatnonzero(mask)
        self._done[robots] = False
        self._obs[robots] = self._reset_robots(robots, options)
        return self._obs.copy(), {}

    def _reset_robots(self, robots, options: dict) -> np.ndarray:
        """Reset ``robots`` (indices); their first observations (len(robots), size)."""
        if not len(robots):
            return self._obs[robots]
        for i in robots:
            self._reset_robot(i, options)
        self.delay.clear(robots)
        self.sensors.restart(robots, self._measure()[robots])
        return self.sensors.report(self._noise_rngs, robots)

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
        """The inputs u (num_envs, alpha) [m] the actions lead to by the end of this control step (NaN entries:
        the motor holds)."""
        a = np.asarray(actions, float).reshape(self.u.shape)
        step = self.max_rate * self.period
        hold = np.isnan(a)
        if self.action_mode == "rate":
            rate_step = np.minimum(np.maximum(np.where(hold, 0.0, a) * self.period, -step), step)
            return np.minimum(np.maximum(self.u + rate_step, self.lo), self.hi)
        target = np.minimum(np.maximum(np.where(hold, self.u, a), self.lo), self.hi)
        return np.minimum(np.maximum(target, self.u - step), self.u + step)

    def step(self, actions):
        """One control step of every robot: (observations, rewards, terminations, truncations, infos)."""
        actions = np.asarray(actions, float).reshape(self.u.shape)
        if not np.all(np.isfinite(actions)):
            raise ValueError("actions must be finite numbers")
        if self.autoreset_mode is AutoresetMode.DISABLED and self._done.any():
            raise ValueError(f"robots {np.flatnonzero(self._done).tolist()} ended their episodes: reset them "
                             "first (reset(options={'reset_mask': mask}) resets some)")
        stepped = ~self._done if self.autoreset_mode is AutoresetMode.NEXT_STEP else np.ones(self.num_envs, bool)
        u_to = self.targets(self.delay.push(actions))
        X0 = self.batch.positions.copy()
        status = self.batch.advance(self.period, self.u, u_to, active=stepped).copy()
        moved = stepped & (status == 0)
        self.u[moved] = u_to[moved]
        rewards = self.task.reward(X0, self.batch.positions, self.period)
        info = {"physics_status": status}
        collided = np.zeros(self.num_envs, bool)
        if self.collision.mode is not None:
            info["min_clearance"], rewards, collided = self.collision.judge(self.batch.positions, rewards)
        rewards = np.where(moved, rewards, 0.0)
        self.steps[stepped] += 1
        terminated = stepped & ((status != 0) | collided)
        truncated = (stepped & (self.steps >= self.max_episode_steps) if self.max_episode_steps
                     else np.zeros(self.num_envs, bool))
        obs, infos = self._observe_after_step(stepped, terminated | truncated, info)
        return obs, rewards.astype(np.float64), terminated, truncated, infos

    def _observe_after_step(self, stepped, done, info) -> tuple:
        """Observations and masked infos of a step; robots reset as the autoreset mode says."""
        self.sensors.record(self._measure())
        obs = self._obs
        every = bool(stepped.all())
        live = None if every else np.flatnonzero(stepped)
        obs[slice(None) if every else live] = self.sensors.report(self._noise_rngs, live)
        infos = _masked(info, stepped)
        if self.autoreset_mode is AutoresetMode.SAME_STEP and done.any():
            final_obs = np.full(self.num_envs, None, object)
            for i in np.flatnonzero(done):
                final_obs[i] = obs[i].copy()
            infos = {**_masked(info, stepped & ~done), "final_obs": final_obs, "_final_obs": done.copy(),
                     "final_info": _masked(info, done), "_final_info": done.copy()}
            robots = np.flatnonzero(done)
            obs[robots] = self._reset_robots(robots, {})
            done = np.zeros(self.num_envs, bool)
        elif self.autoreset_mode is AutoresetMode.NEXT_STEP and not every:
            robots = np.flatnonzero(~stepped)
            obs[robots] = self._reset_robots(robots, {})
        self._done = done
        return obs.copy(), infos

    def _measure(self) -> np.ndarray:
        """The true observations (num_envs, size) of the robots' current states."""
        X, V = self.batch.positions, self.batch.velocities
        c = centre_of_mass(self.model, X)
        parts = [(X - c[:, None, :]).reshape(self.num_envs, -1), V.reshape(self.num_envs, -1)]
        if self._contacts:
            parts.append(self.batch.contact_forces())
        parts += [self.u, self.task.extra(X)]
        return np.concatenate(parts, axis=1).astype(np.float32)


def _masked(info: dict, mask) -> dict:
    """Per-robot info arrays as gymnasium's vector infos give them: each key with its ``_key`` mask, zeros where
    a robot has no value, keys no robot has left out."""
    if not mask.any():
        return {}
    out = {}
    for key, value in info.items():
        out[key], out[f"_{key}"] = np.where(mask, value, np.zeros((), value.dtype)), mask.copy()
    return out


def _reset_mask(mask, n: int) -> np.ndarray:
    """``options['reset_mask']`` checked as gymnasium's SyncVectorEnv checks it (None: every robot)."""
    if mask is None:
        return np.ones(n, bool)
    if not isinstance(mask, np.ndarray) or mask.shape != (n,) or mask.dtype != np.bool_ or not mask.any():
        raise ValueError(f"options['reset_mask'] must be a numpy bool array of shape ({n},) with a True, got {mask!r}")
    return mask
