#!/usr/bin/env python3
"""Capsule-obstacle benchmark: ``tensegrity_engine.collision.obstacles`` against python-fcl, same run.

    .venv/bin/pip install -r requirements-bench.txt      # python-fcl (benchmark only; optional here)
    .venv/bin/python bench/bench_obstacles.py [--quick] [--cpu N]

What is compared. N capsules (bars: segments of 0.1-0.6 m, radius 5-20 mm, scattered over a 2 m x 2 m x
0.6 m region just above the ground, so many touch) against M obstacles, all N x M pairs, per sweep:
* Ours: ``capsules_vs_obstacles`` (one compiled call over all pairs, outputs preallocated: clearance,
  normal, contact s, surface point, line-contact span) and ``capsule_contacts`` (the public call: the same
  kernel plus packing and allocation).
* fcl: one Capsule object per bar and one object per obstacle built ONCE; per sweep each capsule's transform
  and length are updated (centre at the midpoint, z along the bar), then for every pair, as a user would:
  boxes: ``fcl.distance`` with nearest points (distance, points: what we report) and, for the pairs it finds
  intersecting, ``fcl.collide`` with contacts (EPA depth and normal); half-spaces: ``fcl.collide`` with
  contacts (python-fcl 0.7 crashes on capsule-half-space distance, so fcl gives nothing for the separated
  pairs there, i.e. it does less work than ours).
* Timing: single thread (NUMBA/BLAS threads 1), optional CPU pinning, a warm-up round (compilation) first,
  then the median of repeats; ours and fcl timed round-robin within each repeat, so the ratio ours/fcl is
  measured in the same run under the same load.
Accuracy (printed): max |our clearance − fcl distance| over the separated capsule-box pairs.

Second table, the cost of an obstacle in the dynamics (``--dynamics``, on by default): the SUPERball-like
six-bar (``generators.superball``, 21 kg, 1.5 m bars) resting on its floor, RK4 at 1 ms, wall time per step
of one ``advance`` of ``DYN_TIME`` s after the first 5 ms (the start check, O(slots), and the location of
the first contacts are left out), median of repeats, worlds round-robin in each repeat, each world as a
ratio to the plane in the same run:
* plane: the ground plane z = 0 (the reference);
* plane + far box: a 1 m box 10 m away, never touched;
* floor box: the floor written as a 40 m x 40 m x 1 m box with its top at z = 0 (no plane);
* floor height field: the floor as a flat 41 x 41 height field (0.1 m cells) at z = 0 (no plane);
* rough height field: the floor as random bumps of 3 cm (``generators.terrain.rough_ground``, 5 cm cells) over
  the plane, the robot dropped onto it from 3 cm;
* plane + 999 far boxes: the per-obstacle cost is (that − plane) / 999 (the model limit is 1,000), timed
  over ``DYN_TIME_MANY`` s.
The MuJoCo peer (``mujoco_contact_peer``, RK4 1 ms, same run) gives the same worlds where it has them
(plane, plane + far box, floor box, plane + 999 far boxes).
"""
import os

for _v in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import sys  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402

from tensegrity_engine.collision.obstacles import (box, capsule_contacts, capsules_vs_obstacles,  # noqa: E402
                                                   combine, half_space)

try:
    import fcl  # noqa: E402
except ImportError:
    fcl = None
try:
    import mujoco  # noqa: E402
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import mujoco_contact_peer as mcp  # noqa: E402
except ImportError:
    mujoco = None

DYN_DT = 1e-3          # s
DYN_TIME = 0.5         # s simulated per timed run
DYN_TIME_MANY = 0.05   # s for the 1,000-obstacle world (before the far-box exit it took 1.75 s a step)


def scene(rng, n_caps, n_boxes, ground):
    """Bars scattered just above the ground and M-1 (or M) boxes on it; returns P0, P1, r, obstacles."""
    mid = rng.uniform([-1, -1, 0.0], [1, 1, 0.6], (n_caps, 3))
    u = rng.normal(size=(n_caps, 3))
    u /= np.linalg.norm(u, axis=1)[:, None]
    half = rng.uniform(0.05, 0.3, n_caps)[:, None]
    parts = [half_space([0, 0, 1], 0.0)] if ground else []
    for k in range(n_boxes):
        R = Rotation.random(random_state=rng).as_matrix()      # uniform random orientation
        parts.append(box(rng.uniform([-1, -1, 0.0], [1, 1, 0.3]), rng.uniform(0.05, 0.25, 3), R, f"box{k}"))
    return mid - half * u, mid + half * u, rng.uniform(0.005, 0.02, n_caps), combine(*parts)


