"""``tensegrity identify MODEL --static CASES.yaml``: static identification from equilibrium captures
(``--dynamic CASES.yaml``: dynamic identification, :mod:`.identify_dynamic`).

CASES.yaml: :mod:`tensegrity_engine.identify.cases` (cases with their positions and loads; ``held_out: true``
cases are predicted, not fitted; ``--held-out-boundary measured`` predicts them with the model moved onto each
take's measured fixed nodes).

Writes into ``--out``: ``identified.yaml`` (the model with the identified values, provenance in ``notes``),
``report.json`` (estimates, standard errors, condition number, unidentifiable names, held-out RMS) and
``identify.png`` (estimate / initial with error bars; per-case position corrections). Exit code 2 on bad
input; 1 when an estimate is not a positive number (report.json and identify.png are still written, with
the failure; identified.yaml is not). ``add_identify(subparsers)`` registers the command on the engine's
CLI; ``main(argv)`` runs it alone.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from tensegrity_engine.cli.identify_common import chosen_params_and_groups, write_identified
from tensegrity_engine.cli.identify_dynamic import cmd_identify_dynamic
from tensegrity_engine.errors import InputError, ModelError
from tensegrity_engine.identify.cases import read_cases
from tensegrity_engine.identify.params import DYNAMIC_PARAMS
from tensegrity_engine.identify.static import PARAM_KINDS as STATIC_PARAMS
from tensegrity_engine.paths import output_path_problem


def plot_identification(result, path, title="") -> Path:
    """PNG: estimate / initial per parameter (error bars = 1 standard error; red = not identifiable) and the
    RMS position correction [mm] per case."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    n = len(result.names)
    fig = Figure(figsize=(10.0, 4.0 + 0.12 * n), dpi=120, layout="constrained")
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2, width_ratios=[3, 1])
    ratio = result.estimate / np.where(result.initial != 0, result.initial, 1.0)
    err = np.where(np.isfinite(result.std_error), result.std_error, 0.0) / np.abs(np.where(result.initial != 0,
                                                                                           result.initial, 1.0))
    y = np.arange(n)
    for ok, color in ((True, "tab:blue"), (False, "tab:red")):
        m = result.identifiable == ok
        if m.any():
            ax1.errorbar(ratio[m], y[m], xerr=err[m], fmt="o", color=color, capsize=3,
                         label="identified" if ok else "not identifiable")
    ax1.axvline(1.0, color="0.5", lw=0.8)
    ax1.set_yticks(y, result.names, fontsize=7)
    ax1.invert_yaxis()
    ax1.set_xlabel("estimate / initial value (±1 standard error)")
    ax1.legend(fontsize=8)
    ax1.set_title(title or "static identification")
    ax2.bar(np.arange(len(result.case_names)), np.asarray(result.case_residual_rms) * 1e3, color="tab:gray")
    ax2.set_xticks(np.arange(len(result.case_names)), result.case_names, rotation=45, ha="right", fontsize=8)
    ax2.set_ylabel("RMS position correction [mm]")
    ax2.set_title(f"misfit {result.misfit_rms * 1e3:.2f} mm RMS")
    path = Path(path)
    fig.savefig(path, format="png")
    fig.clear()
    return path


def cmd_identify(args) -> int:
    from tensegrity_engine.model.load import load_model, with_ground
    if bool(args.static) == bool(args.dynamic):
        raise ValueError("give one of --static CASES.yaml (equilibrium captures under known loads) or --dynamic "
                         "CASES.yaml (trajectories with their commands)")
    if args.params and args.static and not set(args.params) <= set(STATIC_PARAMS):
        raise ValueError(f"--static identifies {', '.join(STATIC_PARAMS)}; got {' '.join(args.params)}")
    out = Path(args.out)
    problem = output_path_problem(out)
    if problem:
        raise ValueError(f"--out {out}: {problem}")
    model = load_model(args.model)
    if args.ground is not None:
        model = with_ground(model, args.ground)
    if args.dynamic:
        return cmd_identify_dynamic(args, model, out)
    return cmd_identify_static(args, model, out)


def failed_estimates(result) -> list:
    """Names of the estimates no model can take: a stiffness or rest length that is not a positive number,
    a bar mass that is negative or not finite (a rest direction's tilt angles may take either sign)."""
    return [n for n, k, e in zip(result.names, result.kinds, result.estimate)
            if not np.isfinite(e) or (k != "rest_direction" and (e < 0 or (e == 0 and k != "bar_mass")))]


