"""Per-node marker tracking for tensegrity robots (no ROS).

Motion capture reports markers - labeled (an asset's markers, Motive CSV names such as ``Robot:n1``),
unlabeled ones (``Unlabeled 1008``: a name that changes after every gap) and anonymous ones - that may be
occluded, relabelled or swapped, plus markers that are not nodes at all: stray markers fixed on the
structure a few centimetres from a node, other assets (a payload) moving inside the robot. The tracker
decides which marker is which physical node of the model, frame by frame, and reports **NaN** for a node
whenever that is not certain: it never guesses.

Each frame (:meth:`NodeTracker.update`):

1. **exclusion**: markers whose label matches an ``exclude`` glob (``payload:*``) are ignored;
2. **continuity**: every node tracked in the last frame and every other marker track (strays, payload,
   anything not a node) is predicted (constant velocity) and the markers are assigned to all of them at
   once (minimum total distance, gate ``noise + max_speed * dt``); a node whose marker is not clearly the
   nearest (another unclaimed marker within ``margin``) is left NaN;
3. **bars**: a node set by a marker that breaks one of its bars by more than ``bar_tol`` - against the
   bar's measured length (a running mean) and against the model's - is dropped (the worst first);
4. **re-acquisition** of lost nodes, however long they were lost: each is predicted from its tracked
   neighbours (a rigid fit of their positions when the node was last seen onto their positions now: the
   robot may have rolled away in the meantime), or from its velocity for a short gap; candidates are the
   markers no node holds, except markers that have been seen at the same time as the node was tracked
   (a stray marker tracked next to the node can never be the node; a stray that was occluded too is
   recognised where it comes back: other_markers.py); a lost node takes a candidate within
   ``reacquire_gate`` of its prediction that keeps its bars, chosen by a global assignment, only if no
   other candidate is within ``margin`` of being as good. A marker is taken only when the node's
   neighbourhood **proves** it is the node: it is where the neighbours put the node (within
   ``reacquire_gate`` of the rigid fit; a poor fit: the only candidate in its wider gate and within
   ROUGH_PROOF x ``reacquire_gate``), or it keeps two or more bars to tracked partners. Keeping one bar
   proves nothing: a stray marker first seen while its node was hidden (so never seen beside it) sits at
   about a bar partner's distance too. A lone bar-consistent marker farther out (the wide search of a node
   not found near a good prediction for STUCK_FRAMES frames) leaves the node NaN, reason ``ambiguous``
   (:meth:`explain` names it);
5. **registration** (start-up, and whenever fewer than three nodes are tracked): with a ``marker_map``
   the mapped labels place the nodes; otherwise the model is placed by a best rigid fit to the markers
   (registration.py: rotation + translation from bar-length-consistent marker triples, with an ambiguity
   margin) - so a model written in the robot's own frame tracks a capture in any pose from the first
   frame. A placement of the model where it is written (the capture's frame) wins ties; a model with fixed
   nodes is placed there when its markers are there, else (a capture in another frame than the model
   file) by its fixed part's markers, the rest matched from there (a load may have moved it tens of mm),
   else like a free one; the registration note says how far its fixed nodes are from their markers.

Why a node is not tracked is kept per node (:attr:`NodeTracker.reasons`, :meth:`NodeTracker.explain`).

Time: the tracker keeps its own clock, which only moves forward: each frame advances it by the step from
the previous frame's time (or a step the caller gives) clipped to [``min_dt``, ``max_dt``] s, so a zero,
backward or huge step never switches the motion gate off or opens it wide.
Frame-level rejection of implausible frames is done before :meth:`NodeTracker.update` (plausibility.py, this package).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase

import numpy as np
from scipy.optimize import linear_sum_assignment

from tensegrity_engine.model.markers import marker_bar_lengths, marker_layout, marker_positions

from tensegrity_mocap.tracking.other_markers import BIG, OtherMarkers
from tensegrity_mocap.tracking.registration import kabsch, register, register_fixed_part, Registration

REASONS = ("tracked", "no_marker", "ambiguous", "bar_length", "excluded", "no_prediction", "unregistered")
TRACKED, NO_MARKER, AMBIGUOUS, BAR_LENGTH, EXCLUDED, NO_PREDICTION, UNREGISTERED = range(len(REASONS))
VELOCITY_HORIZON = 0.05      # s: a node lost for longer (or for more frames than VELOCITY_FRAMES) is
VELOCITY_FRAMES = 10         # predicted from its neighbours only
STUCK_FRAMES = 20            # frames without a candidate near a good prediction before the wide search
NEIGHBOURS = 8               # nodes whose positions predict a lost node (nearest in the model)
MIN_SPREAD = 0.01            # m: neighbours must span at least this across their line (a rotation is defined)
REGISTER_RETRY = 0.25        # s (tracker clock): wait after a failed registration before the next try (a
                             # registration among 100 markers takes ~0.1 s: the robot out of view must not
                             # take the CPU)
MAX_MARKERS = 1000           # markers considered per frame (a flood costs ~10 ms at this size; more ignored)
MAX_REGISTER_MARKERS = 300   # more candidate markers than this: no registration (exclude other assets)
ROUGH_PROOF = 2.0            # x reacquire_gate: the farthest from a rough (poor-fit) neighbourhood prediction
                             # that a marker is taken (alone in the rough gate) - below a stray's 25-50 mm
BAR_MEAN_WEIGHT = 0.2        # newest frame's weight in a bar's measured (running mean) length: the mean's
                             # noise is a third of one frame's, and a slow real drift (marker slip) is followed
# marker_status codes (per input marker row)
UNASSIGNED, EXCLUDED_MARKER, INVALID_MARKER = -1, -2, -3


def rigid_pairs(model) -> tuple:
    """(i, j, length [m]) arrays of physical node pairs whose markers stay at a constant distance: the two
    markers of every bar (on the bar ends or along the bar; a world-frame marker ``offset`` turns with nothing,
    so such a bar is left out)."""
    ij = model.physical_index[np.asarray(model.bars)]
    off = np.any(marker_layout(model).offset != 0.0, axis=1)
    keep = (ij[:, 0] != ij[:, 1]) & ~off[ij[:, 0]] & ~off[ij[:, 1]]
    return ij[keep, 0], ij[keep, 1], marker_bar_lengths(model)[keep]


def nearest_nodes(P, k: int) -> np.ndarray:
    """(n, k) indices of the k nearest other points of each point of P (n,3) (a k-d tree: no n x n matrix
    for large models)."""
    from scipy.spatial import cKDTree
    n = len(P)
    if k <= 0:
        return np.zeros((n, 0), int)
    idx = cKDTree(P).query(P, k + 1)[1].reshape(n, k + 1)
    own = idx == np.arange(n)[:, None]
    drop = np.where(own.any(axis=1), np.argmax(own, axis=1), k)   # itself, or (coincident nodes) the last
    keep = np.ones_like(own)
    keep[np.arange(n), drop] = False
    return idx[keep].reshape(n, k)


def lengths(v) -> np.ndarray:
    """``np.linalg.norm(v, axis=-1)`` of a real array, bit for bit (its own arithmetic: the squares summed by
    ``add.reduce`` over the last axis, then the root) without its Python overhead (a frame makes several)."""
    return np.sqrt(np.add.reduce(v * v, axis=-1))


def distances(A, B) -> np.ndarray:
    """(a, b) distances [m] between the points A (a,3) and B (b,3): ``lengths(A[:, None] - B[None])`` bit for
    bit (the same differences, squares and left-to-right sum), one coordinate at a time (half the time)."""
    d = A[:, 0, None] - B[:, 0]
    d *= d
    for i in (1, 2):
        e = A[:, i, None] - B[:, i]
        e *= e
        d += e
    return np.sqrt(d, out=d)


def label_matches(label, patterns) -> bool:
    """``str(label)`` matches one of the glob ``patterns`` (case-sensitive, ``*``, ``?``, ``[...]``)."""
    text = str(label)
    return any(fnmatchcase(text, p) for p in patterns)


@dataclass
class TrackerStats:
    frames: int = 0
    reacquired: int = 0              # lost -> tracked events of nodes that had been tracked before
    dropped_labels: int = 0          # a node lost the marker it was following (bar or continuity failed)
    relabels: int = 0                # a node's marker changed its label while followed (Motive relabelled it)
    ambiguous: int = 0               # node-frames left invalid because several markers fit
    invalid_node_frames: int = 0
    registrations: int = 0           # placements of the model on the markers (start-up, lost lock)
    ignored_markers: int = 0         # markers beyond MAX_MARKERS in a frame (not considered)
    per_node_invalid: np.ndarray = field(default_factory=lambda: np.zeros(0, int))


class NodeTracker:
    """Tracks the physical nodes of ``model`` (positions in the capture's world frame, metres, z up) by their
    markers: where a node's ``marker`` is off the node (``marker: {along_bar: ...}`` in the model file), the
    expected geometry is the markers' and the positions reported are the marker's (the engine's
    ``model.markers.nodes_from_markers`` gives the bar ends).

    ``marker_map`` {label: node name or index}; ``exclude`` glob patterns of labels to ignore;
    ``max_speed`` [m/s]; ``noise`` [m] marker noise allowance; ``bar_tol`` [m]; ``init_gate`` [m]: first
    matching distance of the model placed where it is written; ``reacquire_gate`` [m] (keep it below the
    distance of the nearest stray marker minus the prediction error); ``margin`` [m] nearest vs second
    candidate; ``register_tol`` [m] inlier distance of the rigid registration; ``min_dt``/``max_dt`` [s].
    """

    def __init__(self, model, marker_map: dict | None = None, exclude=(), max_speed: float = 2.0,
                 noise: float = 0.005, bar_tol: float = 0.01, init_gate: float = 0.05,
                 reacquire_gate: float = 0.015, margin: float = 0.01, register_tol: float = 0.02,
                 min_dt: float = 0.0005, max_dt: float = 0.1, max_gate: float = 0.25, max_tracks: int = 256):
        self.model = model
        self.n = n = model.n_physical
        self.node_names = list(model.node_names[:n])
        self.pi, self.pj, self.plen = rigid_pairs(model)
        self.ref = marker_positions(model, model.positions)     # where the model puts each node's marker
        self.anchored = bool(len(getattr(model, "fixed_nodes", ())))
        self.max_speed, self.noise, self.bar_tol = float(max_speed), float(noise), float(bar_tol)
        self.init_gate, self.max_gate = float(init_gate), float(max_gate)
        self.reacquire_gate, self.margin, self.register_tol = float(reacquire_gate), float(margin), float(register_tol)
        self.min_dt, self.max_dt = float(min_dt), float(max_dt)
        self.exclude = tuple(p for p in (exclude or ()) if str(p))
        self._excluded_cache = {}
        self.hint_of = {}                            # marker_map: label -> node index
        for label, node in (marker_map or {}).items():
            self.hint_of[label] = self.node_names.index(node) if isinstance(node, str) else int(node)
        self.label_of = [None] * n                   # label of the marker each node holds now
        self.node_of = {}                            # label -> node index (labels held now)
        self.X = np.full((n, 3), np.nan)             # last valid positions
        self.V = np.zeros((n, 3))
        self.t_seen = np.full(n, -np.inf)            # tracker time each node was last valid
        self.ever = np.zeros(n, bool)
        self.live = np.zeros(n, bool)                # tracked in the last frame
        self.lost_frames = np.zeros(n, int)          # frames since each node was last tracked
        self.t = None                                # tracker clock [s]
        self.t_frame = None                          # the last frame's own time [s]
        self.nbrs = nearest_nodes(self.ref, min(NEIGHBOURS, n - 1))    # (n,k), in the model's shape
        self.S = self.ref[self.nbrs].copy()          # neighbours' positions when each node was last seen
        self.S_self = self.ref.copy()                # ... and the node's own (initially: the model's shape)
        self.L_meas = np.full(len(self.plen), np.nan)
        self.others = OtherMarkers(n, max_tracks)    # strays, other assets: tracked beside the nodes
        self.registered = False
        self.registration: Registration | None = None
        self.register_note = "no frame yet"
        self._next_register = -np.inf
        self._code = np.full(n, UNREGISTERED)
        self._pending = None                         # reasons worked out only when asked (see code)
        self.reasons_version = 0                     # changes when a frame's reasons differ from the last's
        self._pending_nodes = None
        self.unproven = np.zeros(n, bool)           # lost nodes whose only candidate the neighbourhood
        self.marker_status = np.zeros(0, int)       # does not prove (reason 'ambiguous'), last frame
        self.stats = TrackerStats(per_node_invalid=np.zeros(n, int))

    # --- public views --------------------------------------------------------------------------------
    @property
    def code(self) -> np.ndarray:
        """Per node, the index in REASONS of why it is not tracked in the last frame (0: tracked)."""
        if self._pending is not None:
            nodes, C, t, excluded_P = self._pending
            self._pending = None
            pred, gate, tier, _ = self._predict_lost(nodes, C, t)
            has = tier > 0
            self._code[nodes[~has]] = NO_PREDICTION
            self._mark_excluded(nodes[has], pred[has], gate[has], excluded_P, self._code)
        return self._code

    @property
    def reasons(self) -> list:
        """Per node, why it is not tracked in the last frame ("tracked" if it is); see REASONS."""
        return [REASONS[c] for c in self.code]

    def explain(self) -> str:
        """Untracked nodes grouped by reason, with the parameter to change; "" if every node is tracked."""
        hints = {
            NO_MARKER: f"no marker within {1e3 * self.reacquire_gate:.0f} mm of the prediction (occluded, or the "
                       "model does not match the robot: check the model, raise tracking.reacquire_gate)",
            AMBIGUOUS: f"another marker within tracking.margin ({1e3 * self.margin:.0f} mm) of being as good "
                       "(a stray marker or another asset near the node: exclude it with tracking.exclude, or "
                       "lower tracking.margin)",
            BAR_LENGTH: "the marker near it breaks a bar by more than tracking.bar_tol (wrong model or a loose "
                        "marker: check the bar lengths, raise tracking.bar_tol)",
            EXCLUDED: "the only marker near it is excluded by tracking.exclude",
            NO_PREDICTION: "too few of its neighbours are tracked to predict where it is",
            UNREGISTERED: f"the model is not placed on the markers yet ({self.register_note}; set marker_map, "
                          "check the model's bars, or raise tracking.register_tol)",
        }
        code = self.code
        unproven = self.unproven & (code == AMBIGUOUS)
        parts = []
        if unproven.any():
            parts.append(f"{', '.join(self.node_names[k] for k in np.flatnonzero(unproven))}: the only marker "
                         f"that keeps its bar is more than {1e3 * self.reacquire_gate:.0f} mm (a rough fit: "
                         f"{1e3 * ROUGH_PROOF * self.reacquire_gate:.0f} mm) from where its neighbours put it (a "
                         "stray marker at a bar partner's distance?): held NaN until its own marker is back near "
                         "the prediction (raise tracking.reacquire_gate if the robot deforms that much)")
        for code_, text in hints.items():
            names = [self.node_names[k] for k in np.flatnonzero((code == code_) & ~unproven)]
            if names:
                parts.append(f"{', '.join(names)}: {text}")
        return "; ".join(parts)

    def _excluded(self, label) -> bool:
        if label is None or not self.exclude:
            return False
        hit = self._excluded_cache.get(label)
        if hit is None:
            if len(self._excluded_cache) > 100000:
                self._excluded_cache.clear()
            hit = self._excluded_cache[label] = label_matches(label, self.exclude)
        return hit

    # --- geometry helpers ----------------------------------------------------------------------------
    def gates(self, t) -> tuple:
        """(prediction (n,3), continuity gate radius (n,)) per node; NaN prediction for never-seen nodes."""
        age = t - self.t_seen
        pred = self.X + self.V * np.where(np.isfinite(age), np.minimum(age, 0.1), 0.0)[:, None]
        gate = np.minimum(self.noise + self.max_speed * np.where(np.isfinite(age), age, np.inf), self.max_gate)
        return pred, gate

    def _bar_reference(self) -> np.ndarray:
        return np.where(np.isfinite(self.L_meas), self.L_meas, self.plen)

    def _bar_violations(self, C, reference=None, tol=None) -> np.ndarray:
        """Per node, the number of its bars (both ends in C) off ``reference`` (default: their measured
        length, else the model's) by more than ``tol`` (default bar_tol) [m], or off the model (_off_model);
        NaN references never count."""
        d = lengths(C[self.pi] - C[self.pj])
        with np.errstate(invalid="ignore"):
            bad = (np.abs(d - (self._bar_reference() if reference is None else reference)) >
                   (self.bar_tol if tol is None else tol)) | self._off_model(d, self.plen)
        if not bad.any():                           # the usual frame
            return np.zeros(self.n, int)
        v = np.bincount(self.pi[bad], minlength=self.n) + np.bincount(self.pj[bad], minlength=self.n)
        return v

    def _off_model(self, d, length) -> np.ndarray:
        """Marker-pair lengths ``d`` [m] off the model's ``length`` [m] by more than bar_tol: checked in every
        frame besides the running mean (L_meas), which follows a slow drift - alone it would follow a marker
        creeping off its bar and take it at any error (a resync frame published 14 mm)."""
        with np.errstate(invalid="ignore"):
            return np.abs(d - length) > self.bar_tol

    def _enforce_bars(self, C, mk, code, reference=None, tol=None):
        """Drop the worst bar offenders until every measured bar agrees (see _bar_violations)."""
        while True:
            v = self._bar_violations(C, reference, tol)
            if not v.any():
                return
            worst = np.flatnonzero(v == v.max())
            C[worst] = np.nan
            mk[worst] = -1
            code[worst] = BAR_LENGTH

    # --- one frame -----------------------------------------------------------------------------------
    def clock(self, t: float, dt: float | None = None) -> float:
        """The tracker time [s] a frame at time ``t`` [s] gets: the clock plus the step ``dt`` [s] (default:
        ``t`` minus the last frame's time) clipped to [min_dt, max_dt] (non-finite: max_dt); for the first
        frame ``t`` itself."""
        if self.t is None:
            return float(t) if np.isfinite(t) else 0.0
        step = float(t) - self.t_frame if dt is None else float(dt)
        return self.t + (min(max(step, self.min_dt), self.max_dt) if np.isfinite(step) else self.max_dt)

    def update(self, t: float, labels, positions, unlabeled=None, dt: float | None = None,
               bar_jump: float | None = None) -> np.ndarray:
        """Node positions (n,3) [m] for one frame (NaN = not tracked). ``labels`` (k,) (str, int or None)
        and ``positions`` (k,3) are the markers (NaN rows = occluded); ``unlabeled`` (m,3) extra anonymous
        markers. ``t`` [s] (and ``dt``, the step from the last frame if the caller knows better) go through
        :meth:`clock`: never backwards, steps clipped. ``bar_jump`` [m]: also drop nodes whose bars are off
        their running mean (L_meas) by more than that, before anything is committed (the frame guard's
        resync frames)."""
        P = np.asarray(positions, float).reshape(-1, 3)
        U = np.zeros((0, 3)) if unlabeled is None else np.asarray(unlabeled, float).reshape(-1, 3)
        all_labels = list(labels) + [None] * len(U)
        allP = np.concatenate([P, U]) if len(U) else P
        status = np.full(len(allP), INVALID_MARKER)
        finite = np.isfinite(allP).all(axis=1)
        excluded = np.fromiter((self._excluded(lab) for lab in all_labels), bool, len(all_labels)) \
            if self.exclude else np.zeros(len(allP), bool)
        status[finite & excluded] = EXCLUDED_MARKER
        rows = np.flatnonzero(finite & ~excluded)
        if len(rows) > MAX_MARKERS:
            self.stats.ignored_markers += len(rows) - MAX_MARKERS
            rows = rows[:MAX_MARKERS]
        Q = allP[rows]
        QL = [all_labels[r] for r in rows]
        t_frame, t = float(t), self.clock(t, dt)
        self.t_frame = t_frame if np.isfinite(t_frame) else t
        self._pending = None
        C = np.full((self.n, 3), np.nan)
        self.unproven[:] = False
        mk = np.full(self.n, -1)                      # marker (row of Q) held by each node
        code = np.full(self.n, NO_MARKER)
        om = self._continue(t, Q, C, mk, code)        # other track continued by each marker, -1
        self._enforce_bars(C, mk, code)
        self.others.revive(Q, C, om, mk, self.reacquire_gate)
        if self.registered:
            self._reacquire(t, Q, QL, om, C, mk, code, allP[finite & excluded])
        if np.isfinite(C[:, 0]).sum() < min(3, self.n) and len(Q) >= 3 and t >= self._next_register:
            self._register(t, Q, QL, C, mk, code)
        elif not self.registered:
            code[:] = UNREGISTERED
        if bar_jump is not None and np.isfinite(bar_jump):
            self._enforce_bars(C, mk, code, self.L_meas, bar_jump)
        code[np.isfinite(C[:, 0])] = TRACKED
        held = np.zeros(len(Q), bool)
        held[mk[mk >= 0]] = True
        self.others.update(t, t - self.t if self.t is not None else 0.0, Q, held, om, np.isfinite(C[:, 0]),
                           self.X, self.live)
        self._commit(t, C, mk, QL, code)
        status[rows] = UNASSIGNED
        held = mk >= 0
        status[rows[mk[held]]] = np.flatnonzero(held)
        self.marker_status = status
        return C.copy()

    def _continue(self, t, Q, C, mk, code) -> np.ndarray:
        """Step 2: assign markers to nodes tracked last frame and to other tracks; returns, per marker, the
        other track it continues (-1)."""
        om = np.full(len(Q), -1)
        live = np.flatnonzero(self.live)
        if not len(Q) or (not len(live) and not len(self.others)):
            return om
        dt = t - self.t
        pred = self.X[live] + self.V[live] * dt
        if len(self.others):
            pred = np.concatenate([pred, self.others.predict(dt)])
        gate = self.noise + self.max_speed * dt
        D = distances(pred, Q)
        cost = np.where(D <= gate, D, BIG)
        r, c = linear_sum_assignment(cost)
        ok = cost[r, c] < BIG
        r, c = r[ok], c[ok]
        claim = np.full(len(Q), np.inf)               # distance of each marker to the track that took it
        claim[c] = D[r, c]
        nodes = r < len(live)
        rn, cn = r[nodes], c[nodes]
        if len(rn):
            Dn = D[rn]                                # (assigned nodes, markers)
            d = Dn[np.arange(len(rn)), cn]
            rival = (Dn < d[:, None] + self.margin) & ~(claim[None, :] < Dn)
            rival[np.arange(len(rn)), cn] = False
            clear = ~rival.any(axis=1)
            k = live[rn]
            C[k[clear]] = Q[cn[clear]]
            mk[k[clear]] = cn[clear]
            code[k[~clear]] = AMBIGUOUS
        om[c[~nodes]] = r[~nodes] - len(live)
        return om

    def _predict_lost(self, lost, C, t) -> tuple:
        """(prediction (L,3), gate (L,), tier (L,), proof (L,)) for lost nodes. Tier 1: from the neighbours (a
        rigid fit of their snapshot onto their positions now, fitting within half the reacquire gate) or, for a short
        gap, from the velocity: gate ``reacquire_gate``. Tier 2 (a rough prediction: the fit is poor or the
        node was last seen long ago): a wider gate, taken only under the stricter rules of
        :meth:`_reacquire`. Tier 3: a good prediction without a candidate for STUCK_FRAMES: tier 1 near it,
        tier 2 rules up to ``max_gate`` (it only tells ``ambiguous`` from ``no_marker``). Tier 0: no prediction.
        ``proof`` [m]: how far from the prediction a rough candidate may be and still be proven the node by
        its neighbourhood (0: no neighbourhood prediction)."""
        nb = self.nbrs[lost]
        A, B = self.S[lost], C[nb]
        w = np.isfinite(A[..., 0]) & np.isfinite(B[..., 0])
        A0, B0 = np.where(w[..., None], A, 0.0), np.where(w[..., None], B, 0.0)
        R, tt = kabsch(A0, B0, w)
        pred_s = np.einsum("lij,lj->li", R, np.nan_to_num(self.S_self[lost])) + tt
        fit = np.einsum("lij,lkj->lki", R, A0) + tt[:, None, :] - B0
        cnt = w.sum(axis=1)
        rms = np.sqrt((w * np.sum(fit ** 2, axis=2)).sum(axis=1) / np.maximum(cnt, 1))
        cb = B0.sum(axis=1) / np.maximum(cnt, 1)[:, None]
        cov = np.einsum("lki,lkj->lij", w[..., None] * (B0 - cb[:, None, :]), B0 - cb[:, None, :])
        spread = np.sqrt(np.maximum(np.linalg.eigvalsh(cov)[:, 1] / np.maximum(cnt, 1), 0.0))
        fitted = (cnt >= 3) & (spread >= MIN_SPREAD) & np.isfinite(self.S_self[lost, 0])
        good_s = fitted & (rms <= 0.5 * self.reacquire_gate)
        age = t - self.t_seen[lost]
        seen = np.isfinite(self.X[lost, 0])
        good_v = seen & (age <= VELOCITY_HORIZON) & (self.lost_frames[lost] <= VELOCITY_FRAMES)
        pred_v = self.X[lost] + self.V[lost] * np.minimum(age, 0.1)[:, None]
        gate_v = np.minimum(self.noise + self.max_speed * age, self.reacquire_gate)
        pred = np.where(good_s[:, None], pred_s, np.where(good_v[:, None], pred_v,
                                                          np.where(fitted[:, None], pred_s, self.X[lost])))
        rough_gate = np.where(fitted, np.minimum(self.reacquire_gate + 3.0 * rms, self.max_gate), self.max_gate)
        gate = np.where(good_s, self.reacquire_gate, np.where(good_v, gate_v, rough_gate))
        tier = np.where(good_s | good_v, 1, np.where(fitted | seen, 2, 0))     # gate: rough_gate for tier 2
        stuck = (tier == 1) & (self.lost_frames[lost] > STUCK_FRAMES)         # a good fit that finds nothing
        tier[stuck] = 3                                 # near it: look wider, take only what is near it
        gate[stuck] = self.max_gate
        proof = np.where(good_s | good_v, np.minimum(gate, self.reacquire_gate),     # a rough fit: its wider gate,
                         np.where(fitted, np.minimum(rough_gate, ROUGH_PROOF * self.reacquire_gate), 0.0))
        return pred, gate, tier, proof

    def _reacquire(self, t, Q, QL, om, C, mk, code, excluded_P):
        """Step 4: lost nodes take an unambiguous candidate marker near their prediction. Only nodes with a
        candidate at all (a marker no node holds and not seen beside them) are predicted: in most frames
        the markers not held are strays and other assets, tracked beside every node."""
        lost = np.flatnonzero(~np.isfinite(C[:, 0]) & (code != AMBIGUOUS))   # ambiguous in step 2: not now
        if not len(lost):
            return
        cand = self._candidates(lost, len(Q), om, mk)
        want = cand.any(axis=1)
        if len(excluded_P) and not want.all():        # reason 'excluded' for the others: when asked
            self._pending = (lost[~want], C.copy(), t, excluded_P)
        lost, cand = lost[want], cand[want]
        if not len(lost):
            return
        pred, gate, tier, proof = self._predict_lost(lost, C, t)
        code[lost[tier == 0]] = NO_PREDICTION
        has = tier > 0
        lost, pred, gate, tier, proof, cand = lost[has], pred[has], gate[has], tier[has], proof[has], cand[has]
        if not len(lost):
            return
        D = np.linalg.norm(pred[:, None] - Q[None], axis=2)
        bad = self._breaks_bars(lost, Q, C)
        near = cand & (D <= gate[:, None])
        cand &= ~bad
        recent = ((t - self.t_seen[lost]) <= VELOCITY_HORIZON) & (self.lost_frames[lost] <= VELOCITY_FRAMES)
        hint = self._hinted(lost, QL) & cand & (near | ~recent[:, None])   # a mapped label: the node's own
        near |= hint                                  # marker, unless it contradicts a recent track or a bar
        feasible = near & ~bad
        code[lost[(near & bad).any(axis=1) & ~feasible.any(axis=1)]] = BAR_LENGTH
        cost = np.where(feasible, np.where(hint, 0.0, D), BIG)
        r, c = linear_sum_assignment(cost)
        ok = cost[r, c] < BIG
        r, c = r[ok], c[ok]
        d = D[r, c]
        rival_row = cand[r] & (D[r] < d[:, None] + self.margin)
        rival_row[np.arange(len(r)), c] = False
        rival_col = feasible[:, c] & (D[:, c] < d[None, :] + self.margin)
        rival_col[r, np.arange(len(r))] = False
        clear = hint[r, c] | (~rival_row.any(axis=1) & ~rival_col.any(axis=0))
        rough = (tier[r] == 2) | ((tier[r] == 3) & (d > self.reacquire_gate))
        n_near = (cand[r] & (D[r] <= gate[r, None])).sum(axis=1)
        proven = self._rough_ok(lost[r], Q[c], n_near, C, d <= proof[r])
        self.unproven[lost[r[clear & rough & ~hint[r, c] & ~proven]]] = True
        clear &= ~rough | hint[r, c] | proven
        code[lost[r[~clear]]] = AMBIGUOUS
        k = lost[r[clear]]
        C[k] = Q[c[clear]]
        mk[k] = c[clear]
        self._enforce_bars(C, mk, code)
        still = ~np.isfinite(C[lost, 0])
        self._mark_excluded(lost[still], pred[still], gate[still], excluded_P, code)

    def _candidates(self, lost, m, om, mk) -> np.ndarray:
        """(L, m): markers no node holds, except those seen beside the lost node (other tracks' not_node)."""
        free = np.ones(m, bool)
        free[mk[mk >= 0]] = False
        cand = np.broadcast_to(free, (len(lost), m)).copy()
        cont = om >= 0
        if cont.any():
            cand[:, cont] &= ~self.others.not_node[om[cont]][:, lost].T
        return cand

    def _rough_ok(self, nodes, X, n_near, C, near_pred) -> np.ndarray:
        """A rough prediction (or a wide search) takes its candidate X only if it is the only candidate in
        the gate (``n_near``), X cannot be a stray back from an occlusion, and its neighbourhood proves it:
        X is near the neighbours' prediction (``near_pred``, within the proof radius) and a bar partner is
        tracked (its length was checked), or two or more bar partners are tracked (one bar proves nothing:
        a stray sits at about a bar partner's distance too)."""
        partners = self._partners_tracked(nodes, C)
        return (n_near == 1) & ~self._maybe_ghost(X) & (((partners >= 1) & near_pred) | (partners >= 2))

    def _maybe_ghost(self, X) -> np.ndarray:
        """Per position in X (k,3): it may be a vanished non-node marker come back - within twice the
        reacquire gate of a ghost's prediction, or a ghost cannot be predicted now. A rough re-acquisition
        never takes such a marker (a stray seen beside the node, occluded and back, is not the node)."""
        gp = self.others.ghost_pred
        if not len(gp) or not len(X):
            return np.zeros(len(X), bool)
        if not np.isfinite(gp[:, 0]).all():
            return np.ones(len(X), bool)
        return (np.linalg.norm(X[:, None] - gp[None], axis=2) < 2.0 * self.reacquire_gate).any(axis=1)

    def _hinted(self, lost, QL) -> np.ndarray:
        """(L, m): marker m carries the label the marker map gives lost node L."""
        hint = np.zeros((len(lost), len(QL)), bool)
        if self.hint_of:
            pos = {int(k): i for i, k in enumerate(lost)}
            for j, lab in enumerate(QL):
                k = self.hint_of.get(lab) if lab is not None else None
                if k in pos:
                    hint[pos[k], j] = True
        return hint

    def _partners_tracked(self, nodes, C) -> np.ndarray:
        """Per node in ``nodes``: how many of its bar partners are tracked in C."""
        tracked = np.isfinite(C[:, 0])
        return (np.bincount(self.pi[tracked[self.pj]], minlength=self.n) +
                np.bincount(self.pj[tracked[self.pi]], minlength=self.n))[nodes]

    def _breaks_bars(self, lost, Q, C) -> np.ndarray:
        """(L, m): candidate marker m would break a bar of lost node L with a tracked partner."""
        bad = np.zeros((len(lost), len(Q)), bool)
        pos = np.full(self.n, -1)
        pos[lost] = np.arange(len(lost))
        ref = self._bar_reference()
        for a, b in ((self.pi, self.pj), (self.pj, self.pi)):
            sel = (pos[a] >= 0) & np.isfinite(C[b, 0])
            if sel.any():
                dist = np.linalg.norm(Q[None] - C[b[sel]][:, None], axis=2)
                viol = ((np.abs(dist - ref[sel][:, None]) > self.bar_tol) |
                        self._off_model(dist, self.plen[sel][:, None]))
                np.logical_or.at(bad, pos[a[sel]], viol)
        return bad

    def _mark_excluded(self, nodes, pred, gate, excluded_P, code):
        """Nodes still lost whose only nearby marker is excluded get reason EXCLUDED."""
        if not len(nodes) or not len(excluded_P):
            return
        near = (np.linalg.norm(pred[:, None] - excluded_P[None], axis=2) <= gate[:, None]).any(axis=1)
        sel = near & (code[nodes] == NO_MARKER)
        code[nodes[sel]] = EXCLUDED

    def _register(self, t, Q, QL, C, mk, code):
        """Step 5: place the model on the markers (marker map, else rigid fit) and take its nodes."""
        free = np.ones(len(Q), bool)
        free[mk[mk >= 0]] = False
        if self.hint_of:
            pred, gate = self.gates(t)
            recent = ((t - self.t_seen) <= VELOCITY_HORIZON) & (self.lost_frames <= VELOCITY_FRAMES)
            for j, lab in enumerate(QL):
                k = self.hint_of.get(lab) if lab is not None else None
                if k is None or not free[j] or np.isfinite(C[k, 0]):
                    continue
                if recent[k] and np.linalg.norm(Q[j] - pred[k]) > gate[k]:
                    continue
                C[k], mk[k], free[j] = Q[j], j, False
            self._enforce_bars(C, mk, code)
            if np.isfinite(C[:, 0]).sum() >= min(3, self.n):
                self._registered(t, None, "marker map")
                return
        idx = np.flatnonzero(free)
        if len(idx) > MAX_REGISTER_MARKERS:
            self._next_register = t + REGISTER_RETRY
            self.register_note = (f"{len(idx)} candidate markers: too many to place the model (at most "
                                  f"{MAX_REGISTER_MARKERS}; exclude other assets with tracking.exclude)")
            if not self.registered:
                code[:] = UNREGISTERED
            return
        reg = self._placement(Q[idx])
        if reg is None or reg.ambiguous:
            self._next_register = t + REGISTER_RETRY
            self.register_note = ("no rigid placement puts 3 nodes on markers" if reg is None else
                                  f"ambiguous: two placements fit within {1e3 * reg.rms:.1f} and "
                                  f"{1e3 * reg.second_rms:.1f} mm RMS (a symmetric robot)")
            if not self.registered:
                code[:] = UNREGISTERED
            self.registration = reg
            return
        a = reg.assignment
        k = np.flatnonzero((a >= 0) & ~np.isfinite(C[:, 0]))
        k = k[free[idx[a[k]]]]
        pred, gate = self.gates(t)                   # a node seen moments ago must fit its motion
        recent = ((t - self.t_seen[k]) <= VELOCITY_HORIZON) & (self.lost_frames[k] <= VELOCITY_FRAMES)
        k = k[~recent | (np.linalg.norm(Q[idx[a[k]]] - pred[k], axis=1) <= gate[k])]
        C[k], mk[k] = Q[idx[a[k]]], idx[a[k]]
        self._enforce_bars(C, mk, code)
        self._registered(t, reg, f"rigid fit, {1e3 * reg.rms:.1f} mm RMS" + self._fixed_note(reg))

    def _placement(self, Q):
        """A rigid placement of the model on the markers Q: a model with fixed nodes where its file puts it,
        else (the capture in another frame) by its fixed part's markers, the rest matched from there
        (registration.register_fixed_part), else wherever its shape fits, like a free one."""
        args = (self.ref, np.stack([self.pi, self.pj], axis=1), self.plen, Q)
        kw = dict(tol=self.register_tol, margin=self.margin, prior_tol=self.init_gate)
        reg = register(*args, prior_only=True, **kw) if self.anchored else None
        if self.anchored and (reg is None or reg.ambiguous):
            fixed = np.asarray(self.model.fixed_nodes, int)
            reg = register_fixed_part(self.ref, fixed[fixed < self.n], *args[1:], **kw)
        if reg is None or reg.ambiguous:
            reg = register(*args, **kw)
        return reg

    def _fixed_note(self, reg) -> str:
        """For a model with fixed nodes placed away from where its file puts them: how far, and what to do."""
        if not self.anchored:
            return ""
        fixed = np.asarray(self.model.fixed_nodes, int)
        fixed = fixed[fixed < self.n]
        away = float(np.linalg.norm(self.ref[fixed] @ reg.R.T + reg.t - self.ref[fixed], axis=1).max())
        if away <= self.init_gate:
            return ""
        return (f"; the fixed nodes {','.join(self.node_names[i] for i in fixed)} are {away:.2f} m from where the "
                "model file puts them: the capture is in another frame than the model (the tracks are in the "
                "capture's frame; compare them with tensegrity-compare --register-fixed, or --capture-transform "
                "REPORT.json of 'tensegrity-mocap model')")

    def _registered(self, t, reg, note):
        self.registered = True
        self.registration = reg
        self.register_note = note
        self.stats.registrations += 1

    def _commit(self, t, C, mk, QL, code):
        valid = np.isfinite(C[:, 0])
        was = self.live
        invalid = self._commit_positions(t, C, valid)
        d = lengths(C[self.pi] - C[self.pj])
        L = self.L_meas
        L[:] = np.where(np.isnan(d), L, np.where(np.isnan(L), d, L + BAR_MEAN_WEIGHT * (d - L)))
        self._commit_labels(mk, QL, valid & was)
        self.live = valid
        pending = None if self._pending is None else self._pending[0]
        if not np.array_equal(code, self._code) or not np.array_equal(pending, self._pending_nodes):
            self.reasons_version += 1
        self._pending_nodes = pending
        self._code = code
        self.t = t
        st = self.stats
        st.frames += 1
        st.invalid_node_frames += invalid
        if invalid:
            st.ambiguous += int(np.count_nonzero(code == AMBIGUOUS))
            st.per_node_invalid += ~valid

    def _commit_positions(self, t, C, valid) -> int:
        """Velocities, last positions and snapshots of the frame's tracked nodes (``valid``); returns how
        many are not tracked."""
        invalid = int(self.n - valid.sum())
        if not invalid and self.live.all():
            self._commit_all_tracked(t, C)
        else:
            self._commit_some(t, C, valid, self.live)
        return invalid

    def _commit_all_tracked(self, t, C):
        """_commit_some for the usual frame, every node tracked now and in the last frame: the same values
        written whole (element for element the same arithmetic), without the masks."""
        if self.t is not None and t > self.t:
            self.V *= 0.5
            self.V += (0.5 / (t - self.t)) * (C - self.X)
        self.X[:] = C
        self.t_seen[:] = t
        self.ever[:] = True
        self.lost_frames[:] = 0
        self.S[:] = C[self.nbrs]
        self.S_self[:] = C

    def _commit_some(self, t, C, valid, was):
        """Velocities, last positions and neighbourhood snapshots of the nodes tracked now (``valid``; ``was``:
        in the last frame); counts re-acquired and dropped nodes."""
        if self.t is not None and t > self.t:
            both = valid & was
            self.V[both] = 0.5 * self.V[both] + (0.5 / (t - self.t)) * (C[both] - self.X[both])
        self.V[valid & ~was] = 0.0
        self.stats.reacquired += int(np.count_nonzero(valid & ~was & self.ever))
        self.stats.dropped_labels += int(np.count_nonzero(~valid & was))
        self.X[valid] = C[valid]
        self.t_seen[valid] = t
        self.ever |= valid
        self.lost_frames += 1
        self.lost_frames[valid] = 0
        self.S[valid] = C[self.nbrs[valid]]
        self.S_self[valid] = C[valid]

    def _commit_labels(self, mk, QL, kept):
        """The labels the nodes hold now (node_of for the frame guard); counts labels that changed under a
        node that kept its marker (Motive relabelled it)."""
        old = self.label_of
        new = [QL[j] if j >= 0 else None for j in mk.tolist()]
        if self.node_of or any(lab is not None for lab in new):
            self.stats.relabels += sum(1 for k in np.flatnonzero(kept).tolist()
                                       if new[k] is not None and old[k] is not None and new[k] != old[k])
            self.node_of = {lab: k for k, lab in enumerate(new) if lab is not None}
        self.label_of = new
