#!/usr/bin/env python3
"""Speed / accuracy benchmark of the tensegrity engine against MuJoCo, both measured in the same run.

    .venv/bin/python bench/bench_dynamics.py [--quick] [--cpu N]

Single-threaded (thread env vars set before any import) and pinned to one CPU. Warm-up runs precede every
timing (the first call of a numba kernel loads/compiles it). The MuJoCo peer is ``bench/mujoco_peer.py``:
free-joint rods + spatial tendons with ``springlength="0 L0"``, i.e. the same ODE as ours.

1. prism3 (3 rods, 9 springs, zero gravity, no damping), once from the start pose at rest and once with
   random node velocities (projected onto the rods by our ``reset``; the projected velocities are given to
   MuJoCo through ``mujoco_peer.set_velocities``). Fixed steps h in STEPS: our RK4, MuJoCo RK4 and MuJoCo
   Euler (its default, semi-implicit); our adaptive dopri5 at a few tolerances (atol = 1e-2 rtol, the
   engine's default max_step of 10 ms, which bounds its cost from below at loose tolerances).
   * cost: wall time per step [us] and per simulated second [ms]: median of R repeats of a run of
     max(1 s, N h) simulated seconds (ours: one ``Simulator.advance`` call; MuJoCo: the faster of a Python
     ``mj_step`` loop and ``mj_step(m, d, nstep)``).
   * accuracy ("err"): max over nodes and axes of |x(1 s) - x_ref(1 s)| [m], x_ref = the SAME engine with
     RK4 at h = 1e-5 s (ours is checked against dopri5 rtol 1e-12). Cross-engine agreement = max difference
     of the two fine references; MuJoCo's rods have a tiny axial inertia (1e-6 of the transverse one; zero
     is rejected), never excited since string forces act on the rod axis.
   * equal accuracy: for each MuJoCo setting, our cheapest setting with err <= 1.05 x MuJoCo's err (5 %
     slack: identical RK4 discretisations of the same ODE differ by < 1 % from rounding) -> ratios
     ours/MuJoCo of cost per simulated second and per step.
2. Energy / centre-of-mass drift over 10 s (prism3 from rest and with the random velocities of 1., no
   damping; ours RK4 1 ms and 0.5 ms, dopri5 rtol 1e-10; MuJoCo RK4 1 ms): max |E(t) - E(0)| divided by the
   largest kinetic energy of the run (the energy that moves; the string energy, ~200 J, would hide a drift)
   and max |c(t) - c(0) - v_c(0) t| (uniform motion of the centre of mass), sampled at 100 Hz, energies from ``tensegrity_engine.dynamics.energy`` for both engines.
3. stacked_manipulator: the 14 s paper experiment (paper_sinusoid, 100 Hz output) with the default adaptive
   integrator (dopri5, default rtol 1e-6) and fixed RK4 at 1 kHz: real-time factor, steps, rhs evaluations, us/step,
  max node error against a dopri5 rtol 1e-11 reference;
   max relative bar-length error over 60 s of the same (periodic) input.
4. Summary of targets vs measured. A kernel breakdown (us per ``accel`` / ``project``) explains the step cost.
"""
import os

for _v in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import mujoco  # noqa: E402
import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mujoco_peer as mp  # noqa: E402
from tensegrity_engine import Simulator, load_model, paper_sinusoid  # noqa: E402
from tensegrity_engine.dynamics import kernels as K
from tensegrity_engine.dynamics.energy import centre_of_mass, energies  # noqa: E402
from tensegrity_engine.dynamics.kernel_params import kernel_ref  # noqa: E402

STEPS = (50e-3, 20e-3, 10e-3, 5e-3, 4e-3, 2e-3, 1e-3, 0.5e-3)   # fixed steps [s], all dividing 1 s
EULER_EXTRA = (2e-4, 1e-4)                        # Euler is 1st order: also finer steps
OURS_EXTRA = (100e-3,)                            # a coarser RK4 step, to match Euler at loose accuracy
DOPRI_RTOLS = (1e-6, 1e-8, 1e-10)
H_REF, T_ACC, SLACK = 1e-5, 1.0, 1.05


