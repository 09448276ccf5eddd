#!/usr/bin/env python3
"""The quasi-static rolling controller on the templates of ``tensegrity new --motors all --ground``: per robot
and heading, faces changed, distance, heading error, smallest bar-bar clearance and simulated time, or the
``CannotRoll`` / error reason. Not a timed test (wall time printed for information).

    .venv/bin/python bench/bench_motors_rolling.py [--robots icosahedron,prism3] [--headings 0,90,225]
        [--duration 60] [--faces 10] [--clearance 0.01]

Each robot is generated as the CLI does (``tensegrity new <template> --ground --motors all --friction 0.8``,
default motor reach and spool), settled on the ground and rolled in closed loop (``closed_loop.roll``, 50 Hz)
for up to ``--duration`` simulated seconds or ``--faces`` faces.
"""
import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from tensegrity_engine.cli import main as cli
from tensegrity_engine.locomotion import RollingController
from tensegrity_engine.locomotion.closed_loop import at_rest, roll
from tensegrity_engine.model.load import load_model

ROBOTS = {"icosahedron": ["icosahedron", "--ground"], "cuboctahedron": ["cuboctahedron", "--ground"],
          "prism3": ["prism", "--n", "3", "--ground"], "prism4": ["prism", "--n", "4", "--ground"],
          "threebar": ["threebar"]}


def robot(name: str, folder: Path, extra=()):
    """The model ``tensegrity new`` writes for robot ``name`` with a motor on every string."""
    out = folder / f"{name}.yaml"
    assert cli(["new", *ROBOTS[name], *extra, "--motors", "all", "--friction", "0.8", "-o", str(out)]) == 0
    return load_model(out)


def row(model, X, heading_deg: float, duration: float, faces: int, **tuning) -> str:
    """One table row: the controller rolling ``model`` from X toward ``heading_deg``."""
    ctl = RollingController(model, **tuning)
    ctl.set_heading(np.radians(heading_deg))
    t0 = time.perf_counter()
    r = roll(ctl, X, duration=duration, faces=faces)
    err = np.degrees(r.heading_error(np.radians(heading_deg)))
    end = "" if r.status["state"] not in ("error",) else f" {r.status['reason']}: {r.status['message']}"
    return (f"| {model.name} | {heading_deg:g}° | {r.faces_changed} | {r.distance:.2f} m | {err:.1f}° | "
            f"{1e3 * r.min_clearance:.1f} mm | {r.times[-1]:.1f} s | {time.perf_counter() - t0:.1f} s |{end}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", default=",".join(ROBOTS))
    ap.add_argument("--headings", default="0,90,225")
    ap.add_argument("--duration", type=float, default=60.0, help="simulated seconds per run")
    ap.add_argument("--faces", type=int, default=10)
    ap.add_argument("--clearance", type=float, default=None, help="planner's bar-bar margin [m] (default its own)")
    args = ap.parse_args(argv)
    tuning = {} if args.clearance is None else {"clearance": args.clearance}
    print("| robot | heading | faces | distance | heading error | min clearance | simulated | wall |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.robots.split(","):
            model = robot(name, Path(tmp))
            X = at_rest(model)
            for h in args.headings.split(","):
                print(row(model, X, float(h), args.duration, args.faces, **tuning), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
