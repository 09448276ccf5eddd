"""Frame-level plausibility of motion-capture frames, checked before they reach the tracker (no ROS).

:class:`FrameGuard` wraps a :class:`~tensegrity_mocap.tracking.NodeTracker`. A frame is rejected as a
whole - not tracked, so not published, and the tracker state is not touched - and counted by reason:

* ``out_of_order``: its frame number or timestamp is not after the last accepted frame's (a duplicate, or
  time going backwards), or the two do not advance together (time per frame-number step outside
  [50 us, ``max_dt``]: a corrupted frame number or timestamp); it is never used to compute a time step;
* ``absurd``: a marker with a non-finite coordinate or one beyond ``max_coordinate`` [m] (a marker whose
  three coordinates are all NaN is an occluded marker, not absurd);
* ``motion``: a marker whose label is mapped to a node lies outside that node's motion gate (prediction
  +- ``noise`` + ``max_speed`` x dt, dt = the frame's time step clipped to the tracker's
  [``min_dt``, ``max_dt``]);
* ``bar_length``: the mapped markers break a bar's length by more than ``bar_tol`` (against the model);
* ``bar_jump``: a bar measured in this frame differs from its measured length so far (a running mean over
  the accepted frames, kept by the tracker, newest weight ``tracking.BAR_MEAN_WEIGHT``) by more than
  ``bar_jump`` [m]: bars are
  rigid, so only marker noise changes a marker-to-marker distance, whatever the model says (this bounds
  what a corrupted coordinate can do to a published bar even where ``bar_tol`` is loose for a model that
  does not match the markers exactly);
* ``duplicate_label``: a mapped label twice in one frame;
* ``other_sender``: the frame comes from another sender (NatNet source address and port) than the stream
  being tracked: two interleaved streams are never one plausible motion. By default (``sender_silence``
  0) the first stream heard is the only one ever tracked: another sender, even after the tracked one fell
  silent (another process on the server's host, a restarted Motive's new port), is rejected and counted,
  and the bridge must be restarted to follow it; with ``sender_silence`` > 0 (an explicit opt-in) another
  sender is taken once the tracked one has been silent that long. The NatNet sender filter keeps other
  hosts out.

A bit flip that survives the parser lands in one of these (or changes a marker by less than the gates).
An isolated reject costs one frame. When the tracked stream sends ``resync_frames`` rejected frames in a
row, the stream itself changed (labels swapped, Motive restarted or its playback looped, a long pause):
the next frame is handed to the tracker node by node - it drops labels that jumped (``bar_jump`` against
the running mean) or break bars (``bar_tol`` against the model: the running mean alone follows a creeping
marker) and
re-acquires only unambiguous markers, never guessing - with the time step taken from the receive clock
(clipped to [min_dt, max_dt]), and it becomes the new reference for frame numbers and timestamps. A new
stream (first frame, or another sender after the silence) starts the same way. Absurd markers are
removed from such a frame.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tensegrity_mocap.tracking.tracker import lengths

REASONS = ("out_of_order", "absurd", "motion", "bar_length", "bar_jump", "duplicate_label", "other_sender")
IMPLAUSIBLE = ("absurd", "motion", "bar_length", "bar_jump", "duplicate_label")   # the "implausible frames"
MIN_FRAME_PERIOD = 5e-5             # s: no capture system sends more than 20 kHz


@dataclass
class GuardStats:
    accepted: int = 0
    rejected: dict = field(default_factory=lambda: dict.fromkeys(REASONS, 0))
    resyncs: int = 0              # frames taken node by node after resync_frames rejects in a row
    sender_changes: int = 0       # the tracked stream changed to another sender after its silence

    @property
    def implausible(self) -> int:
        return sum(self.rejected[r] for r in IMPLAUSIBLE)


def absurd_rows(P, max_coordinate: float) -> np.ndarray:
    """Rows of P (k,3) [m] with a non-finite coordinate or |coordinate| > max_coordinate [m]; all-NaN
    rows (occluded markers) are not absurd."""
    P = np.asarray(P, float).reshape(-1, 3)
    top = np.abs(P).max() if len(P) else 0.0
    if top <= max_coordinate and top < np.inf:    # the usual frame, all finite and near (False with a NaN)
        return np.zeros(len(P), bool)
    finite = np.isfinite(P).all(axis=1)
    with np.errstate(invalid="ignore"):
        far = (np.abs(P) > max_coordinate).any(axis=1)
    return ~(finite | np.isnan(P).all(axis=1)) | (finite & far)


class FrameGuard:
    """Admits frames to ``tracker`` (see the module docstring). ``max_coordinate`` [m],
    ``resync_frames`` (>= 1), ``sender_silence`` [s, receive clock; 0: another sender is never taken],
    ``bar_jump`` [m] (inf: off)."""

    def __init__(self, tracker, max_coordinate: float = 100.0, resync_frames: int = 5,
                 sender_silence: float = 0.0, bar_jump: float = 0.003):
        self.tracker = tracker
        self.bar_jump = float(bar_jump)
        self.max_coordinate = float(max_coordinate)
        self.resync_frames = max(1, int(resync_frames))
        self.sender_silence = float(sender_silence)
        self.stats = GuardStats()
        self.sender = None                 # the tracked stream (None: none yet)
        self.frame_number = None           # last accepted frame's number and timestamp [s]
        self.timestamp = None
        self.t_rx = None                   # receive time [s] of the last accepted frame
        self.run = 0                       # rejects in a row from the tracked stream
        self._mapped = None                # (labels, node_of, nodes) of the last motion check

    @property
    def started(self) -> bool:
        """A frame has been accepted (there is a tracked stream)."""
        return self.t_rx is not None

    def process(self, t_rx: float, sender, frame_number, timestamp, labels, P, U=None):
        """Node positions (n,3) [m] from ``tracker.update`` for an admitted frame, None for a rejected one.
        ``t_rx`` [s] monotonic receive time; ``sender`` any hashable (NatNet (ip, port)); ``frame_number``
        and ``timestamp`` [s] may be None (not checked); ``labels``/``P`` (k,3) [m]/``U`` (m,3) [m] as for
        :meth:`NodeTracker.update` (NaN rows = occluded)."""
        P = np.asarray(P, float).reshape(-1, 3)
        U = np.zeros((0, 3)) if U is None else np.asarray(U, float).reshape(-1, 3)
        tr = self.tracker
        new_stream = not self.started
        if self.started and sender != self.sender:
            if self.sender_silence <= 0 or t_rx - self.t_rx < self.sender_silence:
                return self._reject("other_sender", counts=False)
            new_stream = True
        bad_p, bad_u = absurd_rows(P, self.max_coordinate), absurd_rows(U, self.max_coordinate)
        resync = new_stream or self.run >= self.resync_frames
        if resync:
            if bad_p.any() or bad_u.any():
                P = P.copy()
                P[bad_p] = np.nan
                U = U[~bad_u]

            t_in = float(timestamp) if timestamp is not None and np.isfinite(timestamp) else float(t_rx)
            step = None if self.t_rx is None else t_rx - self.t_rx     # from the receive clock, never backwards
            if self.started:
                if new_stream:
                    self.stats.sender_changes += 1
                else:
                    self.stats.resyncs += 1
        else:
            reason = self._order(frame_number, timestamp)
            if reason is None and (bad_p.any() or bad_u.any()):
                reason = "absurd"
            if reason is None:
                step = (float(timestamp) - self.timestamp if timestamp is not None and self.timestamp is not None
                        else t_rx - self.t_rx)                   # s; the tracker clips it
                t_in = float(timestamp) if timestamp is not None else float(t_rx)
                reason = self._motion_and_bars(tr.clock(t_in, step), labels, P)
            if reason is not None:
                return self._reject(reason)
        # a resync frame skips the whole-frame checks so that the tracker can sort swapped or restarted labels
        # out node by node, but not the rigid bars: nodes of a bar that jumped are dropped before the commit
        X = tr.update(t_in, labels, P, U if len(U) else None, dt=step, bar_jump=self.bar_jump if resync else None)
        self.sender, self.t_rx, self.run = sender, t_rx, 0
        self.frame_number = None if frame_number is None else int(frame_number)
        self.timestamp = None if timestamp is None or not np.isfinite(timestamp) else float(timestamp)
        self.stats.accepted += 1
        return X

    # --- checks --------------------------------------------------------------------------------------
    def _reject(self, reason: str, counts: bool = True):
        self.stats.rejected[reason] += 1
        if counts:
            self.run += 1
        return None

    def _order(self, frame_number, timestamp):
        """"out_of_order" unless frame number and timestamp both come after the last accepted frame's and
        advance together: dt / (frame-number step) within [MIN_FRAME_PERIOD, max_dt] (a bit flip in either
        field that makes a jump, or a duplicate or backward frame); None where they do."""
        dfn = None if frame_number is None or self.frame_number is None else int(frame_number) - self.frame_number
        if dfn is not None and dfn <= 0:
            return "out_of_order"
        if timestamp is None:
            return None
        if not np.isfinite(timestamp):
            return "out_of_order"
        if self.timestamp is not None:
            dt = float(timestamp) - self.timestamp
            if dt <= 0 or (dfn is not None and not MIN_FRAME_PERIOD <= dt / dfn <= self.tracker.max_dt):
                return "out_of_order"
        return None

    def _motion_and_bars(self, t, labels, P):
        """Reason the mapped markers are implausible at tracker time ``t`` [s], or None."""
        tr = self.tracker
        pred, gate = tr.gates(t)
        ks, distinct = self._mapped_nodes(labels)
        sel = (ks >= 0) & np.isfinite(P).all(axis=1) if len(ks) else np.zeros(0, bool)
        if not sel.all():                            # the usual frame: every label mapped, every marker seen
            ks, P = ks[sel], P[sel]
        if not distinct and np.bincount(ks).max() > 1:
            return "duplicate_label"
        seen = np.isfinite(pred[ks, 0])
        if seen.all():
            if np.any(lengths(P - pred[ks]) > gate[ks]):
                return "motion"
        elif np.any(lengths(P[seen] - pred[ks[seen]]) > gate[ks[seen]]):
            return "motion"
        Q = P
        C = np.full((tr.n, 3), np.nan)
        C[ks] = Q
        d = self._pair_lengths(C)                    # NaN: a pair not measured now (or not before)
        with np.errstate(invalid="ignore"):
            if np.any(np.abs(d - tr.plen) > tr.bar_tol):
                return "bar_length"
            if np.any(np.abs(d - self.pair_length) > self.bar_jump):
                return "bar_jump"
        return None

    def _mapped_nodes(self, labels) -> tuple:
        """(per label the node whose marker carries it (tracker.node_of) or -1, no node twice); the last
        frame's answer while the labels and node_of are the same (a steady stream: nearly every frame)."""
        node_of, labels = self.tracker.node_of, list(labels)
        if self._mapped is not None and self._mapped[0] == labels and self._mapped[1] == node_of:
            return self._mapped[2:]
        ks = np.fromiter((node_of.get(label, -1) for label in labels), np.int64, len(labels))
        mapped = ks[ks >= 0]
        self._mapped = (labels, dict(node_of), ks, not len(mapped) or np.bincount(mapped).max() <= 1)
        return self._mapped[2:]

    @property
    def pair_length(self) -> np.ndarray:
        """Running mean length [m] of every rigid pair over the accepted frames (NaN: not measured yet); the
        tracker keeps it (NodeTracker.L_meas) from exactly the frames this guard admits."""
        return self.tracker.L_meas

    def _pair_lengths(self, X) -> np.ndarray:
        """Length [m] of every rigid pair in node positions X (n,3), NaN where an end is unknown."""
        tr, X = self.tracker, np.asarray(X, float)
        return lengths(X[tr.pi] - X[tr.pj])
