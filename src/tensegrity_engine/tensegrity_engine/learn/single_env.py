"""One robot as a ``gymnasium.Env``: a thin view of a one-robot :class:`~.vector_env.TensegrityVectorEnv`
(no autoreset: call ``reset`` when an episode ends), for ``gymnasium.utils.env_checker.check_env`` and
single-environment learners."""
from __future__ import annotations

import gymnasium
import numpy as np

from tensegrity_engine.learn.vector_env import TensegrityVectorEnv


class TensegrityEnv(gymnasium.Env):
    """The arguments of :class:`~.vector_env.TensegrityVectorEnv` (without ``num_envs``) for one robot."""

    metadata = {"render_modes": []}

    def __init__(self, model, start, task, **options):
        self.vector = TensegrityVectorEnv(model, start, task, num_envs=1, autoreset=False, **options)
        self.action_space = self.vector.single_action_space
        self.observation_space = self.vector.single_observation_space

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        obs, info = self.vector.reset(seed=seed, options=options)
        return obs[0], info

    def step(self, action):
        obs, rewards, terminated, truncated, info = self.vector.step(np.asarray(action)[None])
        return (obs[0], float(rewards[0]), bool(terminated[0]), bool(truncated[0]),
                {"physics_status": int(info["physics_status"][0])})
