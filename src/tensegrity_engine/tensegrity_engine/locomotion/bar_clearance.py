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

    def worst(self, X) -> tuple:
        """(clearance [m], bar name, bar name) of the closest pair at X."""
        c = check(self.elements, np.asarray(X, float))
        return (c.min_clearance, *pair_names(self.elements, c.argmin)) if len(c.distance) else (np.inf, "", "")
