"""The learning environments' realism: motors at the model's speed by default (spool radius × the simulator
node's 3 rad/s), and the optional sensor noise, observation latency, actuator delay and self-collision
penalty or termination from the exact capsule clearances."""
import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from tensegrity_engine.collision.capsules import check  # noqa: E402
from tensegrity_engine.learn.realism import MOTOR_SPEED  # noqa: E402

ROLLING = "tensegrity/Rolling-v0"
PERIOD = 0.02                  # s: the control period (20 steps of 1 ms)
ROUNDING = 1e-15               # m: a few float64 operations on inputs of order 0.1 m


def rolling(n=2, **kw):
    envs = gymnasium.make_vec(ROLLING, num_envs=n, randomise={}, **kw)
    envs.reset(seed=3)
    return envs


def actions(k, n=2, scale=0.1):
    return np.random.default_rng(k).uniform(-scale, scale, (n, 24)).astype(np.float32)


def test_motors_default_to_the_model_spools_at_the_simulator_speed():
    """3 rad/s (the simulator node's motor_speed_limit default) on the six-bar's 15 mm spools: 0.045 m/s, so
    a full-range target moves u by 0.9 mm per control step; motor_speed and max_rate override it."""
    envs = rolling()
    assert MOTOR_SPEED == 3.0
    assert np.allclose(envs.max_rate, MOTOR_SPEED * envs.model.spool_radius, rtol=0, atol=ROUNDING)
    assert np.allclose(envs.max_rate, 0.045, rtol=0, atol=ROUNDING)
    for _ in range(5):
        envs.step(np.tile(envs.single_action_space.high, (2, 1)))
    assert np.allclose(envs.u, 5 * 0.045 * PERIOD, rtol=0, atol=ROUNDING)
    assert np.allclose(rolling(motor_speed=6.0).max_rate, 0.09, rtol=0, atol=ROUNDING)
    assert np.array_equal(rolling(max_rate=0.5).max_rate, np.full(24, 0.5))
    with pytest.raises(ValueError, match="motor_speed"):
        rolling(motor_speed=0.0)


def run(envs, steps, first=0):
    """Observations and rewards of ``steps`` control steps with the seeded actions ``first``, ``first + 1``, ..."""
    out = [envs.step(actions(first + k, envs.num_envs)) for k in range(steps)]
    return np.stack([o[0] for o in out]), np.stack([o[1] for o in out])


def test_observation_latency_shows_the_state_k_steps_ago():
    k = 3
    late, exact = rolling(observation_latency=k * PERIOD), rolling()
    start = exact.reset(seed=3)[0]
    assert np.array_equal(late.reset(seed=3)[0], start)
    obs_late, r_late = run(late, 8)
    obs, r = run(exact, 8)
    assert np.array_equal(r_late, r)                                  # the physics is untouched
    assert np.array_equal(obs_late[k:], obs[:-k])
    assert all(np.array_equal(o, start) for o in obs_late[:k])      # the reset observation until then
    assert np.abs(obs[-1] - start).max() > 1e-4                      # it did move


def test_actuator_delay_applies_each_action_k_steps_later():
    """With a delay of k periods the inputs, and so the whole run, are those of the undelayed env given
    k 'hold' actions (u = 0 here) first."""
    k = 2
    late, now = rolling(actuator_delay=k * PERIOD), rolling()
    now_obs = [now.step(np.zeros((2, 24)))[0] for _ in range(k)]
    late_obs, _ = run(late, 6)
    now_rest, _ = run(now, 6 - k)
    assert np.array_equal(late_obs, np.concatenate([np.stack(now_obs), now_rest]))
    assert np.abs(late.u).max() > 0


def test_delays_must_be_whole_control_periods():
    for option in ("actuator_delay", "observation_latency"):
        with pytest.raises(ValueError, match=option):
            rolling(**{option: 0.03})
        with pytest.raises(ValueError, match=option):
            rolling(**{option: -PERIOD})


def test_sensor_noise_has_the_given_spread_on_its_observations_only():
    """Noise of 2 mm on positions, 0.05 m/s on velocities, 3 N on contact forces: the difference to the exact
    observations has those standard deviations (8 robots × 10 steps × 36 or 12 entries: a standard error of
    sd / sqrt(2 × 960) = 2.3 % for the smallest sample, so 10 % is 4.4 of them), mean zero, and nothing else
    changes."""
    noisy = rolling(8, position_noise=2e-3, velocity_noise=0.05, contact_noise=3.0)
    exact = rolling(8)
    obs_noisy, r_noisy = run(noisy, 10)
    obs, r = run(exact, 10)
    assert np.array_equal(r_noisy, r)
    diff = (obs_noisy.astype(float) - obs).reshape(-1, obs.shape[-1])
    n = exact.model.n_nodes
    for part, sd in ((slice(0, 3 * n), 2e-3), (slice(3 * n, 6 * n), 0.05), (slice(6 * n, 7 * n), 3.0)):
        d = diff[:, part].ravel()
        assert d.std() == pytest.approx(sd, rel=0.1) and abs(d.mean()) < 4.4 * sd / np.sqrt(len(d))
    assert np.array_equal(obs_noisy[..., 7 * n:], obs[..., 7 * n:])     # inputs and heading exact


def test_self_collision_penalty_is_the_exact_clearance_below_the_margin():
    """Fast motors and random targets bring bars and strings within 0.27 m of each other (0.28 m at rest):
    the penalty is 4 per m below that, from the smallest exact capsule clearance (all pairs, no pruning)."""
    margin, weight = 0.27, 4.0
    penal = rolling(max_rate=0.5, self_collision="penalty", collision_margin=margin, collision_penalty=weight)
    plain = rolling(max_rate=0.5)
    elements = penal.collision.elements
    below = 0
    for k in range(25):
        a = actions(k, scale=0.3)
        _, r_pen, term, _, info = penal.step(a)
        _, r, *_ = plain.step(a)
        clear = np.array([check(elements, X).min_clearance for X in penal.batch.positions])
        assert np.array_equal(info["min_clearance"], clear) and not term.any()
        assert np.allclose(r_pen, r - weight * np.maximum(margin - clear, 0.0), rtol=0, atol=1e-12)
        below += int((clear < margin).sum())
    assert 0 < below < 50                              # some steps of some robots, not all


def test_self_collision_terminates_at_the_first_step_below_the_margin():
    """At 0.215 m three of the four robots' clearances (0.28 m at rest) fall below the margin within 40 steps
    of these fast random targets, one's does not."""
    margin = 0.215
    envs = rolling(4, max_rate=0.5, self_collision="terminate", collision_margin=margin, max_episode_steps=-1)
    elements = envs.collision.elements
    ended = np.full(4, -1)
    for k in range(40):
        _, _, term, _, info = envs.step(actions(k, 4, scale=0.3))
        live = info.get("_physics_status", np.zeros(4, bool))     # robots reset this step have none
        clear = np.array([check(elements, X).min_clearance for X in envs.batch.positions])
        assert np.array_equal(term, live & (clear < margin))
        ended[term & (ended < 0)] = k
    assert (ended >= 0).sum() >= 1 and (ended < 0).sum() >= 1        # some end early, some go on


def test_bad_realism_options_are_refused_with_their_units():
    with pytest.raises(ValueError, match=r"position_noise \[m\]"):
        rolling(position_noise=-1.0)
    with pytest.raises(ValueError, match="self_collision"):
        rolling(self_collision="bounce")
    with pytest.raises(ValueError, match="max_rate"):
        rolling(max_rate=0.0)
