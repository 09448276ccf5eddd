"""Per-node marker tracking for tensegrity robots (no ROS).

Motion capture reports markers with labels (NatNet labeled-marker ids, or Motive CSV marker names) that
may be occluded, relabelled or swapped, and unlabeled markers. The tracker keeps a map label -> node and
uses the model to decide which markers are which node:

* **rigid distances**: the two ends of every bar (and of every plate's virtual bars) keep their length;
* **motion continuity**: a node moves at most ``max_speed`` between frames, plus the marker ``noise``.

Each frame: (1) a mapped label's marker is accepted for its node only if it is within the continuity gate
of the node's prediction and consistent with every rigid partner measured this frame; inconsistent
labels are dropped from the map (a swapped or relabelled marker). (2) Nodes without a marker are
re-acquired from the unassigned markers (labeled or not) if exactly one marker is inside the node's gate
(the gate grows with the time since the node was last seen) and consistent with its rigid partners, and
that marker fits no other node: otherwise the node stays **invalid (NaN)** — the tracker never guesses.
At start, labels come from a marker map, or from matching the markers to the model's configuration.

Time: the tracker keeps its own clock, which only moves forward: each frame advances it by the step from
the previous frame's time (or a step the caller gives) clipped to [``min_dt``, ``max_dt``] s, so a zero,
backward (Motive restarted, a corrupted or spoofed timestamp) or huge step never switches the motion gate
off or opens it wide, and the frames after such a jump get their normal steps again.
Frame-level rejection of implausible frames is done before :meth:`NodeTracker.update` (plausibility.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .axes import y_up_to_z_up, z_up_to_y_up



def rigid_pairs(model) -> tuple:
    """(i, j, length) arrays of physical node pairs at constant distance: the ends of every bar."""
    ij = model.physical_index[np.asarray(model.bars)]
    keep = ij[:, 0] != ij[:, 1]
    return ij[keep, 0], ij[keep, 1], np.asarray(model.bar_length)[keep]


@dataclass
class TrackerStats:
    frames: int = 0
    reacquired: int = 0
    dropped_labels: int = 0          # labels removed from the map (continuity or rigid distance failed)
    ambiguous: int = 0               # nodes left invalid because several markers fit
    invalid_node_frames: int = 0
    per_node_invalid: np.ndarray = field(default_factory=lambda: np.zeros(0, int))


class NodeTracker:
    """Tracks the physical nodes of ``model`` (positions in the model's world frame, metres)."""

    def __init__(self, model, marker_map: dict | None = None, max_speed: float = 2.0, noise: float = 0.005,
                 bar_tol: float = 0.01, init_gate: float = 0.05, max_gate: float = 0.25,
                 min_dt: float = 0.0005, max_dt: float = 0.1):
        self.model = model
        self.n = model.n_physical
        self.node_names = list(model.node_names[:self.n])
        self.pi, self.pj, self.plen = rigid_pairs(model)
        self.max_speed, self.noise, self.bar_tol = float(max_speed), float(noise), float(bar_tol)
        self.init_gate, self.max_gate = float(init_gate), float(max_gate)
        self.min_dt, self.max_dt = float(min_dt), float(max_dt)      # s, clip of the step between frames
        self.label_of = [None] * self.n              # label currently mapped to each node
        self.node_of = {}                            # label -> node index
        if marker_map:
            for label, node in marker_map.items():
                k = self.node_names.index(node) if isinstance(node, str) else int(node)
                self._map(label, k)
        self.X = np.full((self.n, 3), np.nan)        # last valid positions
        self.V = np.zeros((self.n, 3))
        self.t_seen = np.full(self.n, -np.inf)       # time each node was last valid
        self.t = None                                # tracker clock [s] (monotonic, see the module doc)
        self.t_frame = None                          # the last frame's own time [s]
        self.stats = TrackerStats(per_node_invalid=np.zeros(self.n, int))

    # --- label map -----------------------------------------------------------------------------------
    def _map(self, label, k):
        old = self.label_of[k]
        if old is not None:
            self.node_of.pop(old, None)
        prev = self.node_of.get(label)
        if prev is not None:
            self.label_of[prev] = None
        self.label_of[k] = label
        self.node_of[label] = k

    def _unmap(self, k):
        label = self.label_of[k]
        if label is not None:
            self.node_of.pop(label, None)
            self.label_of[k] = None
            self.stats.dropped_labels += 1

    # --- checks --------------------------------------------------------------------------------------
    def _rigid_violations(self, C) -> np.ndarray:
        """Per node, the number of rigid pairs (both ends measured in C) whose length is off by > bar_tol."""
        ok = np.isfinite(C[self.pi, 0]) & np.isfinite(C[self.pj, 0])
        d = np.linalg.norm(C[self.pi[ok]] - C[self.pj[ok]], axis=1)
        bad = np.abs(d - self.plen[ok]) > self.bar_tol
        v = np.zeros(self.n, int)
        np.add.at(v, self.pi[ok][bad], 1)
        np.add.at(v, self.pj[ok][bad], 1)
        return v

    def _fits_partners(self, k, x, C) -> bool:
        """Candidate x for node k agrees with every rigid partner of k measured in C."""
        for a, b, L in ((self.pi, self.pj, self.plen), (self.pj, self.pi, self.plen)):
            sel = (a == k) & np.isfinite(C[b, 0])
            if np.any(np.abs(np.linalg.norm(C[b[sel]] - x, axis=1) - L[sel]) > self.bar_tol):
                return False
        return True

    def _gates(self, t) -> tuple:
        """(prediction (n,3), gate radius (n,)) per node; NaN prediction for never-seen nodes."""
        age = t - self.t_seen
        pred = self.X + self.V * np.where(np.isfinite(age), np.minimum(age, 0.1), 0.0)[:, None]
        gate = np.minimum(self.noise + self.max_speed * np.where(np.isfinite(age), age, np.inf), self.max_gate)
        return pred, gate

    # --- one frame -----------------------------------------------------------------------------------
    def clock(self, t: float, dt: float | None = None) -> float:
        """The tracker time [s] a frame at time ``t`` [s] gets: the clock plus the step ``dt`` [s] (default:
        ``t`` minus the last frame's time) clipped to [min_dt, max_dt] (non-finite: max_dt); for the first
        frame ``t`` itself."""
        if self.t is None:
            return float(t) if np.isfinite(t) else 0.0
        step = float(t) - self.t_frame if dt is None else float(dt)
        return self.t + (min(max(step, self.min_dt), self.max_dt) if np.isfinite(step) else self.max_dt)

    def update(self, t: float, labels, positions, unlabeled=None, dt: float | None = None) -> np.ndarray:
        """Node positions (n,3) [m] for one frame (NaN = invalid). ``labels`` (k,) and ``positions`` (k,3)
        are the labeled markers (NaN rows = occluded); ``unlabeled`` (m,3) extra markers without labels.
        ``t`` [s] (and ``dt``, the step from the last frame if the caller knows better) go through
        :meth:`clock`: never backwards, steps clipped."""
        P = np.asarray(positions, float).reshape(-1, 3)
        labels = list(labels)
        U = np.zeros((0, 3)) if unlabeled is None else np.asarray(unlabeled, float).reshape(-1, 3)
        first = self.t is None
        t_frame, t = float(t), self.clock(t, dt)
        self.t_frame = t_frame if np.isfinite(t_frame) else t
        C = np.full((self.n, 3), np.nan)
        pred, gate = self._gates(t)
        used = set()
        # (1) mapped labels, checked against continuity
        for idx, label in enumerate(labels):
            k = self.node_of.get(label)
            if k is None or not np.all(np.isfinite(P[idx])):
                continue
            if np.isfinite(pred[k, 0]) and np.linalg.norm(P[idx] - pred[k]) > gate[k]:
                self._unmap(k)                          # jumped: not this node's marker any more
                continue
            C[k] = P[idx]
            used.add(idx)
        # rigid distances: drop the worst offenders until all measured pairs agree
        while True:
            v = self._rigid_violations(C)
            if not v.any():
                break
            worst = np.flatnonzero(v == v.max())
            for k in worst:
                C[k] = np.nan
                self._unmap(k)
        # (2) re-acquire nodes without a marker from the unassigned markers
        free = [(idx, labels[idx], P[idx]) for idx in range(len(labels))
                if idx not in used and labels[idx] not in self.node_of and np.all(np.isfinite(P[idx]))]
        free += [(None, None, u) for u in U if np.all(np.isfinite(u))]
        missing = [k for k in range(self.n) if not np.isfinite(C[k, 0])]
        if free and missing:
            self._reacquire(missing, free, C, pred, gate, first)
        self._commit(t, C)
        return C.copy()

    def _reacquire(self, missing, free, C, pred, gate, first):
        ref = self.model.positions[:self.n]
        miss = np.asarray(missing)
        fresh = first | ~np.isfinite(pred[miss, 0])       # never seen: near the model's configuration
        centres = np.where(fresh[:, None], ref[miss], pred[miss])
        radii = np.where(fresh, self.init_gate, gate[miss])
        F = np.array([x for _, _, x in free])
        near = np.linalg.norm(F[None, :, :] - centres[:, None, :], axis=2) <= radii[:, None]
        fits = {}                                       # node -> list of free indices that fit
        for r, k in enumerate(missing):
            fits[k] = [f for f in np.flatnonzero(near[r]) if self._fits_partners(k, F[f], C)]
        claims = {}
        for k, fl in fits.items():
            for f in fl:
                claims.setdefault(f, []).append(k)
        for k, fl in fits.items():
            if len(fl) == 1 and len(claims[fl[0]]) == 1:
                f = fl[0]
                idx, label, x = free[f]
                C[k] = x
                if label is not None:
                    self._map(label, k)
                self.stats.reacquired += 0 if self.t is None else 1
            elif len(fl) > 1 or any(len(claims[f]) > 1 for f in fl):
                self.stats.ambiguous += 1
        # accepted re-acquisitions must still agree with each other
        v = self._rigid_violations(C)
        for k in np.flatnonzero(v):
            if k in fits:
                C[k] = np.nan
                self._unmap(k)

    def _commit(self, t, C):
        valid = np.isfinite(C[:, 0])
        if self.t is not None:
            dt = t - self.t
            if dt > 0:
                both = valid & np.isfinite(self.X[:, 0]) & (self.t_seen == self.t)
                self.V[both] = 0.5 * self.V[both] + 0.5 * (C[both] - self.X[both]) / dt
        self.V[~valid & ~np.isfinite(self.t_seen)] = 0.0
        self.X[valid] = C[valid]
        self.t_seen[valid] = t
        self.t = t
        self.stats.frames += 1
        self.stats.invalid_node_frames += int((~valid).sum())
        self.stats.per_node_invalid += ~valid


def to_ros_frame(P, up_axis: str = "z", offset=(0.0, 0.0, 0.0)) -> np.ndarray:
    """Motion-capture coordinates -> the robot's world frame (REP-103, z up): Motive's Y-up (x, y, z)
    becomes (x, -z, y) (a +90 degree turn about x, right-handed); then ``offset`` [m] is added."""
    P = np.asarray(P, float).reshape(-1, 3)
    if up_axis == "y":
        P = y_up_to_z_up(P)
    elif up_axis != "z":
        raise ValueError(f"up_axis must be 'y' or 'z', got {up_axis!r}")
    return P + np.asarray(offset, float)


def from_ros_frame(P, up_axis: str = "z", offset=(0.0, 0.0, 0.0)) -> np.ndarray:
    """Inverse of :func:`to_ros_frame`."""
    P = np.asarray(P, float).reshape(-1, 3) - np.asarray(offset, float)
    if up_axis == "y":
        return z_up_to_y_up(P)
    if up_axis != "z":
        raise ValueError(f"up_axis must be 'y' or 'z', got {up_axis!r}")
    return P
