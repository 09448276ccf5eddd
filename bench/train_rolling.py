#!/usr/bin/env python3
"""Learn to roll: the cross-entropy method (NumPy only) over an open-loop periodic gait on the vectorised
rolling environment (``tensegrity/Rolling-v0``, the SUPERball-like six-bar on the ground, friction and string
stiffness drawn per robot at each reset), one robot per candidate gait. Not a timed test.

    .venv/bin/python bench/train_rolling.py [--iterations 12] [--population 32] [--seconds 3]
    .venv/bin/python bench/train_rolling.py --save config/policies/superball_rolling.npz   # + a feedback policy

Gait: every actuator's target u_a(t) = b_a + c_a sin(2π t / T) + d_a cos(2π t / T) [m] (clipped to the limits; the
environment moves u at most at the motors' speed, 0.045 m/s), T = ``--period``; the 72 numbers (b, c, d) are the
search space, a Gaussian per number refit each iteration to the best ``--elite`` candidates by distance rolled
along +x in ``--seconds``. Printed: the distance of a random policy (uniform random targets every control step)
and of the initial random gaits, the mean and best per iteration, and the final mean gait's distance on fresh
robots (other seeds, randomised parameters) against the random policy's on the same robots.

``--save FILE.npz``: then a feedback policy (tensegrity_engine.learn.policy: target inputs linear in the node
positions relative to the centre of mass and in the gait's clock) starts as that gait (no feedback) and is
improved by augmented random search (NumPy; ``--directions`` antithetic pairs of perturbations per iteration,
each pair on two robots of the same seed, the update along the ``--top`` best pairs' reward differences scaled
by their spread; a robot's score: its distance along +x less ``--lateral`` times its sideways displacement)
over ``--policy-iterations`` iterations of ``--policy-seconds`` episodes (``--init FILE``: from that policy),
with the sensors of ``--position-noise`` [m] (mocap-like) and the reward penalised while bars and strings come
closer than ``--collision-margin`` [m] (the environment's self_collision="penalty"); the policy is written to
FILE with the model's identity.
"""
import argparse
import time

import gymnasium
import numpy as np

import tensegrity_engine.learn  # noqa: F401  (registers the ids)
from tensegrity_engine.learn.policy import Policy
from tensegrity_engine.learn.tasks import centre_of_mass


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


def positions_rollout(env, act, steps, seed) -> tuple:
    """(the return times the period per robot as :func:`rollout` [m], the observed relative node positions
    (steps, N, 3n) [m], the centre of mass's sideways displacement (N,) [m] (off +x)) for ``act(rel (N, 3n), t)``
    -> targets (N, alpha)."""
    obs, _ = env.reset(seed=seed)
    n3 = 3 * env.model.n_nodes
    y0 = centre_of_mass(env.model, env.batch.positions)[:, 1]
    total, seen = np.zeros(env.num_envs), []
    for k in range(steps):
        seen.append(obs[:, :n3].astype(float))
        obs, reward = env.step(act(obs[:, :n3], k * env.period))[:2]
        total += reward
    return total * env.period, np.array(seen), centre_of_mass(env.model, env.batch.positions)[:, 1] - y0


def policy_env(directions: int, position_noise: float, collision_margin: float):
    """The training environment: two robots per search direction, mocap-like sensor noise, the collision penalty."""
    return gymnasium.make_vec("tensegrity/Rolling-v0", num_envs=2 * directions, max_episode_steps=10 ** 6,
                              position_noise=position_noise, **collision_penalty(collision_margin))


def gait_as_policy(env, gait, period, seconds, log=print) -> Policy:
    """The open-loop ``gait`` (3, alpha) as a policy without feedback, its normalisation the positions it passes."""
    model, n3 = env.model, 3 * env.model.n_nodes
    K = np.zeros((len(model.actuator_names), n3 + 3))
    K[:, -3:] = np.column_stack([gait[1], gait[2], gait[0]])      # sin, cos, offset: the gait exactly
    policy = Policy.for_model(model, K, np.zeros(n3), np.ones(n3), period, env.period)
    dist, seen, _ = positions_rollout(env, lambda rel, t: policy.act_relative(rel, t), int(round(seconds / env.period)),
                                      seed=30_000)
    policy.mean, policy.std = seen.mean(axis=(0, 1)), np.maximum(seen.std(axis=(0, 1)), 0.01)   # m: 1 cm floor
    log(f"feedback policy: starts as the gait ({dist.mean():+.3f} m in {seconds:g} s, {env.num_envs} robots)")
    return policy


