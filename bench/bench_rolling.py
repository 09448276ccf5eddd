#!/usr/bin/env python3
"""Rolling locomotion benchmark (``tensegrity_engine.locomotion``): robots on flat ground (μ = 0.8) rolled by
``RollingController.update`` in closed loop (50 Hz) on the simulated node positions (Simulator, RK4, 1 ms).

    .venv/bin/python bench/bench_rolling.py [--faces 10] [--headings 0 90 225] [--out docs/img]

Per robot and commanded heading it prints the faces changed (rests of >= 0.3 s on a new face of >= 3 ground
nodes, counted from the simulated positions), the net distance of the centre of mass, the heading error of
its net displacement, the smallest bar-bar clearance at the control ticks (gap), the simulated and the
wall-clock time (planning included: plans are memoised per face
and edge, so the first tips of a run cost most). Robots: the SUPERball-like six-bar with all 24 strings
actuated; the same with only the 12 strings of four node-disjoint closed triangles actuated (two motors per
node); the three-bar prism as generated (no motors: the planner says why it cannot roll) and with a motor on
each of its nine cables (±0.1 m). Writes ``rolling_com_paths.png`` (tracks seen from above) into ``--out``.
"""
import argparse
import time

import numpy as np

from tensegrity_engine.generators import superball, three_bar_prism, verify_template, with_motors
from tensegrity_engine.locomotion import CannotRoll, RollingController
from tensegrity_engine.locomotion.closed_loop import at_rest, roll
from tensegrity_engine.locomotion.subsets import disjoint_triangle_actuators
from tensegrity_engine.plots.rolling import plot_com_paths


def robots():
    """(label, model, allowed actuators or None) of the benchmark."""
    six, _ = verify_template(superball(friction=0.8), min_tension=100.0)
    three, _ = verify_template(three_bar_prism(friction=0.8), min_tension=10.0)
    three_m, _ = verify_template(with_motors(three_bar_prism(friction=0.8), 0.1, 0.01), min_tension=10.0)
    return [("six-bar, 24 motors", six, None),
            ("six-bar, 12 motors", six, disjoint_triangle_actuators(six)),
            ("three-bar, no motors", three, None),
            ("three-bar, 9 motors", three_m, None)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--faces", type=int, default=10, help="face changes per run")
    ap.add_argument("--headings", type=float, nargs="+", default=[0.0, 90.0, 225.0], help="commanded headings [deg]")
    ap.add_argument("--duration", type=float, default=200.0, help="longest simulated time per run [s]")
    ap.add_argument("--out", default="docs/img", help="directory for rolling_com_paths.png")
    args = ap.parse_args(argv)
    panels = {}
    print(f"{'robot':22s} {'heading':>7s} {'faces':>5s} {'dist m':>7s} {'err °':>6s} {'gap mm':>6s} {'sim s':>6s} "
          f"{'wall s':>6s}  state")
    for label, model, allowed in robots():
        X = at_rest(model)
        for h in args.headings:
            start = time.perf_counter()
            try:
                ctl = RollingController(model, allowed)
            except CannotRoll as exc:
                print(f"{label:22s} CannotRoll: {exc}")
                break
            ctl.set_heading(np.radians(h))
            run = roll(ctl, X, args.duration, faces=args.faces)
            err = np.degrees(run.heading_error(np.radians(h)))
            print(f"{label:22s} {h:7.0f} {run.faces_changed:5d} {run.distance:7.2f} {err:6.1f} "
                  f"{1e3 * run.min_clearance:6.1f} {run.times[-1]:6.1f} "
                  f"{time.perf_counter() - start:6.1f}  {run.status['state']}, {run.status['detours']} detours"
                  f"{': ' + run.status['message'] if run.status['state'] == 'error' else ''}")
            panels.setdefault(label, []).append((f"{h:.0f}°: {run.faces_changed} faces, {run.distance:.1f} m, "
                                                 f"err {err:.0f}°", np.radians(h), run.com))
    print("wrote", plot_com_paths(panels, f"{args.out}/rolling_com_paths.png"))


if __name__ == "__main__":
    main()
