"""Per-node tracking through noise, occlusions, label changes and swaps, on the simulated manipulator
experiment: every valid output is the right node (within the marker noise), unknown nodes are NaN."""
import numpy as np
import pytest

from tensegrity_engine import Simulator, load_model, paper_sinusoid
from tensegrity_mocap.axes import from_ros_frame, to_ros_frame
from tensegrity_mocap.tracking import NodeTracker, rigid_pairs

MODEL = load_model("stacked_manipulator")
NOISE = 0.0005                      # m, 0.5 mm marker noise (OptiTrack residuals are ~0.1-1 mm)
OK = 6 * NOISE                      # a correct node is within a few noise sigmas of the truth


@pytest.fixture(scope="module")
def truth():
    traj = Simulator(MODEL).run(4.0, inputs=paper_sinusoid(MODEL), rate=120.0)
    return traj.t, traj.nodes[:, :MODEL.n_physical]


def markers(X, rng, labels):
    return labels, X + rng.normal(0, NOISE, X.shape)


def check(out, X, allow_invalid=()):
    valid = np.isfinite(out[:, 0])
    err = np.linalg.norm(out[valid] - X[valid], axis=1)
    assert np.all(err < OK), f"wrong node positions: max error {err.max():.4f} m"
    return valid


def test_rigid_pairs_are_the_bars_on_physical_nodes():
    i, j, L = rigid_pairs(MODEL)
    assert len(i) == 18 and np.all(i < 24) and np.all(j < 24)
    X = MODEL.positions[:24]
    assert np.allclose(np.linalg.norm(X[i] - X[j], axis=1), L)


def test_initial_assignment_from_the_model_and_steady_tracking(truth):
    t, X = truth
    rng = np.random.default_rng(0)
    labels = list(rng.permutation(1000)[:24] + 5000)          # arbitrary labels, no marker map
    tr = NodeTracker(MODEL)
    for k in range(len(t)):
        out = tr.update(t[k], *markers(X[k], rng, labels))
        valid = check(out, X[k])
        assert valid.all()
    assert tr.stats.dropped_labels == 0


def test_occlusion_gives_nan_then_the_node_comes_back_with_a_new_label(truth):
    t, X = truth
    rng = np.random.default_rng(1)
    labels = list(range(24))
    tr = NodeTracker(MODEL, marker_map={i: MODEL.node_names[i] for i in range(24)})
    node = MODEL.node_index("n16")
    for k in range(len(t)):
        lab = list(labels)
        P = X[k] + rng.normal(0, NOISE, X[k].shape)
        if 100 <= k < 160:
            P[node] = np.nan                                   # occluded for 0.5 s
        if k >= 160:
            lab[node] = 777                                    # Motive relabels it when it reappears
        out = tr.update(t[k], lab, P)
        valid = check(out, X[k])
        if 100 <= k < 160:
            assert not valid[node]                             # invalid while unknown, never guessed
        if k >= 161:
            assert valid[node]                                 # re-acquired under its new label
    assert tr.node_of[777] == node and tr.stats.reacquired == 1
    assert tr.stats.per_node_invalid[node] == 60 and tr.stats.per_node_invalid.sum() == 60


def test_swapped_labels_are_never_reported_as_the_wrong_node(truth):
    t, X = truth
    rng = np.random.default_rng(2)
    labels = list(range(24))
    tr = NodeTracker(MODEL, marker_map={i: MODEL.node_names[i] for i in range(24)})
    a, b = MODEL.node_index("n4"), MODEL.node_index("n20")     # on different bars, far apart
    c, d = MODEL.bars[0]                                        # the two ends of one bar (same length!)
    for k in range(len(t)):
        lab = list(labels)
        if k >= 150:
            lab[a], lab[b] = lab[b], lab[a]
        if k >= 250:
            lab[c], lab[d] = lab[d], lab[c]
        out = tr.update(t[k], *markers(X[k], rng, lab))
        valid = check(out, X[k])
        if k > 260:
            assert valid[[a, b, c, d]].all()                    # recovered, with the right positions
    assert tr.stats.relabels >= 4                               # the swapped labels were noticed (positions rule)
    assert tr.node_of[labels[a]] == b and tr.node_of[labels[c]] == d   # and remapped the right way round


