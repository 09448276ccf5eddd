"""``tensegrity sweep``: many simulations of variants of a model, locally or on a Dask cluster.

    tensegrity sweep prism3 --grid stiffness=0.8:1.2:11 --normal rest_offset.side=0:0.002:-0.005:0.005 \\
        --monte-carlo 100 --seed 0 --duration 5 [--scheduler tcp://HOST:8786] --out runs/sweep

writes ``sweep.npz``, ``sweep.parquet`` and ``sweep.png`` (a summary quantity
against each parameter). ``add_sweep(sub)`` registers the command on an argparse subparsers object;
``main(argv)`` runs it standalone. Exit codes: 0 all runs ok, 1 some runs failed (listed), 2 bad arguments, 130 interrupted (Ctrl-C; the
finished runs are written).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from tensegrity_engine.errors import ModelError
from tensegrity_engine.sweep.execute import run_sweep
from tensegrity_engine.sweep.spec import SweepSpec
from tensegrity_engine.sweep.variants import KINDS, SweepError

QUANTITIES = ("max_tension", "min_tension", "final_speed", "final_height")


def _pair(text, option):
    name, eq, rhs = text.partition("=")
    if not eq or not name or not rhs:
        raise SweepError(f"{option} {text}: write NAME=VALUES (e.g. stiffness=0.8:1.2:11)")
    return name, rhs


def _numbers(text, option, item):
    try:
        return [float(v) for v in text.replace(":", ",").split(",")]
    except ValueError:
        raise SweepError(f"{option} {item}: '{text}' is not a list of numbers") from None


def parse_grid(items):
    """``NAME=LO:HI:N`` (N values, ends included) or ``NAME=v1,v2,...`` -> {name: values}."""
    grid = {}
    for item in items or ():
        name, rhs = _pair(item, "--grid")
        if ":" in rhs:
            v = _numbers(rhs, "--grid", item)
            if len(v) != 3 or v[2] != int(v[2]) or v[2] < 1:
                raise SweepError(f"--grid {item}: write NAME=LO:HI:N with an integer N >= 1")
            grid[name] = np.linspace(v[0], v[1], int(v[2]))
        else:
            grid[name] = np.array(_numbers(rhs, "--grid", item))
    return grid


def parse_random(uniform, normal):
    out = {}
    for item in uniform or ():
        name, rhs = _pair(item, "--uniform")
        out[name] = ("uniform", *_numbers(rhs, "--uniform", item))
    for item in normal or ():
        name, rhs = _pair(item, "--normal")
        out[name] = ("normal", *_numbers(rhs, "--normal", item))
    return out


def quantity(res, name):
    """A scalar per run for the plot: max/min tension over strings [N], final mean node speed [m/s] or final
    mean node height z [m]."""
    if name == "max_tension":
        return np.max(res.max_tension, axis=1, initial=-np.inf)
    if name == "min_tension":
        return np.min(res.min_tension, axis=1, initial=np.inf)
    if name == "final_speed":
        return np.linalg.norm(res.final_velocities, axis=2).mean(axis=1)
    return res.final_positions[:, :, 2].mean(axis=1)


def plot(res, name, path):
    """``name`` against each parameter (one panel per parameter; failed runs left out)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    q, ok = quantity(res, name), res.ok
    k = len(res.names)
    fig, axes = plt.subplots(1, k, figsize=(4 * k, 3.4), squeeze=False, sharey=True)
    unit = {"max_tension": "N", "min_tension": "N", "final_speed": "m/s", "final_height": "m"}[name]
    for ax, i in zip(axes[0], range(k)):
        ax.plot(res.values[ok, i], q[ok], ".", ms=4, alpha=0.7)
        ax.set_xlabel(res.names[i])
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"{name} [{unit}]")
    fig.suptitle(f"{res.model_name}: {int(ok.sum())} of {res.n_runs} runs, {res.settings['duration']:g} s each")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def cmd_sweep(args) -> int:
    grid = parse_grid(args.grid)
    random = parse_random(args.uniform, args.normal)
    spec = SweepSpec.build(args.model, grid=grid, random=random, seed=args.seed,
                           draws=args.monte_carlo if random or args.monte_carlo is not None else None)
    out = Path(args.out or "runs/sweep")
    t0 = time.perf_counter()
    res = run_sweep(spec, args.duration, integrator=args.integrator, dt=args.dt, rtol=args.rtol, atol=args.atol,
                    inputs=args.input, rate=args.rate, scheduler=args.scheduler, workers=args.workers,
                    batch=args.batch, progress=not args.quiet, out=out,
                    outputs=("final", "tensions", "nodes") if args.nodes else ("final", "tensions"))
    wall = time.perf_counter() - t0
    png = plot(res, args.plot, out / "sweep.png")
    where = args.scheduler or f"{args.workers or 'all'} local worker(s)"
    print(f"{res.n_runs} runs of '{res.model_name}' x {args.duration:g} s on {where} in {wall:.2f} s wall; "
          f"{int(res.ok.sum())} ok, {res.n_runs - int(res.ok.sum())} failed")
    for run, params, status, err in res.failed()[:20]:
        print(f"  run {run} ({', '.join(f'{n}={v:g}' for n, v in params.items())}): {status}: {err}")
    files = ", ".join(p.name for p in sorted(out.glob("sweep.*")))
    print(f"wrote {out}/: {files} ({png.name}: {args.plot})")
    return 0 if res.ok.all() else 1


