#!/usr/bin/env python3
"""Inverse statics and pose feedback of the stacked manipulator's plate C2: errors and timings.

    PYTHONPATH=... .venv/bin/python bench/bench_inverse_statics.py [--poses 20] [--seed 2026] [--feedback]

For each of N random poses inside the reachable workspace (random inputs within the actuator limits,
settled: the pose they give), ``inverse_statics`` from u = 0: the miss of its answer (position [mm], angle
[deg]), checked by the full ``settle`` of its rest lengths, and the solve's wall time. ``--feedback`` also runs
the ``PoseController`` against a plant with 20 % stiffer strings and 0.5 mm noise on the measured nodes
(30 quasi-static updates, one per second; targets from inputs within 70 % of the limits) and prints the
plant's final miss next to the feed-forward's alone.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src" / "tensegrity_engine" / "test"))
from control_cases import FRAME, quasi_static_loop, reachable_targets, stiffer_plant  # noqa: E402

from tensegrity_engine import load_model  # noqa: E402
from tensegrity_engine.control import PoseController, inverse_statics  # noqa: E402
from tensegrity_engine.control.pose import frame_pose, misses  # noqa: E402
from tensegrity_engine.control.static_map import initial_state, rest_lengths, settle_inputs  # noqa: E402
from tensegrity_engine.statics.equilibrium import settle  # noqa: E402


def inverse_table(model, targets):
    home = initial_state(model)
    rows = []
    print(f"{'pose':>4} {'miss [mm]':>11} {'miss [deg]':>11} {'settle [mm]':>12} {'settle [deg]':>13} {'time [s]':>9}")
    for k, target in enumerate(targets):
        t0 = time.perf_counter()
        res = inverse_statics(model, FRAME, target, start=home)
        wall = time.perf_counter() - t0
        eq = settle(model, rest_lengths=rest_lengths(model, res.u))
        check = misses(frame_pose(model, FRAME, eq.positions), target)
        rows.append((res.miss_position, res.miss_angle, *check, wall))
        print(f"{k:>4} {res.miss_position * 1e3:>11.2e} {np.degrees(res.miss_angle):>11.2e} {check[0] * 1e3:>12.2e} "
              f"{np.degrees(check[1]):>13.2e} {wall:>9.2f}" + ("" if res.reachable else f"  {res.message}"))
    r = np.array(rows)
    print(f"worst: {r[:, 2].max() * 1e3:.2e} mm, {np.degrees(r[:, 3].max()):.2e} deg (settle); "
          f"time median {np.median(r[:, 4]):.2f} s, max {r[:, 4].max():.2f} s")


def feedback_table(model, targets):
    plant = stiffer_plant(model)
    print(f"{'pose':>4} {'feed-forward [mm]':>18} {'[deg]':>7} {'feedback [mm]':>14} {'[deg]':>7} {'time [s]':>9}")
    worst = np.zeros(2)
    for k, target in enumerate(targets):
        res = inverse_statics(model, FRAME, target)
        ff = misses(frame_pose(plant, FRAME, settle_inputs(plant, res.u, initial_state(plant)).X), target)
        t0 = time.perf_counter()
        (dp, da), _ = quasi_static_loop(PoseController(model, FRAME, max_rate=0.02, max_step=0.01), plant, target,
                                        iterations=30, seed=200 + k)
        worst = np.maximum(worst, [dp, da])
        print(f"{k:>4} {ff[0] * 1e3:>18.2f} {np.degrees(ff[1]):>7.3f} {dp * 1e3:>14.3f} {np.degrees(da):>7.3f} "
              f"{time.perf_counter() - t0:>9.2f}")
    print(f"worst with feedback: {worst[0] * 1e3:.3f} mm, {np.degrees(worst[1]):.3f} deg")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--poses", type=int, default=20)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--feedback", action="store_true", help="also the feedback against a 20 %% stiffer plant")
    args = ap.parse_args()
    model = load_model("stacked_manipulator")
    _, targets = reachable_targets(model, args.poses, seed=args.seed)
    inverse_table(model, targets)
    if args.feedback:
        _, targets = reachable_targets(model, args.poses, seed=args.seed + 1, fraction=0.7)
        feedback_table(model, targets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