def cpu_info():
    lines = Path("/proc/cpuinfo").read_text().splitlines()
    get = lambda k: next((s.split(":", 1)[1].strip() for s in lines if s.startswith(k)), "?")  # noqa: E731
    return f"{get('model name')} (family {get('cpu family')}, model {get('model')}, {get('cpu MHz')} MHz)"


def cfg_name(cfg):
    return f"{cfg[0]} h={cfg[1] * 1e3:g} ms" if cfg[0] != "dopri5" else f"dopri5 rtol={cfg[1]:.0e}"


# --- our engine -----------------------------------------------------------------------------------------
def make_sim(m, cfg):
    if cfg[0] == "rk4":
        return Simulator(m, integrator="rk4", dt=cfg[1], damping=False)
    return Simulator(m, integrator="dopri5", rtol=cfg[1], atol=1e-2 * cfg[1], damping=False)


def ours(m, cfg, V0, duration):
    """One run from the start pose with node velocities V0 -> (positions, wall s, steps, rhs evals)."""
    sim = make_sim(m, cfg)
    sim.reset(velocities=V0)
    t0 = time.perf_counter()
    sim.advance(duration)
    return sim.positions, time.perf_counter() - t0, sim.stats["steps"], sim.stats["evals"]


# --- MuJoCo peer ----------------------------------------------------------------------------------------
def peer(m, h, integrator):
    return mp.build_model(m.positions, m.bars, m.bar_mass, m.segments, m.string_stiffness, m.rest_length,
                          m.gravity, h, integrator)


def mj_data(mm, V0):
    d = mujoco.MjData(mm)
    if V0 is not None:
        mp.set_velocities(mm, d, V0)
    return d


def mj_node_velocities(mm, d, bars):
    """Node velocities (n,3) from the free-joint state: v_site = v + R (w_body x p_site)."""
    order = np.asarray(bars).ravel()
    V, R = np.empty((len(order), 3)), np.zeros(9)
    for b in range(mm.nbody - 1):
        mujoco.mju_quat2Mat(R, d.qpos[7 * b + 3: 7 * b + 7])
        w = d.qvel[6 * b + 3: 6 * b + 6]
        for s in (2 * b, 2 * b + 1):
            V[order[s]] = d.qvel[6 * b: 6 * b + 3] + R.reshape(3, 3) @ np.cross(w, mm.site_pos[s])
    return V


