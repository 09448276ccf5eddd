"""One self-collision assessment of measured or simulated node positions (no ROS).

Nodes may be unknown (NaN, e.g. an occluded motion-capture marker): pairs touching an unknown node are
not checked (their clearance is NaN) and are counted, never guessed. A position farther than
``MAX_ABS_POSITION`` from the origin is no measurement of a robot (a corrupt message): that node is unknown.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tensegrity_engine.collision.capsules import check, model_elements

MAX_ABS_POSITION = 1e4     # m: no robot or capture volume is 10 km across; beyond, distances lose all digits
MAX_CAPSULES = 3000        # bars + simple strings: all pairs of 3000 capsules are 4.5 million (~0.3 GB of
                           # pair tables, ~0.1 s per sweep); a model from the network beyond that is refused


@dataclass
class Assessment:
    clearance: np.ndarray        # (m,) m per checked pair, NaN where a node is unknown
    min_clearance: float         # m over known pairs (inf if none)
    closest_pair: int            # index of the minimum (-1 if none)
    warn_pairs: np.ndarray       # pairs with clearance < warn_margin (includes contacts)
    contact_pairs: np.ndarray    # pairs with clearance < contact_margin
    unknown_nodes: np.ndarray    # physical node indices with NaN positions
    points_a: np.ndarray         # (k,3) closest points of warn_pairs on the first element
    points_b: np.ndarray         # (k,3) on the second element


class CollisionAssessor:
    """All-pairs clearances of one model's capsules (bars and simple strings)."""

    def __init__(self, model, warn_margin: float = 0.01, contact_margin: float = 0.0):
        if not (np.isfinite(warn_margin) and np.isfinite(contact_margin)) or warn_margin < contact_margin:
            raise ValueError(f"margins must be finite with warn_margin >= contact_margin "
                             f"(got {warn_margin}, {contact_margin})")
        capsules = len(model.bars) + len(model.segments)
        if capsules > MAX_CAPSULES:
            raise ValueError(f"model '{model.name}' has {capsules} capsules (bars + simple strings); the monitor "
                             f"checks all pairs of at most {MAX_CAPSULES}")
        self.model = model
        self.elements = model_elements(model)
        self.warn_margin = float(warn_margin)
        self.contact_margin = float(contact_margin)
        self._phys = model.physical_index
        e = self.elements                       # [element, element] per checked pair (built once)
        self.pair_names = [[e.names[i], e.names[j]] for i, j in zip(e.pair_i, e.pair_j)]


    def assess(self, X_physical) -> Assessment:
        """Clearances for physical node positions (mu,3) [m] in model order (NaN rows = unknown nodes)."""
        m = self.model
        Xp = np.asarray(X_physical, float)
        if Xp.shape != (m.n_physical, 3):
            raise ValueError(f"expected {m.n_physical} node positions for model '{m.name}', got {Xp.shape[0]}")
        with np.errstate(invalid="ignore"):
            unknown_node = ~np.all(np.abs(Xp) <= MAX_ABS_POSITION, axis=1)       # NaN compares False
        X = np.where(unknown_node[:, None], 0.0, Xp)[self._phys]
        res = check(self.elements, X, self.contact_margin)
        clear = res.clearance
        e = self.elements
        masked = np.zeros(len(clear), bool)
        if np.any(unknown_node):
            bad_el = np.any(unknown_node[self._phys[e.ends]], axis=1)
            masked = bad_el[e.pair_i] | bad_el[e.pair_j]
            clear = np.where(masked, np.nan, clear)
        known = ~masked
        if not np.all(np.isfinite(clear[known])):      # never let a pair of known nodes go unchecked
            raise ValueError("a clearance of known nodes is not finite: positions rejected")
        if np.any(known):
            k = int(np.nanargmin(clear))
            mn = float(clear[k])
        else:
            k, mn = -1, float("inf")
        with np.errstate(invalid="ignore"):
            warn = np.flatnonzero(known & (clear < self.warn_margin))
            contact = np.flatnonzero(known & (clear < self.contact_margin))
        pa, pb = res.points(e, X, warn) if len(warn) else (np.zeros((0, 3)), np.zeros((0, 3)))
        return Assessment(clear, mn, k, warn, contact, np.flatnonzero(unknown_node), pa, pb)
