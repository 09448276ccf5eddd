"""One robot as a ``gymnasium.Env``: a thin view of a one-robot :class:`~.vector_env.TensegrityVectorEnv`
(no autoreset: call ``reset`` when an episode ends). As gymnasium's own environments, it never truncates on
its own: ``gymnasium.make`` adds the ``TimeLimit`` wrapper (the registered ``max_episode_steps``, or the one
given to ``make``; -1: none). Its draws come from ``self.np_random`` (seeded by ``reset(seed=...)``), so a
``SyncVectorEnv`` of these steps exactly as the vector environment does."""
from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode

from tensegrity_engine.learn.vector_env import TensegrityVectorEnv


class TensegrityEnv(gymnasium.Env):
    """The arguments of :class:`~.vector_env.TensegrityVectorEnv` (without ``num_envs``, ``max_episode_steps``
    and ``autoreset_mode``) for one robot."""

    metadata = {"render_modes": []}

    def __init__(self, model, start, task, **options):
        self.vector = TensegrityVectorEnv(model, start, task, num_envs=1, autoreset_mode=AutoresetMode.DISABLED,
                                          max_episode_steps=None, **options)
        self.action_space = self.vector.single_action_space
        self.observation_space = self.vector.single_observation_space
        self._seeded = None

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if self._seeded is not self.np_random:         # a new generator (first reset or a new seed)
            self._seeded = self.np_random
            self.vector.seed_robot(0, self.np_random)
        obs, info = self.vector.reset(options=options)
        return obs[0], info

    def step(self, action):
        obs, rewards, terminated, truncated, infos = self.vector.step(np.asarray(action)[None])
        info = {key: value[0].item() for key, value in infos.items() if not key.startswith("_")}
        return obs[0], float(rewards[0]), bool(terminated[0]), bool(truncated[0]), info
