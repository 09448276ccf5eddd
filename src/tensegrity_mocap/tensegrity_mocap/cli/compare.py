"""``tensegrity-compare``: an experiment (suite MCAP, Motive CSV, tracks.npz) against a simulation of it.

Command line::

    tensegrity-compare EXPERIMENT (--trajectory DIR | --simulate MODEL) [--input none|paper|FILE.csv|recording|
                       joint_states|motor_goals] [--initial-from-experiment] [--initial-tol MM]
                       [--frame NAME=a,b,c[@x]]... [--marker-map FILE|'label=node,...'] [--exclude GLOB]...
                       [--world-offset X Y Z] [--capture-transform REPORT.json] [--register-fixed]
                       [--model MODEL] [--asset NAME] [--namespace NS] [--out DIR] [--time-offset S] [--align auto|none] [--window S]
                       [--sim-rate HZ] [--plot-nodes a,b,...]

Writes into ``--out``: ``rms.json`` (everything below), ``nodes.png``, ``nodes_xyz.png``,
``node_deviation.csv`` (t [s, simulation time], then each node's deviation [mm]; empty = not compared) and,
when frames are compared, ``comparison.png`` and ``deviation.png``; prints the frame table (if any) and
the per-node table. Exit codes: 0 success, 2 bad arguments or inputs, 3 the simulation diverged.
Comparisons: :mod:`tensegrity_mocap.compare.core`; experiments: :mod:`tensegrity_mocap.compare.inputs`; inputs
and initial state: :mod:`tensegrity_mocap.compare.simulation`.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

from tensegrity_engine.errors import SimulationDiverged
from tensegrity_engine.paths import output_path_problem
from tensegrity_engine.model.load import with_ground
from tensegrity_engine.model.world import MAX_OBSTACLE_FRICTION

from tensegrity_mocap.compare.core import DEFAULT_WINDOW, CompareError, Comparison, compare, parse_frame
from tensegrity_mocap.compare.fixed_part import check_fixed_part
from tensegrity_mocap.compare.inputs import load_experiment, parse_marker_map, read_transform, transform_experiment
from tensegrity_mocap.compare.plots import plot_comparison, plot_deviation, plot_node_xyz, plot_nodes
from tensegrity_mocap.compare.loads import full_trajectory, loaded_start, measured_loads, null_line, static_null
from tensegrity_mocap.compare.simulation import (INITIAL_TOL, MAX_SIMULATE, initial_state, input_schedule,
                                                 load_trajectory, simulate)
from tensegrity_mocap.motive import MotiveCSVError


def _load_model(name):
    from tensegrity_engine import load_model
    return load_model(name)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tensegrity-compare",
        description="Compare an experiment (suite MCAP or Motive CSV) with a simulation: per-node position RMS "
                    "[mm], and frame positions [mm] / ZYX angles [deg] with their RMS deviations (the manipulator "
                    "paper's 0C1, 0C2, 1C2 for its model).")
    p.add_argument("experiment", help="suite recording (.mcap), Motive CSV export (.csv) or tracks.npz "
                                      "(tensegrity-mocap track)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--trajectory", metavar="DIR", help="engine trajectory directory (trajectory.npz) or file")
    src.add_argument("--simulate", metavar="MODEL", help="simulate this model (built-in name or YAML file) for the "
                     "experiment's duration")
    p.add_argument("--input", default=None, metavar="INPUT",
                   help="--simulate inputs: none | paper | FILE.csv (t,<actuator>... in m reeled in) | recording | "
                        "joint_states | motor_goals (motor angles of an MCAP experiment); default paper for "
                        "six-actuator models, else none")
    p.add_argument("--payload", default=None, metavar="NODE",
                   help="--simulate: the payload hung at NODE (a node with a mass on one string) moves as captured; "
                        "the model is simulated without it, under the force m (g - a) it puts on its hook")
    p.add_argument("--payload-smoothing", type=float, default=None, metavar="S",
                   help="--payload: Savitzky-Golay window for its acceleration [s] (default 0.1)")
    p.add_argument("--load", default=None, metavar="FILE.csv",
                   help="--simulate under measured forces: t,<node>.fx,<node>.fy,<node>.fz [s, N] (linear in t)")
    p.add_argument("--initial-from-experiment", action="store_true",
                   help="--simulate from the experiment's first sample with every node known (at rest, projected "
                        "onto the bar lengths) instead of the model's initial state")
    p.add_argument("--initial-tol", type=float, default=INITIAL_TOL * 1e3, metavar="MM",
                   help="largest bar-length mismatch (and projection move) accepted by --initial-from-experiment [mm]")
    p.add_argument("--frame", action="append", default=[], metavar="NAME=a,b,c[@x]",
                   help="compare a frame on nodes a,b,c (z = (b-a)x(c-a), x toward a or node x); repeatable; "
                        "replaces the model's frames; two or more are compared pairwise (B in A)")
    p.add_argument("--marker-map", default=None, metavar="FILE|MAP",
                   help="Motive CSV: marker labels -> nodes, a ROS parameter file with marker_map "
                        "or 'label=node,label=node'; without it, node-named markers or the tracker")
    p.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="Motive CSV: ignore markers whose name matches (repeatable)")
    p.add_argument("--world-offset", type=float, nargs=3, default=(0.0, 0.0, 0.0), metavar=("X", "Y", "Z"),
                   help="Motive CSV: added to the positions after Y-up -> Z-up [m] (the bridge's world_offset)")
    p.add_argument("--capture-transform", default=None, metavar="REPORT.json",
                   help="map the experiment's positions into the model's frame by capture_zup_to_robot (the "
                        "report of 'tensegrity-mocap model') or a 4x4 JSON list: p -> R p + t")
    p.add_argument("--register-fixed", action="store_true",
                   help="a model with fixed nodes whose markers are elsewhere (the capture in another frame than "
                        "the model file): map the experiment by the rigid transform from the fixed nodes' markers "
                        "onto the model's fixed nodes")
    p.add_argument("--out", metavar="DIR", default=None, help="output directory (default runs/compare-<experiment>)")
    p.add_argument("--time-offset", type=float, default=0.0, metavar="S",
                   help="compare experiment time t with simulation time t + S (default 0)")
    p.add_argument("--align", choices=("auto", "none"), default="none",
                   help="auto: search the offset within --time-offset ± --window minimising frame position RMS "
                        "[mm] + orientation RMS [deg] (node RMS [mm] without frames); none (default): --time-offset")
    p.add_argument("--window", type=float, default=DEFAULT_WINDOW, metavar="S", help="auto search half-width [s]")
    p.add_argument("--model", default=None, help="model of a Motive CSV or tracks.npz experiment (name or YAML file)")
    p.add_argument("--asset", default=None, help="Motive asset whose markers are the nodes (Asset:n1)")
    p.add_argument("--namespace", default="", help="topic namespace in the MCAP recording")
    p.add_argument("--sim-rate", type=float, default=100.0, metavar="HZ", help="--simulate output rate [Hz]")
    p.add_argument("--ground", type=float, default=None, metavar="Z",
                   help="--simulate on a ground plane at height Z [m] in the model's frame, where the simulation "
                        "runs: with --capture-transform the robot frame of the report ('tensegrity-mocap model'), "
                        "else the capture's frame after --world-offset. A robot resting "
                        "on the floor is compared without fixing nodes (ignored when the model file has obstacles)")
    p.add_argument("--ground-friction", type=float, default=None, metavar="MU",
                   help="Coulomb friction of --ground (default: the schema's, docs/model_schema.md)")
    p.add_argument("--plot-nodes", default=None, metavar="a,b,...",
                   help="nodes of nodes_xyz.png (default: the three with the largest RMS)")
    return p


def _trajectory_model(traj_path: Path, traj):
    d = traj_path if traj_path.is_dir() else traj_path.parent
    if (d / "model.yaml").is_file():
        return _load_model(str(d / "model.yaml"))
    if traj.model_name:
        return _load_model(traj.model_name)
    return None


def _check_args(parser, args):
    """Usage errors (exit 2) for numbers out of range and options that do not go together."""
    for name, v, ok, need in (
            ("--time-offset", args.time_offset, math.isfinite(args.time_offset), "a finite number of seconds"),
            ("--window", args.window, math.isfinite(args.window) and args.window >= 0,
             "a finite number of seconds >= 0"),
            ("--sim-rate", args.sim_rate, math.isfinite(args.sim_rate) and args.sim_rate > 0, "a positive number (Hz)"),
            ("--initial-tol", args.initial_tol, math.isfinite(args.initial_tol) and args.initial_tol > 0,
             "a positive number (mm)")):
        if not ok:
            parser.error(f"argument {name}: must be {need}, got {v}")
    if args.ground is not None and not math.isfinite(args.ground):
        parser.error(f"argument --ground: must be a finite height (m), got {args.ground}")
    if args.ground_friction is not None and not (math.isfinite(args.ground_friction) and
                                                  0 <= args.ground_friction <= MAX_OBSTACLE_FRICTION):
        parser.error(f"argument --ground-friction: must be in [0, {MAX_OBSTACLE_FRICTION:g}], got {args.ground_friction}")
    if args.ground_friction is not None and args.ground is None:
        parser.error("--ground-friction goes with --ground Z")
    if args.trajectory and args.ground is not None:
        parser.error("--ground changes the --simulate model; a --trajectory was simulated already")
    if not all(math.isfinite(v) for v in args.world_offset):
        parser.error(f"argument --world-offset: must be three finite numbers (m), got {args.world_offset}")
    if args.trajectory and (args.payload or args.load):
        parser.error("--payload and --load are inputs of --simulate; a --trajectory was simulated already")
    if args.payload_smoothing is not None and not (args.payload and math.isfinite(args.payload_smoothing)
                                                   and args.payload_smoothing > 0):
        parser.error("--payload-smoothing goes with --payload and is a positive number of seconds")
    if args.trajectory and (args.input is not None or args.initial_from_experiment):
        parser.error("--input and --initial-from-experiment choose how --simulate runs; not with --trajectory")
    if args.initial_from_experiment and args.align == "auto":
        parser.error("--initial-from-experiment fixes the time offset (the simulation starts at the experiment's "
                     "sample); use --time-offset, not --align auto")


def run(args) -> Comparison:
    """Load, simulate (if asked) and compare, as the command line does; returns the :class:`Comparison`."""
    suffix = Path(args.experiment).suffix.lower()
    needs_model = suffix in (".csv", ".npz")                     # experiments that do not name their model
    model = _load_model(args.model) if args.model else None
    traj = sim_model = None
    if args.trajectory:
        tp = Path(args.trajectory)
        traj = load_trajectory(tp)
        if model is None and needs_model:
            model = _trajectory_model(tp, traj)
    else:
        sim_model = _load_model(args.simulate)
        if args.ground is not None:
            contact = {} if args.ground_friction is None else {"friction": args.ground_friction}
            sim_model = with_ground(sim_model, args.ground, **contact)
        if model is None and needs_model:
            model = sim_model
    marker_map = args.marker_map
    if marker_map is not None and model is not None and suffix == ".csv":
        marker_map = parse_marker_map(marker_map, model)
    exp = load_experiment(args.experiment, model, asset=args.asset, namespace=args.namespace,
                          marker_map=marker_map, exclude=tuple(args.exclude), offset=tuple(args.world_offset))
    if args.capture_transform:
        transform_experiment(exp, read_transform(args.capture_transform))
    check_fixed_part(exp, exp.model, register=args.register_fixed)
    model = exp.model
    frames = [parse_frame(f, model) for f in args.frame] or None
    plot_node_names(args, model)
    if traj is None:
        if tuple(sim_model.node_names) != tuple(model.node_names):
            raise CompareError(f"model '{sim_model.name}' ({sim_model.n_physical} physical nodes) and the experiment's "
                               f"model '{model.name}' ({model.n_physical}) have different nodes: simulate the "
                               "recorded robot's model")
        robot, loads = measured_loads(exp, sim_model, args.payload, args.load, args.time_offset,
                                      args.payload_smoothing)
        schedule = input_schedule(args.input, robot, exp, args.namespace, args.time_offset)
        start = None
        if args.initial_from_experiment:            # from that sample's time to the experiment's end
            k, X = initial_state(exp, sim_model, args.initial_tol * 1e-3)
            start = (float(exp.t[k]) + args.time_offset, X)
            if loads is not None:
                start = loaded_start(exp, sim_model, robot, loads, (k, X), args.time_offset)
            duration = float(exp.t[-1] - exp.t[k])
        else:                                       # from 0 to the experiment's end (+ offset, + window)
            extra = args.window + max(args.time_offset, 0.0) if args.align == "auto" else max(args.time_offset, 0.0)
            duration = float(exp.t[-1]) + extra
        if duration > MAX_SIMULATE:
            raise CompareError(f"--simulate would run {duration:g} s (experiment {exp.t[-1]:g} s + time offset"
                               f"{' + window' if args.align == 'auto' else ''}), more than {MAX_SIMULATE:g} s: "
                               "use a smaller --time-offset, or --trajectory")
        if duration <= 0:
            raise CompareError("--initial-from-experiment: the first sample with every node known is the "
                               "experiment's last; nothing left to compare")
        if loads is not None and start is None:
            start = loaded_start(exp, sim_model, robot, loads)
        traj = simulate(robot, duration, schedule, rate=args.sim_rate, start=start,
                        tol=args.initial_tol * 1e-3, loads=loads)
        if robot is not sim_model:
            traj = full_trajectory(sim_model, robot, traj)
    result = compare(exp, traj, model, time_offset=args.time_offset, align=args.align, window=args.window,
                     frames=frames)
    if sim_model is not None:
        result.null = static_null(result, sim_model, loads, args.payload, frames)
    return result


def plot_node_names(args, model) -> list:
    """The ``--plot-nodes`` names, checked against the model's physical nodes."""
    names = [s.strip() for s in (args.plot_nodes or "").split(",") if s.strip()]
    bad = [n for n in names if n not in model.node_names[:model.n_physical]]
    if bad:
        raise CompareError(f"--plot-nodes: model '{model.name}' has no physical node(s) {', '.join(bad)}")
    return names


