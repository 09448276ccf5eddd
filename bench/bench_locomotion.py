#!/usr/bin/env python3
"""How rolling is judged: robot × terrain × method → faces/min, m/min, heading error, min clearance, success rate
over seeds, printed as the markdown table of docs/locomotion.md.

    .venv/bin/python bench/bench_locomotion.py [--rows superball/flat/heading-0 ...] [--seeds 20] [--quick]
                                               [--workers 2 | --scheduler tcp://HOST:8786]

Each row is one (robot, terrain, method) from the registries below; each seed is one closed-loop run
(``closed_loop.roll``: the controller at 50 Hz on the simulated node positions, RK4) from the robot at rest,
turned to a start yaw drawn from the seed. A heading row commands a fixed heading (seed: start yaw); a goal
row a point ``distance`` away (seed: start yaw and goal direction, spread over the circle). Per row:
faces/min and m/min in simulated time (faces: rests of >= 0.3 s on a new face; m: net displacement of the
centre of mass), heading error (angle between the net displacement and the heading or the start-goal
direction: median and worst), the smallest bar-bar clearance over all seeds, path/straight (the rest points'
path over the net displacement: 1 is a straight line; median), success rate (heading: ``faces`` faces with
a heading error <= 5°; goal: ``arrived`` within ``tolerance``) and the wall time of the row's runs.

Rows run in parallel: on local worker processes (``--workers``, default all cores) or on a Dask cluster
(``--scheduler ADDRESS``), one task per (row, seed). A worker builds each robot-terrain once and keeps the
planned tips (``GaitPlanner.plans``, per face and edge) for the next seed of the same setup where the terrain
is uniform (flat: a plan holds wherever the robot lies on that face), so planning is paid once per worker,
not per seed; ``--cold`` plans afresh in every run.

Adding a row is one line in ROWS; a new robot, terrain or method is one entry in ROBOTS, TERRAINS or METHODS
(a robot: a function returning (model document, allowed actuators or None); a terrain: a function turning
that document into one with the terrain, and whether plans carry over between seeds; a method: a function
``run(setup, seed, seeds, quick, **options) -> Outcome``).
"""
from __future__ import annotations

import argparse
import datetime
import math
import os
import sys
import time
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from tensegrity_engine.generators import icosahedron, on_ground, superball, verify_template
from tensegrity_engine.generators.incline import on_incline
from tensegrity_engine.generators.mobile import default_reach, motor_strings, with_motors
from tensegrity_engine.generators.terrain import box_field, rough_ground
from tensegrity_engine.locomotion import RollingController
from tensegrity_engine.locomotion.closed_loop import at_rest, roll
from tensegrity_engine.locomotion.planner import EdgePlan
from tensegrity_engine.locomotion.subsets import disjoint_triangle_actuators
from tensegrity_engine.locomotion.support import angle_between, centre_of_mass
from tensegrity_engine.model.load import with_obstacles

HEADING_OK = math.radians(5.0)   # rad: issue 34's heading accuracy (<= 5° over 8 faces)
JITTER = math.radians(3.0)       # rad: the seed's random part of a start yaw or goal direction


# --- registries ----------------------------------------------------------------------------------------------
def superball_24():
    return superball(friction=0.8), None


def superball_12():
    doc = superball(friction=0.8)
    return doc, "disjoint_triangles"


def icosahedron_all():
    """The icosahedron as ``tensegrity new icosahedron --ground --motors all --friction 0.8`` writes it."""
    doc = on_ground(icosahedron(bar_length=0.6, ea=2000.0), friction=0.8, face_down=True)
    strings = motor_strings(doc, "all")
    return with_motors(doc, default_reach(doc, strings), strings=strings), None


ROBOTS = {"superball": superball_24,             # (model document, allowed actuators: None = all, or a rule)
          "superball-12": superball_12,
          "icosahedron": icosahedron_all}
