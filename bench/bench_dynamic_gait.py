#!/usr/bin/env python3
"""Dynamic gait against the quasi-static one (``RollingController(model, gait=...)``): the six-bar (24 motors,
μ = 0.8) rolled in closed loop (``closed_loop.roll``, 50 Hz, measurements two ticks old, motors at the model's
speed: 3 rad/s on 15 mm spools, 0.045 m/s) for a fixed simulated time toward each heading.

    .venv/bin/python bench/bench_dynamic_gait.py [--duration 60] [--headings 0 90 225]

Per gait and heading: faces landed per minute (the controller's count: a new face of >= 3 ground nodes, one
old node lifted) and faces rested on per minute (``RollRun.faces``: >= 0.3 s on the face; a chained tip may
leave a face sooner), metres per minute of the centre of mass's net displacement, the heading error after
the eighth landed face, the smallest bar-bar clearance at any control tick, and the wall time (planning and
optimising included; plans are memoised per run, the first tips cost most); then the dynamic/quasi-static ratios.
"""
import argparse
import time

import numpy as np

from tensegrity_engine.generators import superball, verify_template
from tensegrity_engine.locomotion import RollingController
from tensegrity_engine.locomotion.closed_loop import at_rest, roll
from tensegrity_engine.locomotion.support import angle_between, centre_of_mass

MOTOR = 0.045      # m/s: 3 rad/s on the six-bar's 15 mm spools (the simulator node's motor_speed_limit)


def measure(model, X, gait: str, heading: float, duration: float) -> dict:
    """One closed-loop run; the figures of the table's row."""
    ctl = RollingController(model, gait=gait)
    ctl.set_heading(heading)
    marks, update = {}, ctl.update

    def watched(t, Xm):
        u = update(t, Xm)
        marks.setdefault(ctl.faces_changed, centre_of_mass(model, Xm)[:2])
        return u
    ctl.update = watched
    start = time.perf_counter()
    run = roll(ctl, X, duration, delay=2, motor_speed=MOTOR)
    wall = time.perf_counter() - start
    T = float(run.times[-1])
    d8 = marks.get(8, run.com[-1, :2]) - run.com[0, :2]
    return {"landed": 60 * ctl.faces_changed / T, "rested": 60 * run.faces_changed / T,
            "m_min": 60 * run.distance / T, "err8": np.degrees(angle_between(np.arctan2(d8[1], d8[0]), heading)),
            "gap": 1e3 * run.min_clearance, "wall": wall, "opt": getattr(ctl.gait, "wall", 0.0)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=60.0, help="simulated time per run [s]")
    ap.add_argument("--headings", type=float, nargs="+", default=[0.0, 90.0, 225.0], help="headings [deg]")
    args = ap.parse_args(argv)
    model, _ = verify_template(superball(friction=0.8), min_tension=100.0)
    X = at_rest(model)
    print(f"{'gait':13s} {'heading':>7s} {'landed/min':>10s} {'rested/min':>10s} {'m/min':>6s} {'err8 °':>6s} "
          f"{'gap mm':>6s} {'wall s':>6s} {'optimising s':>12s}")
    for h in args.headings:
        rows = {}
        for gait in ("quasi_static", "dynamic"):
            r = rows[gait] = measure(model, X, gait, np.radians(h), args.duration)
            print(f"{gait:13s} {h:7.0f} {r['landed']:10.1f} {r['rested']:10.1f} {r['m_min']:6.2f} {r['err8']:6.1f} "
                  f"{r['gap']:6.1f} {r['wall']:6.0f} {r['opt']:12.0f}", flush=True)
        q, d = rows["quasi_static"], rows["dynamic"]
        print(f"{'ratio':13s} {h:7.0f} {d['landed'] / q['landed']:10.2f} {d['rested'] / q['rested']:10.2f} "
              f"{d['m_min'] / q['m_min']:6.2f}", flush=True)


if __name__ == "__main__":
    main()
