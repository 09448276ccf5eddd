"""Reconstruct the two-stage stacked tensegrity manipulator of the manipulator paper and write its model file.

The paper's tables 3-7 (connectivity, string parameters, initial coordinates) did not survive, so the
topology and parameters are reconstructed from its text (see docs/stacked_manipulator.md):

* each stage is two overlapping 3-bar prisms: the lower prism's bars run from the bottom nodes up to
  saddle nodes, the upper prism's bars from the other saddle nodes up to the top nodes; twist 150 deg;
* per stage seven composite strings: three actuated vertical strings bottom -> saddle (lower-prism top)
  -> top, three passive vertical strings (extension spring in series) bottom -> saddle (upper-prism
  bottom) -> top, and one closed saddle string through the six saddle nodes (6 simple strings);
* the plates are three virtual bars each (class-3 joints at the top nodes), stage 2 stands on the edge
  midpoints of plate 1 (three linear constraints), bottom nodes n1-n3 are fixed.

The script builds the design shape, computes the minimum-norm all-taut prestress there, settles the
structure under gravity with those rest lengths (so the shipped shape is an exact equilibrium), checks
stability, and writes ``src/tensegrity_engine/tensegrity_engine/models/stacked_manipulator.yaml``.

Run: ``.venv/bin/python tools/make_stacked_manipulator.py``
"""
from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from tensegrity_engine import build_model, spec_from_dict
from tensegrity_engine.equilibrium import settle, stability, with_rest_lengths
from tensegrity_engine.model_io import dump_model

OUT = Path(__file__).resolve().parents[1] / "src/tensegrity_engine/tensegrity_engine/models/stacked_manipulator.yaml"

TWIST = math.radians(150.0)
STAGES = [
    # base radius, top radius, bar length, bar mass, bar radius, stage height, plate mass,
    # (EA actuated [N], spring k passive [N/m], EA saddle [N]), damping (act, passive, saddle) [N s/m],
    # prestress: minimum tension [N]
    dict(rb=0.26, rt=0.26, lb=0.95, mb=0.29, rbar=0.010, height=1.20, plate=2.70,
         ea_act=6000.0, k_pas=600.0, ea_sad=6000.0, zeta=(8.0, 4.0, 6.0), spool=0.02,
         motor="Dynamixel PRO L54-50-S290-R", limits=(-2.5, 2.5)),
    dict(rb=0.13, rt=0.13, lb=0.50, mb=0.11, rbar=0.0075, height=0.66, plate=0.33,
         ea_act=3000.0, k_pas=300.0, ea_sad=3000.0, zeta=(3.0, 1.5, 2.0), spool=0.015,
         motor="Dynamixel PRO M42-10-S260-R", limits=(-2.5, 2.5)),
]
# target tensions [N] before gravity (stage 2 scaled), per string group
TARGET = {"actuated": 80.0, "passive": 60.0, "saddle": 100.0}
STAGE2_SCALE = 0.5


def polar(r, ang, z):
    return [r * math.cos(ang), r * math.sin(ang), z]


