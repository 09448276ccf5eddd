"""The learning environments (tensegrity_engine.learn): gymnasium's own checker on the single envs, the
vector env's spaces, autoreset and seeding, the rewards against the physics they reward, and the optional
extra."""
import subprocess
import sys
import warnings

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from tensegrity_engine.frames import model_frames, rotation_angle  # noqa: E402
from tensegrity_engine.learn import TensegrityVectorEnv  # noqa: E402
from tensegrity_engine.learn.tasks import centre_of_mass  # noqa: E402

ROUNDING = 1e-12      # m: sums of a few dozen float64 terms of order 1 m


def rolling(n, **kw):
    return gymnasium.make_vec("tensegrity/Rolling-v0", num_envs=n, **kw)


def check(env):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*infinity.*")    # unbounded velocities are honest
        check_env(env.unwrapped)


def test_gymnasium_checker_passes_rolling_on_the_ground():
    check(gymnasium.make("tensegrity/Rolling-v0"))


def test_gymnasium_checker_passes_reach_on_the_manipulator():
    check(gymnasium.make("tensegrity/Reach-v0", max_episode_steps=5))


def test_vector_spaces_and_dtypes():
    envs = rolling(3, max_episode_steps=4)
    assert isinstance(envs, TensegrityVectorEnv) and envs.num_envs == 3
    m = envs.model
    assert envs.single_action_space.shape == (len(m.actuator_names),)
    assert np.allclose(envs.single_action_space.low, m.u_limits[:, 0])
    # positions + velocities + contact per node, inputs, heading (cos, sin)
    assert envs.single_observation_space.shape == (7 * m.n_nodes + len(m.actuator_names) + 2,)
    obs, info = envs.reset(seed=0)
    assert obs.dtype == np.float32 and obs.shape == (3,) + envs.single_observation_space.shape
    assert envs.observation_space.contains(obs)
    obs, r, term, trunc, info = envs.step(envs.action_space.sample())
    assert r.shape == (3,) and r.dtype == np.float64
    assert term.dtype == bool and trunc.dtype == bool and not (term.any() or trunc.any())
    assert (info["physics_status"] == 0).all()


def test_autoreset_next_step():
    envs = rolling(2, max_episode_steps=3, randomise={})
    start, _ = envs.reset(seed=1)
    act = np.tile(envs.single_action_space.high, (2, 1))
    for k in range(3):
        obs, r, term, trunc, _ = envs.step(act)
    assert trunc.all() and not term.any()
    assert np.abs(obs - start).max() > 1e-3                     # it moved
    obs, r, term, trunc, _ = envs.step(act)                     # the reset step ignores the action
    assert (r == 0).all() and not (term.any() or trunc.any())
    assert np.array_equal(obs, start)                           # same start, u = 0, no randomisation
    assert (envs.steps == 0).all()
    obs, r, term, trunc, _ = envs.step(act)
    assert (envs.steps == 1).all() and not trunc.any()


def test_same_seed_same_run_bit_for_bit():
    runs = []
    for seed in (5, 5, 6):
        envs = rolling(3, random_yaw=True)
        obs, _ = envs.reset(seed=seed)
        actions = np.random.default_rng(0).uniform(-0.1, 0.1, (4, 3, 24)).astype(np.float32)
        seq = [obs] + [envs.step(a)[0] for a in actions]
        runs.append((np.stack(seq), [v.obstacles[0].friction for v in envs.batch.models]))
    assert np.array_equal(runs[0][0], runs[1][0]) and runs[0][1] == runs[1][1]
    assert not np.array_equal(runs[0][0], runs[2][0]) and runs[0][1] != runs[2][1]
    frictions = runs[0][1]
    assert len(set(frictions)) == 3 and all(0.6 <= f <= 1.0 for f in frictions)    # per robot, in range


def test_randomised_parameters_reach_the_physics():
    envs = rolling(2, randomise={"friction": ("uniform", 0.1, 0.2), "stiffness": ("normal", 1.0, 0.1, 0.8, 1.2)})
    envs.reset(seed=3)
    for i in range(2):
        v = envs.batch.models[i]
        p = envs.batch._prefs[i].arrays          # the arrays the compiled step reads for robot i
        names = [n for n, _ in envs.batch._prefs[i].fields]
        assert np.array_equal(p[names.index("ob_mu")], [v.obstacles[0].friction])
        assert np.array_equal(p[names.index("str_k")], v.string_stiffness)
        assert 0.1 <= v.obstacles[0].friction <= 0.2
    assert not np.array_equal(envs.batch.models[0].string_stiffness, envs.batch.models[1].string_stiffness)


