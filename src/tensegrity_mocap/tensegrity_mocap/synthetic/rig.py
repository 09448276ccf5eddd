"""A synthetic take of a six-bar rig held in a base above the capture's floor (issue #35: a lab rig clamped in a
base 0.27 m up, its free part swaying under a load); no ROS. Positions in metres, z up, times in seconds.

The hand-built six-bar (:func:`~tensegrity_mocap.synthetic.capture.six_bar_robot`) is tilted by ``tilt`` rad
about x (a base holds it in any attitude: it no longer rests on a face) and lifted so its lowest node is
``height`` m above the floor; the ``clamped`` bars never move; every other bar turns about its centre by a small angle
(its ends by up to ``sway`` m, at 1.37 ``frequency``, bar lengths exact) and the free part drifts sideways by
``sway`` at ``frequency`` Hz (a hung weight swinging). Markers sit on the bar ends, unlabeled ("Unlabeled 1001" is
node n1's marker, never renamed: no occlusions), with Gaussian noise; the whole take is then turned about
the vertical by ``yaw`` and shifted by ``shift`` (the capture's frame is not the robot's).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tensegrity_mocap.axes import z_up_to_y_up
from tensegrity_mocap.motive import write_motive_csv
from tensegrity_mocap.synthetic import motion as sm

__all__ = ["RigTake", "clamped_rig_take", "write_rig_take"]

#: bars of the seed-4 six-bar lying lowest (mean end height 0.44 m above its lowest node vs 0.62 m for the
#: others): clamped together they hold the rest within 1.4 mm under gravity (a single clamped bar does not:
#: the prestress alone stiffens the other bars' mechanisms, and they sag 0.4 m)
CLAMPED = (1, 3)


@dataclass
class RigTake:
    t: np.ndarray              # (T,) s
    nodes: np.ndarray          # (T, 12, 3) true bar ends, capture frame, z up [m]
    markers: dict              # "Unlabeled 10<k>" -> (T, 3) observed, z up [m]
    bars: list                 # [(marker, marker)] per bar
    strings: list              # [(marker, marker)] per string
    clamped: tuple             # 0-based clamped bar indices
    height: float              # lowest node above the floor [m]


def clamped_rig_take(robot, height: float = 0.27, clamped=CLAMPED, duration: float = 2.0, rate: float = 120.0,
                     noise: float = 0.0003, sway: float = 0.004, frequency: float = 1.5, yaw: float = 0.6,
                     shift=(0.8, -0.3), tilt: float = 0.35, seed: int = 0) -> RigTake:
    """The take (module docstring) of ``robot`` (a SyntheticRobot); ``sway=0``: the rig stands still."""
    rng = np.random.default_rng([seed, 35])
    ct, st = np.cos(tilt), np.sin(tilt)
    P = np.asarray(robot.positions, float) @ np.array([[1.0, 0.0, 0.0], [0.0, ct, -st], [0.0, st, ct]]).T
    P += [0.0, 0.0, float(height) - P[:, 2].min()]
    bars = np.asarray(robot.bars, int)
    t = np.arange(max(int(round(duration * rate)), 3)) / float(rate)
    X = np.repeat(P[None], len(t), axis=0)
    free = [k for k in range(len(bars)) if k not in set(clamped)]
    c = P[bars[free]].mean(axis=1)                                       # (F, 3) free bar centres
    half = P[bars[free, 1]] - c
    amp = float(sway) / np.linalg.norm(half, axis=1).min()
    R = sm.bar_rotations(t, half, rng, amplitude=(0.5 * amp, amp), frequency=(1.37 * frequency, 1.37 * frequency))
    drift = float(sway) * np.sin(2.0 * np.pi * frequency * t)[:, None] * np.array([0.8, 0.6, 0.0])
    for f, k in enumerate(free):
        for e, s in ((1, 1.0), (0, -1.0)):
            X[:, bars[k, e]] = c[f] + s * np.einsum("tij,j->ti", R[:, f], half[f]) + drift
    cz, sz = np.cos(yaw), np.sin(yaw)
    Rz = np.array([[cz, -sz, 0.0], [sz, cz, 0.0], [0.0, 0.0, 1.0]])
    X = X @ Rz.T + [shift[0], shift[1], 0.0]
    obs = X + rng.normal(0.0, noise, X.shape) if noise > 0 else X.copy()
    names = [f"Unlabeled {1001 + i}" for i in range(X.shape[1])]
    return RigTake(t, X, {nm: obs[:, i] for i, nm in enumerate(names)},
                   [(names[i], names[j]) for i, j in bars], [(names[i], names[j]) for i, j in robot.strings],
                   tuple(int(k) for k in clamped), float(height))


def write_rig_take(take: RigTake, path, rate: float = 120.0) -> list:
    """The take as a Motive CSV (Y-up) at ``path`` and its bar and string lists (``<stem>.bars.txt``,
    ``<stem>.strings.txt``); returns the paths."""
    from pathlib import Path
    out = write_motive_csv(path, take.t, {}, {nm: z_up_to_y_up(x) for nm, x in take.markers.items()},
                           frame_rate=rate, take_name="synthetic clamped rig")
    stem = Path(out).with_suffix("")
    written = [Path(out)]
    for kind, pairs in (("bars", take.bars), ("strings", take.strings)):
        p = Path(f"{stem}.{kind}.txt")
        p.write_text(f"# {kind} of the synthetic clamped rig, by marker name (tensegrity-mocap model --{kind})\n"
                     + "".join(f"{a} - {b}\n" for a, b in pairs))
        written.append(p)
    return written