MIN_TENSION = {"icosahedron": 5.0}               # N: the prestress `tensegrity new` gives (default 100 N)

TERRAINS = {"flat": (lambda doc: doc, True),     # name -> (document with the terrain, plans carry over seeds)
            # terrains a method builds per seed (climb: the slope's direction; cross: the boxes or bumps) start
            # from the robot on level ground
            "slope-15": (lambda doc: doc, False), "boxes": (lambda doc: doc, False),
            "heightfield": (lambda doc: doc, False)}


@dataclass(frozen=True)
class Outcome:
    """One seed's run: ``faces`` changed, ``seconds`` simulated, ``distance`` [m] net displacement of the centre
    of mass, ``heading_error`` [rad], ``min_clearance`` [m] bar-bar, ``path_ratio`` the rest points' path over
    the net displacement, ``success``, ``note`` (the controller's state and reason), ``miss`` [m] the distance
    left to a goal (NaN: no goal)."""
    faces: int
    seconds: float
    distance: float
    heading_error: float
    min_clearance: float
    path_ratio: float
    success: bool
    note: str = ""
    miss: float = math.nan


@dataclass
class Setup:
    """A robot on a terrain, built once per worker: ``model``, ``allowed`` actuator names (None: all), ``X`` (n, 3)
    [m] at rest, ``plans`` the tips planned in earlier seeds (None: not carried over)."""
    model: object
    allowed: list | None
    X: np.ndarray
    plans: dict | None = field(default=None)
    doc: dict | None = None                         # the model's document (per-seed terrains start from it)
    gait_memo: dict = field(default_factory=dict)   # dynamic gait: optimised tips, kept with the plans

    def controller(self, **options) -> RollingController:
        """A fresh controller, starting with the plans of earlier seeds (each a plan the planner verified; a
        dynamic gait's optimised tips too: keyed by faces, they hold wherever the robot lies on level ground)."""
        ctl = RollingController(self.model, self.allowed, **options)
        if self.plans is not None:
            ctl.planner.plans.update(self.plans)
            if ctl.gait is not None:
                ctl.gait.memo = self.gait_memo
        return ctl

    def keep(self, ctl):
        """Keep the verified plans of ``ctl`` (never one given up on the robot) for later seeds."""
        if self.plans is not None:
            self.plans.update({k: p for k, p in ctl.planner.plans.items()
                               if isinstance(p, EdgePlan) and k not in ctl.planner.timeouts})


def start_pose(setup: Setup, yaw: float) -> np.ndarray:
    """(n, 3) [m] the robot at rest turned by ``yaw`` [rad] about the vertical through its centre of mass."""
    c = centre_of_mass(setup.model, setup.X)
    R = np.array([[math.cos(yaw), -math.sin(yaw), 0.0], [math.sin(yaw), math.cos(yaw), 0.0], [0.0, 0.0, 1.0]])
    shift = np.array([c[0], c[1], 0.0])
    return (setup.X - shift) @ R.T + shift


def spread(seed: int, seeds: int, salt: int) -> float:
    """[rad] the seed's angle: evenly over the circle plus a small random jitter (``salt``: an independent one)."""
    rng = np.random.default_rng([seed, salt])
    return 2.0 * math.pi * seed / max(seeds, 1) + rng.uniform(-JITTER, JITTER)


def path_ratio(run) -> float:
    """The path through the rest points (start, every face, end) over the net displacement (1: straight)."""
    pts = run.com[[0, *run.stops, -1], :2]
    return float(np.sum(np.hypot(*np.diff(pts, axis=0).T)) / max(run.distance, 1e-9))


