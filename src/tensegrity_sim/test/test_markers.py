"""RViz markers: stable namespaces/ids, counts, cylinder poses along the bars, tension colours."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from std_msgs.msg import Header

from tensegrity_engine import load_model
from tensegrity_ros_common.appearance import plate_bar_mask, rotation_quaternions, tension_colours
from tensegrity_sim.markers import MarkerBuilder
from visualization_msgs.msg import Marker


@pytest.fixture(scope="module")
def model():
    return load_model("stacked_manipulator")


def test_counts_ids_and_geometry(model):
    mb = MarkerBuilder(model, "world")
    X = model.positions
    arr = mb.build(X, np.full(len(model.string_names), 100.0), Header(frame_id="world"))
    by_ns = {}
    for mk in arr.markers:
        by_ns.setdefault(mk.ns, []).append(mk)
        assert mk.header.frame_id == "world"
    assert sorted(m.id for m in by_ns["bars"]) == list(range(18))
    assert all(m.type == Marker.CYLINDER for m in by_ns["bars"])
    (strings,), (nodes,), (plates,) = by_ns["strings"], by_ns["nodes"], by_ns["plates"]
    assert strings.type == Marker.LINE_LIST and len(strings.points) == 2 * 36 == len(strings.colors)
    assert nodes.type == Marker.SPHERE_LIST and len(nodes.points) == 24
    assert [(p.x, p.y, p.z) for p in nodes.points] == [tuple(x) for x in X[:24].tolist()]   # model order
    assert plates.type == Marker.TRIANGLE_LIST and len(plates.points) == 9
    for i, mk in enumerate(by_ns["bars"]):
        a, b = X[model.bars[i, 0]], X[model.bars[i, 1]]
        q = mk.pose.orientation
        axis = Rotation.from_quat([q.x, q.y, q.z, q.w]).apply([0, 0, 1])
        # cylinder centred on the bar, its z axis along the bar, its height the bar length (to rounding)
        assert np.allclose([mk.pose.position.x, mk.pose.position.y, mk.pose.position.z], (a + b) / 2, atol=1e-12)
        assert np.allclose(axis, (b - a) / np.linalg.norm(b - a), atol=1e-12)
        assert mk.scale.z == pytest.approx(np.linalg.norm(b - a), rel=1e-12)
        assert mk.scale.x == pytest.approx(2 * model.bar_radius[i])
    again = mb.build(X, np.full(len(model.string_names), 100.0), Header(frame_id="world"))
    assert [(m.ns, m.id) for m in again.markers] == [(m.ns, m.id) for m in arr.markers]    # stable


def test_plate_bars_are_the_virtual_plate_bars(model):
    assert np.flatnonzero(plate_bar_mask(model)).tolist() == [12, 13, 14, 15, 16, 17]


def test_quaternions_handle_all_directions():
    rng = np.random.default_rng(0)
    d = rng.normal(size=(200, 3))
    d = np.vstack([d / np.linalg.norm(d, axis=1)[:, None], [[0, 0, 1], [0, 0, -1], [1, 0, 0]]])
    q = rotation_quaternions([0, 0, 1], d)
    assert np.allclose(Rotation.from_quat(q).apply([0, 0, 1]), d, atol=1e-12)


def test_tension_colours():
    c = tension_colours([0.0, -5.0, 50.0, 100.0, 400.0], 100.0)
    assert np.allclose(c[0], c[1])                        # slack strings grey
    assert np.allclose(c[3], [1, 0, 0, 1]) and np.allclose(c[4], [1, 0, 0, 1])
    assert np.allclose(c[2], [0, 1, 0, 1])


def test_reused_builder_equals_a_fresh_one(model):
    """The builder updates its point, colour and pose objects in place: after other states (and a slack
    string) it must serialise exactly as a new builder given only the last state."""
    from rclpy.serialization import deserialize_message, serialize_message
    from visualization_msgs.msg import MarkerArray
    rng = np.random.default_rng(2)
    h = Header(frame_id="world")
    reused = MarkerBuilder(model, "world", tension_max=300.0)
    for _ in range(3):
        X = model.positions + rng.normal(scale=0.01, size=model.positions.shape)
        T = rng.uniform(0.0, 250.0, len(model.string_names))
        T[0] = 0.0
        arr = reused.build(X, T, h)
    fresh = MarkerBuilder(model, "world", tension_max=300.0).build(X, T, h)
    # compared after a serialisation round trip (what subscribers get); not as bytes: CDR padding bytes
    # are not guaranteed to be zero
    def wire(msg):
        return deserialize_message(serialize_message(msg), MarkerArray)
    assert wire(arr) == wire(fresh)
    nodes = next(mk for mk in arr.markers if mk.ns == "nodes")
    assert [(p.x, p.y, p.z) for p in nodes.points] == [tuple(x) for x in X[:model.n_physical].tolist()]
