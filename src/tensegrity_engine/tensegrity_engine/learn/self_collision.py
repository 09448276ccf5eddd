"""Self-collision of the learning environments' robots from the exact capsule clearances
(:mod:`tensegrity_engine.collision.capsules`: bars and strings as capsules, pairs sharing a node skipped).
The physics lets a bar pass through a string; the real robot cannot, so an environment can penalise or end
an episode whose robot's smallest clearance falls below a margin."""
from __future__ import annotations

import math

import numpy as np

from tensegrity_engine.collision.capsules import model_elements, sweep_pairs_pruned

SELF_COLLISION_MODES = (None, "penalty", "terminate")


class SelfCollision:
    """Smallest capsule clearance [m] of each robot of ``model`` (certified pruning: exact for the smallest
    pair, the others bounded). ``mode``: None (off), ``"penalty"`` (reward − ``penalty`` × (``margin`` −
    clearance) [reward units per m] while the clearance is below ``margin`` [m]) or ``"terminate"`` (the
    episode ends when it is)."""

    def __init__(self, model, mode=None, margin: float = 0.0, penalty: float = 10.0):
        if mode not in SELF_COLLISION_MODES:
            raise ValueError(f"self_collision must be one of {SELF_COLLISION_MODES}, got {mode!r}")
        if not (math.isfinite(margin) and math.isfinite(penalty) and penalty >= 0):
            raise ValueError(f"collision_margin [m] must be finite and collision_penalty [1/m] finite >= 0, "
                             f"got {margin}, {penalty}")
        self.mode, self.margin, self.penalty = mode, float(margin), float(penalty)
        self.elements = e = model_elements(model)
        m, E = len(e.pair_i), len(e.ends)
        self._radius = np.ascontiguousarray(e.radius, dtype=float)
        self._work = (np.empty((E, 3)), np.empty(E), np.empty(m), np.empty(m), np.empty(m), np.empty(m),
                      np.empty(m, np.int64))

    def clearances(self, X) -> np.ndarray:
        """(N,) each robot's smallest clearance [m] (negative: overlap) at node positions X (N, n, 3) [m]."""
        e, (cen, half, d, s, t, c, exact) = self.elements, self._work
        out = np.full(len(X), math.inf)
        if not len(e.pair_i):
            return out
        for i in range(len(X)):
            sweep_pairs_pruned(np.ascontiguousarray(X[i]), e.ends, self._radius, e.pair_i, e.pair_j, self.margin,
                               cen, half, d, s, t, c, exact)
            out[i] = c.min()
        return out

    def judge(self, X, rewards) -> tuple:
        """(clearances (N,) [m], rewards after the penalty, robots whose episode ends (N,) bool)."""
        clear = self.clearances(X)
        below = clear < self.margin
        if self.mode == "penalty":
            rewards = rewards - np.where(below, self.penalty * (self.margin - clear), 0.0)
        return clear, rewards, below if self.mode == "terminate" else np.zeros(len(X), bool)