def test_rolling_reward_is_the_distance_rolled_along_the_heading():
    envs = rolling(2, heading=None, randomise={})
    envs.reset(seed=2)
    X0 = envs.batch.positions.copy()
    total = np.zeros(2)
    rng = np.random.default_rng(1)
    for _ in range(6):
        total += envs.step(rng.uniform(-0.3, 0.3, (2, 24)))[1]
    h = envs.task.headings
    d = centre_of_mass(envs.model, envs.batch.positions) - centre_of_mass(envs.model, X0)
    assert np.allclose(total * envs.period, d[:, 0] * np.cos(h) + d[:, 1] * np.sin(h), rtol=0, atol=ROUNDING)
    assert np.abs(d).max() > 1e-3 and h[0] != h[1]


def test_reach_reward_measures_the_frame_error():
    envs = gymnasium.make_vec("tensegrity/Reach-v0", num_envs=2, angle_weight=0.5)
    m = envs.model
    here = model_frames(m, envs.start)["C2"]
    envs.reset(seed=0, options={"target": here})
    obs, r, *_ = envs.step(np.zeros((2, len(m.actuator_names))))
    assert np.abs(r).max() < 1e-6                  # at rest at its own pose: no error (settled to 1e-10 N)
    envs.reset(seed=0)
    u = np.tile(m.u_limits[:, 1], (2, 1))
    for _ in range(3):
        obs, r, *_ = envs.step(u)
    C = model_frames(m, envs.batch.positions)["C2"]
    goal = envs.task.goal
    expect = np.linalg.norm(C[:, :3, 3] - goal[:, :3, 3], axis=1) + 0.5 * rotation_angle(C, goal)
    assert np.allclose(r, -expect, rtol=1e-12) and (expect > 1e-4).all()
    # inputs moved towards the target at the rate limit, no faster
    assert np.allclose(envs.u, 3 * envs.max_rate * envs.period)


def test_rate_actions_integrate_within_the_limits():
    envs = rolling(1, action_mode="rate", max_rate=0.5, randomise={})
    envs.reset(seed=0)
    a = np.zeros((1, 24))
    a[0, 0], a[0, 1] = 0.5, -2.0                     # the second beyond the rate limit: clipped
    for _ in range(40):                              # 0.8 s: 0.4 m asked, the limit is 0.3 m
        envs.step(a)
    assert envs.u[0, 0] == pytest.approx(0.3) and envs.u[0, 1] == pytest.approx(-0.3)


def test_missing_gymnasium_names_the_extra_and_the_core_does_not_need_it():
    code = ("import sys; sys.modules['gymnasium'] = None\n"
            "import tensegrity_engine, tensegrity_engine.dynamics.batch\n"
            "try:\n    import tensegrity_engine.learn\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pip install tensegrity_engine[learn]" in out.stdout


def test_single_env_is_robot_zero_of_the_vector_env():
    """The same seed gives the one-robot env exactly robot 0's run of the vector env (robot i's seed is seed + i)."""
    single = gymnasium.make("tensegrity_engine.learn:tensegrity/Rolling-v0").unwrapped
    envs = rolling(2)
    a, _ = single.reset(seed=9)
    b, _ = envs.reset(seed=9)
    assert np.array_equal(a, b[0])
    act = np.random.default_rng(2).uniform(-0.2, 0.2, (3, 2, 24)).astype(np.float32)
    for k in range(3):
        a, r, *_ = single.step(act[k, 0])
        b, rb, *_ = envs.step(act[k])
        assert np.array_equal(a, b[0]) and r == rb[0]


@pytest.mark.slow
def test_cem_learns_to_roll():
    """bench/train_rolling.py, shortened (6 iterations of 16 robots, 2 s episodes, the motors at their 0.045
    m/s): the gait it finds rolls the randomised robots forward, a random policy does not (measured: +0.239 m
    against at most +0.012 m; the full run: +0.83 m against -0.001 m in 3 s)."""
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
    import train_rolling
    out = train_rolling.train(iterations=6, population=16, elite=4, seconds=2.0, log=lambda text: None)
    assert out["trained"].mean() > 0.15                              # m in 2 s: a tenth of a bar length or more
    assert out["trained"].min() > out["random"].max()                 # every trained robot beats every random one
