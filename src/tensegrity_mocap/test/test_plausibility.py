"""FrameGuard (frame-level plausibility, no ROS, no sockets): whole frames that are out of order, absurd,
move mapped nodes beyond the motion gate, break bars, repeat a label or come from a second sender are
rejected and counted with the tracker untouched; a lasting change resyncs node by node; bit-flipped NatNet
packets through parser + guard + tracker never give a frame that breaks a bar or puts a node 1 cm off."""
import copy

import numpy as np
import pytest

from natnet_faults import flip_bits
from tensegrity_engine import Simulator, load_model, paper_sinusoid
from tensegrity_mocap import natnet as nn
from tensegrity_mocap.tracking.plausibility import FrameGuard, absurd_rows
from tensegrity_mocap.tracking import NodeTracker, rigid_pairs

MODEL = load_model("stacked_manipulator")
NOISE = 0.0005
LABELS = list(range(24))
SENDER = ("127.0.0.1", 1511)


@pytest.fixture(scope="module")
def truth():
    traj = Simulator(MODEL).run(4.0, inputs=paper_sinusoid(MODEL), rate=120.0)
    return traj.t, traj.nodes[:, :24]


def make(**kw):
    args = dict(max_speed=0.5, noise=0.003, bar_tol=0.004)
    args.update(kw)
    tr = NodeTracker(MODEL, marker_map={i: MODEL.node_names[i] for i in range(24)}, **args)
    return FrameGuard(tr)


def feed(g, t, X, rng, ks, sender=SENDER):
    for k in ks:
        out = g.process(t[k], sender, k + 1, t[k], LABELS, X[k] + rng.normal(0, NOISE, X[k].shape))
        assert out is not None and np.isfinite(out).all()
    return out


def state(g):
    tr = g.tracker
    return copy.deepcopy((tr.X, tr.V, tr.t_seen, tr.t, tr.node_of, tr.label_of, g.frame_number, g.timestamp))


def same(a, b):
    return all(np.array_equal(x, y, equal_nan=True) if isinstance(x, np.ndarray) else x == y for x, y in zip(a, b))


def test_absurd_rows():
    P = np.array([[0.1, 0.2, 0.3], [np.nan] * 3, [np.nan, 0.0, 0.0], [np.inf, 0, 0], [0, 0, 101.0], [0, -99.0, 0]])
    assert absurd_rows(P, 100.0).tolist() == [False, False, True, True, True, False]


@pytest.mark.parametrize("case", ["duplicate_number", "backward_number", "backward_time", "same_time", "nan_time",
                                  "number_jump", "time_jump", "absurd", "inf", "half_nan", "motion", "bar",
                                  "duplicate_label", "bar_jump"])
def test_implausible_frame_is_rejected_whole_and_counted(truth, case):
    t, X = truth
    rng = np.random.default_rng(1)
    # bar_jump: the bridge's defaults (bar_tol 10 mm, noise 5 mm), so only the running-mean check catches it
    g = make(bar_tol=0.01, noise=0.005, max_speed=2.0) if case == "bar_jump" else make()
    feed(g, t, X, rng, range(50))
    before = state(g)
    k, fn, ts, labels, P = 50, 51, t[50], list(LABELS), X[50].copy()
    n4 = MODEL.node_index("n4")
    i, j = (int(a) for a in MODEL.physical_index[MODEL.bars[0]])
    axis = (X[50, j] - X[50, i]) / np.linalg.norm(X[50, j] - X[50, i])
    reason = "out_of_order"
    if case == "duplicate_number":
        fn = 50
    elif case == "backward_number":
        fn = 20
    elif case == "backward_time":                     # frame number fine, time 1 s back, markers moved 15 mm
        ts, P = t[50] - 1.0, P + [0.0, 0.0, 0.015]
    elif case == "same_time":
        ts = t[49]
    elif case == "nan_time":
        ts = float("nan")
    elif case == "number_jump":                       # a flipped high bit of the frame number
        fn = 51 + (1 << 24)
    elif case == "time_jump":                         # a flipped exponent bit of the timestamp
        ts = t[50] * 2.0 ** 64
    elif case in ("absurd", "inf", "half_nan"):
        reason = "absurd"
        P[n4] = {"absurd": [0.1, 0.1, 1e6], "inf": [np.inf, 0.1, 0.1], "half_nan": [np.nan, 0.1, 0.1]}[case]
    elif case == "motion":                            # one node 2 cm off, bars through it intact enough
        reason, P[n4] = "motion", P[n4] + [0.0, 0.0, 0.02]
    elif case == "bar":                               # 6 mm along the bar: inside the 7.2 mm gate
        reason, P[j] = "bar_length", P[j] + 0.006 * axis
    elif case == "duplicate_label":
        reason, labels[n4] = "duplicate_label", labels[MODEL.node_index("n5")]
    elif case == "bar_jump":                          # 4.5 mm along the bar: inside bar_tol and the gate
        reason, P[j] = "bar_jump", P[j] + 0.0045 * axis
    assert g.process(t[k], SENDER, fn, ts, labels, P) is None
    assert g.stats.rejected[reason] == 1 and sum(g.stats.rejected.values()) == 1
    assert same(state(g), before)                     # the tracker did not see it
    out = g.process(t[51], SENDER, 52, t[51], LABELS, X[51])    # the next real frame is tracked
    assert np.allclose(out, X[51])


