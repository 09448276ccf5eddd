"""Synthetic motion-capture takes of a six-bar tensegrity (issue #12, "bring your own robot"); no ROS.

Reproduces what a lab's own robot gives the tracker, with the ground truth alongside:

* a hand-built six-bar (:func:`six_bar_robot`: expanded octahedron, bars a few mm off, never symmetric);
* 12 bar-end markers, mostly **unlabeled** (Motive names them ``Unlabeled <id>`` with a **new id after
  every gap**), 2 **stray** markers fixed on bars 25-50 mm from two node markers, a swinging **payload**
  rigid body (3 labeled markers ``payload:Marker1..3``) inside the robot;
* occlusion runs of given lengths (several markers at once, a node with its stray), dropped frames,
  marker noise; the robot rolls over the floor with small bar rotations (bar lengths exact).

:func:`make_capture` builds a take (:class:`SyntheticCapture`, z up, metres), :func:`write_capture_csv`
writes it as a Motive CSV export, :func:`identity_errors` scores a tracker's output against the truth.
The NatNet source for the emulator is ``natnet_source`` in ``test/natnet_synthetic.py``. Positions in
metres, z up (REP-103), times in seconds.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tensegrity_mocap.synthetic import motion as sm
from tensegrity_mocap.axes import z_up_to_y_up
from tensegrity_mocap.motive import write_motive_csv

__all__ = ["SyntheticRobot", "SyntheticCapture", "six_bar_robot", "make_capture", "static_capture",
           "identity_errors", "write_capture_csv", "UNLABELED_ID0"]

UNLABELED_ID0 = 1000          # first "Unlabeled <id>" number
ROBOT_ASSET = "Robot"         # asset name of labeled node markers ("Robot:n1")
PAYLOAD_ASSET = "payload"     # payload rigid body / marker names ("payload:Marker1")
STRAY, PAYLOAD = -1, -2       # marker_node codes


@dataclass(frozen=True)
class SyntheticRobot:
    """A six-bar tensegrity at rest on the floor. Positions in metres, z up, lowest node at z = 0."""
    node_names: list            # ["n1", ..., "n12"]
    positions: np.ndarray       # (12, 3) m
    bars: np.ndarray            # (6, 2) node indices; bar k joins nodes 2k and 2k+1
    strings: np.ndarray         # (24, 2) node indices
    faces: np.ndarray = None    # (20, 3) node indices of the icosahedron's triangles (its hull)

    @property
    def bar_lengths(self) -> np.ndarray:
        """(6,) m."""
        return np.linalg.norm(self.positions[self.bars[:, 0]] - self.positions[self.bars[:, 1]], axis=1)


def six_bar_robot(bar_length: float = 0.6, irregularity: float = 0.005, seed: int = 0) -> SyntheticRobot:
    """Expanded octahedron: nodes at the cyclic permutations of (0, +-a, +-b), b = L/2, a = L/4 (equal
    cable force densities); bars join (0, a, b)-(0, a, -b) etc.; strings are the 24 icosahedron edges
    that do not join parallel bar ends. Then made hand-built: each bar's length off by up to
    ``irregularity`` [m], its centre moved and its direction tilted so its ends move by up to about
    ``irregularity`` (bars stay straight). Rests on a closed string triangle, centroid above the origin,
    lowest node at z = 0. Seeded, deterministic; ``irregularity=0`` gives the exact symmetric shape."""
    L = float(bar_length)
    if not L > 0 or not irregularity >= 0 or irregularity > 0.05 * L:
        raise ValueError(f"need bar_length > 0 and 0 <= irregularity <= 5 % of it, got {bar_length}, {irregularity}")
    rng = np.random.default_rng([seed, 12])

    def nodes(a, b):
        P = []
        for shift in range(3):
            for sa in (1.0, -1.0):
                for sb in (1.0, -1.0):
                    P.append(np.roll([0.0, sa * a, sb * b], shift))
        return np.array(P)

    phi = (1.0 + np.sqrt(5.0)) / 2.0
    reg = nodes(1.0, phi)                                        # regular icosahedron, edge 2
    D = np.linalg.norm(reg[:, None] - reg[None], axis=2)
    edges = [(i, j) for i in range(12) for j in range(i + 1, 12) if abs(D[i, j] - 2.0) < 1e-9]
    adj = np.abs(D - 2.0) < 1e-9
    faces = np.array([(i, j, k) for i, j in edges for k in range(j + 1, 12) if adj[i, k] and adj[j, k]])
    parallel = {(4 * s + sb, 4 * s + 2 + sb) for s in range(3) for sb in (0, 1)}   # same shift, same b sign
    strings = np.array([e for e in edges if e not in parallel])
    bars = np.arange(12).reshape(6, 2)
    P = nodes(L / 4.0, L / 2.0)
    # hand-built: each bar length, centre and direction a little off
    c = 0.5 * (P[bars[:, 0]] + P[bars[:, 1]])
    e = P[bars[:, 0]] - P[bars[:, 1]]
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    half = 0.5 * (L + rng.uniform(-1.0, 1.0, 6) * irregularity)
    for k in range(6):
        u = sm.perpendicular_unit(e[k], rng)
        e[k] = sm.rotation_matrices(u, rng.uniform(0.0, 0.5 * irregularity / half[k])) @ e[k]
        d = rng.normal(size=3)
        c[k] += 0.5 * irregularity * rng.uniform() * d / np.linalg.norm(d)
    P = np.empty((12, 3))
    P[bars[:, 0]] = c + half[:, None] * e
    P[bars[:, 1]] = c - half[:, None] * e
    # rest on the all-negative closed triangle (0,-a,-b), (-b,0,-a), (-a,-b,0)
    R = sm.rotation_between([-1.0, -1.0, -1.0], [0.0, 0.0, -1.0])
    P = P @ R.T
    P -= P.mean(axis=0)
    P[:, 2] -= P[:, 2].min()
    assert len(strings) == 24 and len(faces) == 20
    return SyntheticRobot([f"n{j + 1}" for j in range(12)], P, bars, strings, faces)


@dataclass
class SyntheticCapture:
    """A synthetic take: truth and what Motive would report. Positions in metres, z up; NaN = occluded.

    Markers (K = 12 + strays + 3 payload): node markers 0..11 (marker k sits on node k), then the strays,
    then the payload markers. Rows are the frames that exist (dropped frames removed)."""
    robot: SyntheticRobot
    t: np.ndarray                 # (T,) s = frame_numbers / rate
    frame_numbers: np.ndarray     # (T,) int, jumps where frames were dropped
    rate: float                   # Hz
    nodes: np.ndarray             # (T, 12, 3) ground-truth node positions, never NaN
    markers: np.ndarray           # (T, K, 3) observed (noise, NaN = occluded)
    marker_node: np.ndarray       # (K,) node index of each marker, -1 stray, -2 payload marker
    labels: list                  # (T,) lists of K labels as Motive gives them (None: unlabeled, not seen)
    occluded_fraction: float      # fraction of node+stray marker-frames occluded
    marker_truth: np.ndarray      # (T, K, 3) noise-free marker positions, never NaN (node markers may sit in
                                  # from their bar ends: make_capture's marker_offsets)
    unlabeled_ids: np.ndarray     # (T, K) int: "Unlabeled <id>" number of each marker in the frame, 0 = none
    stray_nodes: np.ndarray       # (S,) node each stray marker is fixed near
    stray_distances: np.ndarray   # (S,) m, stray-to-node distance
    occlusions: list              # [(marker, first row, length in rows)], each a maximal NaN run
    dropped: np.ndarray           # (D,) frame numbers removed
    payload_pose: np.ndarray | None = None     # (T, 7) x y z qx qy qz qw of the payload body (marker centroid)
    payload_offsets: np.ndarray | None = None  # (3, 3) m, payload markers in the payload's frame
    labeled: bool = False         # node markers labeled "Robot:<node>" (else unlabeled)
    motion: str = "roll"
    pose: tuple | None = None     # (R, t) applied to everything
    marker_names: list = field(default_factory=list)   # (K,) "n1".., "stray1".., "payload:Marker1"..

    @property
    def n_frames(self) -> int:
        return len(self.t)

    @property
    def visible(self) -> np.ndarray:
        """(T, K) bool: marker seen in the frame."""
        return np.isfinite(self.markers).all(axis=2)

    @property
    def peak_node_speed(self) -> float:
        """Largest ground-truth node speed [m/s] between consecutive rows."""
        if self.n_frames < 2:
            return 0.0
        v = np.linalg.norm(np.diff(self.nodes, axis=0), axis=2) / np.diff(self.t)[:, None]
        return float(v.max())

    def label_names(self, k: int) -> list:
        """Every label marker ``k`` has during the take, in order of appearance."""
        seen = []
        for row in self.labels:
            if row[k] is not None and (not seen or seen[-1] != row[k]):
                seen.append(row[k])
        return seen


def _occlusion_runs(rng, T: int, M: int, lengths, fraction: float, pairs, clear: int,
                    stray_first: bool = False) -> tuple:
    """Occlusion runs on M markers over T rows until ``fraction`` of the marker-rows is hidden: lengths
    cycled (all used), a node and its stray together (``pairs``: (node, stray) columns; ``stray_first``:
    every stray hidden from the first row until the middle of a gap of its node instead, so it is first
    seen while its node is hidden), three markers at once, then random markers and starts. Runs on one
    marker never touch (at least 2 visible rows between), so each run is a maximal gap. Returns (hidden
    (T, M) bool, [(marker, start, length)])."""
    hidden = np.zeros((T, M), bool)
    runs = []
    lengths = [int(L) for L in lengths if 0 < int(L) <= T - clear - 4]
    if fraction <= 0 or not lengths or M == 0:
        return hidden, runs

    def free(m, s, L):
        return 0 <= s and s + L <= T and s >= clear and not hidden[max(s - 2, 0):s + L + 2, m].any()

    def put(m, s, L):
        hidden[s:s + L, m] = True
        runs.append((int(m), int(s), int(L)))

    Lmid = sorted(lengths)[len(lengths) // 2]
    for node, stray in (pairs if stray_first else pairs[:1]):   # a node and its stray hidden together
        s = int(rng.integers(clear, T - Lmid - Lmid // 4 + 1))
        if stray_first:                                 # the stray first appears in the node's gap
            if free(node, s, Lmid) and not hidden[:s + Lmid // 2 + 2, stray].any():
                put(node, s, Lmid)
                put(stray, 0, s + Lmid // 2)
            continue
        put(node, s, Lmid)
        if free(stray, s + Lmid // 4, Lmid):
            put(stray, s + Lmid // 4, Lmid)
    group = rng.choice(min(M, 12), size=min(3, M), replace=False)   # three node markers at once
    s0 = int(rng.integers(clear, max(T - max(lengths) - 10, clear + 1)))
    for i, m in enumerate(group):
        L, s = lengths[i % len(lengths)], s0 + 4 * i
        if free(m, s, L):
            put(m, s, L)
    target = fraction * T * M
    count = int(hidden.sum())
    i, fails = 0, 0
    while count < target:
        L = lengths[i % len(lengths)]
        m = int(rng.integers(M))
        s = int(rng.integers(clear, T - L + 1))
        if free(m, s, L):
            put(m, s, L)
            count += L
            i, fails = i + 1, 0
        else:
            fails += 1
            if fails > 2000:
                raise ValueError(f"cannot occlude {fraction:.0%} of the marker-frames with runs of {lengths} "
                                 f"frames in {T} frames")
    return hidden, sorted(runs, key=lambda r: (r[1], r[0]))


def _unlabeled_ids(visible, unlabeled_cols, relabel: bool) -> np.ndarray:
    """(T, K) "Unlabeled <id>" numbers: a new id (increasing with the time of appearance) for every
    visible run of each unlabeled column (``relabel``), else one id per column; 0 where not seen."""
    T, K = visible.shape
    ids = np.zeros((T, K), np.int64)
    cols = np.asarray(unlabeled_cols, int)
    if len(cols) == 0:
        return ids
    V = visible[:, cols]
    start = V & ~np.vstack([np.zeros((1, len(cols)), bool), V[:-1]])
    if not relabel:
        start = np.zeros_like(start)
        first = np.argmax(V, axis=0)
        start[first, np.arange(len(cols))] = V[first, np.arange(len(cols))]
    rows, cidx = np.nonzero(start)                      # row-major: ordered by time, then column
    run_id = np.zeros_like(V, np.int64)
    run_id[rows, cidx] = UNLABELED_ID0 + np.arange(len(rows))
    run_id = np.maximum.accumulate(run_id, axis=0)      # ids only increase along a column
    ids[:, cols] = np.where(V, run_id, 0)
    return ids


def make_capture(robot: SyntheticRobot, duration: float = 10.0, rate: float = 360.0, noise: float = 0.0003,
                 strays=((0, 0.036), (5, 0.045)), payload: bool = True, occlusion_lengths=(10, 36, 100),
                 occluded_fraction: float = 0.06, dropped_frames: float = 0.002, labeled: bool = False,
                 relabel: bool = True, motion: str = "roll", pose=None, seed: int = 0,
                 clear_frames: int = 1, strays_at_bar_length: bool = False,
                 stray_first: bool = False, marker_offsets=None) -> SyntheticCapture:
    """A synthetic take of ``robot`` (see the module docstring). Units: s, Hz, m.

    motion "roll": rolling over the floor (centroid ~0.26 m/s, 0.9-1.8 rad/s, a fast segment at 55-80 %
    of the take: centroid up to 0.6 m/s, nodes up to ~1.2 m/s) with each bar turning a few degrees about
    its centre (lengths exact);
    "static": at rest (only noise). ``pose`` (R (3,3), t (3,)) moves everything afterwards.
    ``strays``: (node, distance [m]) markers fixed on that node's bar, about perpendicular to it
    (``strays_at_bar_length``: exactly a bar length from the node's bar partner, so the bar cannot tell
    the stray from the node; ``stray_first``: each stray hidden from the first row until the middle of a
    gap of its node, so it is first seen while its node is hidden - the first ``clear_frames`` rows then
    show every marker but the strays).
    ``payload``: 3-marker rigid body (sides 45-58 mm) suspended from the robot's centroid region and
    swinging inside it (own frequencies; >= 12 mm inside the hull, passing 3-10 cm from nodes).
    ``marker_offsets`` {node index: distance [m]}: that node's marker sits so far in from the bar end, toward
    the bar's other end (a marker glued off the end); ``nodes`` stay the true bar ends.
    Occlusion runs of ``occlusion_lengths`` frames hide node and stray markers until
    ``occluded_fraction`` of their marker-frames is hidden (the first ``clear_frames`` rows show every
    marker; runs are listed as (marker, first row, length) in ``occlusions``); ``dropped_frames`` of the
    frames are removed (frame numbers jump; a dropped frame is not a gap). Nothing goes below the floor:
    in "roll" the lowest node or stray marker is at z = 0 in every frame. Node markers are
    unlabeled (a new "Unlabeled <id>" after each gap if ``relabel``) unless ``labeled``; strays are
    always unlabeled. Seeded: each ingredient has its own random stream.
    """
    strays = _checked(motion, duration, rate, strays)
    N = max(int(round(duration * rate)), 2)
    rng = {k: np.random.default_rng([seed, i]) for i, k in
           enumerate(("shape", "roll", "stray", "payload", "drop", "occlusion", "noise"))}
    t_all = np.arange(N) / rate
    body, Rr, D, nodes_all, strays_all = _robot_motion(robot, t_all, strays, rng, motion, strays_at_bar_length)
    node_markers = markers_in_from_ends(nodes_all, robot.bars, marker_offsets)
    offsets, pp_all, pm_all = _payload_motion(robot, t_all, body, Rr, D, rng["payload"], motion) if payload \
        else (None, None, np.zeros((N, 0, 3)))
    truth_all = np.concatenate([node_markers, strays_all, pm_all], axis=1)
    drop, keep = _dropped(rng["drop"], N, dropped_frames)
    T = len(keep)
    nodes, truth, pp = _posed(pose, nodes_all[keep], truth_all[keep], None if pp_all is None else pp_all[keep])
    S = len(strays)
    M = 12 + S
    K = truth.shape[1]
    marker_node = np.concatenate([np.arange(12), np.full(S, STRAY), np.full(K - M, PAYLOAD)])
    hidden, runs = _occlusion_runs(rng["occlusion"], T, M, occlusion_lengths, occluded_fraction,
                                   [(n, 12 + s) for s, (n, _) in enumerate(strays)], max(int(clear_frames), 0),
                                   stray_first)
    markers = truth + rng["noise"].normal(0.0, noise, truth.shape) if noise > 0 else truth.copy()
    markers[:, :M][hidden] = np.nan
    unl_cols = list(range(12, M)) if labeled else list(range(M))
    uid = _unlabeled_ids(np.isfinite(markers).all(axis=2), unl_cols, relabel)
    names = [f"{ROBOT_ASSET}:{n}" for n in robot.node_names] + [None] * S + \
        [f"{PAYLOAD_ASSET}:Marker{j + 1}" for j in range(K - M)]
    return SyntheticCapture(
        robot=robot, t=keep / float(rate), frame_numbers=keep.astype(np.int64), rate=float(rate), nodes=nodes,
        markers=markers, marker_node=marker_node, labels=_frame_labels(uid, unl_cols, names),
        occluded_fraction=float(hidden.mean()) if M else 0.0, marker_truth=truth, unlabeled_ids=uid,
        stray_nodes=np.array([n for n, _ in strays], int), stray_distances=np.array([d for _, d in strays], float),
        occlusions=runs, dropped=drop.astype(np.int64), payload_pose=pp, payload_offsets=offsets,
        labeled=bool(labeled), motion=motion, pose=pose,
        marker_names=list(robot.node_names) + [f"stray{s + 1}" for s in range(S)] +
        [f"{PAYLOAD_ASSET}:Marker{j + 1}" for j in range(K - M)])


def markers_in_from_ends(nodes, bars, offsets=None) -> np.ndarray:
    """Node marker positions (..., 12, 3) [m]: node k's marker ``offsets[k]`` [m] in from node k toward the
    other end of its bar (``bars`` (6, 2)); the node itself where ``offsets`` has no entry."""
    M = np.array(nodes, float)
    bars = np.asarray(bars, int)
    for k, d in (offsets or {}).items():
        row = int(np.flatnonzero((bars == int(k)).any(axis=1))[0])
        other = int(bars[row, 1] if bars[row, 0] == int(k) else bars[row, 0])
        u = nodes[..., other, :] - nodes[..., int(k), :]
        if not 0.0 <= float(d) < np.linalg.norm(u, axis=-1).min():
            raise ValueError(f"marker offset of node {k}: {d} m is not inside its bar")
        M[..., int(k), :] += float(d) * u / np.linalg.norm(u, axis=-1, keepdims=True)
    return M


def _checked(motion, duration, rate, strays) -> list:
    """The arguments of :func:`make_capture` checked; the strays as [(node, distance [m])]."""
    if motion not in ("roll", "static"):
        raise ValueError(f"motion must be 'roll' or 'static', got {motion!r}")
    if not (rate > 0 and duration > 0):
        raise ValueError(f"duration and rate must be positive, got {duration}, {rate}")
    strays = [(int(n), float(d)) for n, d in strays]
    for s, (n, d) in enumerate(strays):
        if not (0 <= n < 12 and d > 0):
            raise ValueError(f"stray {s}: need a node index 0..11 and a distance > 0, got {(n, d)}")
    return strays


def _robot_motion(robot, t_all, strays, rng, motion, at_bar_length) -> tuple:
    """(body (N, 12, 3) nodes in the robot's frame, rotations Rr (N, 3, 3), translations D (N, 3), world nodes
    (N, 12, 3), world strays (N, S, 3)): the shape's motion, then rolling over the floor (or at rest)."""
    N = len(t_all)
    P0 = np.asarray(robot.positions, float)
    c0 = P0.mean(axis=0)
    body, sbody = sm.body_motion(P0 - c0, np.asarray(robot.bars, int), t_all, strays, rng["shape"], rng["stray"],
                                 moving=motion == "roll", at_bar_length=at_bar_length)
    both = np.concatenate([body, sbody], axis=1)
    if motion == "roll":
        radius = float(np.min(np.abs(np.einsum("fi,fi->f", *_face_planes(P0 - c0, robot.faces)))))
        Rr, D = sm.rolling_motion(t_all, both, rng["roll"], radius)
        D[:, :2] += c0[:2]
    else:
        Rr, D = np.broadcast_to(np.eye(3), (N, 3, 3)), np.broadcast_to(c0, (N, 3))
    W = np.einsum("nij,nkj->nki", Rr, both) + D[:, None, :]
    return body, Rr, D, W[:, :12], W[:, 12:]


