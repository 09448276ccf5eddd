"""The registered environments' factories (``gymnasium.make`` / ``gymnasium.make_vec`` call these):

* ``tensegrity/Rolling-v0``: the SUPERball-like six-bar (24 actuated strings) on the ground rolls along a
  heading (default +x); friction and string stiffness drawn per robot and episode by default.
* ``tensegrity/Reach-v0``: the stacked manipulator brings its top plate frame ``C2`` to a target pose from
  a pool of poses it reaches at rest.

Keyword arguments go to :class:`~.vector_env.TensegrityVectorEnv` (``frame_skip``, ``dt``, ``action_mode``,
``motor_speed``, ``max_rate``, ``randomise``, ``random_yaw``, the realism and self-collision options; the vector
factories also ``max_episode_steps`` and ``autoreset_mode``) and to the task (``heading``; ``frame``,
``angle_weight``, ``targets``). The episode lengths are the registered specs' ``max_episode_steps``:
``gymnasium.make`` applies them with its ``TimeLimit`` wrapper, ``gymnasium.make_vec`` passes them on."""
from __future__ import annotations

import functools

from tensegrity_engine.learn.robots import manipulator, reachable_poses, six_bar_on_ground
from tensegrity_engine.learn.single_env import TensegrityEnv
from tensegrity_engine.learn.tasks import ReachTask, RollingTask
from tensegrity_engine.learn.vector_env import TensegrityVectorEnv

ROLLING_RANDOMISE = {"friction": ("uniform", 0.6, 1.0), "stiffness": ("uniform", 0.9, 1.1)}
ROLLING_EPISODE = 250          # control steps: 5 s at 50 Hz
REACH_EPISODE = 100            # control steps: 2 s at 50 Hz


@functools.lru_cache(maxsize=4)
def target_pool(frame: str = "C2"):
    """Poses of the manipulator's ``frame`` it reaches at rest (robots.reachable_poses), once per process."""
    return reachable_poses(manipulator()[0], frame)


def _rolling(n: int, heading=0.0, friction: float = 0.8, randomise=None, **kw):
    model, start = six_bar_on_ground(friction)
    kw.update(randomise=ROLLING_RANDOMISE if randomise is None else randomise)
    return model, start, RollingTask(model, n, heading), kw


def _reach(n: int, frame="C2", angle_weight=0.1, targets=None, **kw):
    model, start = manipulator()
    task = ReachTask(model, n, frame, target_pool(frame) if targets is None else targets, angle_weight)
    return model, start, task, kw


def rolling_env(**kwargs) -> TensegrityEnv:
    model, start, task, kw = _rolling(1, **kwargs)
    return TensegrityEnv(model, start, task, **kw)


def rolling_vector_env(num_envs: int = 1, max_episode_steps=ROLLING_EPISODE, **kwargs) -> TensegrityVectorEnv:
    model, start, task, kw = _rolling(num_envs, **kwargs)
    return TensegrityVectorEnv(model, start, task, num_envs=num_envs, max_episode_steps=max_episode_steps, **kw)


def reach_env(**kwargs) -> TensegrityEnv:
    model, start, task, kw = _reach(1, **kwargs)
    return TensegrityEnv(model, start, task, **kw)


def reach_vector_env(num_envs: int = 1, max_episode_steps=REACH_EPISODE, **kwargs) -> TensegrityVectorEnv:
    model, start, task, kw = _reach(num_envs, **kwargs)
    return TensegrityVectorEnv(model, start, task, num_envs=num_envs, max_episode_steps=max_episode_steps, **kw)
