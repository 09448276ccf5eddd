"""Markers that are not nodes - stray markers, other assets, reflections - followed beside the nodes (no ROS).

:class:`OtherMarkers` keeps a track for every marker the node tracker leaves unassigned, and remembers
which nodes each was seen beside: a marker visible in the same frame as a tracked node is a different
marker, so it can never become that node (a stray marker fixed 3 cm from a node stays off the node however
long the node is occluded). A track that vanishes (the stray is occluded too) becomes a **ghost**: its
position is remembered relative to the tracked nodes nearest to it, and a new marker appearing where the
ghost is predicted (a rigid fit of those nodes then onto them now) continues the old track, with what it
knew. Ghosts are forgotten after GHOST_LIFETIME s or beyond MAX_GHOSTS.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from tensegrity_mocap.tracking.registration import kabsch

GHOST_NEIGHBOURS = 12        # tracked nodes that remember where a vanished non-node marker sits (weighted
GHOST_WEIGHT_LENGTH = 0.05   # by 1 / (d + this [m])^2: the nearest count most, and losing a few is harmless)
GHOST_LIFETIME = 60.0        # s: how long a vanished non-node marker is remembered
MAX_GHOSTS = 64
BIG = 1e9                    # cost of an infeasible pairing


class OtherMarkers:
    """Tracks of non-node markers and ghosts of vanished ones, for a tracker of ``n`` nodes."""

    def __init__(self, n: int, max_tracks: int = 256):
        self.n, self.max_tracks = n, int(max_tracks)
        self.P = np.zeros((0, 3))                    # positions [m], velocities [m/s],
        self.V = np.zeros((0, 3))
        self.not_node = np.zeros((0, n), bool)       # ... and the nodes each was seen beside (cannot be)
        k = min(GHOST_NEIGHBOURS, n)
        self.G = np.zeros((0, 3))                    # ghosts: where they vanished,
        self.G_nb = np.zeros((0, k), int)            # the nearest tracked nodes then,
        self.G_S = np.zeros((0, k, 3))               # their positions then,
        self.G_w = np.zeros((0, k))                  # their weights,
        self.G_not = np.zeros((0, n), bool)          # the nodes it was seen beside, and when it vanished
        self.G_t = np.zeros(0)
        self.ghost_pred = np.zeros((0, 3))           # where each ghost is expected in the current frame (NaN:
                                                     # too few of its nodes tracked to say)

    def __len__(self):
        return len(self.P)

    def predict(self, dt: float) -> np.ndarray:
        """Positions (k,3) [m] expected ``dt`` s after the last frame (constant velocity)."""
        return self.P + self.V * dt

    def revive(self, Q, C, om, mk, gate: float):
        """New markers (``om`` < 0, not held by a node: ``mk``) within ``gate`` [m] of a ghost's prediction
        from the nodes C (n,3) now continue that ghost's track: ``om`` is set to the revived track."""
        self.ghost_pred = self.predict_ghosts(C)
        if not len(self.G):
            return
        new = np.flatnonzero(om < 0)
        new = new[~np.isin(new, mk[mk >= 0])]
        if not len(new):
            return
        pred = np.nan_to_num(self.ghost_pred, nan=np.inf)
        D = np.linalg.norm(pred[:, None] - Q[new][None], axis=2)
        cost = np.where(D <= gate, D, BIG)
        r, c = linear_sum_assignment(cost)
        ok = cost[r, c] < BIG
        r, c = r[ok], c[ok]
        if not len(r):
            return
        om[new[c]] = len(self.P) + np.arange(len(r))
        self.P = np.concatenate([self.P, Q[new[c]]])          # where it is now: no velocity from the gap
        self.V = np.concatenate([self.V, np.zeros((len(r), 3))])
        self.not_node = np.concatenate([self.not_node, self.G_not[r]])
        keep = np.ones(len(self.G), bool)
        keep[r] = False
        self._keep_ghosts(keep)

    def update(self, t: float, dt: float, Q, held, om, tracked, X_live, live):
        """After a frame at time ``t`` [s] (``dt`` since the last): markers of Q not ``held`` by nodes
        continue (``om``) or start tracks; they learn the ``tracked`` nodes (n,) bool of this frame. Tracks
        that vanished become ghosts, placed by the ``live`` nodes of the last frame at ``X_live`` (n,3)."""
        if not len(self.P) and not len(self.G) and held.all():     # no other marker now or before
            self.P, self.V, self.not_node = Q[:0], np.zeros((0, 3)), np.zeros((0, self.n), bool)
            return
        went = np.ones(len(self.P), bool)
        went[om[(om >= 0) & ~held]] = False
        if went.any() or len(self.G):
            self._bury(t, np.flatnonzero(went), X_live, live)
        js = np.flatnonzero(~held)[:self.max_tracks]
        prev = om[js]
        cont = prev >= 0
        V = np.zeros((len(js), 3))
        not_node = np.zeros((len(js), self.n), bool)
        if cont.any():
            if dt > 0:
                V[cont] = (Q[js[cont]] - self.P[prev[cont]]) / dt
            not_node[cont] = self.not_node[prev[cont]]
        not_node |= tracked[None, :]
        self.P, self.V, self.not_node = Q[js], V, not_node

    def _bury(self, t, vanished, X, live):
        """Tracks that vanished and had been seen beside nodes become ghosts; old ghosts are forgotten."""
        vanished = vanished[self.not_node[vanished].any(axis=1)]
        live = np.flatnonzero(live)
        k = self.G_nb.shape[1]
        if len(vanished) and len(live) >= 3:
            d = np.linalg.norm(self.P[vanished][:, None] - X[live][None], axis=2)
            order = np.argsort(d, axis=1)[:, :k]
            w = 1.0 / (np.take_along_axis(d, order, axis=1) + GHOST_WEIGHT_LENGTH) ** 2
            pad = k - order.shape[1]                 # fewer tracked nodes than k: padded with weight 0
            nb = np.pad(live[order], ((0, 0), (0, pad)), mode="edge")
            self.G = np.concatenate([self.G, self.P[vanished]])
            self.G_nb = np.concatenate([self.G_nb, nb])
            self.G_S = np.concatenate([self.G_S, X[nb]])
            self.G_w = np.concatenate([self.G_w, np.pad(w, ((0, 0), (0, pad)))])
            self.G_not = np.concatenate([self.G_not, self.not_node[vanished]])
            self.G_t = np.concatenate([self.G_t, np.full(len(vanished), t)])
        if len(self.G):
            keep = self.G_t >= t - GHOST_LIFETIME
            keep[:max(0, len(self.G) - MAX_GHOSTS)] = False
            self._keep_ghosts(keep)

    def predict_ghosts(self, C) -> np.ndarray:
        """(g,3) [m]: each ghost placed by a weighted rigid fit of its nodes then onto them now (C (n,3));
        NaN where fewer than 3 of them are tracked."""
        if not len(self.G):
            return np.zeros((0, 3))
        A, B = self.G_S, C[self.G_nb]
        w = np.where(np.isfinite(A[..., 0]) & np.isfinite(B[..., 0]), self.G_w, 0.0)
        R, tt = kabsch(np.where(w[..., None] > 0, A, 0.0), np.where(w[..., None] > 0, B, 0.0), w)
        pred = np.einsum("gij,gj->gi", R, self.G) + tt
        pred[(w > 0).sum(axis=1) < 3] = np.nan
        return pred

    def _keep_ghosts(self, keep):
        self.G, self.G_nb, self.G_S, self.G_w = self.G[keep], self.G_nb[keep], self.G_S[keep], self.G_w[keep]
        self.G_not, self.G_t = self.G_not[keep], self.G_t[keep]
