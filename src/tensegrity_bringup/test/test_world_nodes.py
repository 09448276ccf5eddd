"""The robot's world through real rclpy and DDS: the simulator's latched obstacle markers and the odometry
of a mobile robot, and the collision monitor naming a bar pushed into an obstacle."""
import json

import numpy as np
import pytest
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseArray
from nav_msgs.msg import Odometry
from std_msgs.msg import Bool, Float64MultiArray, Header, String
from visualization_msgs.msg import Marker, MarkerArray
from scipy.spatial.transform import Rotation

from ros_harness import ros  # noqa: F401  (fixture)
from tensegrity_engine import build_model, spec_from_dict
from tensegrity_engine.collision.obstacles import bar_contacts, model_obstacles
from tensegrity_engine.generators import icosahedron
from tensegrity_monitor.collision_monitor_node import CollisionMonitor
from tensegrity_ros_common import diagnostics as diag
from tensegrity_ros_common import topics
from tensegrity_ros_common.conversions import positions_to_pose_array
from tensegrity_ros_common.body_frame import BodyFrame
from tensegrity_sim.simulator_node import TensegritySimulator

OBSTACLES = [{"name": "ground", "type": "plane"},
             {"name": "step", "type": "box", "centre": [0.8, 0.0, 0.05], "size": [0.2, 1.0, 0.1],
              "rpy": [0.0, 0.0, 0.3]}]


@pytest.fixture
def robot_file(tmp_path):
    """The icosahedron template resting 0.3 m up (its lowest nodes at z = 0.0), a ground and a box: no fixed
    node. Its model and the file's path."""
    doc = icosahedron()
    for n in doc["nodes"]:
        n["position"][2] += 0.3
    doc["obstacles"] = OBSTACLES
    path = tmp_path / "rolling.yaml"
    path.write_text(yaml.safe_dump(doc))
    model = build_model(spec_from_dict(doc, source=str(path)))
    # the monitor's compiled kernel, loaded (or after an engine change, compiled) here, not within the
    # tests' time limits (a node started by tensegrity-bringup does this before it starts)
    bar_contacts(model, model.positions, model_obstacles(model))
    return model, str(path)


class FakeTF:
    """Stands in for tf2_ros' broadcaster (not in the PyPI wheels): keeps what was sent."""

    def __init__(self):
        self.sent = []

    def sendTransform(self, transforms):
        self.sent.extend(transforms)


def test_obstacle_markers_are_latched_with_the_obstacles_geometry(ros, robot_file):
    model, path = robot_file
    sim = ros.node(TensegritySimulator, "-p", f"model:={path}", "-p", "paused:=true",
                   "-p", "start_from_equilibrium:=false", "-p", "obstacle_plane_size:=3.0")
    ros.spin_for(0.5)                                     # published once at start-up, before anyone listens
    got = []
    late = ros.plain("late_joiner")
    late.create_subscription(MarkerArray, topics.OBSTACLE_MARKERS, got.append, topics.latched_qos())
    ros.spin_until(lambda: got, 10, "latched obstacle markers")
    cubes = {m.text: m for m in got[-1].markers if m.ns == "obstacles"}
    assert set(cubes) == {"ground", "step"} and all(m.type == Marker.CUBE for m in cubes.values())
    g, s = cubes["ground"], cubes["step"]
    assert (g.scale.x, g.scale.y) == (3.0, 3.0)
    assert g.pose.position.z + 0.5 * g.scale.z == pytest.approx(0.0, abs=1e-12)    # top face on z = 0
    assert (s.pose.position.x, s.pose.position.y, s.pose.position.z) == pytest.approx((0.8, 0.0, 0.05))
    assert (s.scale.x, s.scale.y, s.scale.z) == pytest.approx((0.2, 1.0, 0.1))
    q = s.pose.orientation
    assert Rotation.from_quat([q.x, q.y, q.z, q.w]).as_euler("xyz") == pytest.approx((0.0, 0.0, 0.3), abs=1e-12)
    assert all(m.header.frame_id == "world" for m in got[-1].markers)
    assert sim.world.pub_contacts is not None


