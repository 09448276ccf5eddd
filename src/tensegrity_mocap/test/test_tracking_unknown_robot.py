"""Tracking a lab's own robot (issue 12): a hand-built six-bar tensegrity with unlabeled markers, two stray
markers 25-50 mm from nodes, a swinging payload, long occlusions and dropped frames, captured in any pose.

Acceptance: zero identity errors (a node reported at another marker's position), every node tracked
again in the frame its marker is visible again, no bar off by more than 5 mm; the model, written in the
robot's own frame, is registered to a rotated and translated capture from the first frame."""
import numpy as np
import pytest
import yaml

from tensegrity_engine import load_model
from tensegrity_mocap.capture import model_document
from tensegrity_mocap.synthetic import identity_errors, make_capture, six_bar_robot, static_capture, write_capture_csv
from tensegrity_mocap.tracking import NodeTracker, label_matches

WRONG = 0.010        # m: a reported node farther than this from its truth is an identity error (the nearest
                     # other marker is >= 25 mm away; noise is <= 0.5 mm)
BAR = 0.005          # m: the bar-length violation threshold


def robot_model(robot, tmp_path, name="robot"):
    doc = model_document(robot.node_names, robot.positions, robot.bars.tolist(), robot.strings.tolist(),
                         name=name, gravity=(0.0, 0.0, 0.0))
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_model(path)


def track(model, cap, **kw):
    tr = NodeTracker(model, **kw)
    X = np.full(cap.nodes.shape, np.nan)
    for r in range(len(cap.t)):
        X[r] = tr.update(cap.t[r], cap.labels[r], cap.markers[r])
    return X, tr


def score(cap, X) -> dict:
    """synthetic.identity_errors plus the longest run of frames a node was untracked although its marker
    was visible (re-acquisition delay)."""
    s = identity_errors(cap, X, tol=WRONG, bar_tol=BAR)
    own = np.array([int(np.flatnonzero(cap.marker_node == k)[0]) for k in range(X.shape[1])])
    missed = np.isfinite(cap.markers[:, own, 0]) & ~np.isfinite(X[:, :, 0])
    longest, run = 0, np.zeros(X.shape[1], int)
    for row in missed:
        run = np.where(row, run + 1, 0)
        longest = max(longest, int(run.max()))
    return {"identity_errors": s["wrong"], "missed": s["untracked"], "longest_missed": longest,
            "bar_violations": s["bar_violations"], "max_error_m": s["max_error"]}


@pytest.mark.parametrize("seed,noise,strays", [(0, 0.0003, ((0, 0.036), (5, 0.045))),
                                               (1, 0.0005, ((2, 0.025), (7, 0.050))),
                                               (2, 0.0001, ((4, 0.029), (9, 0.045)))])
def test_no_identity_error_through_strays_payload_and_long_occlusions(tmp_path, seed, noise, strays):
    robot = six_bar_robot(seed=seed)
    model = robot_model(robot, tmp_path)
    cap = make_capture(robot, duration=10.0, rate=360.0, noise=noise, strays=strays, payload=True,
                       occlusion_lengths=(10, 36, 100), occluded_fraction=0.06, seed=seed)
    assert cap.occluded_fraction >= 0.05
    assert {length for _, _, length in cap.occlusions} >= {10, 36, 100}
    X, tr = track(model, cap, exclude=["payload:*"])
    s = score(cap, X)
    assert s["identity_errors"] == 0, s
    assert s["longest_missed"] <= 1, s           # re-acquired within one frame of its marker being visible
    assert s["bar_violations"] == 0, s
    assert tr.stats.reacquired <= len(cap.occlusions) + 5        # events, not node-frames
    assert tr.stats.registrations == 1


@pytest.mark.parametrize("lengths", [(1, 2, 3), (200,), (1, 200, 600)])
def test_any_occlusion_length_from_one_frame_to_seconds(tmp_path, lengths):
    """Occlusion runs of 1 frame to 1.7 s (600 frames at 360 Hz): re-acquired when the marker is back."""
    robot = six_bar_robot(seed=7)
    cap = make_capture(robot, duration=8.0, noise=0.0003, occlusion_lengths=lengths, occluded_fraction=0.08,
                       seed=7)
    X, _ = track(robot_model(robot, tmp_path), cap, exclude=["payload:*"])
    s = score(cap, X)
    assert s["identity_errors"] == 0 and s["longest_missed"] <= 1 and s["bar_violations"] == 0, s


