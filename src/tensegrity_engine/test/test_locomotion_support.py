"""The support geometry under gravity (tensegrity_engine.locomotion.support) on any ground: an inclined
plane's face, support polygon and tip edges are the level case's rotated, the same under a rotated world
(gravity included), a box as floor gives the level floor's face; the centre-of-mass test of a tip; the
planner's CannotRoll when the ground is steeper than its friction holds. Geometry only: no dynamics."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from tensegrity_engine.generators import superball
from tensegrity_engine.generators.incline import incline_rotation, on_incline
from tensegrity_engine.locomotion import CannotRoll, GaitPlanner
from tensegrity_engine.locomotion.support import (beyond, centre_of_mass, face_of, ground_frame, ground_nodes,
                                                  ground_slope, horizontal_basis, start_support, support_edges)
from tensegrity_engine.model.build import build_model
from tensegrity_engine.model.spec import spec_from_dict

EXACT = 1e-9     # m: the same geometry computed in two frames differs by rounding only


def build(doc):
    return build_model(spec_from_dict(doc, "<test>"))


@pytest.fixture(scope="module")
def level():
    return build(superball(friction=0.8))


def edge_map(model, edges):
    """{frozenset of the pivot's node names: (outward normal (2,), midpoint (2,))}."""
    return {frozenset((model.node_names[a], model.node_names[b])): (n, mid) for a, b, n, mid in edges}


def test_level_ground_frame_is_the_world_xy(level):
    up, basis = ground_frame(level)
    assert np.array_equal(up, [0.0, 0.0, 1.0]) and np.array_equal(basis, np.eye(3)[:, :2])


def test_rotated_world_gives_the_level_support_polygon(level):
    """Robot, ground and gravity turned together: the same face, and in the turned horizontal basis the same
    support polygon, edge for edge."""
    R = Rotation.from_euler("xyz", [0.4, -0.3, 1.1])
    doc = superball(friction=0.8)
    doc["nodes"] = [dict(n, position=list(R.apply(n["position"]))) for n in doc["nodes"]]
    doc["gravity"] = list(R.apply(doc["gravity"]))
    doc["obstacles"] = [dict(o, normal=list(R.apply([0.0, 0.0, 1.0]))) for o in doc["obstacles"]]
    turned = build(doc)
    X0, X1 = level.positions, turned.positions
    assert face_of(turned, X1) == face_of(level, X0) and len(face_of(level, X0)) == 3
    up, basis = ground_frame(turned)
    assert np.allclose(up, R.apply([0.0, 0.0, 1.0]), atol=1e-12)
    assert np.allclose(basis @ basis.T, R.as_matrix() @ np.diag([1.0, 1.0, 0.0]) @ R.as_matrix().T, atol=1e-12)
    flat = edge_map(level, support_edges(X0, list(ground_nodes(level, X0))))
    same = edge_map(turned, support_edges(X1, list(ground_nodes(turned, X1)), R.as_matrix() @ np.eye(3)[:, :2]))
    assert flat.keys() == same.keys() and len(flat) == 3
    for k in flat:
        assert np.allclose(flat[k][0], same[k][0], atol=EXACT) and np.allclose(flat[k][1], same[k][1], atol=EXACT)


@pytest.mark.parametrize("slope, uphill", [(15.0, 0.0), (25.0, 2.0)])
def test_incline_support_polygon_is_the_level_one_tilted_and_projected(level, slope, uphill):
    """On a plane tilted by ``slope`` (gravity along -z): the same face and pivot edges; the polygon is the
    level one tilted and projected along gravity, each normal perpendicular to its projected edge, outward."""
    tilted = build(on_incline(superball(friction=0.8), math.radians(slope), uphill))
    R = incline_rotation(math.radians(slope), uphill)
    X0, X1 = level.positions, tilted.positions
    assert np.allclose(X1, R.apply(np.array(X0)), atol=1e-12)
    g = ground_nodes(tilted, X1)
    assert face_of(tilted, X1) == face_of(level, X0)
    assert ground_slope(tilted, X1, g) == pytest.approx((math.radians(slope), 0.8), abs=1e-9)
    flat = edge_map(level, support_edges(X0, list(ground_nodes(level, X0))))
    edges = support_edges(X1, list(g))
    assert edge_map(tilted, edges).keys() == flat.keys()
    inside = X1[g, :2].mean(axis=0)
    for a, b, normal, mid in edges:
        assert np.allclose(mid, 0.5 * (X1[a, :2] + X1[b, :2]), atol=EXACT)
        assert abs(normal @ (X1[a, :2] - X1[b, :2])) < EXACT and normal @ (mid - inside) > 0.0
    # the tip directions: the up-slope edge's normal points up the slope (within the face's own 60°)
    up_dir = np.array([math.cos(uphill), math.sin(uphill)])
    assert max(n @ up_dir for _, _, n, _ in edges) > 0.5


def test_box_floor_gives_the_level_face(level):
    """A box whose top is the plane z = 0 is the same ground: the same face and support polygon."""
    doc = superball(friction=0.8)
    doc["obstacles"] = [{"name": "floor", "type": "box", "centre": [0.0, 0.0, -0.5], "size": [10.0, 10.0, 1.0]}]
    boxed = build(doc)
    X = level.positions
    assert face_of(boxed, X) == face_of(level, X)
    assert edge_map(boxed, start_support(boxed, X)).keys() == edge_map(level, start_support(level, X)).keys()


def test_a_node_on_a_step_counts_as_ground(level):
    """Nodes within the tolerance of any obstacle are ground nodes: a box under a node lifted onto it."""
    doc = superball(friction=0.8)
    X = level.positions.copy()
    k = int(ground_nodes(level, X)[0])
    X[k, 2] += 0.05                                  # m: this node lies 5 cm higher, on a 5 cm step
    step = {"name": "step", "type": "box", "centre": [X[k, 0], X[k, 1], 0.025], "size": [0.2, 0.2, 0.05]}
    doc["obstacles"] = doc["obstacles"] + [step]
    stepped = build(doc)
    assert k not in ground_nodes(level, X)           # the level ground alone: lifted off
    assert set(ground_nodes(stepped, X)) == set(ground_nodes(level, level.positions))


def test_centre_of_mass_beyond_the_support(level):
    X = level.positions
    edges = start_support(level, X)
    assert not beyond(level, X, edges)
    a, b, normal, mid = edges[0]
    c = centre_of_mass(level, X)[:2]
    shift = (normal @ (mid - c) + 0.01) * normal      # m: the robot moved 1 cm past that edge
    assert beyond(level, X + np.r_[shift, 0.0], edges)


def test_horizontal_basis_is_orthonormal_and_level():
    for up in ([0.0, 0.0, 1.0], [0.3, -0.2, 0.9], [1.0, 0.0, 0.0]):
        B = horizontal_basis(up)
        assert np.allclose(B.T @ B, np.eye(2), atol=1e-12) and np.allclose(B.T @ up, 0.0, atol=1e-12)


def test_steeper_than_friction_holds_cannot_roll():
    """A slope with tan(slope) > μ: the planner says the robot slides, with the numbers, before planning."""
    mu = 0.5
    slope = math.atan(mu) + math.radians(4.0)
    model = build(on_incline(superball(friction=mu), slope))
    with pytest.raises(CannotRoll, match=r"slides: the ground under it slopes 30\.6°.*0\.59 > μ = 0\.50"):
        GaitPlanner(model).plan_step(model.positions, 0.0)


@pytest.mark.slow
def test_superball_climbs_a_15_degree_slope():
    """Heading up a 15° plane at μ 0.8 (settled first): at least 3 faces and 0.5 m up the slope, the bars never
    crossing (measured 2026-11-29: 6 faces, 1.17 m, 22 mm; docs/locomotion.md "Slopes and rough ground")."""
    from tensegrity_engine.generators import verify_template
    from tensegrity_engine.locomotion import RollingController
    from tensegrity_engine.locomotion.closed_loop import at_rest, roll
    model, _ = verify_template(on_incline(superball(friction=0.8), math.radians(15.0)), min_tension=100.0)
    X = at_rest(model)
    c = RollingController(model, horizon=1)
    c.set_heading(0.0)                               # up the slope: it rises toward +x
    r = roll(c, X, duration=150.0, faces=4)
    assert r.faces_changed >= 3, r.status
    assert r.displacement[0] >= 0.5, (r.displacement, r.status)
    assert r.min_clearance > 0.0