def test_ambiguous_candidates_leave_the_node_invalid(truth):
    t, X = truth
    rng = np.random.default_rng(3)
    tr = NodeTracker(MODEL, marker_map={i: MODEL.node_names[i] for i in range(24)})
    node = MODEL.node_index("n7")
    for k in range(60):
        tr.update(t[k], *markers(X[k], rng, list(range(24))))
    for k in range(60, 200):
        P = X[k] + rng.normal(0, NOISE, X[k].shape)
        P[node] = np.nan
        out = tr.update(t[k], list(range(24)), P, unlabeled=None)
    assert not np.isfinite(out[node, 0])
    # reappearing as two unlabeled markers 1 cm apart around the true position: which is it? Unknown.
    k = 200
    P = X[k] + rng.normal(0, NOISE, X[k].shape)
    P[node] = np.nan
    twins = np.array([X[k, node] + [0.005, 0, 0], X[k, node] - [0.005, 0, 0]])
    out = tr.update(t[k], list(range(24)), P, unlabeled=twins)
    assert not np.isfinite(out[node, 0]) and tr.stats.ambiguous >= 1
    out = tr.update(t[k + 1], list(range(24)), X[k + 1], unlabeled=None)
    check(out, X[k + 1])


def test_unlabeled_markers_only(truth):
    t, X = truth
    rng = np.random.default_rng(4)
    tr = NodeTracker(MODEL)
    for k in range(len(t)):
        P = X[k] + rng.normal(0, NOISE, X[k].shape)
        out = tr.update(t[k], [], [], unlabeled=P[rng.permutation(24)])
        assert check(out, X[k]).all()


def test_y_up_conversion_round_trip_and_axes():
    rng = np.random.default_rng(5)
    P = rng.normal(size=(10, 3))
    off = (0.1, -0.2, 0.3)
    assert np.allclose(from_ros_frame(to_ros_frame(P, "y", off), "y", off), P, atol=1e-15)
    up = to_ros_frame([[0.0, 1.0, 0.0]], "y")[0]                # Motive's up becomes z
    assert np.allclose(up, [0, 0, 1])
    R = np.column_stack([to_ros_frame([e], "y")[0] for e in np.eye(3)])
    assert np.isclose(np.linalg.det(R), 1.0)                    # a rotation, not a reflection
    with pytest.raises(ValueError):
        to_ros_frame(P, "x")


def test_time_going_back_keeps_the_motion_gate_on(truth):
    """A frame whose time goes backwards used to switch the motion gate off (every mapped marker taken,
    wherever it was); now the step is clipped to min_dt: a displaced backward frame is not taken, and a
    restarted stream (a looped take) is picked up again node by node, never wrongly."""
    t, X = truth
    rng = np.random.default_rng(6)
    tr = NodeTracker(MODEL, marker_map={i: MODEL.node_names[i] for i in range(24)})
    for k in range(200):
        check(tr.update(t[k], *markers(X[k], rng, list(range(24)))), X[k])
    t_before = tr.t
    shifted = X[199] + [0.0, 0.0, 0.015]                      # 15 mm up: bars intact, within max_gate
    out = tr.update(t[199] - 1.0, list(range(24)), shifted)
    assert not np.isfinite(out[:, 0]).any()                    # not one node taken from the displaced frame
    assert tr.t > t_before                                     # the tracker clock never goes back
    recovered = None
    for k in range(0, 100):                                    # the stream restarts (e.g. a looped take)
        out = tr.update(t[k], *markers(X[k], rng, list(range(24))))
        valid = check(out, X[k])                               # whatever is valid is the right node
        if recovered is None and valid.all():
            recovered = k
    assert recovered is not None and recovered < 30                # within a quarter second of stream time


def test_time_step_is_clipped(truth):
    tr = NodeTracker(MODEL, min_dt=0.001, max_dt=0.05)
    assert tr.clock(5.0) == 5.0
    tr.update(5.0, [], np.zeros((0, 3)))
    assert tr.clock(4.0) == pytest.approx(5.001) and tr.clock(5.0) == pytest.approx(5.001)
    assert tr.clock(1e300) == pytest.approx(5.05) and tr.clock(float("nan")) == pytest.approx(5.05)
    assert tr.clock(5.02) == pytest.approx(5.02)
