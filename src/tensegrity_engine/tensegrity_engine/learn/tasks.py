"""What the learning environments ask of a robot: the task's observations beyond the robot's own state and
its reward per control step (NumPy over all robots at once; no gymnasium here).

* :class:`RollingTask`: roll along a commanded heading; reward = the centre of mass's mean velocity along
  the heading over the control step [m/s] (so the return times the control period is the distance rolled
  that way [m]).
* :class:`ReachTask`: bring a plate frame to a target pose; reward = −(position error [m] + ``angle_weight``
  [m/rad] × angle error [rad]) of the frame after the control step.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from tensegrity_engine.frames import model_frames, rotation_angle


@functools.lru_cache(maxsize=8)
def mass_shares(model) -> np.ndarray:
    """(n,) each node's share of the total mass (the lumped masses: row sums of the mass matrix)."""
    m = np.asarray(model.mass_matrix).sum(axis=1)
    return m / m.sum()


def centre_of_mass(model, X) -> np.ndarray:
    """(..., 3) [m] centre of mass of node positions X (..., n, 3) with the model's lumped node masses."""
    return mass_shares(model) @ X


class RollingTask:
    """Roll along a heading [rad] in the world xy-plane (0 = +x, counter-clockwise): a fixed one, or None for
    a heading drawn uniformly per episode. Extra observations: (cos, sin) of the heading."""
    name = "rolling"
    extra_size = 2

    def __init__(self, model, n: int, heading: float | None = 0.0):
        if heading is not None and not math.isfinite(heading):
            raise ValueError(f"heading must be a finite angle [rad] or None (random), got {heading}")
        self.model, self.heading = model, heading
        self.headings = np.full(n, 0.0 if heading is None else float(heading))
        self.direction = np.column_stack([np.cos(self.headings), np.sin(self.headings)])   # (n, 2) unit vectors

    def begin(self, i: int, rng, X, options: dict):
        """A new episode for robot ``i`` at positions X: its heading (``options['heading']`` if given)."""
        h = options.get("heading", self.heading)
        self.headings[i] = rng.uniform(-math.pi, math.pi) if h is None else float(h)
        self.direction[i] = math.cos(self.headings[i]), math.sin(self.headings[i])

    def extra(self, X) -> np.ndarray:
        return self.direction

    def reward(self, X_before, X_after, period: float) -> np.ndarray:
        return (self.progress(X_after) - self.progress(X_before)) / period

    def progress(self, X) -> np.ndarray:
        """Per robot, the centre of mass's position along its heading [m] (for distances rolled)."""
        c = centre_of_mass(self.model, X)
        return c[:, 0] * self.direction[:, 0] + c[:, 1] * self.direction[:, 1]


class ReachTask:
    """Bring ``frame`` to a target pose, drawn per episode from ``targets`` (k, 4, 4) world poses. Extra
    observations: the target's position relative to the centre of mass (3), the first two columns of its
    rotation (6), and the frame's position error (3) [m]."""
    name = "reach"
    extra_size = 12

    def __init__(self, model, n: int, frame: str, targets, angle_weight: float = 0.1):
        if frame not in model_frames(model, model.positions):
            raise ValueError(f"model '{model.name}' has no frame '{frame}' (its frames: "
                             f"{', '.join(model_frames(model, model.positions)) or 'none'})")
        self.model, self.frame, self.angle_weight = model, frame, float(angle_weight)
        self.targets = np.asarray(targets, float)
        self.goal = np.repeat(self.targets[:1], n, axis=0)

    def begin(self, i: int, rng, X, options: dict):
        """A new episode for robot ``i``: a target from the pool (``options['target']``, a 4x4 pose, if given)."""
        target = options.get("target")
        self.goal[i] = self.targets[rng.integers(len(self.targets))] if target is None else np.asarray(target, float)

    def pose(self, X) -> np.ndarray:
        return model_frames(self.model, X)[self.frame]

    def errors(self, X) -> tuple:
        """(position error [m], angle error [rad]) per robot."""
        C = self.pose(X)
        return np.linalg.norm(C[:, :3, 3] - self.goal[:, :3, 3], axis=1), rotation_angle(C, self.goal)

    def extra(self, X) -> np.ndarray:
        c = centre_of_mass(self.model, X)
        C = self.pose(X)
        return np.column_stack([self.goal[:, :3, 3] - c, self.goal[:, :3, 0], self.goal[:, :3, 1],
                                self.goal[:, :3, 3] - C[:, :3, 3]])

    def reward(self, X_before, X_after, period: float) -> np.ndarray:
        dp, da = self.errors(X_after)
        return -(dp + self.angle_weight * da)
