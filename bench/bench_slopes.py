#!/usr/bin/env python3
"""Rolling on inclined planes: the SUPERball-like six-bar (24 motors) on a plane tilted by each slope (rising
toward +x, gravity along -z; ``generators.incline.on_incline``), settled (``closed_loop.at_rest``), rolled by
``RollingController`` in heading mode (50 Hz closed loop, ``closed_loop.roll``) up the slope (heading 0) and
down it (heading 180°), for each friction coefficient μ of the plane.

    .venv/bin/python bench/bench_slopes.py [--mu 0.5 0.8 1.2] [--slopes 5 10 15 20] [--faces 6]

Per run it prints the faces changed (rests of >= 0.3 s on a new face), the net displacement up the slope
(negative: down), the height the centre of mass gained, the smallest bar-bar clearance at the control ticks,
the simulated and wall-clock time and how the run ended (the controller's state and message). A slope with
tan(slope) > μ is not rolled: the planner's CannotRoll is printed ("slides")."""
import argparse
import math
import time
import warnings

import numpy as np

from tensegrity_engine.generators import superball, verify_template
from tensegrity_engine.generators.incline import on_incline
from tensegrity_engine.locomotion import CannotRoll, GaitPlanner, RollingController
from tensegrity_engine.locomotion.closed_loop import at_rest, roll


def on_slope(mu: float, slope_deg: float):
    """(model, node positions at rest) of the six-bar on the slope (positions as placed if it slides)."""
    model, _ = verify_template(on_incline(superball(friction=mu), math.radians(slope_deg)), min_tension=100.0)
    if math.tan(math.radians(slope_deg)) > mu:
        return model, model.positions
    return model, at_rest(model)


def run(mu: float, slope_deg: float, heading: float, faces: int) -> str:
    model, X = on_slope(mu, slope_deg)
    try:
        GaitPlanner(model).plan_options(X, heading, math.pi)
    except CannotRoll as why:
        first = str(why).split("; edge ")[0]        # the edge nearest the heading: its reason
        return f"CannotRoll: {first[:400]}"
    c = RollingController(model, horizon=1)
    c.set_heading(heading)
    t = time.perf_counter()
    r = roll(c, X, duration=25.0 * faces, faces=faces)
    up = float(r.displacement[0])
    s = r.status
    return (f"faces {r.faces_changed:2d}  up-slope {up:+6.2f} m  height {r.com[-1, 2] - r.com[0, 2]:+6.2f} m  "
            f"gap {1e3 * r.min_clearance:4.0f} mm  sim {r.times[-1]:5.1f} s  wall {time.perf_counter() - t:4.0f} s  "
            f"{s['state']} {s['reason']}: {s['message'][:90]}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mu", type=float, nargs="+", default=[0.5, 0.8, 1.2])
    ap.add_argument("--slopes", type=float, nargs="+", default=[5.0, 10.0, 15.0, 20.0])
    ap.add_argument("--faces", type=int, default=6)
    ap.add_argument("--down", action="store_true", help="also roll down each slope (heading 180°)")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")          # nodes settled 1-2 mm into the plane are pushed out: expected
    for mu in a.mu:
        for slope in a.slopes:
            for name, heading in [("up", 0.0)] + ([("down", math.pi)] if a.down else []):
                print(f"mu {mu:.1f}  slope {slope:4.1f}°  {name:4s}  {run(mu, slope, heading, a.faces)}", flush=True)


if __name__ == "__main__":
    main()