def heading_run(setup, seed, seeds, quick, heading=0.0, faces=10, duration=200.0, **options) -> Outcome:
    """Roll toward the world ``heading`` [deg] for ``faces`` face changes (``quick``: 1) from a seeded start yaw."""
    faces = 1 if quick else faces
    ctl = setup.controller(**options)
    h = math.radians(heading)
    ctl.set_heading(h)
    run = roll(ctl, start_pose(setup, spread(seed, seeds, 1)), duration, faces=faces)
    setup.keep(ctl)
    err = run.heading_error(h)
    note = (f"{math.degrees(err):.1f}° off" if run.faces_changed >= faces else
            f"{run.faces_changed} faces, {run.status['state']}" + (f": {run.status['message'][:60]}"
                                                                 if run.status["state"] == "error" else ""))
    return Outcome(run.faces_changed, float(run.times[-1]), run.distance, err, run.min_clearance, path_ratio(run),
                   run.faces_changed >= faces and err <= HEADING_OK, note)


def goal_run(setup, seed, seeds, quick, distance=3.0, tolerance=0.2, duration=240.0, **options) -> Outcome:
    """Roll to a goal ``distance`` [m] away (``quick``: a third of it) in a seeded direction from a seeded start
    yaw; success: 'arrived' within ``tolerance`` [m]."""
    distance = distance / 3.0 if quick else distance
    ctl = setup.controller(**options)
    X = start_pose(setup, spread(seed, seeds, 1))
    c = centre_of_mass(setup.model, X)[:2]
    d = spread(seed, seeds, 2)
    goal = c + distance * np.array([math.cos(d), math.sin(d)])
    ctl.set_goal(goal, tolerance=tolerance)
    run = roll(ctl, X, duration, until_state=("arrived", "stopped", "error"))
    setup.keep(ctl)
    moved = run.displacement
    err = angle_between(math.atan2(moved[1], moved[0]), d) if run.distance > 0 else math.pi
    note = run.status["state"] + (f" ({run.status['reason']})" if run.status["reason"] else "")
    miss = float(np.hypot(*(centre_of_mass(setup.model, run.positions)[:2] - goal)))
    return Outcome(run.faces_changed, float(run.times[-1]), run.distance, err, run.min_clearance, path_ratio(run),
                   run.status["state"] == "arrived", note, miss)


def climb_run(setup, seed, seeds, quick, slope=15.0, faces=6, per_face=0.1, **options) -> Outcome:
    """Roll up a plane inclined by ``slope`` [deg] rising toward a seeded direction (the robot's document on it,
    settled), heading uphill for ``faces`` faces (``quick``: 1); success: that many faces with at least
    ``per_face`` [m] of uphill progress per face."""
    faces = 1 if quick else faces
    uphill = spread(seed, seeds, 1)
    model, _ = verify_template(on_incline(setup.doc, math.radians(slope), uphill),
                               min_tension=MIN_TENSION.get(setup.model.name, 100.0))
    ctl = RollingController(model, setup.allowed, horizon=1, **options)
    ctl.set_heading(uphill)
    run = roll(ctl, at_rest(model), 25.0 * faces, faces=faces)
    up = float(run.displacement @ [math.cos(uphill), math.sin(uphill)])
    ok = run.faces_changed >= faces and up >= per_face * faces
    note = f"{run.faces_changed} faces, {up:+.2f} m uphill, {run.status['state']} {run.status['reason']}".strip()
    return Outcome(run.faces_changed, float(run.times[-1]), run.distance, run.heading_error(uphill),
                   run.min_clearance, path_ratio(run), ok, note)


def rough_terrain(kind: str, seed: int) -> list:
    """The obstacles of one seeded rough ground ahead (+x) of a robot at the origin: 20 random boxes 1-5 cm
    high, or a height field of bumps up to 5 cm (flat within 0.8 m of the start), as bench_rough.py."""
    if kind == "boxes":
        return box_field(seed=seed, n=20, max_height=0.05, region=((0.5, -1.0), (3.0, 1.0)))
    return [rough_ground(seed=seed, size=(5.0, 4.0), amplitude=0.05, origin=(-1.0, -2.0), flat_at=(0.0, 0.0),
                         flat_radius=0.8)]


