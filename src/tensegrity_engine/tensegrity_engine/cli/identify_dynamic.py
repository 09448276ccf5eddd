"""``tensegrity identify MODEL --dynamic CASES.yaml``: dynamic identification from captures with commands.

CASES.yaml is read by :func:`~tensegrity_engine.identify.data.read_dynamic_cases` (engine trajectories,
Motive CSV + marker map + inputs CSV, suite MCAP recordings; ``held_out: true`` captures are predicted,
not fitted). Writes into ``--out``:

* ``identified.yaml``: the model with the identified values, provenance in ``notes``;
* ``report.json``: estimates, standard errors, regressor start, unidentifiable parameters by name, the fit's
  stages (with the optimiser's status), ``converged`` and ``warnings`` (a stage stopped at its evaluation
  limit), ``excitation`` (per parameter: how far above the noise the captures respond to it, 'excited', 'not
  excited' or 'confounded', the motion that carries it and advice; also printed), misfit and noise level
  [m], and per capture (fitted and held out) the paper's table before and
  after identification (per-frame position and angle RMS, per-node RMS) against the capture;
* ``identify_dynamic.png`` (parameters with standard errors) and ``prediction_<capture>.png`` (node
  error over time before/after, measured vs predicted z of three nodes).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from tensegrity_engine.cli.identify_common import chosen_params_and_groups, write_identified


def _errors_text(name, label, err) -> list:
    rows = [f"{name} ({label}): nodes RMS {err['node_rms_m'] * 1e3:.3f} mm"]
    rows += [f"    frame {f}: position RMS {e['position_rms_m'] * 1e3:.3f} mm, angle RMS {e['angle_rms_deg']:.3f} deg"
             for f, e in err["frames"].items()]
    return rows


def plot_parameters(result, path, title="") -> Path:
    """PNG: (estimate - initial) / scale per parameter with 1-standard-error bars (red: not identifiable)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    scale = np.array([p.scale for p in result.params])
    d = (result.estimate - result.initial) / scale
    se = np.where(np.isfinite(result.std_error), result.std_error / scale, 0.0)
    fig = Figure(figsize=(8, 0.28 * len(d) + 1.6))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(111)
    y = np.arange(len(d))
    colors = ["tab:blue" if ok else "tab:red" for ok in result.identifiable]
    ax.barh(y, d, xerr=se, color=colors, alpha=0.8)
    ax.set_yticks(y, [f"{n} [{u}]" for n, u in zip(result.names, result.units)], fontsize=7)
    ax.invert_yaxis()
    ax.axvline(0, color="k", lw=0.8)
    ax.set_xlabel("change from the model's value, in units of each parameter's scale (red: not identifiable)")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, format="png")
    return Path(path)


