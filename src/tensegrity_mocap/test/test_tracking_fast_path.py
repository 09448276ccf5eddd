"""The frame thread's fast paths (issue 36 item 5b: CPU per frame) change no tracked position: a replayed take
- strays, a swinging payload, occlusions, relabels, dropped frames, one corrupted frame - tracked through
the frame guard with them gives the node positions, reasons, marker status and counters of the reference
arithmetic they replaced, bit for bit (each fast path does the same IEEE operations in the same order, or
skips a step whose result it already knows; anything else would show here as a difference)."""
import numpy as np

from tensegrity_mocap.synthetic import make_capture, six_bar_robot
from tensegrity_mocap.tracking import NodeTracker, plausibility, tracker as tracking
from tensegrity_mocap.tracking.plausibility import FrameGuard
from test_tracking_unknown_robot import robot_model


def _reference(monkeypatch):
    """The arithmetic before the fast paths: numpy's norm, the masked commit, no caches."""
    def lengths(v):
        return np.linalg.norm(v, axis=-1)

    def distances(A, B):
        return np.linalg.norm(A[:, None] - B[None], axis=2)

    def commit(self, t, C, valid):
        self._commit_some(t, C, valid, self.live)
        return int(self.n - valid.sum())

    def mapped(self, labels):
        return np.fromiter((self.tracker.node_of.get(label, -1) for label in labels), np.int64, len(labels)), False

    def absurd(P, max_coordinate):
        P = np.asarray(P, float).reshape(-1, 3)
        finite = np.isfinite(P).all(axis=1)
        with np.errstate(invalid="ignore"):
            far = (np.abs(P) > max_coordinate).any(axis=1)
        return ~(finite | np.isnan(P).all(axis=1)) | (finite & far)

    monkeypatch.setattr(tracking, "lengths", lengths)
    monkeypatch.setattr(tracking, "distances", distances)
    monkeypatch.setattr(plausibility, "lengths", lengths)
    monkeypatch.setattr(NodeTracker, "_commit_positions", commit)
    monkeypatch.setattr(FrameGuard, "_mapped_nodes", mapped)
    monkeypatch.setattr(plausibility, "absurd_rows", absurd)


def _replay(model, cap) -> tuple:
    tr = NodeTracker(model, exclude=["payload:*"])
    guard = FrameGuard(tr, max_coordinate=10.0)
    X = np.full(cap.nodes.shape, np.nan)
    codes, status, state = [], [], []
    for r in range(len(cap.t)):
        P = cap.markers[r].copy()
        if r == 400:
            P[3] = (1e3, 0.0, 0.0)                            # corrupted: rejected whole (absurd)
        out = guard.process(r / cap.rate, "motive", int(cap.frame_numbers[r]), float(cap.t[r]), cap.labels[r], P)
        if out is not None:
            X[r] = out
            codes.append(tr.code.copy())
            status.append(tr.marker_status.copy())
            state.append(np.concatenate([tr.V.ravel(), tr.L_meas, tr.S.ravel()]))
    return X, np.array(codes), status, vars(tr.stats), guard.stats, np.array(state)


def test_fast_paths_give_the_reference_positions_bit_for_bit(tmp_path, monkeypatch):
    robot = six_bar_robot(seed=1)
    cap = make_capture(robot, duration=2.5, rate=360.0, seed=1)
    model = robot_model(robot, tmp_path)
    fast = _replay(model, cap)
    with monkeypatch.context() as m:
        _reference(m)
        ref = _replay(model, cap)
    assert np.isfinite(fast[0]).all(axis=2).mean() > 0.8       # mostly tracked: the steady path ran
    assert (~np.isfinite(fast[0])).any()                       # and the occluded one too
    np.testing.assert_array_equal(fast[0], ref[0])
    np.testing.assert_array_equal(fast[1], ref[1])
    assert all(np.array_equal(a, b) for a, b in zip(fast[2], ref[2])) and len(fast[2]) == len(ref[2])
    stats_fast = {k: v for k, v in fast[3].items() if k != "per_node_invalid"}
    assert stats_fast == {k: v for k, v in ref[3].items() if k != "per_node_invalid"}
    np.testing.assert_array_equal(fast[3]["per_node_invalid"], ref[3]["per_node_invalid"])
    assert fast[4] == ref[4] and fast[4].rejected["absurd"] >= 1
    np.testing.assert_array_equal(fast[5], ref[5])             # velocities, bar means, snapshots too


def test_y_up_to_z_up_is_the_stacked_columns_bit_for_bit():
    from tensegrity_mocap.axes import y_up_to_z_up
    P = np.random.default_rng(3).normal(0.0, 2.0, (7, 5, 3))
    P[0, 0] = (np.nan, -0.0, np.inf)
    np.testing.assert_array_equal(y_up_to_z_up(P), np.stack([P[..., 0], -P[..., 2], P[..., 1]], axis=-1))
    assert y_up_to_z_up([1.0, 2.0, 3.0]).tolist() == [1.0, -3.0, 2.0]
