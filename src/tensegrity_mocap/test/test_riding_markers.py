"""Marker offsets that ride the bar (issue 35, item 6) in the tracker: a prism whose markers sit off its bar
ends (``marker: {offset: [...], frame: bar}``) turns and moves rigidly; the tracker follows the markers where
the model puts them and the bar ends behind them come back exactly (``nodes_from_markers``, which compare and
identify use). Fast: 150 frames of six labelled markers."""
import copy

import numpy as np

from tensegrity_engine import build_model, load_model, spec_from_dict
from tensegrity_engine.model.markers import marker_positions, nodes_from_markers
from tensegrity_engine.model.write import spec_to_dict
from tensegrity_mocap.tracking.tracker import NodeTracker, rigid_pairs

RIDERS = {"b1": {"offset": [0.004, 0.012, -0.003], "frame": "bar"},
          "t2": {"offset": [-0.01, 0.006, 0.009], "frame": "bar", "toward": "t3"},
          "b3": {"offset": [0.0, -0.012, 0.0], "frame": "bar"}, "t3": {"along_bar": 0.05}}


def riding_prism():
    doc = copy.deepcopy(spec_to_dict(load_model("prism3"), resolved=False))
    for nd in doc["nodes"]:
        if nd["name"] in RIDERS:
            nd["marker"] = RIDERS[nd["name"]]
    return build_model(spec_from_dict(doc, "riding.yaml"))


def rotation(axis, angle) -> np.ndarray:
    k = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def test_tracker_follows_riding_markers_through_a_turn_and_the_bar_ends_come_back():
    model = riding_prism()
    assert len(rigid_pairs(model)[0]) == 3           # riding markers keep their bar's markers a rigid pair
    X0 = np.asarray(model.positions)
    tracker = NodeTracker(model, marker_map={n: n for n in model.node_names[:model.n_physical]})
    worst_marker = worst_node = 0.0
    dt = 0.01
    for k in range(150):                             # 1.5 s: 135 degrees about a tilted axis, 0.3 m drift
        t = k * dt
        X = X0 @ rotation([0.3, -0.5, 1.0], 0.5 * np.pi * t).T + [0.2 * t, -0.1 * t, 0.05 * t]
        M = marker_positions(model, X)
        P = tracker.update(t, list(model.node_names[:model.n_physical]), M)
        assert np.isfinite(P).all(), k
        worst_marker = max(worst_marker, np.abs(P - M).max())
        worst_node = max(worst_node, np.abs(nodes_from_markers(model, P) - X[:model.n_physical]).max())
    assert worst_marker < 1e-12 and worst_node < 1e-12, (worst_marker, worst_node)


def test_compare_reads_tracked_riding_markers_against_the_simulated_markers(tmp_path):
    """tensegrity-compare compares a tracks.npz's markers with the simulation's riding markers: a run against
    its own markers matches to rounding (its bar ends, compared as markers, are 12-50 mm off)."""
    import json
    from tensegrity_engine import Simulator
    from tensegrity_engine.model.write import dump_model
    from tensegrity_mocap.cli.compare import main as compare_main
    model = riding_prism()
    path = dump_model(model, tmp_path / "riding.yaml")
    run = Simulator(model).run(0.3, rate=100.0)
    run.save(tmp_path / "sim")
    X = run.nodes[:, :model.n_physical]
    np.savez(tmp_path / "tracks.npz", t=run.t, markers=marker_positions(model, X), nodes=X,
             node_names=np.array(model.node_names[:model.n_physical]))
    assert compare_main([str(tmp_path / "tracks.npz"), "--model", str(path), "--trajectory", str(tmp_path / "sim"),
                         "--out", str(tmp_path / "cmp")]) == 0
    rms = json.loads((tmp_path / "cmp" / "rms.json").read_text())
    assert rms["compared"] == "markers" and rms["nodes"]["max_mm"] < 1e-6
