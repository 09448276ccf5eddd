"""``tensegrity-mocap synth``: a synthetic Motive CSV take of a hand-built six-bar robot, to try the whole
bring-your-own-robot path without a robot (:mod:`tensegrity_mocap.synthetic`).

    tensegrity-mocap synth demo/static.csv --static        # + static.bars.txt, static.strings.txt
    tensegrity-mocap synth demo/take.csv --duration 10     # rolling, strays, payload, occlusions

A static take comes with its bar and string lists (marker names, for ``tensegrity-mocap model``); a moving
take with ``<stem>.truth.npz`` (true node positions, Z-up, for checking a tracker).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np


def _names(cap) -> dict:
    """node index -> the marker name of its first frame (unlabeled: 'Unlabeled <id>')."""
    return {int(cap.marker_node[k]): cap.labels[0][k] for k in range(len(cap.marker_node))
            if cap.marker_node[k] >= 0 and cap.labels[0][k] is not None}


def _marker_offsets(items, node_names) -> dict:
    """{node index: distance [m]} from 'NODE=DIST' texts (--marker-offset n5=0.15)."""
    out = {}
    for text in items:
        node, _, dist = text.partition("=")
        if node.strip() not in node_names:
            raise ValueError(f"--marker-offset {text!r}: {node.strip()!r} is not a node ({', '.join(node_names)})")
        try:
            out[node_names.index(node.strip())] = float(dist)
        except ValueError:
            raise ValueError(f"--marker-offset {text!r}: write NODE=DIST with DIST in metres, e.g. n5=0.15") from None
    return out


def cmd_synth(args) -> int:
    from tensegrity_mocap.synthetic.capture import make_capture, six_bar_robot, static_capture, write_capture_csv
    robot = six_bar_robot(bar_length=args.bar_length, irregularity=args.irregularity, seed=args.robot_seed)
    rng = np.random.default_rng(args.seed)
    pose = None
    if args.random_pose:
        from scipy.spatial.transform import Rotation
        pose = (Rotation.random(random_state=args.seed).as_matrix(), rng.uniform(-2.0, 2.0, 3) * [1, 1, 0])
    strays = tuple((k, d) for k, d in zip((0, 5), args.stray_distance))
    offsets = _marker_offsets(args.marker_offset, robot.node_names)
    if args.clamped_rig is not None:
        cap = None
    elif args.static:
        cap = static_capture(robot, frames=int(args.duration * args.rate), rate=args.rate, noise=args.noise,
                             pose=pose, strays=strays, payload=args.payload, seed=args.seed, marker_offsets=offsets)
    else:
        cap = make_capture(robot, duration=args.duration, rate=args.rate, noise=args.noise, strays=strays,
                           payload=args.payload, occluded_fraction=args.occluded, pose=pose, seed=args.seed,
                           marker_offsets=offsets)
    if args.clamped_rig is not None:
        return _clamped_rig(args, robot)
    out = write_capture_csv(cap, args.output)
    written = [out]
    stem = out.with_suffix("")
    if args.static:
        name = _names(cap)
        for kind, pairs in (("bars", robot.bars), ("strings", robot.strings)):
            path = Path(f"{stem}.{kind}.txt")
            path.write_text(f"# {kind} of the synthetic six-bar, by marker name (tensegrity-mocap model --{kind})\n"
                            + "".join(f"{name[int(i)]} - {name[int(j)]}\n" for i, j in pairs))
            written.append(path)
    else:
        path = Path(f"{stem}.truth.npz")
        np.savez_compressed(path, t=cap.t, nodes=cap.nodes, node_names=np.array(robot.node_names),
                            bars=robot.bars, strings=robot.strings)
        written.append(path)
    print(f"{len(cap.t)} frames at {cap.rate:g} Hz, {cap.markers.shape[1]} markers ({len(strays)} strays"
          f"{', payload' if args.payload else ''}), {100 * cap.occluded_fraction:.1f} % of marker-frames occluded")
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def _clamped_rig(args, robot) -> int:
    """--clamped-rig HEIGHT: bars b2, b4 clamped in a base HEIGHT m up, the rest swaying (--static: still)."""
    from tensegrity_mocap.synthetic.rig import clamped_rig_take, write_rig_take
    take = clamped_rig_take(robot, height=args.clamped_rig, duration=args.duration, rate=args.rate,
                            noise=args.noise, sway=0.0 if args.static else 0.004, seed=args.seed)
    written = write_rig_take(take, args.output, rate=args.rate)
    print(f"{len(take.t)} frames at {args.rate:g} Hz: the rig held by bars "
          + ", ".join(f"b{k + 1}" for k in take.clamped) + f" in a base {take.height:g} m above the floor"
          + ("" if args.static else ", the rest swaying"))
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def add_synth(sub) -> None:
    """Register ``synth``: a synthetic six-bar take (CSV) to try the tools."""
    import argparse
    p = sub.add_parser("synth", help="write a synthetic Motive CSV take of a six-bar robot (to try the tools)",
                       description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("output", help="CSV file to write")
    p.add_argument("--static", action="store_true", help="robot standing still (+ bar and string lists)")
    p.add_argument("--duration", type=float, default=10.0, help="take length [s] (static: 2 s is plenty)")
    p.add_argument("--rate", type=float, default=360.0, help="frame rate [Hz]")
    p.add_argument("--noise", type=float, default=0.0003, help="marker noise (std) [m]")
    p.add_argument("--occluded", type=float, default=0.06, help="share of marker-frames occluded (moving take)")
    p.add_argument("--stray-distance", type=float, nargs="*", default=[0.036, 0.045], metavar="M",
                   help="stray markers near n1 and n6 at these distances [m] (none: no strays)")
    p.add_argument("--no-payload", dest="payload", action="store_false", help="no swinging payload asset")
    p.add_argument("--random-pose", action="store_true", help="turn and move the whole take")
    p.add_argument("--marker-offset", action="append", default=[], metavar="NODE=DIST",
                   help="put NODE's marker DIST [m] in from its bar end, toward the other end (repeatable)")
    p.add_argument("--clamped-rig", type=float, default=None, metavar="HEIGHT",
                   help="a rig held in a base: bars b2 and b4 clamped, the lowest node HEIGHT m above the floor, "
                        "the rest swaying a few mm (still with --static); + bar and string lists")
    p.add_argument("--bar-length", type=float, default=0.6, help="[m]")
    p.add_argument("--irregularity", type=float, default=0.005, help="hand-built imperfection [m]")
    p.add_argument("--robot-seed", type=int, default=0, help="which hand-built robot")
    p.add_argument("--seed", type=int, default=0, help="motion, noise, occlusions")
    p.set_defaults(func=cmd_synth)