def test_odometry_of_a_robot_moved_rigidly(ros, robot_file):
    model, path = robot_file
    sim = ros.node(TensegritySimulator, "-p", f"model:={path}", "-p", "paused:=true",
                   "-p", "start_from_equilibrium:=false", "-p", "tf_prefix:=r1/")
    sim.world.tf = tf = FakeTF()
    odom = []
    lis = ros.plain("listener")
    lis.create_subscription(Odometry, topics.ODOMETRY, odom.append, topics.state_qos())
    ros.spin_until(lambda: odom, 10, "odometry")
    first = odom[-1]
    c0 = BodyFrame(model, model.positions).centroid(model.positions)
    p = first.pose.pose.position
    assert (p.x, p.y, p.z) == pytest.approx(tuple(c0), abs=1e-12)
    assert first.pose.pose.orientation.w == pytest.approx(1.0)
    assert (first.header.frame_id, first.child_frame_id) == ("r1/odom", "r1/base_link")
    # the robot reset to a pose rolled 120 degrees about a tilted axis and moved 1 m: odometry follows
    R = Rotation.from_rotvec(2.0944 * np.array([1.0, 1.0, 0.0]) / np.sqrt(2)).as_matrix()
    t = np.array([1.0, -0.5, 0.0])
    sim.sim.reset((model.positions - c0) @ R.T + c0 + t)
    odom.clear()
    ros.spin_until(lambda: odom and np.isclose(odom[-1].pose.pose.position.x, c0[0] + 1.0), 10, "moved odometry")
    pose = odom[-1].pose.pose
    assert (pose.position.x, pose.position.y, pose.position.z) == pytest.approx(tuple(c0 + t), abs=1e-9)
    q = pose.orientation
    assert np.allclose(Rotation.from_quat([q.x, q.y, q.z, q.w]).as_matrix(), R, atol=1e-9)
    tw = odom[-1].twist.twist
    assert np.allclose([tw.linear.x, tw.linear.y, tw.linear.z, tw.angular.x, tw.angular.y, tw.angular.z], 0.0)
    last = tf.sent[-1]
    assert (last.header.frame_id, last.child_frame_id) == ("r1/odom", "r1/base_link")
    assert last.transform.translation.x == pytest.approx(c0[0] + 1.0, abs=1e-9)
    # rolling: the twist in the body frame
    X = sim.sim.positions
    v, w = np.array([0.3, 0.0, 0.0]), np.array([0.0, 2.0, 0.0])
    sim.sim.reset(X, v + np.cross(w, X - (c0 + t)))
    odom.clear()
    ros.spin_until(lambda: odom and abs(odom[-1].twist.twist.linear.x) + abs(odom[-1].twist.twist.linear.y) > 0.1,
                   10, "moving odometry")
    tw = odom[-1].twist.twist
    assert [tw.linear.x, tw.linear.y, tw.linear.z] == pytest.approx(R.T @ v, abs=1e-9)
    assert [tw.angular.x, tw.angular.y, tw.angular.z] == pytest.approx(R.T @ w, abs=1e-9)


def test_a_static_identity_joins_the_fixed_frame_and_odom(ros, robot_file):
    from tensegrity_sim.world_publisher import WorldPublisher
    model, _ = robot_file
    node = ros.plain("world_host")
    kw = dict(start_positions=model.positions, odometry="auto", body_frame="base_link", plane_size=10.0,
              force_scale=0.01)
    static = FakeTF()
    WorldPublisher(node, model, "world", odom_frame="odom", tf=FakeTF(), static_tf=static, **kw)
    (tr,) = static.sent
    assert (tr.header.frame_id, tr.child_frame_id) == ("world", "odom") and tr.transform.rotation.w == 1.0
    static = FakeTF()
    WorldPublisher(node, model, "world", odom_frame="world", tf=FakeTF(), static_tf=static, **kw)
    assert static.sent == []                               # odom is the fixed frame itself: nothing to join


