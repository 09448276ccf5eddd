"""Shifted sinusoid schedules and exact input bounds (used by the ROS simulator node for live experiments)."""
import numpy as np


def test_sinusoid_start_shifts_time_and_holds_offset_before():
    from tensegrity_engine.inputs import sinusoid
    base = sinusoid([0.01, 0.02], [0.3, -1.0], 7.0, offsets=[0.001, -0.002], ramp=1.0)
    shifted = sinusoid([0.01, 0.02], [0.3, -1.0], 7.0, offsets=[0.001, -0.002], ramp=1.0, start=123.4)
    for tau in (0.0, 0.3, 0.99, 2.5, 9.0):
        u0, ud0 = base(tau)
        u1, ud1 = shifted(123.4 + tau)
        # same expression evaluated at shifted arguments: only rounding of t - start differs
        assert np.allclose(u0, u1, atol=1e-14) and np.allclose(ud0, ud1, atol=1e-12)
    u, ud = shifted(100.0)
    assert np.array_equal(u, [0.001, -0.002]) and np.array_equal(ud, [0.0, 0.0])


def test_bounds_are_exact_for_sinusoids_and_tables():
    from tensegrity_engine.inputs import sinusoid, table
    s = sinusoid([0.01, -0.02], [0.0, 1.0], 7.0, offsets=[0.005, 0.0], start=50.0)
    lo, hi = s.bounds(1000.0)
    assert np.allclose(lo, [-0.005, -0.02]) and np.allclose(hi, [0.015, 0.02])
    lo, hi = s.bounds(10.0)                      # before start: the offsets only
    assert np.allclose(lo, [0.005, 0.0]) and np.allclose(hi, [0.005, 0.0])
    tab = table([1.0, 2.0, 3.0], [[0.0], [0.03], [-0.01]])
    assert np.allclose(tab.bounds(10.0), ([-0.01], [0.03]))
    assert np.allclose(tab.bounds(1.5), ([0.0], [0.015]))   # linear interpolation at the end of the window