def test_occluded_markers_are_not_absurd(truth):
    t, X = truth
    g = make()
    feed(g, t, X, np.random.default_rng(2), range(20))
    P = X[20].copy()
    P[3] = np.nan
    out = g.process(t[20], SENDER, 21, t[20], LABELS, P)
    assert out is not None and np.isnan(out[3]).all() and np.isfinite(np.delete(out, 3, 0)).all()


@pytest.mark.parametrize("silence", [0.0, 1.0])
def test_a_second_sender_is_rejected_and_takes_over_only_by_opt_in(truth, silence):
    """Issue 21 #14: by default (sender_silence 0) another sender never takes over, not even after the
    tracked stream fell silent; with the opt-in it does after that silence."""
    t, X = truth
    rng = np.random.default_rng(3)
    g = make()
    g.sender_silence = silence
    feed(g, t, X, rng, range(30))
    spoof = ("127.0.0.2", 40000)
    for k in range(30, 60):                           # interleaved: a valid-looking displaced stream
        assert g.process(t[k] + 0.001, spoof, 9000 + k, 500.0 + k, LABELS, X[k] + 0.05) is None
        assert g.process(t[k] + 0.002, SENDER, k + 1, t[k], LABELS, X[k]) is not None
    assert g.stats.rejected["other_sender"] == 30 and g.run == 0
    # the tracked stream falls silent for 5 s: only with the opt-in is the other one taken, node by node
    out = g.process(t[60] + 5.0, ("127.0.0.1", 1600), 1, 0.0, LABELS, X[60])
    if silence > 0:
        assert g.stats.sender_changes == 1 and np.allclose(out, X[60])
    else:
        assert out is None and g.stats.sender_changes == 0 and g.stats.rejected["other_sender"] == 31


def test_a_lasting_change_resyncs_node_by_node_and_never_reports_a_wrong_node(truth):
    """Swapped labels (or a restarted stream) are rejected resync_frames times, then the tracker sorts the
    frame out node by node; the time step comes from the receive clock, never from the backward stamps."""
    t, X = truth
    rng = np.random.default_rng(4)
    g = make()
    feed(g, t, X, rng, range(100))
    a, b = MODEL.node_index("n4"), MODEL.node_index("n20")
    lab = list(LABELS)
    lab[a], lab[b] = lab[b], lab[a]
    outs = []
    for k in range(100, 130):
        t_before = g.tracker.t
        out = g.process(t[k], SENDER, k + 1, t[k], lab, X[k] + rng.normal(0, NOISE, X[k].shape))
        if out is not None:
            assert g.tracker.t > t_before
            outs.append((k, out))
    assert g.stats.rejected["motion"] == g.resync_frames and g.stats.resyncs == 1
    for k, out in outs:
        ok = np.isfinite(out[:, 0])
        assert np.all(np.linalg.norm(out[ok] - X[k, ok], axis=1) < 0.003)
    assert np.isfinite(outs[-1][1]).all()             # recovered: every node tracked again
    # a looped take: time and frame numbers restart; tracked again after resync_frames rejects
    g2 = make()
    feed(g2, t, X, rng, range(200))
    t_rx0 = t[199]
    res = [g2.process(t_rx0 + 0.01 * (i + 1), SENDER, i + 1, t[i], LABELS, X[i]) for i in range(20)]
    assert [r is None for r in res[:5]] == [True] * 5 and g2.stats.resyncs == 1
    assert res[-1] is not None and np.isfinite(res[-1]).all()          # every node tracked again
    for i, r in enumerate(res):
        if r is not None:                                               # and never a wrong node
            ok = np.isfinite(r[:, 0])
            assert np.all(np.linalg.norm(r[ok] - X[i, ok], axis=1) < 1e-9)


def test_a_resync_frame_never_publishes_a_bar_that_jumped(truth):
    """Issue 21 #13: after resync_frames rejects in a row the next frame skipped the bar-jump check, and a
    marker 8.5 mm off was published. Now the frame is still taken node by node, but the nodes of a bar that
    jumped by more than bar_jump are unknown (NaN), and every published bar is within bar_jump."""
    t, X = truth
    rng = np.random.default_rng(5)
    g = make(bar_tol=0.010)                              # the bridge's default: 8.5 mm passes it
    g.bar_jump = 0.003
    feed(g, t, X, rng, range(60))
    n = MODEL.node_index("n7")
    for k in range(60, 60 + g.resync_frames):           # rejected frames in a row (out of order)
        assert g.process(t[k], SENDER, 1, t[k], LABELS, X[k]) is None
    k = 60 + g.resync_frames
    P = X[k].copy()
    P[n] += [0.0085, 0.0, 0.0]                         # a corrupted coordinate, within the motion gate
    out = g.process(t[k], SENDER, k + 1, t[k], LABELS, P)
    assert out is not None and g.stats.resyncs == 1
    assert np.isnan(out[n]).all()                        # the node of the jumped bars is unknown
    pi, pj, L = rigid_pairs(MODEL)
    d = np.linalg.norm(out[pi] - out[pj], axis=1)
    ok = np.isfinite(d)
    assert ok.sum() > 0.5 * len(d) and np.all(np.abs(d[ok] - L[ok]) < g.bar_jump + 4 * NOISE)
    out = g.process(t[k + 1], SENDER, k + 2, t[k + 1], LABELS, X[k + 1])
    assert out is not None and np.isfinite(out).all()    # the next good frame has it back