def add_sweep(sub):
    """Register ``sweep`` on an argparse subparsers object (``func`` = :func:`cmd_sweep`)."""
    p = sub.add_parser("sweep", help="run many variants of a model (grid, Monte Carlo) locally or on Dask",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                       description=f"Parameters: {', '.join(KINDS)} (see tensegrity_engine.sweep.variants); stiffness, "
                       "damping, damping_scale, rest_offset take .GROUP or .STRING, gravity takes .x/.y/.z.")
    p.add_argument("model", help="built-in model name or YAML file")
    p.add_argument("--grid", action="append", metavar="NAME=LO:HI:N|v1,v2", help="grid axis (repeatable)")
    p.add_argument("--uniform", action="append", metavar="NAME=LO:HI", help="Monte Carlo parameter (repeatable)")
    p.add_argument("--normal", action="append", metavar="NAME=MEAN:SD[:LO:HI]",
                   help="Monte Carlo parameter, truncated to [LO, HI] if given (repeatable)")
    p.add_argument("--monte-carlo", type=int, default=None, metavar="N", help="draws per grid point")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--duration", type=float, default=5.0, help="simulated time per run [s]")
    p.add_argument("--integrator", choices=["rk4", "dopri5"], default="rk4")
    p.add_argument("--dt", type=float, default=1e-3, help="rk4 step / dopri5 initial step [s]")
    p.add_argument("--rtol", type=float, default=1e-6)
    p.add_argument("--atol", type=float, default=1e-9)
    p.add_argument("--input", choices=["none", "paper"], default="none")
    p.add_argument("--rate", type=float, default=100.0, help="samples per second for the tension range [Hz]")
    p.add_argument("--nodes", action="store_true", help="also store every run's sampled node positions")
    p.add_argument("--scheduler", default=None, help="Dask scheduler address tcp://HOST:8786 (default: local)")
    p.add_argument("--workers", type=int, default=None, help="local worker processes (default: all cores)")
    p.add_argument("--batch", type=int, default=None, help="runs per task (default: ~8 tasks per worker)")
    p.add_argument("--plot", choices=QUANTITIES, default="max_tension", help="quantity plotted in sweep.png")
    p.add_argument("--out", default=None, help="output directory (default runs/sweep)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_sweep)
    return p


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="tensegrity")
    add_sweep(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["sweep", *(sys.argv[1:] if argv is None else argv)])
    try:
        return args.func(args)
    except (SweepError, ModelError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted: the finished runs are in {args.out or 'runs/sweep'}/sweep.npz (the others have "
              "status 3, not run)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
