"""PNG figures of a :class:`~tensegrity_engine.dynamics.trajectory.Trajectory` (in the style of the manipulator paper).

Figures are drawn on stand-alone :class:`matplotlib.figure.Figure` objects rendered by the Agg backend,
so nothing touches pyplot's global state or needs a display; a figure is released as soon as its
function returns. Every function writes one PNG (``DPI`` dots per inch, ``FIG_WIDTH`` inches wide) and
returns its path. Lengths are plotted in mm, angles in degrees, forces in N, time in s.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from mpl_toolkits.mplot3d.art3d import Line3DCollection, Poly3DCollection

from tensegrity_engine.frames import euler_zyx, has_paper_frames, model_frames, paper_relative_frames

DPI = 120
FIG_WIDTH = 10.0   # inches
AXIS_NAMES = ("x", "y", "z")
EULER_NAMES = ("ψ (z)", "θ (y)", "φ (x)")
_RUN_STYLES = ("--", ":", "-.", (0, (5, 1, 1, 1)))


# --- helpers -------------------------------------------------------------------------------------
def new_figure(height, layout="constrained") -> Figure:
    """A stand-alone figure of the suite's width and ``height`` [in], rendered by Agg."""
    fig = Figure(figsize=(FIG_WIDTH, height), dpi=DPI, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig: Figure, path) -> Path:
    """Write ``fig`` as PNG to ``path`` (parents created), free it and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, format="png")
    fig.clear()
    return path


def _message(path, title, text) -> Path:
    """A figure holding only a note (e.g. "no actuators")."""
    fig = new_figure(3.0)
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_title(title)
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=14, color="0.3", transform=ax.transAxes)
    return save_figure(fig, path)


def _check(traj, model):
    if traj.nodes.shape[1] != model.n_nodes:
        raise ValueError(f"trajectory has {traj.nodes.shape[1]} nodes but model '{model.name}' has "
                         f"{model.n_nodes}; plot a trajectory with the model it was simulated with")


def _title(traj, model, what):
    name = traj.model_name or model.name
    return f"{name}: {what}" if name else what


def _frame_series(traj, model):
    """(kind, {label: (T,4,4)}) — the paper's relative plate frames, or every model frame in world."""
    if has_paper_frames(model):
        rel = paper_relative_frames(model, traj.nodes)
        return "plates", {f"$^{k[0]}C_{k[2]}$ (C{k[2]} in C{k[0]})": C for k, C in rel.items()}
    return "frames", {f"{name} (in world)": C for name, C in model_frames(model, traj.nodes).items()}


# --- figures -------------------------------------------------------------------------------------
def plot_plates(traj, model, path, compare=None, label="simulation") -> Path:
    """Plate frame positions [mm] and ZYX angles [deg] over time (manipulator paper, Fig. 6).

    One row per relative frame 0C1, 0C2, 1C2 (or per model frame relative to the world when the model
    has no frames C0, C1, C2); left column positions x, y, z, right column angles ψ, θ, φ.
    ``compare`` is an optional list of ``(label, Trajectory)`` (same model) overlaid with other line styles.
    """
    _check(traj, model)
    runs = [(label, traj)] + list(compare or [])
    for _, tr in runs[1:]:
        _check(tr, model)
    kind, first = _frame_series(traj, model)
    if not first:
        return _message(path, _title(traj, model, "frames"), "the model defines no frames")
    series = [first] + [_frame_series(tr, model)[1] for _, tr in runs[1:]]
    rows = len(first)
    fig = new_figure(2.5 * rows + 0.8)
    axes = fig.subplots(rows, 2, sharex=True, squeeze=False)
    for r, name in enumerate(first):
        axp, axa = axes[r]
        # plot changes from the start (the offsets are in the legend): millimetre motions stay visible
        # next to a plate height of a metre
        pos0 = first[name][0, :3, 3] * 1e3
        ang0 = np.degrees(euler_zyx(first[name][:1], unwrap=True))[0]
        for j, ((_, tr), s) in enumerate(zip(runs, series)):
            style = "-" if j == 0 else _RUN_STYLES[(j - 1) % len(_RUN_STYLES)]
            C = s[name]
            pos = C[:, :3, 3] * 1e3 - pos0
            ang = np.degrees(euler_zyx(C, unwrap=True)) - ang0
            for c in range(3):
                axp.plot(tr.t, pos[:, c], color=f"C{c}", ls=style, lw=1.4 if j == 0 else 1.2)
                axa.plot(tr.t, ang[:, c], color=f"C{c}", ls=style, lw=1.4 if j == 0 else 1.2)
        axp.set_title(f"{name}: position change")
        axa.set_title(f"{name}: ZYX angle change")
        axp.set_ylabel("position − start [mm]")
        axa.set_ylabel("angle − start [deg]")
        for ax, comps, off, unit in ((axp, AXIS_NAMES, pos0, "mm"), (axa, EULER_NAMES, ang0, "°")):
            ax.grid(True, alpha=0.4)
            handles = [Line2D([], [], color=f"C{c}", label=f"{comps[c]} (start {off[c] + 0.0:.1f} {unit})")
                       for c in range(3)]
            if len(runs) > 1:
                handles += [Line2D([], [], color="k", ls="-" if j == 0 else _RUN_STYLES[(j - 1) % len(_RUN_STYLES)],
                                   label=lab) for j, (lab, _) in enumerate(runs)]
            ax.legend(handles=handles, fontsize="small", ncol=2 if len(runs) > 1 else 1)
    for ax in axes[-1]:
        ax.set_xlabel("time [s]")
    what = "plate frames (relative position and orientation)" if kind == "plates" else "body frames in world"
    fig.suptitle(_title(traj, model, what))
    return save_figure(fig, path)


