"""Learning environments (Gymnasium) for tensegrity robots: N robots stepped in one compiled call
(:mod:`.vector_env`), one robot as a ``gymnasium.Env`` (:mod:`.single_env`), the tasks (:mod:`.tasks`),
per-robot randomised parameters (:mod:`.randomise`), the registered robots and ids (:mod:`.robots`,
:mod:`.envs`, :mod:`.registration`). Needs the optional extra: ``pip install tensegrity_engine[learn]``.

    import gymnasium, tensegrity_engine.learn
    envs = gymnasium.make_vec("tensegrity/Rolling-v0", num_envs=64)
"""
try:
    import gymnasium  # noqa: F401
except ImportError as exc:          # the core engine does not need it
    raise ImportError("tensegrity_engine.learn needs gymnasium: pip install tensegrity_engine[learn] "
                      "(or pip install 'gymnasium>=1.0')") from exc

from tensegrity_engine.learn.registration import ENV_IDS, register_envs
from tensegrity_engine.learn.single_env import TensegrityEnv
from tensegrity_engine.learn.tasks import ReachTask, RollingTask
from tensegrity_engine.learn.vector_env import TensegrityVectorEnv

register_envs()

__all__ = ["ENV_IDS", "ReachTask", "RollingTask", "TensegrityEnv", "TensegrityVectorEnv", "register_envs"]
