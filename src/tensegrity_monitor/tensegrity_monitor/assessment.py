"""One self-collision assessment of measured or simulated node positions (no ROS), with the clearance of
every bar to every obstacle of the model's world (ground, boxes; :mod:`tensegrity_engine.model.world`).

Nodes may be unknown (NaN, e.g. an occluded motion-capture marker): pairs touching an unknown node are
not checked (their clearance is NaN) and are counted, never guessed. A position farther than
``MAX_ABS_POSITION`` from the origin is no measurement of a robot (a corrupt message): that node is unknown.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tensegrity_engine.collision.capsules import check, model_elements
from tensegrity_engine.collision.obstacles import bar_contacts, model_obstacles

MAX_ABS_POSITION = 1e4     # m: no robot or capture volume is 10 km across; beyond, distances lose all digits
MAX_CAPSULES = 3000        # bars + simple strings: all pairs of 3000 capsules are 4.5 million (~0.3 GB of
                           # pair tables, ~0.1 s per sweep); a model from the network beyond that is refused
OBSTACLE_WARN_MARGIN = -0.002      # m: 2 mm into an obstacle; a robot resting on one sinks ~0.1-1 mm
OBSTACLE_CONTACT_MARGIN = -0.02    # m: 2 cm in; no contact the dynamics bounds gets there: the world disagrees


@dataclass
class ObstacleAssessment:
    """Bar x obstacle clearances (bar-major: pair k is bar k // M, obstacle k % M)."""
    clearance: np.ndarray        # (beta*M,) m, signed (negative: that deep in), NaN where a bar end is unknown
    min_clearance: float         # m over known pairs (inf if none)
    closest_pair: int            # index of the minimum (-1 if none)
    warn_pairs: np.ndarray       # clearance < obstacle warn margin (includes contacts)
    contact_pairs: np.ndarray    # clearance < obstacle contact margin
    points_bar: np.ndarray       # (k,3) contact points of warn_pairs on the bars' axes
    points_obstacle: np.ndarray  # (k,3) on the obstacles' surfaces


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
    obstacles: ObstacleAssessment | None = None    # None: the model has no obstacles


class CollisionAssessor:
    """All-pairs clearances of one model's capsules (bars and simple strings)."""

    def __init__(self, model, warn_margin: float = 0.01, contact_margin: float = 0.0,
                 obstacle_warn_margin: float = OBSTACLE_WARN_MARGIN,
                 obstacle_contact_margin: float = OBSTACLE_CONTACT_MARGIN):
        for warn, contact, what in ((warn_margin, contact_margin, ""), (obstacle_warn_margin, obstacle_contact_margin,
                                                                         "obstacle_")):
            if not (np.isfinite(warn) and np.isfinite(contact)) or warn < contact:
                raise ValueError(f"margins must be finite with {what}warn_margin >= {what}contact_margin "
                                 f"(got {warn}, {contact})")
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
        self.obstacles = model_obstacles(model)
        self.obstacle_margins = (float(obstacle_warn_margin), float(obstacle_contact_margin))
        self.obstacle_pairs = [[b, o] for b in model.bar_names for o in self.obstacles.names]

    def obstacle_text(self, a: ObstacleAssessment, k: int) -> str:
        """'bar b3 vs obstacle ground: clearance -2.0 mm' for obstacle pair k."""
        bar, obstacle = self.obstacle_pairs[k]
        return f"bar {bar} vs obstacle {obstacle}: clearance {1e3 * a.clearance[k]:.1f} mm"

    def _assess_obstacles(self, X, unknown_node) -> ObstacleAssessment | None:
        """Every bar against every obstacle at node positions X (n,3); bars with an unknown end are NaN."""
        m, M = self.model, len(self.obstacles)
        if not M:
            return None
        res = bar_contacts(m, X, self.obstacles)
        bad_bar = np.any(unknown_node[self._phys[m.bars]], axis=1)
        clear = np.where(bad_bar[:, None], np.nan, res.clearance).ravel()
        known = np.repeat(~bad_bar, M)
        if not np.all(np.isfinite(clear[known])):
            raise ValueError("an obstacle clearance of known nodes is not finite: positions rejected")
        k = int(np.nanargmin(clear)) if np.any(known) else -1
        warn_margin, contact_margin = self.obstacle_margins
        with np.errstate(invalid="ignore"):
            warn = np.flatnonzero(known & (clear < warn_margin))
            contact = np.flatnonzero(known & (clear < contact_margin))
        on_bar = res.segment_points(X[m.bars[:, 0]], X[m.bars[:, 1]]).reshape(-1, 3)
        return ObstacleAssessment(clear, float(clear[k]) if k >= 0 else float("inf"), k, warn, contact,
                                  on_bar[warn], res.point.reshape(-1, 3)[warn])


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
        return Assessment(clear, mn, k, warn, contact, np.flatnonzero(unknown_node), pa, pb,
                          self._assess_obstacles(X, unknown_node))
