"""The environments' ids in gymnasium's registry (done on ``import tensegrity_engine.learn``)."""
from __future__ import annotations

import gymnasium

from tensegrity_engine.learn.envs import REACH_EPISODE, ROLLING_EPISODE

ENV_IDS = {"tensegrity/Rolling-v0": ("rolling_env", "rolling_vector_env", ROLLING_EPISODE),
           "tensegrity/Reach-v0": ("reach_env", "reach_vector_env", REACH_EPISODE)}


def register_envs():
    """Register every id of ENV_IDS with its episode length [control steps] as the spec's
    ``max_episode_steps`` (again is harmless: existing ids are left as they are)."""
    for env_id, (single, vector, episode) in ENV_IDS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=f"tensegrity_engine.learn.envs:{single}",
                               vector_entry_point=f"tensegrity_engine.learn.envs:{vector}",
                               max_episode_steps=episode)
