#!/usr/bin/env python3
"""PoseController update rate along a plate path (stacked manipulator, plate C2), against exact inverse statics
at every update (the peer, measured in the same run).

    .venv/bin/python bench/bench_pose_path.py [--paths 5] [--seed 11] [--rate 100]

Each path runs through three poses inside the reachable workspace (random inputs within half the limits,
settled), 2 s per leg, from the pose the plate holds; the controller is updated at ``--rate`` Hz of path time
with the exact model settled at its output as the measurement (settling is not timed). Timed: each
``update`` (feed-forward along the path by the static map linearised at the last equilibrium, re-linearised
every 2 mm; the feedback; the shaping; the exact solve when the path ends) and, separately,
``set_trajectory`` (it solves the path's end exactly: its reachability). The peer solves the inverse statics
exactly for the same references, warm-started from the previous answer. Prints updates per second (count /
time spent in them), the median and largest update, and the ratio to the peer.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src" / "tensegrity_engine" / "test"))
from control_cases import FRAME, reachable_targets  # noqa: E402

from tensegrity_engine import load_model  # noqa: E402
from tensegrity_engine.control import PoseController, inverse_statics  # noqa: E402
from tensegrity_engine.control.pose import frame_pose, misses  # noqa: E402
from tensegrity_engine.control.static_map import settle_inputs  # noqa: E402

LEG = 2.0          # s per leg of the path


def controller_run(model, start_pose, waypoints, rate: float):
    """(update times [s] along the path, set_trajectory time [s], worst plant miss from the reference [m],
    references (K, 4, 4))."""
    c = PoseController(model, FRAME, max_rate=0.05, max_step=0.05)
    c.set_goal(start_pose)
    state = settle_inputs(model, c.update(0.0))
    for t in np.arange(1, int(3 * rate)) / rate:        # at rest at the start pose (not timed)
        state = settle_inputs(model, c.update(t, frame_pose(model, FRAME, state.X)), state)
    t0 = t
    tic = time.perf_counter()
    c.set_trajectory(LEG * np.arange(1, len(waypoints) + 1), waypoints)
    anchor = time.perf_counter() - tic
    walls, refs, worst = [], [], 0.0
    for k in range(1, int(LEG * len(waypoints) * rate) + 1):
        t = t0 + k / rate
        measured = frame_pose(model, FRAME, state.X)
        tic = time.perf_counter()
        u = c.update(t, measured)
        walls.append(time.perf_counter() - tic)
        refs.append(c._path.at(t))
        state = settle_inputs(model, u, state)
        worst = max(worst, misses(frame_pose(model, FRAME, state.X), refs[-1])[0])
    return np.array(walls), anchor, worst, np.array(refs)


def peer_run(model, start_pose, refs):
    """Update times [s] of exact inverse statics for each reference, warm-started from the previous answer."""
    res = inverse_statics(model, FRAME, start_pose)
    walls = []
    for ref in refs:
        tic = time.perf_counter()
        res = inverse_statics(model, FRAME, ref, u0=res.u, start=res.state)
        walls.append(time.perf_counter() - tic)
    return np.array(walls)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paths", type=int, default=5)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--rate", type=float, default=100.0, help="updates per second of path time [Hz]")
    args = ap.parse_args()
    model = load_model("stacked_manipulator")
    _, poses = reachable_targets(model, 4 * args.paths, seed=args.seed, fraction=0.5)
    print(f"{'path':>4} {'updates/s':>10} {'median [ms]':>12} {'max [ms]':>9} {'end solve [s]':>14} "
          f"{'plant miss [mm]':>16} {'peer updates/s':>15} {'ratio':>6}")
    totals = np.zeros(4)
    for p in range(args.paths):
        start, waypoints = poses[4 * p], poses[4 * p + 1:4 * p + 4]
        walls, anchor, worst, refs = controller_run(model, start, waypoints, args.rate)
        peer = peer_run(model, start, refs[::10])          # every 10th reference: the peer is slow
        rate, peer_rate = len(walls) / walls.sum(), len(peer) / peer.sum()
        totals += [len(walls), walls.sum(), len(peer), peer.sum()]
        print(f"{p:>4} {rate:>10.0f} {1e3 * np.median(walls):>12.2f} {1e3 * walls.max():>9.1f} {anchor:>14.2f} "
              f"{1e3 * worst:>16.3f} {peer_rate:>15.1f} {rate / peer_rate:>6.0f}")
    rate, peer_rate = totals[0] / totals[1], totals[2] / totals[3]
    print(f"all: {rate:.0f} updates/s along the paths, peer (exact solve per update) {peer_rate:.1f}/s, "
          f"ratio {rate / peer_rate:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