def train_policy(env, policy, iterations=20, top=8, step_size=0.02, noise=0.01, seconds=5.0, lateral=0.5, seed=0,
                 log=print) -> Policy:
    """Augmented random search (module docstring) from ``policy`` in ``env`` (policy_env): the score of a robot is
    its return times the period [m] less ``lateral`` times its sideways displacement [m]."""
    directions, steps = env.num_envs // 2, int(round(seconds / env.period))
    rng = np.random.default_rng(seed + 1)
    t0 = time.monotonic()
    for it in range(iterations):
        delta = rng.standard_normal((directions,) + policy.K.shape)
        Ks = np.concatenate([policy.K + noise * delta, policy.K - noise * delta])
        seeds = [100_000 + 1000 * it + i % directions for i in range(2 * directions)]   # pairs share a robot
        dist, _, side = positions_rollout(env, lambda rel, t: policy.act_relative(rel, t, Ks), steps, seeds)
        score = dist - lateral * np.abs(side)
        plus, minus = score[:directions], score[directions:]
        best = np.argsort(np.maximum(plus, minus))[-top:]
        spread = np.concatenate([plus[best], minus[best]]).std() + 1e-9
        policy.K = policy.K + step_size / (top * spread) * np.einsum("d,d...->...", plus[best] - minus[best],
                                                                       delta[best])
        log(f"ARS iteration {it + 1:2d}: score mean {score.mean():+.3f} m, best {score.max():+.3f} m, sideways "
            f"{np.abs(side).mean():.3f} m ({time.monotonic() - t0:.0f} s)")
    final, _, side = positions_rollout(env, lambda rel, t: policy.act_relative(rel, t), steps, seed=40_000)
    log(f"on {env.num_envs} fresh robots ({seconds:g} s): return {final.mean():+.3f} m (min {final.min():+.3f}), "
        f"sideways {np.abs(side).mean():.3f} m")
    return policy


def collision_penalty(margin: float) -> dict:
    """The environment's options for a reward penalty while bars and strings come closer than ``margin`` [m]
    (0: none)."""
    return {"self_collision": "penalty", "collision_margin": margin} if margin > 0 else {}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=12)
    ap.add_argument("--population", type=int, default=32)
    ap.add_argument("--elite", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=3.0, help="episode length [s]")
    ap.add_argument("--period", type=float, default=1.0, help="gait period [s]")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save", metavar="FILE.npz", help="also train a feedback policy and write it here")
    ap.add_argument("--policy-iterations", type=int, default=20)
    ap.add_argument("--directions", type=int, default=16)
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--policy-seconds", type=float, default=5.0, help="policy episode length [s]")
    ap.add_argument("--position-noise", type=float, default=0.002, help="sensor noise while training [m]")
    ap.add_argument("--lateral", type=float, default=0.5, help="score lost per m sideways (off +x)")
    ap.add_argument("--init", metavar="FILE.npz", help="start the policy search from this policy (no gait search)")
    ap.add_argument("--collision-margin", type=float, default=0.05,
                    help="the reward is penalised while bars and strings come closer than this [m] (0: off)")
    args = ap.parse_args(argv)
    log = lambda text: print(text, flush=True)    # noqa: E731
    result = {} if args.init else train(args.iterations, args.population, args.elite, args.seconds, args.period,
                                        args.seed, log=log)
    if args.save:
        env = policy_env(args.directions, args.position_noise, args.collision_margin)
        policy = (Policy.load(args.init, env.model) if args.init else
                  gait_as_policy(env, result["gait"], args.period, args.policy_seconds, log))
        policy = train_policy(env, policy, args.policy_iterations, args.top, seconds=args.policy_seconds,
                              lateral=args.lateral, seed=args.seed, log=log)
        policy.meta["trained"] = (f"bench/train_rolling.py: {'from ' + args.init if args.init else 'CEM gait'}, "
                                  f"then {args.policy_iterations} ARS iterations x {args.directions} pairs, "
                                  f"{args.policy_seconds:g} s episodes, position noise {args.position_noise:g} m, "
                                  f"collision margin {args.collision_margin:g} m, lateral weight {args.lateral:g}, "
                                  f"seed {args.seed}")
        log(f"policy written to {policy.save(args.save)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
