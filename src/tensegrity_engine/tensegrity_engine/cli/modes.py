"""``tensegrity modes`` (modal analysis, linearisation, mode animations) and ``tensegrity crosscheck`` (the
node model against rigid rods with quaternions, :mod:`.crosscheck`). Templates (``tensegrity new``) are in
:mod:`.new`.

    tensegrity modes MODEL [--count 10] [--min-tension T | --as-is | --settle] [--animate --mode K] --out DIR

``modes`` prestresses the model's shape (``--min-tension``, the default 1 N; ``--as-is`` keeps the file's
rest lengths: the shape must then be an equilibrium; ``--settle`` keeps them and moves to the equilibrium
shape they settle to), and writes ``modes.json`` (frequencies [Hz], the residual, stability, mode shapes as
node displacements), ``modes.png`` (the lowest elastic mode shapes drawn on the structure), GIFs with
``--animate`` and ``linearisation.npz`` (A, B, B_rate, T, C, frequencies_hz, modes, positions, node_names,
actuator_names; see :mod:`.modal`).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from tensegrity_engine.paths import output_path_problem


def _prestressed(model, min_tension, as_is, settled=False):
    """(model at the shape to linearise about, Equilibrium or None): the file's shape prestressed to
    ``min_tension`` [N], the file as it is (``as_is``), or the equilibrium shape of the file's rest lengths
    (``settled``, the model's positions moved there)."""
    from tensegrity_engine.statics.equilibrium import prestress, settle, with_rest_lengths
    if as_is:
        return model, None
    if settled:
        eq = settle(model)
        if eq.message:
            raise ValueError(f"model '{model.name}': --settle: {eq.message}")
        return with_rest_lengths(model, model.rest_length, positions=eq.positions), eq
    eq = prestress(model, min_tension=min_tension)
    if eq.message:
        raise ValueError(f"model '{model.name}': {eq.message}. Use --settle to analyse the equilibrium shape of "
                         "the file's rest lengths instead")
    return with_rest_lengths(model, eq.rest_lengths), eq


def plot_modes(model, lin, path, count=6) -> Path:
    """PNG: the lowest elastic mode shapes, each drawn on the structure (x-z view and x-y view)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    f = lin.frequencies_hz
    first = int(np.argmax(f > 1e-3 * max(f.max(), 1e-12)))
    idx = list(range(first, min(first + count, len(f))))
    fig = Figure(figsize=(3.0 * len(idx), 5.6))
    FigureCanvasAgg(fig)
    X = lin.positions
    span = np.ptp(X, axis=0).max()
    for j, k in enumerate(idx):
        dX = (lin.C @ lin.modes[:, k]).reshape(-1, 3)
        Xm = X + 0.15 * span * dX / max(np.abs(dX).max(), 1e-300)
        for row, (a, b, lab) in enumerate(((0, 2, "x-z"), (0, 1, "x-y"))):
            ax = fig.add_subplot(2, len(idx), row * len(idx) + j + 1)
            for P, style in ((X, dict(color="0.75", lw=1)), (Xm, dict(color="tab:red", lw=1.6))):
                for p_, q_ in model.bars:
                    ax.plot(P[[p_, q_], a], P[[p_, q_], b], **style)
                for s_, t_ in model.segments:
                    ax.plot(P[[s_, t_], a], P[[s_, t_], b], color=style["color"], lw=0.5)
            ax.set_aspect("equal")
            ax.set_xticks([])
            ax.set_yticks([])
            if row == 0:
                ax.set_title(f"mode {k + 1}: {f[k]:.3g} Hz", fontsize=8)
            ax.set_xlabel(lab, fontsize=7)
    fig.suptitle(f"{model.name}: lowest elastic modes (grey: equilibrium)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, format="png")
    return Path(path)


def cmd_modes(args) -> int:
    from tensegrity_engine.statics.modal import linearise
    from tensegrity_engine.model.load import load_model
    out = Path(args.out)
    problem = output_path_problem(out)
    if problem:
        raise ValueError(f"--out {out}: {problem}")
    if args.as_is and args.settle:
        raise ValueError("--as-is and --settle exclude each other")
    model, eq = _prestressed(load_model(args.model), args.min_tension, args.as_is, args.settle)
    lin = linearise(model)
    from tensegrity_engine.statics.mode_shapes import mode_shape, mode_shapes, shapes_report
    if args.mode and not args.animate:
        raise ValueError("--mode selects the modes to animate: add --animate")
    animated = [mode_shape(lin, k) for k in (args.mode or [1])] if args.animate else []
    fd = None
    if args.check:                       # modes from the finite-difference stiffness, same tangent space
        from scipy import linalg as sla
        from tensegrity_engine.statics.modal import bar_multipliers, finite_difference_stiffness
        Kf = finite_difference_stiffness(model, lin.positions, bar_multipliers(model, lin.positions, model.rest_length))
        M3 = np.kron(model.reduced_mass, np.eye(3))
        w2 = sla.eigh(lin.T.T @ Kf @ lin.T, lin.T.T @ M3 @ lin.T, eigvals_only=True)
        fd = np.sqrt(np.clip(w2, 0, None)) / (2 * np.pi)
    np.savez_compressed(out / "linearisation.npz", A=lin.A, B=lin.B, B_rate=lin.B_rate, T=lin.T, C=lin.C,
                        frequencies_hz=lin.frequencies_hz, modes=lin.modes, positions=lin.positions,
                        node_names=np.array(model.node_names), actuator_names=np.array(model.actuator_names))
    rigid = int(np.sum(lin.frequencies_hz < 1e-3 * max(lin.frequencies_hz.max(), 1e-12)))
    report = {"model": model.name, "frequencies_hz": lin.frequencies_hz[:args.count + rigid].tolist(),
              "rigid_body_modes": rigid,
              "prestress_residual_N": None if eq is None else eq.residual, "states": int(lin.A.shape[0]),
              "inputs": len(model.actuator_names)}
    elastic = lin.frequencies_hz[rigid:]
    report["stable"] = bool(len(elastic) == 0 or elastic.min() > 0)
    report["node_names"] = list(model.node_names)          # node order of the modes' node_displacements
    report["modes"] = shapes_report(mode_shapes(lin, args.count))
    if fd is not None:
        diff = np.abs(fd - lin.frequencies_hz).max()
        report["finite_difference_check_rel"] = float(diff / max(lin.frequencies_hz.max(), 1e-300))
    files = ["modes.json", "linearisation.npz"]
    if not args.no_plots:
        plot_modes(model, lin, out / "modes.png", count=min(args.count, 6))
        files.append("modes.png")
    if animated:
        from tensegrity_engine.plots.mode_animation import write_gifs
        files += write_gifs(model, lin, animated, out, args.amplitude)
    (out / "modes.json").write_text(json.dumps(report, indent=2))
    print(f"{model.name}: {lin.A.shape[0]} states, {len(model.actuator_names)} inputs, {rigid} rigid-body mode(s); "
          f"lowest elastic frequencies [Hz]: {', '.join(f'{x:.4g}' for x in elastic[:args.count])}")
    print(f"wrote {out}/: {', '.join(files)}")
    return 0


def cmd_crosscheck(args) -> int:
    from tensegrity_engine.dynamics.crosscheck import crosscheck
    from tensegrity_engine.model.load import load_model
    model = load_model(args.model)
    r = crosscheck(model, duration=args.duration, seed=args.seed, sigma=args.sigma)
    ok = r["max_deviation_m"] <= args.tol
    print(f"{model.name}: node model (dopri5 rtol 1e-12) vs rigid rods with quaternions (DOP853 rtol 1e-12), "
          f"{args.duration:g} s from random node velocities (sigma {args.sigma:g} m/s, seed {args.seed}): max node "
          f"deviation {r['max_deviation_m']:.3e} m (motion {r['motion_m']:.3g} m) "
          f"{'<=' if ok else '>'} {args.tol:g} m: {'agree' if ok else 'DISAGREE'}")
    return 0 if ok else 1


def add_modal(sub):
    """Register ``modes`` and ``new`` on the engine's CLI."""
    pm = sub.add_parser("modes", help="natural frequencies, mode shapes and the linearised dynamics (A, B)",
                        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    pm.add_argument("model")
    pm.add_argument("--count", type=int, default=10, help="elastic modes to print and keep")
    pm.add_argument("--min-tension", type=float, default=1.0, help="prestress the shape to this smallest tension [N]")
    pm.add_argument("--as-is", action="store_true", help="keep the file's rest lengths (the shape must be an equilibrium)")
    pm.add_argument("--settle", action="store_true", help="keep the file's rest lengths and analyse the equilibrium "
                    "shape they settle to (for models whose drawn shape is not an equilibrium, e.g. prism3)")
    pm.add_argument("--check", action="store_true", help="also compute the modes from a finite-difference stiffness "
                    "and report the largest relative difference")
    pm.add_argument("--out", default="runs/modes")
    pm.add_argument("--no-plots", action="store_true")
    pm.add_argument("--animate", action="store_true", help="also write mode_K.gif: the structure oscillating in "
                    "elastic mode K (X_eq + a sin(2 pi t/T) phi_K, 30 frames over one period)")
    pm.add_argument("--mode", type=int, nargs="+", metavar="K", help="with --animate: the elastic modes to "
                    "animate (1 = lowest elastic; default 1)")
    pm.add_argument("--amplitude", type=float, default=0.0, help="with --animate: largest node excursion [m] "
                    "(0: 10 %% of the shortest bar)")
    pm.set_defaults(func=cmd_modes)
    px = sub.add_parser("crosscheck", help="node model vs an independent rigid-rod (quaternion) model, class-1 "
                        "structures", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    px.add_argument("model")
    px.add_argument("--duration", type=float, default=5.0, help="s")
    px.add_argument("--seed", type=int, default=0)
    px.add_argument("--sigma", type=float, default=0.2, help="random initial node velocities [m/s]")
    px.add_argument("--tol", type=float, default=1e-8, help="agreement required [m] (exit 1 beyond)")
    px.set_defaults(func=cmd_crosscheck)
