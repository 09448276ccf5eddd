"""The simulator's world outputs without a running node: the body frame fit, obstacle geometry in RViz,
contact-force arrows, odometry messages."""
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from std_msgs.msg import Header
from visualization_msgs.msg import Marker

from tensegrity_engine import build_model, load_model, spec_from_dict
from tensegrity_engine.generators import icosahedron
from tensegrity_ros_common.body_frame import BodyFrame, kabsch, lumped_masses
from tensegrity_ros_common.odometry import odometry_message
from tensegrity_sim.world_markers import (PLANE_THICKNESS, contact_arrays, contact_markers, obstacle_geometry,
                                          obstacle_markers)
from tensegrity_sim.world_publisher import odometry_wanted

OBSTACLES = [{"name": "ground", "type": "plane"},
             {"name": "ramp", "type": "plane", "normal": [0, -0.6, 0.8], "point": [0, 2, 0]},
             {"name": "step", "type": "box", "centre": [0.5, 0.1, 0.05], "size": [0.2, 1.0, 0.1],
              "rpy": [0.1, -0.2, 0.3]}]


def rolling_robot():
    """The icosahedron template 0.35 m above a ground, with a ramp and a box: no fixed node."""
    doc = icosahedron()
    for n in doc["nodes"]:
        n["position"][2] += 0.35
    doc["obstacles"] = OBSTACLES
    return build_model(spec_from_dict(doc, source="test"))


def test_kabsch_and_the_body_frame_follow_a_rigid_motion_exactly():
    m = rolling_robot()
    X0 = m.positions
    body = BodyFrame(m, X0)
    R = Rotation.from_rotvec([0.3, -1.1, 2.0]).as_matrix()
    t = np.array([1.0, -2.0, 0.5])
    c0 = body.centroid(X0)
    X = (X0 - c0) @ R.T + c0 + t
    v, w = np.array([0.2, 0.0, -0.1]), np.array([0.5, 1.5, -3.0])
    c = c0 + t
    V = v + np.cross(w, X - c)
    s = body.fit(X, V)
    assert np.allclose(s.position, c, atol=1e-12)
    assert np.allclose(s.rotation, R, atol=1e-12)
    assert np.allclose(s.velocity, v, atol=1e-12) and np.allclose(s.angular_velocity, w, atol=1e-12)
    assert s.rms_residual < 1e-12
    assert np.allclose(kabsch(X0 - c0, (X0 - c0) @ R.T, np.ones(len(X0))), R, atol=1e-12)
    assert np.isclose(lumped_masses(m).sum(), m.total_mass())


def test_the_body_frame_of_a_deformed_robot_is_the_best_rigid_fit():
    m = rolling_robot()
    body = BodyFrame(m, m.positions)
    rng = np.random.default_rng(1)
    X = m.positions + 0.01 * rng.standard_normal(m.positions.shape)
    s = body.fit(X, np.zeros_like(X))
    assert 0.003 < s.rms_residual < 0.02                   # 1 cm of noise per coordinate, near 17 mm per node
    assert np.allclose(s.rotation @ s.rotation.T, np.eye(3), atol=1e-12) and np.linalg.det(s.rotation) > 0


def test_obstacle_markers_have_the_obstacles_geometry():
    m = rolling_robot()
    h = Header(frame_id="world")
    around = np.array([0.3, 0.2, 0.35])
    arr = obstacle_markers(m, h, around, plane_size=4.0)
    cubes = [mk for mk in arr.markers if mk.ns == "obstacles"]
    assert [mk.text for mk in cubes] == ["ground", "ramp", "step"] and all(mk.type == Marker.CUBE for mk in cubes)
    for mk, spec in zip(cubes, m.obstacles):
        q = mk.pose.orientation
        R = Rotation.from_quat([q.x, q.y, q.z, q.w]).as_matrix()
        p = np.array([mk.pose.position.x, mk.pose.position.y, mk.pose.position.z])
        size = np.array([mk.scale.x, mk.scale.y, mk.scale.z])
        if spec.type == "plane":
            n = np.asarray(spec.normal)
            top = p + 0.5 * PLANE_THICKNESS * R[:, 2]
            assert np.allclose(R[:, 2], n) and np.isclose(n @ (top - np.asarray(spec.point)), 0.0, atol=1e-12)
            assert np.allclose(size, [4.0, 4.0, PLANE_THICKNESS])
            assert np.allclose(np.cross(top - around, n), 0.0, atol=1e-12)     # below the robot's centroid
        else:
            assert np.allclose(p, spec.centre) and np.allclose(size, spec.size)
            assert np.allclose(R, Rotation.from_euler("xyz", spec.rpy).as_matrix(), atol=1e-12)
    assert [mk.text for mk in arr.markers if mk.ns == "obstacle_names"] == ["ground", "ramp", "step"]
    c, R, size = obstacle_geometry(m.obstacles[0], np.zeros(3), 10.0)
    assert np.allclose(c, [0, 0, -PLANE_THICKNESS / 2])


