#!/usr/bin/env python3
"""Per-step cost against size: generated towers and shells, class 1 and class 2, ours vs MuJoCo.

    .venv/bin/python bench/bench_scaling.py [--bars 10 50 200 1000] [--kinds class1 class2 shell1 shell2]
                                            [--steps 2000] [--accuracy-time 0.2]

Structures (springs 500 N/m at 0.9 of their length: prestressed, not an equilibrium, so they move; zero
gravity; bars 0.1 kg):

* ``class1``: k stages of the generated 5-prism (``generators.n_prism``), stage s raised by 0.25 s m and
  turned by 36° s, each top ring tied to the next bottom ring by 5 strings; every bar separate;
* ``class2``: rings of 5 nodes turned by the prism twist per level; the bars of consecutive stages share
  their ring nodes (ball joints), so the tower is 5 chains of k bars;
* ``shell1`` / ``shell2``: Skelton's (n, m) shell in its cylinder layout (``tensegrity_engine.generators.shell``), n ≈ m,
  2nm rods and n(10m - 2) tendons; class 2 joins the Lemma's node pairs (rod chains of up to m bars).

Both engines: RK4 at h = 1 ms on one pinned core; ours through ``Simulator.advance`` (projection included),
MuJoCo through ``mj_step`` with the same rods and tendons (``bench/mujoco_peer.py``: free bodies). Shared
joints (class 2) are written two ways, both timed: ``tree`` (``bench/mujoco_chain_peer.py``: kinematic trees
of bars on ball joints, the same physics as ours, but MuJoCo's joint-space inertia of a chain is dense) and
``connect`` (``bench/mujoco_connect_peer.py``: free bodies joined by ``connect`` equalities, Newton solver,
sparse Jacobian: what a MuJoCo user would more likely write; softer physics, the joints open a little).
Prints µs per step, the ratio ours/peer and the growth exponent between sizes, our bar-length error after
the run, and each peer's accuracy: the largest node deviation from our engine after the first
``--accuracy-time`` s from the same start (``dev``) and, for ``connect``, the largest joint opening seen
(``open``).
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

from tensegrity_engine.dynamics.kernel_params import kernel_params  # noqa: E402
from tensegrity_engine.generators import n_prism  # noqa: E402
from tensegrity_engine.model.build import build_model  # noqa: E402
from tensegrity_engine.model.spec import spec_from_dict  # noqa: E402
from tensegrity_engine.dynamics.simulator import Simulator  # noqa: E402


def _doc(name, X, bars, strings) -> dict:
    return {"schema": "tensegrity-model", "version": 1, "name": name, "gravity": [0, 0, 0],
            "nodes": [{"name": f"n{i}", "position": X[i].tolist()} for i in range(len(X))],
            "bars": [{"name": f"b{k}", "nodes": [f"n{i}", f"n{j}"], "mass": 0.1, "radius": 0.005}
                     for k, (i, j) in enumerate(bars)],
            "strings": [{"name": f"s{k}", "path": [f"n{i}", f"n{j}"], "stiffness": 500.0,
                         "rest_length": float(0.9 * np.linalg.norm(X[i] - X[j]))}
                        for k, (i, j) in enumerate(strings)]}


def tower_doc(stages: int, n: int = 5) -> dict:
    """Class 1: separate n-prisms, stage s raised 0.25 s m and turned 36° s, rings tied by n strings."""
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
    return _doc(f"tower{stages}", np.array(nodes), bars, strings)


def class2_tower_doc(stages: int, n: int = 5, height: float = 0.25, radius: float = 0.15) -> dict:
    """Class 2: rings r = 0..stages of n nodes (radius, r·height, turned by the prism twist per ring); the
    bars of stage r join ring r node i to ring r+1 node i, so every inner node is a ball joint of two bars
    (n chains of ``stages`` bars); ring strings and one diagonal per bar."""
    tw = 1.5 * math.pi - math.pi / n
    r, i = np.divmod(np.arange((stages + 1) * n), n)
    a = 2 * math.pi * i / n + r * tw
    X = np.c_[radius * np.cos(a), radius * np.sin(a), height * r]
    bars = [(s * n + k, (s + 1) * n + k) for s in range(stages) for k in range(n)]
    strings = [(s * n + k, s * n + (k + 1) % n) for s in range(stages + 1) for k in range(n)]
    strings += [(s * n + k, (s + 1) * n + (k + 1) % n) for s in range(stages) for k in range(n)]
    return _doc(f"class2_tower{stages}", X, bars, strings)


def ours(model, steps):
    sim = Simulator(model, integrator="rk4", dt=1e-3, damping=False)
    sim.advance(0.01)
    t = time.perf_counter()
    sim.advance(steps * 1e-3)
    us = (time.perf_counter() - t) / steps * 1e6
    return us, float(model.bar_length_error(sim.positions).max())


def ours_at(model, t_end):
    """Our physical node positions (mu, 3) [m] after t_end [s] from rest (RK4 1 ms, as timed)."""
    sim = Simulator(model, integrator="rk4", dt=1e-3, damping=False)
    sim.advance(t_end)
    return np.asarray(sim.positions)[:model.n_physical]


def peers(model) -> tuple:
    """The MuJoCo peers of a model: ``free`` for class 1, ``tree`` and ``connect`` for shared joints."""
    return ("free",) if model.n_nodes == model.n_physical else ("tree", "connect")


def peer_model(model, peer, integrator="RK4"):
    """(MjModel, node positions (mjmodel, mjdata) -> (mu, 3), joint opening (mjmodel, mjdata) -> m)."""
    ph = model.physical_index
    if peer == "free":                             # class 1: every bar a free body
        import mujoco_peer as mp
        mm = mp.build_model(model.positions, model.bars, model.bar_mass, model.segments, model.string_stiffness,
                            model.rest_length, integrator=integrator)
        return mm, lambda m, d: mp.node_positions(m, d, model.bars), lambda m, d: 0.0
    args = (model.positions[:model.n_physical], ph[model.bars], model.bar_mass, ph[model.segments],
            model.string_stiffness, model.rest_length)
    if peer == "tree":                             # shared nodes: trees of bars on ball joints
        import mujoco_chain_peer as cp
        return cp.build_chain_model(*args, integrator=integrator), cp.node_positions, lambda m, d: 0.0
    import mujoco_connect_peer as kp               # shared nodes: free bars joined by connect equalities
    return kp.build_connect_model(*args, integrator=integrator), kp.node_positions, kp.joint_opening


def theirs(model, steps, peer="free", t_acc=0.0, X_ours=None, integrator="RK4"):
    """(µs per step, node deviation from ``X_ours`` after t_acc [s], largest joint opening in that time).
    The first t_acc of motion (from rest, as ours) is the warm-up; then ``steps`` steps are timed."""
    import mujoco
    mm, nodes, opening = peer_model(model, peer, integrator)
    d = mujoco.MjData(mm)
    n_acc = max(2, int(round(t_acc / mm.opt.timestep)))
    gap = 0.0
    for _ in range(n_acc):
        mujoco.mj_step(mm, d)
        gap = max(gap, opening(mm, d))
    dev = float(np.abs(nodes(mm, d) - X_ours).max()) if X_ours is not None else float("nan")
    t = time.perf_counter()
    mujoco.mj_step(mm, d)
    once = time.perf_counter() - t
    steps = int(min(steps, max(3, 20.0 / once)))      # long chains cost MuJoCo O(bars²): cap at ~20 s
    t = time.perf_counter()
    mujoco.mj_step(mm, d, steps)
    return (time.perf_counter() - t) / steps * 1e6, dev, gap


def shell_doc(bars: int, joints: str = "class1") -> dict:
    """Skelton's (n, m) shell with about ``bars`` rods (2nm; n = m/1 up to the ratio below) in its cylinder
    layout (``tensegrity_engine.generators.shell.layout``), all n(10m - 2) tendons; class 2 joins the Lemma's node pairs (rods
    then form chains of up to m bars)."""
    from tensegrity_engine.generators.shell import layout
    from tensegrity_engine.generators.shell_topology import class2_joints, rods, tendons
    n = max(3, round(math.sqrt(bars / 2)))
    m = max(1, round(bars / (2 * n)))
    X = layout(n, m)
    keep = np.arange(len(X))
    if joints == "class2":
        for a, b in class2_joints(n, m):
            keep[b] = a
    rename = lambda k: keep[keep[k]]  # noqa: E731  (a joined node is never itself joined away)
    bar_list = [(rename(a), rename(b)) for a, b, _ in rods(n, m)]
    seen, strings = set(), []
    for a, b, _ in tendons(n, m):
        e = tuple(sorted((int(rename(a)), int(rename(b)))))
        if e[0] != e[1] and e not in seen:
            seen.add(e)
            strings.append(e)
    used = np.unique(np.r_[np.ravel(bar_list), np.ravel(strings)])
    new = {int(k): i for i, k in enumerate(used)}
    return _doc(f"shell{joints}_{n}x{m}", X[used], [(new[a], new[b]) for a, b in bar_list],
                [(new[a], new[b]) for a, b in strings])


KINDS = {"class1": tower_doc, "class2": class2_tower_doc,
         "shell1": lambda bars: shell_doc(bars, "class1"), "shell2": lambda bars: shell_doc(bars, "class2")}
SIZE_IS_BARS = {"shell1", "shell2"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bars", type=int, nargs="+", default=[10, 50, 200, 1000])
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=list(KINDS),
                    help="class1: towers of separate prisms; class2: towers whose stages share ball joints; "
                    "shell1/shell2: Skelton's (n, m) shell, class 1 / class 2")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--peers", nargs="+", choices=("tree", "connect"), default=("tree", "connect"),
                    help="MuJoCo peers for shared joints (class 2): kinematic trees and/or connect equalities")
    ap.add_argument("--accuracy-time", type=float, default=0.2,
                    help="simulated time [s] from rest after which each peer's nodes are compared with ours")
    ap.add_argument("--mujoco-integrator", default="RK4", choices=("RK4", "Euler", "implicitfast"),
                    help="MuJoCo's integrator (default RK4 at 1 ms, as ours; Euler and implicitfast evaluate the "
                    "dynamics once per step instead of four times, and are first order)")
    a = ap.parse_args()
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    for kind in a.kinds:
        print(f"== {kind} == (MuJoCo {a.mujoco_integrator} at 1 ms)", flush=True)
        rows = []
        for nb in a.bars:
            t0 = time.perf_counter()
            model = build_model(spec_from_dict(KINDS[kind](nb if kind in SIZE_IS_BARS else max(1, nb // 5)), kind))
            kernel_params(model)
            build = time.perf_counter() - t0
            steps = max(50, min(a.steps, int(a.steps * 200 / max(nb, 200))))
            us, err = ours(model, steps)
            X = ours_at(model, a.accuracy_time)
            cols = {}
            for peer in peers(model):
                if peer == "free" or peer in a.peers:
                    cols[peer] = theirs(model, steps, peer, a.accuracy_time, X, a.mujoco_integrator)
            rows.append((len(model.bar_names), us, cols))
            text = "  ".join(f"| {p} {mj:10.1f} us/step ratio {us / mj:6.3f} (dev {dev:.1e} m"
                             + (f", open {gap:.1e} m)" if p == "connect" else ")")
                             for p, (mj, dev, gap) in cols.items())
            print(f"{len(model.bar_names):6d} bars: ours {us:10.1f} us/step  {text}  (model built in {build:.2f} s, "
                  f"our bar error {err:.1e}, {steps} steps, accuracy after {a.accuracy_time:g} s)", flush=True)
        for (n0, u0, c0), (n1, u1, c1) in zip(rows, rows[1:]):
            g = math.log(n1 / n0)
            print(f"  {n0}->{n1} bars: growth exponent ours {math.log(u1 / u0) / g:.2f}, "
                  + ", ".join(f"{p} {math.log(c1[p][0] / c0[p][0]) / g:.2f}" for p in c0 if p in c1))


if __name__ == "__main__":
    main()
