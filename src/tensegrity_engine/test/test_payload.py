"""Payloads that move (issue 35): a point mass hung by a cable (a node with a mass on one string), its physics
(pendulum period, energy, its weight in the robot's equilibrium), measured loads over time
(dynamics/loads.py) and the errors that name the file, the element and the fix."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tensegrity_engine import load_model, spec_from_dict, build_model
from tensegrity_engine.dynamics.loads import LoadTable, load_table_from_csv, payload_loads, run_loaded
from tensegrity_engine.dynamics.simulator import Simulator
from tensegrity_engine.errors import InputError, ModelError
from tensegrity_engine.model.payload import find_payload, split_payload, with_payload
from tensegrity_engine.statics.equilibrium import settle

G = 9.81


def pendulum(L=0.11, mass=1.0, stiffness=1e6, damping=0.0, angle=0.0):
    """A payload of ``mass`` [kg] on a cable of rest length ``L`` [m] from a fixed hook, ``angle`` [rad] aside at
    the cable's static stretch m g / k."""
    stretched = L + mass * G / stiffness
    pos = [stretched * math.sin(angle), 0.0, 1.0 - stretched * math.cos(angle)]
    doc = {"schema": "tensegrity-model", "version": 1, "name": "pendulum",
           "nodes": [{"name": "hook", "position": [0, 0, 1.0], "fixed": True},
                     {"name": "payload", "position": pos, "mass": mass}],
           "strings": [{"name": "payload_cable", "path": ["hook", "payload"], "stiffness": stiffness,
                        "damping": damping, "rest_length": L}]}
    return build_model(spec_from_dict(doc, "<pendulum>"))


def crossing_period(t, x) -> float:
    """Mean period [s] between upward zero crossings of x (linear interpolation between samples)."""
    i = np.flatnonzero((x[:-1] < 0) & (x[1:] >= 0))
    tc = t[i] - x[i] * (t[i + 1] - t[i]) / (x[i + 1] - x[i])
    return float(np.mean(np.diff(tc)))


def test_a_hung_mass_on_a_stiff_cable_swings_at_the_pendulum_period():
    L, angle = 0.11, math.radians(2.0)
    model = pendulum(L=L, angle=angle)
    sim = Simulator(model, rtol=1e-10, atol=1e-12)
    traj = sim.run(3.0, rate=2000)
    period = crossing_period(traj.t, traj.nodes[:, 1, 0])
    stretched = L + G / 1e6
    # small-angle period of the stretched length, with the amplitude correction (1 + θ0²/16) of a 2° swing
    # (7.6e-5); the cable's axial mode (159 Hz) does not couple at this stretch. Timing by interpolated zero
    # crossings at 2 kHz is good to ~1e-5 of a period over the 4 periods: 2e-4 covers all of it.
    analytic = 2 * math.pi * math.sqrt(stretched / G) * (1 + angle ** 2 / 16)
    assert period == pytest.approx(analytic, rel=2e-4)


def test_an_undamped_payload_conserves_energy():
    sim = Simulator(pendulum(stiffness=2e4, angle=math.radians(30.0)), rtol=1e-10, atol=1e-12)
    e0 = sim.energy()["total"]
    swing = 0.0
    for _ in range(10):
        sim.advance(0.1)
        swing = max(swing, sim.energy()["kinetic"])
        # the tolerance: dopri5 at rtol 1e-10 keeps the energy of this 1-dof swing to ~1e-9 of it
        assert sim.energy()["total"] == pytest.approx(e0, abs=1e-6 * swing + 1e-9)
    assert swing > 0.05                  # it swung: 1 kg from 30° on 0.11 m carries ~0.14 J


def test_the_payload_weighs_on_the_robot_in_its_equilibrium():
    robot = load_model("stacked_manipulator")
    loaded = with_payload(robot, "n22", 1.5, 0.1)
    X = settle(loaded).positions
    ext = np.zeros((robot.n_nodes, 3))
    ext[robot.node_index("n22")] = [0.0, 0.0, -1.5 * G]
    Y = settle(robot, external=ext).positions
    k = robot.n_physical
    moved = np.linalg.norm(settle(robot).positions[:k] - Y[:k], axis=1).max()
    assert moved > 1e-3                                  # 1.5 kg on the plate moves it by millimetres
    assert np.abs(X[:k] - Y[:k]).max() < 1e-7            # and the hung mass is exactly that weight
    p = find_payload(loaded, "payload")
    assert (p.hang, p.mass, p.cable) == ("n22", 1.5, "payload_cable")
    assert X[loaded.node_index("payload"), 2] < X[loaded.node_index("n22"), 2] - 0.1


def test_split_payload_gives_the_robot_back():
    robot = load_model("stacked_manipulator")
    back, p = split_payload(with_payload(robot, "n22", 1.0, 0.1), "payload")
    assert back.node_names == robot.node_names and back.string_names == robot.string_names
    assert np.allclose(back.rest_length, robot.rest_length) and p.cable_length == 0.1


