"""How the suite draws a robot, shared by the RViz markers (tensegrity_sim.markers) and the Foxglove live view
(tensegrity_live.scene): colours, the tension colour map, cylinder orientations and which bars are a plate's
(pure NumPy; no ROS message types)."""
from __future__ import annotations

import numpy as np

BAR_COLOUR = (0.80, 0.45, 0.10, 1.0)        # aluminium tubes drawn orange for contrast
PLATE_BAR_COLOUR = (0.35, 0.35, 0.40, 1.0)
NODE_COLOUR = (0.10, 0.10, 0.10, 1.0)
PLATE_COLOUR = (0.30, 0.50, 0.80, 0.35)
SLACK_GREY = (0.55, 0.55, 0.55)             # slack strings (RGB; each view picks its alpha)
MIN_LINE_WIDTH = 0.004                      # m: strings are 1-2 mm thick; thinner lines vanish
# tension colour map: (fraction of the scale, RGB)
TENSION_MAP = ((0.0, (0.0, 0.0, 1.0)), (0.5, (0.0, 1.0, 0.0)), (1.0, (1.0, 0.0, 0.0)))


def tension_colours(tension, scale: float, slack_alpha: float = 1.0) -> np.ndarray:
    """RGBA (k, 4) of string tensions [N]: blue (0 N) -> green (scale / 2) -> red (>= ``scale`` [N]); slack
    strings (tension <= 0, or not finite) SLACK_GREY with alpha ``slack_alpha``."""
    t = np.asarray(tension, float).ravel()
    x = np.clip(np.nan_to_num(t / max(float(scale), 1e-9), nan=0.0), 0.0, 1.0)
    at = [f for f, _ in TENSION_MAP]
    rgba = np.ones((len(t), 4))
    for c in range(3):
        rgba[:, c] = np.interp(x, at, [rgb[c] for _, rgb in TENSION_MAP])
    with np.errstate(invalid="ignore"):
        rgba[~(t > 0)] = SLACK_GREY + (float(slack_alpha),)
    return rgba


def rotation_quaternions(axis, directions) -> np.ndarray:
    """Unit quaternions (x, y, z, w) (k, 4) turning the unit vector ``axis`` (3,) onto each unit direction
    (k, 3) along the shortest arc; for a direction opposite to ``axis``, a half turn about an axis normal to it.
    With axis +z: the orientation of a cylinder along each direction."""
    a = np.asarray(axis, float)
    d = np.asarray(directions, float).reshape(-1, 3)
    q = np.concatenate([np.cross(a, d), (1.0 + d @ a)[:, None]], axis=1)
    norm = np.linalg.norm(q, axis=1)
    opposite = norm < 1e-9
    if np.any(opposite):
        normal = np.cross(a, [1.0, 0.0, 0.0] if abs(a[0]) < 0.9 else [0.0, 1.0, 0.0])
        q[opposite] = np.r_[normal / np.linalg.norm(normal), 0.0]
        norm[opposite] = 1.0
    return q / norm[:, None]


def plate_bar_mask(model) -> np.ndarray:
    """(beta,) True for bars whose two ends are nodes of one model frame (a plate's virtual bars)."""
    phys = model.physical_index
    mask = np.zeros(len(model.bar_names), bool)
    for nodes in model.frame_nodes:
        on_plate = np.isin(phys[model.bars], phys[np.asarray(nodes)])
        mask |= on_plate.all(axis=1)
    return mask
