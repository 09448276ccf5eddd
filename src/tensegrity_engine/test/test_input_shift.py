"""Shifted sinusoid schedules and exact input bounds (used by the ROS simulator node for live experiments)."""
import numpy as np


def test_sinusoid_start_shifts_time_and_holds_offset_before():
    from tensegrity_engine.dynamics.inputs import sinusoid
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
    from tensegrity_engine.dynamics.inputs import sinusoid, table
    s = sinusoid([0.01, -0.02], [0.0, 1.0], 7.0, offsets=[0.005, 0.0], start=50.0)
    lo, hi = s.bounds(1000.0)
    assert np.allclose(lo, [-0.005, -0.02]) and np.allclose(hi, [0.015, 0.02])
    lo, hi = s.bounds(10.0)                      # before start: the offsets only
    assert np.allclose(lo, [0.005, 0.0]) and np.allclose(hi, [0.005, 0.0])
    tab = table([1.0, 2.0, 3.0], [[0.0], [0.03], [-0.01]])
    assert np.allclose(tab.bounds(10.0), ([-0.01], [0.03]))
    assert np.allclose(tab.bounds(1.5), ([0.0], [0.015]))   # linear interpolation at the end of the window


def test_unramped_sinusoid_holds_offset_before_start_and_bounds_cover_it():
    """Issue 22 #4: with ramp = 0 and start > 0, u before start was the sinusoid extrapolated to negative τ
    (u(0.2) = -0.0098 m) while bounds() reported the offset alone, so those values skipped the limit check."""
    from tensegrity_engine.dynamics.inputs import sinusoid
    s = sinusoid([0.01, 0.02], [-1.3, 2.0], 2.0, offsets=[0.002, -0.001], ramp=0.0, start=0.5)
    for t in (0.0, 0.2, 0.4, 0.4999):
        u, ud = s(t)
        assert np.array_equal(u, [0.002, -0.001]) and np.array_equal(ud, [0.0, 0.0])
    u, _ = s(0.5)                                 # at start the unramped oscillation begins at once
    assert np.allclose(u, [0.002 + 0.01 * np.sin(-1.3), -0.001 + 0.02 * np.sin(2.0)], atol=1e-15)
    for ramp in (0.0, 0.3, 1.0):
        for start in (0.0, 0.5, 3.0):
            sched = sinusoid([0.01, -0.02], [-1.3, 0.4], 2.0, offsets=[0.002, 0.0], ramp=ramp, start=start)
            for t_end in (0.2, 0.4, 0.6, 2.0, 7.0):
                lo, hi = sched.bounds(t_end)
                u, _ = sched(np.linspace(0.0, t_end, 2001))
                assert np.all(u >= lo - 1e-15) and np.all(u <= hi + 1e-15), (ramp, start, t_end)


def _delayed(sched, t, delay):
    from tensegrity_engine.dynamics.kernels import eval_inputs
    d = np.full(sched.n_actuators, float(delay))
    d.flags.writeable = False
    u, ud = np.zeros(sched.n_actuators), np.zeros(sched.n_actuators)
    eval_inputs(float(t), sched.params, u, ud, d)
    return u, ud


def test_delayed_actuator_holds_the_t0_value_until_its_first_command():
    """Issue 22 #4: a delayed actuator read u(t - delay) at negative time, i.e. the unramped sinusoid (or a
    table's samples) before t = 0, values no bounds() check saw; it now holds u(0) with rate 0 until t = delay."""
    from tensegrity_engine.dynamics.inputs import sinusoid, table
    s = sinusoid([0.01], [-1.3], 2.0, offsets=[0.002], ramp=0.0)
    u0, _ = s(0.0)
    lo, hi = s.bounds(1.0)
    for t in (0.0, 0.05, 0.0999):
        u, ud = _delayed(s, t, 0.1)
        assert np.array_equal(u, u0) and np.array_equal(ud, [0.0])
        assert lo[0] <= u[0] <= hi[0]
    u, ud = _delayed(s, 0.35, 0.1)                 # after the delay: the schedule shifted by it
    ur, udr = s(0.25)
    assert np.allclose(u, ur, atol=1e-15) and np.allclose(ud, udr, atol=1e-14)
    tab = table([-1.0, 0.0, 1.0], [[0.05], [0.0], [0.01]])      # samples before t = 0 are never read
    lo, hi = tab.bounds(1.0)
    for t in (0.0, 0.2, 0.49):
        u, ud = _delayed(tab, t, 0.5)
        assert u[0] == 0.0 and ud[0] == 0.0 and lo[0] <= u[0] <= hi[0]


def test_simulated_delayed_actuators_start_from_the_t0_command():
    """The kernels' view (issue 22 #4): a manipulator with 50 ms actuator delay under an unramped sinusoid
    records u(0) until t = delay, then u(t - delay) — never the sinusoid extrapolated to negative time."""
    from dataclasses import replace
    from tensegrity_engine.dynamics.inputs import sinusoid
    from tensegrity_engine.model.build import build_model
    from tensegrity_engine.model.load import load_model
    from tensegrity_engine.dynamics.simulator import Simulator
    manip = load_model("stacked_manipulator")
    d = 0.05
    late = build_model(replace(manip.spec, actuators=tuple(replace(a, delay=d) for a in manip.spec.actuators)))
    sched = sinusoid([0.004] * 6, list(np.linspace(0, 2, 6)), 1.0, ramp=0.0)
    traj = Simulator(late, rtol=1e-8, atol=1e-10).run(0.2, inputs=sched, rate=100)
    t, u = np.asarray(traj.t), np.asarray(traj.inputs)
    early = t < d - 1e-9
    assert early.sum() >= 4
    assert np.allclose(u[early], sched(0.0)[0], atol=1e-15, rtol=0)
    assert np.allclose(u[~early], sched(t[~early] - d)[0], atol=1e-12, rtol=0)