def _payload_motion(robot, t_all, body, Rr, D, rng, motion) -> tuple:
    """(marker offsets (3, 3) in the payload's frame, payload pose (N, 7), world markers (N, 3, 3))."""
    offsets = sm.payload_offsets(rng)
    ob, Rb = sm.payload_motion(t_all, body, np.asarray(robot.faces), rng, moving=motion == "roll")
    Rw = Rr @ Rb
    ow = np.einsum("nij,nj->ni", Rr, ob) + D
    return offsets, np.column_stack([ow, sm.quaternions(Rw)]), ow[:, None, :] + np.einsum("nij,kj->nki", Rw, offsets)


def _dropped(rng, N: int, dropped_frames: float) -> tuple:
    """(dropped frame numbers, kept ones): never the first or the last frame."""
    n_drop = int(round(dropped_frames * N)) if N > 2 else 0
    drop = np.sort(rng.choice(np.arange(1, N - 1), size=min(n_drop, N - 2), replace=False)) \
        if n_drop else np.zeros(0, int)
    return drop, np.setdiff1d(np.arange(N), drop)


def _posed(pose, nodes, truth, pp) -> tuple:
    """Nodes, marker truth and payload pose moved by ``pose`` (R, t) (unchanged when None)."""
    if pose is None:
        return nodes, truth, pp
    R, tr = np.asarray(pose[0], float).reshape(3, 3), np.asarray(pose[1], float).reshape(3)
    nodes, truth = nodes @ R.T + tr, truth @ R.T + tr
    if pp is not None:
        Rb = np.einsum("ij,njk->nik", R, _matrices(pp[:, 3:]))
        pp = np.column_stack([pp[:, :3] @ R.T + tr, sm.quaternions(Rb)])
    return nodes, truth, pp


