"""Bar-bar clearance of a rolling robot: the smallest surface gap between two bar capsules (radius
``model.bar_radius``) that share no node, from :func:`tensegrity_engine.collision.capsules.check`. A gait must
keep it >= 0 (a real robot's bars cannot pass through each other)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from tensegrity_engine.collision.capsules import check, model_elements, pair_names


class BarClearance:
    """Bar-bar clearances of ``model`` at node positions X (n, 3) [m]; ``min(X)`` the smallest [m],
    ``worst(X)`` (clearance [m], bar a, bar b)."""

    def __init__(self, model):
        full = model_elements(model)
        bars = (full.kind[full.pair_i] == 0) & (full.kind[full.pair_j] == 0)
        self.elements = replace(full, pair_i=full.pair_i[bars], pair_j=full.pair_j[bars],
                                radius_sum=full.radius_sum[bars])

    def min(self, X) -> float:
        """[m] smallest bar-bar clearance at X (inf for a robot with fewer than two disjoint bars)."""
        return check(self.elements, np.asarray(X, float)).min_clearance

    def rows(self, X, dX, floor: float, near: float) -> tuple:
        """Linear program rows (A (k, alpha), b (k,)) keeping to first order every bar pair nearer than ``near``
        [m] at X (n, 3) [m] at least ``floor`` [m] apart (``A du <= b``; a pair already nearer may not come
        nearer), given the node motion per input dX (n, 3, alpha) [m/m]: the clearance's gradient at its
        closest points (s, t held: the envelope theorem)."""
        c = check(self.elements, np.asarray(X, float))
        k = np.flatnonzero(c.clearance < near)
        e = self.elements
        (a0, a1), (b0, b1) = e.ends[e.pair_i[k]].T, e.ends[e.pair_j[k]].T
        pa, pb = c.points(e, X, k)
        n = (pa - pb) / np.maximum(np.linalg.norm(pa - pb, axis=1), 1e-12)[:, None]
        s, t = c.s[k, None, None], c.t[k, None, None]
        moved = (1 - s) * dX[a0] + s * dX[a1] - (1 - t) * dX[b0] - t * dX[b1]        # (k, 3, alpha)
        return -np.einsum("kd,kda->ka", n, moved), np.maximum(c.clearance[k] - floor, 0.0)

    def worst(self, X) -> tuple:
        """(clearance [m], bar name, bar name) of the closest pair at X."""
        c = check(self.elements, np.asarray(X, float))
        return (c.min_clearance, *pair_names(self.elements, c.argmin)) if len(c.distance) else (np.inf, "", "")
