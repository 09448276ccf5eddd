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
"""
import os

for _v in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402

from tensegrity_engine.collision.obstacles import (box, capsule_contacts, capsules_vs_obstacles,  # noqa: E402
                                                   combine, half_space)

try:
    import fcl  # noqa: E402
except ImportError:
    fcl = None


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
        self.out = (np.empty((n, m)), np.empty((n, m, 3)), np.empty((n, m)), np.empty((n, m, 3)),
                    np.empty((n, m, 2)))

    def kernel(self, P0, P1, r):
        o = self.obs
        capsules_vs_obstacles(P0, P1, r, o.kind, o.centre, o.rot, o.half, 1e-9, *self.out)

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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--cpu", type=int, default=None, help="pin to this CPU")
    a = ap.parse_args()
    if a.cpu is not None:
        os.sched_setaffinity(0, {a.cpu})
    repeats = 3 if a.quick else 7
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