def _frame_labels(uid, unl_cols, names) -> list:
    """Per frame the K labels Motive gives: the asset names, and "Unlabeled <id>" (None: not seen) in the
    unlabeled columns."""
    labels = []
    for row in uid.tolist():
        lab = list(names)
        for k in unl_cols:
            lab[k] = f"Unlabeled {row[k]}" if row[k] else None
        labels.append(lab)
    return labels


def static_capture(robot: SyntheticRobot, frames: int = 50, rate: float = 120.0, noise: float = 0.0003, pose=None,
                   strays=((0, 0.036), (5, 0.045)), payload: bool = False, labeled: bool = False,
                   seed: int = 0, marker_offsets=None) -> SyntheticCapture:
    """A static take of ``frames`` frames at ``rate`` Hz: no motion, no occlusion, no dropped frames
    (``marker_offsets``: as in :func:`make_capture`)."""
    return make_capture(robot, duration=frames / rate, rate=rate, noise=noise, strays=strays, payload=payload,
                        occluded_fraction=0.0, dropped_frames=0.0, labeled=labeled, motion="static", pose=pose,
                        seed=seed, marker_offsets=marker_offsets)


def _face_planes(P, faces):
    """(normals (F, 3), a point of each face (F, 3)) of the triangles ``faces`` of points ``P`` (n, 3)."""
    A, B, C = P[faces[:, 0]], P[faces[:, 1]], P[faces[:, 2]]
    n = np.cross(B - A, C - A)
    return n / np.linalg.norm(n, axis=1, keepdims=True), A


