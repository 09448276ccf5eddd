#!/usr/bin/env python3
"""Rolling with motion-capture-like measurements: the learned policy (config/policies/superball_rolling.npz in
the vectorised environment) and the rolling planner (RollingController in closed loop, locomotion.closed_loop.roll)
with exact node positions and with mocap-like ones: Gaussian noise of ``--sigma`` [m] per coordinate, a fraction
``--occluded`` of the frames with hidden nodes (each node with probability 1/2, at least one; they keep their
last seen position), ``--latency`` [s] (whole control periods, rounded up: 10 ms at 50 Hz is one 20 ms period).

    .venv/bin/python bench/bench_mocap_noise.py [--seeds 8] [--seconds 20] [--faces 6] [--planner-seeds 3]

Policy: the superball at the default randomisation of ``tensegrity/Rolling-v0`` (friction U(0.6, 1.0), stiffness
U(0.9, 1.1)), one robot per seed, ``--seconds`` of simulated time. Planner: the superball at μ 0.8, heading +x,
the motors at 0.045 m/s, until ``--faces`` face changes; with mocap the controller is told the noise
(``RollingController(noise=--noise)``: it judges the robot still by where the nodes stay, not by differenced
speeds; 0 shows what happens without). Printed per method and sensing: distance along +x [m]
and the heading error of the net displacement [deg] (mean ± standard deviation over the seeds; the planner's exact
run is deterministic: one), the planner's faces changed and final state.
"""
import argparse
import math
import time

import numpy as np

from tensegrity_engine.generators import superball, verify_template
from tensegrity_engine.learn.policy import Policy, run_in_env
from tensegrity_engine.locomotion import RollingController
from tensegrity_engine.locomotion.closed_loop import at_rest, roll
from tensegrity_engine.locomotion.mocap_noise import MocapNoise

POLICY = "config/policies/superball_rolling.npz"
MOTOR_SPEED = 0.045        # m/s: the simulator node's 3 rad/s on the superball's 15 mm spools


def summary(displacements) -> tuple:
    """(distance along +x mean, sd [m], heading error mean, sd [deg]) of (k, 2) displacements [m]."""
    d = np.atleast_2d(displacements)
    err = np.degrees(np.abs(np.arctan2(d[:, 1], d[:, 0])))
    return d[:, 0].mean(), d[:, 0].std(), err.mean(), err.std()


def policy_rows(args) -> list:
    policy = Policy.load(args.policy)
    seeds = list(range(args.seeds))
    period = policy.control_period
    latency = math.ceil(args.latency / period - 1e-9) * period
    clean = run_in_env(policy, args.seconds, seeds)
    noisy = run_in_env(policy, args.seconds, seeds, position_noise=args.sigma, occlusion=args.occluded,
                       observation_latency=latency)
    return [("policy", "exact", summary(clean), ""), ("policy", "mocap", summary(noisy), "")]


def planner_rows(args) -> list:
    model, _ = verify_template(superball(friction=0.8), min_tension=100.0)
    X = at_rest(model)
    runs = {"exact": [], "mocap": []}
    for label, seed in [("exact", None)] + [("mocap", s) for s in range(args.planner_seeds)]:
        mocap = None if seed is None else MocapNoise(args.sigma, args.occluded, args.latency, seed=seed)
        ctl = RollingController(model, noise=0.0 if seed is None else args.noise)
        ctl.set_heading(0.0)
        t0 = time.perf_counter()
        run = roll(ctl, X, args.duration, faces=args.faces, motor_speed=MOTOR_SPEED, mocap=mocap)
        runs[label].append((run.displacement, f"{run.faces_changed} faces in {run.times[-1]:.0f} s, "
                                              f"{run.status['state']}"))
        print(f"  planner {label} seed {seed}: {run.displacement.round(3)} m, {runs[label][-1][1]}, wall "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
    rows = []
    for label, done in runs.items():
        if done:
            rows.append(("planner", label, summary(np.array([d for d, _ in done])), "; ".join(n for _, n in done)))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--policy", default=POLICY)
    ap.add_argument("--seeds", type=int, default=8, help="robots (seeds) for the policy")
    ap.add_argument("--seconds", type=float, default=20.0, help="simulated time of the policy runs [s]")
    ap.add_argument("--faces", type=int, default=6, help="face changes of a planner run")
    ap.add_argument("--duration", type=float, default=150.0, help="longest simulated time of a planner run [s]")
    ap.add_argument("--planner-seeds", type=int, default=3, help="noisy planner runs (seeds)")
    ap.add_argument("--sigma", type=float, default=0.002, help="noise per coordinate [m]")
    ap.add_argument("--occluded", type=float, default=0.05, help="fraction of frames with hidden nodes")
    ap.add_argument("--latency", type=float, default=0.01, help="measurement latency [s]")
    ap.add_argument("--noise", type=float, default=0.002,
                    help="the planner's noise option (RollingController noise) [m] with mocap (0: the exact one's)")
    args = ap.parse_args(argv)
    rows = policy_rows(args)
    if args.planner_seeds >= 0:
        rows += planner_rows(args)
    print(f"\nmocap: sigma {1e3 * args.sigma:g} mm, {100 * args.occluded:g} % occluded frames, latency "
          f"{1e3 * args.latency:g} ms (whole control periods, rounded up)")
    print("| method | measurements | along +x [m] | heading error [deg] | runs |\n|---|---|---|---|---|")
    for method, label, (x, xs, e, es), note in rows:
        print(f"| {method} | {label} | {x:.2f} ± {xs:.2f} | {e:.1f} ± {es:.1f} | {note} |")


if __name__ == "__main__":
    main()