def design():
    """Node positions by name and the model dictionary (without rest lengths)."""
    pos = {}
    th = [math.radians(90 + 120 * i) for i in range(3)]          # stage-1 bottom / top node angles
    # stage 1
    s = STAGES[0]
    h1 = math.sqrt(s["lb"] ** 2 - (s["rb"] ** 2 + s["rt"] ** 2 - 2 * s["rb"] * s["rt"] * math.cos(TWIST)))
    for i in range(3):
        pos[f"n{1 + i}"] = polar(s["rb"], th[i], 0.0)
        pos[f"n{4 + i}"] = polar(s["rt"], th[i] + TWIST, h1)                       # lower-prism tops
        pos[f"n{7 + i}"] = polar(s["rb"], th[i] - TWIST, s["height"] - h1)          # upper-prism bottoms
        pos[f"n{10 + i}"] = polar(s["rt"], th[i], s["height"])
    # stage 2 stands on the edge midpoints of plate 1: n13 = (n11+n12)/2, n14 = (n10+n12)/2, n15 = (n10+n11)/2
    P = {k: np.array(v) for k, v in pos.items()}
    mids = [(P["n11"] + P["n12"]) / 2, (P["n10"] + P["n12"]) / 2, (P["n10"] + P["n11"]) / 2]
    z0 = STAGES[0]["height"]
    s = STAGES[1]
    th2 = [math.atan2(m[1], m[0]) for m in mids]
    h1b = math.sqrt(s["lb"] ** 2 - (s["rb"] ** 2 + s["rt"] ** 2 - 2 * s["rb"] * s["rt"] * math.cos(TWIST)))
    for i in range(3):
        pos[f"n{13 + i}"] = list(mids[i])
        pos[f"n{16 + i}"] = polar(s["rt"], th2[i] + TWIST, z0 + h1b)
        pos[f"n{19 + i}"] = polar(s["rb"], th2[i] - TWIST, z0 + s["height"] - h1b)
        pos[f"n{22 + i}"] = polar(s["rt"], th2[i], z0 + s["height"])

    nodes = [{"name": f"n{i}", "position": [float(v) for v in pos[f"n{i}"]]} for i in range(1, 25)]
    for i in range(3):
        nodes[i]["fixed"] = True
    bars, strings, acts = [], [], []
    for st, (s, base) in enumerate(zip(STAGES, (0, 12))):
        n = lambda k: f"n{base + k}"                                              # noqa: E731
        b0 = 6 * st
        for i in range(3):
            bars.append({"name": f"b{b0 + 1 + i}", "nodes": [n(1 + i), n(4 + i)], "mass": s["mb"], "radius": s["rbar"],
                         "length": s["lb"]})
        for i in range(3):
            bars.append({"name": f"b{b0 + 4 + i}", "nodes": [n(7 + i), n(10 + i)], "mass": s["mb"], "radius": s["rbar"],
                         "length": s["lb"]})
        sc0 = 7 * st
        za, zp, zs = s["zeta"]
        for i in range(3):   # actuated: bottom i -> lower-prism top at +30 deg (bar of bottom i-1) -> top i
            strings.append({"name": f"sc{sc0 + 1 + i}", "path": [n(1 + i), n(4 + (i - 1) % 3), n(10 + i)],
                            "EA": s["ea_act"], "damping": za, "radius": 0.001, "group": f"stage{st + 1} actuated"})
        for i in range(3):   # passive (spring in series): bottom i -> upper-prism bottom at -30 deg -> top i
            strings.append({"name": f"sc{sc0 + 4 + i}", "path": [n(1 + i), n(7 + (i + 1) % 3), n(10 + i)],
                            "stiffness": s["k_pas"], "damping": zp, "radius": 0.001,
                            "group": f"stage{st + 1} passive"})
        # saddle loop ordered by angle: lower tops (+150) and upper bottoms (-150) alternate every 60 deg
        sad = [n(4 + k) for k in range(3)] + [n(7 + k) for k in range(3)]
        ang = {nm: math.atan2(pos[nm][1], pos[nm][0]) % (2 * math.pi) for nm in sad}
        loop = sorted(sad, key=lambda nm: ang[nm])
        strings.append({"name": f"sc{sc0 + 7}", "path": loop + [loop[0]], "EA": s["ea_sad"], "damping": zs,
                        "radius": 0.001, "group": f"stage{st + 1} saddle"})
        for i in range(3):
            acts.append({"name": f"m{3 * st + 1 + i}", "string": f"sc{sc0 + 1 + i}", "spool_radius": s["spool"],
                         "sign": 1, "zero": 0.0, "angle_limits": list(s["limits"]), "motor": s["motor"]})
    for st, (s, top) in enumerate(zip(STAGES, (10, 22))):
        pb = 13 + 3 * st
        tri = [f"n{top}", f"n{top + 1}", f"n{top + 2}"]
        for k, (a, b) in enumerate([(tri[0], tri[1]), (tri[1], tri[2]), (tri[2], tri[0])]):
            bars.append({"name": f"b{pb + k}", "nodes": [a, b], "mass": s["plate"] / 3, "radius": 0.005})
    constraints = [
        {"name": "n13_on_plate1", "terms": {"n13": 1, "n11": -0.5, "n12": -0.5}},
        {"name": "n14_on_plate1", "terms": {"n14": 1, "n10": -0.5, "n12": -0.5}},
        {"name": "n15_on_plate1", "terms": {"n15": 1, "n10": -0.5, "n11": -0.5}},
    ]
    frames = [{"name": "C0", "nodes": ["n1", "n2", "n3"], "x_node": "n2"},
              {"name": "C1", "nodes": ["n10", "n11", "n12"], "x_node": "n10"},
              {"name": "C2", "nodes": ["n22", "n23", "n24"], "x_node": "n22"}]
    return {"schema": "tensegrity-model", "version": 1, "name": "stacked_manipulator",
            "gravity": [0.0, 0.0, -9.81], "nodes": nodes, "bars": bars, "strings": strings,
            "constraints": constraints, "actuators": acts, "frames": frames}


