"""Markers off the nodes (issue 24): the ``marker`` of a node in the model file, its errors, writing it back,
and marker positions from node positions and back. Fast: no simulation."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml

from tensegrity_engine import ModelError, build_model, load_model, spec_from_dict
from tensegrity_engine.model.markers import (has_marker_offsets, marker_bar_lengths, marker_positions,
                                             nodes_from_markers)
from tensegrity_engine.model.write import dump_model, spec_to_dict


def prism_doc() -> dict:
    """The built-in prism3 as a document, so a test can add markers to it."""
    return copy.deepcopy(spec_to_dict(load_model("prism3"), resolved=False))


def with_markers(doc, **markers) -> dict:
    doc = copy.deepcopy(doc)
    for nd in doc["nodes"]:
        if nd["name"] in markers:
            nd["marker"] = markers[nd["name"]]
    return doc


def build(doc):
    return build_model(spec_from_dict(doc, "markers.yaml"))


def test_along_bar_marker_sits_on_the_bar_toward_the_other_end():
    m = build(with_markers(prism_doc(), b1={"along_bar": 0.1}, t2={"along_bar": 0.05}))
    assert has_marker_offsets(m)
    X = np.asarray(m.positions)
    M = marker_positions(m, X)
    i, j = m.node_index("b1"), m.node_index("t1")
    u = (X[j] - X[i]) / np.linalg.norm(X[j] - X[i])
    assert np.allclose(M[i], X[i] + 0.1 * u, atol=1e-12)
    k, p = m.node_index("t2"), m.node_index("b2")
    assert np.allclose(M[k], X[k] + 0.05 * (X[p] - X[k]) / 0.3, atol=1e-12)
    rest = [n for n in range(m.n_physical) if n not in (i, k)]
    assert np.array_equal(M[rest], X[rest])
    # bar rod_I's markers are 0.1 m closer; rod_II's 0.05 m
    assert np.allclose(marker_bar_lengths(m), [0.2, 0.25, 0.3], atol=1e-12)


def test_markers_vectorised_over_time_and_back():
    m = build(with_markers(prism_doc(), b1={"along_bar": 0.1}, t1={"along_bar": 0.02},
                           b3={"offset": [0, 0, 0.01], "frame": "bar"}))
    rng = np.random.default_rng(1)
    X = np.asarray(m.positions) + rng.normal(0, 0.01, (5, m.n_nodes, 3))
    M = marker_positions(m, X)
    assert M.shape == (5, m.n_physical, 3)
    assert np.allclose(M[2], marker_positions(m, X[2]))
    b3, t3, b2 = (m.node_index(n) for n in ("b3", "t3", "b2"))      # rides rod_III, toward b2 (string c4)
    normal = np.cross(X[..., t3, :] - X[..., b3, :], X[..., b2, :] - X[..., b3, :])
    normal /= np.linalg.norm(normal, axis=-1, keepdims=True)
    assert np.allclose(M[..., b3, :], X[..., b3, :] + 0.01 * normal, atol=1e-12)
    # back to the nodes: exact when the bars keep their length (rigid motion of the model's shape)
    R = np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]])
    Xr = np.asarray(m.positions) @ R.T + [0.3, -0.2, 0.1]
    assert np.allclose(nodes_from_markers(m, marker_positions(m, Xr)), Xr[:m.n_physical], atol=1e-12)
    M2 = marker_positions(m, Xr)
    M2[m.node_index("t1")] = np.nan                 # a partner marker unknown: the node is unknown
    N = nodes_from_markers(m, M2)
    assert np.isnan(N[m.node_index("b1")]).all() and np.allclose(N[m.node_index("b2")], Xr[m.node_index("b2")])


def test_no_marker_is_the_identity():
    m = load_model("prism3")
    assert not has_marker_offsets(m)
    X = np.asarray(m.positions)
    assert np.array_equal(marker_positions(m, X), X[:m.n_physical])
    assert np.array_equal(nodes_from_markers(m, X[:m.n_physical]), X[:m.n_physical])


def test_markers_are_written_back_and_load_again(tmp_path):
    doc = with_markers(prism_doc(), b1={"along_bar": 0.1}, b3={"offset": [0.0, 0.0, 0.01], "frame": "bar"},
                       t2={"offset": [0.01, -0.002, 0.003], "frame": "bar", "toward": "t1"})
    m = build(doc)
    back = yaml.safe_load(dump_model(m, tmp_path / "m.yaml").read_text())
    nodes = {nd["name"]: nd for nd in back["nodes"]}
    assert nodes["b1"]["marker"] == {"along_bar": 0.1, "bar": "rod_I"}
    assert nodes["b3"]["marker"] == {"offset": [0.0, 0.0, 0.01], "frame": "bar", "bar": "rod_III", "toward": "b2"}
    assert nodes["t2"]["marker"] == {"offset": [0.01, -0.002, 0.003], "frame": "bar", "bar": "rod_II",
                                     "toward": "t1"}
    assert "marker" not in nodes["t1"]
    m2 = load_model(str(tmp_path / "m.yaml"))
    assert np.allclose(marker_positions(m2, m2.positions), marker_positions(m, m.positions))


@pytest.mark.parametrize("marker, words", [
    ("here", ["node 'b1'", "'marker' must be a mapping", "along_bar"]),
    ({"along": 0.1}, ["node 'b1'", "unknown key", "along_bar"]),
    ({}, ["exactly one of 'along_bar'", "offset"]),
    ({"along_bar": 0.1, "offset": [0, 0, 0]}, ["exactly one of"]),
    ({"along_bar": -0.1}, ["marker.along_bar", ">= 0"]),
    ({"along_bar": 0.3}, ["bar 'rod_I'", "0.3 m long", "less than the bar's length"]),
    ({"along_bar": 0.1, "bar": "rod_II"}, ["'rod_II'", "does not end at node 'b1'", "rod_I"]),
    ({"offset": [0, 0]}, ["marker.offset", "[x, y, z]"]),
    ({"bar": "rod_I"}, ["names a 'bar' but gives no 'along_bar'"]),
    ({"offset": [0, 0, 0.01], "frame": "body"}, ["'marker.frame'", "frame: bar"]),
    ({"offset": [0, 0, 0.01], "toward": "t2"}, ["in the world frame", "frame: bar"]),
    ({"along_bar": 0.1, "frame": "bar"}, ["belong to a marker 'offset'"]),
    ({"offset": [0, 0, 0.01], "frame": "bar", "toward": "t1"}, ["'t1'", "axis of bar 'rod_I'", "toward: NODE"]),
    ({"offset": [0, 0, 0.01], "frame": "bar", "toward": "nowhere"}, ["unknown node 'nowhere'", "toward"]),
    ({"offset": [0, 0, 0.01]}, ["node 'b1'", "world frame but the node moves", "frame: bar, bar: rod_I"]),
    ({"offset": [0.05, 0.05, 0], "frame": "bar"}, ["0.07071 m long", "more than 0.03312 m", "not on the bar"]),
])
def test_marker_errors_name_file_element_and_fix(marker, words):
    with pytest.raises(ModelError) as err:
        build(with_markers(prism_doc(), b1=marker))
    text = str(err.value)
    assert "markers.yaml" in text and "Fix:" in text
    for w in words:
        assert w in text, (w, text)


def test_marker_errors_for_bars():
    doc = with_markers(prism_doc(), b1={"along_bar": 0.15}, t1={"along_bar": 0.15})
    with pytest.raises(ModelError, match="meet|other end's marker"):
        build(doc)
    doc = prism_doc()
    doc["nodes"].append({"name": "loose", "position": [0.0, 0.0, 0.5], "mass": 0.1,
                         "marker": {"along_bar": 0.01}})
    doc["strings"].append({"name": "tie", "path": ["loose", "t1"], "stiffness": 10.0, "rest_length": 0.3})
    with pytest.raises(ModelError, match="node 'loose'.*no bar ends at it.*connect a bar"):
        build(doc)


RIDERS = {"b1": {"offset": [0.004, 0.012, -0.003], "frame": "bar"},              # toward b2 (string c1)
          "t2": {"offset": [-0.01, 0.006, 0.009], "frame": "bar", "toward": "t3"},
          "b3": {"offset": [0.0, -0.012, 0.0], "frame": "bar"},                  # with an along-bar partner
          "t3": {"along_bar": 0.05}, "b2": {"along_bar": 0.02}}


def random_rotation(rng) -> np.ndarray:
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    return q if np.linalg.det(q) > 0 else -q


def test_riding_offsets_move_exactly_with_the_bar_under_rigid_motions():
    """Issue 35 (6): a 12 mm offset that was fixed in the world ended 23.9 mm off after rigid motions; riding
    the bar's frame it moves with the robot to rounding (1e-12 m), and the nodes come back from the markers."""
    m = build(with_markers(prism_doc(), **RIDERS))
    rng = np.random.default_rng(35)
    X = np.asarray(m.positions)
    M0 = marker_positions(m, X)
    assert np.allclose(np.linalg.norm(M0[[0, 4, 2]] - X[[0, 4, 2]], axis=1),
                       [np.linalg.norm(RIDERS[n]["offset"]) for n in ("b1", "t2", "b3")], atol=1e-15)
    Rs = np.stack([random_rotation(rng) for _ in range(20)])
    ts = rng.uniform(-2.0, 2.0, (20, 3))
    Xs = np.einsum("kij,nj->kni", Rs, X) + ts[:, None, :]
    Ms = marker_positions(m, Xs)
    assert np.abs(Ms - (np.einsum("kij,nj->kni", Rs, M0) + ts[:, None, :])).max() < 1e-12
    assert np.abs(nodes_from_markers(m, Ms) - Xs[:, :m.n_physical]).max() < 1e-12


