"""Reconstruct the two-stage stacked tensegrity manipulator of the manipulator paper and write its model file.

The paper's tables 3-7 (connectivity, string parameters, initial coordinates) did not survive, so the
topology and parameters are reconstructed from its text; docs/stacked_manipulator.md documents the result,
the alternatives that were tried and the checks below.

Topology of one stage (stage 1: nodes n1..n12, stage 2: n13..n24, same pattern, i = 0, 1, 2 cyclic):

* bottom nodes ``B_i`` (stage 1 fixed on the ground, stage 2 on the edge midpoints of plate 1), lower-prism
  bars ``B_i -> L_i``, upper-prism bars ``U_i -> T_i``, top nodes ``T_i`` joined by the plate (three virtual
  bars carrying its mass). ``L_i`` (upper ends of the lower bars) and ``U_i`` (lower ends of the upper bars)
  are the six saddle nodes;
* actuated composite string ``B_i -> L_{i+2} -> T_i`` (vertical string to the top of the neighbouring
  lower bar, then diagonal string up to the top node), stiff (EA);
* passive composite string ``B_i -> U_{i+1} -> T_i`` (diagonal string to the bottom of an upper bar, then
  vertical string to the neighbouring top node) with an extension spring in series (``stiffness`` N/m);
* the saddle string, one closed composite string through the six saddle nodes in angular order (zig-zag).

This is the pairing of the previous, unstable version of this script; what was wrong was the geometry: a
composite string has one tension along its path, so a stage has exactly one state of self-stress and the
design shape must carry it. ``form_find_stage`` therefore solves the C3-symmetric equilibrium of a stage
(per stage: height ``H`` and lower saddle radius ``r_lo`` chosen, bar twists, plate rotation and upper
saddle radius solved) and the prestress is that self-stress scaled to a chosen maximum tension.

Pipeline: design() -> rest lengths for the self-stress -> relax without gravity (from a randomly perturbed
start: must come back to the design, all taut, bars apart) -> settle with gravity (perturbed start again;
exact equilibrium, Newton-polished) -> checks (stability, the paper's 14 s experiment with and without string
damping) -> dump_model.

Run: ``.venv/bin/python tools/make_stacked_manipulator.py`` (``--sweep`` also prints the lowest natural
frequency for a few stage-1 shapes of the same family).
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy import optimize

from tensegrity_engine import Simulator, build_model, paper_sinusoid, spec_from_dict
from tensegrity_engine.statics.equilibrium import settle, stability, with_rest_lengths
from tensegrity_engine.model.write import dump_model

OUT = Path(__file__).resolve().parents[1] / "src/tensegrity_engine/tensegrity_engine/models/stacked_manipulator.yaml"

# connectivity offsets (i -> i + k mod 3): actuated B_i -> L_{i+P_ACT} -> T_i, passive B_i -> U_{i+P_PAS} -> T_i
P_ACT, P_PAS = 2, 1

STAGES = [
    # geometry from the paper: base / top circumradius [m], bar length [m], bar mass [kg], tube outer radius,
    # plate mass [kg]. Our choices: stage height H and lower saddle radius r_lo (the rest is form-found),
    # initial guess for (twist_lo, twist_up [deg], plate rotation [deg], r_up), string parameters, prestress.
    dict(rb=0.26, rt=0.26, lb=0.95, mb=0.29, rbar=0.010, plate=2.70, H=0.90, r_lo=0.44,
         guess=(161.5, 161.9, 39.9, 0.45),
         ea_act=5000.0, k_pas=500.0, ea_sad=5000.0, damping=(6.0, 4.0, 6.0), t_max=250.0,
         spool=0.020, motor="Dynamixel PRO L54-50-S290-R", limits=(-2.5, 2.5)),
    dict(rb=0.13, rt=0.13, lb=0.50, mb=0.11, rbar=0.0075, plate=0.33, H=0.475, r_lo=0.22,
         guess=(162.2, 162.1, 39.9, 0.22),
         ea_act=3000.0, k_pas=300.0, ea_sad=3000.0, damping=(3.0, 2.0, 3.0), t_max=100.0,
         spool=0.015, motor="Dynamixel PRO M42-10-S260-R", limits=(-2.5, 2.5)),
]
SEED, PERTURB = 7, 0.003          # random start perturbation [m] before each relaxation


# --- form finding of one C3-symmetric stage --------------------------------------------------------------
def stage_nodes(s, geo, theta0=math.pi / 2, z0=0.0):
    """Positions (3,3) of B, L, U, T for geo = (twist_lo, twist_up [deg], plate rotation [deg], H, r_lo, r_up).
    Bars B_i->L_i span twist_lo in azimuth, U_i->T_i span twist_up; T_i sits at azimuth theta_i + rotation."""
    a_lo, a_up, rot, H, r_lo, r_up = geo
    a_lo, a_up, rot = map(math.radians, (a_lo, a_up, rot))
    c_lo = s["rb"] ** 2 + r_lo ** 2 - 2 * s["rb"] * r_lo * math.cos(a_lo)
    c_up = r_up ** 2 + s["rt"] ** 2 - 2 * r_up * s["rt"] * math.cos(a_up)
    if max(c_lo, c_up) >= s["lb"] ** 2:
        return None
    h_lo, h_up = math.sqrt(s["lb"] ** 2 - c_lo), math.sqrt(s["lb"] ** 2 - c_up)
    th = theta0 + np.radians(120.0) * np.arange(3)
    ring = lambda r, a, z: np.stack([r * np.cos(a), r * np.sin(a), np.full(3, z)], axis=1)   # noqa: E731
    return {"B": ring(s["rb"], th, z0), "L": ring(r_lo, th + a_lo, z0 + h_lo),
            "U": ring(r_up, th + rot - a_up, z0 + H - h_up), "T": ring(s["rt"], th + rot, z0 + H)}


def saddle_loop(N):
    """The six saddle nodes [(kind, i)] in angular order (the zig-zag of the saddle string)."""
    ang = [(math.atan2(N[k][i, 1], N[k][i, 0]) % (2 * math.pi), k, i) for k in "LU" for i in range(3)]
    return [(k, i) for _, k, i in sorted(ang)]


def _unit(a, b):
    d = b - a
    return d / np.linalg.norm(d)


def symmetric_equilibrium_matrix(s, geo):
    """Static balance of the representative free nodes L_0, U_0, T_0 (rows, 9) for the unknowns
    (t_act, t_pas, t_saddle, f_lower, f_upper, f_plate) (columns, 6; bar forces compression positive).
    By the C3 symmetry the other nodes balance too. None if the geometry is impossible."""
    N = stage_nodes(s, geo)
    if N is None:
        return None
    B, L, U, T = N["B"], N["L"], N["U"], N["T"]
    loop = saddle_loop(N)
    if any(loop[k][0] == loop[(k + 1) % 6][0] for k in range(6)):
        return None                                          # saddle nodes must alternate L, U
    nb = {loop[k]: (loop[k - 1], loop[(k + 1) % 6]) for k in range(6)}
    E = np.zeros((9, 6))
    i = (-P_ACT) % 3                                         # actuated string passing L_0 starts at B_i
    E[0:3, 0] = _unit(L[0], B[i]) + _unit(L[0], T[i])
    E[0:3, 2] = sum(_unit(L[0], N[k][j]) for k, j in nb[("L", 0)])
    E[0:3, 3] = _unit(B[0], L[0])
    i = (-P_PAS) % 3                                         # passive string passing U_0 starts at B_i
    E[3:6, 1] = _unit(U[0], B[i]) + _unit(U[0], T[i])
    E[3:6, 2] = sum(_unit(U[0], N[k][j]) for k, j in nb[("U", 0)])
    E[3:6, 4] = _unit(T[0], U[0])
    E[6:9, 0] = _unit(T[0], L[P_ACT % 3])                    # actuated string ending at T_0 comes from L_{0+P}
    E[6:9, 1] = _unit(T[0], U[P_PAS % 3])
    E[6:9, 4] = _unit(U[0], T[0])
    E[6:9, 5] = _unit(T[1], T[0]) + _unit(T[2], T[0])
    return E


def form_find_stage(s):
    """Solve the self-stressed symmetric shape of a stage for the chosen H and r_lo: 9 balance equations in
    twist_lo, twist_up, plate rotation, r_up and the force ratios (t_act = 1). Returns (geo, forces)."""
    def F(z):
        geo = (z[0], z[1], z[2], s["H"], s["r_lo"], z[3])
        E = symmetric_equilibrium_matrix(s, geo)
        return np.full(9, 10.0) if E is None else E @ np.r_[1.0, z[4:]]
    g0 = s["guess"]
    E = symmetric_equilibrium_matrix(s, (g0[0], g0[1], g0[2], s["H"], s["r_lo"], g0[3]))
    x0 = np.linalg.lstsq(E[:, 1:], -E[:, 0], rcond=None)[0]
    sol = optimize.least_squares(F, np.r_[g0, x0], xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=2000)
    if np.abs(sol.fun).max() > 1e-10:
        raise RuntimeError(f"stage form finding failed (residual {np.abs(sol.fun).max():.3g}); change H/r_lo/guess")
    z = sol.x
    geo = (z[0], z[1], (z[2] + 180.0) % 360.0 - 180.0, s["H"], s["r_lo"], z[3])
    forces = np.r_[1.0, z[4:]]
    if np.any(forces[:3] <= 0):
        raise RuntimeError(f"self-stress of the stage is not all-taut: {forces[:3]}")
    return geo, forces


# --- the model ------------------------------------------------------------------------------------------
def design(stages=STAGES):
    """(model dictionary with provisional tensions, per-stage (geo, forces), target tension per string)."""
    pos, found = {}, []
    theta0, z0 = math.pi / 2, 0.0
    for st, s in enumerate(stages):
        geo, forces = form_find_stage(s)
        found.append((geo, forces))
        N = stage_nodes(s, geo, theta0, z0)
        base = 12 * st
        for i in range(3):
            for k, off in (("B", 1), ("L", 4), ("U", 7), ("T", 10)):
                pos[f"n{base + off + i}"] = N[k][i]
        # stage 2 stands on the edge midpoints of plate 1: n13 = (n11+n12)/2 (opposite n10), ...
        T = N["T"]
        theta0 = math.atan2(T[0, 1], T[0, 0]) + math.pi
        z0 += s["H"]
    P = {k: np.array(v) for k, v in pos.items()}
    for a, (b, c) in zip(("n13", "n14", "n15"), (("n11", "n12"), ("n10", "n12"), ("n10", "n11"))):
        assert np.allclose(P[a], (P[b] + P[c]) / 2, atol=1e-12)
        pos[a] = (P[b] + P[c]) / 2

    nodes = [{"name": f"n{i}", "position": [float(v) for v in pos[f"n{i}"]]} for i in range(1, 25)]
    for i in range(3):
        nodes[i]["fixed"] = True
    bars, strings, acts, targets = [], [], [], []
    for st, (s, (geo, forces)) in enumerate(zip(stages, found)):
        n = lambda k: f"n{12 * st + k}"                                        # noqa: E731
        scale = s["t_max"] / forces[:3].max()
        t_act, t_pas, t_sad = forces[:3] * scale
        for i in range(3):
            bars.append({"name": f"b{6 * st + 1 + i}", "nodes": [n(1 + i), n(4 + i)], "mass": s["mb"],
                         "radius": s["rbar"], "length": s["lb"]})
        for i in range(3):
            bars.append({"name": f"b{6 * st + 4 + i}", "nodes": [n(7 + i), n(10 + i)], "mass": s["mb"],
                         "radius": s["rbar"], "length": s["lb"]})
        z_act, z_pas, z_sad = s["damping"]
        sc0 = 7 * st
        for i in range(3):
            strings.append({"name": f"sc{sc0 + 1 + i}", "path": [n(1 + i), n(4 + (i + P_ACT) % 3), n(10 + i)],
                            "EA": s["ea_act"], "damping": z_act, "radius": 0.001, "group": f"stage{st + 1} actuated"})
            targets.append(t_act)
        for i in range(3):
            strings.append({"name": f"sc{sc0 + 4 + i}", "path": [n(1 + i), n(7 + (i + P_PAS) % 3), n(10 + i)],
                            "stiffness": s["k_pas"], "damping": z_pas, "radius": 0.001,
                            "group": f"stage{st + 1} passive"})
            targets.append(t_pas)
        loop = [n((4 if k == "L" else 7) + i) for k, i in saddle_loop(stage_nodes(s, geo))]
        strings.append({"name": f"sc{sc0 + 7}", "path": loop + [loop[0]], "EA": s["ea_sad"], "damping": z_sad,
                        "radius": 0.001, "group": f"stage{st + 1} saddle"})
        targets.append(t_sad)
        for i in range(3):
            acts.append({"name": f"m{3 * st + 1 + i}", "string": f"sc{sc0 + 1 + i}", "spool_radius": s["spool"],
                         "sign": 1, "zero": 0.0, "angle_limits": list(s["limits"]), "motor": s["motor"]})
    for st, (s, top) in enumerate(zip(stages, (10, 22))):
        tri = [f"n{top}", f"n{top + 1}", f"n{top + 2}"]
        for k, (a, b) in enumerate([(tri[0], tri[1]), (tri[1], tri[2]), (tri[2], tri[0])]):
            bars.append({"name": f"b{13 + 3 * st + k}", "nodes": [a, b], "mass": s["plate"] / 3, "radius": 0.005})
    for sd in strings:
        sd["tension"] = 1.0                     # provisional; rest lengths are set from the targets
    constraints = [
        {"name": "n13_on_plate1", "terms": {"n13": 1, "n11": -0.5, "n12": -0.5}},
        {"name": "n14_on_plate1", "terms": {"n14": 1, "n10": -0.5, "n12": -0.5}},
        {"name": "n15_on_plate1", "terms": {"n15": 1, "n10": -0.5, "n11": -0.5}},
    ]
    frames = [{"name": "C0", "nodes": ["n1", "n2", "n3"], "x_node": "n2"},
              {"name": "C1", "nodes": ["n10", "n11", "n12"], "x_node": "n10"},
              {"name": "C2", "nodes": ["n22", "n23", "n24"], "x_node": "n22"}]
    d = {"schema": "tensegrity-model", "version": 1, "name": "stacked_manipulator",
         "gravity": [0.0, 0.0, -9.81], "nodes": nodes, "bars": bars, "strings": strings,
         "constraints": constraints, "actuators": acts, "frames": frames}
    return d, found, np.array(targets)


# --- checks -----------------------------------------------------------------------------------------------
def segment_distance(p1, q1, p2, q2):
    """Smallest distance between segments p1-q1 and p2-q2."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e, f, c, b = d1 @ d1, d2 @ d2, d2 @ r, d1 @ r, d1 @ d2
    den = a * e - b * b
    s = float(np.clip((b * f - c * e) / den, 0.0, 1.0)) if den > 1e-14 else 0.0
    t = (b * s + f) / e
    if t < 0.0:
        t, s = 0.0, float(np.clip(-c / a, 0.0, 1.0))
    elif t > 1.0:
        t, s = 1.0, float(np.clip((b - c) / a, 0.0, 1.0))
    return float(np.linalg.norm(p1 + d1 * s - (p2 + d2 * t)))