def _matrices(q) -> np.ndarray:
    from scipy.spatial.transform import Rotation
    return Rotation.from_quat(np.asarray(q, float)).as_matrix()


def identity_errors(capture: SyntheticCapture, X, tol: float = 0.010, bar_tol: float = 0.005) -> dict:
    """Score a tracker's node positions ``X`` (T, 12, 3) [m, the capture's frame; NaN = not reported].

    * ``at_other_marker``: reported node-frames whose nearest observed marker within ``tol`` [m] is not
      the node's own marker (a swap, a stray, a payload marker);
    * ``off_truth``: other reported node-frames more than ``tol`` from the true node;
    * ``wrong`` = both; ``untracked``: node-frames with the node's own marker visible but X NaN;
    * ``bar_violations``: frame-bars with both ends reported whose length differs from the true bar
      length by more than ``bar_tol`` [m].
    Also ``reported``, ``visible`` (node-frames with the own marker seen), ``max_error`` [m] over reported
    node-frames, ``max_bar_error`` [m], per-node ``wrong_per_node`` / ``untracked_per_node`` (12,) and the
    first row with a wrong node (``first_wrong_row``, -1 if none). Counts are ints.
    """
    X = np.asarray(X, float)
    truth = capture.nodes
    if X.shape != truth.shape:
        raise ValueError(f"X must have shape {truth.shape} (frames, nodes, 3), got {X.shape}")
    own = np.array([int(np.flatnonzero(capture.marker_node == n)[0]) for n in range(truth.shape[1])])
    M = capture.markers
    rep = np.isfinite(X).all(axis=2)
    err = np.linalg.norm(X - truth, axis=2)
    d = np.linalg.norm(X[:, :, None, :] - M[:, None, :, :], axis=3)           # (T, 12, K)
    d = np.where(np.isfinite(d), d, np.inf)
    nearest = np.argmin(d, axis=2)
    dmin = np.take_along_axis(d, nearest[..., None], axis=2)[..., 0]
    at_other = rep & (dmin <= tol) & (nearest != own[None, :])
    off = rep & ~at_other & (err > tol)
    wrong = at_other | off
    seen = np.isfinite(M[:, own]).all(axis=2)
    untracked = seen & ~rep
    b = np.asarray(capture.robot.bars, int)
    Lx = np.linalg.norm(X[:, b[:, 0]] - X[:, b[:, 1]], axis=2)
    Lt = np.linalg.norm(truth[:, b[:, 0]] - truth[:, b[:, 1]], axis=2)
    dl = np.abs(Lx - Lt)
    both = np.isfinite(dl)
    rows = np.flatnonzero(wrong.any(axis=1))
    return {"wrong": int(wrong.sum()), "at_other_marker": int(at_other.sum()), "off_truth": int(off.sum()),
            "untracked": int(untracked.sum()), "bar_violations": int((both & (dl > bar_tol)).sum()),
            "reported": int(rep.sum()), "visible": int(seen.sum()),
            "max_error": float(err[rep].max()) if rep.any() else 0.0,
            "max_bar_error": float(dl[both].max()) if both.any() else 0.0,
            "wrong_per_node": wrong.sum(axis=0), "untracked_per_node": untracked.sum(axis=0),
            "first_wrong_row": int(rows[0]) if len(rows) else -1}


