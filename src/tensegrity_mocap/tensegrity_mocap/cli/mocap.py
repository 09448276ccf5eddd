"""``tensegrity-mocap``: motion-capture tools for your own robot (no ROS needed).

    tensegrity-mocap model TAKE.csv --bars BARS [--strings STRINGS] -o robot.yaml   static take -> model
    tensegrity-mocap model TAKE.csv --list                                          numbered markers
    tensegrity-mocap track TAKE.csv --model robot.yaml --out DIR                    tracks, reasons, plot
    tensegrity-mocap synth OUT.csv [--static]                                       a synthetic six-bar take

Each subcommand is a small ``add_<name>(subparsers)`` function that registers its parser and sets
``func``; :data:`SUBCOMMANDS` lists them. Exit codes: 0 ok, 2 bad input (one line ``error: ...``),
141 when the reader of the output went away.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys

import numpy as np

from tensegrity_mocap.cli.synth import add_synth
from tensegrity_mocap.cli.track import add_track


def _frames(text: str) -> range:
    """'A:B' -> frame numbers A..B inclusive; 'A' -> that frame."""
    first, sep, last = text.partition(":")
    try:
        a = int(first) if first.strip() else None
        b = int(last) if last.strip() else None
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: use FIRST:LAST frame numbers, e.g. 0:599") from None
    if not sep:
        b = a
    if a is None or b is None or b < a:
        raise argparse.ArgumentTypeError(f"{text!r}: use FIRST:LAST frame numbers with FIRST <= LAST")
    return range(a, b + 1)


# --- model ----------------------------------------------------------------------------------------
def _list_markers(args) -> int:
    from tensegrity_mocap.capture.model import take_markers
    from tensegrity_mocap.motive import read_motive_csv
    rec = read_motive_csv(args.take)
    names = take_markers(rec)
    rows = np.arange(rec.n_frames) if args.frames is None else np.flatnonzero(np.isin(rec.frames, list(args.frames)))
    data = {**rec.markers, **rec.unlabeled}
    print(f"{args.take}: {len(names)} markers, {len(rows)} frames selected (positions: median, capture frame "
          f"{rec.up_axis.upper()}-up, m)")
    print(f"{'#':>4}  {'marker':<28}{'seen':>7}{'x':>10}{'y':>10}{'z':>10}")
    for k, nm in enumerate(names, 1):
        if any(fnmatch.fnmatchcase(nm, p) for p in args.exclude):
            continue
        x = data[nm][rows]
        ok = np.isfinite(x).all(axis=1)
        med = np.median(x[ok], axis=0) if ok.any() else np.full(3, np.nan)
        print(f"{k:>4}  {nm:<28}{ok.mean() if len(ok) else 0:>7.0%}" + "".join(f"{v:>10.4f}" for v in med))
    return 0


def cmd_model(args) -> int:
    from tensegrity_mocap.capture.model import model_from_capture, sidecar_paths, write_capture_model
    if args.list:
        return _list_markers(args)
    if not args.bars or not args.output:
        raise ValueError("give --bars and -o OUT.yaml (or --list to see the take's markers)")
    params = {k: getattr(args, k) for k in ("bar_mass", "bar_radius", "string_stiffness", "string_damping",
                                            "string_radius", "prestrain")}
    res = model_from_capture(args.take, args.bars, args.strings, frames=args.frames, up_axis=args.up_axis,
                             exclude=args.exclude, name=args.name, heading=args.heading,
                             min_tension=args.min_tension, max_tension=args.max_tension, ground_tol=args.ground_tol,
                             tolerance=args.tolerance, gravity=tuple(args.gravity),
                             marker_offsets=args.marker_offset, ground=args.ground, supports=args.supports,
                             fixed=args.fixed or (), floor_z=args.capture_floor, floor_tol=args.floor_tol,
                             still_tol=args.still_tol, still_from=args.still_from, **params)
    model_path, markers_path = write_capture_model(res, args.output)
    report_path = sidecar_paths(model_path)[1]
    doc = res.document
    if args.json:
        print(json.dumps(res.report(), indent=1, allow_nan=False))
        return 0
    print(f"wrote {model_path} ({len(doc['nodes'])} nodes, {len(doc['bars'])} bars, {len(doc.get('strings', []))} "
          f"strings), {markers_path} (marker map), {report_path}")
    print(f"take {res.source}: frames {res.frame_range[0]}..{res.frame_range[1]} ({res.frames_used}), up axis "
          f"{res.up_axis}; robot frame: z up, origin at the nodes' horizontal centroid on the lowest node, x toward "
          + ("n1" if res.heading == "first-node" else "the capture's x"))
    worst = max(res.scatter, key=res.scatter.get)
    marker_of = {v: k for k, v in res.marker_map.items()}
    print(f"node scatter (RMS over the frames): max {res.scatter[worst] * 1e3:.2f} mm ({worst}, "
          f"{marker_of[worst]!r}); least seen {min(res.visible.values()):.0%} of the frames")
    if res.scatter[worst] > args.max_scatter:
        print(f"warning: {worst} scatters {res.scatter[worst] * 1e3:.1f} mm (> {args.max_scatter * 1e3:.1f} mm): "
              "did the robot move? choose still frames with --frames")
    print("bar lengths [m]: " + "  ".join(f"{b}={v:.4f}" for b, v in res.bar_lengths.items()))
    if res.marker_offsets:
        print("markers in from their bar ends [m]: " + "  ".join(f"{n}={d:g}" for n, d in res.marker_offsets.items())
              + " (the model's nodes are the bar ends)")
    _print_holding(res)
    eq = res.equilibrium
    if eq is not None:
        load = (f"bar weight, supports {', '.join(eq['supports'])}" if eq["supports"] else
                f"bar weight, fixed nodes {', '.join(eq['fixed_nodes'])}" if eq["fixed_nodes"] and
                any(doc["gravity"]) else "zero gravity, self-stress")
        verdict = "feasible" if eq["feasible"] else "NOT feasible"
        print(f"equilibrium ({load}; strings {eq['min_tension_N']:g}..{eq['max_tension_N']:g} N): residual "
              f"{eq['residual_N']:.3e} N ({eq['relative_residual']:.2%} of the minimum tension): prestress {verdict} "
              f"(tolerance {eq['tolerance']:.0%}), {eq['self_stress_states']} self-stress state(s)"
              + (", exact" if eq["exact"] else ""))
        if "self_stress" in eq:
            ss = eq["self_stress"]
            print(f"string layout alone (zero gravity): residual {ss['residual_N']:.3e} N "
                  f"({ss['relative_residual']:.2%}): self-stress {'feasible' if ss['feasible'] else 'NOT feasible'}"
                  + (", exact" if ss["exact"] else ""))
        t = np.array(list(eq["tensions_N"].values()))
        q = np.array(list(eq["force_densities_N_per_m"].values()))
        f = np.array(list(eq["bar_forces_N"].values()))
        print(f"tensions [N]: {t.min():.3f}..{t.max():.3f}; force densities [N/m]: {q.min():.3f}..{q.max():.3f}; "
              f"bar compression [N]: {f.min():.3f}..{f.max():.3f} (all in {report_path.name})")
    for text in res.warnings:              # last: a short bar also explains an equilibrium that is not feasible
        print(f"warning: {text}")
    return 0


def _print_holding(res) -> None:
    """How the rig is held (supports, floor) and why: tensegrity_mocap.capture.holding."""
    doc, h = res.document, res.holding
    held = [nd["name"] for nd in doc["nodes"] if nd.get("fixed")] + [s["bar"] + " (clamp)"
                                                                     for s in doc.get("supports", [])]
    floor = doc.get("obstacles", [{}])[0].get("point", [None] * 3)[2] if doc.get("obstacles") else None
    print("held by: " + (", ".join(held) or "no support") + "; ground: "
          + ("none" if floor is None else f"plane at z = {floor:.4f} m (robot frame)"))
    for why in h.reasons if h is not None else ():
        print(f"  {why}")


def add_model(sub) -> None:
    """Register ``model``: a static take + bar list -> model YAML, marker map, report."""
    p = sub.add_parser("model", help="make a model of your robot from a static take (Motive CSV) and a bar list",
                       description="Make a model (tensegrity-model YAML) of the robot standing still in a Motive "
                       "CSV take, in the robot's own frame; write the marker map (<stem>.markers.yaml, a ROS 2 "
                       "parameter file for the mocap bridge) and a report (<stem>.report.json) beside it. "
                       "See docs/bring_your_own_robot.md.",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("take", help="Motive CSV export of the robot standing still")
    p.add_argument("--bars", help="bar list: FILE (.yaml list of pairs, or text: one pair per line) or inline "
                   "'A,B;C,D'; an end is a marker name or a 1-based index from --list; bar k joins nodes "
                   "n(2k-1), n(2k)")
    p.add_argument("--strings", help="string list (same forms); every end must be a bar end")
    p.add_argument("-o", "--output", help="model file to write (e.g. robot.yaml)")
    p.add_argument("--list", action="store_true", help="only print the take's numbered markers")
    p.add_argument("--frames", type=_frames, help="frame numbers FIRST:LAST (inclusive) of the take to use "
                   "(default: all)")
    p.add_argument("--up-axis", choices=["y", "z"], help="up axis of the take (default: y, Motive's)")
    p.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="markers that must not be used, e.g. 'payload:*' (repeatable)")
    p.add_argument("--name", help="model name (default: from the take's file name)")
    p.add_argument("--heading", choices=["first-node", "capture"], default="first-node",
                   help="robot x axis: toward node n1, or the capture's x axis")
    p.add_argument("--bar-mass", type=float, default=0.1, help="mass of each bar [kg]")
    p.add_argument("--bar-radius", type=float, default=0.005, help="bar radius [m]")
    p.add_argument("--string-stiffness", type=float, default=500.0, help="string stiffness [N/m]")
    p.add_argument("--string-damping", type=float, default=2.0, help="string damping [N s/m]")
    p.add_argument("--string-radius", type=float, default=0.001, help="string radius [m]")
    p.add_argument("--prestrain", type=float, default=0.02, help="rest length = captured length x (1 - prestrain)")
    p.add_argument("--gravity", type=float, nargs=3, default=[0.0, 0.0, -9.81], metavar=("GX", "GY", "GZ"),
                   help="gravity of the model and the equilibrium check [m/s^2] (0 0 0: self-stress only)")
    p.add_argument("--min-tension", type=float, default=1.0, help="prestress level of the equilibrium check: "
                   "smallest string tension [N]")
    p.add_argument("--max-tension", type=float, help="largest string tension of the check [N] (default: 10 x "
                   "--min-tension)")
    p.add_argument("--ground", default="auto", metavar="auto|none|Z",
                   help="the floor as a ground plane obstacle in the model: auto (under gravity, under the bar ends "
                        "that rest on the capture's floor; none when no node does), none, or its height Z [m] in "
                        "the robot frame")
    p.add_argument("--supports", choices=["auto", "none"], default="auto",
                   help="auto: nodes that never move over every frame (of this take and --still-from takes) and are "
                        "above the floor hold the rig: a bar with both ends still is clamped, a lone end fixed")
    p.add_argument("--fixed", type=lambda s: [x for x in s.split(",") if x.strip()], metavar="n1,b2,...",
                   help="the nodes (fixed: true) and bars (clamped) that hold the rig, instead of detecting them")
    p.add_argument("--still-from", action="append", default=[], metavar="TAKE.csv",
                   help="a further take of the rig in the same capture frame (e.g. under a load): a node that moves "
                        "there is not held (repeatable)")
    p.add_argument("--still-tol", type=float, default=None, metavar="M", help="a node is still when its marker's "
                   "RMS spread is at most this [m] (default: 3 x sqrt(3) x the marker noise)")
    p.add_argument("--capture-floor", type=float, default=0.0, metavar="Z", help="height of the capture's floor "
                   "along its up axis [m]")
    p.add_argument("--floor-tol", type=float, default=0.03, metavar="M", help="nodes at most this high above the "
                   "capture's floor rest on it [m]")
    p.add_argument("--ground-tol", type=float, default=0.01, help="with gravity, nodes this close to the lowest "
                   "one stand on the floor [m]")
    p.add_argument("--tolerance", type=float, default=0.05, help="feasible when the residual is at most this "
                   "fraction of --min-tension")
    p.add_argument("--marker-offset", action="append", default=[], metavar="NODE=DIST",
                   help="the marker of NODE (n5, or its marker name) sits DIST [m] in from the bar end, toward the "
                   "other end (repeatable); the model gets the true bar ends and 'marker: {along_bar: DIST}'")
    p.add_argument("--max-scatter", type=float, default=0.002, help="warn when a marker scatters more [m]")
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of the summary")
    p.set_defaults(func=cmd_model)


#: subcommand registration functions, in help order
SUBCOMMANDS = [add_model, add_track, add_synth]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tensegrity-mocap", description="Motion-capture tools for tensegrity robots.")
    sub = p.add_subparsers(dest="command", required=True)
    for add in SUBCOMMANDS:
        add(sub)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as exc:                 # CaptureModelError, MotiveCSVError, ModelError, bad options
        print("error: " + " ".join(str(exc).split()), file=sys.stderr)
        return 2
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