class Ours:
    def __init__(self, obs, n):
        self.obs = obs
        m = len(obs)
        self.at = np.zeros((m, 3), np.int64)
        self.out = (np.empty((n, m)), np.empty((n, m, 3)), np.empty((n, m)), np.empty((n, m, 3)),
                    np.empty((n, m, 2)))

    def kernel(self, P0, P1, r):
        o = self.obs
        capsules_vs_obstacles(P0, P1, r, o.kind, o.centre, o.rot, o.half, o.grid, self.at, 1e-9, *self.out)

    def public(self, P0, P1, r):
        return capsule_contacts(self.obs, P0, P1, r)


class Fcl:
    def __init__(self, obs, r):
        self.caps = [fcl.Capsule(float(x), 0.1) for x in r]
        self.cobj = [fcl.CollisionObject(g, fcl.Transform()) for g in self.caps]
        self.obst = []
        for k in range(len(obs)):
            if obs.kind[k] == 0:
                n = obs.rot[k][:, 2]
                g = fcl.Halfspace(n, float(n @ obs.centre[k]))
                self.obst.append((0, fcl.CollisionObject(g, fcl.Transform())))
            else:
                g = fcl.Box(*(2 * obs.half[k]))
                self.obst.append((1, fcl.CollisionObject(g, fcl.Transform(obs.rot[k], obs.centre[k]))))
        self.dreq = fcl.DistanceRequest(enable_nearest_points=True)
        self.creq = fcl.CollisionRequest(num_max_contacts=1, enable_contact=True)

    def update(self, P0, P1):
        d = P1 - P0
        L = np.linalg.norm(d, axis=1)
        u = d / L[:, None]
        u = np.where(u[:, 2:3] < 0, -u, u)
        for g, o, c, uu, l in zip(self.caps, self.cobj, 0.5 * (P0 + P1), u, L.tolist()):
            v = np.array([-uu[1], uu[0], 0.0])                       # z x u, Rodrigues with c = u_z >= 0
            K = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
            g.lz = l
            o.setTransform(fcl.Transform(np.eye(3) + K + K @ K / (1.0 + uu[2]), c))

    def sweep(self, out):
        dist, coll = fcl.distance, fcl.collide
        for i, c in enumerate(self.cobj):
            for j, (kind, o) in enumerate(self.obst):
                if kind == 1:
                    d = dist(o, c, self.dreq, fcl.DistanceResult())
                    if d <= 0.0:
                        res = fcl.CollisionResult()
                        coll(o, c, self.creq, res)
                        d = -res.contacts[0].penetration_depth if res.contacts else 0.0
                else:
                    res = fcl.CollisionResult()
                    coll(o, c, self.creq, res)
                    d = -res.contacts[0].penetration_depth if res.contacts else np.nan
                out[i, j] = d


def timed(fn, loops):
    t0 = time.perf_counter()
    for _ in range(loops):
        fn()
    return (time.perf_counter() - t0) / loops


