"""Issue 21 #12: a stray marker never seen beside its node (first seen while the node is hidden, or back
after its ghost was forgotten) sits at a bar partner's distance from the node's partner, so the bar cannot
tell it from the node. It must never become the node: the node stays NaN (reason 'ambiguous', named in
explain()) until its neighbourhood proves a marker is the node.

Identity error = a node reported at a marker that is not its own (synthetic.identity_errors); NaN is not an
error, but the node-frames left NaN while the node's own marker was visible are counted and bounded (the
tracker must not be blinded)."""
import numpy as np
import pytest

from tensegrity_mocap.tracking import other_markers as marker_tracks
from tensegrity_mocap.synthetic import identity_errors, make_capture, six_bar_robot
from tensegrity_mocap.tracking import NodeTracker
from tensegrity_mocap.tracking.tracker import STUCK_FRAMES
from test_tracking_unknown_robot import robot_model, score, track


def test_a_stray_first_seen_while_its_node_is_hidden_never_becomes_the_node(tmp_path):
    """The issue's scenario: the stray is hidden from the start and appears during a 100-frame gap of its
    node (0.28 s at 360 Hz), a bar length from the node's partner. Before the fix the wide search took it
    for the node after 20 frames and kept it for good (thousands of wrong node-frames)."""
    robot = six_bar_robot(seed=0)
    cap = make_capture(robot, duration=4.0, rate=360.0, strays=((0, 0.036), (5, 0.045)),
                       occlusion_lengths=(36, 100, 200), strays_at_bar_length=True, stray_first=True, seed=0)
    partner = {0: 1, 5: 4}
    for s, node in enumerate(cap.stray_nodes):                     # the scenario is what it says
        stray = cap.marker_truth[:, 12 + s]
        bar = np.linalg.norm(cap.nodes[:, partner[node]] - cap.nodes[:, node], axis=1)
        assert np.abs(np.linalg.norm(stray - cap.nodes[:, partner[node]], axis=1) - bar).max() < 1e-9
        first = int(np.argmax(cap.visible[:, 12 + s]))
        assert first > 0 and not cap.visible[first, node]
    tr = NodeTracker(robot_model(robot, tmp_path), exclude=["payload:*"])
    X = np.full(cap.nodes.shape, np.nan)
    said = []                                                      # (reason, explanation) while the stray is
    for r in range(len(cap.t)):                                    # there and its node is not
        X[r] = tr.update(cap.t[r], cap.labels[r], cap.markers[r])
        for s, node in enumerate(cap.stray_nodes):
            if cap.visible[r, 12 + s] and not cap.visible[r, node] and tr.lost_frames[node] > STUCK_FRAMES:
                said.append((tr.reasons[node], tr.explain()))
    s = score(cap, X)
    assert s["identity_errors"] == 0, s
    assert s["longest_missed"] <= 1, s                             # the node itself is taken at once
    assert said and all(reason == "ambiguous" and "stray marker at a bar partner's distance" in text
                        for reason, text in said), said[:3]


def test_a_stray_back_after_its_ghost_was_forgotten_never_becomes_the_node(tmp_path, monkeypatch):
    """A stray seen beside its node, occluded, remembered as a ghost; the ghost expires (GHOST_LIFETIME,
    60 s, shortened here) and the stray comes back while its node is hidden: nothing remembers it."""
    monkeypatch.setattr(marker_tracks, "GHOST_LIFETIME", 0.3)
    robot = six_bar_robot(seed=2)
    cap = make_capture(robot, duration=2.0, rate=360.0, strays=((3, 0.03),), payload=False, occluded_fraction=0.0,
                       dropped_frames=0.0, strays_at_bar_length=True, seed=2)
    cap.markers[100:400, 12] = np.nan                              # the stray vanishes; its ghost expires
    cap.markers[300:500, 3] = np.nan                               # its node vanishes; the stray is back at 400
    X, tr = track(robot_model(robot, tmp_path), cap)
    s = score(cap, X)
    assert s["identity_errors"] == 0, s
    assert s["longest_missed"] <= 1, s                             # the node is taken as soon as it is back
    assert not len(tr.others.G)                                    # the ghost was forgotten indeed


def random_take(seed: int, duration: float = 2.0, rate: float = 120.0):
    """A random six-bar take: two strays 25-50 mm from random nodes, exactly a bar length from those
    nodes' partners, each hidden from the start until the middle of a gap of its node; noise 0.1-0.5 mm;
    occlusion runs of 10, 36 and 100 frames (6 % of the marker-frames), a payload, dropped frames."""
    rng = np.random.default_rng([seed, 21])
    robot_seed = int(rng.integers(7))
    strays = tuple((int(n), float(rng.uniform(0.025, 0.05))) for n in rng.choice(12, 2, replace=False))
    robot = six_bar_robot(seed=robot_seed)
    cap = make_capture(robot, duration=duration, rate=rate, seed=seed, strays=strays, strays_at_bar_length=True,
                       stray_first=True, noise=float(rng.uniform(0.0001, 0.0005)))
    return robot_seed, cap


def track_random_takes(seeds, tmp_path) -> dict:
    models, total = {}, {"wrong": 0, "untracked": 0, "visible": 0, "longest_missed": 0, "takes": 0}
    for seed in seeds:
        robot_seed, cap = random_take(seed)
        if robot_seed not in models:
            models[robot_seed] = robot_model(cap.robot, tmp_path, f"robot{robot_seed}")
        X, _ = track(models[robot_seed], cap, exclude=["payload:*"])
        e, s = identity_errors(cap, X), score(cap, X)
        total["wrong"] += e["wrong"]
        total["untracked"] += e["untracked"]
        total["visible"] += e["visible"]
        total["longest_missed"] = max(total["longest_missed"], s["longest_missed"])
        total["takes"] += 1
    return total


def check_random_takes(total):
    assert total["wrong"] == 0, total
    # not blinded: the node-frames left NaN with the own marker visible (a node back after a long gap whose
    # neighbours deformed more than the proof radius: 367 of 535,362 over the 200 takes) stay few
    assert total["untracked"] <= 0.003 * total["visible"], total
    assert total["longest_missed"] <= 120, total                  # 1 s at 120 Hz (measured: 72 frames)


def test_random_takes_with_strays_at_a_bar_partners_distance(tmp_path):
    """A seeded sample of the 200-take acceptance run (below, slow): zero identity errors."""
    check_random_takes(track_random_takes(range(0, 200, 12), tmp_path))


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(8))
def test_200_random_takes_with_strays_at_a_bar_partners_distance(tmp_path, chunk):
    """Issue 21 #12 acceptance: 200 random takes (8 chunks of 25), zero identity errors."""
    check_random_takes(track_random_takes(range(25 * chunk, 25 * chunk + 25), tmp_path))