# --- section 1 ------------------------------------------------------------------------------------------
def bench_prism(m, V0, reps, n_min):
    """Table of cost and accuracy for every setting; returns a dict of results for the summary."""
    ref = ours(m, ("rk4", H_REF), V0, T_ACC)[0]
    ref_d = ours(m, ("dopri5", 1e-12), V0, T_ACC)[0]
    ref_m = mp.run(peer(m, H_REF, "RK4"), T_ACC, 10 ** 7, mj_data(peer(m, H_REF, "RK4"), V0))[0]
    print(f"  our reference RK4 1e-5 vs dopri5 rtol 1e-12:  {np.abs(ref - ref_d).max():.2e} m")
    print(f"  cross-engine max |ours_fine - mujoco_fine|:   {np.abs(ref - ref_m).max():.2e} m"
          f"   (motion scale max |x(1s) - x(0)| = {np.abs(ref - m.positions).max():.3f} m)")
    rows = []                                   # (engine, cfg, err, us/step, ms per sim s, evals/step, note)
    ocfgs = [("rk4", h) for h in OURS_EXTRA + STEPS] + [("dopri5", r) for r in DOPRI_RTOLS]
    for cfg in ocfgs:
        X = ours(m, cfg, V0, T_ACC)[0]
        dur = max(1.0, n_min * cfg[1]) if cfg[0] == "rk4" else 10.0
        runs = [ours(m, cfg, V0, dur) for _ in range(reps)]
        us = statistics.median(r[1] / r[2] for r in runs) * 1e6
        st, ev = runs[0][2], runs[0][3]
        rows.append(("ours", cfg, np.abs(X - ref).max(), us, us * st / dur * 1e-3, ev / st, ""))
    for integ, hs in (("RK4", STEPS), ("Euler", STEPS + EULER_EXTRA)):
        for h in hs:
            mm = peer(m, h, integ)
            X = mp.run(mm, T_ACC, 10 ** 7, mj_data(mm, V0))[0]
            dur = max(1.0, n_min * h)
            best = {}
            for mode, nstep in (("loop", None), ("nstep", 10 ** 7)):
                best[mode] = statistics.median(
                    (lambda r: r[1] / r[2])(mp.run(mm, dur, nstep, mj_data(mm, V0))) for _ in range(reps)) * 1e6
            mode = min(best, key=best.get)
            rows.append(("mujoco", (integ, h), np.abs(X - ref_m).max(), best[mode], best[mode] / h * 1e-3,
                         4.0 if integ == "RK4" else 1.0, f"{mode} (other {max(best.values()):.2f})"))
    print(f"  {'engine':7s} {'setting':22s} {'err@1s [m]':>10s} {'us/step':>8s} {'ms/sim-s':>9s} "
          f"{'evals/st':>8s}  mujoco timing")
    for e, cfg, err, us, ms, ev, note in rows:
        print(f"  {e:7s} {cfg_name(cfg):22s} {err:10.2e} {us:8.2f} {ms:9.3f} {ev:8.1f}  {note}")

    res = {"same_h": [], "RK4": [], "Euler": []}
    print("  same integrator and step (RK4 vs RK4):")
    for h in STEPS:
        o = next(r for r in rows if r[0] == "ours" and r[1] == ("rk4", h))
        t = next(r for r in rows if r[0] == "mujoco" and r[1] == ("RK4", h))
        res["same_h"].append(o[3] / t[3])
        print(f"    h={h * 1e3:4g} ms  err ours/mujoco = {o[2]:.2e}/{t[2]:.2e}   "
              f"per-step cost ratio ours/mujoco = {o[3] / t[3]:.3f}")
    print("  equal or better accuracy (our cheapest setting with err <= 1.05 x mujoco err):")
    for t in (r for r in rows if r[0] == "mujoco"):
        ok = [r for r in rows if r[0] == "ours" and r[2] <= SLACK * t[2]]
        if not ok:
            print(f"    mujoco {cfg_name(t[1]):18s} err {t[2]:.2e}: none of ours reaches it")
            res[t[1][0]].append(np.inf)
            continue
        o = min(ok, key=lambda r: r[4])
        res[t[1][0]].append(o[4] / t[4])
        print(f"    mujoco {cfg_name(t[1]):18s} err {t[2]:.2e} {t[4]:8.3f} ms/sim-s  <->  ours "
              f"{cfg_name(o[1]):20s} err {o[2]:.2e} {o[4]:8.3f} ms/sim-s   ratio per sim-s {o[4] / t[4]:.3f}, "
              f"per step {o[3] / t[3]:.3f}")
    res["rk4_1ms_us"] = next(r[3] for r in rows if r[0] == "ours" and r[1] == ("rk4", 1e-3))
    return res


# --- kernel breakdown -----------------------------------------------------------------------------------
# Loops compiled like the engine's integrators (model and work data passed by reference, kernel_data).
@njit
def _loop_accel(p, Y, V, inp, Fext, w, out, n):
    for _ in range(n):
        K.accel(p, 0.0, Y, V, inp, Fext, 1.0, 0.0, w, out)


@njit
def _loop_project(p, Y0, V0, Y, V, w, n):
    for _ in range(n):
        for i in range(Y.shape[0]):
            for d in range(3):
                Y[i, d] = Y0[i, d]
                V[i, d] = V0[i, d]
        Y[0, 0] += 1e-10                         # a post-step drift: one Newton correction is needed
        K.project(p, Y, V, w, False)


def kernel_breakdown(m, sim, step_us, n=200_000):
    p, w = kernel_ref(m), sim._wref
    Y, V, out = sim.Y.copy(), sim.V.copy(), np.zeros_like(sim.Y)
    args = (p, Y, V, sim.inputs.params, np.zeros((m.n_nodes, 3)), w, out)
    us = {}
    for name, f, a in (("accel", _loop_accel, args), ("project", _loop_project, (p, sim.Y, sim.V, Y, V, w))):
        f(*a, 10)
        t0 = time.perf_counter()
        f(*a, n)
        us[name] = (time.perf_counter() - t0) / n * 1e6
    a, pr = us["accel"], us["project"]
    print(f"  kernel breakdown ({m.name}): accel {a:.3f} us, project(+velocity) {pr:.3f} us; "
          f"RK4 step = 4 accel + project = {4 * a + pr:.2f} us predicted vs {step_us:.2f} us measured "
          f"(accel {4 * a / (4 * a + pr):.0%}, project {pr / (4 * a + pr):.0%})")