def failure(result, names) -> dict:
    """The report's ``failure``: which estimates, the likely cause and the fix."""
    ok = dict(zip(result.names, result.identifiable))
    shown = ", ".join(f"{n} = {e:.4g} {u}" for n, e, u in zip(result.names, result.estimate, result.units)
                      if n in names)
    if not all(ok[n] for n in names):
        fix = ("the data cannot determine these (flagged not identifiable): add load cases that load these strings "
               "differently (other nodes, directions, sizes), identify per string group (groups: model), fewer "
               "parameters (params: [stiffness]), or damp toward the model (--regularization)")
    else:
        fix = ("the data determine these, so an input is wrong: check each case's loads (node, kg vs N, "
               "direction), that no string is slack (warnings), and the node labels of the takes")
    return {"problem": f"not a positive number: {shown}; no model was written", "parameters": list(names),
            "fix": fix}


def _boundary_warning(model, case, boundary: str, entry: dict):
    """The warning (or None) of a held-out case whose fixed nodes are off: from the model's fixed nodes
    (``boundary`` 'model'), or from the model's layout after the rigid placement ('measured')."""
    from tensegrity_engine.identify.boundary import BOUNDARY_TOL, boundary_offset, rigid_fit
    fixed = [model.node_names[i] for i in model.fixed_nodes]
    if not fixed:
        return None
    off = boundary_offset(model, case.positions)
    entry["fixed_node_offset_max_m"] = float(off.max())
    if boundary == "model" and off.max() > BOUNDARY_TOL:
        return (f"held-out '{case.name}': the model's fixed nodes are up to {off.max() * 1e3:.1f} mm "
                f"({fixed[int(off.argmax())]}) from the take's markers (tolerance {BOUNDARY_TOL * 1e3:g} mm), so "
                "its RMS measures that offset: predict at the take's pose (--held-out-boundary measured) or move "
                "the take into the model's frame")
    if boundary == "measured":
        res = rigid_fit(model, case.positions)[2]
        entry["fixed_node_fit_max_m"] = float(res.max())
        if res.max() > BOUNDARY_TOL:
            return (f"held-out '{case.name}': after the best rigid placement the take's fixed nodes are still up to "
                    f"{res.max() * 1e3:.1f} mm ({fixed[int(res.argmax())]}) from the model's layout: check those "
                    "nodes' labels, or how the robot was mounted")
    return None


def held_out_predictions(model, ident, held, boundary: str) -> tuple:
    """(report entries, warnings) of the held-out cases predicted by ``model`` and ``ident`` (None: failed)
    with the model's fixed nodes (``boundary`` 'model') or the model moved onto the take's ('measured')."""
    from tensegrity_engine.identify.static import predict_markers
    entries, warnings = [], []
    for case in held:
        at = case.positions if boundary == "measured" else None
        rms = [float(np.sqrt(np.mean(np.sum((predict_markers(m, case.forces, at) - case.positions) ** 2, axis=1))))
               if m is not None else None for m in (model, ident)]
        entry = {"name": case.name, "rms_before_m": rms[0], "rms_identified_m": rms[1], "boundary": boundary}
        warnings += [w for w in [_boundary_warning(model, case, boundary, entry)] if w]
        entries.append(entry)
    return entries, warnings


def _print_static(res, report, out, files):
    for nm, u, e, s, ok in zip(res.names, res.units, res.estimate, res.std_error, res.identifiable):
        print(f"{nm:<32} {e:>12.6g} ± {s:<10.3g} {u:<4}" + ("" if ok else "  NOT IDENTIFIABLE"))
    print(f"condition number {res.condition_number:.3g}; misfit {res.misfit_rms * 1e3:.3g} mm RMS"
          + (f"; capture noise {res.noise * 1e3:.3g} mm" if res.noise is not None else "; capture noise unknown"))
    for d in res.unidentifiable:
        print(f"cannot separate ({d['kind']}): {', '.join(d['parameters'])}")
    for name, st in report.get("frames", {}).items():
        if st["frames_with_untracked_nodes"]:
            per = ", ".join(f"{n}: {c}" for n, c in st["untracked_frames_per_node"].items())
            print(f"case '{name}': {st['frames_with_untracked_nodes']} of {st['frames']} frames had untracked nodes "
                  f"({per}); each node is the mean of the frames where it was seen")
    for w in report["warnings"]:
        print("warning:", w)
    for h in report.get("held_out", []):
        after = "n/a" if h["rms_identified_m"] is None else f"{h['rms_identified_m'] * 1e3:.3f} mm"
        print(f"held-out '{h['name']}' ({h['boundary']} boundary): RMS {h['rms_before_m'] * 1e3:.3f} mm before, "
              f"{after} identified")
    print(f"wrote {out}/: {', '.join(files)}")


