"""Animated GIFs of mode shapes: the structure (bars thick, strings thin) oscillating in one elastic mode,
``X(t) = X_eq + a sin(2 pi t / T) phi_k`` (:mod:`tensegrity_engine.statics.mode_shapes`), in a fixed 3-D view over one period.

Frames are drawn with matplotlib's Agg canvas and written with Pillow (matplotlib.animation.PillowWriter);
the defaults (30 frames, 3.6 x 3.6 in at 80 dpi) keep a GIF well under 1 MB.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from tensegrity_engine.statics.mode_shapes import ModeShape, frames

FRAMES = 30
SIZE_IN = 3.6            # figure width and height [in]
DPI = 80
BAR_COLOUR = "tab:orange"
STRING_COLOUR = "tab:blue"


def _limits(P):
    """Equal-aspect cube (centre, half-width) [m] around all frames' nodes P (f, n, 3)."""
    lo, hi = P.reshape(-1, 3).min(axis=0), P.reshape(-1, 3).max(axis=0)
    return 0.5 * (lo + hi), 0.5 * float((hi - lo).max()) * 1.05 or 0.5


def _lines(ax, model, X):
    """Bar and string line artists for node positions X (n, 3)."""
    bars = [ax.plot(*X[[p, q]].T, color=BAR_COLOUR, lw=3.0, solid_capstyle="round")[0] for p, q in model.bars]
    strings = [ax.plot(*X[[s, t]].T, color=STRING_COLOUR, lw=0.9)[0] for s, t in model.segments]
    return bars, strings


def _update(lines, pairs, X):
    for line, (p, q) in zip(lines, pairs):
        line.set_data_3d(*X[[p, q]].T)


def animate_mode(model, X_eq, shape: ModeShape, amplitude: float, path, count: int = FRAMES,
                 fps: float | None = None) -> Path:
    """Write a GIF of ``shape`` oscillating about ``X_eq`` (n, 3) [m] with largest node excursion
    ``amplitude`` [m]: ``count`` frames over one period, played in 2 s unless ``fps`` is given. The grey
    wire is the equilibrium; the title gives the mode number and frequency [Hz]."""
    from matplotlib.animation import FuncAnimation, PillowWriter
    from matplotlib.figure import Figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    P = frames(X_eq, shape, amplitude, count)
    fig = Figure(figsize=(SIZE_IN, SIZE_IN), dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(projection="3d")
    for p, q in np.concatenate([model.bars, model.segments]):
        ax.plot(*np.asarray(X_eq)[[p, q]].T, color="0.8", lw=0.6)
    bars, strings = _lines(ax, model, P[0])
    centre, half = _limits(P)
    for setter, c in zip((ax.set_xlim, ax.set_ylim, ax.set_zlim), centre):
        setter(c - half, c + half)
    ax.set_box_aspect((1, 1, 1))
    ax.set_axis_off()
    ax.view_init(elev=20, azim=-60)
    ax.set_title(f"{model.name}: mode {shape.number}, {shape.frequency_hz:.4g} Hz\n"
                 f"amplitude {1e3 * amplitude:.3g} mm (linear mode)", fontsize=8)
    fig.subplots_adjust(left=0, right=1, bottom=0, top=0.88)

    def draw(j):
        _update(bars, model.bars, P[j])
        _update(strings, model.segments, P[j])
        return bars + strings

    anim = FuncAnimation(fig, draw, frames=count, blit=False)
    path = Path(path)
    anim.save(path, writer=PillowWriter(fps=fps or count / 2.0), dpi=DPI)
    return path


def write_gifs(model, lin, shapes, out, amplitude: float = 0.0) -> list:
    """``mode_<k>.gif`` in directory ``out`` for every :class:`ModeShape` in ``shapes``, oscillating about
    ``lin.positions``; ``amplitude`` [m] <= 0 means :func:`tensegrity_engine.statics.mode_shapes.default_amplitude`. Returns the
    file names."""
    from tensegrity_engine.statics.mode_shapes import default_amplitude
    a = amplitude if amplitude > 0 else default_amplitude(model)
    names = []
    for s in shapes:
        animate_mode(model, lin.positions, s, a, Path(out) / f"mode_{s.number}.gif")
        names.append(f"mode_{s.number}.gif")
    return names