# --- section 2 ------------------------------------------------------------------------------------------
def drift(m, X, V):
    """(max |E(t) - E(0)| / max kinetic energy, CoM drift [m], max kinetic energy [J]). The energy that moves
    is the kinetic energy: dividing by the (large, nearly constant) string energy would hide a drift."""
    E = energies(m, X, V, np.zeros((len(X), len(m.actuator_names))))
    c = centre_of_mass(m, X)
    vc = centre_of_mass(m, V[:1])[0]                 # the centre of mass moves uniformly (no gravity)
    t = np.arange(len(X)) / 100.0
    ke = E["kinetic"].max()
    return (np.abs(E["total"] - E["total"][0]).max() / ke,
            np.linalg.norm(c - c[0] - t[:, None] * vc, axis=1).max(), ke)


def section2(m, starts, T=10.0):
    """Drift for each start ``{label: V0 or None}``, ours at three settings and MuJoCo RK4 1 ms."""
    out = {}
    for label, V0 in starts.items():
        for cfg in (("rk4", 1e-3), ("rk4", 5e-4), ("dopri5", 1e-10)):
            sim = make_sim(m, cfg)
            sim.reset(velocities=V0)
            tr = sim.run(T, rate=100)
            out[(label, cfg_name(cfg))] = drift(m, tr.nodes, tr.velocities)
        mm = peer(m, 1e-3, "RK4")
        d = mj_data(mm, V0)
        X, V = [], []
        for k in range(int(T * 100) + 1):
            X.append(mp.node_positions(mm, d, m.bars))
            V.append(mj_node_velocities(mm, d, m.bars))
            mujoco.mj_step(mm, d, 10)
        out[(label, "mujoco RK4 h=1 ms")] = drift(m, np.array(X), np.array(V))
    for (label, k), (e, c, ke) in out.items():
        print(f"  {label[:14]:14s} {k:20s} energy drift {e:.2e} of max KE {ke:.4g} J   CoM drift {c:.2e} m")
    return out