def test_a_height_field_is_drawn_as_its_grid_of_triangles():
    """Every drawn vertex lies on the field (the grid points themselves); a 3 x 2 grid is 2 cells, 4 triangles;
    a 1001 x 1001 grid is drawn with every 5th line (200 cells a side)."""
    from tensegrity_engine.model.world import ObstacleSpec
    from tensegrity_sim.world_markers import MAX_FIELD_CELLS, heightfield_markers
    H = ((0.0, 0.1, 0.2), (0.3, 0.4, 0.5))
    spec = ObstacleSpec("hf", "heightfield", origin=(1.0, 2.0, 0.5), cell=(0.1, 0.2), heights=H)
    field, name = heightfield_markers(spec, Header(frame_id="world"), 3)
    assert field.type == Marker.TRIANGLE_LIST and field.id == 3 and name.text == "hf" and len(field.points) == 12
    P = np.array([[p.x, p.y, p.z] for p in field.points])
    i, j = np.rint((P[:, 0] - 1.0) / 0.1).astype(int), np.rint((P[:, 1] - 2.0) / 0.2).astype(int)
    assert np.allclose(P[:, 2], 0.5 + np.asarray(H)[j, i]) and set(i) == {0, 1, 2} and set(j) == {0, 1}
    big = ObstacleSpec("big", "heightfield", cell=(0.01, 0.01), heights=((0.0,) * 1001,) * 1001)
    assert len(heightfield_markers(big, Header(frame_id="world"), 0)[0].points) == 6 * MAX_FIELD_CELLS ** 2


def test_contact_force_arrows_start_on_the_obstacle_and_point_along_the_force():
    point = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    force = np.array([[0.0, 0.0, 5.0], [1.0, 0.0, 1000.0]])
    arr = contact_markers(point, force, ["n1/ground", "n2/ground"], Header(frame_id="world"), 0.01)
    assert arr.markers[0].action == Marker.DELETEALL
    arrows = arr.markers[1:]
    assert [a.text for a in arrows] == ["n1/ground", "n2/ground"] and all(a.type == Marker.ARROW for a in arrows)
    tip = arrows[0].points[1]
    assert (tip.x, tip.y, tip.z) == pytest.approx((0.0, 0.0, 0.05))
    p0, p1 = (np.array([p.x, p.y, p.z]) for p in arrows[1].points)
    assert np.isclose(np.linalg.norm(p1 - p0), 2.0)              # a hard impact is drawn 2 m long at most


def test_contact_arrays_of_the_engines_contacts():
    c = SimpleNamespace(point=np.zeros((2, 3)), normal=np.tile([0, 0, 1.0], (2, 1)), force=np.ones((2, 3)),
                        obstacle=np.zeros(2, int), names=np.array(["n1/ground", "n4/ground"]))
    point, force, names = contact_arrays(SimpleNamespace(contacts=lambda: c))
    assert point.shape == force.shape == (2, 3) and names == ["n1/ground", "n4/ground"]


def test_odometry_only_for_robots_without_fixed_nodes_unless_forced():
    assert odometry_wanted("auto", rolling_robot())
    manipulator = load_model("stacked_manipulator")
    assert not odometry_wanted("auto", manipulator) and odometry_wanted("always", manipulator)
    assert not odometry_wanted("never", rolling_robot())
    with pytest.raises(ValueError, match="'odometry' must be one of"):
        odometry_wanted("yes", manipulator)


def test_odometry_twist_is_in_the_body_frame():
    m = rolling_robot()
    body = BodyFrame(m, m.positions)
    R = Rotation.from_euler("z", 90, degrees=True).as_matrix()
    c0 = body.centroid(m.positions)
    X = (m.positions - c0) @ R.T + c0
    V = np.tile([1.0, 0.0, 0.0], (len(X), 1))             # moving along world x = body -y
    msg = odometry_message(body.fit(X, V), Header(frame_id="odom"), "base_link")
    assert msg.child_frame_id == "base_link" and msg.header.frame_id == "odom"
    t = msg.twist.twist.linear
    assert (t.x, t.y, t.z) == pytest.approx((0.0, -1.0, 0.0), abs=1e-12)
    q = msg.pose.pose.orientation
    assert (q.x, q.y, q.z, q.w) == pytest.approx((0.0, 0.0, np.sqrt(0.5), np.sqrt(0.5)), abs=1e-12)
