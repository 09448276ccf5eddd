"""Synthetic six-bar takes (issue #12): robot, motion, strays, payload, occlusions, labels, CSV, NatNet, scoring."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from tensegrity_mocap import natnet as nn
from tensegrity_mocap.axes import y_up_to_z_up
from tensegrity_mocap.motive import read_motive_csv, replay
from tensegrity_mocap.synthetic import (identity_errors, make_capture, six_bar_robot, static_capture,
                                        write_capture_csv)
from tensegrity_mocap.synthetic.motion import rotation_matrices

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from natnet_emulator import NatNetEmulator  # noqa: E402
from natnet_synthetic import natnet_source  # noqa: E402


@pytest.fixture(scope="module")
def robot():
    return six_bar_robot()


@pytest.fixture(scope="module")
def take(robot):
    return make_capture(robot, duration=10.0, rate=360.0, seed=1)


def _runs(mask):
    """[(start, length)] of the True runs of a 1-D bool array."""
    m = np.concatenate([[False], mask, [False]]).astype(np.int8)
    d = np.diff(m)
    s, e = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
    return list(zip(s.tolist(), (e - s).tolist()))


def _kabsch_rms(A, B):
    """RMS residual [m] of the best rotation + translation taking point set A onto B (both (n, 3))."""
    A, B = A - A.mean(0), B - B.mean(0)
    U, _, Vt = np.linalg.svd(A.T @ B)
    R = (U @ np.diag([1.0, 1.0, np.linalg.det(U @ Vt)]) @ Vt).T
    return float(np.sqrt(np.mean(np.sum((A @ R.T - B) ** 2, axis=1))))


def _rotational_symmetries(robot):
    """Node permutations p (identity first) with a proper rotation taking node i onto node p[i] and
    every bar onto a bar."""
    P = robot.positions
    D = np.linalg.norm(P[:, None] - P[None], axis=2)
    bars = {frozenset(b) for b in robot.bars.tolist()}
    out = []
    for i in range(12):
        for j in range(12):
            for k in range(12):
                if len({i, j, k}) < 3 or abs(D[i, j] - D[0, 1]) > 1e-9 or abs(D[i, k] - D[0, 4]) > 1e-9 \
                        or abs(D[j, k] - D[1, 4]) > 1e-9:
                    continue
                A, B = P[[0, 1, 4]] - P.mean(0), P[[i, j, k]] - P.mean(0)
                U, _, Vt = np.linalg.svd(A.T @ B)
                if np.linalg.det(U @ Vt) < 0:
                    continue
                Q = (P - P.mean(0)) @ (U @ Vt)
                perm = np.argmin(np.linalg.norm(Q[:, None] - (P - P.mean(0))[None], axis=2), axis=1)
                if np.allclose(Q, P[perm] - P.mean(0), atol=1e-9) and \
                        all(frozenset(perm[list(b)].tolist()) in bars for b in bars):
                    out.append(perm)
    out.sort(key=lambda p: (p != np.arange(12)).sum())
    return out


# --- robot ---------------------------------------------------------------------------------------------
def test_six_bar_topology_and_equilibrium_shape():
    r = six_bar_robot(bar_length=0.6, irregularity=0.0)
    P = r.positions
    assert r.node_names == [f"n{j}" for j in range(1, 13)] and r.bars.shape == (6, 2) and r.strings.shape == (24, 2)
    np.testing.assert_allclose(r.bar_lengths, 0.6, atol=1e-12)
    S = np.linalg.norm(P[r.strings[:, 0]] - P[r.strings[:, 1]], axis=1)
    a, b = 0.15, 0.3
    np.testing.assert_allclose(S, np.sqrt(a * a + b * b + (b - a) ** 2), atol=1e-12)   # all 24 strings equal
    deg = np.bincount(r.strings.ravel(), minlength=12)
    assert (deg == 4).all()                                    # 5 icosahedron edges minus the parallel one
    pairs = {tuple(sorted(e)) for e in r.strings.tolist()} | {tuple(sorted(e)) for e in r.bars.tolist()}
    assert len(pairs) == 30                                    # no string doubles a bar
    # parallel bar ends (distance 2a = L/2) are never joined by a string
    D = np.linalg.norm(P[:, None] - P[None], axis=2)
    for i, j in r.strings:
        assert abs(D[i, j] - 0.3) > 0.05
    # resting on a closed string triangle: three nodes on the floor
    assert P[:, 2].min() == 0.0 and np.sum(P[:, 2] < 1e-9) == 3
    np.testing.assert_allclose(P.mean(axis=0)[:2], 0.0, atol=1e-12)


def test_hand_built_robot_is_irregular_and_seeded():
    r = six_bar_robot(irregularity=0.005, seed=3)
    ideal = six_bar_robot(irregularity=0.0)
    dL = r.bar_lengths - 0.6
    assert np.abs(dL).max() <= 0.005 and np.abs(dL).max() > 0.001 and len(np.unique(np.round(dL, 6))) == 6
    np.testing.assert_array_equal(r.positions, six_bar_robot(irregularity=0.005, seed=3).positions)
    assert not np.allclose(r.positions, six_bar_robot(irregularity=0.005, seed=4).positions, atol=1e-4)
    # a few mm from the ideal shape (after removing the best rigid fit) ...
    A, B = r.positions - r.positions.mean(0), ideal.positions - ideal.positions.mean(0)
    U, _, Vt = np.linalg.svd(B.T @ A)
    R = U @ np.diag([1, 1, np.linalg.det(U @ Vt)]) @ Vt
    res = np.linalg.norm(A - B @ R, axis=1)
    assert 0.0005 < res.max() < 0.015
    # ... so registering it onto itself under any symmetry of the ideal shape leaves > 1.5 mm RMS
    syms = _rotational_symmetries(ideal)
    assert len(syms) == 12                                     # the tetrahedral group (bars kept as bars)
    for perm in syms[1:]:
        assert _kabsch_rms(A[perm], A) > 0.0015
    with pytest.raises(ValueError):
        six_bar_robot(bar_length=-1.0)


# --- motion --------------------------------------------------------------------------------------------
def test_roll_keeps_bars_exact_and_moves_like_a_rolling_robot(robot, take):
    c = take
    b = robot.bars
    L = np.linalg.norm(c.nodes[:, b[:, 0]] - c.nodes[:, b[:, 1]], axis=2)
    assert np.abs(L - robot.bar_lengths).max() < 1e-12
    assert np.isfinite(c.nodes).all()
    np.testing.assert_allclose(c.nodes[0], robot.positions, atol=1e-12)           # starts at rest pose
    assert abs(c.nodes[:, :, 2].min()) < 1e-12 and (c.marker_truth[:, :14, 2] >= -1e-12).all()   # on the floor
    cen = c.nodes.mean(axis=1)
    v = np.linalg.norm(np.diff(cen, axis=0), axis=1) / np.diff(c.t)
    assert 0.15 < np.median(v) < 0.6                                              # a few tenths of m/s
    assert 0.8 < c.peak_node_speed < 1.6                                          # the fast segment
    # rotation: the best rigid fit between frames 1 s apart turns by 1-3 rad/s
    i, j = np.searchsorted(c.t, [4.0, 5.0])
    A, B = c.nodes[i] - cen[i], c.nodes[j] - cen[j]
    U, _, Vt = np.linalg.svd(A.T @ B)
    ang = np.arccos(np.clip((np.trace(U @ Vt) - 1) / 2, -1, 1))
    assert 0.7 < ang / (c.t[j] - c.t[i]) < 3.0
    # the shape changes: strings are not rigid (some change by > 5 mm over the take)
    S = np.linalg.norm(c.nodes[:, robot.strings[:, 0]] - c.nodes[:, robot.strings[:, 1]], axis=2)
    assert np.ptp(S, axis=0).max() > 0.005


def test_strays_fixed_on_their_bars(robot, take):
    c = take
    assert list(c.stray_nodes) == [0, 5] and list(c.stray_distances) == [0.036, 0.045]
    for s, (n, d) in enumerate(zip(c.stray_nodes, c.stray_distances)):
        k = 12 + s
        assert c.marker_node[k] == -1
        off = c.marker_truth[:, k] - c.nodes[:, n]
        np.testing.assert_allclose(np.linalg.norm(off, axis=1), d, atol=1e-12)
        other = robot.bars[robot.bars[:, 0] == n, 1] if n in robot.bars[:, 0] else robot.bars[robot.bars[:, 1] == n, 0]
        e = c.nodes[:, n] - c.nodes[:, other[0]]
        e /= np.linalg.norm(e, axis=1, keepdims=True)
        cosang = np.einsum("ti,ti->t", off, e) / d
        assert np.ptp(cosang) < 1e-9 and abs(cosang[0]) < 0.35                  # fixed in the bar's frame, ~perp.
        vis = c.visible[:, k]
        err = np.linalg.norm(c.markers[vis, k] - c.nodes[vis, n], axis=1) - d
        assert np.abs(err).max() < 8 * 0.0003 * np.sqrt(3)                      # observed: within noise


def test_payload_rigid_independent_and_close_to_nodes(robot, take):
    c = take
    pk = np.flatnonzero(c.marker_node == -2)
    assert len(pk) == 3 and [c.labels[0][k] for k in pk] == ["payload:Marker1", "payload:Marker2", "payload:Marker3"]
    Pm = c.marker_truth[:, pk]
    sides = np.linalg.norm(Pm[:, [1, 2, 0]] - Pm[:, [2, 0, 1]], axis=2)
    assert np.ptp(sides, axis=0).max() < 1e-12 and 0.04 <= sides.min() and sides.max() <= 0.06
    np.testing.assert_allclose(Pm.mean(axis=1), c.payload_pose[:, :3], atol=1e-12)   # pose = marker centroid
    from scipy.spatial.transform import Rotation
    R = Rotation.from_quat(c.payload_pose[:, 3:]).as_matrix()
    np.testing.assert_allclose(c.payload_pose[:, :3, None] + R @ c.payload_offsets.T, Pm.transpose(0, 2, 1),
                               atol=1e-12)
    # independent of the robot: its distance to every node varies by many cm
    d = np.linalg.norm(Pm[:, :, None] - c.nodes[:, None], axis=3)               # (T, 3, 12)
    assert np.ptp(d, axis=0).min() > 0.05
    # inside the robot (on the inner side of each hull face) and within 2.5-10 cm of some node at times
    F = robot.faces
    A, B, C = c.nodes[:, F[:, 0]], c.nodes[:, F[:, 1]], c.nodes[:, F[:, 2]]
    n = np.cross(B - A, C - A)
    n *= np.sign(np.einsum("tfi,tfi->tf", n, A - c.nodes.mean(axis=1)[:, None]))[..., None]
    inside = np.einsum("tfi,tkfi->tkf", n, A[:, None] - Pm[:, :, None])
    assert (inside > 0).all()
    assert 0.025 < d.min() < 0.10 and (Pm[:, :, 2] > 0).all()


def test_static_capture_and_pose(robot):
    R = rotation_matrices(np.array([1.0, 2.0, 3.0]) / np.sqrt(14.0), 0.9)
    t = np.array([1.0, -2.0, 0.5])
    c = static_capture(robot, frames=40, rate=120.0, pose=(R, t), payload=True, seed=2)
    assert c.n_frames == 40 and c.occluded_fraction == 0.0 and len(c.dropped) == 0 and c.visible.all()
    np.testing.assert_allclose(c.nodes, np.broadcast_to(robot.positions @ R.T + t, c.nodes.shape), atol=1e-12)
    np.testing.assert_array_equal(c.frame_numbers, np.arange(40))
    noise = c.markers[:, :12] - c.nodes
    assert 0.0002 < noise.std() < 0.0004
    assert np.ptp(c.marker_truth, axis=0).max() < 1e-12                          # payload at rest too
    assert c.labels[0][:12] == c.labels[-1][:12] and all(lab.startswith("Unlabeled ") for lab in c.labels[0][:14])
    assert len(set(c.labels[0])) == 17


# --- occlusions, dropped frames, labels --------------------------------------------------------------
def test_occlusion_runs_fraction_and_overlaps(take):
    c = take
    M = 14
    assert c.occluded_fraction >= 0.06 and c.occluded_fraction < 0.075
    hidden = ~c.visible[:, :M]
    assert hidden.mean() == pytest.approx(c.occluded_fraction)
    assert c.visible[:, M:].all() and c.visible[0].all()                         # payload never, frame 0 clear
    assert {L for _, _, L in c.occlusions} == {10, 36, 100}
    for L in (10, 36, 100):
        assert sum(1 for _, _, x in c.occlusions if x == L) >= 3
    # the listed runs are exactly the maximal gaps of each marker
    listed = sorted((m, s, L) for m, s, L in c.occlusions)
    found = sorted((m, s, L) for m in range(M) for s, L in _runs(hidden[:, m]))
    assert listed == found
    assert hidden.sum(axis=1).max() >= 3                                         # several markers at once
    both = hidden[:, 0] & hidden[:, 12]                                          # node n1 with its stray
    assert both.sum() >= 20


def test_dropped_frames(take):
    c = take
    N = 3600
    assert len(c.dropped) == round(0.002 * N) and c.n_frames == N - len(c.dropped)
    jumps = np.flatnonzero(np.diff(c.frame_numbers) > 1)
    assert len(jumps) >= 1 and np.diff(c.frame_numbers).min() == 1
    assert set(c.dropped.tolist()).isdisjoint(c.frame_numbers.tolist())
    np.testing.assert_allclose(c.t, c.frame_numbers / 360.0)


def test_unlabeled_names_change_after_every_gap(take):
    c = take
    for k in range(14):
        names = c.label_names(k)
        gaps = len(_runs(~c.visible[:, k]))
        assert len(names) == gaps + 1 and all(n.startswith("Unlabeled ") for n in names)
        assert all(lab is None for row, v in zip(c.labels, c.visible[:, k]) if not v for lab in [row[k]])
    allnames = [n for k in range(14) for n in c.label_names(k)]
    assert len(allnames) == len(set(allnames))                                   # ids never reused
    ids = [int(n.split()[1]) for n in allnames]
    first = {int(n.split()[1]): min(np.flatnonzero(c.unlabeled_ids[:, k] == int(n.split()[1])))
             for k in range(14) for n in c.label_names(k)}
    assert sorted(ids, key=lambda u: first[u]) == sorted(ids)                    # new ids increase with time
    stable = make_capture(c.robot, duration=2.0, relabel=False, seed=1)
    assert all(len(stable.label_names(k)) == 1 for k in range(14))


def test_labeled_capture(robot):
    c = make_capture(robot, duration=2.0, labeled=True, seed=5)
    assert c.labels[0][:12] == [f"Robot:n{j}" for j in range(1, 13)]
    for k in range(12):
        assert c.label_names(k) == [f"Robot:n{k + 1}"]                          # kept while occluded
    assert all(c.labels[i][12] is None or c.labels[i][12].startswith("Unlabeled ") for i in range(c.n_frames))


# --- CSV -------------------------------------------------------------------------------------------------
def test_csv_round_trip(tmp_path, take):
    c = take
    p = write_capture_csv(c, tmp_path / "take.csv")
    rec = read_motive_csv(p)
    assert rec.frame_rate == 360.0 and rec.up_axis == "y"
    np.testing.assert_array_equal(rec.frames, c.frame_numbers)
    np.testing.assert_allclose(rec.times, c.t, atol=1e-6)
    assert list(rec.markers) == ["payload:Marker1", "payload:Marker2", "payload:Marker3"]
    names = {n for row in c.labels for n in row[:14] if n}
    assert set(rec.unlabeled) == names and len(names) > 14 + len(c.occlusions) - 5
    for k in range(c.markers.shape[1]):
        for name in set(row[k] for row in c.labels) - {None}:
            col = y_up_to_z_up(rec.unlabeled.get(name, rec.markers.get(name)))
            rows = np.array([row[k] == name for row in c.labels])
            assert np.isnan(col[~rows]).all() and np.isfinite(col[rows]).all()  # gaps exactly where unseen
            np.testing.assert_allclose(col[rows], c.markers[rows, k], atol=1e-6)
            if name.startswith("Unlabeled "):
                assert rec.unlabeled_ids[name] == name.split()[1]
    pose = rec.rigid_bodies["payload"]
    np.testing.assert_allclose(y_up_to_z_up(pose[:, :3]), c.payload_pose[:, :3], atol=1e-6)
    from scipy.spatial.transform import Rotation
    Rz = Rotation.from_quat(c.payload_pose[:, 3:]).as_matrix()
    Ry = Rotation.from_quat(pose[:, 3:]).as_matrix()
    np.testing.assert_allclose(y_up_to_z_up(np.eye(3)).T @ Ry, Rz, atol=2e-6)   # same body frame, z up
    # replay with named unlabeled markers: every frame holds exactly the capture's visible markers
    frames = list(replay(rec, named_unlabeled=True))
    assert len(frames) == c.n_frames
    for i in (0, 500, 1999, c.n_frames - 1):
        _, nm, P, U = frames[i]
        assert U.shape == (0, 3)
        want = [lab for lab, v in zip(c.labels[i], c.visible[i]) if v]
        assert sorted(nm) == sorted(want)
        np.testing.assert_allclose(y_up_to_z_up(P[[nm.index(w) for w in want]]), c.markers[i][c.visible[i]],
                                   atol=1e-6)


def test_csv_labeled_z_up_millimetres(tmp_path, robot):
    c = make_capture(robot, duration=1.0, rate=120.0, labeled=True, seed=7)
    rec = read_motive_csv(write_capture_csv(c, tmp_path / "l.csv", up_axis="z", length_units="Millimeters"))
    assert rec.length_units == "Millimeters"
    for k in range(12):
        np.testing.assert_allclose(rec.markers[f"Robot:n{k + 1}"], c.markers[:, k], atol=1e-9, equal_nan=True)
    assert rec.marker_ids["Robot:n3"] == "1:3" and rec.marker_ids["payload:Marker2"] == "2:2"
    assert rec.metadata["Total Frames in Take"] == str(c.frame_numbers[-1] + 1)


# --- NatNet ----------------------------------------------------------------------------------------------
def test_natnet_source_streams_the_take(take):
    c = take
    emu = NatNetEmulator(natnet_source(c), version=(4, 1), rate=360.0, marker_set_name=None)
    try:
        seen_ids = {}
        jump = int(np.flatnonzero(np.diff(c.frame_numbers) > 1)[0])
        for i in list(range(0, 40)) + [jump, jump + 1] + list(range(1000, 1400, 7)):
            f = nn.parse_packet(nn.build_frame(emu._stamp(emu.make_frame(i)), (4, 1)), (4, 1))[1]
            assert f.frame_number == 1 + c.frame_numbers[i] and f.timestamp == pytest.approx(c.t[i])
            vis = c.visible[i]
            assert len(f.labeled_ids) == vis.sum()                              # unlabeled: absent when hidden
            P = y_up_to_z_up(f.labeled_positions)
            np.testing.assert_allclose(P, c.markers[i][vis], atol=1e-6)         # float32 on the wire
            mids, kids = f.model_ids, f.marker_ids
            for j, k in enumerate(np.flatnonzero(vis)):
                if k < 14:
                    assert mids[j] == 0 and f.unlabeled_flag[j] and kids[j] == c.unlabeled_ids[i, k]
                    seen_ids.setdefault(k, set()).add(int(kids[j]))
                else:
                    assert mids[j] == 2 and kids[j] == k - 13 and not f.unlabeled_flag[j]
            assert len(f.rigid_bodies) == 1 and f.rigid_bodies[0].id == 2
            np.testing.assert_allclose(y_up_to_z_up(f.rigid_bodies[0].position), c.payload_pose[i, :3], atol=1e-6)
        f0 = emu.make_frame(jump)
        f1 = emu.make_frame(jump + 1)
        assert f1.frame_number - f0.frame_number == c.frame_numbers[jump + 1] - c.frame_numbers[jump] > 1
    finally:
        emu.close()
    changed = [k for k, s in seen_ids.items() if len(s) > 1]
    assert changed                                                               # a new id after a gap


def test_natnet_stream_over_loopback(robot):
    import time
    from natnet_emulator import free_udp_port
    c = make_capture(robot, duration=1.0, rate=120.0, dropped_frames=0.03, seed=3)
    port = free_udp_port()
    emu = NatNetEmulator(natnet_source(c), version=(4, 1), rate=0, data_port=port).start()
    client = nn.NatNetClient(command_port=emu.command_port, data_port=port, use_multicast=False)
    try:
        assert client.connect(timeout=2.0) is not None
        n = 60
        for _ in range(n):
            assert emu.send_frame()
        frames, end = [], time.monotonic() + 5.0
        while len(frames) < n and time.monotonic() < end:
            f = client.receive(timeout=0.05)
            if f is not None:
                frames.append(f)
        assert [f.frame_number for f in frames] == (1 + c.frame_numbers[:n]).tolist()
        assert client.stats["dropped_frames"] == c.frame_numbers[n - 1] + 1 - n > 0   # the server's drops
        for i, f in enumerate(frames):
            vis = c.visible[i]
            np.testing.assert_allclose(y_up_to_z_up(f.labeled_positions), c.markers[i][vis], atol=1e-6)
            assert sorted(f.marker_ids[f.model_ids == 0].tolist()) == sorted(c.unlabeled_ids[i][c.unlabeled_ids[i] > 0].tolist())
    finally:
        client.close()
        emu.close()


def test_natnet_source_labeled_markers_flagged_occluded(robot):
    c = make_capture(robot, duration=2.0, rate=120.0, labeled=True, seed=4)
    src = natnet_source(c, model_ids={"Robot": 7})
    m, s, _ = next(o for o in c.occlusions if o[0] < 12)
    f = nn.parse_packet(nn.build_frame(src(s), (4, 0)), (4, 0))[1]
    j = list(f.labeled_ids).index(nn.make_marker_id(7, m + 1))
    assert f.occluded[j] and np.isnan(f.labeled_positions[j]).all()
    assert (~f.occluded).sum() == c.visible[s].sum()
    assert len(f.labeled_ids) == c.visible[s].sum() + (~c.visible[s, :12]).sum()   # hidden strays absent


# --- scoring ---------------------------------------------------------------------------------------------
def test_identity_errors(take):
    c = take
    X = np.where(c.visible[:, :12, None], c.nodes, np.nan)                        # a perfect tracker
    e = identity_errors(c, X)
    assert e["wrong"] == e["untracked"] == e["bar_violations"] == 0 and e["first_wrong_row"] == -1
    assert e["reported"] == e["visible"] == c.visible[:, :12].sum()
    assert identity_errors(c, c.nodes.copy())["wrong"] == 0                     # reporting hidden nodes at truth
    # swap n2 and n3 (on different bars) on 50 frames
    Y = X.copy()
    rows = np.flatnonzero(c.visible[:, 1] & c.visible[:, 2])[:50]
    Y[rows, 1], Y[rows, 2] = c.markers[rows, 2], c.markers[rows, 1]
    e = identity_errors(c, Y)
    assert e["at_other_marker"] == 100 and e["wrong"] == 100 and e["first_wrong_row"] == rows[0]
    assert list(np.flatnonzero(e["wrong_per_node"])) == [1, 2]
    assert e["bar_violations"] == c.visible[rows, 0].sum() + c.visible[rows, 3].sum() > 50   # bars n1-n2, n3-n4
    # swapping the two ends of one bar keeps its length but is still caught
    Y = X.copy()
    rows = np.flatnonzero(c.visible[:, 2] & c.visible[:, 3])[:40]
    Y[rows, 2], Y[rows, 3] = c.markers[rows, 3], c.markers[rows, 2]
    e = identity_errors(c, Y)
    assert e["at_other_marker"] == 80 and e["bar_violations"] == 0
    # n1 put on its stray where its own marker is hidden
    Y = X.copy()
    rows = np.flatnonzero(~c.visible[:, 0] & c.visible[:, 12])
    Y[rows, 0] = c.markers[rows, 12]
    e = identity_errors(c, Y)
    assert e["at_other_marker"] == len(rows) > 0 and e["max_error"] == pytest.approx(0.036, abs=0.002)
    # a node 2 cm off (near no marker), and 30 visible node-frames dropped
    Y = X.copy()
    Y[100, 5] += [0.02, 0.0, 0.0]
    vis = np.flatnonzero(c.visible[:, 7])[:30]
    Y[vis, 7] = np.nan
    e = identity_errors(c, Y)
    assert e["off_truth"] == 1 and e["at_other_marker"] == 0 and e["untracked"] == 30
    assert e["untracked_per_node"][7] == 30 and e["bar_violations"] >= 1
    with pytest.raises(ValueError):
        identity_errors(c, X[:, :11])


def test_generator_is_deterministic_and_fast(robot):
    import time
    t0 = time.perf_counter()
    a = make_capture(robot, seed=11)
    dt = time.perf_counter() - t0
    b = make_capture(robot, seed=11)
    np.testing.assert_array_equal(a.markers, b.markers)
    assert a.labels == b.labels and a.occlusions == b.occlusions
    assert not np.array_equal(make_capture(robot, seed=12).nodes, a.nodes)
    assert dt < 5.0                                                               # ~0.1 s on one core


def test_options_and_bad_arguments(robot, tmp_path):
    c = make_capture(robot, duration=2.0, payload=False, strays=(), seed=2)
    assert c.markers.shape[1] == 12 and c.payload_pose is None and (c.marker_node == np.arange(12)).all()
    assert c.occluded_fraction >= 0.06
    rec = read_motive_csv(write_capture_csv(c, tmp_path / "bare.csv"))
    reappear = sum(1 for _, s, L in c.occlusions if s + L < c.n_frames)            # each reappearance: a new id
    assert not rec.markers and not rec.rigid_bodies and len(rec.unlabeled) == 12 + reappear
    c = make_capture(robot, duration=2.0, occluded_fraction=0.0, dropped_frames=0.0, seed=2)
    assert c.visible.all() and not c.occlusions and (np.diff(c.frame_numbers) == 1).all()
    assert all(len(c.label_names(k)) == 1 for k in range(14))                   # no gap, no new name
    with pytest.raises(ValueError, match="cannot occlude"):
        make_capture(robot, duration=1.0, occluded_fraction=0.95)
    with pytest.raises(ValueError, match="motion"):
        make_capture(robot, motion="dance")
    with pytest.raises(ValueError, match="stray"):
        make_capture(robot, strays=((12, 0.03),))
    with pytest.raises(ValueError, match="up_axis"):
        write_capture_csv(c, tmp_path / "x.csv", up_axis="x")
