"""Figure of a reachable workspace (:class:`tensegrity_engine.control.workspace.Workspace`): the frame's
origins projected on the xy, xz and yz planes, and the spread of its orientation relative to the u = 0 pose
(ZYX Euler angles), feasible samples apart from infeasible ones (a slack string or no equilibrium).
Positions in mm, angles in degrees."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from tensegrity_engine.plots.figures import EULER_NAMES, new_figure, save_figure

_PLANES = ((0, 1), (0, 2), (1, 2))
_AXES = ("x", "y", "z")


def _scatter(ax, a, b, feasible):
    if feasible.any():
        ax.scatter(a[feasible], b[feasible], s=6, color="tab:blue", label="feasible")
    if (~feasible).any():
        ax.scatter(a[~feasible], b[~feasible], s=14, marker="x", color="tab:red", label="slack or not settled")


def plot_workspace(ws, path) -> Path:
    """Write the workspace figure (PNG) to ``path`` and return the path."""
    fig = new_figure(8.0)
    axes = fig.subplots(2, 2)
    r = ws.poses[:, :3, 3] * 1e3
    home = ws.home[:3, 3] * 1e3
    for ax, (i, j) in zip(axes.flat[:3], _PLANES):
        _scatter(ax, r[:, i], r[:, j], ws.feasible)
        ax.plot(home[i], home[j], "k+", ms=12, mew=2, label="u = 0")
        ax.set_xlabel(f"{_AXES[i]} [mm]")
        ax.set_ylabel(f"{_AXES[j]} [mm]")
        ax.set_aspect("equal", adjustable="datalim")
        ax.grid(alpha=0.3)
    axes.flat[0].legend(loc="best", fontsize=8)
    ang = np.degrees(ws.relative_angles())
    ax = axes.flat[3]
    for k, name in enumerate(EULER_NAMES):
        ok = ws.feasible
        ax.scatter(np.full(ok.sum(), k) + np.linspace(-0.25, 0.25, ok.sum()), ang[ok, k], s=5, color=f"C{k}")
        ax.scatter(np.full((~ok).sum(), k) + 0.35, ang[~ok, k], s=12, marker="x", color="tab:red")
    ax.set_xticks(range(3), [f"{n}" for n in EULER_NAMES])
    ax.set_ylabel("angle from the u = 0 pose [deg]")
    ax.grid(alpha=0.3)
    fig.suptitle(f"{ws.model_name}: workspace of frame {ws.frame} ({int(ws.feasible.sum())} of {len(ws.feasible)} "
                 f"samples feasible, seed {ws.seed})")
    return save_figure(fig, path)