# --- section 3 ------------------------------------------------------------------------------------------
def section3(reps, name):
    try:
        m = load_model(name)
    except Exception as exc:  # the model file may not exist yet
        print(f"  {name} not available ({type(exc).__name__}: {exc}); section skipped")
        return None
    print(f"  model {m.name} ({m.source}): {m.counts}")
    u = paper_sinusoid(m)
    out = {}
    ref = Simulator(m, rtol=1e-11, atol=1e-13).run(14.0, inputs=u, rate=100)
    for label, kw in (("dopri5 default", {}), ("rk4 1 kHz", {"integrator": "rk4", "dt": 1e-3})):
        Simulator(m, **kw).run(0.05, inputs=u, rate=100)               # warm-up
        walls = []
        for _ in range(reps):
            sim = Simulator(m, **kw)
            t0 = time.perf_counter()
            tr14 = sim.run(14.0, inputs=u, rate=100)
            walls.append(time.perf_counter() - t0)
        acc = float(np.abs(tr14.nodes - ref.nodes).max())
        wall, st = statistics.median(walls), sim.stats
        tr = Simulator(m, **kw).run(60.0, inputs=paper_sinusoid(m), rate=100)
        err = float(tr.bar_length_error.max())
        out[label] = (14.0 / wall, err)
        print(f"  {label:17s} 14 s: wall {wall * 1e3:7.1f} ms  real-time x{14.0 / wall:7.1f}  steps {st['steps']:6d} "
              f"evals {st['evals']:7d} (rejected {st['rejected']})  {wall / st['steps'] * 1e6:6.2f} us/step "
              f"({wall / st['evals'] * 1e6:5.2f} us/eval, recording included) | node error vs rtol 1e-11 "
              f"{acc:.1e} m | 60 s max bar-length error {err:.2e}")
    sim = Simulator(m, integrator="rk4", dt=1e-3)
    sim.set_inputs(u, horizon=5.0)
    t0 = time.perf_counter()
    sim.advance(5.0)
    step_us = (time.perf_counter() - t0) / sim.stats["steps"] * 1e6
    sim.reset()
    kernel_breakdown(m, sim, step_us)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats and shorter timing runs (smoke test)")
    ap.add_argument("--manipulator", default="stacked_manipulator", help="model name or file for section 3")
    ap.add_argument("--cpu", type=int, default=None, help="CPU to pin to (default: the last allowed one)")
    a = ap.parse_args()
    reps, n_min = (3, 1000) if a.quick else (9, 4000)
    cpu = a.cpu if a.cpu is not None else max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    print(f"CPU: {cpu_info()}; pinned to CPU {cpu} of {os.cpu_count()}; load avg {os.getloadavg()[0]:.2f}")
    print(f"mujoco {mujoco.__version__}, numpy {np.__version__}, numba threads {os.environ['NUMBA_NUM_THREADS']}"
          f"; {'quick' if a.quick else 'full'} mode: median of {reps} repeats over max(1 s, {n_min} h)")
    m = load_model("prism3")
    for cfg in (("rk4", 1e-3), ("dopri5", 1e-6)):                   # warm-up (load/compile kernels)
        make_sim(m, cfg).run(0.1, rate=100)
        ours(m, cfg, None, 0.1)

    sim = make_sim(m, ("rk4", 1e-3))
    rng = np.random.default_rng(0)
    sim.reset(velocities=rng.normal(0.0, 0.2, (m.n_nodes, 3)))
    V_rand = sim.velocities
    res = {}
    for label, V0 in (("at rest", None), ("random node velocities (sigma 0.2 m/s, projected)", V_rand)):
        print(f"\n== 1. prism3, start pose {label}: cost and accuracy at t = 1 s ==")
        if V0 is not None:
            mm = peer(m, 1e-3, "RK4")
            d = mj_data(mm, V0)
            print(f"  initial node velocities ours vs mujoco: {np.abs(mj_node_velocities(mm, d, m.bars) - V0).max():.1e}"
                  f" m/s")
        res[label] = bench_prism(m, V0, reps, n_min)
    sim.reset()
    kernel_breakdown(m, sim, res["at rest"]["rk4_1ms_us"])

    print("\n== 2. prism3 energy and centre-of-mass drift over 10 s (no damping; relative to max kinetic energy) ==")
    dr = section2(m, {"at rest": None, "moving": V_rand})
    print("\n== 3. stacked manipulator, paper experiment, one core ==")
    man = section3(max(1, reps // 3), a.manipulator)

    same = max(max(r["same_h"]) for r in res.values())
    rows = [("per-step cost vs MuJoCo RK4, same h (equal accuracy)", "ratio <= 1", f"max {same:.3f}", same <= 1)]
    for integ in ("RK4", "Euler"):
        r = np.concatenate([v[integ] for v in res.values()])
        rows.append((f"cost/sim-s at equal-or-better accuracy vs MuJoCo {integ}, all h", "ratio <= 1",
                     f"max {r.max():.3f} ({np.sum(r <= 1)}/{len(r)} ok)", bool(r.max() <= 1)))
    for k, (rtf, err) in (man or {}).items():
        rows += [(f"manipulator real-time factor, {k}", ">= 100", f"{rtf:.1f}", rtf >= 100),
                 (f"manipulator bar-length error 60 s, {k}", "<= 1e-9", f"{err:.1e}", err <= 1e-9)]
    if man is None:
        rows.append(("manipulator (real time, bar-length error)", "", "n/a (model missing)", None))
    for start in ("at rest", "moving"):
        for k in ("rk4 h=1 ms", "rk4 h=0.5 ms", "dopri5 rtol=1e-10"):
            e, c, _ = dr[(start, k)]
            rows += [(f"energy drift / max KE 10 s, {start}, ours {k}", "<= 1e-6", f"{e:.1e}", e <= 1e-6),
                     (f"CoM drift 10 s, {start}, ours {k}", "<= 1e-12 m", f"{c:.1e}", c <= 1e-12)]
        e, c, _ = dr[(start, "mujoco RK4 h=1 ms")]
        rows.append((f"(MuJoCo RK4 1 ms energy / CoM drift, {start})", "", f"{e:.1e} / {c:.1e}", None))
    print("\n== 4. summary: targets vs measured ==")
    for name, target, meas, ok in rows:
        print(f"  {name:62s} {target:>10s} {meas:>26s}  {'' if ok is None else ('PASS' if ok else 'FAIL')}")


if __name__ == "__main__":
    main()