def _motive_frame(P, up_axis: str) -> np.ndarray:
    if up_axis == "y":
        return z_up_to_y_up(P)
    if up_axis == "z":
        return np.asarray(P, float)
    raise ValueError(f"up_axis must be 'y' (Motive's default) or 'z', got {up_axis!r}")


def write_capture_csv(capture: SyntheticCapture, path, up_axis: str = "y", length_units: str = "Meters",
                      payload_rigid_body: bool = True, take_name: str = "synthetic six-bar") -> Path:
    """Write ``capture`` as a Motive CSV export (format 1.23, header line, CRLF) in Motive's Y-up frame
    (``up_axis="z"``: as is). Columns: the payload rigid body (if ``payload_rigid_body``), labeled
    markers ("Robot:<node>" when the capture is labeled, "payload:Marker<j>"), then one "Unlabeled <id>"
    column per id, empty outside its visible run. Frame numbers jump at dropped frames; times =
    frame number / rate. Returns the path."""
    C = capture
    M = _motive_frame(C.markers, up_axis)
    K = M.shape[1]
    markers, ids = {}, {}
    if C.payload_pose is not None and payload_rigid_body:
        pos = _motive_frame(C.payload_pose[:, :3], up_axis)
        R = _matrices(C.payload_pose[:, 3:])
        if up_axis == "y":
            R = np.einsum("ij,njk->nik", z_up_to_y_up(np.eye(3)).T, R)
        rigid = {PAYLOAD_ASSET: np.column_stack([pos, sm.quaternions(R)])}
        ids[PAYLOAD_ASSET] = "2"
    else:
        rigid = {}
    j = 0
    for k in range(K):                       # labeled markers: IDs "<asset id>:<member>"
        node = int(C.marker_node[k])
        if node >= 0 and C.labeled:
            name, ids_k = f"{ROBOT_ASSET}:{C.robot.node_names[node]}", f"1:{node + 1}"
        elif node == PAYLOAD:
            j += 1
            name, ids_k = f"{PAYLOAD_ASSET}:Marker{j}", f"2:{j}"
        else:
            continue
        markers[name], ids[name] = M[:, k], ids_k
    unlabeled = {}
    uid = C.unlabeled_ids
    for u in np.unique(uid[uid > 0]):
        rows, cols = np.nonzero(uid == u)
        col = np.full((len(C.t), 3), np.nan)
        col[rows] = M[rows, cols]
        unlabeled[f"Unlabeled {int(u)}"] = col
    return write_motive_csv(path, C.t, markers, unlabeled, rigid, frame_rate=C.rate, take_name=take_name,
                            length_units=length_units, marker_ids=ids, frames=C.frame_numbers,
                            total_frames=int(C.frame_numbers[-1] - C.frame_numbers[0] + 1) if len(C.t) else 0)