def test_payload_not_excluded_is_never_taken_for_a_node(tmp_path):
    """Without the exclusion glob the payload's markers are other tracks beside the nodes: still no error."""
    robot = six_bar_robot(seed=3)
    cap = make_capture(robot, duration=6.0, noise=0.0003, seed=3)
    X, _ = track(robot_model(robot, tmp_path), cap)
    s = score(cap, X)
    assert s["identity_errors"] == 0 and s["bar_violations"] == 0, s


def random_pose(rng):
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    w, x, y, z = q
    R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                  [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                  [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    return R, rng.uniform(-3.0, 3.0, 3)


@pytest.mark.parametrize("seed", range(8))
def test_model_in_its_own_frame_registers_to_any_pose_from_frame_one(tmp_path, seed):
    """Every hand-built robot of the generator (its symmetric placements fit 1.5-3 mm RMS worse, the true
    one at the noise level) in a random pose; seed 6's nearest symmetric placement is the closest (1.6 mm
    against 0.6 mm): with noise 0.4 mm it is told apart by the ambiguity margin, not guessed."""
    rng = np.random.default_rng(100 + seed)
    robot = six_bar_robot(seed=seed % 7)
    model = robot_model(robot, tmp_path)
    cap = make_capture(robot, duration=1.0, noise=0.0004 if seed == 6 else 0.0003, pose=random_pose(rng),
                       occluded_fraction=0.0, dropped_frames=0.0, seed=seed)
    tr = NodeTracker(model, exclude=["payload:*"])
    x0 = tr.update(cap.t[0], cap.labels[0], cap.markers[0])
    assert np.isfinite(x0).all(), tr.explain()
    assert np.linalg.norm(x0 - cap.nodes[0], axis=1).max() < WRONG
    assert tr.registration is not None and not tr.registration.ambiguous
    assert tr.registration.rms < 0.002                            # the noise level, not a loose fit


def test_symmetric_robot_is_ambiguous_until_a_marker_map_says_which_is_which(tmp_path):
    """A perfectly symmetric robot cannot be registered from geometry: NaN with the reason and the fix
    (unless the capture has it where the model is written: that placement wins ties)."""
    robot = six_bar_robot(irregularity=0.0, seed=0)
    model = robot_model(robot, tmp_path)
    in_place = static_capture(robot, frames=3, noise=0.0001, strays=(), seed=0)
    X, _ = track(model, in_place)
    assert np.isfinite(X).all() and np.abs(X - in_place.nodes).max() < WRONG
    cap = static_capture(robot, frames=20, noise=0.0001, strays=(), pose=random_pose(np.random.default_rng(7)),
                         seed=0)
    X, tr = track(model, cap)
    assert not np.isfinite(X).any()
    assert set(tr.reasons) == {"unregistered"} and "ambiguous" in tr.explain() and "marker_map" in tr.explain()
    names = cap.labels[0]
    marker_map = {names[k]: robot.node_names[cap.marker_node[k]] for k in range(len(names))
                  if cap.marker_node[k] >= 0}                      # 'Unlabeled 1003' = 'n4', ...
    X, tr = track(model, cap, marker_map=marker_map)
    assert np.isfinite(X).all() and np.abs(X - cap.nodes).max() < WRONG


def test_exclusion_globs_and_the_excluded_reason(tmp_path):
    robot = six_bar_robot(seed=1)
    model = robot_model(robot, tmp_path)
    cap = static_capture(robot, frames=5, strays=(), seed=1)
    assert label_matches("payload:Marker1", ["payload:*"]) and not label_matches("Unlabeled 7", ["payload:*"])
    X, tr = track(model, cap)
    assert np.isfinite(X[-1]).all()
    k = int(np.flatnonzero(cap.marker_node == 3)[0])
    labels = [list(lab) for lab in cap.labels]
    for lab in labels:
        lab[k] = "payload:Marker9"                                # node n4's marker now looks like the payload
    tr2 = NodeTracker(model, exclude=["payload:*"])
    for r in range(len(cap.t)):
        x = tr2.update(cap.t[r], labels[r], cap.markers[r])
    assert np.isfinite(x[[i for i in range(12) if i != 3]]).all() and not np.isfinite(x[3]).any()
    assert tr2.reasons[3] == "excluded" and "n4: the only marker near it is excluded" in tr2.explain()
    assert tr2.marker_status[k] == -2


def test_track_command_writes_tracks_reasons_and_plot(tmp_path):
    """tensegrity-mocap track: a CSV take (unlabeled names, Y-up) + the model -> tracks, reasons, plot."""
    import json
    from tensegrity_mocap.cli.mocap import main
    robot = six_bar_robot(seed=4)
    robot_model(robot, tmp_path)
    cap = make_capture(robot, duration=3.0, noise=0.0003, seed=4)
    take = write_capture_csv(cap, tmp_path / "take.csv")
    out = tmp_path / "out"
    assert main(["track", str(take), "--model", str(tmp_path / "robot.yaml"), "--exclude", "payload:*",
                 "--out", str(out)]) == 0
    data = np.load(out / "tracks.npz")
    X = data["nodes"]
    s = score(cap, X)
    assert s["identity_errors"] == 0 and s["longest_missed"] <= 1 and s["bar_violations"] == 0, s
    reasons = data["reasons"]
    assert (reasons[np.isfinite(X[:, :, 0])] == 0).all() and (reasons[~np.isfinite(X[:, :, 0])] > 0).all()
    summary = json.loads((out / "tracking.json").read_text())
    assert summary["registration"]["rms_m"] < 0.002 and summary["reacquired"] <= len(cap.occlusions) + 5
    assert (out / "tracking.png").stat().st_size > 10000 and (out / "tracks.csv").exists()
    assert main(["track", str(take), "--model", str(tmp_path / "nope.yaml"), "--out", str(out)]) == 2


def test_a_flood_of_markers_is_bounded_and_never_makes_a_wrong_node(tmp_path):
    """Hostile or broken input: thousands of markers in a frame cost a bounded time (markers beyond
    MAX_MARKERS are ignored and counted) and no registration is tried among more than
    MAX_REGISTER_MARKERS (it says why)."""
    from tensegrity_mocap.tracking.tracker import MAX_MARKERS, MAX_REGISTER_MARKERS
    robot = six_bar_robot(seed=5)
    model = robot_model(robot, tmp_path)
    cap = make_capture(robot, duration=0.5, seed=5, occluded_fraction=0.0)
    rng = np.random.default_rng(5)
    tr = NodeTracker(model)
    for r in range(20):
        tr.update(cap.t[r], cap.labels[r], cap.markers[r])
    junk = rng.uniform(-3.0, 3.0, (3 * MAX_MARKERS, 3))
    x = tr.update(cap.t[20], list(cap.labels[20]) + [None] * len(junk), np.vstack([cap.markers[20], junk]))
    ok = np.isfinite(x[:, 0])
    assert ok.sum() >= 10 and np.linalg.norm(x[ok] - cap.nodes[20, ok], axis=1).max() < WRONG
    seen = int(np.isfinite(cap.markers[20]).all(axis=1).sum())
    assert tr.stats.ignored_markers == seen + len(junk) - MAX_MARKERS
    fresh = NodeTracker(model)
    x = fresh.update(0.0, [None] * (MAX_REGISTER_MARKERS + 1), rng.uniform(-3, 3, (MAX_REGISTER_MARKERS + 1, 3)))
    assert not np.isfinite(x).any() and "too many" in fresh.explain()


def test_model_made_from_a_static_take_tracks_a_turned_moving_take_from_frame_one(tmp_path):
    """The whole path of a new lab: static take (CSV, unlabeled, strays) + bar list -> model in the robot's
    frame -> a moving take in another pose, registered at the first frame and tracked without an error."""
    from tensegrity_mocap.capture import model_from_capture, write_capture_model
    robot = six_bar_robot(seed=6)
    static = static_capture(robot, frames=60, noise=0.0003, pose=random_pose(np.random.default_rng(60)), seed=6)
    take = write_capture_csv(static, tmp_path / "static.csv")
    name = {int(static.marker_node[k]): static.labels[0][k] for k in range(len(static.marker_node))
            if static.marker_node[k] >= 0}
    bars = [(name[int(i)], name[int(j)]) for i, j in robot.bars]
    res = model_from_capture(take, bars)
    model_path, _ = write_capture_model(res, tmp_path / "lab_robot.yaml")
    model = load_model(model_path)
    for seed in (61, 62):
        cap = make_capture(robot, duration=4.0, noise=0.0003, pose=random_pose(np.random.default_rng(seed)),
                           seed=seed)
        # the generated model names its nodes after the bar list: bar k = nodes n(2k-1), n(2k); the
        # capture's truth is in the robot's node order: reorder the truth to the model's nodes
        order = robot.bars.reshape(-1)
        tr = NodeTracker(model, exclude=["payload:*"])
        X = np.full(cap.nodes.shape, np.nan)
        for r in range(len(cap.t)):
            X[r, order] = tr.update(cap.t[r], cap.labels[r], cap.markers[r])
        assert np.isfinite(X[0]).all(), tr.explain()
        s = score(cap, X)
        assert s["identity_errors"] == 0 and s["longest_missed"] <= 1 and s["bar_violations"] == 0, s


def test_synth_model_track_commands_end_to_end(tmp_path):
    """The demo path of docs/bring_your_own_robot.md with the command line only: synth (static, turned) ->
    model -> synth (moving, turned) -> track; the tracks match the take's truth."""
    from tensegrity_mocap.cli.mocap import main
    d = tmp_path
    assert main(["synth", str(d / "static.csv"), "--static", "--duration", "0.5", "--random-pose", "--seed", "3"]) == 0
    assert main(["model", str(d / "static.csv"), "--bars", str(d / "static.bars.txt"), "--strings",
                 str(d / "static.strings.txt"), "-o", str(d / "robot.yaml"), "--gravity", "0", "0", "0"]) == 0
    assert main(["synth", str(d / "take.csv"), "--duration", "3", "--random-pose", "--seed", "4"]) == 0
    assert main(["track", str(d / "take.csv"), "--model", str(d / "robot.yaml"), "--exclude", "payload:*",
                 "--out", str(d / "track")]) == 0
    truth = np.load(d / "take.truth.npz")
    tracks = np.load(d / "track" / "tracks.npz")
    order = truth["bars"].reshape(-1)                  # model node 2k, 2k+1 = the ends of bar k
    X, T = tracks["nodes"], truth["nodes"][:, order]
    ok = np.isfinite(X[:, :, 0])
    assert ok.mean() > 0.9 and ok[0].all()
    assert np.linalg.norm(X[ok] - T[ok], axis=1).max() < 0.003        # noise 0.3 mm + model from 0.5 s take


def test_compare_a_six_bar_take_with_a_simulation_of_its_model(tmp_path):
    """Issue 12 acceptance: tensegrity-compare on a six-bar capture (unlabeled, tracked, another pose) vs a
    simulation of the model made from it: per-node RMS and plots, no paper input, no frames."""
    import json
    from tensegrity_mocap.cli.compare import main as compare_main
    from tensegrity_mocap.cli.mocap import main
    d = tmp_path
    assert main(["synth", str(d / "static.csv"), "--static", "--duration", "1", "--random-pose", "--seed", "3"]) == 0
    assert main(["model", str(d / "static.csv"), "--bars", str(d / "static.bars.txt"), "--strings",
                 str(d / "static.strings.txt"), "-o", str(d / "robot.yaml"), "--gravity", "0", "0", "0"]) == 0
    assert main(["synth", str(d / "again.csv"), "--static", "--duration", "2", "--rate", "120", "--random-pose",
                 "--seed", "3"]) == 0                                  # same pose, another take
    assert compare_main([str(d / "again.csv"), "--simulate", str(d / "robot.yaml"), "--input", "none",
                         "--exclude", "payload:*", "--capture-transform", str(d / "robot.report.json"),
                         "--out", str(d / "cmp")]) == 0
    nodes = json.loads((d / "cmp" / "rms.json").read_text())["nodes"]
    per_node = [v["rms_mm"] for k, v in nodes["per_node"].items()] if "per_node" in nodes else None
    assert per_node is not None and len(per_node) == 12
    assert max(per_node) < 2.0                                         # marker noise 0.3 mm, model from 1 s
    assert (d / "cmp" / "nodes.png").stat().st_size > 10000
