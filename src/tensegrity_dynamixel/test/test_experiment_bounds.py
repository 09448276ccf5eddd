"""Issue 33 #10: the driver's experiment is bounded by the motors' travel and speed (experiment_bounds), at
start-up as at run time (test_live_parameters); the bound is the schedule's true peak rate."""
import math

import numpy as np
import pytest

from tensegrity_dynamixel.control_tables import motor_model
from tensegrity_dynamixel.driver import ConfigError, MotorConfig
from tensegrity_dynamixel.experiment_bounds import experiment_problem, peak_rate_factor
from tensegrity_engine.dynamics.inputs import PAPER_PHASES, sinusoid

# the manipulator's motors as config/dynamixel_driver.yaml sets them
MOTORS = [MotorConfig(f"m{i + 1}", i + 1, motor_model("L54-50-S290-R" if i < 3 else "M42-10-S260-R"),
                      0.02 if i < 3 else 0.015, 1.0, 0.0, -2.5, 2.5, 3.0) for i in range(6)]
PAPER = ([0.0363, 0.0168], 7.0, 1.0)


def test_the_paper_experiment_passes():
    assert experiment_problem(MOTORS, *PAPER, PAPER_PHASES) == ""


@pytest.mark.parametrize("amps, period, ramp, words", [
    ([1.0, 1.0], 7.0, 1.0, "'experiment.amplitudes': 1 m is 50 rad on motor m1"),
    ([0.0363, 0.0168], 1e-9, 1.0, "'experiment.period' 1e-09 s"),
    ([0.0363, 0.0168], 7.0, 0.0, "'experiment.ramp' must be > 0"),
    ([0.0363, 0.0168], 7.0, 0.2, "faster than its speed limit 3 rad/s"),      # the ramp alone too quick
    ([0.0363, 0.0168], 3.0, 1.0, "motor m1 at up to"),
    ([0.0363, 0.04], 7.0, 1.0, "more than half its travel"),                     # stage 2: 2.67 rad > 2.5
])
def test_implausible_experiments_are_refused_naming_the_limit(amps, period, ramp, words):
    assert words in experiment_problem(MOTORS, amps, period, ramp, PAPER_PHASES)


@pytest.mark.parametrize("period, ramp", [(7.0, 1.0), (5.0, 1.0), (2.0, 0.3), (20.0, 5.0)])
def test_the_peak_rate_is_the_schedules(period, ramp):
    """Against the engine's own schedule (u̇ sampled every 1 ms over the ramp and a period after it):
    the bound is the true peak within 1e-3 (both sample a smooth rate)."""
    for phase in PAPER_PHASES:
        sched = sinusoid([1.0], [phase], period, ramp=ramp)
        t = np.arange(0.0, ramp + period, 1e-3)     # peak within ~(10 rad/s x 1 ms)^2 / 8 = 1e-5
        _, rate = sched(t)
        true = float(np.max(np.abs(rate)))
        assert peak_rate_factor(period, ramp, phase) == pytest.approx(true, rel=1e-3)


def test_the_driver_refuses_to_start_with_an_implausible_experiment():
    import rclpy
    from tensegrity_dynamixel.driver_node import DynamixelDriver
    from tensegrity_ros_common.domains import claim_domain
    ctx = rclpy.Context()
    rclpy.init(args=[], context=ctx, domain_id=claim_domain())
    try:
        with pytest.raises(ConfigError, match=r"'experiment.amplitudes': 1 m is 50 rad on motor m1"):
            DynamixelDriver(context=ctx, cli_args=["--ros-args", "-p", "experiment.amplitudes:=[1.0, 1.0]",
                                                   "-p", "autostart:=false"])
    finally:
        rclpy.shutdown(context=ctx)


def test_speed_limit_zero_is_the_servos_no_load_speed():
    fast = [MotorConfig(m.name, m.id, m.model, m.spool_radius, 1.0, 0.0, -2.5, 2.5, 0.0) for m in MOTORS]
    assert experiment_problem(MOTORS, [0.0363, 0.0168], 3.0, 1.0, PAPER_PHASES)
    # L54-50-S290-R: 26 rev/min = 2.72 rad/s < 3.0; so 3 s is still too quick
    assert "2.72 rad/s" in experiment_problem(fast, [0.0363, 0.0168], 3.0, 1.0, PAPER_PHASES)
    assert math.isclose(26 * 2 * math.pi / 60, 2.7227, rel_tol=1e-4)