def plot_tensions(traj, model, path) -> Path:
    """Composite string tensions [N] over time, one subplot per string group (manipulator paper, Fig. 7)."""
    if len(traj.string_names) != len(model.string_group):
        raise ValueError(f"trajectory has {len(traj.string_names)} strings but model '{model.name}' has "
                         f"{len(model.string_group)}")
    if not len(traj.string_names):
        return _message(path, _title(traj, model, "string tensions"), "no strings")
    groups = {}
    for i, g in enumerate(model.string_group):
        groups.setdefault(g or "strings", []).append(i)
    fig = new_figure(2.4 * len(groups) + 0.8)
    axes = fig.subplots(len(groups), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (g, idx) in zip(axes, groups.items()):
        for i in idx:
            ax.plot(traj.t, traj.tensions[:, i], lw=1.2, label=traj.string_names[i])
        ax.axhline(0.0, color="k", lw=0.8)
        ax.set_title(g)
        ax.set_ylabel("tension [N]")
        ax.grid(True, alpha=0.4)
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), ncol=1 + len(idx) // 13)
    axes[-1].set_xlabel("time [s]")
    fig.suptitle(_title(traj, model, "string tensions"))
    return save_figure(fig, path)


def plot_inputs(traj, model, path) -> Path:
    """Actuated string displacement u [mm] (length reeled in) per actuator over time (paper, Fig. 4)."""
    if not len(traj.actuator_names):
        return _message(path, _title(traj, model, "inputs"), "no actuators")
    fig = new_figure(4.5)
    ax = fig.add_subplot()
    strings = [model.string_names[s] for s in model.actuator_string] \
        if len(model.actuator_string) == len(traj.actuator_names) else [None] * len(traj.actuator_names)
    for a, (name, s) in enumerate(zip(traj.actuator_names, strings)):
        ax.plot(traj.t, traj.inputs[:, a] * 1e3, lw=1.4, label=f"{name} ({s})" if s else name)
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("reeled-in length u [mm]")
    ax.grid(True, alpha=0.4)
    ax.legend(fontsize="small")
    ax.set_title(_title(traj, model, "actuated string displacement"))
    return save_figure(fig, path)


def plot_bar_error(traj, path) -> Path:
    """Largest relative bar length error |(|b| - l)/l| over the bars vs time, log scale."""
    err = np.asarray(traj.bar_length_error, float)
    title = f"{traj.model_name}: bar length error" if traj.model_name else "bar length error"
    if err.ndim != 2 or err.shape[1] == 0:
        return _message(path, title, "no bars")
    fig = new_figure(4.5)
    ax = fig.add_subplot()
    ax.semilogy(traj.t, np.clip(err.max(axis=1), 1e-17, None), lw=1.2, label="max over bars")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("relative bar length error [-]")
    ax.grid(True, which="both", alpha=0.4)
    ax.legend(fontsize="small")
    ax.set_title(title)
    return save_figure(fig, path)


def _snapshot_indices(t, times, count=4):
    t = np.asarray(t, float)
    if times is None:
        times = np.linspace(t[0], t[-1], min(count, len(t)))
    times = np.atleast_1d(np.asarray(times, float))
    return list(dict.fromkeys(int(np.argmin(np.abs(t - s))) for s in times))


_BOX_FACES = ((0, 1, 3, 2), (4, 5, 7, 6), (0, 1, 5, 4), (2, 3, 7, 6), (0, 2, 6, 4), (1, 3, 7, 5))


def _field_quads(o, most: int = 40) -> np.ndarray:
    """A height field's grid cells as quads (k, 4, 3) [m] (at most ``most`` cells a side)."""
    from tensegrity_engine.model.surface import heightfield_grid
    P = heightfield_grid(o, most)
    return np.stack([P[:-1, :-1], P[:-1, 1:], P[1:, 1:], P[1:, :-1]], -2).reshape(-1, 4, 3)


