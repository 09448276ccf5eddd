"""A height field through real rclpy and DDS: the simulator draws it as a latched TRIANGLE_LIST and
describes it (heights inline) to the collision monitor, which checks the bars against it."""
import json

import pytest
import yaml
from std_msgs.msg import Float64MultiArray, String
from visualization_msgs.msg import MarkerArray

from ros_harness import ros  # noqa: F401  (fixture)
from tensegrity_engine.generators import icosahedron
from tensegrity_monitor.collision_monitor_node import CollisionMonitor
from tensegrity_ros_common import topics
from tensegrity_sim.simulator_node import TensegritySimulator

FIELD = {"name": "rough", "type": "heightfield", "origin": [-1.0, -1.0, 0.0], "cell": 0.5,
         "heights": [[0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0],
                     [0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.1, 0.0]]}


@pytest.fixture
def field_file(tmp_path):
    """The icosahedron template with its lowest nodes 5 cm above a height field (flat at z = 0, one 10 cm
    bump at a corner), no other obstacle."""
    doc = icosahedron()
    low = min(n["position"][2] for n in doc["nodes"])
    for n in doc["nodes"]:
        n["position"][2] += 0.05 - low
    doc["obstacles"] = [FIELD]
    path = tmp_path / "field.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_a_height_field_is_drawn_and_checked_by_the_monitor(ros, field_file):
    ros.node(TensegritySimulator, "-p", f"model:={field_file}", "-p", "paused:=true",
             "-p", "start_from_equilibrium:=false")
    ros.node(CollisionMonitor, "-r", "__node:=monitor")
    got, pairs, clear = [], [], []
    probe = ros.plain("probe")
    probe.create_subscription(Float64MultiArray, topics.OBSTACLE_CLEARANCES, lambda m: clear.append(m.data), 10)
    probe.create_subscription(MarkerArray, topics.OBSTACLE_MARKERS, got.append, topics.latched_qos())
    probe.create_subscription(String, topics.OBSTACLE_PAIRS, lambda m: pairs.append(m.data), topics.latched_qos())
    ros.spin_until(lambda: got and pairs, 10, "latched obstacle markers and the monitor's pairs")
    (field,) = [m for m in got[-1].markers if m.ns == "obstacles"]
    assert field.type == field.TRIANGLE_LIST and field.text == "rough" and len(field.points) == 6 * 16
    assert max(p.z for p in field.points) == pytest.approx(0.1)
    assert {o for _, o in json.loads(pairs[-1])} == {"rough"}
    ros.spin_until(lambda: clear, 10, "the monitor's clearances to the height field")
    radius = yaml.safe_load(open(field_file))["bars"][0].get("radius", 0.0)
    assert min(clear[-1]) == pytest.approx(0.05 - radius, abs=1e-9)      # the lowest bar over the flat part
