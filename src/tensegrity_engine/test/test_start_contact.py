"""A robot that starts inside an obstacle (dynamics/start_contact.py): refused deep inside, warned of deeper
than a robot at rest sinks in, silent at rest. It used to be accepted and thrown out (a six-bar 0.81 m in
the ground: 17.6 kJ in its contact springs, its nodes 143 m up 2 s later)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from tensegrity_engine import Simulator
from tensegrity_engine.dynamics.batch import BatchSimulator
from tensegrity_engine.dynamics.start_contact import REFUSE_WEIGHTS, check_start
from tensegrity_engine.errors import ModelError
from tensegrity_engine.generators import icosahedron
from tensegrity_engine.model.build import build_model
from tensegrity_engine.model.spec import spec_from_dict

G = 9.81
# the six-bar: 6 bars of 0.2 kg (M = 1.2 kg), each node a slot of m = 0.1 kg on the ground; default 10 ms
# contact: k = m (π / 0.01 s)² = 9870 N/m, so a slot carrying the whole weight sinks in W / k = 1.19 mm
REST = 1.2 * G / (0.1 * (math.pi / 0.01) ** 2)


def six_bar(ground_height: float, gravity=G):
    """The six-bar (bar ends at z in [-0.3, 0.3] m, bar radius 10 mm) over a ground plane at ``ground_height``."""
    doc = icosahedron(bar_length=0.6, bar_mass=0.2, bar_radius=0.01, ea=5000.0)
    doc["gravity"] = [0.0, 0.0, -gravity]
    doc["obstacles"] = [{"name": "ground", "type": "plane", "point": [0.0, 0.0, ground_height]}]
    return build_model(spec_from_dict(doc, "six.yaml"))


def lowest_depth(model) -> float:
    """Depth [m] of the lowest node sphere under the model's ground."""
    return model.obstacles[0].point[2] - (model.positions[:, 2].min() - 0.01)


def test_a_robot_deep_in_the_ground_is_refused_naming_file_node_obstacle_and_fix():
    model = six_bar(0.5)
    assert lowest_depth(model) == pytest.approx(0.81)
    sim = Simulator(model, integrator="rk4")
    with pytest.raises(ModelError) as err:
        sim.advance(0.01)
    text = str(err.value)
    assert text.startswith("six.yaml: node '") and "in obstacle 'ground': starts 0.81 m deep" in text, text
    assert f"{REFUSE_WEIGHTS * REST:.3g} m at which its contact pushes with 10 times the robot's weight" in text
    assert "Fix: move the robot at least 0.81 m out of the obstacle" in text
    assert sim.t == 0.0 and np.array_equal(sim.positions[:, 2], model.positions[:, 2])   # nothing ran
    with pytest.raises(ModelError, match="starts 0.81 m deep"):
        BatchSimulator(model, 2)


@pytest.mark.parametrize("rests, expect", [(0.5, "silent"), (4.0, "warned"), (REFUSE_WEIGHTS + 0.5, "refused")])
def test_the_start_depth_is_judged_against_the_rest_depth_of_the_contact_law(rests, expect):
    """Depth rests x W / k: below the whole weight on one node (a pose at rest) silent, above it a warning
    (the robot is pushed out, and runs), above REFUSE_WEIGHTS of it a ModelError."""
    model = six_bar(-0.31 + rests * REST)
    assert lowest_depth(model) == pytest.approx(rests * REST)
    sim = Simulator(model, integrator="rk4")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        if expect == "refused":
            with pytest.raises(ModelError, match="starts .* deep inside the obstacle"):
                sim.advance(0.01)
            return
        sim.advance(0.01)
    assert bool(sim.start_warnings) == (expect == "warned") == bool(seen)
    if expect == "warned":
        assert "deep inside the obstacle, more than a robot at rest sinks in (0.00119 m)" in sim.start_warnings[0]
        assert str(seen[0].message).startswith("six.yaml: node '")


def test_a_robot_settled_on_the_ground_starts_silently_again():
    """A robot at rest on the floor (the dynamics' own rest state) is a legitimate start: no warning."""
    model = six_bar(-0.35)
    sim = Simulator(model, integrator="rk4", node_damping=5.0)
    sim.advance(2.0)                                         # falls 4 cm, lands, settles
    assert 0.0 < -(sim.positions[:, 2].min() - 0.01 + 0.35) <= REST    # resting, on its own sink
    assert check_start(model, sim.positions) == []
    sim.reset(sim.positions)
    sim.advance(0.01)
    assert sim.start_warnings == []


def test_a_bar_through_a_box_and_a_weightless_robot_are_judged_too():
    """A bar whose ends are outside a box but whose middle runs through it (the box's interior slots), in zero
    gravity (judged with the weight it has under standard gravity)."""
    doc = {"schema": "tensegrity-model", "version": 1, "name": "bar", "gravity": [0, 0, 0],
           "nodes": [{"name": "a", "position": [-0.5, 0, 0]}, {"name": "b", "position": [0.5, 0, 0]}],
           "bars": [{"name": "rod", "nodes": ["a", "b"], "mass": 1.0, "radius": 0.02}],
           "obstacles": [{"name": "wall", "type": "box", "centre": [0, 0, 0], "size": [0.1, 1, 1]}]}
    sim = Simulator(build_model(spec_from_dict(doc, "bar.yaml")), integrator="rk4")
    with pytest.raises(ModelError, match=r"bar\.yaml: bar 'rod' in obstacle 'wall': starts 0\.52 m deep"):
        sim.advance(0.01)


def test_info_lists_a_start_in_the_ground_and_refuses_a_deep_one(tmp_path, capsys):
    from tensegrity_engine.cli import main
    from tensegrity_engine.model.write import dump_model
    assert main(["info", str(dump_model(six_bar(-0.31 + 4 * REST), tmp_path / "warn.yaml"))]) == 0
    assert "warning: node 'n9' in obstacle 'ground' starts 0.00477 m deep" in capsys.readouterr().out
    assert main(["info", str(dump_model(six_bar(0.5), tmp_path / "deep.yaml"))]) == 2
    assert "deep.yaml: node 'n9' in obstacle 'ground': starts 0.81 m deep" in capsys.readouterr().err
