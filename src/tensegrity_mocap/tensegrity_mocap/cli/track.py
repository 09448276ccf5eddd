"""``tensegrity-mocap track``: track a Motive CSV take offline and show how well every node was tracked.

    tensegrity-mocap track TAKE.csv --model robot.yaml [--exclude 'payload:*'] [--marker-map FILE] --out DIR

Arguments and printing only; the tracking, the output files and the figure: :mod:`tensegrity_mocap.tracking.takes`.
"""
from __future__ import annotations

import argparse

from tensegrity_mocap.tracking.takes import summary, track_take, write_outputs


def cmd_track(args) -> int:
    from tensegrity_engine import load_model
    from tensegrity_mocap.compare.inputs import parse_marker_map
    model = load_model(args.model)
    marker_map = parse_marker_map(args.marker_map, model) if args.marker_map else None
    params = {k: getattr(args, k) for k in ("max_speed", "noise", "bar_tol", "reacquire_gate", "margin",
                                            "register_tol")}
    result = track_take(args.take, model, marker_map, args.exclude, args.up_axis, args.world_offset, **params)
    paths = write_outputs(result, args.out)
    s = summary(result)
    print(f"{s['take']}: {s['frames']} frames, {s['nodes']} nodes of '{model.name}': "
          f"{100 * s['tracked_share']:.1f} % of node-frames tracked, every node in {s['all_tracked_frames']} frames; "
          f"{s['reacquired']} re-acquisitions, placed by {s['registration_note']}")
    worst = sorted(s["per_node"].items(), key=lambda kv: kv[1]["tracked"])[:3]
    print("least tracked: " + ", ".join(f"{nm} {100 * v['tracked']:.1f} %" for nm, v in worst))
    print(f"last frame: {s['last_frame']}")
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0


def add_track(sub) -> None:
    """Register ``track``: a take + model -> node tracks, reasons, plot."""
    p = sub.add_parser("track", help="track a Motive CSV take offline with a model; tracks, reasons and a plot",
                       description=__doc__.split("\n\n")[0] + " See docs/bring_your_own_robot.md.",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("take", help="Motive CSV export")
    p.add_argument("--model", required=True, help="model file (e.g. from 'tensegrity-mocap model') or built-in name")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--marker-map", help="ROS parameter file with marker_map (as 'model' writes it) or "
                   "'label=node,label=node'; default: register the model by a rigid fit")
    p.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="ignore markers whose name matches (repeatable), e.g. 'payload:*'")
    p.add_argument("--up-axis", choices=("y", "z"), help="override the take's up axis (Motive: y)")
    p.add_argument("--world-offset", type=float, nargs=3, default=(0.0, 0.0, 0.0), metavar=("X", "Y", "Z"),
                   help="added to every position after the axis conversion [m]")
    p.add_argument("--max-speed", type=float, default=2.0, help="fastest node speed [m/s]")
    p.add_argument("--noise", type=float, default=0.005, help="marker noise allowance [m]")
    p.add_argument("--bar-tol", type=float, default=0.01, help="bar length tolerance [m]")
    p.add_argument("--reacquire-gate", type=float, default=0.015, help="lost node: largest distance of its "
                   "marker from the prediction [m] (below the nearest stray marker's distance)")
    p.add_argument("--margin", type=float, default=0.01, help="a second candidate this close makes it ambiguous [m]")
    p.add_argument("--register-tol", type=float, default=0.02, help="registration inlier distance [m]")
    p.set_defaults(func=cmd_track)