def test_nodes_from_riding_markers_leave_unknown_nodes_unknown():
    m = build(with_markers(prism_doc(), **RIDERS))
    M = marker_positions(m, m.positions)
    M[m.node_index("b2")] = np.nan       # b1's and b3's reference node, t2's bar partner: these unknown
    N = nodes_from_markers(m, M)
    unknown = [m.node_index(n) for n in ("b1", "b2", "b3", "t2", "t3")]
    assert np.isnan(N[unknown]).all()
    assert np.abs(N[m.node_index("t1")] - m.positions[m.node_index("t1")]).max() < 1e-12


def test_world_offset_keeps_its_meaning_on_a_fixed_node_and_the_error_gives_the_riding_marker():
    doc = with_markers(prism_doc(), b3={"offset": [0.0, 0.0, 0.012]})
    fixed = copy.deepcopy(doc)
    next(nd for nd in fixed["nodes"] if nd["name"] == "b3")["fixed"] = True
    m = build(fixed)                                 # old files: a fixed node's offset is the world vector
    assert np.array_equal(marker_positions(m, m.positions)[2], m.positions[2] + [0.0, 0.0, 0.012])
    with pytest.raises(ModelError, match="world frame but the node moves") as err:
        build(doc)
    suggested = yaml.safe_load(str(err.value).split("write '")[1].split("'")[0])["marker"]
    riding = build(with_markers(prism_doc(), b3=suggested))
    # the suggestion keeps 6 significant digits: the same marker within 1e-8 m at the file's shape
    assert np.allclose(marker_positions(riding, riding.positions)[2], m.positions[2] + [0.0, 0.0, 0.012],
                       atol=1e-8)


