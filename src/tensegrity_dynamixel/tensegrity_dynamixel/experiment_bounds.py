"""Plausibility bounds of the driver's experiment (the paper's sinusoids, one amplitude per stage of three
motors) from the motors' travel and speed limits: checked at start-up and on every run-time change.

Motor i follows u = offset + s(τ) A sin(ωτ + φ) with the ramp s(τ) = (1 - cos(πτ/ramp)) / 2 over the first
``ramp`` seconds (:func:`tensegrity_engine.dynamics.inputs.sinusoid`), i.e. the angle amplitude A / r
(r: spool radius). Bounds: the swing 2 A / r fits the motor's travel [min_angle, max_angle]; the peak angle
rate (A / r) max_τ |d/dτ [s sin(ωτ + φ)]| (with the motor's phase φ) stays within the motor's speed limit
(``profile_velocity``, or the servo's no-load speed where that is 0), so the servo can follow the goals;
the ramp is > 0 (no step in speed at the start).
"""
from __future__ import annotations

import math

import numpy as np

RAMP_SAMPLES = 20001    # points over the ramp (and at most 10 per period in it): the sampled peak of the smooth
                        # rate is within ~1e-4 of the true one


def peak_rate_factor(period: float, ramp: float, phase: float) -> float:
    """max over τ of |d/dτ [s(τ) sin(ωτ + φ)]| [1/s], ω = 2π / period: during the ramp, or ω after it."""
    omega = 2.0 * math.pi / period
    tau = np.linspace(0.0, ramp, max(RAMP_SAMPLES, min(int(10 * ramp / period), 10**6)))
    x = math.pi * tau / ramp
    rate = 0.5 * math.pi / ramp * np.sin(x) * np.sin(omega * tau + phase) \
        + 0.5 * (1.0 - np.cos(x)) * omega * np.cos(omega * tau + phase)
    return max(float(np.max(np.abs(rate))), omega)


def speed_limit(motor) -> float:
    """The motor's speed limit [rad/s]: its profile velocity, or the servo's no-load speed if that is 0."""
    if motor.profile_velocity > 0:
        return motor.profile_velocity
    return motor.model.max_speed_rpm * 2.0 * math.pi / 60.0


def experiment_problem(motors, amplitudes, period: float, ramp: float, phases) -> str:
    """Why the experiment (``amplitudes`` [m] one per stage, ``period`` [s], ``ramp`` [s], ``phases`` [rad]
    one per motor of a stage) cannot run on ``motors`` (MotorConfig, one stage after the other), or '' if
    it can."""
    if not (math.isfinite(ramp) and ramp > 0):
        return f"parameter 'experiment.ramp' must be > 0 s (a smooth start), got {ramp!r}"
    if not (math.isfinite(period) and period > 0):
        return f"parameter 'experiment.period' must be > 0 s, got {period!r}"
    factors = [peak_rate_factor(period, ramp, phase) for phase in phases]
    for i, m in enumerate(motors):
        a = abs(float(amplitudes[i // len(phases)]))
        angle = a / m.spool_radius
        half_travel = 0.5 * (m.max_angle - m.min_angle)
        if angle > half_travel:
            return (f"parameter 'experiment.amplitudes': {a:g} m is {angle:.3g} rad on motor {m.name} (spool "
                    f"radius {m.spool_radius:g} m), more than half its travel [{m.min_angle:g}, {m.max_angle:g}] "
                    f"rad: at most {half_travel * m.spool_radius:.4g} m")
        rate, limit = angle * factors[i % len(phases)], speed_limit(m)
        if rate > limit:
            return (f"parameter 'experiment.period' {period:g} s (ramp {ramp:g} s) with amplitude {a:g} m drives "
                    f"motor {m.name} at up to {rate:.3g} rad/s, faster than its speed limit {limit:.3g} rad/s: "
                    f"a longer period or ramp, or a smaller amplitude")
    return ""