DESCRIPTION = (
    "Two-stage stacked tensegrity manipulator of the manipulator paper (papers/stacked-manipulator-damping-"
    "composite-strings.txt), reconstructed: its connectivity tables did not survive, see "
    "docs/stacked_manipulator.md. mu=24, nu=12, beta=18, sigma_c=14, sigma_s=36, phi=18, alpha=6.")
NOTES = (
    "Generated by tools/make_stacked_manipulator.py: design shape (twist 150 deg, stage heights 1.20 m and "
    "0.66 m), minimum-norm prestress with every string >= 25 N, then settled under gravity so this shape is "
    "an exact static equilibrium (residual < 1e-9 N) and stable. String parameters are ours: actuated strings "
    "EA 6000 N / 3000 N, passive strings springs 600 N/m / 300 N/m, saddle strings EA 6000 N / 3000 N.")


def main() -> int:
    spec_dict = dict(design(), description=DESCRIPTION, notes=NOTES)
    for s in spec_dict["strings"]:          # provisional, replaced below
        s["tension"] = 1.0
    model = build_model(spec_from_dict(spec_dict, "<design>"))
    print("counts:", model.counts)
    # 1) form-finding without gravity: strings shortened to the target tensions at the design lengths;
    #    the relaxed shape is then self-stressed (an equilibrium with no load, every string taut)
    targets = np.array([TARGET[s.group.split()[1]] * (1.0 if s.group.startswith("stage1") else STAGE2_SCALE)
                        for s in model.spec.strings])
    rest = model.rest_length_for_tension(targets, model.string_lengths(model.positions))
    weightless = build_model(replace(model.spec, gravity=(0.0, 0.0, 0.0)))
    s0 = settle(weightless, rest, tol=1e-10)
    print(f"self-stressed shape: residual {s0.residual:.3g} N, tensions {s0.tensions.min():.1f}..{s0.tensions.max():.1f} N, "
          f"max move {np.abs(s0.positions - model.positions).max() * 1e3:.1f} mm")
    # 2) gravity on, same rest lengths: the structure sags slightly into its loaded equilibrium
    settled = settle(model, rest, X=s0.positions, tol=1e-10)
    print(f"under gravity: residual {settled.residual:.3g} N, tensions {settled.tensions.min():.2f}.."
          f"{settled.tensions.max():.2f} N; sag {np.abs(settled.positions - s0.positions).max() * 1e3:.1f} mm")
    final = with_rest_lengths(model, settled.rest_lengths, settled.positions)
    st = stability(final, final.positions)
    print(f"stable: {st['stable']}, lowest frequencies [Hz]: {np.round(st['frequencies_hz'][:6], 3)}")
    print("tensions:", dict(zip(final.string_names, np.round(settled.tensions, 1))))
    if not st["stable"] or settled.tensions.min() <= 0 or settled.residual > 1e-9:
        print("design rejected", file=sys.stderr)
        return 1
    dump_model(final, OUT, header="Generated by tools/make_stacked_manipulator.py -- edit the script, not this file.")
    from tensegrity_engine import load_model
    m2 = load_model(OUT)
    print("written", OUT, m2.counts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
