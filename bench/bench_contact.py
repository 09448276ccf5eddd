#!/usr/bin/env python3
"""Ground contact against MuJoCo, both run in the same process on one core (issue 24 acceptance).

    .venv/bin/python bench/bench_contact.py [--quick] [--cpu N]

Two drops, each our engine (``Simulator(model, integrator="rk4", dt=1e-3)``, contact law in
``tensegrity_engine.dynamics.contact``) against the MuJoCo scene of the same robot (``bench/mujoco_contact_peer.py``:
free-body rods with capsules of the bar radius, spatial tendons with a dead band, a ground plane, the contact
matched through ``solref`` = (1 / (ζ ω), ζ), ω = π / contact_time, ζ = ``damping_ratio(restitution)``; MuJoCo
RK4 at the same 1 ms step):

1. ``superball``: the SUPERball-like six-bar (``generators.superball``, 21 kg, 1.5 m bars) lying on a string
   triangle, its lowest bar surface 0.3 m above the ground, μ = 0.5, dropped from rest;
2. ``threebar``: the three-bar prism of the Lagrangian paper (``generators.three_bar_prism``) tipped by 30°
   about its bottom edge p12–p13 (the paper's start: one bottom vertex raised) with its lowest bar surface
   0.1 m above the ground, μ = 0.8 (the schema default), dropped from rest.

Both models: the template's strings without damping (MuJoCo's tendon damping would also act on a slack
string, ours does not) and structural damping c = 4 /s on every node in both engines (MuJoCo: per-dof damping
c m and c I, the same force on a rigid rod), so the robots come to rest within the settling time.

Printed per robot: the first-contact time (the lowest capsule surface of the node positions reaching z = 0,
interpolated between 1 ms samples; the same geometry function for both engines), the rest pose after
``SETTLE`` s (centroid distance [mm] and the Kabsch rotation angle [deg] between the two engines' node sets),
and the per-step cost of the whole run (wall time / steps, median of R repeats; ours one ``advance`` call,
MuJoCo ``mj_step(m, d, nstep)`` in C) with the ratio ours / MuJoCo RK4 (the same integrator and step; its
constraint solver runs in each of the four stages) and ours / MuJoCo Euler (its default, one solve per step,
first order: a cost reference, not the same accuracy).
"""
import os
import sys

if "numba" not in sys.modules:      # run as a script: one thread everywhere (a test imports this after numba)
    for _v in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_v] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

import mujoco  # noqa: E402
import numpy as np  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mujoco_contact_peer as mcp  # noqa: E402
from tensegrity_engine import Simulator  # noqa: E402
from tensegrity_engine.dynamics.contact import damping_ratio  # noqa: E402
from tensegrity_engine.generators import superball, three_bar_prism, verify_template  # noqa: E402
from tensegrity_engine.model.build import build_model  # noqa: E402
from tensegrity_engine.statics.equilibrium import with_rest_lengths  # noqa: E402

DT = 1e-3                   # s, both engines
DAMPING = 4.0               # 1/s structural damping: the drops settle within SETTLE
SETTLE = {"superball": 4.0, "threebar": 3.0}    # s simulated
FIRST_CONTACT_TOL = 5e-3    # s   (issue 24 acceptance)
CENTROID_TOL = 0.01         # m
ANGLE_TOL = 2.0             # deg


def bench_model(model, positions=None):
    """The model without string damping, with structural damping DAMPING, optionally at new positions."""
    spec = model.spec
    spec = replace(spec, structural_damping=DAMPING, strings=tuple(replace(s, damping=0.0) for s in spec.strings))
    m = build_model(spec)
    return m if positions is None else with_rest_lengths(m, m.rest_length, positions)


def lowest_surface(model, X) -> np.ndarray:
    """Height [m] of the lowest capsule point, per sample of node positions X (T, n, 3)."""
    z = np.asarray(X)[..., 2]
    ends = np.minimum(z[..., model.bars[:, 0]], z[..., model.bars[:, 1]]) - model.bar_radius
    return ends.min(axis=-1)


def first_contact(t, low) -> float:
    """The first time [s] the lowest surface reaches 0 (linear between samples); nan if it never does."""
    k = int(np.argmax(low <= 0.0))
    if low[k] > 0.0:
        return float("nan")
    if k == 0:
        return float(t[0])
    return float(t[k - 1] + (t[k] - t[k - 1]) * low[k - 1] / (low[k - 1] - low[k]))


def kabsch(A, B) -> tuple:
    """(centroid distance [m], rotation angle [deg]) between node sets A and B (n, 3)."""
    ca, cb = A.mean(axis=0), B.mean(axis=0)
    R, _ = Rotation.align_vectors(B - cb, A - ca)
    return float(np.linalg.norm(cb - ca)), float(np.degrees(R.magnitude()))


def superball_case():
    """The six-bar 0.3 m above the ground with μ = 0.5."""
    m, _ = verify_template(superball(lift=0.3, friction=0.5), min_tension=100.0)
    return bench_model(m)


def threebar_case(tilt_deg: float = 30.0, height: float = 0.1):
    """The three-bar prism tipped by ``tilt_deg`` about its bottom edge p12-p13 (p11 up), lowest bar surface
    ``height`` [m] above the ground."""
    m, _ = verify_template(three_bar_prism(), min_tension=10.0)
    X = m.positions.copy()
    a, b, top = (m.node_names.index(n) for n in ("p12", "p13", "p11"))
    axis = (X[b] - X[a]) / np.linalg.norm(X[b] - X[a])
    R = Rotation.from_rotvec(np.radians(tilt_deg) * axis)
    Y = R.apply(X - X[a]) + X[a]
    if Y[top, 2] < X[top, 2]:
        Y = R.inv().apply(X - X[a]) + X[a]
    Y[:, 2] += height - lowest_surface(m, Y)
    return bench_model(m, Y)