def bar_clearance(model, X):
    """Smallest centre-line distance [m] between two real bars of the same stage, per stage."""
    B = model.bars
    return [min(segment_distance(X[B[i, 0]], X[B[i, 1]], X[B[j, 0]], X[B[j, 1]])
                for i in range(lo, lo + 6) for j in range(i + 1, lo + 6)) for lo in (0, 6)]


def experiment(model, damping: bool):
    """The paper's 14 s experiment; returns (trajectory, wall time [s])."""
    import time
    t0 = time.perf_counter()
    tr = Simulator(model, integrator="dopri5", damping=damping).run(14.0, inputs=paper_sinusoid(model), rate=100)
    return tr, time.perf_counter() - t0


def build(stages=STAGES, verbose=True):
    """design -> weightless relaxation -> settle under gravity. Returns (final model, report dict)."""
    say = print if verbose else (lambda *a, **k: None)
    d, found, targets = design(stages)
    spec_dict = dict(d, description=DESCRIPTION, notes=NOTES)
    model = build_model(spec_from_dict(spec_dict, "<design>"))
    rep = {"found": found, "targets": targets}
    for st, (geo, forces) in enumerate(found):
        say(f"stage {st + 1}: twist lower/upper {geo[0]:.2f}/{geo[1]:.2f} deg, plate rotation {geo[2]:.2f} deg, "
            f"H {geo[3]:.3f} m, saddle radii {geo[4]:.3f}/{geo[5]:.3f} m; self-stress t_act:t_pas:t_sad = "
            f"1:{forces[1]:.3f}:{forces[2]:.3f}")
    rest = model.rest_length_for_tension(targets, model.string_lengths(model.positions))
    if np.any(rest <= 0):
        i = int(np.argmin(rest))
        raise ValueError(f"string {model.string_names[i]} would need rest length {rest[i]:.4g} m for "
                         f"{targets[i]:.1f} N: its spring is too soft for this prestress")
    rng = np.random.default_rng(SEED)
    # 1) no gravity: the design carries the self-stress, so the relaxation must come back to it
    weightless = build_model(replace(model.spec, gravity=(0.0, 0.0, 0.0)))
    s0 = settle(weightless, rest, X=model.positions + rng.normal(0.0, PERTURB, model.positions.shape), tol=1e-10)
    rep.update(w_residual=s0.residual, w_tensions=s0.tensions, w_move=np.abs(s0.positions - model.positions).max(),
               w_clearance=bar_clearance(model, s0.positions))
    say(f"no gravity: residual {s0.residual:.2e} N, back to the design within {rep['w_move'] * 1e3:.3f} mm, "
        f"tensions {s0.tensions.min():.1f}..{s0.tensions.max():.1f} N, bar clearance "
        f"{rep['w_clearance'][0] * 100:.1f} / {rep['w_clearance'][1] * 100:.1f} cm")
    # 2) gravity on, same rest lengths, perturbed start
    settled = settle(model, rest, X=s0.positions + rng.normal(0.0, PERTURB, model.positions.shape), tol=1e-10)
    final = with_rest_lengths(model, settled.rest_lengths, settled.positions)
    st = stability(final, final.positions)
    rep.update(residual=settled.residual, tensions=settled.tensions, bar_forces=settled.bar_forces,
               sag=np.abs(settled.positions - s0.positions).max(), clearance=bar_clearance(final, final.positions),
               stable=st["stable"], frequencies=st["frequencies_hz"], eigenvalues=st["eigenvalues"])
    say(f"under gravity: residual {settled.residual:.2e} N, sag {rep['sag'] * 1e3:.1f} mm, tensions "
        f"{settled.tensions.min():.1f}..{settled.tensions.max():.1f} N, bar clearance "
        f"{rep['clearance'][0] * 100:.1f} / {rep['clearance'][1] * 100:.1f} cm")
    f = st["frequencies_hz"]
    say(f"stable: {st['stable']}, natural frequencies [Hz]: lowest {np.round(f[:6], 3)}, highest {f[-1]:.1f}")
    return final, rep


