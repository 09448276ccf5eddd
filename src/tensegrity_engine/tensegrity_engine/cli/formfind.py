"""``tensegrity formfind`` (force-density form-finding, :mod:`.formfind`) and ``tensegrity relax``
(dynamic relaxation with kinetic damping, :mod:`.relax`).

    tensegrity formfind MODEL [--q GROUP=VALUE ...] [--symmetry labels|length|none] [--shape symmetric|start]
                        [--min-tension T] [--exact-q] -o OUT.yaml
    tensegrity relax MODEL [-o OUT.yaml] [--tol N] [--perturb SIGMA] [--seed S] [--max-steps K]

``formfind`` writes the model with the found node positions and the rest lengths of its self-stress
(exit 0), or says why there is no valid form (exit 1, nothing written). ``relax`` finds the equilibrium
shape for the model's own rest lengths and writes it only when every check passes (exit 0; exit 1 with
the problems listed otherwise, unless ``--force``). Exit 2: bad arguments or model; 3: the relaxation
diverged.
"""
from __future__ import annotations

import argparse
import json
import math

import numpy as np

from tensegrity_engine.paths import output_path_problem


def _parse_q(items) -> dict:
    """``["bars=-1", "top ring=2"]`` -> {group: value}; the value follows the last '='."""
    out = {}
    for item in items or []:
        name, sep, value = item.rpartition("=")
        try:
            v = float(value)
        except ValueError:
            v = math.nan
        if not sep or not name or not math.isfinite(v):
            raise ValueError(f"--q {item!r}: expected GROUP=VALUE with a finite VALUE in N/m, e.g. --q bars=-1")
        out[name.strip()] = v
    return out


def _out_ok(path):
    problem = output_path_problem(path, "file") if path else ""
    if problem:
        raise ValueError(f"-o {path}: {problem}")


