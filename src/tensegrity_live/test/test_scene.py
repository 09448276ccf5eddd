"""The live view's scene messages, decoded with the schemas they advertise (protobuf), against the models."""
import numpy as np
import pytest
from foxglove.messages import FrameTransforms, SceneUpdate
from types import SimpleNamespace

from tensegrity_engine import build_model, load_model, spec_from_dict
from tensegrity_engine.frames import model_frames
from tensegrity_engine.model.write import spec_to_dict
from tensegrity_engine.generators.mobile import superball, three_bar_prism
from tensegrity_live import scene

from foxglove_decoding import decode

EXACT = 1e-9      # m: the cylinder's pose and height are doubles computed from the node positions


def rotate(q, v):
    """Vector v (3,) rotated by the unit quaternion q = (x, y, z, w)."""
    u, w = np.array(q[:3]), q[3]
    return v + 2.0 * np.cross(u, np.cross(u, v) + w * v)


def bar_ends(cylinder):
    p, o = cylinder.pose.position, cylinder.pose.orientation
    mid, q = np.array([p.x, p.y, p.z]), (o.x, o.y, o.z, o.w)
    half = rotate(q, np.array([0.0, 0.0, 0.5 * cylinder.size.z]))
    return mid - half, mid + half


MODELS = {
    "prism3": lambda: load_model("prism3"),
    "stacked_manipulator": lambda: load_model("stacked_manipulator"),
    "superball": lambda: build_model(spec_from_dict(superball())),
    "three_bar_prism": lambda: build_model(spec_from_dict(three_bar_prism())),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_bar_cylinders_end_at_the_node_positions(name):
    m = MODELS[name]()
    rng = np.random.default_rng(1)
    Xp = m.positions[:m.n_physical] + rng.normal(0.0, 0.01, (m.n_physical, 3))   # bars need not keep their length
    rs = scene.RobotScene(m, "world")
    tensions = rng.uniform(-5.0, 50.0, len(m.string_names))
    msg = decode(rs.update(Xp, tensions, scene.stamp(1.5), 60.0))
    (entity,) = msg.entities
    assert entity.id == "robot" and entity.frame_id == "world"
    assert len(entity.cylinders) == len(m.bar_names)
    X = m.from_physical(Xp)
    for k, (cyl, (i, j)) in enumerate(zip(entity.cylinders, m.bars)):
        a, b = bar_ends(cyl)
        assert np.allclose(a, X[i], atol=EXACT, rtol=0) and np.allclose(b, X[j], atol=EXACT, rtol=0)
        diameter = 2 * m.bar_radius[k] if m.bar_radius[k] > 0 else scene.DEFAULT_BAR_DIAMETER
        assert cyl.size.x == pytest.approx(diameter) and cyl.size.y == pytest.approx(diameter)
    meta = {kv.key: kv.value for kv in entity.metadata}
    assert meta["bars"].split(",") == list(m.bar_names)
    assert len(entity.spheres) == m.n_physical
    assert len(entity.lines[0].points) == 2 * len(m.segments) if len(m.segments) else not entity.lines
    assert entity.texts[0].text == m.name


def test_tension_colours_run_blue_to_red_and_slack_is_dimmed():
    t = np.linspace(0.001, 120.0, 500)
    rgba = scene.tension_colours(t, 100.0)
    assert np.all(np.diff(rgba[:, 0]) >= 0) and np.all(np.diff(rgba[:, 2]) <= 0)      # red up, blue down
    assert np.allclose(rgba[0, :3], [0, 0, 1], atol=1e-4) and np.allclose(rgba[-1, :3], [1, 0, 0])
    slack = scene.tension_colours([0.0, -3.0, np.nan, 10.0], 100.0)
    assert np.allclose(slack[:3], scene.SLACK_COLOUR) and slack[3, 3] == 1.0
    assert scene.SLACK_COLOUR[3] == 0.3


def test_slack_strings_are_drawn_dimmed_in_the_scene():
    m = load_model("prism3")
    rs = scene.RobotScene(m)
    tensions = np.full(len(m.string_names), 20.0)
    tensions[0] = 0.0
    line = decode(rs.update(m.positions[:m.n_physical], tensions, scene.stamp(0), 40.0)).entities[0].lines[0]
    alphas = np.array([c.a for c in line.colors]).reshape(-1, 2)[:, 0]
    slack = m.segment_string == 0
    assert np.allclose(alphas[slack], 0.3) and np.allclose(alphas[~slack], 1.0)


def test_a_model_without_strings_plates_or_obstacles():
    doc = spec_to_dict(load_model("prism3"))
    for key in ("strings", "actuators", "frames", "groups", "obstacles"):
        doc.pop(key, None)
    m = build_model(spec_from_dict(doc))
    assert not len(m.string_names) and not len(m.frame_names) and not m.obstacles
    rs = scene.RobotScene(m)
    entity = decode(rs.update(m.positions[:m.n_physical], None, scene.stamp(0), 1.0)).entities[0]
    assert len(entity.cylinders) == len(m.bar_names) and not entity.lines and not entity.triangles
    assert not decode(rs.transforms(m.positions[:m.n_physical], scene.stamp(0))).transforms
    assert not decode(scene.world_update(m, "world", scene.stamp(0))).entities[0].cubes


def test_unknown_nodes_leave_out_what_they_touch():
    m = load_model("prism3")
    Xp = m.positions[:m.n_physical].copy()
    Xp[0] = np.nan
    entity = decode(scene.RobotScene(m).update(Xp, None, scene.stamp(0), 1.0)).entities[0]
    touching = np.any(m.physical_index[m.bars] == 0, axis=1)
    assert len(entity.cylinders) == np.sum(~touching)
    assert len(entity.spheres) == m.n_physical - 1


def test_plate_frames_are_the_engines_frames_with_the_simulators_names():
    m = load_model("stacked_manipulator")
    Xp = m.positions[:m.n_physical]
    msg = decode(scene.RobotScene(m, "world", "robot1/").transforms(Xp, scene.stamp(2.0)))
    frames = model_frames(m, m.from_physical(Xp))
    assert [t.child_frame_id for t in msg.transforms] == ["robot1/" + f.lower() for f in m.frame_names]
    for t, C in zip(msg.transforms, frames.values()):
        assert t.parent_frame_id == "world" and t.timestamp.seconds == 2
        tr, q = t.translation, t.rotation
        assert np.allclose([tr.x, tr.y, tr.z], C[:3, 3], atol=EXACT)
        R = np.column_stack([rotate((q.x, q.y, q.z, q.w), e) for e in np.eye(3)])
        assert np.allclose(R, C[:3, :3], atol=1e-9)


def test_the_world_shows_every_obstacle():
    m = build_model(spec_from_dict(superball()))
    assert len(m.obstacles)
    entity = decode(scene.world_update(m, "world", scene.stamp(0), around=(0.3, 0.2, 1.0))).entities[0]
    assert len(entity.cubes) + len(entity.triangles) == len(m.obstacles)
    assert [t.text for t in entity.texts] == [o.name for o in m.obstacles]


def test_a_marker_array_converts_arrows_lines_spheres_and_deletions():
    v = SimpleNamespace
    header = v(frame_id="world")
    white = v(r=1.0, g=1.0, b=1.0, a=1.0)
    arrow = v(header=header, ns="contact_forces", id=0, type=scene.ARROW, action=0, points=[v(x=0, y=0, z=0),
              v(x=0, y=0, z=2)], scale=v(x=0.006, y=0.014, z=0.02), color=white, colors=[], text="n1/ground",
              pose=v(position=v(x=0, y=0, z=0), orientation=v(x=0, y=0, z=0, w=1)))
    lines = v(**arrow.__dict__ | {"ns": "clearance", "type": scene.LINE_LIST, "points": [v(x=0, y=0, z=0)] * 4})
    dots = v(**arrow.__dict__ | {"ns": "closest_points", "type": scene.SPHERE_LIST, "points": [v(x=1, y=2, z=3)] * 3})
    gone = v(**arrow.__dict__ | {"ns": "old", "action": scene.DELETE})
    msg = decode(scene.markers_update(v(markers=[arrow, lines, dots, gone]), scene.stamp(0)))
    ids = [e.id for e in msg.entities]
    assert ids == ["contact_forces/0", "clearance/0", "closest_points/0"]
    a = msg.entities[0].arrows[0]
    assert a.shaft_length + a.head_length == pytest.approx(2.0)
    assert rotate((a.pose.orientation.x, a.pose.orientation.y, a.pose.orientation.z, a.pose.orientation.w),
                  np.array([1.0, 0, 0])) == pytest.approx([0, 0, 1])
    assert len(msg.entities[1].lines[0].points) == 4 and len(msg.entities[2].spheres) == 3
    assert [d.id for d in msg.deletions] == ["old/0"]
    cleared = decode(scene.markers_update(v(markers=[v(**gone.__dict__ | {"action": scene.DELETEALL})]),
                                          scene.stamp(0)))
    assert len(cleared.deletions) == 1 and not cleared.entities


def test_overlays_build():
    t = scene.stamp(3.25)
    assert decode(scene.status_update(True, "world", t, (0, 0, 1))).entities[0].texts[0].text == "SAFETY STOP"
    assert decode(scene.status_update(False, "world", t, (0, 0, 1))).entities[0].texts[0].text == "running"
    assert scene.clearance_text(0.0123, "b1-b4") == "12.3 mm b1-b4"
    goal = decode(scene.goal_update("world", t, (0, 0, 0.2), heading=(0.0, 1.0), goal=(1, 2, 0),
                                    plate_goal=np.eye(4), path=np.zeros((5, 3)))).entities[0]
    assert len(goal.arrows) == 4 and len(goal.spheres) == 1 and len(goal.lines[0].points) == 5
    raw = decode(scene.raw_markers_update(np.ones((3, 3)), [0, -1, -2], "world", t)).entities[0]
    assert len(raw.spheres) == 3
    assert decode(scene.status_update(None, "world", t, (0, 0, 0))).entities[0].timestamp.nanos == 250_000_000


def test_quaternions_turn_the_axis_onto_the_direction():
    rng = np.random.default_rng(3)
    d = rng.normal(size=(50, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    d = np.vstack([d, [[0, 0, -1.0], [0, 0, 1.0]]])
    q = scene.rotation_quaternions([0, 0, 1.0], d)
    for qi, di in zip(q, d):
        assert np.allclose(rotate(qi, np.array([0, 0, 1.0])), di, atol=1e-12)
    R = load_model("stacked_manipulator")
    C = next(iter(model_frames(R, R.positions).values()))
    q = scene.matrix_to_quaternion(C[:3, :3])
    assert np.allclose(np.column_stack([rotate(q, e) for e in np.eye(3)]), C[:3, :3], atol=1e-12)
    assert isinstance(scene.RobotScene(R).transforms(R.positions[:R.n_physical], scene.stamp(0)), FrameTransforms)
    assert isinstance(scene.world_update(R, "world", scene.stamp(0)), SceneUpdate)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_model_name_stays_below_the_status_text(name):
    """The name label and the safety-stop text do not overlap (a screenshot of the stacked manipulator showed
    'running' written over the name: the name sat at the nodes' mean height plus half their spread)."""
    m = MODELS[name]()
    Xp = m.positions[:m.n_physical]
    robot = decode(scene.RobotScene(m, "world").update(Xp, None, scene.stamp(0.0), 1.0)).entities[0].texts[0]
    status = decode(scene.status_update(False, "world", scene.stamp(0.0), scene.label_position(Xp))).entities[0]
    status = status.texts[0]
    gap = status.pose.position.z - robot.pose.position.z
    assert gap >= 0.5 * (robot.font_size + status.font_size) + 0.5 * scene.TEXT_SIZE   # half a line apart at least
    assert robot.pose.position.z > Xp[:, 2].max()                                      # and above the robot


def test_stale_positions_add_an_orange_line_above_the_safety_state():
    fresh = decode(scene.status_update(False, "world", scene.stamp(0.0), [0.0, 0.0, 1.0])).entities[0]
    stale = decode(scene.status_update(True, "world", scene.stamp(0.0), [0.0, 0.0, 1.0], stale_s=3.24))
    (entity,) = stale.entities
    assert [t.text for t in fresh.texts] == ["running"]
    assert [t.text for t in entity.texts] == ["SAFETY STOP", "node positions stale: 3.2 s"]
    assert entity.texts[1].pose.position.z > entity.texts[0].pose.position.z + entity.texts[0].font_size