def draw_obstacles(ax, model, centre, half) -> list:
    """The model's obstacles on a 3D axis whose view is the cube ``centre`` ± ``half`` [m]: a plane as a
    translucent square across the view, a box as its translucent faces, a height field as its grid. Returns the faces drawn, per
    obstacle ((k, 4, 3) arrays, m)."""
    drawn = []
    for o in getattr(model, "obstacles", ()):
        c, R, h = o.frame()
        if o.type == "plane":
            n = R[:, 2]
            foot = centre - float(n @ (centre - c)) * n          # the view centre dropped onto the plane
            corners = [foot + half * (a * R[:, 0] + b * R[:, 1]) for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1))]
            faces = [corners]
        elif o.type == "heightfield":
            faces = _field_quads(o)
        else:
            signs = np.array([[i >> 2 & 1, i >> 1 & 1, i & 1] for i in range(8)]) * 2.0 - 1.0
            pts = c + (signs * h) @ R.T
            faces = [[pts[i] for i in f] for f in _BOX_FACES]
        ax.add_collection3d(Poly3DCollection(faces, facecolors=(0.55, 0.45, 0.35, 0.25),
                                             edgecolors=(0.4, 0.3, 0.2, 0.5), linewidths=0.5))
        drawn.append(np.asarray(faces, float))
    return drawn


def plot_snapshot(traj, model, path, times=None) -> Path:
    """3D views of the structure at a few times [s] (default: 4 evenly spaced; nearest samples are used).

    Bars are thick black lines, strings thin lines coloured by tension [N] (slack strings light grey,
    dashed), physical nodes dots, model frames small x/y/z triads (red/green/blue), obstacles translucent.
    """
    _check(traj, model)
    idx = _snapshot_indices(traj.t, times)
    ncols = min(len(idx), 4)
    nrows = -(-len(idx) // ncols)
    fig = new_figure(0.9 * FIG_WIDTH / ncols * nrows + 0.8, layout=None)   # constrained layout clips 3D labels
    fig.subplots_adjust(left=0.02, right=0.86, bottom=0.04, top=0.88 if nrows == 1 else 0.93,
                        wspace=0.25, hspace=0.15)
    X = traj.nodes[idx]                                              # (m, n, 3)
    mu = traj.n_physical
    lo, hi = X[:, :mu].reshape(-1, 3).min(axis=0), X[:, :mu].reshape(-1, 3).max(axis=0)
    centre, half = (lo + hi) / 2, max(float((hi - lo).max()) / 2, 1e-3) * 1.05
    T_seg = traj.tensions[idx][:, traj.segment_string] if len(traj.strings) else np.zeros((len(idx), 0))
    norm = Normalize(0.0, max(float(T_seg.max(initial=0.0)), 1e-9))
    cmap = colormaps["viridis"]
    frames = model_frames(model, X)
    axes = []
    for k, i in enumerate(idx):
        ax = fig.add_subplot(nrows, ncols, k + 1, projection="3d")
        axes.append(ax)
        Xi = X[k]
        if len(traj.strings):
            seg = Xi[traj.strings]                                     # (sigma_s, 2, 3)
            taut = T_seg[k] > 0
            colors = np.where(taut[:, None], cmap(norm(T_seg[k])), (0.75, 0.75, 0.75, 1.0))
            ax.add_collection3d(Line3DCollection(seg, colors=colors, linewidths=1.2,
                                                 linestyles=["-" if s else "--" for s in taut]))
        if len(traj.bars):
            ax.add_collection3d(Line3DCollection(Xi[traj.bars], colors="k", linewidths=3.5))
        ax.scatter(*Xi[:mu].T, s=6, color="k", depthshade=False)
        draw_obstacles(ax, model, centre, half)
        L = 0.15 * half
        for C in frames.values():
            o = C[k, :3, 3]
            for c, col in enumerate(("r", "g", "b")):
                e = o + L * C[k, :3, c]
                ax.plot(*np.stack([o, e]).T, color=col, lw=1.5)
        ax.set_xlim(centre[0] - half, centre[0] + half)
        ax.set_ylim(centre[1] - half, centre[1] + half)
        ax.set_zlim(centre[2] - half, centre[2] + half)
        ax.set_box_aspect((1, 1, 1))
        ax.set_xlabel("x [m]", fontsize="small")
        ax.set_ylabel("y [m]", fontsize="small")
        ax.set_zlabel("z [m]", fontsize="small", labelpad=2)
        ax.tick_params(labelsize="x-small")
        ax.set_title(f"t = {traj.t[i]:.3g} s")
    if len(traj.strings):
        fig.colorbar(ScalarMappable(norm, cmap), cax=fig.add_axes((0.92, 0.2, 0.015, 0.55)),
                     label="string tension [N]")
    fig.suptitle(_title(traj, model, "snapshots (bars black, strings by tension, slack dashed)"))
    return save_figure(fig, path)


def plot_all(traj, model, out_dir, compare=None) -> dict:
    """Write all figures into ``out_dir``; returns ``{name: path}`` keyed by file stem.

    Files: ``plates.png`` (``frames.png`` when the model has no frames C0, C1, C2), ``tensions.png``,
    ``inputs.png``, ``bar_error.png``, ``snapshot.png``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plates = "plates" if has_paper_frames(model) else "frames"
    return {
        plates: plot_plates(traj, model, out / f"{plates}.png", compare=compare),
        "tensions": plot_tensions(traj, model, out / "tensions.png"),
        "inputs": plot_inputs(traj, model, out / "inputs.png"),
        "bar_error": plot_bar_error(traj, out / "bar_error.png"),
        "snapshot": plot_snapshot(traj, model, out / "snapshot.png"),
    }