def _make_out_dir(out: Path) -> list:
    """Create ``out`` (and its missing parents) before the work; returns the created directories, deepest
    first. Raises CompareError when it cannot be created or written."""
    created = []
    for d in (out, *out.parents):
        if d.exists() or d.is_symlink():
            break
        created.append(d)
    problem = output_path_problem(out)
    if problem:
        raise CompareError(f"--out {out}: {problem}")
    return created


def _remove_dirs(created):
    for d in created:                    # deepest first; stop at the first that is not empty
        try:
            d.rmdir()
        except OSError:
            break


def write_outputs(result: Comparison, out: Path, xyz_nodes=None) -> list:
    """Figures, ``node_deviation.csv`` and ``rms.json`` into ``out``; ``xyz_nodes``: names for
    ``nodes_xyz.png``. Returns the written paths."""
    files = []
    if result.frames:
        files += [plot_comparison(result, out / "comparison.png"), plot_deviation(result, out / "deviation.png")]
    files += [plot_nodes(result, out / "nodes.png"),
              plot_node_xyz(result, out / "nodes_xyz.png", xyz_nodes)]
    csv_path = out / "node_deviation.csv"
    names = list(result.nodes["per_node"])
    with csv_path.open("w") as fh:
        fh.write("t," + ",".join(f"{n}_mm" for n in names) + "\n")
        for t, row in zip(result.t_exp, result.node_dev * 1e3):
            fh.write(f"{t:.6f}," + ",".join("" if not np.isfinite(v) else f"{v:.4f}" for v in row) + "\n")
    files.append(csv_path)
    summary = result.to_dict()
    summary["files"] = [str(f) for f in files] + [str(out / "rms.json")]
    (out / "rms.json").write_text(json.dumps(summary, indent=2))
    return summary["files"]


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _check_args(parser, args)
    out = Path(args.out or f"runs/compare-{Path(args.experiment).stem}")
    created = []
    try:
        created = _make_out_dir(out)
        result = run(args)
    except (CompareError, MotiveCSVError, FileNotFoundError, ValueError) as exc:   # ValueError: model,
        _remove_dirs(created)                                                     # recording, input errors
        print(f"tensegrity-compare: error: {exc}", file=sys.stderr)
        return 2
    except SimulationDiverged as exc:
        _remove_dirs(created)
        print(f"tensegrity-compare: error: the simulation diverged: {exc}", file=sys.stderr)
        return 3
    files = write_outputs(result, out, plot_node_names(args, result.model))
    print(f"{result.model.name}: {Path(args.experiment).name} vs {result.simulation.settings.get('source')}")
    print(f"time offset {result.time_offset:+.4f} s" + (f" (auto {result.time_offset_auto:+.4f} s)"
                                                         if result.align == "auto" else ""))
    print(result.table())
    if result.null is not None:
        print(null_line(result))
    if result.samples_with_unknown_nodes:
        print(f"{result.samples_with_unknown_nodes} experiment sample(s) have unknown nodes")
    for note in result.experiment.notes:
        print("note:", note)
    if result.compared == "markers":
        print("note: compared the model's marker positions (its nodes' 'marker' entries: markers off the bar ends)")
    for warning in result.warnings:
        print(f"tensegrity-compare: WARNING: {warning}", file=sys.stderr)
    print(f"wrote {out}/: " + ", ".join(Path(f).name for f in files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