DESCRIPTION = (
    "Two-stage stacked tensegrity manipulator of the manipulator paper (docs/references.md), reconstructed: its connectivity, parameter and coordinate tables did not survive, "
    "see docs/stacked_manipulator.md. mu=24, nu=12, beta=18, sigma_c=14, sigma_s=36, phi=18, alpha=6.")
NOTES = (
    "Generated by tools/make_stacked_manipulator.py. Per stage: actuated composite strings B_i -> L_(i+2) -> T_i "
    "(sc1-3, sc8-10), passive ones with a series spring B_i -> U_(i+1) -> T_i (sc4-6, sc11-13), one saddle "
    "string through the six saddle nodes (sc7, sc14). Stage shapes are form-found C3-symmetric self-stressed "
    "shapes (stage 1: H 0.90 m, lower saddle radius 0.44 m, bar twist ~161.5 deg; stage 2: H 0.475 m, 0.22 m, "
    "~162 deg), prestressed with that self-stress (max 250 N / 100 N), then settled under gravity: an exact "
    "static equilibrium (residual < 1e-9 N), stable, all strings taut. String parameters are ours: actuated "
    "EA 5000 N / 3000 N, passive springs 500 N/m / 300 N/m, saddle EA 5000 N / 3000 N.")


def sweep():
    """Lowest natural frequency under gravity for stage-1 shapes of the same family (stage 2 unchanged)."""
    print("\nstage-1 family sweep (stage 2 unchanged): H [m], r_lo [m] -> twist, self-stress, f_min [Hz], clearance")
    for H, r_lo in ((0.85, 0.44), (0.90, 0.40), (0.90, 0.44), (0.95, 0.42), (0.95, 0.44), (1.00, 0.42),
                    (1.00, 0.44), (1.05, 0.40)):
        stages = [dict(STAGES[0], H=H, r_lo=r_lo), STAGES[1]]
        try:
            m, rep = build(stages, verbose=False)
        except Exception as exc:              # noqa: BLE001 - report and go on
            print(f"  {H:.2f} {r_lo:.2f}: failed ({exc})")
            continue
        geo, forces = rep["found"][0]
        print(f"  {H:.2f} {r_lo:.2f} -> twist {geo[0]:.1f}/{geo[1]:.1f}, 1:{forces[1]:.2f}:{forces[2]:.2f}, "
              f"stable {rep['stable']}, f_min {rep['frequencies'][0]:.3f}, clearance "
              f"{rep['clearance'][0] * 100:.1f} cm")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweep", action="store_true", help="also print f_min for a few other stage-1 shapes")
    ap.add_argument("--no-write", action="store_true", help="check only, do not write the model file")
    args = ap.parse_args()
    final, rep = build()
    print("counts:", final.counts)
    print("tensions at rest [N]:", {nm: round(float(t), 1) for nm, t in zip(final.string_names, rep["tensions"])})
    ok = rep["stable"] and rep["residual"] < 1e-9 and rep["w_residual"] < 1e-9 and rep["tensions"].min() > 0 \
        and rep["w_tensions"].min() > 0 and min(rep["clearance"] + rep["w_clearance"]) > 0.03 \
        and rep["w_move"] < 1e-3
    for damping in (True, False):
        tr, wall = experiment(final, damping)
        clear = np.min([bar_clearance(final, tr.nodes[k]) for k in range(0, len(tr.t), 10)], axis=0)
        tmin = tr.tensions.min(axis=0)
        print(f"experiment 14 s ({'with' if damping else 'without'} string damping): min tension "
              f"{tmin.min():.2f} N (stage 1 {tmin[:7].min():.1f}, stage 2 {tmin[7:].min():.1f}), max "
              f"{tr.tensions.max():.1f} N, min bar clearance {clear[0] * 100:.1f} / {clear[1] * 100:.1f} cm, "
              f"max bar length error {tr.bar_length_error.max():.1e}, {wall:.2f} s wall")
        ok = ok and tmin.min() > 0
    if args.sweep:
        sweep()
    if not ok:
        print("design rejected", file=sys.stderr)
        return 1
    if args.no_write:
        return 0
    dump_model(final, OUT, header="Generated by tools/make_stacked_manipulator.py -- edit the script, not this file.")
    from tensegrity_engine import load_model
    m2 = load_model(OUT)
    print("written", OUT, m2.counts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