def test_a_model_moved_onto_a_take_carries_its_markers():
    """identify's boundary placement (identify.boundary.moved) turns world-frame offsets of fixed nodes with the
    model (they stayed put before); riding offsets follow by themselves."""
    from tensegrity_engine.identify.boundary import moved
    doc = with_markers(prism_doc(), b3={"offset": [0.0, 0.0, 0.012]}, **{k: RIDERS[k] for k in ("b1", "t2")})
    next(nd for nd in doc["nodes"] if nd["name"] == "b3")["fixed"] = True
    m = build(doc)
    R, t = random_rotation(np.random.default_rng(7)), np.array([0.4, -0.1, 0.3])
    M = marker_positions(moved(m, R, t), m.positions @ R.T + t)
    assert np.abs(M - (marker_positions(m, m.positions) @ R.T + t)).max() < 1e-12


def test_static_cases_read_a_trajectory_of_a_marker_model_as_bar_ends(tmp_path):
    """Issue 35 (7a): an engine trajectory.npz holds the bar ends; static identification fits markers, so the
    case's positions are the model's markers of those bar ends (they were taken for markers: 12-50 mm off)."""
    from tensegrity_engine import Simulator
    from tensegrity_engine.identify.cases import read_positions
    m = build(with_markers(prism_doc(), **RIDERS))
    traj = Simulator(m).run(0.04, rate=50)
    traj.save(tmp_path)
    P, _ = read_positions(m, "trajectory.npz", tmp_path, "case")
    want = marker_positions(m, traj.nodes[:, :m.n_physical]).mean(axis=0)
    assert np.abs(P - want).max() < 1e-12
    P, _ = read_positions(m, "trajectory.csv", tmp_path, "case")     # the same in its CSV (written to 1e-9 m)
    assert np.abs(P - want).max() < 1e-8


def test_static_cases_read_tracks_markers_and_old_tracks_with_a_note(tmp_path):
    """Issue 35 (7b): tracks.npz holds the tracked markers under 'markers' and the bar ends under 'nodes';
    a file from before (markers under 'nodes') is read as before, with a note."""
    from tensegrity_engine.identify.cases import read_positions
    m = build(with_markers(prism_doc(), **RIDERS))
    X = np.asarray(m.positions)[None, :m.n_physical].repeat(3, axis=0)
    M = marker_positions(m, X)
    names = np.array(m.node_names[:m.n_physical])
    np.savez(tmp_path / "tracks.npz", t=np.arange(3.0), markers=M, nodes=X, node_names=names)
    np.savez(tmp_path / "old.npz", t=np.arange(3.0), nodes=M, node_names=names)
    assert np.abs(read_positions(m, "tracks.npz", tmp_path, "case")[0] - M[0]).max() < 1e-15
    with pytest.warns(UserWarning, match="no 'markers' array.*read as the tracked markers"):
        old = read_positions(m, "old.npz", tmp_path, "case")[0]
    assert np.abs(old - M[0]).max() < 1e-15
