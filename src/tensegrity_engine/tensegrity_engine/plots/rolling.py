"""The ground track of rolling runs (:mod:`tensegrity_engine.locomotion`): the centre of mass seen from above,
one panel per robot, one line per commanded heading with the command drawn as an arrow."""
from __future__ import annotations

import numpy as np

from tensegrity_engine.plots.figures import new_figure, save_figure


def plot_com_paths(panels: dict, path, title: str = "rolling: centre of mass from above"):
    """PNG [path] of centre-of-mass tracks: ``panels`` maps a panel title to a list of (label, heading [rad],
    com (T, 3) [m]) tracks, each drawn from its start shifted to the origin. Returns the path."""
    fig = new_figure(4.2)
    axes = fig.subplots(1, max(len(panels), 1), squeeze=False)[0]
    for ax, (name, tracks) in zip(axes, panels.items()):
        reach = 0.5
        for k, (label, heading, com) in enumerate(tracks):
            xy = np.asarray(com, float)[:, :2] - np.asarray(com, float)[0, :2]
            line, = ax.plot(xy[:, 0], xy[:, 1], lw=1.4, label=label)
            L = max(float(np.hypot(*xy[-1])), 0.5)
            ax.annotate("", xy=(L * np.cos(heading), L * np.sin(heading)), xytext=(0, 0),
                        arrowprops={"arrowstyle": "->", "color": line.get_color(), "lw": 0.8, "ls": "--"})
            reach = max(reach, float(np.abs(xy).max()), L)
        ax.plot([0], [0], "ko", ms=4)
        ax.set_xlim(-1.1 * reach, 1.1 * reach)
        ax.set_ylim(-1.1 * reach, 1.1 * reach)
        ax.set_aspect("equal")
        ax.grid(alpha=0.3)
        ax.set_xlabel("x [m]")
        ax.set_ylabel("y [m]")
        ax.set_title(name, fontsize=9)
        ax.legend(fontsize=7, loc="best")
    fig.suptitle(title, fontsize=10)
    return save_figure(fig, path)