def cross_run(setup, seed, seeds, quick, kind="boxes", distance=3.0, tolerance=0.25, **options) -> Outcome:
    """Cross the seed's rough ground (:func:`rough_terrain`) to a goal ``distance`` [m] ahead (+x; ``quick``: a
    third of it); success: 'arrived' within ``tolerance`` [m] (a tip moves the six-bar 0.45-0.7 m)."""
    distance = distance / 3.0 if quick else distance
    model = with_obstacles(setup.model, *rough_terrain(kind, seed))
    X = at_rest(model)
    goal = centre_of_mass(model, X)[:2] + np.array([distance, 0.0])
    ctl = RollingController(model, setup.allowed, horizon=1, **options)
    ctl.set_goal(goal, tolerance=tolerance)
    run = roll(ctl, X, 400.0, until_state=("arrived", "stopped", "error"))
    moved = run.displacement
    err = angle_between(math.atan2(moved[1], moved[0]), 0.0) if run.distance > 0 else math.pi
    note = run.status["state"] + (f" ({run.status['reason']})" if run.status["reason"] else "")
    miss = float(np.hypot(*(centre_of_mass(model, run.positions)[:2] - goal)))
    return Outcome(run.faces_changed, float(run.times[-1]), run.distance, err, run.min_clearance, path_ratio(run),
                   run.status["state"] == "arrived", note, miss)


METHODS = {"heading": heading_run, "goal": goal_run,      # name -> run(setup, seed, seeds, quick, **options)
           "climb": climb_run, "cross": cross_run}


@dataclass(frozen=True)
class Row:
    """One line of the table: ``robot``, ``terrain``, ``method`` (keys of the registries), ``options`` for the
    method (and through it the controller); ``label`` the method column."""
    robot: str
    terrain: str
    method: str
    tag: str
    label: str
    options: tuple = ()
    max_seeds: int | None = None       # fewer seeds than --seeds (rows whose runs cost minutes each)

    @property
    def name(self) -> str:
        """``robot/terrain/method-tag``: how ``--rows`` names it."""
        return f"{self.robot}/{self.terrain}/{self.method}-{self.tag}"


def row(robot, terrain, method, tag, label, max_seeds=None, **options) -> Row:
    return Row(robot, terrain, method, tag, label, tuple(sorted(options.items())), max_seeds)


ROWS = [
    row("superball", "flat", "heading", "0", "quasi-static, heading 0°", heading=0.0),
    row("superball", "flat", "heading", "90", "quasi-static, heading 90°", heading=90.0),
    row("superball", "flat", "heading", "225", "quasi-static, heading 225°", heading=225.0),
    row("superball", "flat", "goal", "3m", "quasi-static, goal 3 m (0.2 m)", distance=3.0, tolerance=0.2),
    row("superball", "flat", "goal", "3m-0.15", "quasi-static, goal 3 m (0.15 m)", distance=3.0, tolerance=0.15),
    row("superball-12", "flat", "heading", "0", "quasi-static, heading 0°", heading=0.0),
    row("superball-12", "flat", "heading", "90", "quasi-static, heading 90°", heading=90.0),
    row("superball-12", "flat", "heading", "225", "quasi-static, heading 225°", heading=225.0),
    row("superball-12", "flat", "goal", "3m", "quasi-static, goal 3 m (0.2 m)", distance=3.0, tolerance=0.2),
    row("superball", "flat", "heading", "0-dyn", "dynamic, heading 0°", 5, heading=0.0, faces=8, gait="dynamic"),
    row("superball", "flat", "heading", "90-dyn", "dynamic, heading 90°", 5, heading=90.0, faces=8, gait="dynamic"),
    row("superball", "flat", "heading", "225-dyn", "dynamic, heading 225°", 5, heading=225.0, faces=8,
        gait="dynamic"),
    row("superball", "slope-15", "climb", "0.8", "quasi-static, uphill (μ 0.8)", 5, slope=15.0, faces=6),
    row("superball", "boxes", "cross", "3m", "quasi-static, goal 3 m (0.25 m)", 5, kind="boxes"),
    row("superball", "heightfield", "cross", "3m", "quasi-static, goal 3 m (0.25 m)", 5, kind="field"),
    row("icosahedron", "flat", "heading", "0", "quasi-static, heading 0°", 5, heading=0.0, faces=5),
]


