"""The learning environments follow Gymnasium's conventions (gymnasium 1.4, as locked): ``gymnasium.make``'s
``max_episode_steps`` (its TimeLimit wrapper) sets the single env's episode, the registered spec carries the
default, vector infos carry ``_key`` masks, the autoreset modes behave as gymnasium's own ``SyncVectorEnv``
over the single env (bit for bit, sensor noise and terminations included), seeds s + i per robot."""
import warnings

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402
from gymnasium.vector import AutoresetMode  # noqa: E402

import tensegrity_engine.learn  # noqa: E402,F401

ROLLING = "tensegrity/Rolling-v0"
# a margin just under the six-bar's clearance at rest (0.2805 m): random actions end some episodes early, so
# the comparisons meet terminations, truncations and both together
NEAR_REST_CLEARANCE = 0.2795
REALISM = dict(position_noise=1e-3, velocity_noise=1e-2, contact_noise=0.5, observation_latency=0.02, occlusion=0.3,
               actuator_delay=0.02, self_collision="terminate", collision_margin=NEAR_REST_CLEARANCE, max_rate=0.5)


def steps_until_done(env, limit: int) -> int:
    env.reset(seed=0)
    for k in range(1, limit + 1):
        *_, terminated, truncated, _ = env.step(np.zeros(env.action_space.shape, np.float32))
        if terminated or truncated:
            return k
    return limit + 1


def test_make_max_episode_steps_sets_the_episode_of_the_single_env():
    """TimeLimit alone truncates: 300 given to make is 300 (it was 250, the env's own limit, before)."""
    assert gymnasium.spec(ROLLING).max_episode_steps == 250
    assert steps_until_done(gymnasium.make(ROLLING, max_episode_steps=300), 400) == 300
    assert steps_until_done(gymnasium.make(ROLLING), 400) == 250
    assert steps_until_done(gymnasium.make(ROLLING, max_episode_steps=-1), 260) == 261     # no limit


def test_make_vec_takes_the_spec_episode_unless_given():
    assert gymnasium.make_vec(ROLLING, num_envs=2).unwrapped.max_episode_steps == 250
    assert gymnasium.make_vec("tensegrity/Reach-v0", num_envs=2).unwrapped.max_episode_steps == 100
    envs = gymnasium.make_vec(ROLLING, num_envs=2, max_episode_steps=3, randomise={})
    envs.reset(seed=0)
    truncs = [envs.step(np.zeros((2, 24)))[3].copy() for _ in range(3)]
    assert not truncs[1].any() and truncs[2].all()


def test_vector_infos_carry_gymnasium_masks():
    """A robot reset by next-step autoreset has no physics_status that step (its mask False), as
    VectorEnv._add_info builds infos; the others have it."""
    envs = gymnasium.make_vec(ROLLING, num_envs=3, max_episode_steps=3, randomise={})
    envs.reset(seed=0)
    _, _, _, _, info = envs.step(np.zeros((3, 24)))
    assert set(info) == {"physics_status", "_physics_status"} and info["_physics_status"].all()
    envs.steps[1] = 2                                  # robot 1 one step ahead: it truncates one step early
    _, _, _, trunc, info = envs.step(np.zeros((3, 24)))
    assert trunc.tolist() == [False, True, False]
    _, _, _, _, info = envs.step(np.zeros((3, 24)))    # robot 1 is reset by this step
    assert info["_physics_status"].tolist() == [True, False, True]
    assert info["_physics_status"].dtype == np.bool_ and info["physics_status"].dtype == np.int64


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_vector_env_steps_as_gymnasium_sync_vector_env_of_the_single_env(mode):
    """Same seed, same actions: the compiled vector env and gymnasium's SyncVectorEnv over the single env
    (with make's TimeLimit) give identical observations, rewards, flags and infos (masks, final_obs,
    final_info) in every autoreset mode, noise, latency, delay and self-collision terminations included."""
    n, steps = 3, 9
    ours = gymnasium.make_vec(ROLLING, num_envs=n, max_episode_steps=4, autoreset_mode=mode, **REALISM)
    sync = gymnasium.make_vec(ROLLING, num_envs=n, max_episode_steps=4, vectorization_mode="sync",
                              vector_kwargs={"autoreset_mode": mode}, **REALISM)
    assert ours.metadata["autoreset_mode"] is mode is sync.metadata["autoreset_mode"]
    assert_same(ours.reset(seed=11), sync.reset(seed=11))
    rng = np.random.default_rng(0)
    ended, ends = np.zeros(n, bool), 0
    for _ in range(steps):
        if mode is AutoresetMode.DISABLED and ended.any():
            assert_same(ours.reset(options={"reset_mask": ended.copy()}),
                        sync.reset(options={"reset_mask": ended.copy()}))
        action = rng.uniform(-0.2, 0.2, (n, 24)).astype(np.float32)
        a, b = ours.step(action), sync.step(action)
        assert_same(a, b)
        ended = a[2] | a[3]
        ends += int(a[2].sum())
    assert ends > 0                                    # a self-collision termination was compared too


def assert_same(a, b):
    """Equal gymnasium results: arrays bit for bit, dicts key by key, object arrays element by element."""
    if isinstance(a, dict):
        assert set(a) == set(b), (sorted(a), sorted(b))
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(a, np.ndarray) and a.dtype == object:
        assert a.shape == b.shape
        for x, y in zip(a, b):
            assert (x is None and y is None) or np.array_equal(x, y)
    else:
        assert np.asarray(a).dtype == np.asarray(b).dtype and np.array_equal(a, b), (a, b)


def test_disabled_autoreset_refuses_to_step_an_ended_robot_until_reset():
    envs = gymnasium.make_vec(ROLLING, num_envs=2, max_episode_steps=1, autoreset_mode="Disabled", randomise={})
    envs.reset(seed=0)
    envs.step(np.zeros((2, 24)))
    with pytest.raises(ValueError, match="reset_mask"):
        envs.step(np.zeros((2, 24)))
    envs.reset(options={"reset_mask": np.array([True, True])})
    envs.step(np.zeros((2, 24)))
    with pytest.raises(ValueError, match="reset_mask"):
        envs.reset(options={"reset_mask": np.array([1, 0])})


def test_seeds_follow_sync_vector_env_robot_i_gets_seed_plus_i():
    envs = gymnasium.make_vec(ROLLING, num_envs=3)
    single = gymnasium.make(ROLLING).unwrapped
    obs, _ = envs.reset(seed=40)
    for i in range(3):
        assert np.array_equal(single.reset(seed=40 + i)[0], obs[i])
        friction = envs.unwrapped.batch.models[i].obstacles[0].friction
        assert single.vector.batch.models[0].obstacles[0].friction == friction
    listed, _ = envs.reset(seed=[42, 41, 40])
    assert np.array_equal(listed[0], obs[2]) and np.array_equal(listed[2], obs[0])


def test_gymnasium_checker_passes_with_every_realism_option():
    """check_env also resets twice with one seed and compares: noise and latency are seeded."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*infinity.*")
        check_env(gymnasium.make(ROLLING, **REALISM).unwrapped)
