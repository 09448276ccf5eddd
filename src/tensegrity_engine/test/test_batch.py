"""The batch stepper (dynamics/batch.py) moves each robot exactly as its own Simulator does: same model
variant, RK4 at the same step, the same inputs, through contact onsets and string switches."""
import numpy as np
import pytest

from tensegrity_engine.dynamics.batch import BatchSimulator
from tensegrity_engine.dynamics.inputs import table
from tensegrity_engine.dynamics.simulator import Simulator
from tensegrity_engine.sweep.variants import variant_model

SAME_ARITHMETIC = 1e-12   # m, m/s: one compiled function on the same numbers; differences would be rounding
PERIOD = 0.02             # s: one control step of the learning environments (20 RK4 steps of 1 ms)


@pytest.fixture(scope="module")
def six_bar():
    from tensegrity_engine.learn.robots import six_bar_on_ground
    return six_bar_on_ground()


def gait(model, robots, steps, seed=0):
    """Smooth periodic inputs (steps + 1, robots, alpha) [m] within the limits, one phase per actuator."""
    rng = np.random.default_rng(seed)
    phase = rng.uniform(0, 2 * np.pi, (robots, len(model.actuator_names)))
    t = PERIOD * np.arange(steps + 1)[:, None, None]
    return 0.15 * np.sin(2 * np.pi * t / 0.6 + phase) * np.minimum(1.0, t / 0.1)


def test_each_robot_follows_its_own_simulator(six_bar):
    model, X = six_bar
    variants = [model, variant_model(model, ["friction", "stiffness"], [0.3, 1.2]),
                variant_model(model, ["damping_scale", "friction"], [0.5, 1.0])]
    batch = BatchSimulator(model, len(variants))
    for i, v in enumerate(variants):
        batch.set_model(i, v)
        batch.reset(i, X)
    steps = 12
    u = gait(model, len(variants), steps)
    switches = 0
    for k in range(steps):
        assert not batch.advance(PERIOD, u[k], u[k + 1]).any()
        switches += int(batch.stats[:, 6].sum())
    for i, v in enumerate(variants):
        sim = Simulator(v, integrator="rk4", dt=1e-3)
        sim.reset(X)
        for k in range(steps):
            sim.set_inputs(table([sim.t, sim.t + PERIOD], [u[k, i], u[k + 1, i]]))
            sim.advance(PERIOD)
        assert np.abs(sim.positions - batch.positions[i]).max() <= SAME_ARITHMETIC
        assert np.abs(sim.velocities - batch.velocities[i]).max() <= SAME_ARITHMETIC
        assert sim.t == pytest.approx(batch.t[i], abs=1e-15)
        touching = np.linalg.norm(sim.contacts().force, axis=1).sum()
        assert batch.contact_forces()[i].sum() == pytest.approx(touching, rel=SAME_ARITHMETIC)
    # the run is not trivial: contacts and strings switched inside steps, and the variants moved apart
    assert switches > 0
    assert np.abs(batch.positions[0] - batch.positions[1]).max() > 1e-4


def test_constrained_manipulator_robots_follow_their_simulators(manipulator):
    """The manipulator: fixed base, plates as linear constraints (virtual nodes), composite strings."""
    variants = [variant_model(manipulator, ["stiffness"], [0.8]), variant_model(manipulator, ["damping_scale"], [2.0])]
    batch = BatchSimulator(manipulator, 2)
    for i, v in enumerate(variants):
        batch.set_model(i, v)
        batch.reset(i)
    u = np.clip(0.2 * gait(manipulator, 2, 8), manipulator.u_limits[:, 0], manipulator.u_limits[:, 1])
    for k in range(8):
        assert not batch.advance(PERIOD, u[k], u[k + 1]).any()
    for i, v in enumerate(variants):
        sim = Simulator(v, integrator="rk4", dt=1e-3)
        for k in range(8):
            sim.set_inputs(table([sim.t, sim.t + PERIOD], [u[k, i], u[k + 1, i]]))
            sim.advance(PERIOD)
        assert np.abs(sim.positions - batch.positions[i]).max() <= SAME_ARITHMETIC
    assert np.abs(batch.positions[0] - manipulator.positions).max() > 1e-4      # it moved


def test_contact_forces_carry_the_weight_at_rest(six_bar):
    """Standing still, the per-node contact forces carry the robot's weight: their vertical parts add up to it
    and the horizontal friction parts holding the splayed bars add a little (|F| = F_n √(1 + (F_t/F_n)²):
    0.4 % here), never more than μ allows."""
    model, X = six_bar
    batch = BatchSimulator(model, 2)
    for i in range(2):
        batch.reset(i, X)
    u = np.zeros((2, len(model.actuator_names)))
    for _ in range(10):
        batch.advance(PERIOD, u, u)
    weight = 9.81 * model.total_mass()
    f = batch.contact_forces()
    mu = model.obstacles[0].friction
    assert (f.sum(axis=1) >= weight * (1 - 1e-3)).all()                  # settled: accelerations ~0 (0.1 %)
    assert (f.sum(axis=1) <= weight * np.sqrt(1 + mu ** 2)).all()
    assert (f > 0).sum(axis=1).min() >= 3                      # it stands on a string triangle


def test_other_structure_is_refused(six_bar, manipulator):
    batch = BatchSimulator(six_bar[0], 1)
    with pytest.raises(ValueError, match="another structure"):
        batch.set_model(0, manipulator)
