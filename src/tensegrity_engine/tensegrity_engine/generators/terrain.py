"""Random terrain for locomotion tests and benchmarks: obstacles (ObstacleSpec, :mod:`~tensegrity_engine.model.world`)
to add to a model with :func:`~tensegrity_engine.model.load.with_obstacles`. Reproducible per seed.

* :func:`box_field` — n boxes lying on the ground (z = 0) at random places, sizes and yaws: steps up to
  ``max_height`` [m] tall;
* :func:`rough_ground` — a height field of smooth random bumps between 0 and ``amplitude`` [m] above z = 0
  (a sum of random waves no shorter than ``wavelength``), optionally flat near a start point.

Both leave the ground plane to the caller (add ``plane("ground")`` too: a robot leaving the terrain's
footprint falls onto it). Example, 20 steps of at most 5 cm between 0.5 and 3 m ahead of the robot::

    from tensegrity_engine.generators.terrain import box_field
    from tensegrity_engine.model.load import with_obstacles
    robot = with_obstacles(robot, *box_field(seed=3, n=20, max_height=0.05, region=((0.5, -1.0), (3.0, 1.0))))
"""
from __future__ import annotations

import numpy as np

from tensegrity_engine.model.world import ObstacleSpec


def box_field(seed: int, n: int = 20, max_height: float = 0.05, region=((0.5, -1.0), (3.0, 1.0)),
              size_range=(0.1, 0.4), min_height: float = 0.01, friction: float = 0.8,
              prefix: str = "box") -> list:
    """n boxes standing on z = 0 with centres uniform in ``region`` ((x_min, y_min), (x_max, y_max)) [m],
    footprints of sides uniform in ``size_range`` [m], heights uniform in [min_height, max_height] [m] and
    yaws uniform in [0, π); named ``{prefix}0`` ... (they may overlap: a pile is still a valid obstacle)."""
    if not (0 < min_height <= max_height and 0 < size_range[0] <= size_range[1] and n >= 0):
        raise ValueError("box_field: need 0 < min_height <= max_height, 0 < size_range[0] <= size_range[1], n >= 0")
    rng = np.random.default_rng(seed)
    (x0, y0), (x1, y1) = region
    out = []
    for k in range(int(n)):
        lx, ly = rng.uniform(*size_range, 2)
        h = rng.uniform(min_height, max_height)
        cx, cy = rng.uniform(x0, x1), rng.uniform(y0, y1)
        out.append(ObstacleSpec(f"{prefix}{k}", "box", centre=(float(cx), float(cy), 0.5 * float(h)),
                                size=(float(lx), float(ly), float(h)), rpy=(0.0, 0.0, float(rng.uniform(0, np.pi))),
                                friction=friction))
    return out


def rough_ground(seed: int, size=(4.0, 4.0), amplitude: float = 0.03, cell: float = 0.05,
                 origin=(-1.0, -2.0), wavelength: float = 0.5, flat_at=None, flat_radius: float = 0.0,
                 friction: float = 0.8, name: str = "rough") -> ObstacleSpec:
    """A height field ``size`` (x, y) [m] wide from ``origin`` (x, y) [m], grid ``cell`` [m], heights in
    [0, amplitude] [m] (a sum of 12 random plane waves of wavelengths in [wavelength, 4 wavelength], scaled
    to that range); within ``flat_radius`` [m] of ``flat_at`` (x, y) the ground is flat at 0 (a start pad,
    blended over one wavelength)."""
    if not (amplitude >= 0 and cell > 0 and wavelength > 0 and size[0] >= cell and size[1] >= cell):
        raise ValueError("rough_ground: need amplitude >= 0, cell > 0, wavelength > 0, size >= cell")
    rng = np.random.default_rng(seed)
    xs = origin[0] + cell * np.arange(int(round(size[0] / cell)) + 1)
    ys = origin[1] + cell * np.arange(int(round(size[1] / cell)) + 1)
    X, Y = np.meshgrid(xs, ys)                      # rows along y
    f = np.zeros_like(X)
    for _ in range(12):
        k = 2 * np.pi / rng.uniform(wavelength, 4 * wavelength)
        a = rng.uniform(0, 2 * np.pi)
        f += np.cos(k * (np.cos(a) * X + np.sin(a) * Y) + rng.uniform(0, 2 * np.pi))
    span = f.max() - f.min()
    z = amplitude * (f - f.min()) / span if span > 0 else np.zeros_like(f)
    if flat_at is not None and flat_radius > 0:
        r = np.hypot(X - flat_at[0], Y - flat_at[1])
        z *= np.clip((r - flat_radius) / wavelength, 0.0, 1.0)
    return ObstacleSpec(name, "heightfield", origin=(float(origin[0]), float(origin[1]), 0.0), cell=(cell, cell),
                        heights=tuple(tuple(float(v) for v in row) for row in z), friction=friction)