def run_case(n_caps, n_boxes, ground, repeats, seed=0):
    """One workload: median seconds per sweep for ours (kernel, public) and fcl, and the accuracy check."""
    P0, P1, r, obs = scene(np.random.default_rng(seed), n_caps, n_boxes, ground)
    ours = Ours(obs, n_caps)
    ours.kernel(P0, P1, r)                                            # compile / load the cache
    ref = ours.public(P0, P1, r)
    pairs = n_caps * len(obs)
    loops = max(1, 20000 // pairs)
    t = {"kernel": [], "public": [], "fcl_update": [], "fcl": []}
    peer = Fcl(obs, r) if fcl is not None else None
    fout = np.empty((n_caps, len(obs)))
    for _ in range(repeats):
        t["kernel"].append(timed(lambda: ours.kernel(P0, P1, r), loops))
        t["public"].append(timed(lambda: ours.public(P0, P1, r), loops))
        if peer is not None:
            t["fcl_update"].append(timed(lambda: peer.update(P0, P1), max(1, loops // 20)))
            t["fcl"].append(timed(lambda: peer.sweep(fout), max(1, loops // 20)))
    med = {k: statistics.median(v) for k, v in t.items() if v}
    err = (np.nan, np.nan)
    if peer is not None:
        sep = (ref.clearance > 1e-3) & (obs.kind == 1)[None, :]
        if sep.any():
            e = fout[sep] - ref.clearance[sep]
            err = (float(e.min()), float(e.max()))
    touching = int(np.sum(ref.clearance <= 0.0))
    return pairs, med, err, touching


def dynamics_worlds():
    """{name: (obstacles (ObstacleSpec tuple), MuJoCo extra geoms or None)} for the step-cost table."""
    from tensegrity_engine.generators.terrain import rough_ground
    from tensegrity_engine.model.world import ObstacleSpec, plane
    ground = plane("ground", friction=0.5)
    far = ObstacleSpec("far", "box", centre=(10.0, 0.0, 0.5), size=(1.0, 1.0, 1.0), friction=0.5)
    floor = ObstacleSpec("floor", "box", centre=(0.0, 0.0, -0.5), size=(40.0, 40.0, 1.0), friction=0.5)
    flat = ObstacleSpec("floor", "heightfield", origin=(-2.0, -2.0, 0.0), cell=(0.1, 0.1),
                        heights=((0.0,) * 41,) * 41, friction=0.5)
    rough = rough_ground(1, size=(4.0, 4.0), amplitude=0.03, cell=0.05, origin=(-2.0, -2.0), friction=0.5)
    many = tuple(replace(far, name=f"far{k}", centre=(10.0 + 2.0 * (k % 30), 2.0 * (k // 30), 0.5))
                 for k in range(999))
    box_geom = [("far", [10.0, 0.0, 0.5], [0.5, 0.5, 0.5])]
    return {"plane": ((ground,), ("plane", [])), "plane + far box": ((ground, far), ("plane", box_geom)),
            "floor box": ((floor,), ("none", [("floor", [0.0, 0.0, -0.5], [20.0, 20.0, 0.5])])),
            "floor height field": ((flat,), None), "rough height field": ((ground, rough), None),
            "plane + 999 far boxes": ((ground,) + many, ("plane", [(o.name, list(o.centre), [0.5, 0.5, 0.5])
                                                                   for o in many]))}


def superball_on(obstacles):
    """The six-bar resting on z = 0 (its template pose) in a world of ``obstacles``, lifted clear of any
    height field's bumps (it lands on them)."""
    from tensegrity_engine.generators import superball, verify_template
    from tensegrity_engine.model.build import build_model
    lift = max([float(np.max(o.heights)) for o in obstacles if o.type == "heightfield"] + [0.0])
    m, _ = verify_template(superball(lift=lift, friction=0.5), min_tension=100.0)
    return build_model(replace(m.spec, obstacles=tuple(obstacles)))


def mujoco_world(model, how):
    """The MuJoCo peer of ``model`` with the ground plane or not and extra box geoms (name, pos, half size)."""
    ground, boxes = how
    mm = mcp.build_contact_model(model, 0.5, np.pi / 0.01, 0.73, timestep=DYN_DT, integrator="RK4",
                                 extra_boxes=boxes, ground=ground == "plane")
    return mm


def step_cost_table(repeats):
    """Per-step wall time of each world (ours, MuJoCo), medians of ``repeats`` round-robin runs."""
    from tensegrity_engine import Simulator
    worlds = dynamics_worlds()
    models = {name: superball_on(obs) for name, (obs, _) in worlds.items()}
    peers = {name: mujoco_world(models[name], how) for name, (_, how) in worlds.items()
             if how is not None and mujoco is not None}
    for m in models.values():
        Simulator(m, integrator="rk4", dt=DYN_DT).advance(0.01)             # compile / load the cache
    t = {name: [] for name in models}
    tm = {name: [] for name in peers}
    steps = int(round(DYN_TIME / DYN_DT))
    for _ in range(repeats):
        for name, m in models.items():
            sim = Simulator(m, integrator="rk4", dt=DYN_DT)
            sim.advance(0.005)                  # past the start check and the first contacts' location
            t0 = time.perf_counter()
            sim.advance(DYN_TIME if len(m.obstacles) < 100 else DYN_TIME_MANY)
            t[name].append((time.perf_counter() - t0) / sim.stats["steps"])
            if name in peers:
                d = mcp.data_at(peers[name], m.positions, m.bars)
                t0 = time.perf_counter()
                n = steps if len(m.obstacles) < 100 else int(round(DYN_TIME_MANY / DYN_DT))
                mujoco.mj_step(peers[name], d, n)
                tm[name].append((time.perf_counter() - t0) / n)
    med = {k: statistics.median(v) for k, v in t.items()}
    medm = {k: statistics.median(v) for k, v in tm.items()}
    print(f"\n{'world (superball, RK4 1 ms)':<28}{'ours/step':>11}{'vs plane':>10}{'MuJoCo/step':>13}"
          f"{'vs plane':>10}{'ours/MuJoCo':>13}")
    for name in models:
        mj = (f"{medm[name] * 1e6:11.1f}us{medm[name] / medm['plane']:10.2f}{med[name] / medm[name]:13.3f}"
              if name in medm else f"{'-':>13}{'-':>10}{'-':>13}")
        print(f"{name:<28}{med[name] * 1e6:9.1f}us{med[name] / med['plane']:10.2f}{mj}")
    k = "plane + 999 far boxes"
    per = (med[k] - med["plane"]) / 999
    line = f"per far box: ours {per * 1e9:.0f} ns/step ({per / med['plane']:.4f} plane steps)"
    if k in medm:
        perm = (medm[k] - medm["plane"]) / 999
        line += f", MuJoCo {perm * 1e9:.0f} ns/step ({perm / medm['plane']:.4f} of its plane step)"
    print(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--cpu", type=int, default=None, help="pin to this CPU")
    ap.add_argument("--only", choices=("queries", "dynamics"), default=None, help="one of the two tables")
    a = ap.parse_args()
    if a.cpu is not None:
        os.sched_setaffinity(0, {a.cpu})
    repeats = 3 if a.quick else 7
    if a.only != "queries":
        step_cost_table(repeats)
    if a.only == "dynamics":
        return
    print(f"python-fcl: {getattr(fcl, '__version__', 'installed') if fcl else 'NOT installed (ours only)'}")
    print(f"{'workload':<30}{'pairs':>6}{'touch':>6}{'ours kernel':>13}{'ours public':>13}{'fcl query':>11}"
          f"{'fcl update':>12}{'kernel/fcl':>11}  fcl-ours (separated boxes)")
    for n_caps, n_boxes, ground in [(6, 0, True), (30, 0, True), (6, 4, True), (30, 10, True), (200, 50, False)]:
        pairs, med, err, touching = run_case(n_caps, n_boxes, ground, repeats)
        per = {k: v / pairs * 1e6 for k, v in med.items()}          # microseconds per capsule-obstacle query
        name = f"{n_caps} bars x {'ground + ' if ground else ''}{n_boxes} boxes"
        f = f"{per['fcl']:9.3f}us{per['fcl_update']:10.3f}us" if "fcl" in per else f"{'-':>11}{'-':>12}"
        ratio = f"{med['kernel'] / med['fcl']:11.4f}" if "fcl" in med else f"{'-':>11}"
        print(f"{name:<30}{pairs:6d}{touching:6d}{per['kernel']:11.4f}us{per['public']:11.4f}us{f}{ratio}"
              f"  [{err[0]:.1e}, {err[1]:.1e}]")
    print("per query = one capsule against one obstacle (sweep time / pairs), median of repeats; fcl query = its"
          "\ndistance/collide calls only, fcl update = setting the capsule transforms and lengths (also per pair);"
          "\nkernel/fcl = our kernel over fcl's queries alone (update excluded), same run; touch = pairs with"
          "\nclearance <= 0")


if __name__ == "__main__":
    main()
