#!/usr/bin/env python3
"""Sweep benchmark: 1,000 prism3 variants x 5 s, locally, through a 2-worker Dask LocalCluster, and MuJoCo.

    .venv/bin/python bench/bench_sweep.py [--runs 1000] [--duration 5] [--mujoco-runs 100]

Variants: stiffness factor on all nine cables (grid 0.8..1.2, 10 values) x Monte Carlo draws (seed 0) of a
rest-length offset U(-5, 5) mm and random initial node velocities N(0, sigma), sigma ~ U(0, 0.2) m/s. Every
run: RK4 at h = 1 ms (the step at which our RK4 and MuJoCo's RK4 have the same error, bench_dynamics.py; the
error of both against a fine reference is measured here for a few variants), final positions, velocities and
the min/max tension of every cable sampled at 100 Hz.

* local: ``run_sweep(workers=2)`` wall time, worker start-up (spawn, model, kernels from the cache) included;
* Dask: a ``LocalCluster(n_workers=2, threads_per_worker=1)`` started before the timing (an existing
  cluster), then the same sweep through it; results compared with the local ones;
* MuJoCo (``bench/mujoco_peer.py``, the same ODE: free-joint rods, tendons ``springlength="0 L0"``, RK4 1 ms):
  ``--mujoco-runs`` of the variants (model compiled per variant, the projected initial velocities set,
  ``mj_step(m, d, 5000)``), one process, scaled to all runs, and the same split over 2 processes.
"""
import os

for _v in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tensegrity_engine import Simulator, load_model  # noqa: E402
from tensegrity_engine.sweep.execute import run_sweep  # noqa: E402
from tensegrity_engine.sweep.spec import SweepSpec  # noqa: E402
from tensegrity_engine.sweep.variants import initial_velocities, variant_model  # noqa: E402

H = 1e-3


def make_spec(runs):
    draws = max(1, runs // 10)
    return SweepSpec.build("prism3", grid={"stiffness": np.linspace(0.8, 1.2, 10)},
                           random={"rest_offset": ("uniform", -0.005, 0.005),
                                   "velocity_sigma": ("uniform", 0.0, 0.2)}, draws=draws, seed=0)


def projected_velocities(model, spec, run):
    """The initial node velocities our engine starts run ``run`` from (after projection onto the rods)."""
    sigma = float(spec.values[run, spec.names.index("velocity_sigma")])
    sim = Simulator(model, integrator="rk4", dt=H)
    sim.reset(velocities=initial_velocities(model, sigma, spec.seed, run))
    return sim.velocities


def mujoco_runs(args):
    """Simulate variants ``runs`` with MuJoCo RK4 1 ms -> (final node positions (k,n,3), wall s, of which
    stepping s)."""
    import mujoco
    import mujoco_peer as mp
    runs, duration, n = args
    base, spec = load_model("prism3"), make_spec(n)
    out, stepping = [], 0.0
    t0 = time.perf_counter()
    for run in runs:
        m = variant_model(base, spec.names, spec.values[run])
        mm = mp.build_model(m.positions, m.bars, m.bar_mass, m.segments, m.string_stiffness, m.rest_length,
                            m.gravity, H, "RK4")
        d = mujoco.MjData(mm)
        mp.set_velocities(mm, d, projected_velocities(m, spec, run))
        X, wall, _ = mp.run(mm, duration, 10 ** 7, d)
        out.append(X)
        stepping += wall
    return np.array(out), time.perf_counter() - t0, stepping


def accuracy(spec, base, runs, duration):
    """Max node error at the end of ``duration`` of ours and MuJoCo at 1 ms against our RK4 at 10 us [m]."""
    errs = []
    for run in runs:
        m = variant_model(base, spec.names, spec.values[run])
        V0 = projected_velocities(m, spec, run)
        fin = {}
        for h in (H, 1e-5):
            sim = Simulator(m, integrator="rk4", dt=h)
            sim.reset(velocities=V0)
            sim.advance(duration)
            fin[h] = sim.positions
        mj = mujoco_runs(([run], duration, spec.n_runs))[0][0]
        errs.append((np.abs(fin[H] - fin[1e-5]).max(), np.abs(mj - fin[1e-5]).max()))
    return np.array(errs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--mujoco-runs", type=int, default=100, help="MuJoCo runs measured (then scaled)")
    a = ap.parse_args()
    import mujoco
    from distributed import LocalCluster
    print(f"{os.cpu_count()} CPUs, load avg {os.getloadavg()[0]:.2f}; mujoco {mujoco.__version__}")
    spec, base = make_spec(a.runs), load_model("prism3")
    work = f"{spec.n_runs} prism3 variants x {a.duration:g} s, RK4 1 ms"
    print(f"== {work} ==")

    t0 = time.perf_counter()
    loc = run_sweep(spec, a.duration, integrator="rk4", dt=H, workers=2, progress=False)
    t_local = time.perf_counter() - t0
    print(f"local, 2 worker processes:     {t_local:6.2f} s wall ({loc.settings['start_method']}ed; {int(loc.ok.sum())} ok; "
          f"{sum(w['tasks'] for w in loc.workers)} tasks on {len(loc.workers)} workers, "
          f"{np.nansum(loc.wall):.2f} s of runs)")

    t0 = time.perf_counter()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        t_start = time.perf_counter() - t0
        t0 = time.perf_counter()
        dsk = run_sweep(spec, a.duration, integrator="rk4", dt=H, scheduler=cluster, progress=False)
        t_dask = time.perf_counter() - t0
    same = np.array_equal(dsk.final_positions, loc.final_positions, equal_nan=True)
    print(f"Dask LocalCluster, 2 workers:  {t_dask:6.2f} s wall (cluster start-up {t_start:.2f} s not included; "
          f"{int(dsk.ok.sum())} ok; results identical to local: {same})")

    k = min(a.mujoco_runs, spec.n_runs)
    sub = np.linspace(0, spec.n_runs - 1, k).astype(int)
    X_mj, w1, step1 = mujoco_runs((sub, a.duration, a.runs))
    t_mj1 = w1 * spec.n_runs / k
    halves = [sub[0::2], sub[1::2]]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(2) as ex:
        list(ex.map(mujoco_runs, [(h, a.duration, a.runs) for h in halves]))
    t_mj2 = (time.perf_counter() - t0) * spec.n_runs / k
    diff = np.abs(X_mj - loc.final_positions[sub]).max()
    print(f"MuJoCo RK4 1 ms, {k} of the runs measured, scaled x{spec.n_runs / k:g}: one process {t_mj1:6.2f} s, "
          f"2 processes {t_mj2:6.2f} s (one process, mj_step alone: {step1 * spec.n_runs / k:.2f} s); "
          f"max |ours - MuJoCo| of final positions {diff:.1e} m")

    acc = accuracy(spec, base, sub[:3], a.duration)
    print(f"accuracy at t = {a.duration:g} s vs our RK4 10 us (3 variants): ours RK4 1 ms "
          f"{acc[:, 0].max():.1e} m, MuJoCo RK4 1 ms {acc[:, 1].max():.1e} m")
    print("== summary ==")
    print(f"  local {t_local:.2f} s (target <= 10 s: {'PASS' if t_local <= 10 else 'FAIL'}); "
          f"LocalCluster / local = {t_dask / t_local:.2f} (target <= 1.5: {'PASS' if t_dask <= 1.5 * t_local else 'FAIL'})")
    print(f"  MuJoCo / local: {t_mj1 / t_local:.1f}x (MuJoCo one process), {t_mj2 / t_local:.1f}x (MuJoCo 2 processes)")


if __name__ == "__main__":
    main()