@pytest.mark.parametrize("node, words", [("n22", "no point mass"), ("nope", "not a node")])
def test_a_payload_that_is_not_one_is_an_error_naming_the_node_and_the_fix(node, words):
    with pytest.raises(ModelError) as err:
        find_payload(with_payload(load_model("stacked_manipulator"), "n22", 1.0, 0.1), node)
    assert words in str(err.value) and "stacked_manipulator" in str(err.value) and node in str(err.value)


def captured_drive_error(model, rate: float) -> tuple:
    """(largest robot-node error [m] of the robot driven by the payload's captured m (g - a) at ``rate`` [Hz]
    against the swinging mass simulated, the robot's largest motion [m]) over 1 s."""
    truth = Simulator(model, rtol=1e-9, atol=1e-11).run(1.0, rate=rate)
    bare, p = split_payload(model, "payload")
    loads = payload_loads(truth.t, truth.nodes[:, model.node_index("payload")], p.mass, p.hang, model.gravity,
                          smoothing=5 / rate)
    sim = Simulator(bare, rtol=1e-9, atol=1e-11)
    sim.reset(bare.from_physical(model.positions[:bare.n_physical]))
    run = run_loaded(sim, 1.0, loads, rate=rate)
    k = bare.n_physical
    return (np.linalg.norm(run.nodes[:, :k] - truth.nodes[:, :k], axis=-1).max(),
            np.linalg.norm(truth.nodes[:, :k] - truth.nodes[:1, :k], axis=-1).max())


def test_a_captured_payload_drives_the_robot_as_the_swinging_mass_does():
    """The cable is all that acts on the payload besides gravity: its captured motion's m (g - a) on the hook
    moves the robot as the simulated swinging mass does, exactly in the limit of fine sampling."""
    model = with_payload(load_model("stacked_manipulator"), "n22", 0.3, 0.08, offset=(0.03, 0.0, 0.0))
    coarse, _ = captured_drive_error(model, 1000)
    fine, motion = captured_drive_error(model, 2000)
    assert motion > 0.01
    # the error is the sampling's (5-frame cubic acceleration of the cable's 41 Hz bounce, the midpoint rule):
    # 1.6, 0.30, 0.048 mm at 1, 2, 4 kHz (order ~2.5); at 2 kHz 1.3 % of the 22 mm motion
    assert fine < 0.25 * coarse and fine < 0.02 * motion, (coarse, fine, motion)


def test_a_constant_load_table_is_a_constant_external_force():
    model = load_model("stacked_manipulator")
    f = [3.0, -1.0, -5.0]
    a = Simulator(model)
    a.set_external_force("n22", f)
    ref = a.run(0.3, rate=100)
    table = LoadTable(np.array([0.0, 1.0]), ("n22",), np.array([[f], [f]], float))
    run = run_loaded(Simulator(model), 0.3, table, rate=100)
    assert np.abs(run.nodes - ref.nodes).max() < 1e-6      # the adaptive steps differ: rtol 1e-6 of ~mm motion


def test_a_load_table_csv_is_read_and_its_errors_name_the_file_and_column(tmp_path):
    model = load_model("stacked_manipulator")
    good = tmp_path / "loads.csv"
    good.write_text("t,n22.fx,n22.fy,n22.fz\n0,0,0,-1\n1,2,0,-1\n")
    table = load_table_from_csv(good, model)
    assert table.nodes == ("n22",) and np.allclose(table.at(0.5), [[1.0, 0.0, -1.0]])
    for text, words in (("t,n22.fx,n22.fy\n0,1,2\n", "three columns"), ("t,n22.f\n0,1\n", "'n22.f'"),
                        ("t,n99.fx,n99.fy,n99.fz\n0,1,2,3\n", "n99")):
        bad = tmp_path / "bad.csv"
        bad.write_text(text)
        with pytest.raises(InputError) as err:
            load_table_from_csv(bad, model)
        assert words in str(err.value) and "bad.csv" in str(err.value)


@pytest.mark.slow
def test_tensegrity_simulate_runs_under_a_load_table(tmp_path):
    from tensegrity_engine.cli import main
    from tensegrity_engine.dynamics.trajectory import Trajectory
    (tmp_path / "push.csv").write_text("t,n22.fx,n22.fy,n22.fz\n0,0,0,0\n0.2,5,0,-3\n0.4,0,0,0\n")
    runs = {}
    for name, extra in (("free", []), ("pushed", ["--load", str(tmp_path / "push.csv")])):
        assert main(["simulate", "stacked_manipulator", "--duration", "0.4", "--input", "none", "--no-plots",
                     "--quiet", "--out", str(tmp_path / name), *extra]) == 0
        runs[name] = Trajectory.load(tmp_path / name / "trajectory.npz")
    k = load_model("stacked_manipulator").node_index("n22")
    assert np.linalg.norm(runs["pushed"].nodes[-1, k] - runs["free"].nodes[-1, k]) > 1e-3   # a 5 N push: mm
    assert main(["simulate", "stacked_manipulator", "--input", "none", "--load", str(tmp_path / "nope.csv"),
                 "--quiet", "--out", str(tmp_path / "x")]) == 2