def test_odometry_only_for_a_robot_without_fixed_nodes_unless_set(ros):
    sim = ros.node(TensegritySimulator, "-p", "model:=stacked_manipulator", "-p", "paused:=true")
    assert sim.world.pub_odom is None and sim.world.pub_obstacles is None          # fixed base, no world
    forced = ros.node(TensegritySimulator, "-r", "__ns:=/forced", "-p", "model:=stacked_manipulator",
                      "-p", "paused:=true", "-p", "odometry:=always")
    assert forced.world.pub_odom is not None
    off = ros.node(TensegritySimulator, "-r", "__ns:=/off", "-p", "model:=prism3", "-p", "odometry:=never")
    assert off.world.pub_odom is None
    with pytest.raises(ValueError, match="'odometry' must be one of"):
        ros.node(TensegritySimulator, "-r", "__ns:=/bad", "-p", "model:=prism3", "-p", "odometry:=maybe")


def _bar_pushed_in(model, depth):
    """Node positions with the whole robot lowered so that its lowest bar surface is ``depth`` [m] under the
    ground (the lowest bar: its name)."""
    X = model.positions.copy()
    r = model.bar_radius
    low = np.minimum(X[model.bars[:, 0], 2], X[model.bars[:, 1], 2]) - r
    k = int(np.argmin(low))
    X[:, 2] -= low[k] + depth
    return X[:model.n_physical], model.bar_names[k]


def test_the_monitor_names_a_bar_pushed_into_an_obstacle(ros, robot_file):
    model, path = robot_file
    ros.node(CollisionMonitor, "-p", f"model:={path}", "-p", "stale_timeout:=5.0")
    probe = ros.plain("probe")
    got = {"diag": [], "stop": [], "clear": [], "pairs": [], "markers": []}
    probe.create_subscription(DiagnosticArray, topics.DIAGNOSTICS,
                              lambda m: got["diag"].extend(s for s in m.status if s.name.endswith(": obstacles")), 10)
    probe.create_subscription(Bool, topics.SAFETY_STOP, lambda m: got["stop"].append(m.data), topics.latched_qos())
    probe.create_subscription(Float64MultiArray, topics.OBSTACLE_CLEARANCES, lambda m: got["clear"].append(m.data), 10)
    probe.create_subscription(String, topics.OBSTACLE_PAIRS, lambda m: got["pairs"].append(m.data),
                              topics.latched_qos())
    probe.create_subscription(MarkerArray, topics.COLLISION_MARKERS, lambda m: got["markers"].append(m), 10)
    pub = probe.create_publisher(PoseArray, topics.NODE_POSITIONS, topics.sensor_qos())
    state = {"X": _bar_pushed_in(model, -0.05)[0]}        # 5 cm above the ground first: all clear
    probe.create_timer(0.02, lambda: pub.publish(positions_to_pose_array(state["X"], Header(frame_id="world"))))
    ros.spin_until(lambda: got["stop"] and got["stop"][-1] is False and got["diag"]
                   and diag.level_of(got["diag"][-1]) == diag.OK, 10, "all clear")     # (WARN until the first check)
    assert got["diag"][-1].message.startswith("no bar-obstacle clearance below -0.002 m; closest bar ")
    # 5 mm in: WARN naming the bar and the obstacle
    state["X"], bar = _bar_pushed_in(model, 0.005)
    ros.spin_until(lambda: diag.level_of(got["diag"][-1]) == diag.WARN, 10, "obstacle warning")
    assert f"bar {bar} vs obstacle ground: clearance -5.0 mm" in got["diag"][-1].message
    ros.spin_until(lambda: got["pairs"], 10, "latched obstacle pairs")
    pairs = json.loads(got["pairs"][-1])
    assert len(pairs) == len(model.bar_names) * 2 and [bar, "ground"] in pairs
    k = pairs.index([bar, "ground"])
    ros.spin_until(lambda: got["clear"] and np.isclose(got["clear"][-1][k], -0.005), 5, "obstacle clearances")
    ros.spin_until(lambda: got["markers"] and any(m.ns == "obstacle_clearance" for m in got["markers"][-1].markers),
                   5, "obstacle markers")
    assert got["stop"][-1] is False                        # a warning, not a stop
    # 3 cm in: ERROR and the safety stop, naming the bar
    state["X"], bar = _bar_pushed_in(model, 0.03)
    ros.spin_until(lambda: got["stop"][-1] is True, 10, "safety stop")
    ros.spin_until(lambda: diag.level_of(got["diag"][-1]) == diag.ERROR, 10, "obstacle error")
    assert f"bar {bar} vs obstacle ground: clearance -30.0 mm" in got["diag"][-1].message