# --- running -------------------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def setup_of(robot: str, terrain: str, cold: bool) -> Setup:
    """The robot on the terrain at rest, once per worker process."""
    doc, allowed = ROBOTS[robot]()
    make, uniform = TERRAINS[terrain]
    model, _ = verify_template(make(doc), min_tension=MIN_TENSION.get(robot, 100.0))
    if allowed == "disjoint_triangles":
        allowed = disjoint_triangle_actuators(model)
    return Setup(model, allowed, at_rest(model), {} if uniform and not cold else None, make(doc))


def run_task(r: Row, seed: int, seeds: int, quick: bool, cold: bool) -> tuple:
    """(row name, seed, Outcome or the error's text, wall [s])."""
    start = time.perf_counter()
    try:
        out = METHODS[r.method](setup_of(r.robot, r.terrain, cold), seed, seeds, quick, **dict(r.options))
    except Exception as exc:      # noqa: BLE001 - a failed run is a row's failure, reported, not a crash
        out = f"{type(exc).__name__}: {exc}"
    return r.name, seed, out, time.perf_counter() - start


def run_all(rows, seeds: int, quick: bool, cold: bool, workers: int, scheduler=None) -> list:
    """Every (row, seed) on local processes or a Dask cluster; the results in completion order."""
    counts = {r.name: min(seeds, r.max_seeds or seeds) for r in rows}     # a row's seeds spread over the circle
    tasks = [(r, s, counts[r.name], quick, cold) for r in rows for s in range(counts[r.name])]
    if scheduler is not None:
        return run_dask(tasks, scheduler)
    if workers <= 1:
        return [run_task(*t) for t in tasks]
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed
    tasks.sort(key=lambda t: (t[1], t[0].name))   # seed-major: a worker meets each setup early, plans carry over
    with ProcessPoolExecutor(workers, mp_context=mp.get_context("fork")) as ex:
        return [f.result() for f in as_completed([ex.submit(run_task, *t) for t in tasks])]


def run_dask(tasks, scheduler) -> list:
    import cloudpickle
    from distributed import as_completed

    from tensegrity_engine.sweep.execute import dask_client
    if __name__ != "__main__":                  # imported (a test): the workers cannot import this file
        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    client, own = dask_client(scheduler)
    try:
        futures = [client.submit(run_task, *t, pure=False) for t in tasks]
        return [f.result() for f in as_completed(futures)]
    finally:
        if own:
            client.close()


def summarise(rows, results) -> list:
    """One dict per row: the table's columns."""
    by = {}
    for name, seed, out, wall in results:
        by.setdefault(name, []).append((seed, out, wall))
    table = []
    for r in rows:
        got = sorted(by.get(r.name, []), key=lambda x: x[0])
        ok = [o for _, o, _ in got if isinstance(o, Outcome)]
        errors = [o for _, o, _ in got if not isinstance(o, Outcome)]
        minutes = sum(o.seconds for o in ok) / 60.0
        errs = np.degrees([o.heading_error for o in ok]) if ok else np.array([np.nan])
        notes = [f"seed {k}: {o.note}" + (f" {o.miss:.2f} m" if math.isfinite(o.miss) else "") if isinstance(o, Outcome)
                 else f"seed {k}: {o[:80]}" for k, o, _ in got if not isinstance(o, Outcome) or not o.success]
        misses = [o.miss for o in ok if math.isfinite(o.miss)]
        table.append({"robot": r.robot, "terrain": r.terrain, "method": r.label, "seeds": len(got),
                      "faces/min": sum(o.faces for o in ok) / minutes if minutes else np.nan,
                      "m/min": sum(o.distance for o in ok) / minutes if minutes else np.nan,
                      "heading error": (float(np.median(errs)), float(np.max(errs))),
                      "min clearance mm": 1e3 * min((o.min_clearance for o in ok), default=np.nan),
                      "path/straight": float(np.median([o.path_ratio for o in ok])) if ok else np.nan,
                      "goal miss m": (float(np.median(misses)), float(np.max(misses))) if misses else None,
                      "success": sum(o.success for o in ok) / len(got) if got else np.nan,
                      "wall s": sum(w for _, _, w in got), "failures": "; ".join(notes)})
    return table


