"""The ``tensegrity`` command line.

    tensegrity models                                   list the built-in models
    tensegrity info MODEL                               validate a model and print its counts
    tensegrity simulate MODEL [--duration S] [--input none|paper|FILE.csv] [--out DIR] ...
    tensegrity equilibrium MODEL [--min-tension N | --settle] [--write OUT.yaml]
    tensegrity clearance DIR [--margin M]               min clearance over time, first violation, plot
    tensegrity clearance --segments FILE.csv            all-pairs distances/clearances as JSON
    tensegrity formfind MODEL --q GROUP=VALUE ... -o OUT.yaml   force-density form-finding (cli/formfind.py)
    tensegrity relax MODEL [-o OUT.yaml] [--tol N]      equilibrium shape by kinetic damping (cli/formfind.py)
    tensegrity workspace MODEL [--frame C2] [--samples N] [--seed S] [--out DIR]   reachable poses (cli/workspace.py)

MODEL is a built-in name (``prism3``, ``stacked_manipulator``) or a path to a YAML model file.
Exit codes: 0 success, 1 clearance violation found, 2 bad arguments or model/input errors,
3 simulation diverged.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

from tensegrity_engine.errors import InputError, ModelError, SimulationDiverged
from tensegrity_engine.cli.identify import add_identify
from tensegrity_engine.cli.formfind import add_formfind
from tensegrity_engine.cli.new import add_generators
from tensegrity_engine.cli.modes import add_modal
from tensegrity_engine.cli.sweep import add_sweep
from tensegrity_engine.cli.workspace import add_workspace
from tensegrity_engine.dynamics.inputs import PAPER_AMPLITUDES, PAPER_PERIOD, from_csv, no_input, paper_sinusoid
from tensegrity_engine.model.checks import falls_freely
from tensegrity_engine.paths import output_path_problem


def _load(name):
    from tensegrity_engine.model.load import load_model
    return load_model(name)


def _check_number(option, value, *, positive=False, minimum=None):
    """Reject NaN, inf and out-of-range numeric options up front (before any long run)."""
    if not math.isfinite(value) or (positive and value <= 0) or (minimum is not None and value < minimum):
        need = ("a positive number" if positive else
                f"a number >= {minimum:g}" if minimum is not None else "a finite number")
        raise ValueError(f"{option} must be {need}, got {value:g}")
    return value


def _schedule(args, model):
    choice = args.input
    if choice is None:
        choice = "paper" if len(model.actuator_names) == 6 else "none"
    if choice == "none":
        return no_input(len(model.actuator_names))
    if choice == "paper":
        return paper_sinusoid(model, period=args.period, amplitudes=args.amplitudes, ramp=args.ramp)
    return from_csv(choice, model)


def cmd_models(args) -> int:
    from tensegrity_engine.model.load import builtin_models
    for name in builtin_models():
        m = _load(name)
        c = m.counts
        print(f"{name:<22} mu={c['mu']:<3} nu={c['nu']:<3} beta={c['beta']:<3} sigma_c={c['sigma_c']:<3} "
              f"sigma_s={c['sigma_s']:<3} phi={c['phi']:<3} alpha={c['alpha']:<3} mass={m.total_mass():.3f} kg")
    return 0


def cmd_info(args) -> int:
    m = _load(args.model)
    print(f"model '{m.name}' from {m.source}")
    print("counts: " + ", ".join(f"{k}={v}" for k, v in m.counts.items()))
    print(f"total mass {m.total_mass():.4f} kg, gravity {m.gravity.tolist()} m/s^2, free nodes {len(m.free_nodes)}")
    if m.structural_damping:
        print(f"structural damping {m.structural_damping:g} 1/s (mass-proportional)")
    if m.actuator_names:
        print("actuators: " + ", ".join(f"{a}->{m.string_names[s]} (u in [{lo * 1e3:.1f}, {hi * 1e3:.1f}] mm)"
                                       for a, s, (lo, hi) in zip(m.actuator_names, m.actuator_string, m.u_limits)))
    for o in m.obstacles:
        where = (f"normal {list(o.normal)} through {list(o.point)} m" if o.type == "plane" else
                 f"centre {list(o.centre)} m, size {list(o.size)} m, rpy {list(o.rpy)} rad" if o.type == "box" else
                 f"origin {list(o.origin)} m, {len(o.heights[0])} x {len(o.heights)} heights every {list(o.cell)} m,"
                 f" {min(map(min, o.heights)):g} .. {max(map(max, o.heights)):g} m")
        print(f"obstacle {o.name}: {o.type}, {where}; friction {o.friction:g}, restitution {o.restitution:g}, "
              f"contact time {o.contact_time * 1e3:g} ms")
    if m.spec.supports:
        from tensegrity_engine.model.supports import support_summary
        print("supports: " + ", ".join(support_summary(s) for s in m.spec.supports))
    if falls_freely(m):
        print("note: under gravity with no node held (by 'fixed', a clamp, a pin or constraints), no translational "
              "support and no obstacle, this robot falls freely (add 'obstacles:' or 'supports:' to the model "
              "file, docs/model_schema.md)")
    from tensegrity_engine.dynamics.start_contact import check_start
    for w in m.warnings + tuple(check_start(m)):       # a start deep inside an obstacle: ModelError
        print("warning:", w)
    return 0


def _run(sim, args, schedule, loads):
    """``sim.run`` for ``tensegrity simulate``, under the measured ``loads`` (``--load``) when given."""
    if loads is None:
        return sim.run(args.duration, inputs=schedule, rate=args.rate, progress=not args.quiet)
    from tensegrity_engine.dynamics.loads import run_loaded
    return run_loaded(sim, args.duration, loads, inputs=schedule, rate=args.rate)


def cmd_simulate(args) -> int:
    from tensegrity_engine.model.write import dump_model
    from tensegrity_engine.dynamics.simulator import Simulator
    for option in ("duration", "rate", "dt", "rtol", "atol"):
        _check_number(f"--{option}", getattr(args, option), positive=True)
    model = _load(args.model)
    schedule = _schedule(args, model)
    loads = None
    if args.load:
        from tensegrity_engine.dynamics.loads import load_table_from_csv
        loads = load_table_from_csv(args.load, model)
    out = Path(args.out or f"runs/{model.name}")
    problem = output_path_problem(out)
    if problem:
        raise ValueError(f"--out {out}: {problem}")
    sim = Simulator(model, integrator=args.integrator, dt=args.dt, rtol=args.rtol, atol=args.atol,
                    damping=not args.no_damping)
    # load (first time: compile) the kernels outside the timed run, so the real-time factor is honest
    t0 = time.perf_counter()
    Simulator(model, integrator=args.integrator, dt=args.dt).run(min(args.duration, 2.0 / args.rate),
                                                                 inputs=schedule, rate=args.rate)
    prep = time.perf_counter() - t0
    if prep > 2.0 and not args.quiet:
        print(f"compiled the kernels in {prep:.1f} s (cached for later runs)")
    t0 = time.perf_counter()
    traj = _run(sim, args, schedule, loads)
    wall = time.perf_counter() - t0
    dump_model(model, out / "model.yaml",
               header=f"Resolved model as simulated (tensegrity simulate {model.name}); loads back unchanged.")
    paths = traj.save(out)
    compare = []
    summary_extra = {}
    if args.compare_undamped and not args.no_damping:
        sim2 = Simulator(model, integrator=args.integrator, dt=args.dt, rtol=args.rtol, atol=args.atol, damping=False)
        undamped = _run(sim2, args, schedule, loads)
        undamped.save(out / "undamped")
        compare.append(("without damping", undamped))
        from tensegrity_engine.frames import has_paper_frames, paper_relative_frames, rms_deviation
        if has_paper_frames(model):
            fa, fb = paper_relative_frames(model, traj.nodes), paper_relative_frames(model, undamped.nodes)
            keys = list(fa)
            dev = rms_deviation(traj.t, np.stack([fa[k] for k in keys], 1), undamped.t,
                                np.stack([fb[k] for k in keys], 1))
            summary_extra = {"rms_damped_vs_undamped": {"position_mm": dev["position_rms"] * 1e3,
                                                        "orientation_deg": float(np.degrees(dev["orientation_rms"]))}}
    from tensegrity_engine.dynamics.energy import energies
    E = energies(model, traj.nodes, traj.velocities, traj.inputs)
    summary = {
        "model": model.name, "duration_s": args.duration, "inputs": schedule.description,
        "loads": loads.description if loads is not None else None,
        "integrator": args.integrator, "damping": not args.no_damping, "wall_s": round(wall, 4),
        "real_time_factor": round(args.duration / wall, 2) if wall > 0 else None,
        "steps": sim.stats["steps"], "rhs_evaluations": sim.stats["evals"], "rejected_steps": sim.stats["rejected"],
        "max_bar_length_error_rel": float(traj.bar_length_error.max(initial=0.0)),
        "max_bar_drift_per_step_rel": sim.stats["max_drift"],
        "min_tension_N": float(traj.tensions.min()) if traj.tensions.size else None,     # None: no strings
        "max_tension_N": float(traj.tensions.max()) if traj.tensions.size else None,
        "slack_string_samples": int((traj.tensions <= 0).sum()),
        "energy_start_J": float(E["total"][0]), "energy_end_J": float(E["total"][-1]),
        **summary_extra,
    }
    if not args.no_plots:
        from tensegrity_engine.plots.figures import plot_all
        summary["plots"] = {k: str(v) for k, v in plot_all(traj, model, out, compare=compare).items()}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, allow_nan=False))
    print(f"simulated {args.duration:g} s of '{model.name}' ({schedule.description}) in {wall:.3f} s "
          f"= {summary['real_time_factor']}x real time; {summary['steps']} steps")
    print(f"max relative bar-length error {summary['max_bar_length_error_rel']:.2e}; "
          + (f"tensions {summary['min_tension_N']:.2f}..{summary['max_tension_N']:.2f} N"
             if summary["min_tension_N"] is not None else "no strings"))
    if "rms_damped_vs_undamped" in summary:
        d = summary["rms_damped_vs_undamped"]
        print(f"plates 0C1, 0C2, 1C2, damped vs undamped: RMS deviation {d['position_mm']:.2f} mm, "
              f"{d['orientation_deg']:.3f} deg")
    print(f"wrote {out}/: model.yaml, {paths['npz'].name}, {paths['csv'].name}, summary.json"
          + (", " + ", ".join(Path(p).name for p in summary.get('plots', {}).values()) if summary.get("plots") else ""))
    return 0


def cmd_equilibrium(args) -> int:
    from tensegrity_engine.statics.equilibrium import prestress, settle, stability, with_rest_lengths
    from tensegrity_engine.model.write import dump_model
    _check_number("--min-tension", args.min_tension, minimum=0.0)
    _check_number("--tol", args.tol, positive=True)
    problem = output_path_problem(args.write, "file") if args.write else ""
    if problem:
        raise ValueError(f"--write {args.write}: {problem}")
    model = _load(args.model)
    if args.settle:
        eq = settle(model, tol=args.tol)
        positions = eq.positions
    else:
        eq = prestress(model, min_tension=args.min_tension)
        positions = model.positions
    final = with_rest_lengths(model, eq.rest_lengths, positions)
    st = stability(final, final.positions)
    if args.json:
        print(json.dumps({"residual_N": eq.residual, "tensions_N": dict(zip(model.string_names, eq.tensions.tolist())),
                          "rest_lengths_m": dict(zip(model.string_names, eq.rest_lengths.tolist())),
                          "bar_forces_N": dict(zip(model.bar_names, eq.bar_forces.tolist())),
                          "stable": st["stable"], "lowest_frequencies_hz": st["frequencies_hz"][:6].tolist(),
                          "message": eq.message}, indent=2, allow_nan=False))
    else:
        print(eq.summary(model))
        elastic = st["frequencies_hz"][st["rigid_body_modes"]:]
        print(f"stable: {'yes' if st['stable'] else 'NO'} ({st['dof']} degrees of freedom"
              + (f", {st['rigid_body_modes']} rigid-body modes" if st["rigid_body_modes"] else "")
              + (f"; sparse: lowest {len(st['eigenvalues'])} modes" if st.get("method") == "sparse" else "")
              + f"); lowest natural frequencies [Hz]: {', '.join(f'{f:.3f}' for f in elastic[:4])}")
    if args.write:
        dump_model(final, args.write, header=f"Equilibrium of {model.name}: residual {eq.residual:.3e} N "
                   f"({'settled shape' if args.settle else f'prestress min tension {args.min_tension} N'})")
        print(f"wrote {args.write}")
    return 0 if eq.residual < 1e-6 or not args.strict else 1


def cmd_compile(args) -> int:
    from tensegrity_engine.warmup import compile_kernels
    print("compiling the numba kernels (cached for later runs) ...", flush=True)
    seconds = compile_kernels(args.model, progress=lambda text: print(f"  {text}", flush=True))
    print(f"kernels ready in {seconds:.1f} s")
    return 0


def cmd_clearance(args) -> int:
    from tensegrity_engine.collision.clearance_report import (plot_clearance, read_segments, segments_clearance,
                                                              trajectory_clearance)
    _check_number("--margin", args.margin)
    if args.segments:
        segs, radii = read_segments(args.segments)
        print(json.dumps(segments_clearance(segs, radii), indent=1, allow_nan=False))
        return 0
    if not args.dir:
        print("error: give a simulation output DIR or --segments FILE.csv", file=sys.stderr)
        return 2
    from tensegrity_engine.model.load import load_model
    from tensegrity_engine.dynamics.trajectory import Trajectory
    d = Path(args.dir)
    model = load_model(d / "model.yaml")
    npz = d / "trajectory.npz"
    if not npz.is_file():
        raise ValueError(f"{npz}: no trajectory file; DIR must be an output directory of 'tensegrity simulate' "
                         "(model.yaml and trajectory.npz)")
    traj = Trajectory.load(npz)
    if traj.node_names and tuple(traj.node_names) != tuple(model.node_names):
        raise ValueError(f"{npz}: its nodes ({', '.join(traj.node_names[:4])}, ...) are not those of {d / 'model.yaml'} "
                         f"({', '.join(model.node_names[:4])}, ...); keep each trajectory with the model it was "
                         "simulated with")
    rep = trajectory_clearance(model, traj.nodes, traj.t, margin=args.margin, source=str(npz))
    png = plot_clearance(rep, traj.t, d / "clearance.png", title=f"{model.name}: self-collision clearance")
    out = {k: rep[k] for k in ("pairs_checked", "margin_m", "overall_min_m", "overall_min_time_s", "closest_pair",
                               "first_violation")}
    out["plot"] = str(png)
    print(json.dumps(out, indent=2, allow_nan=False))
    return 1 if rep["first_violation"] else 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tensegrity", description="Tensegrity dynamics and equilibrium engine.")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("models", help="list the built-in models").set_defaults(func=cmd_models)
    pi = sub.add_parser("info", help="validate a model and print its counts")
    pi.add_argument("model")
    pi.set_defaults(func=cmd_info)

    ps = sub.add_parser("simulate", help="simulate a model and write trajectory and plots",
                        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ps.add_argument("model", help="built-in model name or YAML file")
    ps.add_argument("--duration", type=float, default=14.0, help="simulated time [s]")
    ps.add_argument("--input", default=None, help="none | paper | FILE.csv (t,<actuator>... in m reeled in); "
                    "default: paper for six-actuator models, else none")
    ps.add_argument("--load", default=None, metavar="FILE.csv",
                    help="measured forces over time: t,<node>.fx,<node>.fy,<node>.fz [s, N], linear in t")
    ps.add_argument("--period", type=float, default=PAPER_PERIOD, help="paper input period [s]")
    ps.add_argument("--amplitudes", type=float, nargs="+", default=list(PAPER_AMPLITUDES),
                    help="paper input amplitude per stage [m]")
    ps.add_argument("--ramp", type=float, default=1.0, help="smooth start of the paper input [s]")
    ps.add_argument("--no-damping", action="store_true", help="switch string damping off")
    ps.add_argument("--compare-undamped", action="store_true", help="also run without damping and overlay it")
    ps.add_argument("--integrator", choices=["dopri5", "rk4"], default="dopri5")
    ps.add_argument("--dt", type=float, default=1e-3, help="rk4 step / dopri5 initial step [s]")
    ps.add_argument("--rtol", type=float, default=1e-6, help="dopri5 relative tolerance")
    ps.add_argument("--atol", type=float, default=1e-9, help="dopri5 absolute tolerance")
    ps.add_argument("--rate", type=float, default=100.0, help="output sample rate [Hz]")
    ps.add_argument("--out", default=None, help="output directory (default runs/<model>)")
    ps.add_argument("--no-plots", action="store_true")
    ps.add_argument("--quiet", action="store_true", help="no progress bar")
    ps.set_defaults(func=cmd_simulate)

    pe = sub.add_parser("equilibrium", help="prestress / equilibrium of a model's configuration")
    pe.add_argument("model")
    pe.add_argument("--min-tension", type=float, default=1.0, help="prestress level: smallest tension [N]")
    pe.add_argument("--settle", action="store_true",
                    help="instead: find the equilibrium shape for the model's rest lengths")
    pe.add_argument("--tol", type=float, default=1e-10, help="residual tolerance for --settle [N]")
    pe.add_argument("--write", default=None, help="write the model with these rest lengths (and shape)")
    pe.add_argument("--json", action="store_true")
    pe.add_argument("--strict", action="store_true", help="exit 1 if the residual exceeds 1e-6 N")
    pe.set_defaults(func=cmd_equilibrium)
    pk = sub.add_parser("compile", help="compile and cache the numba kernels now (first use is otherwise slow)")
    pk.add_argument("--model", default="stacked_manipulator", help="model to exercise the kernels with")
    pk.set_defaults(func=cmd_compile)
    pc = sub.add_parser("clearance", help="self-collision clearance of a simulation output or of raw segments")
    pc.add_argument("dir", nargs="?", help="output directory of 'tensegrity simulate' (model.yaml, trajectory.npz)")
    pc.add_argument("--segments", help="CSV of segments x1,y1,z1,x2,y2,z2[,radius]: print all-pairs JSON")
    pc.add_argument("--margin", type=float, default=0.0, help="violation when clearance < margin [m]")
    pc.set_defaults(func=cmd_clearance)
    add_identify(sub)
    add_sweep(sub)
    add_modal(sub)
    add_generators(sub)
    add_formfind(sub)
    add_workspace(sub)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ModelError, InputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except SimulationDiverged as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyError as exc:              # an unknown node, string or actuator name (the message names it)
        print(f"error: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader went away (e.g. '| head'): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:               # unreadable/unwritable paths (--out, --write, files)
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
