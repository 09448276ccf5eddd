"""Terrain: the height-field schema (validation, file reference, writer), the random terrain generators and
``surface_below`` (the highest surface under a ground point) against hand-computed cases."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tensegrity_engine.errors import ModelError
from tensegrity_engine.generators.terrain import box_field, rough_ground
from tensegrity_engine.model.spec import load_spec, spec_from_dict
from tensegrity_engine.model.surface import surface_below
from tensegrity_engine.model.world import ObstacleSpec, plane


def doc_with(*obstacles):
    return {"schema": "tensegrity-model", "version": 1, "nodes": [{"name": "a", "position": [0, 0, 1]},
            {"name": "b", "position": [1, 0, 1]}], "bars": [{"name": "r", "nodes": ["a", "b"], "mass": 1}],
            "obstacles": list(obstacles)}


HF = {"name": "hf", "type": "heightfield", "origin": [-1, -2, 0.1], "cell": [0.5, 1.0],
      "heights": [[0, 0.1, 0.2], [0.0, 0.0, 0.4]]}


def test_heightfield_is_read_and_written_back(tmp_path):
    from tensegrity_engine.model.build import build_model
    from tensegrity_engine.model.write import dump_model
    spec = spec_from_dict(doc_with(HF), "robot.yaml")
    o = spec.obstacles[0]
    assert (o.type, o.origin, o.cell, o.heights) == ("heightfield", (-1, -2, 0.1), (0.5, 1.0),
                                                    ((0, 0.1, 0.2), (0, 0, 0.4)))
    path = tmp_path / "w.yaml"
    dump_model(build_model(spec), path)
    assert load_spec(path).obstacles[0] == o


def test_heightfield_from_a_file_next_to_the_model(tmp_path):
    (tmp_path / "ground.csv").write_text("# heights, rows along y\n0, 0.1, 0.2\n0 0 0.4\n")
    import yaml
    doc = doc_with({"name": "hf", "type": "heightfield", "origin": [-1, -2, 0.1], "cell": [0.5, 1.0],
                    "file": "ground.csv"})
    (tmp_path / "robot.yaml").write_text(yaml.safe_dump(doc))
    assert load_spec(tmp_path / "robot.yaml").obstacles[0] == spec_from_dict(doc_with(HF), "x").obstacles[0]


@pytest.mark.parametrize("change, message", [
    ({"heights": [[0, 0, 0]]}, "at least two rows"),
    ({"heights": [[0, 0], [0, 0, 0]]}, "same length >= 2"),
    ({"heights": [[0, "a"], [0, 0]]}, "'heights[0]' must be a number"),
    ({"cell": [0.1]}, "'cell' must be a spacing"),
    ({"cell": 0.0}, "'cell' must be positive"),
    ({"file": "x.csv"}, "exactly one of 'heights' and 'file'"),
    ({"heights": None, "file": "missing.csv"}, "cannot read height file"),
    ({"size": [1, 1, 1]}, "unknown key"),
])
def test_bad_heightfields_name_the_file_the_obstacle_and_the_fix(change, message):
    bad = {k: v for k, v in {**HF, **change}.items() if v is not None}
    with pytest.raises(ModelError) as err:
        spec_from_dict(doc_with(bad), "robot.yaml")
    text = str(err.value)
    assert text.startswith("robot.yaml: obstacle") and message in text and "Fix:" in text, text


def test_box_field_is_reproducible_and_within_its_limits():
    a, b = box_field(7, n=20, max_height=0.05), box_field(7, n=20, max_height=0.05)
    assert a == b and a != box_field(8, n=20, max_height=0.05) and len(a) == 20
    for o in a:
        assert 0.5 <= o.centre[0] <= 3.0 and -1 <= o.centre[1] <= 1
        assert 0.01 <= o.size[2] <= 0.05 and o.centre[2] == pytest.approx(0.5 * o.size[2])
    spec_from_dict(doc_with(*({"name": o.name, "type": "box", "centre": list(o.centre), "size": list(o.size),
                               "rpy": list(o.rpy)} for o in a)), "field.yaml")


def test_rough_ground_spans_its_amplitude_and_keeps_a_flat_start():
    hf = rough_ground(3, size=(2.0, 1.0), amplitude=0.04, cell=0.05, origin=(-1, -0.5), flat_at=(0, 0),
                      flat_radius=0.3)
    H = np.asarray(hf.heights)
    assert H.shape == (21, 41) and H.min() >= 0 and H.max() <= 0.04 + 1e-12 and H.max() > 0.02
    assert surface_below([hf], [0.1, 0.1])[0] == 0.0                     # inside the start pad
    assert rough_ground(3, size=(2.0, 1.0)) == rough_ground(3, size=(2.0, 1.0))


def test_surface_below_planes_boxes_and_heightfields():
    ramp = ObstacleSpec("ramp", "plane", normal=(0.0, -math.sin(0.2), math.cos(0.2)), point=(0, 0, 0.1))
    assert surface_below([ramp], [3.0, 1.0])[0] == pytest.approx(0.1 + math.tan(0.2))
    wall = ObstacleSpec("wall", "plane", normal=(1.0, 0.0, 0.0))
    z, n = surface_below([plane(), wall], np.array([[0.0, 0.0], [5.0, 5.0]]))
    assert z.tolist() == [0.0, 0.0] and n.tolist() == [[0, 0, 1]] * 2
    # a box turned 45° about x: its top is a roof ridge along x at centre + h √2
    roof = ObstacleSpec("roof", "box", centre=(0, 0, 1), size=(2, 1, 1), rpy=(math.pi / 4, 0, 0))
    z, n = surface_below([plane(), roof], np.array([[0.0, 0.1], [0.0, -0.2], [1.5, 0.0]]))
    assert z == pytest.approx([1 + 0.5 * math.sqrt(2) - 0.1, 1 + 0.5 * math.sqrt(2) - 0.2, 0.0])
    assert n[0] == pytest.approx([0, math.sqrt(0.5), math.sqrt(0.5)]) and n[2].tolist() == [0, 0, 1]
    hf = spec_from_dict(doc_with(HF), "x").obstacles[0]
    z, n = surface_below([hf], [-0.75, -1.5])      # cell (0, 0): corners 0, 0.1, 0, 0 at a = b = 0.5
    assert z == pytest.approx(0.1 + 0.025)
    g = np.array([-(0.5 * 0.1) / 0.5, -(0.5 * -0.1) / 1.0, 1.0])        # (-dz/dx, -dz/dy, 1)
    assert n == pytest.approx(g / np.linalg.norm(g))
    assert surface_below([hf], [5.0, 5.0])[0] == -math.inf
