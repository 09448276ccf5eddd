#!/usr/bin/env python3
"""Per-step cost against size: towers of stacked 5-prisms without shared joints, ours vs MuJoCo.

    .venv/bin/python bench/bench_scaling.py [--bars 10 50 200 1000] [--steps 2000]

Tower: k stages of the generated 5-prism (``tensegrity_engine.generators.n_prism``), stage s raised by
0.25 s m and turned by 36° s, each stage's top ring tied to the next stage's bottom ring by 5 strings;
springs 500 N/m at 0.9 of their length (prestressed, not an equilibrium: the tower moves), zero gravity,
bars 0.1 kg. Every bar is separate (class 1), so the engine's mass and bar blocks are per bar. Both engines:
RK4 at h = 1 ms on one pinned core; ours through ``Simulator.advance`` (projection included), MuJoCo through
``mj_step`` with the same rods and tendons (``bench/mujoco_peer.py``). Prints µs per step, the ratio and
the growth exponent between sizes, and the bar-length error after the run.
"""
import argparse
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from tensegrity_engine.generators import n_prism  # noqa: E402
from tensegrity_engine.model import build_model  # noqa: E402
from tensegrity_engine.model_file import spec_from_dict  # noqa: E402
from tensegrity_engine.simulator import Simulator  # noqa: E402


def tower_doc(stages: int, n: int = 5) -> dict:
    base = n_prism(n)
    P = np.array([nd["position"] for nd in base["nodes"]])
    nodes, bars, strings = [], [], []
    for s in range(stages):
        a = math.radians(36.0 * s)
        R = np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
        off = len(nodes)
        nodes += [R @ p + [0, 0, 0.25 * s] for p in P]
        bars += [(off + i, off + n + i) for i in range(n)]
        strings += [(off + i, off + (i + 1) % n) for i in range(n)]
        strings += [(off + n + i, off + n + (i + 1) % n) for i in range(n)]
        strings += [(off + i, off + n + (i + 1) % n) for i in range(n)]
        if s:
            strings += [(off - n + i, off + i) for i in range(n)]      # previous top ring -> this bottom ring
    X = np.array(nodes)
    doc = {"schema": "tensegrity-model", "version": 1, "name": f"tower{stages}", "gravity": [0, 0, 0],
           "nodes": [{"name": f"n{i}", "position": X[i].tolist()} for i in range(len(X))],
           "bars": [{"name": f"b{k}", "nodes": [f"n{i}", f"n{j}"], "mass": 0.1, "radius": 0.005}
                    for k, (i, j) in enumerate(bars)],
           "strings": [{"name": f"s{k}", "path": [f"n{i}", f"n{j}"], "stiffness": 500.0,
                        "rest_length": float(0.9 * np.linalg.norm(X[i] - X[j]))} for k, (i, j) in enumerate(strings)]}
    return doc


def ours(model, steps):
    sim = Simulator(model, integrator="rk4", dt=1e-3, damping=False)
    sim.advance(0.01)
    t = time.perf_counter()
    sim.advance(steps * 1e-3)
    us = (time.perf_counter() - t) / steps * 1e6
    return us, float(model.bar_length_error(sim.positions).max())


def theirs(model, steps):
    import mujoco
    import mujoco_peer as mp
    mm = mp.build_model(model.positions, model.bars, model.bar_mass, model.segments, model.string_stiffness,
                        model.rest_length)
    d = mujoco.MjData(mm)
    mujoco.mj_step(mm, d, 10)
    t = time.perf_counter()
    mujoco.mj_step(mm, d, steps)
    return (time.perf_counter() - t) / steps * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bars", type=int, nargs="+", default=[10, 50, 200, 1000])
    ap.add_argument("--steps", type=int, default=2000)
    a = ap.parse_args()
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    rows = []
    for nb in a.bars:
        t0 = time.perf_counter()
        model = build_model(spec_from_dict(tower_doc(max(1, nb // 5)), "tower"))
        model.kernel
        build = time.perf_counter() - t0
        steps = max(50, min(a.steps, int(a.steps * 200 / max(nb, 200))))
        us, err = ours(model, steps)
        mj = theirs(model, steps)
        rows.append((len(model.bar_names), us, mj))
        print(f"{len(model.bar_names):6d} bars: ours {us:10.1f} us/step  mujoco {mj:10.1f} us/step  ratio "
              f"{us / mj:6.3f}  (model built in {build:.2f} s, bar error {err:.1e}, {steps} steps)", flush=True)
    for (n0, u0, m0), (n1, u1, m1) in zip(rows, rows[1:]):
        g = math.log(n1 / n0)
        print(f"  {n0}->{n1} bars: growth exponent ours {math.log(u1 / u0) / g:.2f}, mujoco {math.log(m1 / m0) / g:.2f}")


if __name__ == "__main__":
    main()
