"""Figures of a :class:`~tensegrity_mocap.compare.Comparison` (PNG, the engine's plot style; mm, degrees, s).

* ``comparison.png``: each compared frame's position and ZYX angles over time (change from the
  simulation's start), simulation solid, experiment dashed (the manipulator paper's Fig. 6);
* ``deviation.png``: frame position [mm] and orientation [deg] deviation over time;
* ``nodes.png``: every node's position deviation [mm] over time, and a bar chart of the per-node RMS;
* ``nodes_xyz.png``: x, y, z [mm] over time of a few nodes, experiment and simulation.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.lines import Line2D

from tensegrity_engine.frames import euler_zyx, interpolate_frames, rotation_angle
from tensegrity_engine.plots.figures import AXIS_NAMES, EULER_NAMES, new_figure, save_figure


def _inside(result) -> np.ndarray:
    t_sim, t_a = result.simulation.t, result.t_exp
    return (t_a >= t_sim[0]) & (t_a <= t_sim[-1])


def plot_comparison(result, path, label_exp="experiment", label_sim="simulation") -> Path:
    """``comparison.png``: frame positions and ZYX angles, simulation solid, experiment dashed."""
    names = list(result.frames)
    fig = new_figure(2.5 * len(names) + 0.8)
    axes = fig.subplots(len(names), 2, sharex=True, squeeze=False)
    for r, name in enumerate(names):
        axp, axa = axes[r]
        Cs, Ce = result.sim_frames[name], result.exp_frames[name]
        pos0 = Cs[0, :3, 3] * 1e3
        ang0 = np.degrees(euler_zyx(Cs[:1], unwrap=True))[0]
        for t, C, style in ((result.simulation.t, Cs, "-"), (result.t_exp, Ce, "--")):
            pos = C[:, :3, 3] * 1e3 - pos0
            ang = np.degrees(euler_zyx(C, unwrap=True)) - ang0
            for c in range(3):
                axp.plot(t, pos[:, c], color=f"C{c}", ls=style, lw=1.3)
                axa.plot(t, ang[:, c], color=f"C{c}", ls=style, lw=1.3)
        axp.set(title=f"{name}: position change", ylabel="position − start [mm]")
        axa.set(title=f"{name}: ZYX angle change", ylabel="angle − start [deg]")
        for ax, comps, off, unit in ((axp, AXIS_NAMES, pos0, "mm"), (axa, EULER_NAMES, ang0, "°")):
            ax.grid(True, alpha=0.4)
            handles = [Line2D([], [], color=f"C{c}", label=f"{comps[c]} (start {off[c] + 0.0:.1f} {unit})")
                       for c in range(3)]
            handles += [Line2D([], [], color="0.3", ls="-", label=label_sim),
                        Line2D([], [], color="0.3", ls="--", label=label_exp)]
            ax.legend(handles=handles, fontsize="x-small", ncol=2)
    for ax in axes[-1]:
        ax.set_xlabel("time [s]")
    fig.suptitle(f"{result.model.name}: frames, {label_sim} (solid) vs {label_exp} (dashed)")
    return save_figure(fig, path)


def plot_deviation(result, path) -> Path:
    """``deviation.png``: position deviation [mm] and orientation deviation [deg] over time per frame."""
    t_sim, t_a = result.simulation.t, result.t_exp
    inside = _inside(result)
    fig = new_figure(4.2)
    axp, axa = fig.subplots(1, 2, sharex=True)
    for c, name in enumerate(result.frames):
        Ce = result.exp_frames[name][inside]
        Cs = interpolate_frames(t_sim, result.sim_frames[name], t_a[inside])
        dp = np.linalg.norm(Ce[:, :3, 3] - Cs[:, :3, 3], axis=-1) * 1e3
        da = np.degrees(rotation_angle(Ce, Cs))
        axp.plot(t_a[inside], dp, color=f"C{c}", lw=1.2, label=name)
        axa.plot(t_a[inside], da, color=f"C{c}", lw=1.2, label=name)
    axp.set(xlabel="time [s]", ylabel="position deviation [mm]", title="|r_exp − r_sim|")
    axa.set(xlabel="time [s]", ylabel="orientation deviation [deg]", title="angle of R_exp^T R_sim")
    for ax in (axp, axa):
        ax.grid(True, alpha=0.4)
        ax.legend(fontsize="small")
    fig.suptitle(f"{result.model.name}: experiment vs simulation (offset {result.time_offset:+.3f} s)")
    return save_figure(fig, path)


def plot_nodes(result, path) -> Path:
    """``nodes.png``: per-node deviation [mm] over time (left) and the per-node RMS [mm] (right)."""
    names = list(result.nodes["per_node"])
    D = result.node_dev * 1e3
    t = result.t_exp
    fig = new_figure(4.6)
    axt, axb = fig.subplots(1, 2, width_ratios=(3, 2))
    for k, n in enumerate(names):
        axt.plot(t, D[:, k], lw=1.0, color=f"C{k % 10}", ls="-" if k < 10 else "--", label=n)
    axt.set(xlabel="time [s]", ylabel="|x_exp − x_sim| [mm]", title="node position deviation")
    axt.grid(True, alpha=0.4)
    if len(names) <= 24:
        axt.legend(fontsize="x-small", ncol=2 if len(names) > 12 else 1)
    rms = [np.nan if d["rms_mm"] is None else d["rms_mm"] for d in result.nodes["per_node"].values()]
    axb.bar(np.arange(len(names)), rms, color="C0")
    axb.set_xticks(np.arange(len(names)), names, rotation=90 if len(names) > 8 else 0, fontsize="small")
    if result.nodes["rms_mm"] is not None:
        axb.axhline(result.nodes["rms_mm"], color="C3", ls="--", label=f"all nodes {result.nodes['rms_mm']:.3g} mm")
        axb.legend(fontsize="small")
    axb.set(ylabel="RMS deviation [mm]", title="per-node RMS")
    axb.grid(True, axis="y", alpha=0.4)
    fig.suptitle(f"{result.model.name}: nodes, experiment vs simulation (offset {result.time_offset:+.3f} s)")
    return save_figure(fig, path)


def plot_node_xyz(result, path, nodes=None) -> Path:
    """``nodes_xyz.png``: x, y, z [mm] of ``nodes`` (names; default the three with the largest RMS)."""
    per = result.nodes["per_node"]
    if not nodes:
        ranked = sorted((d["rms_mm"], n) for n, d in per.items() if d["rms_mm"] is not None)
        nodes = [n for _, n in ranked[::-1][:3]] or list(per)[:1]
    names = list(result.model.node_names)
    fig = new_figure(2.3 * len(nodes) + 0.8)
    axes = fig.subplots(len(nodes), 3, sharex=True, squeeze=False)
    for r, n in enumerate(nodes):
        k = names.index(n)
        for c in range(3):
            ax = axes[r, c]
            ax.plot(result.simulation.t, result.sim_positions[:, k, c] * 1e3, color="C0", lw=1.3,
                    label="simulation")
            ax.plot(result.t_exp, result.experiment.nodes[:, k, c] * 1e3, color="C1", ls="--", lw=1.2,
                    label="experiment")
            ax.set_title(f"{n}: {AXIS_NAMES[c]}" + (f" (RMS {per[n]['rms_mm']:.3g} mm)" if c == 0 and per[n]["rms_mm"]
                                              is not None else ""), fontsize="small")
            ax.grid(True, alpha=0.4)
            if c == 0:
                ax.set_ylabel("position [mm]")
    axes[0, 0].legend(fontsize="x-small")
    for ax in axes[-1]:
        ax.set_xlabel("time [s]")
    fig.suptitle(f"{result.model.name}: node positions (world frame)")
    return save_figure(fig, path)
