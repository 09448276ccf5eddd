"""The rolling planner on motion-capture-like measurements (locomotion.mocap_noise, roll(mocap=...)): 2 mm noise,
5 % occluded frames, 10 ms latency. Told the noise (RollingController(noise=...)) it rolls as on exact positions;
judging stillness by differenced speeds it never starts (noise 2 mm over 20 ms is ~0.14 m/s, above ``still``)."""
import numpy as np
import pytest

from tensegrity_engine.generators import superball, verify_template
from tensegrity_engine.locomotion import RollingController
from tensegrity_engine.locomotion.closed_loop import at_rest, roll
from tensegrity_engine.locomotion.mocap_noise import MocapNoise

MOTOR_SPEED = 0.045      # m/s: the simulator node's motors on the superball's spools
# the planner simulates tips from the noisy positions: ground nodes a few mm deep are pushed out, with this
# warning (documented in learning.md), expected here
pytestmark = pytest.mark.filterwarnings("ignore:.*deep inside the obstacle:UserWarning")


@pytest.fixture(scope="module")
def six():
    model, _ = verify_template(superball(friction=0.8), min_tension=100.0)
    return model, at_rest(model)


def test_mocap_noise_draws_what_it_says():
    X = np.zeros((12, 3))
    m = MocapNoise(0.002, 0.05, 0.01, seed=0)
    frames = np.array([m.measure(X) for _ in range(4000)])
    hidden = np.isnan(frames).any(axis=2)
    occluded = hidden.any(axis=1).mean()
    assert abs(occluded - 0.05) < 0.015                          # 4000 frames: sd of the fraction 0.0034
    assert abs(np.nanstd(frames) - 0.002) < 0.0001
    assert m.ticks(50.0) == 1 and MocapNoise(latency=0.02).ticks(50.0) == 1 and MocapNoise(latency=0.03).ticks(50) == 2
    with pytest.raises(ValueError, match="MocapNoise"):
        MocapNoise(sigma=-1.0)


def test_the_planner_told_the_noise_rolls_on_mocap_measurements(six):
    model, X = six
    ctl = RollingController(model, noise=0.002)
    ctl.set_heading(0.0)
    run = roll(ctl, X, 20.0, faces=1, motor_speed=MOTOR_SPEED, mocap=MocapNoise(seed=1))
    assert run.faces_changed == 1 and run.status["state"] != "error", run.status
    assert run.displacement[0] > 0.2                             # m: a tip of the 1.5 m six-bar moves ~0.4 m


def test_without_the_noise_option_noisy_speeds_keep_the_planner_from_starting(six):
    model, X = six
    ctl = RollingController(model)
    ctl.set_heading(0.0)
    run = roll(ctl, X, 3.0, motor_speed=MOTOR_SPEED, mocap=MocapNoise(seed=1))
    assert run.faces_changed == 0 and ctl.status["state"] == "idle" and ctl.step is None