def contact_params(model) -> tuple:
    """(friction μ, ω [rad/s], ζ) of the model's one ground plane."""
    g = model.obstacles[0]
    return g.friction, np.pi / g.contact_time, damping_ratio(g.restitution)


def peer(model):
    mu, omega, zeta = contact_params(model)
    return mcp.build_contact_model(model, mu, omega, zeta, timestep=DT, integrator="RK4",
                                   structural_damping=model.structural_damping)


def run_ours(model, duration):
    """(t (T,), node positions (T, n, 3)) at 1 kHz."""
    tr = Simulator(model, integrator="rk4", dt=DT).run(duration, rate=1.0 / DT)
    return tr.t, tr.nodes[:, :model.n_physical]


def run_mujoco(model, duration):
    mm = peer(model)
    return mcp.trajectory(mm, mcp.data_at(mm, model.positions, model.bars), duration, bars=model.bars)


def step_costs(model, duration, reps) -> tuple:
    """Wall seconds per step [s] of ours, MuJoCo RK4 and MuJoCo Euler (its default integrator), medians of
    ``reps`` whole runs of ``duration``."""
    steps = int(round(duration / DT))
    ours, rk4, euler = [], [], []
    mm = peer(model)
    for _ in range(reps):
        sim = Simulator(model, integrator="rk4", dt=DT)
        t0 = time.perf_counter()
        sim.advance(duration)
        ours.append((time.perf_counter() - t0) / sim.stats["steps"])
        for integrator, out in ((mujoco.mjtIntegrator.mjINT_RK4, rk4), (mujoco.mjtIntegrator.mjINT_EULER, euler)):
            mm.opt.integrator = integrator
            d = mcp.data_at(mm, model.positions, model.bars)
            t0 = time.perf_counter()
            mujoco.mj_step(mm, d, steps)
            out.append((time.perf_counter() - t0) / steps)
    return statistics.median(ours), statistics.median(rk4), statistics.median(euler)


def compare(name, model, duration, reps=3) -> dict:
    """One robot: first contact, rest pose and per-step cost of both engines."""
    t_o, X_o = run_ours(model, duration)
    t_m, X_m = run_mujoco(model, duration)
    tc_o, tc_m = first_contact(t_o, lowest_surface(model, X_o)), first_contact(t_m, lowest_surface(model, X_m))
    dc, angle = kabsch(X_m[-1], X_o[-1])
    cost_o, cost_m, cost_e = step_costs(model, duration, reps)
    moving = max(np.abs(X[-1] - X[-101]).max() for X in (X_o, X_m))      # m in the last 0.1 s
    return {"name": name, "first_contact_ours": tc_o, "first_contact_mujoco": tc_m, "centroid_m": dc,
            "angle_deg": angle, "us_ours": cost_o * 1e6, "us_mujoco": cost_m * 1e6, "ratio": cost_o / cost_m,
            "us_mujoco_euler": cost_e * 1e6, "ratio_euler": cost_o / cost_e,
            "still_moving_m": moving, "rest_height_ours": float(X_o[-1, :, 2].mean()),
            "rest_height_mujoco": float(X_m[-1, :, 2].mean())}


def report(r):
    ok = (abs(r["first_contact_ours"] - r["first_contact_mujoco"]) <= FIRST_CONTACT_TOL
          and r["centroid_m"] <= CENTROID_TOL and r["angle_deg"] <= ANGLE_TOL)
    print(f"{r['name']}: first contact ours {r['first_contact_ours'] * 1e3:.2f} ms, MuJoCo "
          f"{r['first_contact_mujoco'] * 1e3:.2f} ms (diff {abs(r['first_contact_ours'] - r['first_contact_mujoco']) * 1e3:.2f} ms);"
          f" rest pose: centroid {r['centroid_m'] * 1e3:.2f} mm apart, rotation {r['angle_deg']:.3f} deg"
          f" (mean node height ours {r['rest_height_ours']:.4f} m, MuJoCo {r['rest_height_mujoco']:.4f} m;"
          f" motion in the last 0.1 s <= {r['still_moving_m'] * 1e3:.2f} mm); per step ours {r['us_ours']:.1f} us,"
          f" MuJoCo RK4 {r['us_mujoco']:.1f} us, ratio {r['ratio']:.2f} (MuJoCo Euler {r['us_mujoco_euler']:.1f} us,"
          f" ratio {r['ratio_euler']:.2f}); {'PASS' if ok else 'FAIL'} (5 ms, 1 cm, 2 deg)")
    return ok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one timing repeat instead of three")
    ap.add_argument("--cpu", type=int, default=None, help="pin to this CPU")
    args = ap.parse_args(argv)
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    reps = 1 if args.quick else 3
    print(f"MuJoCo {mujoco.__version__}; dt {DT * 1e3:g} ms RK4 both; structural damping {DAMPING} /s")
    Simulator(threebar_case(), integrator="rk4", dt=DT).advance(0.01)           # compile the kernels first
    ok = True
    for name, case in (("superball", superball_case), ("threebar", threebar_case)):
        ok &= report(compare(name, case(), SETTLE[name], reps))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
