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


# ------------------------------------------------------------------------------------- height-field contact
G = 9.81


def bar_on(obstacles, length=0.5, radius=0.02, mass=1.0):
    """One free bar along x (no strings), 1 m up, with the given obstacles (as test_contact's bar_model)."""
    from tensegrity_engine.model.build import build_model
    doc = {"schema": "tensegrity-model", "version": 1, "name": "bar", "gravity": [0, 0, -G],
           "nodes": [{"name": "a", "position": [-length / 2, 0, 1.0]}, {"name": "b", "position": [length / 2, 0, 1.0]}],
           "bars": [{"name": "rod", "nodes": ["a", "b"], "mass": mass, "radius": radius}], "obstacles": obstacles}
    return build_model(spec_from_dict(doc, "bar.yaml"))


def tilted_field(deg, mu):
    """The plane through the origin rising toward +y at ``deg`` as a 2 x 2 height field (bilinear of a plane
    is that plane), x in [-1, 1], y in [-5, 1]; and the unit normal and downhill direction."""
    t = math.tan(math.radians(deg))
    field = {"name": "hill", "type": "heightfield", "origin": [-1, -5, 0], "cell": [2.0, 6.0],
             "heights": [[-5 * t, -5 * t], [t, t]], "friction": mu}
    th = math.radians(deg)
    return field, np.array([0.0, -math.sin(th), math.cos(th)]), np.array([0.0, -math.cos(th), -math.sin(th)])


def resting_on(normal, radius=0.02, length=0.5):
    """Bar ends lying on the plane through the origin with unit ``normal``, at rest penetration (10 ms contact)."""
    sink = G * (0.01 / math.pi) ** 2
    return np.array([[-length / 2, 0, 0], [length / 2, 0, 0]]) + (radius - sink * normal[2]) * normal


@pytest.mark.parametrize("deg, slides", [(20.0, False), (35.0, True)])
def test_a_bar_on_a_tilted_height_field_sticks_or_slides_as_on_the_inclined_plane(deg, slides):
    """μ = 0.5, atan μ = 26.6°: at 20° the bar stays put (creep <= 0.1 mm in 3 s, as on a plane), at 35° it
    slides at the Coulomb acceleration g (sin θ − μ cos θ) to 1e-6 (test_contact's figures for the plane)."""
    from tensegrity_engine import Simulator
    field, normal, downhill = tilted_field(deg, 0.5)
    sim = Simulator(bar_on([field]), integrator="rk4", dt=1e-3)
    sim.reset(resting_on(normal))
    if not slides:
        sim.advance(0.5)
        start = sim.positions.copy()
        sim.advance(3.0)
        assert np.abs(sim.positions - start).max() <= 1e-4
        return
    tr = sim.run(1.5, rate=200)
    v = tr.velocities[:, 0] @ downhill
    th = math.radians(deg)
    assert np.polyfit(tr.t[20:], v[20:], 1)[0] == pytest.approx(G * (math.sin(th) - 0.5 * math.cos(th)), rel=1e-6)


def test_a_bar_rests_across_a_ridge_of_the_height_field_on_its_interior():
    """A flat-topped ridge 5 cm high (x = ±25 mm on top, 45° flanks; a 4 x 2 grid of 5 cm cells) under a bar
    along x: the bar rests on the top's two edges with its two interior slots (the top's normal, up), the
    force equal to its weight, no end touching."""
    from tensegrity_engine import Simulator
    ridge = {"name": "ridge", "type": "heightfield", "origin": [-0.075, -1, 0], "cell": [0.05, 2.0],
             "heights": [[0, 0.05, 0.05, 0]] * 2}
    sim = Simulator(bar_on([ridge]), integrator="rk4", dt=1e-3)
    sim.reset(np.array([[-0.25, 0.0, 0.075], [0.25, 0.0, 0.075]]))
    sim.advance(1.0)
    c = sim.contacts()
    assert c.names == ("rod/ridge", "rod/ridge")
    assert sorted(c.point[:, 0]) == pytest.approx([-0.025, 0.025], abs=1e-4)
    assert np.ptp(sim.positions[:, 2]) < 1e-9
    assert c.total_force == pytest.approx([0, 0, G], abs=1e-6)


