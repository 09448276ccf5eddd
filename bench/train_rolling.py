#!/usr/bin/env python3
"""Learn to roll: the cross-entropy method (NumPy only) over an open-loop periodic gait on the vectorised
rolling environment (``tensegrity/Rolling-v0``, the SUPERball-like six-bar on the ground, friction and string
stiffness drawn per robot at each reset), one robot per candidate gait. Not a timed test.

    .venv/bin/python bench/train_rolling.py [--iterations 12] [--population 32] [--seconds 3]

Gait: every actuator's target u_a(t) = b_a + c_a sin(2π t / T) + d_a cos(2π t / T) [m] (clipped to the limits; the
environment moves u at most at the motors' speed, 0.045 m/s), T = ``--period``; the 72 numbers (b, c, d) are the
search space, a Gaussian per number refit each iteration to the best ``--elite`` candidates by distance rolled
along +x in ``--seconds``. Printed: the distance of a random policy (uniform random targets every control step)
and of the initial random gaits, the mean and best per iteration, and the final mean gait's distance on fresh
robots (other seeds, randomised parameters) against the random policy's on the same robots.
"""
import argparse
import time

import gymnasium
import numpy as np

import tensegrity_engine.learn  # noqa: F401  (registers the ids)


def gait_actions(params, k, period_steps) -> np.ndarray:
    """Targets (N, alpha) [m] at control step k for gait parameters (N, 3, alpha): offsets, sine, cosine."""
    phase = 2 * np.pi * k / period_steps
    return params[:, 0] + params[:, 1] * np.sin(phase) + params[:, 2] * np.cos(phase)


def rollout(env, policy, steps, seed) -> np.ndarray:
    """Distance [m] each robot's centre of mass rolls along its heading in ``steps`` control steps of
    ``policy(k)`` (N, alpha) from a reset with ``seed``: the return times the control period."""
    env.reset(seed=seed)
    total = np.zeros(env.num_envs)
    for k in range(steps):
        total += env.step(policy(k))[1]
    return total * env.period


def train(iterations=12, population=32, elite=6, seconds=3.0, period=1.0, seed=0, log=print) -> dict:
    """Run the search (module docstring); returns the distances [m] (arrays over the robots) of the random
    policy and the trained gait on the same fresh robots, and the final gait parameters (3, alpha)."""
    env = gymnasium.make_vec("tensegrity/Rolling-v0", num_envs=population, max_episode_steps=10 ** 6)
    steps, period_steps = int(round(seconds / env.period)), period / env.period
    lo, hi = env.single_action_space.low, env.single_action_space.high
    rng = np.random.default_rng(seed)
    alpha = len(lo)
    mean, sd = np.zeros((3, alpha)), np.full((3, alpha), 0.1)
    t0 = time.monotonic()

    def random_policy(k):
        return rng.uniform(lo, hi, (population, alpha))
    baseline = rollout(env, random_policy, steps, seed=10_000)
    log(f"random policy (uniform random targets): {baseline.mean():+.3f} m mean, {baseline.max():+.3f} m best "
        f"of {population} robots in {seconds:g} s")
    for it in range(iterations):
        params = mean + sd * rng.standard_normal((population, 3, alpha))
        dist = rollout(env, lambda k: gait_actions(params, k, period_steps), steps, seed=it)
        if it == 0:
            log(f"random gaits (the initial distribution): {dist.mean():+.3f} m mean")
        best = params[np.argsort(dist)[-elite:]]
        mean, sd = best.mean(axis=0), best.std(axis=0) + 0.005
        log(f"iteration {it + 1:2d}: mean {dist.mean():+.3f} m, best {dist.max():+.3f} m "
            f"({time.monotonic() - t0:.0f} s)")
    final = np.repeat(mean[None], population, axis=0)
    trained = rollout(env, lambda k: gait_actions(final, k, period_steps), steps, seed=20_000)
    random_again = rollout(env, random_policy, steps, seed=20_000)
    log(f"on {population} fresh robots ({seconds:g} s): trained gait {trained.mean():+.3f} m "
        f"(min {trained.min():+.3f}), random policy {random_again.mean():+.3f} m; "
        f"{time.monotonic() - t0:.0f} s in all")
    return {"random": random_again, "trained": trained, "gait": mean}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=12)
    ap.add_argument("--population", type=int, default=32)
    ap.add_argument("--elite", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=3.0, help="episode length [s]")
    ap.add_argument("--period", type=float, default=1.0, help="gait period [s]")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    train(args.iterations, args.population, args.elite, args.seconds, args.period, args.seed,
          log=lambda text: print(text, flush=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