COLUMNS = ["robot", "terrain", "method", "seeds", "success", "faces/min", "m/min", "heading error",
           "min clearance mm", "path/straight", "goal miss m", "wall s", "failures"]


def markdown(table) -> str:
    """The table as markdown (heading error and goal miss: median (worst))."""
    def cell(k, v):
        if v is None:
            return "–"
        if k == "heading error":
            return f"{v[0]:.1f}° ({v[1]:.1f}°)"
        if k == "goal miss m":
            return f"{v[0]:.2f} ({v[1]:.2f})"
        if k == "success":
            return f"{v:.2f}"
        return f"{v:.1f}" if isinstance(v, float) else str(v)
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(k, t[k]) for k in COLUMNS) + " |" for t in table]
    return "\n".join(lines)


def named(r: Row, name: str) -> bool:
    """True if ``name`` is the row's name or its start up to a '/', or robot/terrain/method without the tag
    (``superball/flat``, ``superball/flat/goal``; ``superball`` is not ``superball-12``)."""
    name = name.rstrip("/")
    return r.name == name or r.name.startswith(name + "/") or f"{r.robot}/{r.terrain}/{r.method}" == name


def pick_rows(names) -> list:
    """The rows named (see :func:`named`), default all."""
    if not names:
        return list(ROWS)
    picked = [r for r in ROWS if any(named(r, n) for n in names)]
    unknown = [n for n in names if not any(named(r, n) for r in ROWS)]
    if unknown:
        raise SystemExit(f"unknown row(s) {unknown}; rows: {[r.name for r in ROWS]}")
    return picked


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", nargs="+", help="rows (robot/terrain/method, or a prefix such as superball/flat); "
                    "default all; --list shows them")
    ap.add_argument("--list", action="store_true", help="list the rows and exit")
    ap.add_argument("--seeds", type=int, default=20, help="runs per row (start yaws and goal directions)")
    ap.add_argument("--quick", action="store_true", help="short runs (1 face, goals a third as far): a smoke test")
    ap.add_argument("--cold", action="store_true", help="plan afresh in every run (no plans carried over seeds)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="local worker processes")
    ap.add_argument("--scheduler", help="a Dask scheduler address (tcp://HOST:8786): run the rows there")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(r.name for r in ROWS))
        return
    if args.seeds < 1 or args.workers < 1:
        raise SystemExit("--seeds and --workers must be at least 1")
    rows = pick_rows(args.rows)
    start = time.perf_counter()
    results = run_all(rows, args.seeds, args.quick, args.cold, args.workers, args.scheduler)
    print(f"<!-- bench/bench_locomotion.py {' '.join(argv if argv is not None else sys.argv[1:])}: "
          f"{datetime.date.today()}, {time.perf_counter() - start:.0f} s wall, load "
          f"{' '.join(open('/proc/loadavg').read().split()[:3]) if os.path.exists('/proc/loadavg') else '?'} -->")
    print(markdown(summarise(rows, results)))


if __name__ == "__main__":
    main()
