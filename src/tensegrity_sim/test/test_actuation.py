"""Motor goals, displacement goals and the experiment as engine schedules (no ROS)."""
import numpy as np
import pytest

from tensegrity_engine import Simulator, load_model
from tensegrity_engine.dynamics.inputs import PAPER_AMPLITUDES, u_to_angles
from tensegrity_sim.actuation import Actuation, CommandRejected


@pytest.fixture(scope="module")
def model():
    return load_model("stacked_manipulator")


def angles(sim, t=None):
    u, _ = sim.inputs(sim.t if t is None else t)
    return u_to_angles(sim.model, u)


def test_goal_reached_at_the_speed_limit(model):
    sim = Simulator(model, integrator="rk4", dt=1e-3)
    act = Actuation(model, speed_limit=2.0)
    act.goal_angles(sim, np.array([0, 4]), [1.0, -0.5])
    # motor m1 needs 1.0 rad / 2 rad/s = 0.5 s, m5 0.25 s; others hold at 0
    assert angles(sim, 0.25) == pytest.approx([0.5, 0, 0, 0, -0.5, 0], abs=1e-12)
    assert angles(sim, 0.5) == pytest.approx([1.0, 0, 0, 0, -0.5, 0], abs=1e-12)
    assert angles(sim, 9.0) == pytest.approx([1.0, 0, 0, 0, -0.5, 0], abs=1e-12)
    _, ud = sim.inputs(0.1)
    assert abs(ud[0]) == pytest.approx(2.0 * model.spool_radius[0], rel=1e-12)   # rate = speed x spool radius


def test_new_goal_starts_from_where_the_motor_is(model):
    sim = Simulator(model, integrator="rk4", dt=1e-3)
    act = Actuation(model, speed_limit=1.0)
    act.goal_angles(sim, np.array([1]), [1.0])
    sim.advance(0.3)
    before = angles(sim)
    act.goal_angles(sim, np.array([2]), [0.2])        # m2 keeps its goal 1.0, m3 moves to 0.2
    assert angles(sim) == pytest.approx(before, abs=1e-12)          # continuous
    assert angles(sim, sim.t + 5) == pytest.approx([0, 1.0, 0.2, 0, 0, 0], abs=1e-12)


@pytest.mark.parametrize("goal", [np.nan, np.inf, 2.6, -3.0])
def test_bad_goals_are_rejected_and_change_nothing(model, goal):
    sim = Simulator(model, integrator="rk4", dt=1e-3)
    act = Actuation(model)
    act.goal_angles(sim, np.array([0]), [0.4])
    sched = sim.inputs
    with pytest.raises(CommandRejected):
        act.goal_angles(sim, np.array([0, 3]), [0.1, goal])
    assert sim.inputs is sched


def test_displacement_goal_maps_through_the_spool(model):
    sim = Simulator(model, integrator="rk4", dt=1e-3)
    act = Actuation(model)
    act.goal_displacements(sim, np.array([3]), [0.01])          # 10 mm reeled in by m4
    u, _ = sim.inputs(sim.t + 10)
    assert u == pytest.approx([0, 0, 0, 0.01, 0, 0], abs=1e-15)


def test_experiment_starts_continuously_and_reaches_the_paper_amplitudes(model):
    sim = Simulator(model, integrator="rk4", dt=1e-3)
    act = Actuation(model)
    act.goal_displacements(sim, np.array([0]), [0.005])
    sim.advance(1.0)
    u0, _ = sim.inputs(sim.t)
    t0 = sim.t
    act.start_experiment(sim, period=7.0, amplitudes=PAPER_AMPLITUDES, ramp=1.0)
    assert act.experiment_on
    assert sim.inputs(t0)[0] == pytest.approx(u0, abs=1e-15)      # no jump at the start
    ts = t0 + np.linspace(1.0, 8.0, 2001)
    u, _ = sim.inputs(ts)
    amp = (u.max(axis=0) - u.min(axis=0)) / 2
    assert amp == pytest.approx(np.repeat(PAPER_AMPLITUDES, 3), rel=1e-4)   # sampled peaks of a sine
    act.stop_experiment(sim)
    held, _ = sim.inputs(sim.t)
    assert sim.inputs(sim.t + 3)[0] == pytest.approx(held, abs=1e-15) and not act.experiment_on


def test_experiment_beyond_the_limits_is_refused(model):
    sim = Simulator(model, integrator="rk4", dt=1e-3)
    act = Actuation(model)
    with pytest.raises(CommandRejected, match="outside its limits"):
        act.start_experiment(sim, period=7.0, amplitudes=[0.2, 0.2])
    assert not act.experiment_on