FLOORS = {"flat height field": (ObstacleSpec("ground", "heightfield", origin=(-2.0, -2.0, 0.0), cell=(0.5, 0.5),
                                             heights=((0.0,) * 9,) * 9),),
          "floor box": (ObstacleSpec("ground", "box", centre=(0.0, 0.0, -0.5), size=(40.0, 40.0, 1.0)),),
          "plane + far box": (plane("ground"), ObstacleSpec("far", "box", centre=(10.0, 0, 0.5), size=(1, 1, 1)))}


@pytest.mark.parametrize("floor", list(FLOORS))
def test_a_robot_landing_on_the_floor_moves_as_on_the_plane(floor):
    """The three-bar prism dropped 5 cm onto z = 0 written as a plane and as a flat height field, a 40 m box
    or a plane with a box 10 m away: node slots see the same clearance and normal, interior slots stay
    inactive (a tilted bar's deepest stretch is at its end, a flat one's the whole bar) and the far box is
    skipped, so the trajectories agree to rounding (1e-9 m over 1.5 s; they differ by 0.06 m from start)."""
    from dataclasses import replace
    from tensegrity_engine import Simulator
    from tensegrity_engine.generators import three_bar_prism, verify_template
    from tensegrity_engine.model.build import build_model
    m, _ = verify_template(three_bar_prism(lift=0.05), min_tension=10.0)
    out = []
    for world in ((plane("ground"),), FLOORS[floor]):
        sim = Simulator(build_model(replace(m.spec, obstacles=world)), integrator="rk4", dt=1e-3)
        out.append(sim.run(1.5, rate=100).nodes)
    assert np.abs(out[0][-1, :, 2] - out[0][0, :, 2]).max() > 0.04          # it did land
    assert np.abs(out[1] - out[0]).max() <= 1e-9


def test_energy_never_increases_on_rough_ground_and_over_its_edge():
    """Random drops of a six-bar (random orientation, spin, velocity; as test_contact's on the plane) onto
    8 cm bumps (a 4 m x 4 m field, no plane around it): the total energy never rises between 5 ms samples by
    more than 1e-6 of the energy lost. The third drop rolls off the field's edge and falls past its side wall
    (before the field was a solid column, the node coming back under the surface from the side was thrown
    out with 250 J)."""
    from tensegrity_engine.generators import icosahedron
    from tensegrity_engine.model.build import build_model
    rng = np.random.default_rng(7)
    doc = icosahedron(bar_length=0.6, bar_mass=0.2, bar_radius=0.01, ea=5000.0)
    doc["gravity"] = [0.0, 0.0, -G]
    hf = rough_ground(4, size=(4, 4), amplitude=0.08, cell=0.05, origin=(-2, -2), wavelength=0.3)
    doc["obstacles"] = [{"name": "rough", "type": "heightfield", "origin": list(hf.origin), "cell": list(hf.cell),
                         "heights": [list(r) for r in hf.heights], "friction": 0.6, "restitution": 0.4}]
    for string in doc["strings"]:
        string["damping"] = 2.0
    model = build_model(spec_from_dict(doc, "six.yaml"))
    from drops import drop_energies
    runs = drop_energies(model, rng, height=0.7)
    for trial, (E, _) in enumerate(runs):
        assert np.diff(E).max() <= 1e-6 * (E[0] - E.min()), trial
    assert np.abs(runs[-1][1].positions[:, :2]).max() > 2.0            # the last one left the field


def test_snapshots_and_info_show_a_height_field(tmp_path, capsys):
    """The snapshot draws its grid cells at their heights; ``tensegrity info`` names its grid."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from tensegrity_engine.cli.app import main
    from tensegrity_engine.model.write import dump_model
    from tensegrity_engine.plots.figures import draw_obstacles
    model = bar_on([HF])
    (cells,) = draw_obstacles(Figure().add_subplot(projection="3d"), model, np.zeros(3), 1.0)
    assert cells.shape == (2, 4, 3) and cells[0, :, 2] == pytest.approx([0.1, 0.2, 0.1, 0.1])
    assert main(["info", str(dump_model(model, tmp_path / "hf.yaml"))]) == 0
    assert "obstacle hf: heightfield, origin [-1.0, -2.0, 0.1] m, 3 x 2 heights every [0.5, 1.0] m, 0 .. 0.4 m" \
        in capsys.readouterr().out