def cmd_identify_static(args, model, out: Path) -> int:
    """The --static branch of ``tensegrity identify`` (``out`` checked, ``model`` loaded); 1 if an estimate
    cannot go into a model (the report says which and why)."""
    from tensegrity_engine.identify.static import apply, identified_model, identify_static
    fit, held, opts = read_cases(model, args.static)
    params, groups = chosen_params_and_groups(args, opts)
    res = identify_static(model, fit, params=params, groups=groups, regularization=args.regularization,
                          bar_tol=opts["bar_tolerance"], noise=None if args.noise is None else args.noise * 1e-3)
    report = res.as_dict()
    report.update(model=model.name, frames=opts["frames"], warnings=list(res.warnings))
    bad = failed_estimates(res)
    files = ["report.json"]
    ident = None
    if bad:
        report["failure"] = failure(res, bad)
        (out / "identified.yaml").unlink(missing_ok=True)       # an earlier run's would pass for this one's
    else:
        write_identified(out, apply(model, res, source=str(args.static)))
        ident = identified_model(model, res)
        files.insert(0, "identified.yaml")
    for p in report["parameters"]:
        p["failed"] = p["name"] in bad
    if held:
        report["held_out"], more = held_out_predictions(model, ident, held, args.held_out_boundary)
        report["warnings"] += more
    if not args.no_plots:
        plot_identification(res, out / "identify.png", title=f"{model.name}: static identification")
        files.append("identify.png")
    (out / "report.json").write_text(json.dumps(report, indent=2, allow_nan=False))
    _print_static(res, report, out, files)
    if bad:
        print(f"error: identification failed: {report['failure']['problem']}. Fix: {report['failure']['fix']}",
              file=sys.stderr)
        return 1
    return 0


def add_identify(sub) -> argparse.ArgumentParser:
    """Register ``identify`` on an argparse subparsers object; returns its parser."""
    p = sub.add_parser("identify", help="identify string stiffnesses / rest lengths / bar masses from captures",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("model", help="built-in model name or YAML file (the initial values)")
    p.add_argument("--static", metavar="CASES.yaml", help="equilibrium captures under known loads")
    p.add_argument("--dynamic", metavar="CASES.yaml", help="trajectories with their commands (engine trajectories, "
                   "Motive CSV + marker map + inputs, MCAP recordings)")
    p.add_argument("--params", nargs="+", choices=sorted(set(STATIC_PARAMS) | set(DYNAMIC_PARAMS)), default=None,
                   help="parameters to identify (default: the cases file's 'params', else stiffness for --static "
                   "and all dynamic kinds for --dynamic)")
    p.add_argument("--groups", choices=["none", "model"], default=None,
                   help="one stiffness per string (none) or per model string group (model)")
    p.add_argument("--regularization", type=float, default=0.0, help="--static: Tikhonov damping toward the model's "
                   "values")
    p.add_argument("--shooting", type=float, default=None, metavar="S",
                   help="--dynamic: multiple-shooting window [s] (default: the cases file's, else 1; 0 skips)")
    p.add_argument("--max-nfev", type=int, default=20, help="--dynamic: optimiser iterations per stage")
    p.add_argument("--jacobian", choices=["fd", "sensitivity"], default="fd",
                   help="--dynamic: finite-difference Jacobians, or exact ones by forward sensitivities (same "
                   "estimates, slower today)")
    p.add_argument("--start-states", action="store_true",
                   help="--dynamic: estimate each capture's start state with the parameters instead of holding it "
                   "at the smoothed capture (removes its bias on damping and delay; slower)")
    p.add_argument("--workers", type=int, default=None, help="--dynamic: local processes simulating Jacobian "
                   "columns (default: one per core)")
    p.add_argument("--scheduler", default=None, metavar="tcp://HOST:8786",
                   help="--dynamic: simulate on this Dask distributed cluster instead")
    p.add_argument("--noise", type=float, default=None, metavar="MM",
                   help="--static: the captures' noise per coordinate [mm] (default: the takes' frame-to-frame "
                        "scatter; unknown for inline positions)")
    p.add_argument("--held-out-boundary", choices=["model", "measured"], default="model",
                   help="--static: predict held-out cases with the model's fixed nodes (model) or with the model "
                   "moved rigidly onto each take's measured fixed nodes (measured: a take in its capture frame)")
    p.add_argument("--ground", type=float, default=None, metavar="Z",
                   help="the robot stands on a ground plane at height Z [m] (ignored if the model has obstacles): "
                        "--dynamic simulates the contacts, --static holds the nodes resting on it")
    p.add_argument("--out", default="runs/identify", help="output directory")
    p.add_argument("--no-plots", action="store_true")
    p.set_defaults(func=cmd_identify)
    return p


def main(argv=None) -> int:
    """Run ``identify`` on its own: ``main(['MODEL', '--static', 'CASES.yaml', '--out', 'DIR'])``."""
    parser = argparse.ArgumentParser(prog="tensegrity-identify")
    sub = parser.add_subparsers(dest="command", required=True)
    add_identify(sub)
    args = parser.parse_args(["identify", *(sys.argv[1:] if argv is None else argv)])
    try:
        return args.func(args)
    except (ModelError, InputError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc.filename + ': ' if exc.filename else ''}{exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
