#!/usr/bin/env python3
"""Capsule self-collision benchmark: ``tensegrity_engine.collision.capsules`` against python-fcl and coal, same run.

    .venv/bin/pip install -r requirements-bench.txt      # the two peers (benchmark only)
    .venv/bin/python bench/bench_collision.py [--quick] [--cpu N]

What is compared. Every element is a capsule (segment + radius); the quantity is the clearance of each
checked pair, segment distance - r_i - r_j (negative = overlap).
* Ours: ``sweep_pairs`` (the compiled loop over the pair list, outputs preallocated) and ``check`` (the
  public call: same loop + Python overhead, clearances, argmin, violations), both from node positions X.
* Peers: one Capsule collision object per element built ONCE; per sweep its transform is updated (centre
  at the segment midpoint, minimal rotation taking the capsule's local z axis to the segment direction)
  and its length set (strings stretch), then the pairwise distance function is called from Python for
  every pair, as a user would: ``fcl.distance(o1, o2, req, res)`` / ``coal.distance(o1, o2, req, res)``.
  Cost per sweep = update + distances (both reported). Both peers route capsule-capsule to a closed-form
  routine that returns the signed clearance for overlaps too (checked below), so all pairs are compared.
* Timing: single thread, pinned CPU, warm-up round first, median of repeats of a loop of sweeps; ours and
  the peers are timed round-robin within each repeat (fair ratios on a shared machine).
Workloads: (a) the stacked manipulator's 54 capsules (model_elements: 18 bars + 36 strings, the checked
pair list excludes pairs sharing a node) at its rest shape and at shapes of the 14 s paper experiment;
(b) 200 random segments (lengths 0.1-1 m inside a 1 m cube, radius 5 mm), all 19 900 pairs.
Accuracy: max |clearance_peer - clearance_ours| per workload. Nearly parallel long segments: ours vs the
peers (capsule radius 0, which both accept) vs the exact value, correct when |error| <= 1e-12 * L.

Capsule conventions (asserted by ``check_conventions``): fcl.Capsule(radius, lz) and coal.Capsule(radius,
lz), radius FIRST; lz is the FULL length of the axis segment (coal stores halfLength = lz / 2), centred at
the origin along local z. python-fcl's DistanceResult keeps the running minimum over calls, so the
per-pair value is the function's return value (coal clears its result at each call).
"""
import os

for _v in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import coal  # noqa: E402
import fcl  # noqa: E402
import numpy as np  # noqa: E402

from tensegrity_engine import Simulator, load_model, paper_sinusoid  # noqa: E402
from tensegrity_engine.collision.capsules import (Elements, check, model_elements, segment_distance,  # noqa: E402
                                                  sweep_pairs)


def capsule_frames(P0, P1):
    """Centres (E,3), rotations (E,3,3) taking z to the segment direction, full lengths (E,). A capsule is
    symmetric, so the direction is flipped to u_z >= 0: Rodrigues' 1/(1 + u_z) then never blows up."""
    d = P1 - P0
    L = np.linalg.norm(d, axis=1)
    u = np.where(L[:, None] > 0, d / np.where(L > 0, L, 1)[:, None], [0.0, 0.0, 1.0])
    u = np.where(u[:, 2:3] < 0, -u, u)
    vx, vy, c = -u[:, 1], u[:, 0], u[:, 2]                    # v = z x u, c = z . u
    K = np.zeros((len(u), 3, 3))
    K[:, 0, 2], K[:, 1, 2], K[:, 2, 0], K[:, 2, 1] = vy, -vx, -vy, vx   # [v]x with v_z = 0
    R = np.eye(3) + K + (K @ K) / (1.0 + c)[:, None, None]
    return 0.5 * (P0 + P1), R, L


class FclPeer:
    name = "fcl"

    def __init__(self, radius):
        self.geom = [fcl.Capsule(float(r), 0.0) for r in radius]
        self.obj = [fcl.CollisionObject(g, fcl.Transform()) for g in self.geom]
        self.req, self.res = fcl.DistanceRequest(), fcl.DistanceResult()

    def update(self, P0, P1):
        C, R, L = capsule_frames(P0, P1)
        for g, o, c, r, l in zip(self.geom, self.obj, C, R, L.tolist()):
            g.lz = l
            o.setTransform(fcl.Transform(r, c))

    def distances(self, pi, pj, out):
        o, req, res, dist = self.obj, self.req, self.res, fcl.distance
        for m, (i, j) in enumerate(zip(pi, pj)):
            out[m] = dist(o[i], o[j], req, res)


class CoalPeer:
    name = "coal"

    def __init__(self, radius):
        self.geom = [coal.Capsule(float(r), 0.0) for r in radius]
        self.obj = [coal.CollisionObject(g, coal.Transform3s()) for g in self.geom]
        self.req, self.res = coal.DistanceRequest(), coal.DistanceResult()

    def update(self, P0, P1):
        C, R, L = capsule_frames(P0, P1)
        for g, o, c, r, l in zip(self.geom, self.obj, C, R, (0.5 * L).tolist()):
            g.halfLength = l
            o.setTransform(coal.Transform3s(r, c))

    def distances(self, pi, pj, out):
        o, req, res, dist = self.obj, self.req, self.res, coal.distance
        for m, (i, j) in enumerate(zip(pi, pj)):
            out[m] = dist(o[i], o[j], req, res)


