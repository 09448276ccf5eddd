"""The simulator node's start (issue 33 #15): a model file that starts the robot deep inside an obstacle is
refused when the node starts (it used to start and throw the robot out); a model whose every node is held
(zero free coordinates) starts and stays where it is held."""
import time

import numpy as np
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor

from tensegrity_engine import build_model, spec_from_dict
from tensegrity_engine.errors import ModelError
from tensegrity_engine.generators import icosahedron
from tensegrity_engine.model.write import dump_model
from tensegrity_ros_common.domains import claim_domain
from tensegrity_sim.simulator_node import TensegritySimulator


def start(path, *params):
    """(context, node) of a simulator node for the model file ``path`` (its construction may raise)."""
    ctx = rclpy.Context()
    rclpy.init(args=[], context=ctx, domain_id=claim_domain())
    try:
        return ctx, TensegritySimulator(context=ctx, cli_args=["--ros-args", "-p", f"model:={path}", *params])
    except Exception:
        rclpy.shutdown(context=ctx)
        raise


@pytest.mark.parametrize("from_equilibrium", [True, False])
def test_a_robot_deep_in_the_ground_is_refused_at_start_up(tmp_path, from_equilibrium):
    doc = icosahedron(bar_length=0.6, bar_mass=0.2, bar_radius=0.01, ea=5000.0)
    doc["gravity"] = [0.0, 0.0, -9.81]
    doc["obstacles"] = [{"name": "ground", "type": "plane", "point": [0.0, 0.0, 0.5]}]    # 0.81 m deep
    path = dump_model(build_model(spec_from_dict(doc, "six.yaml")), tmp_path / "deep.yaml")
    with pytest.raises(ModelError, match=r"deep\.yaml: node '\w+' in obstacle 'ground': starts 0\.81 m deep"):
        start(path, "-p", f"start_from_equilibrium:={str(from_equilibrium).lower()}")


def test_a_fully_held_model_starts_and_stays_where_it_is_held(tmp_path):
    doc = {"schema": "tensegrity-model", "version": 1, "name": "held", "gravity": [0, 0, -9.81],
           "nodes": [{"name": "a", "position": [0, 0, 0]}, {"name": "b", "position": [1, 0, 0]},
                     {"name": "c", "position": [0, 1, 0], "fixed": True}],
           "bars": [{"name": "r", "nodes": ["a", "b"], "mass": 1.0}],
           "strings": [{"name": "s", "path": ["b", "c"], "stiffness": 100.0, "rest_length": 1.0}],
           "supports": [{"name": "base", "type": "clamp", "bar": "r"}]}
    model = build_model(spec_from_dict(doc, "held.yaml"))
    ctx, node = start(dump_model(model, tmp_path / "held.yaml"))
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    try:
        end = time.monotonic() + 30.0                   # generous: a loaded machine
        while time.monotonic() < end and node.sim.t < 0.5:
            ex.spin_once(timeout_sec=0.05)
        assert node.sim.t >= 0.5 and not node.failure
        assert np.array_equal(node.sim.positions, model.positions)
    finally:
        node.destroy_node()
        ex.shutdown()
        rclpy.shutdown(context=ctx)
