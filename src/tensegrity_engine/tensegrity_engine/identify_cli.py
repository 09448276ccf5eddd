"""``tensegrity identify MODEL --static CASES.yaml``: static identification from equilibrium captures
(``--dynamic CASES.yaml``: dynamic identification, :mod:`.identify_dynamic_cli`).

CASES.yaml (paths relative to the file)::

    params: [stiffness]            # optional: stiffness, rest_length, bar_mass (default [stiffness])
    groups: model                  # optional: none (one stiffness per string) or model (per string group)
    cases:
      - name: empty
        positions: take0.npz       # engine trajectory.npz ('nodes'), trajectory.csv ('<node>.x' columns),
                                   # or inline [[x, y, z], ...] per physical node [m]; files: mean of all frames
        loads: []
      - name: payload_2kg
        positions: take1.csv
        loads: [{node: n22, mass: 2.0}, {node: n23, force: [5.0, 0, 0]}]   # kg in the model's gravity / N
      - name: check
        positions: take3.npz
        loads: [{node: n24, mass: 1.5}]
        held_out: true             # not fitted: predicted with the identified model, RMS reported

Writes into ``--out``: ``identified.yaml`` (the model with the identified values, provenance in ``notes``),
``report.json`` (estimates, standard errors, condition number, unidentifiable names, held-out RMS) and
``identify.png`` (estimate / initial with error bars; per-case position corrections). Exit code 2 on bad
input. ``add_identify(subparsers)`` registers the command on the engine's CLI; ``main(argv)`` runs it alone.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import numpy as np
import yaml

from .errors import InputError, ModelError
from .identify_params import DYNAMIC_PARAMS
from .identify_static import PARAM_KINDS as STATIC_PARAMS
from .paths import output_path_problem

MAX_CASES_BYTES = 50 * 2 ** 20


def _read_positions(model, spec, base: Path, where: str) -> np.ndarray:
    """Physical node positions (mu,3) [m] from an inline list, an engine trajectory.npz or trajectory.csv."""
    mu = model.n_physical
    names = list(model.node_names[:mu])
    if isinstance(spec, (list, tuple)):
        try:
            P = np.asarray(spec, float)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: inline positions must be [[x, y, z], ...] numbers in m") from None
        return P
    if not isinstance(spec, str):
        raise ValueError(f"{where}: 'positions' must be a file name (.npz/.csv) or [[x, y, z], ...], got {spec!r}")
    path = base / spec
    if not path.is_file():
        raise ValueError(f"{where}: positions file {path} not found; give a path relative to the cases file")
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            if "nodes" not in z:
                raise ValueError(f"{where}: {path} has no 'nodes' array; use an engine trajectory.npz")
            X = np.asarray(z["nodes"], float)
            file_names = [str(s) for s in z["node_names"]] if "node_names" in z else None
        X = X[None] if X.ndim == 2 else X
        if file_names is not None:
            missing = [n for n in names if n not in file_names]
            if missing:
                raise ValueError(f"{where}: {path} has no node(s) {', '.join(missing[:5])} of model '{model.name}'; "
                                 "use a capture of this model (or map its markers to the model's node names)")
            X = X[:, [file_names.index(n) for n in names]]
        return X.mean(axis=0)
    if path.suffix == ".csv":
        with path.open(newline="") as fh:
            rows = list(csv.reader(fh))
        if not rows:
            raise ValueError(f"{where}: {path} is empty")
        head = rows[0]
        try:
            cols = [head.index(f"{n}.{c}") for n in names for c in "xyz"]
        except ValueError:
            missing = [n for n in names if f"{n}.x" not in head]
            raise ValueError(f"{where}: {path} lacks columns {', '.join(f'{n}.x' for n in missing[:4])}; "
                             "write '<node>.x,<node>.y,<node>.z' per physical node (as trajectory.csv)") from None
        try:
            data = np.array([[float(r[i]) for i in cols] for r in rows[1:] if r], float)
        except (ValueError, IndexError):
            raise ValueError(f"{where}: {path} has a non-numeric or short row") from None
        if not len(data):
            raise ValueError(f"{where}: {path} has no data rows")
        return data.mean(axis=0).reshape(mu, 3)
    raise ValueError(f"{where}: positions file {path} must be .npz (engine trajectory) or .csv")


def read_cases(model, path):
    """(fit cases, held-out cases, options) from a cases YAML file; StaticCase lists."""
    from .identify_static import StaticCase, load_forces
    from .identify_data import read_cases_yaml
    path = Path(path)
    doc = read_cases_yaml(path, "cases", "{name: ..., positions: ..., loads: [...]}", MAX_CASES_BYTES, "--static")
    fit, held = [], []
    for k, item in enumerate(doc["cases"]):
        if not isinstance(item, dict) or "positions" not in item:
            raise ValueError(f"{path}: case {k} must be a mapping with 'positions' (and 'loads')")
        name = str(item.get("name", f"case {k}"))
        where = f"{path}: case '{name}'"
        P = _read_positions(model, item["positions"], path.parent, where)
        F = load_forces(model, item.get("loads") or [], where=where)
        (held if item.get("held_out") else fit).append(StaticCase(P, F, name))
    if not fit:
        raise ValueError(f"{path}: every case is held out; fit at least one")
    params = doc.get("params", ["stiffness"])
    groups = doc.get("groups")
    if groups not in (None, "none", "model"):
        raise ValueError(f"{path}: 'groups' must be none or model, got {groups!r}")
    return fit, held, {"params": tuple(params) if isinstance(params, list) else (params,),
                       "groups": None if groups in (None, "none") else "model"}


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
    ax2.set_title(f"noise estimate {result.noise_estimate * 1e3:.2f} mm")
    path = Path(path)
    fig.savefig(path, format="png")
    fig.clear()
    return path


def chosen_params_and_groups(args, opts) -> tuple:
    """(params, groups): the command line's --params/--groups, else the cases file's options."""
    params = tuple(args.params) if args.params else opts["params"]
    groups = opts["groups"] if args.groups is None else (None if args.groups == "none" else "model")
    return params, groups


def write_identified(out: Path, doc: dict) -> Path:
    """Write the identified model document as ``out``/identified.yaml."""
    path = out / "identified.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=120, allow_unicode=True))
    return path


def cmd_identify(args) -> int:
    from .identify_static import apply, identified_model, identify_static, predict
    from .model import load_model
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
    if args.dynamic:
        from .identify_dynamic_cli import cmd_identify_dynamic
        return cmd_identify_dynamic(args, model, out)
    fit, held, opts = read_cases(model, args.static)
    params, groups = chosen_params_and_groups(args, opts)
    res = identify_static(model, fit, params=params, groups=groups, regularization=args.regularization)
    write_identified(out, apply(model, res, source=str(args.static)))
    report = res.as_dict()
    report["model"] = model.name
    if held:
        ident = identified_model(model, res)
        report["held_out"] = []
        for case in held:
            rms = [float(np.sqrt(np.mean(np.sum((predict(m, case.forces) - case.positions) ** 2, axis=1))))
                   for m in (model, ident)]
            report["held_out"].append({"name": case.name, "rms_before_m": rms[0], "rms_identified_m": rms[1]})
    files = ["identified.yaml", "report.json"]
    if not args.no_plots:
        plot_identification(res, out / "identify.png", title=f"{model.name}: static identification")
        files.append("identify.png")
    (out / "report.json").write_text(json.dumps(report, indent=2, allow_nan=False))
    for nm, u, e, s, ok in zip(res.names, res.units, res.estimate, res.std_error, res.identifiable):
        print(f"{nm:<32} {e:>12.6g} ± {s:<10.3g} {u:<4}" + ("" if ok else "  NOT IDENTIFIABLE"))
    print(f"condition number {res.condition_number:.3g}; noise estimate {res.noise_estimate * 1e3:.3g} mm")
    for d in res.unidentifiable:
        print(f"cannot separate ({d['kind']}): {', '.join(d['parameters'])}")
    for w in res.warnings:
        print("warning:", w)
    for h in report.get("held_out", []):
        print(f"held-out '{h['name']}': RMS {h['rms_before_m'] * 1e3:.3f} mm before, "
              f"{h['rms_identified_m'] * 1e3:.3f} mm identified")
    print(f"wrote {out}/: {', '.join(files)}")
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
    p.add_argument("--workers", type=int, default=None, help="--dynamic: local processes simulating Jacobian "
                   "columns (default: one per core)")
    p.add_argument("--scheduler", default=None, metavar="tcp://HOST:8786",
                   help="--dynamic: simulate on this Dask distributed cluster instead")
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