PEERS = (FclPeer, CoalPeer)


def peer_clearances(peer_cls, P0, P1, radius, pi, pj):
    p = peer_cls(radius)
    p.update(P0, P1)
    out = np.empty(len(pi))
    p.distances(pi.tolist(), pj.tolist(), out)
    return out


def check_conventions():
    """Known pairs: coaxial capsules (r 0.1, length 2) with centres 3 apart along z -> gap 3 - 2 - 0.2 = 0.8
    only if length is the full length; overlapping crossed ones -> signed clearance 0.15 - 0.2 = -0.05."""
    r = np.array([0.1, 0.1])
    for P0, P1, want in (([[0, 0, -1], [0, 0, 2]], [[0, 0, 1], [0, 0, 4]], 0.8),
                         ([[0, 0, -1], [0.15, -1, 0]], [[0, 0, 1], [0.15, 1, 0]], -0.05)):
        for peer in PEERS:
            got = peer_clearances(peer, np.array(P0, float), np.array(P1, float), r, np.array([0]), np.array([1]))[0]
            assert abs(got - want) < 1e-12, (peer.name, got, want)
    print("capsule conventions verified: Capsule(radius, lz), lz = full length (coal halfLength = lz/2), "
          "along local z; overlaps give signed clearance in both peers")


def median_us(fns, repeats):
    """{name: (fn, inner)} -> {name: median us per call}. The functions are timed round-robin within each
    repeat, so a slow spell of a shared machine hits all of them alike and the ratios stay meaningful."""
    ts = {k: [] for k in fns}
    for _ in range(repeats + 1):                               # first round = warm-up (numba load, caches)
        for k, (fn, inner) in fns.items():
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            ts[k].append((time.perf_counter() - t0) / inner)
    return {k: statistics.median(v[1:]) * 1e6 for k, v in ts.items()}


def bench_workload(label, el: Elements, X, repeats, inner_ours, inner_peer):
    """Time ours and both peers on one configuration; return a result dict for the table."""
    X = np.ascontiguousarray(X, float)
    m = len(el.pair_i)
    d, s, t = np.empty(m), np.empty(m), np.empty(m)
    row = {"label": label, "E": len(el.ends), "pairs": m}
    ours = check(el, X).clearance
    row["pen"] = int(np.sum(ours < 0))
    P0, P1 = X[el.ends[:, 0]], X[el.ends[:, 1]]
    pi, pj = el.pair_i.tolist(), el.pair_j.tolist()
    fns = {"sweep": (lambda: sweep_pairs(X, el.ends, el.pair_i, el.pair_j, d, s, t), inner_ours),
           "check": (lambda: check(el, X), inner_ours)}
    for peer_cls in PEERS:
        p, out = peer_cls(el.radius), np.empty(m)
        p.update(P0, P1)
        p.distances(pi, pj, out)
        row[p.name + "_err"] = float(np.max(np.abs(out - ours)))
        fns[p.name + "_upd"] = (lambda p=p: p.update(P0, P1), inner_peer)
        fns[p.name + "_dist"] = (lambda p=p, out=out: p.distances(pi, pj, out), inner_peer)
    row.update(median_us(fns, repeats))
    return row


def print_table(rows):
    print(f"{'workload':<22}{'E':>4}{'pairs':>7} | {'sweep':>7}{'check':>7} | "
          f"{'fcl upd+dist = total':>24}{'x sweep':>8}{'x check':>8} | "
          f"{'coal upd+dist = total':>24}{'x sweep':>8}{'x check':>8} | {'max|dc| fcl':>11}{'coal':>9}{'pen':>5}")
    for r in rows:
        line = f"{r['label']:<22}{r['E']:>4}{r['pairs']:>7} | {r['sweep']:7.1f}{r['check']:7.1f} | "
        for n in ("fcl", "coal"):
            tot = r[n + "_upd"] + r[n + "_dist"]
            line += f"{r[n + '_upd']:8.0f}+{r[n + '_dist']:7.0f} ={tot:7.0f}{tot / r['sweep']:8.0f}{tot / r['check']:8.0f} | "
        print(line + f"{r['fcl_err']:11.1e}{r['coal_err']:9.1e}{r['pen']:5d}")


def random_segments(n, rng, radius=0.005):
    """n segments with uniform start in [0,1]^3, uniform direction, length U(0.1, 1), end inside the cube
    (rejection), all pairs. Returns (Elements, X) with X = the 2n endpoints."""
    P = []
    while len(P) < n:
        p0, u = rng.random(3), rng.normal(size=3)
        p1 = p0 + rng.uniform(0.1, 1.0) * u / np.linalg.norm(u)
        if np.all((p1 >= 0) & (p1 <= 1)):
            P.append((p0, p1))
    X = np.array(P).reshape(2 * n, 3)
    ends = np.arange(2 * n, dtype=np.int64).reshape(n, 2)
    ii, jj = (a.astype(np.int64) for a in np.triu_indices(n, k=1))
    rad = np.full(n, radius)
    el = Elements(tuple(f"s{k}" for k in range(n)), ends, rad, np.ones(n, np.int64), ii, jj, rad[ii] + rad[jj])
    return el, X