def test_the_monitor_takes_the_obstacles_from_the_simulators_description(ros, robot_file):
    model, path = robot_file
    ros.node(TensegritySimulator, "-p", f"model:={path}", "-p", "paused:=true", "-p", "start_from_equilibrium:=false")
    ros.node(CollisionMonitor, "-r", "__node:=monitor")
    pairs = []
    probe = ros.plain("probe")
    probe.create_subscription(String, topics.OBSTACLE_PAIRS, lambda m: pairs.append(m.data), topics.latched_qos())
    ros.spin_until(lambda: pairs, 10, "obstacle pairs from the description")
    assert json.loads(pairs[-1])[:2] == [[model.bar_names[0], "ground"], [model.bar_names[0], "step"]]


def test_contact_forces_arrive_as_arrows(ros, robot_file):
    """Through DDS, contacts stood in for (a chosen force, then none: the arrows are removed once)."""
    from types import SimpleNamespace
    model, path = robot_file
    sim = ros.node(TensegritySimulator, "-p", f"model:={path}", "-p", "paused:=true",
                   "-p", "start_from_equilibrium:=false", "-p", "contact_force_scale:=0.02")
    contacts = SimpleNamespace(point=np.array([[0.1, 0.2, 0.0]]), normal=np.array([[0.0, 0.0, 1.0]]),
                               force=np.array([[1.0, 0.0, 5.0]]), obstacle=np.array([0]), names=np.array(["n3/ground"]))
    sim.sim.contacts = lambda: contacts
    got = []
    probe = ros.plain("probe")
    probe.create_subscription(MarkerArray, topics.CONTACT_MARKERS, got.append, topics.state_qos())
    ros.spin_until(lambda: got, 10, "contact arrows")
    first, arrow = got[-1].markers
    assert first.action == Marker.DELETEALL and arrow.type == Marker.ARROW and arrow.text == "n3/ground"
    tip = arrow.points[1]
    assert (tip.x, tip.y, tip.z) == pytest.approx((0.12, 0.2, 0.1))
    contacts.point, contacts.force, contacts.names = np.zeros((0, 3)), np.zeros((0, 3)), np.array([], str)
    ros.spin_until(lambda: len(got[-1].markers) == 1, 10, "arrows removed")
    n = len(got)
    ros.spin_for(0.3)
    assert len(got) == n                                   # nothing more while there is no contact


def six_bar_on_the_ground(tmp_path, lift: float) -> tuple:
    """The prestressed six-bar of `tensegrity new icosahedron` under gravity, its lowest node sphere (bar
    radius 6 mm) ``lift`` [m] above a ground: its model and file."""
    from tensegrity_engine.generators import verify_template
    from tensegrity_engine.model.write import spec_to_dict
    doc = json.loads(json.dumps(spec_to_dict(verify_template(icosahedron())[0])))     # plain lists and dicts
    low = min(n["position"][2] for n in doc["nodes"])
    for n in doc["nodes"]:
        n["position"][2] += lift + 0.006 - low
    doc["gravity"] = [0.0, 0.0, -9.81]
    doc["obstacles"] = [{"name": "ground", "type": "plane", "friction": 0.8}]
    path = tmp_path / "six_bar.yaml"
    path.write_text(yaml.safe_dump(doc))
    return build_model(spec_from_dict(doc, source=str(path))), str(path)


