"""The environments' ids in gymnasium's registry (done on ``import tensegrity_engine.learn``)."""
from __future__ import annotations

import gymnasium

ENV_IDS = {"tensegrity/Rolling-v0": ("rolling_env", "rolling_vector_env"),
           "tensegrity/Reach-v0": ("reach_env", "reach_vector_env")}


def register_envs():
    """Register every id of ENV_IDS (again is harmless: existing ids are left as they are)."""
    for env_id, (single, vector) in ENV_IDS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=f"tensegrity_engine.learn.envs:{single}",
                               vector_entry_point=f"tensegrity_engine.learn.envs:{vector}")
