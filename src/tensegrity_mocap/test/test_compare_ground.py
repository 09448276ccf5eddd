"""tensegrity-compare of a robot resting on the floor (issue 24): with a ground the model is compared without
fixing nodes, and a model that falls through the capture gets loud warnings instead of silent parabolas."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tensegrity_engine import Simulator, load_model
from tensegrity_engine.dynamics.inputs import no_input
from tensegrity_engine.generators import icosahedron
from tensegrity_engine.model.build import build_model
from tensegrity_engine.model.spec import spec_from_dict
from tensegrity_engine.model.write import dump_model

from tensegrity_mocap.axes import z_up_to_y_up
from tensegrity_mocap.cli.compare import main
from tensegrity_mocap.compare.core import CompareError
from tensegrity_mocap.compare.simulation import simulate
from tensegrity_mocap.motive import write_motive_csv

SIGMA = 5e-4        # m, marker noise per axis (a typical Motive residual)


@pytest.fixture(scope="module")
def resting(tmp_path_factory):
    """A six-bar settled on the floor (no fixed node) written with its rest pose, the same model without the
    floor, and a 3 s static capture of it (Motive CSV, 100 Hz, noise SIGMA per axis)."""
    d = tmp_path_factory.mktemp("resting")
    doc = icosahedron(bar_length=0.6, bar_mass=0.2, bar_radius=0.01, ea=5000.0)
    doc.update(name="sixbar_floor", gravity=[0.0, 0.0, -9.81], structural_damping=2.0)
    for string in doc["strings"]:
        string["damping"] = 2.0
    doc["obstacles"] = [{"name": "ground", "type": "plane", "friction": 0.8}]
    model = build_model(spec_from_dict(doc, "sixbar_floor.yaml"))
    sim = Simulator(model, integrator="rk4", dt=1e-3)
    sim.reset(model.positions - [0, 0, model.positions[:, 2].min() - 0.02])
    sim.advance(8.0)
    on_floor = dump_model(model, d / "sixbar_floor.yaml", positions=sim.positions)
    del doc["obstacles"]
    bare = dump_model(build_model(spec_from_dict(doc, "sixbar_bare.yaml")), d / "sixbar_bare.yaml",
                      positions=sim.positions)
    t = np.arange(300) / 100.0
    X = np.repeat(sim.positions[None, :model.n_physical], len(t), axis=0)
    X = X + np.random.default_rng(5).normal(0.0, SIGMA, X.shape)
    markers = {f"Robot:{n}": z_up_to_y_up(X[:, k]) for k, n in enumerate(model.node_names[:model.n_physical])}
    csv = write_motive_csv(d / "static.csv", t, markers, {}, frame_rate=100.0, length_units="Millimeters")
    return on_floor, bare, csv


def _rms(out):
    return json.loads((out / "rms.json").read_text())


def test_robot_on_the_floor_compares_at_the_noise_level(resting, tmp_path, capsys):
    on_floor, _, csv = resting
    out = tmp_path / "floor"
    assert main([str(csv), "--simulate", str(on_floor), "--out", str(out)]) == 0
    nodes = _rms(out)["nodes"]
    # 3D deviation of pure noise: RMS = σ √3 = 0.87 mm; the model drifts < 0.1 mm from its rest pose
    assert nodes["rms_mm"] == pytest.approx(SIGMA * np.sqrt(3) * 1e3, rel=0.1)
    assert _rms(out)["warnings"] == []
    assert "WARNING" not in capsys.readouterr().err


def test_ground_option_supplies_the_floor(resting, tmp_path):
    _, bare, csv = resting
    out = tmp_path / "ground"
    assert main([str(csv), "--simulate", str(bare), "--ground", "0", "--out", str(out)]) == 0
    assert _rms(out)["nodes"]["rms_mm"] == pytest.approx(SIGMA * np.sqrt(3) * 1e3, rel=0.1)
    assert _rms(out)["warnings"] == []


def test_a_model_without_floor_warns_loudly(resting, tmp_path, capsys):
    """The issue's case: a free model falls through the capture; the comparison says so and why."""
    _, bare, csv = resting
    out = tmp_path / "falls"
    assert main([str(csv), "--simulate", str(bare), "--out", str(out)]) == 0
    warnings = _rms(out)["warnings"]
    assert len(warnings) == 2
    assert "leaves the capture's bounding box" in warnings[0]
    assert "--ground" in warnings[1] and "neither fixed nodes nor obstacles" in warnings[1]
    err = capsys.readouterr().err
    assert err.count("tensegrity-compare: WARNING:") == 2


@pytest.mark.parametrize("argv, message", [
    (["--ground", "nan"], "--ground: must be a finite height"),
    (["--ground-friction", "0.5"], "--ground-friction goes with --ground"),
    (["--ground", "0", "--ground-friction", "-1"], "--ground-friction: must be in"),
])
def test_ground_option_errors(resting, tmp_path, capsys, argv, message):
    _, bare, csv = resting
    with pytest.raises(SystemExit) as err:
        main([str(csv), "--simulate", str(bare), "--out", str(tmp_path / "x"), *argv])
    assert err.value.code == 2
    assert message in capsys.readouterr().err


def test_ground_help_names_the_model_frame_under_capture_transform():
    """Issue 35 (7e): the plane is added to the model, so Z is a height in the model's frame; under
    --capture-transform that is the robot frame, not the capture's (the help said the capture's)."""
    from tensegrity_mocap.cli.compare import build_parser
    text = next(a.help for a in build_parser()._actions if "--ground" in a.option_strings)
    assert "in the model's frame" in text and "with --capture-transform the robot frame" in text
    assert "at height Z [m] in the capture's frame" not in text


def test_a_start_whose_fixed_nodes_are_off_their_markers_names_the_frame_and_the_registration():
    """--initial-from-experiment on a clamped model (the manipulator's base nodes are fixed) with the capture
    20 mm off the model's frame: the error says the fixed nodes are off their markers and how to register
    (before: 'the capture's world is not the model's (--world-offset) or a marker is on the wrong node')."""
    model = load_model("stacked_manipulator")
    X = model.positions + np.array([0.02, 0.0, 0.0])
    with pytest.raises(CompareError, match=r"fixed node\(s\) n1,n2,n3 are 20\.0 mm from their markers.*--register-fixed"):
        simulate(model, 0.1, no_input(len(model.actuator_names)), start=(0.0, X), tol=0.005)
