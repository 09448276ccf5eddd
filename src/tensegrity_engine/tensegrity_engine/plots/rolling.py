"""The ground track of rolling runs (:mod:`tensegrity_engine.locomotion`): the centre of mass seen from above,
one panel per robot, one line per commanded heading with the command drawn as an arrow
(:func:`plot_com_paths`); one run's path with its command, faces and clearances over time
(:func:`plot_rolling_run`, the bringup's rolling report)."""
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


def plot_rolling_run(path, t, com, clearance, face_times=(), heading=None, goal=None, monitor=None, title=""):
    """PNG [path] of one rolling run. Left: the centre of mass ``com`` (T, 3) [m] over the ground, the start,
    the end, where each new face was reached (``face_times`` [s]), the commanded ``heading`` [rad] as a line
    from the start or the ``goal`` (x, y) [m]. Right: the bar-bar ``clearance`` (T,) [m] over ``t`` (T,) [s],
    the faces' times and, if given, the collision monitor's ``monitor`` [(t [s], clearance [m])]."""
    t, xy = np.asarray(t, float), np.asarray(com, float)[:, :2]
    fig = new_figure(4.4)
    ax, axc = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.1, 1.0]})
    ax.plot(xy[:, 0], xy[:, 1], lw=1.4, color="C0", label="centre of mass")
    at = np.searchsorted(t, np.asarray(face_times, float)).clip(0, len(t) - 1)
    ax.plot(xy[at, 0], xy[at, 1], "o", ms=4, color="C1", label=f"new face ({len(at)})")
    ax.plot(*xy[0], "ks", ms=5, label="start")
    ax.plot(*xy[-1], "k^", ms=6, label="end")
    points = [xy]
    if heading is not None:
        L = max(float(np.hypot(*(xy[-1] - xy[0]))), 0.5)
        end = xy[0] + L * np.array([np.cos(heading), np.sin(heading)])
        ax.plot([xy[0, 0], end[0]], [xy[0, 1], end[1]], "--", color="C2", lw=1.0,
                label=f"commanded heading {np.degrees(heading):g}°")
        points.append(end[None])
    if goal is not None:
        ax.plot(goal[0], goal[1], "*", ms=12, color="C3", label="goal")
        points.append(np.asarray(goal, float)[None])
    _square_limits(ax, np.vstack(points))
    ax.set(xlabel="x [m]", ylabel="y [m]", title="path over the ground (from above)")
    ax.set_aspect("equal")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    axc.plot(t, 1e3 * np.asarray(clearance, float), lw=1.2, color="C0", label="bar-bar (from node_positions)")
    if monitor:
        axc.plot([a for a, _ in monitor], [1e3 * c for _, c in monitor], "--", lw=1.0, color="C3",
                 label="collision monitor (bars and strings)")
    for k, ft in enumerate(face_times):
        axc.axvline(ft, color="C1", lw=0.8, alpha=0.5, label="new face" if k == 0 else None)
    axc.axhline(0.0, color="k", lw=0.8)
    axc.set(xlabel="time [s]", ylabel="smallest clearance [mm]", title="clearances")
    axc.grid(alpha=0.3)
    axc.legend(fontsize=7, loc="best")
    if title:
        fig.suptitle(title, fontsize=10)
    return save_figure(fig, path)


def _square_limits(ax, points, margin: float = 0.15):
    """Equal x and y spans around ``points`` (K, 2) [m], at least 1 m, so the path keeps its shape."""
    lo, hi = points.min(axis=0), points.max(axis=0)
    half = max(float(np.max(hi - lo)) / 2 * (1 + margin), 0.5)
    mid = (lo + hi) / 2
    ax.set_xlim(mid[0] - half, mid[0] + half)
    ax.set_ylim(mid[1] - half, mid[1] + half)