def test_a_mobile_robot_starts_standing_on_the_ground_or_in_place_when_it_has_none(ros, tmp_path):
    """With a ground, the start state stands on it (nodes as spheres of the bar radius, 6 mm, sunk by the
    contact's static deflection, < 1 mm); without one, a free robot under gravity has no equilibrium and
    starts from its prestress equilibrium where the file puts it instead of after a relaxation's fall."""
    model, path = six_bar_on_the_ground(tmp_path, 0.01)
    sim = ros.node(TensegritySimulator, "-p", f"model:={path}", "-p", "paused:=true")
    assert 0.005 < sim.start_positions[:, 2].min() < 0.006
    doc = yaml.safe_load(open(path).read())
    del doc["obstacles"]
    (tmp_path / "falling.yaml").write_text(yaml.safe_dump(doc))
    falling = ros.node(TensegritySimulator, "-r", "__ns:=/falling", "-p", f"model:={tmp_path / 'falling.yaml'}",
                       "-p", "paused:=true")
    assert np.abs(falling.start_positions - model.positions).max() < 1e-3


def test_the_engines_contact_forces_of_a_robot_resting_on_the_ground(ros, tmp_path):
    """The six-bar dropped 2 cm onto the ground and left to settle (offline, paused node): one arrow per
    contact of Simulator.contacts(), from the ground up, carrying the robot's weight (the template stands on
    an edge, n9-n11, by symmetry)."""
    _, path = six_bar_on_the_ground(tmp_path, 0.02)
    sim = ros.node(TensegritySimulator, "-p", f"model:={path}", "-p", "paused:=true", "-p", "marker_rate:=20.0")
    sim.sim.advance(3.0)
    truth = sim.sim.contacts()
    got = []
    probe = ros.plain("probe")
    probe.create_subscription(MarkerArray, topics.CONTACT_MARKERS, got.append, topics.state_qos())
    ros.spin_until(lambda: got, 10, "contact arrows")
    arrows = [m for m in got[-1].markers if m.action == Marker.ADD]
    assert len(arrows) == len(truth) >= 2 and all(a.type == Marker.ARROW for a in arrows)
    assert [a.text for a in arrows] == list(truth.names) and all(n.endswith("/ground") for n in truth.names)
    tails = np.array([[a.points[0].x, a.points[0].y, a.points[0].z] for a in arrows])
    tips = np.array([[a.points[1].x, a.points[1].y, a.points[1].z] for a in arrows])
    assert np.allclose(tails, truth.point) and np.allclose(tips, truth.point + 0.01 * truth.force)
    assert np.allclose(tails[:, 2], 0.0, atol=1e-9) and np.all(tips[:, 2] > 0)
    weight = 9.81 * sim.model.total_mass()
    assert truth.total_force[2] == pytest.approx(weight, rel=0.05)     # at rest 3 s after a 2 cm drop
    diags = []
    probe.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, lambda m: diags.extend(
        s for s in m.status if s.name.endswith(": physics")), 10)
    ros.spin_until(lambda: diags, 10, "diagnostics")
    values = {kv.key: kv.value for kv in diags[-1].values}
    assert int(values["contacts"]) == len(truth)
    assert float(values["contact_force_n"]) == pytest.approx(np.linalg.norm(truth.total_force), rel=1e-5)
    assert float(values["body_speed_m_s"]) < 1e-3 and float(values["body_fit_rms_m"]) < 1e-3
