"""``tensegrity workspace``: the reachable workspace of a model frame (:mod:`tensegrity_engine.control.workspace`).

    tensegrity workspace MODEL [--frame C2] [--samples 200] [--seed 0] [--out DIR] [--quiet]

writes ``workspace.npz`` (inputs, poses, tensions, feasibility) and ``workspace.png`` (origins in three
projections, orientation spread) to DIR and prints the bounding box of the feasible origins and the ranges
of their Euler angles relative to the u = 0 pose.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from tensegrity_engine.paths import output_path_problem


def cmd_workspace(args) -> int:
    from tensegrity_engine.control.workspace import workspace
    from tensegrity_engine.model.load import load_model
    from tensegrity_engine.plots.workspace import plot_workspace
    if args.samples < 1:
        raise ValueError(f"--samples must be >= 1, got {args.samples}")
    model = load_model(args.model)
    if not len(model.frame_names):
        raise ValueError(f"model '{model.name}' has no frames: add 'frames:' (three nodes each) to the model file "
                         "(docs/model_schema.md)")
    frame = args.frame or model.frame_names[-1]
    out = Path(args.out or f"runs/{model.name}_workspace")
    problem = output_path_problem(out)
    if problem:
        raise ValueError(f"--out {out}: {problem}")
    ws = workspace(model, frame, samples=args.samples, seed=args.seed, progress=not args.quiet)
    npz = ws.save(out / "workspace.npz")
    png = plot_workspace(ws, out / "workspace.png")
    s = ws.summary()
    if args.json:
        print(json.dumps({**s, "npz": str(npz), "png": str(png)}, indent=2, allow_nan=False))
        return 0
    print(f"workspace of frame {frame} of '{model.name}': {s['feasible']} of {s['samples']} samples feasible "
          f"(every string taut), seed {args.seed}")
    if s["feasible"]:
        lo, hi = np.array(s["position_min_m"]) * 1e3, np.array(s["position_max_m"]) * 1e3
        for k, axis in enumerate("xyz"):
            print(f"  {axis}: {lo[k]:9.1f} .. {hi[k]:9.1f} mm (span {hi[k] - lo[k]:.1f} mm)")
        alo, ahi = np.degrees(s["angle_min_rad"]), np.degrees(s["angle_max_rad"])
        for k, name in enumerate(("psi (about z)", "theta (about y)", "phi (about x)")):
            print(f"  {name:<16}: {alo[k]:7.2f} .. {ahi[k]:7.2f} deg from the u = 0 pose")
    print(f"wrote {npz} and {png}")
    return 0


def add_workspace(sub):
    """Register ``workspace`` on the engine's CLI."""
    pw = sub.add_parser("workspace", help="reachable workspace of a frame: sampled inputs settled, plot and data",
                        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    pw.add_argument("model", help="built-in model name or YAML file (with frames and actuators)")
    pw.add_argument("--frame", default=None, help="frame to map (default: the model's last frame)")
    pw.add_argument("--samples", type=int, default=200, help="input samples (Latin hypercube within the limits)")
    pw.add_argument("--seed", type=int, default=0, help="seed of the sampling")
    pw.add_argument("--out", default=None, help="output directory (default runs/<model>_workspace)")
    pw.add_argument("--json", action="store_true", help="print the summary as JSON")
    pw.add_argument("--quiet", action="store_true", help="no progress bar")
    pw.set_defaults(func=cmd_workspace)