def test_a_creeping_marker_is_never_published_off_its_bar_not_even_in_a_resync_frame(truth):
    """Issue 33 #16: a marker creeping along its bar to +14 mm (a marker slipping on the robot) is rejected in
    normal frames once the bar is more than bar_tol (10 mm, the bridge's default) off the model, but the
    running mean followed the creep and every resync frame published it (35 of 271 published frames here,
    15 mm). Every frame, resync or not, now holds each bar to the model within bar_tol: the creeping node is
    dropped (NaN) and the rest of the robot is published on."""
    t, X = truth
    rng = np.random.default_rng(3)
    g = make(bar_tol=0.010, noise=0.005, max_speed=2.0)      # the bridge's defaults
    g.bar_jump = 0.004
    pi, pj, L = rigid_pairs(MODEL)
    i, j = pi[0], pj[0]
    creep = np.clip((t - 0.5) / 2.0, 0.0, 1.0) * 0.014      # 0 to 14 mm in 2 s, then held
    published, worst, lost_j = 0, 0.0, 0
    for k in range(len(t)):
        P = X[k] + rng.normal(0, NOISE, X[k].shape)
        P[j] += creep[k] * (X[k, j] - X[k, i]) / np.linalg.norm(X[k, j] - X[k, i])
        out = g.process(t[k], SENDER, k + 1, t[k], LABELS, P)
        if out is None:
            continue
        published += 1
        d = np.abs(np.linalg.norm(out[pi] - out[pj], axis=1) - L)
        worst = max(worst, float(np.nanmax(d)))
        lost_j += int(np.isnan(out[j, 0]))
    assert worst <= 0.010, worst                  # bar_tol: no published bar further off the model
    assert lost_j > 0.3 * len(t)                  # the creeping node is NaN from ~10 mm on (held at 14 mm)
    assert published > 0.9 * len(t), published    # the other 23 nodes are still published


def test_bit_flipped_packets_never_break_a_bar_or_move_a_node(truth):
    """Parser + guard + tracker on 1,440 NatNet 4.1 frames, 20 % of them with 1-3 random bit flips."""
    t, X = truth
    rng = np.random.default_rng(20240611)
    g = make()
    pi, pj, L = rigid_pairs(MODEL)
    ids = [nn.make_marker_id(1, j + 1) for j in range(24)]
    flipped = parse_errors = published = 0
    worst_bar = worst_err = 0.0
    for rep in range(3):
        for k in range(len(t)):
            f = nn.MocapFrame(frame_number=rep * 1000 + k + 1, timestamp=rep * 10 + t[k], labeled_ids=np.array(ids),
                              labeled_positions=X[k] + rng.normal(0, NOISE, X[k].shape),
                              labeled_sizes=np.full(24, 0.01), labeled_params=np.full(24, 10),
                              labeled_residuals=np.zeros(24))
            pkt = nn.build_frame(f, (4, 1))
            if rng.random() < 0.2:
                pkt, flipped = flip_bits(pkt, rng, int(rng.integers(1, 4))), flipped + 1
            try:
                mid, fr = nn.parse_packet(pkt, (4, 1))
            except nn.NatNetError:
                parse_errors += 1
                continue
            if mid != nn.NAT_FRAMEOFDATA:
                continue
            P = np.array(fr.labeled_positions, float).reshape(-1, 3)
            P[np.asarray(fr.occluded, bool)] = np.nan
            out = g.process(rep * 10 + k / 120, SENDER, fr.frame_number, fr.timestamp,
                            np.asarray(fr.labeled_ids).tolist(), P, fr.unlabeled)
            if out is None:
                continue
            published += 1
            ok = np.isfinite(out[pi, 0]) & np.isfinite(out[pj, 0])
            if ok.any():
                worst_bar = max(worst_bar, np.abs(np.linalg.norm(out[pi[ok]] - out[pj[ok]], axis=1) - L[ok]).max())
            e = np.linalg.norm(out - X[k], axis=1)
            worst_err = max(worst_err, np.nanmax(e, initial=0.0))
    print(f"flipped {flipped}, parser rejects {parse_errors}, published {published} of {3 * len(t)}, "
          f"max bar break {1e3 * worst_bar:.2f} mm, max node error {1e3 * worst_err:.2f} mm, {g.stats}")
    assert worst_bar <= 0.004 + 1e-6 and worst_err < 0.010
    assert g.stats.implausible > 0 and published > 0.85 * 3 * len(t)