def plot_prediction(model, capture, before, after, path) -> Path:
    """PNG: node RMS error [mm] over time before/after, and measured vs predicted z [m] of three nodes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from tensegrity_engine.identify.shooting import compared_nodes
    fig = Figure(figsize=(9, 6))
    FigureCanvasAgg(fig)
    a1, a2 = fig.add_subplot(211), fig.add_subplot(212)
    cmp = compared_nodes(model)
    X = np.asarray(capture.nodes, float)
    for P, label in ((before, "before"), (after, "identified")):
        d = np.linalg.norm(P[:, cmp] - X[:, cmp], axis=-1)
        a1.plot(capture.t, np.sqrt(np.nanmean(d ** 2, axis=1)) * 1e3, label=label, lw=0.8)
    a1.set_ylabel("node RMS error [mm]")
    a1.legend(fontsize=8)
    a1.set_title(f"{model.name}: capture '{capture.name}'", fontsize=9)
    for i in cmp[-3:]:
        line, = a2.plot(capture.t, X[:, i, 2], ".", ms=1.5, label=f"{model.node_names[i]} measured")
        a2.plot(capture.t, after[:, i, 2], "-", color=line.get_color(), lw=0.8, label="identified")
        a2.plot(capture.t, before[:, i, 2], ":", color=line.get_color(), lw=0.8, label="before")
    a2.set_xlabel("t [s]")
    a2.set_ylabel("z [m]")
    a2.legend(fontsize=6, ncol=3)
    fig.tight_layout()
    fig.savefig(path, format="png")
    return Path(path)


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name) or "capture"


def cmd_identify_dynamic(args, model, out: Path) -> int:
    """The --dynamic branch of ``tensegrity identify`` (``out`` already checked, ``model`` loaded)."""
    from tensegrity_engine.identify.data import read_dynamic_cases
    from tensegrity_engine.identify.dynamic import identify_dynamic
    from tensegrity_engine.identify.shooting import predict, prediction_errors
    from tensegrity_engine.identify.static import document_with_provenance
    fit, held, opts = read_dynamic_cases(model, args.dynamic)
    model, payload = opts["model"], opts["payload"]       # a payload: NODE is taken out of the fit's model
    if payload:
        print(payload_line(payload))
    params, groups = chosen_params_and_groups(args, opts)
    shooting = opts["shooting"] if args.shooting is None else args.shooting
    workers = args.workers if args.workers is not None else (os.cpu_count() or 1)
    res = identify_dynamic(model, fit, params=params, groups=groups, shooting=shooting, max_nfev=args.max_nfev,
                           progress=lambda s: print(" ", s, flush=True), workers=workers, scheduler=args.scheduler,
                           jacobian=getattr(args, "jacobian", "fd"),
                           start_states=getattr(args, "start_states", False))
    ident = res.model()
    title = (f"Identified (dynamic) {{stamp}} from {len(fit)} capture(s) of {args.dynamic}: misfit "
             f"{res.misfit_rms * 1e3:.3g} mm RMS per coordinate (capture noise {res.noise * 1e3:.3g} mm)."
             + (f" {payload_line(payload)}." if payload else "")
             + ("" if res.converged else " NOT CONVERGED: the optimiser stopped at its evaluation limit, the values "
                "are where it stopped."))
    write_identified(out, document_with_provenance(ident, title, res))
    report = res.as_dict()
    report["model"] = model.name
    report["payload"] = payload
    report["predictions"] = []
    files = ["identified.yaml", "report.json"]
    if not args.no_plots:
        plot_parameters(res, out / "identify_dynamic.png", title=f"{model.name}: dynamic identification"
                        + ("" if res.converged else " (NOT CONVERGED)"))
        files.append("identify_dynamic.png")
    for cap in fit + held:
        P0, P1 = predict(model, cap), predict(ident, cap)
        e0, e1 = prediction_errors(model, P0, cap.nodes), prediction_errors(model, P1, cap.nodes)
        report["predictions"].append({"capture": cap.name, "held_out": bool(cap.held_out), "before": e0,
                                      "identified": e1})
        for line in _errors_text(cap.name + (" held out" if cap.held_out else ""), "before", e0) + \
                _errors_text(cap.name + (" held out" if cap.held_out else ""), "identified", e1):
            print(line)
        if not args.no_plots:
            f = f"prediction_{_safe(cap.name)}.png"
            plot_prediction(model, cap, P0, P1, out / f)
            files.append(f)
    (out / "report.json").write_text(json.dumps(_finite(report), indent=2, allow_nan=False))
    _print_dynamic(res)
    print(f"wrote {out}/: {', '.join(files)}")
    return 0


def payload_line(payload: dict) -> str:
    """What ``payload: NODE`` took out of the model, for the console and the provenance."""
    return (f"payload {payload['node']} ({payload['mass_kg']:g} kg) and its cable {payload['cable']} taken out of "
            f"the model for the fit: its captured track drives {payload['hang']} with m (g - a); identified.yaml is "
            "the robot without them")


def _print_dynamic(res) -> None:
    """The parameter table, what cannot be separated, misfit and noise, and the warnings (also after)."""
    for w in res.warnings:
        print("warning:", w)
    caveat = "" if res.converged else "  (fit NOT CONVERGED)"
    for n, u, i, e, s, ok in zip(res.names, res.units, res.initial, res.estimate, res.std_error, res.identifiable):
        print(f"{n:<34} {i:>10.4g} -> {e:>12.6g} ± {s:<10.3g} {u:<6}" + ("  NOT IDENTIFIABLE" if not ok else caveat))
    for d in res.unidentifiable:
        if d["kind"] != "weak":
            print(f"cannot separate ({d['kind']}): {', '.join(d['parameters'])}")
    for row in res.excitation:
        if row["status"] != "excited":
            print(f"{row['status']}: {row['advice']}")
    print(f"misfit {res.misfit_rms * 1e3:.3g} mm RMS per coordinate; capture noise {res.noise * 1e3:.3g} mm")
    if not res.converged:
        print("warning: NOT CONVERGED (see above): the estimates are where the optimiser stopped")


def _finite(obj):
    """JSON-ready copy: numpy scalars as Python numbers, NaN/inf as null."""
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    if isinstance(obj, (float, np.floating)):
        return float(obj) if np.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    return obj
