"""Per-frame cost of the marker tracker (tensegrity_mocap.tracking.NodeTracker) at 360 Hz (not a test).

Two captures, tracked frame by frame in this process (one core; the tracker alone, no ROS, no parsing):

* ``manipulator``: the stacked manipulator's simulated experiment (24 nodes) as unlabeled markers plus
  10 stray markers fixed 30-60 mm from random nodes, 0.3 mm noise, occlusion runs of 10, 36 and 100
  frames on random markers (5 % of marker-frames), 360 Hz - the issue's "24 nodes + 10 stray markers";
* ``six-bar``: the synthetic six-bar take of the acceptance tests (12 nodes, 2 strays, a swinging
  3-marker payload excluded by a glob, 6 % occluded, dropped frames), registered from its own frame.

Printed per capture: frames, mean / p50 / p99 / max cost per frame [ms], the share of the 360 Hz frame
period (2.78 ms) the mean takes, and tracking quality (identity errors, node-frames untracked although
the marker was visible). The issue's budget: <= 0.5 ms per frame (mean) for 24 nodes + 10 strays.

    .venv/bin/python bench/bench_tracker.py [--seconds 10] [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

RATE = 360.0


def occlusion_mask(rng, T, K, fraction, lengths=(10, 36, 100)) -> np.ndarray:
    """(T, K) bool: runs of the given lengths on random markers until ``fraction`` is hidden."""
    hide = np.zeros((T, K), bool)
    while hide.mean() < fraction:
        k, n = rng.integers(K), int(rng.choice(lengths))
        s = rng.integers(0, T - n)
        hide[s:s + n, k] = True
    return hide


def manipulator_capture(seconds, rng):
    from tensegrity_engine import Simulator, load_model, paper_sinusoid
    model = load_model("stacked_manipulator")
    traj = Simulator(model).run(seconds, inputs=paper_sinusoid(model), rate=RATE)
    nodes = traj.nodes[:, :model.n_physical]
    T, n = nodes.shape[:2]
    owner = rng.choice(n, 10, replace=False)
    direction = rng.normal(size=(10, 3))
    offset = direction / np.linalg.norm(direction, axis=1, keepdims=True) * rng.uniform(0.030, 0.060, (10, 1))
    strays = nodes[:, owner] + offset[None]
    markers = np.concatenate([nodes, strays], axis=1) + rng.normal(0, 0.0003, (T, n + 10, 3))
    markers[occlusion_mask(rng, T, n + 10, 0.05)] = np.nan
    labels = [[None] * (n + 10)] * T                        # anonymous: the hardest case for identity
    return model, traj.t, markers, labels, nodes, {}


def six_bar_capture(seconds, rng):
    from tensegrity_engine import load_model
    from tensegrity_mocap.capture_model import model_document
    from tensegrity_mocap.synthetic import make_capture, six_bar_robot
    robot = six_bar_robot(seed=0)
    doc = model_document(robot.node_names, robot.positions, robot.bars.tolist(), robot.strings.tolist(),
                         gravity=(0.0, 0.0, 0.0))
    path = Path(tempfile.mkdtemp(prefix="bench-tracker-")) / "six_bar.yaml"
    path.write_text(yaml.safe_dump(doc))
    cap = make_capture(robot, duration=seconds, rate=RATE, seed=0)
    return load_model(path), cap.t, cap.markers, cap.labels, cap.nodes, {"exclude": ["payload:*"]}


def run(model, t, markers, labels, truth, kw):
    from tensegrity_mocap.tracking import NodeTracker
    tr = NodeTracker(model, **kw)
    cost = np.empty(len(t))
    X = np.empty(truth.shape)
    for r in range(len(t)):
        t0 = time.perf_counter()
        X[r] = tr.update(t[r], labels[r], markers[r])
        cost[r] = time.perf_counter() - t0
    shown = np.isfinite(X[:, :, 0])
    wrong = shown & (np.linalg.norm(X - truth, axis=2) > 0.010)
    missed = np.isfinite(markers[:, :truth.shape[1], 0]) & ~shown if truth.shape[1] == model.n_physical else None
    return cost, int(wrong.sum()), (int(missed.sum()) if missed is not None else -1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=3, help="runs per capture; the fastest mean is reported")
    a = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    print(f"tracker cost per frame at {RATE:.0f} Hz ({a.seconds:.0f} s takes, best of {a.repeat}, one core)")
    print(f"{'capture':<13}{'frames':>7}{'mean ms':>9}{'p50 ms':>8}{'p99 ms':>8}{'max ms':>8}{'of period':>10}"
          f"{'id errors':>10}{'missed':>8}")
    for name, make in (("manipulator", manipulator_capture), ("six-bar", six_bar_capture)):
        model, t, markers, labels, truth, kw = make(a.seconds, np.random.default_rng(0))
        best = None
        for _ in range(a.repeat):
            cost, wrong, missed = run(model, t, markers, labels, truth, kw)
            if best is None or cost.mean() < best[0].mean():
                best = (cost, wrong, missed)
        cost, wrong, missed = best
        ms = 1e3 * cost
        print(f"{name:<13}{len(t):>7}{ms.mean():>9.3f}{np.percentile(ms, 50):>8.3f}{np.percentile(ms, 99):>8.3f}"
              f"{ms.max():>8.3f}{ms.mean() * RATE / 1e3:>9.1%}{wrong:>10}{missed:>8}")
    print("six-bar 'missed' counts node-frames untracked although the node's marker was visible "
          "(the manipulator column counts them against its first 24 markers)")


if __name__ == "__main__":
    sys.exit(main())