def parallel_cases(rng):
    """Nearly parallel long segments: ours vs peers (radius 0) vs the exact distance."""
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    Q *= np.sign(np.linalg.det(Q))                             # a proper rotation
    print(f"\n{'L':>6}{'delta':>7} {'case':<9}{'frame':<8}{'true':>9}{'ours':>14}{'fcl':>14}{'coal':>14}"
          f"   |err| <= 1e-12 L: ours  fcl  coal")
    ok = {"ours": 0, "fcl": 0, "coal": 0}
    n = 0
    for L in (1000.0, 10.0):
        for dl in (1e-6, 1e-3):
            for case, q0, q1, true in (("skew", [0, dl, dl], [L, -dl, dl], dl), ("crossing", [0, dl, 0], [L, -dl, 0], 0.0)):
                for frame in ("axis", "rotated"):
                    S = np.array([[0, 0, 0], [L, 0, 0], q0, q1], float)
                    if frame == "rotated":
                        S = S @ Q.T + rng.uniform(-1, 1, 3) * L
                    vals = {"ours": segment_distance(*S)}
                    for peer in PEERS:
                        vals[peer.name] = peer_clearances(peer, S[[0, 2]], S[[1, 3]], np.zeros(2),
                                                          np.array([0]), np.array([1]))[0]
                    good = {k: abs(v - true) <= 1e-12 * L for k, v in vals.items()}
                    n += 1
                    for k in ok:
                        ok[k] += good[k]
                    flags = "  ".join(" ok " if good[k] else "FAIL" for k in ("ours", "fcl", "coal"))
                    print(f"{L:6.0f}{dl:7.0e} {case:<9}{frame:<8}{true:9.0e}{vals['ours']:14.6e}"
                          f"{vals['fcl']:14.6e}{vals['coal']:14.6e}                    {flags}")
    print(f"correct to 1e-12 x L: ours {ok['ours']}/{n}, fcl {ok['fcl']}/{n}, coal {ok['coal']}/{n}")
    return ok, n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats and shapes")
    ap.add_argument("--cpu", type=int, default=None, help="CPU to pin to (default: the last allowed one)")
    args = ap.parse_args()
    cpu = args.cpu if args.cpu is not None else max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    rep = 5 if args.quick else 25
    print(f"python-fcl {fcl.__version__}, coal {coal.__version__}, numpy {np.__version__}; pinned to CPU {cpu}, "
          f"median of {rep} repeats")
    check_conventions()

    m = load_model("stacked_manipulator")
    el = model_elements(m)
    nodes = Simulator(m).run(14, inputs=paper_sinusoid(m), rate=20).nodes   # 20 Hz, 281 frames
    shapes = [("manipulator rest", m.positions)]
    for ts in ((7.0,) if args.quick else (3.5, 7.0, 10.5, 14.0)):
        shapes.append((f"manipulator t={ts:g}s", nodes[int(round(ts * 20))]))
    rows = [bench_workload(lab, el, X, rep, 500, 5 if args.quick else 10) for lab, X in shapes]
    rel, Xr = random_segments(200, np.random.default_rng(1))
    rows.append(bench_workload("random 200 segments", rel, Xr, rep, 50, 1 if args.quick else 3))
    print("\nus per sweep (ours: sweep_pairs / check; peers: transform+length update + per-pair distance calls);"
          "\n'x sweep' / 'x check' = peer total / ours; max|dc| = max |clearance_peer - clearance_ours| [m] over"
          "\nall pairs (signed: overlaps included); pen = overlapping pairs")
    print_table(rows)

    ok, n = parallel_cases(np.random.default_rng(2))

    man = rows[:-1]
    worst = max(r["sweep"] for r in man)
    cr = min((r["coal_upd"] + r["coal_dist"]) / r["sweep"] for r in man)
    cr_chk = min((r["coal_upd"] + r["coal_dist"]) / r["check"] for r in man)
    print("\nTargets (manipulator, 54 capsules):")
    print(f"  ours <= 30 us per sweep: worst sweep_pairs {worst:.1f} us -> {'MET' if worst <= 30 else 'MISSED'}"
          f" (check(): worst {max(r['check'] for r in man):.1f} us)")
    print(f"  >= 10x faster than coal: min ratio {cr:.0f}x vs sweep_pairs, {cr_chk:.0f}x vs check() -> "
          f"{'MET' if min(cr, cr_chk) >= 10 else 'MISSED'}")
    print(f"  nearly parallel cases exact to 1e-12 L: ours {ok['ours']}/{n}, fcl {ok['fcl']}/{n}, coal {ok['coal']}/{n}")


if __name__ == "__main__":
    main()