def plot_form(res, path, title="") -> str:
    """PNG of a form-finding result: the form in 3-D (bars thick, strings coloured by tension) and seen
    from above, and the adaptive method's convergence. Returns the path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    t = res.topology
    X = res.positions - res.positions.mean(axis=0)
    fig = Figure(figsize=(10.5, 3.6), dpi=90)
    FigureCanvasAgg(fig)
    ax3 = fig.add_subplot(1, 3, 1, projection="3d")
    ax2 = fig.add_subplot(1, 3, 2)
    P = X[:, :2]                                         # seen from above
    tens = np.abs(res.q) * np.linalg.norm(X[t.ends[:, 0]] - X[t.ends[:, 1]], axis=1)
    cmap = __import__("matplotlib").colormaps["viridis"]
    ts = tens[~t.is_bar]
    for k, (a, b) in enumerate(t.ends):
        if t.is_bar[k]:
            style = dict(color="0.2", lw=3.0)
        else:
            spread = np.ptp(ts)
            c = cmap(0.5 if spread <= 1e-9 * ts.max() else (tens[k] - ts.min()) / spread)
            style = dict(color=c, lw=1.0)
        ax3.plot(*X[[a, b]].T, **style)
        ax2.plot(*P[[a, b]].T, **style)
    r = np.abs(X).max()
    ax3.set(xlim=(-r, r), ylim=(-r, r), zlim=(-r, r), xlabel="x [m]", ylabel="y [m]", zlabel="z [m]")
    ax3.set_box_aspect((1, 1, 1))
    ax3.locator_params(nbins=3)
    ax2.set_aspect("equal")
    ax2.set_title("seen from above (along z)", fontsize=9)
    ax2.set_xticks([])
    ax2.set_yticks([])
    ax = fig.add_subplot(1, 3, 3)
    if res.history:
        ax.semilogy(range(len(res.history)), np.maximum(res.history, 1e-17), "o-")
        ax.set(xlabel="iteration", ylabel="3 smallest eigenvalues of D / largest")
        ax.axhline(1e-12, color="0.5", ls="--", lw=0.8)
    else:
        ax.text(0.5, 0.5, "linear FDM (supports):\none solve", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
    fig.suptitle(title or f"{res.method}: residual {res.residual:.1e} N", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    return str(path)


def cmd_formfind(args) -> int:
    from tensegrity_engine.statics.formfind import FormFindError, form_find
    from tensegrity_engine.model.load import load_model
    from tensegrity_engine.model.write import dump_model
    _out_ok(args.output)
    _out_ok(args.plot)
    if args.min_tension is not None and not (math.isfinite(args.min_tension) and args.min_tension > 0):
        raise ValueError(f"--min-tension must be a positive number of N, got {args.min_tension:g}")
    if args.bar_length is not None and not (math.isfinite(args.bar_length) and args.bar_length > 0):
        raise ValueError(f"--bar-length must be a positive number of m, got {args.bar_length:g}")
    q = _parse_q(args.q)
    model = load_model(args.model)
    try:
        res = form_find(model, q or None, symmetry=args.symmetry, shape=args.shape, min_tension=args.min_tension,
                        tol=args.tol, adapt=not args.exact_q, bar_lengths=args.bar_length,
                        check_stability=not args.no_stability)
    except FormFindError as exc:
        print(f"error: form-finding of '{model.name}' failed: {exc}")
        return 1
    print(res.summary())
    if args.json:
        t = res.topology
        print(json.dumps({"residual_N": res.residual, "stable": res.stable, "iterations": res.iterations,
                          "nullity": res.nullity, "group_q_N_per_m": dict(zip(t.group_names, res.group_q.tolist())),
                          "tensions_N": dict(zip(model.string_names, res.tensions.tolist())),
                          "rest_lengths_m": dict(zip(model.string_names, res.rest_lengths.tolist())),
                          "bar_forces_N": dict(zip(model.bar_names, res.bar_forces.tolist())),
                          "notes": res.notes}, indent=2, allow_nan=False))
    if res.stable is False and not args.force:
        print("error: the form is not stable; nothing written (--force writes it anyway)")
        return 1
    dump_model(res.model, args.output, header=f"Form-found from {model.name} ({res.method}): residual "
               f"{res.residual:.3e} N, group force densities " + ", ".join(
                   f"{g}={v:.6g}" for g, v in zip(res.topology.group_names, res.group_q)) + " N/m")
    print(f"wrote {args.output}")
    if args.plot:
        print(f"wrote {plot_form(res, args.plot, f'{model.name}: ' + res.method)}")
    return 0


def cmd_relax(args) -> int:
    from tensegrity_engine.model.load import load_model
    from tensegrity_engine.model.write import dump_model
    from tensegrity_engine.statics.relax import RelaxFailed, relax
    _out_ok(args.output)
    if not (math.isfinite(args.tol) and args.tol > 0):
        raise ValueError(f"--tol must be a positive number of N, got {args.tol:g}")
    if not (math.isfinite(args.perturb) and args.perturb >= 0):
        raise ValueError(f"--perturb must be a number of m >= 0, got {args.perturb:g}")
    if args.max_steps < 1:
        raise ValueError(f"--max-steps must be >= 1, got {args.max_steps}")
    model = load_model(args.model)
    X = model.positions.copy()
    if args.perturb:
        free = np.setdiff1d(np.arange(model.n_nodes), model.fixed_nodes)
        X[free] += np.random.default_rng(args.seed).normal(0.0, args.perturb, (len(free), 3))
    try:
        res = relax(model, X, tol=args.tol, max_steps=args.max_steps, progress=not args.quiet)
    except RelaxFailed as exc:
        print(f"error: {exc}; nothing written")
        return 1
    print(res.summary(model))
    if not res.ok and not args.force:
        print("error: not written (--force writes the shape anyway)")
        return 1
    if args.output:
        dump_model(model, args.output, positions=res.positions,
                   header=f"Relaxed {model.name} (kinetic damping + Newton): residual {res.residual:.3e} N")
        print(f"wrote {args.output}")
    return 0 if res.ok else 1


def add_formfind(sub):
    """Register ``formfind`` and ``relax`` on the engine's CLI."""
    pf = sub.add_parser("formfind", help="force-density form-finding on a model's topology",
                        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    pf.add_argument("model")
    pf.add_argument("--q", action="append", metavar="GROUP=VALUE",
                    help="force density [N/m] of a group (or one member): strings > 0, bars < 0; repeat per group "
                    "(default: +1 for strings, -1 for bars)")
    pf.add_argument("--symmetry", choices=["labels", "length", "none"], default="labels",
                    help="groups sharing one force density: string 'group' labels (bars one group), members of "
                    "equal start length, or one per member")
    pf.add_argument("--shape", choices=["symmetric", "start"], default="symmetric",
                    help="affine freedom: the symmetric form rotated onto the start drawing, or the affine image "
                    "nearest the start drawing")
    pf.add_argument("--min-tension", type=float, default=None, help="prestress: smallest string tension [N] "
                    "(free-standing forms; default keeps the size of the given force densities)")
    pf.add_argument("--bar-length", type=float, default=None, help="length of every bar [m] (free-standing forms; "
                    "default: each bar as drawn in the model)")
    pf.add_argument("--exact-q", action="store_true", help="use the given force densities as they are (no "
                    "adaptation): they must already admit a 3-D form")
    pf.add_argument("--tol", type=float, default=1e-12, help="relative size of D's 3 smallest eigenvalues")
    pf.add_argument("--no-stability", action="store_true", help="skip the (dense, slow for thousands of nodes) "
                    "stability check")
    pf.add_argument("--json", action="store_true")
    pf.add_argument("--plot", default=None, metavar="FILE.png", help="also draw the form and the convergence")
    pf.add_argument("--force", action="store_true", help="write even if the form is not stable")
    pf.add_argument("-o", "--output", required=True, help="model file to write (.yaml)")
    pf.set_defaults(func=cmd_formfind)
    pr = sub.add_parser("relax", help="equilibrium shape for the model's own rest lengths (kinetic damping)",
                        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    pr.add_argument("model")
    pr.add_argument("-o", "--output", default=None, help="model file to write with the relaxed positions")
    pr.add_argument("--tol", type=float, default=1e-9, help="residual force after Newton polishing [N]")
    pr.add_argument("--perturb", type=float, default=0.0, help="random start perturbation of every free node [m]")
    pr.add_argument("--seed", type=int, default=0)
    pr.add_argument("--max-steps", type=int, default=20000, help="kinetic-damping steps at most")
    pr.add_argument("--quiet", action="store_true", help="no progress bar")
    pr.add_argument("--force", action="store_true", help="write the shape even when a check fails")
    pr.set_defaults(func=cmd_relax)
