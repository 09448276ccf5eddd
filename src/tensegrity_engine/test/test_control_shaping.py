"""Input shaping from the plate's modes (control/shaping.py) and the bounded feedback correction
(control/feed_forward.py) on the stacked manipulator."""
from __future__ import annotations

import numpy as np
import pytest

from control_cases import FRAME, reachable_targets, unreachable_goals
from tensegrity_engine.control import PoseController
from tensegrity_engine.control.pose import moved_pose
from tensegrity_engine.control.shaping import InputShaper, convolve, plate_modes, shaper_for, zvd
from tensegrity_engine.control.static_map import initial_state, rest_lengths, settle_inputs
from tensegrity_engine.statics.modal import linearise


def _residual(shaper, frequency_hz, zeta, error=0.0):
    """Ringing of a mode (frequency_hz (1 + error), zeta) after the shaper's impulses, relative to one unit
    impulse: |Σ w_i exp((ζω + iω_d) t_i)|."""
    w = 2 * np.pi * frequency_hz * (1 + error)
    s = zeta * w + 1j * w * np.sqrt(1 - zeta ** 2)
    return abs(np.sum(shaper[1] * np.exp(s * shaper[0])))


def test_zvd_cancels_its_mode_and_tolerates_a_frequency_error():
    shaper = zvd(1.5, 0.002)
    assert shaper[1].sum() == pytest.approx(1.0) and np.all(shaper[1] > 0)
    assert _residual(shaper, 1.5, 0.002) < 1e-12
    # ZVD: residual (pi/2 * error)^2 to leading order: 0.6 % at 5 %, 2.4 % at 10 % off
    assert _residual(shaper, 1.5, 0.002, 0.05) == pytest.approx((np.pi / 2 * 0.05) ** 2, rel=0.1)
    both = convolve(shaper, zvd(4.2, 0.01))
    assert _residual(both, 1.5, 0.002) < 1e-12 and _residual(both, 4.2, 0.01) < 1e-12
    assert np.all(np.diff(both[0]) >= 0) and both[1].sum() == pytest.approx(1.0)


def test_the_plate_modes_come_from_the_linearised_dynamics(manipulator):
    """The lowest elastic mode: 1.48 Hz, its damping ratio as the state matrix's eigenvalue gives it; it
    carries the largest ringing, so it is shaped, and the shaper cancels it."""
    state = initial_state(manipulator)
    modes = plate_modes(manipulator, FRAME, state)
    lin = linearise(manipulator, state.X, rest_lengths(manipulator, state.u))
    lam = np.linalg.eigvals(lin.A)
    lam = lam[lam.imag > 1e-6]
    lowest = lam[np.argmin(np.abs(lam))]
    assert modes[0].frequency_hz == pytest.approx(abs(lowest) / (2 * np.pi), rel=1e-3)
    assert modes[0].damping_ratio == pytest.approx(-lowest.real / abs(lowest), rel=1e-2)
    assert 1.4 < modes[0].frequency_hz < 1.6 and modes[0].damping_ratio < 0.005
    assert modes[0].ringing_position == max(m.ringing_position for m in modes)
    shaper = shaper_for(modes, 0.01, 1e-3, np.radians(0.2))
    assert _residual(shaper, modes[0].frequency_hz, modes[0].damping_ratio) < 1e-9


def test_the_shaped_command_is_an_average_of_past_commands():
    shaper = InputShaper(zvd(1.0, 0.0))                   # impulses 1/4, 1/2, 1/4 at 0, 0.5, 1 s
    out = [shaper(t, [0.0 if t < 0.1 else 1.0]) for t in np.arange(0.0, 2.0, 0.1)]
    out = np.array(out)[:, 0]
    assert np.all(np.diff(out) >= 0) and out.min() >= 0 and out.max() <= 1
    assert out[1] == pytest.approx(0.25) and out[6] == pytest.approx(0.75) and out[11] == pytest.approx(1.0)
    assert shaper.delay == pytest.approx(0.5) and shaper.duration == pytest.approx(1.0)


def test_the_feedback_never_asks_for_inputs_beyond_the_limits(manipulator):
    """At the nearest pose of an unreachable goal (actuators at their limits), corrections for random
    measured poses stay within the limits; those pushing a saturated actuator further leave it there."""
    c = PoseController(manipulator, FRAME)
    c.set_goal(unreachable_goals(manipulator, 1, seed=32)[0])
    c.update(0.0)
    ff = c._ff
    lo, hi = manipulator.u_limits.T
    at_limit = (ff.u <= lo + 1e-9) | (ff.u >= hi - 1e-9)
    assert at_limit.sum() >= 2
    rng = np.random.default_rng(4)
    for _ in range(20):
        measured = moved_pose(ff.promised, np.r_[rng.normal(0, 3e-3, 3), rng.normal(0, 0.02, 3)])
        wanted = ff.wanted(measured, ff.u, ff.u)
        assert np.all(wanted >= lo - 1e-12) and np.all(wanted <= hi + 1e-12)
    # the measured pose where the model puts the plate for inputs beyond the limits: wanted holds those there
    push = np.where(ff.u >= hi - 1e-9, 1.0, np.where(ff.u <= lo + 1e-9, -1.0, 0.0)) * 0.002
    measured = moved_pose(ff.promised, -ff.lin.jacobian @ push)
    wanted = ff.wanted(measured, ff.u, ff.u)
    assert np.allclose(wanted[at_limit], ff.u[at_limit], atol=1e-12)


def test_the_feedback_asks_nothing_along_the_yaw_no_input_moves(manipulator):
    """C2's yaw is all but out of the inputs' reach (the weakest pose axis, ~0.99 yaw, has a singular value
    ~5e-4 of the largest: 0.1 deg would need ~0.3 m of input). A measured error of 0.2 deg along it asks for
    no input change (before: the damped inverse, whose gain there is not zero, asked for 0.15 mm, which the
    integral wound up as long as the error stayed); a tilt still asks for one."""
    _, targets = reachable_targets(manipulator, 1, seed=31, fraction=0.3)
    c = PoseController(manipulator, FRAME)
    c.set_goal(targets[0])
    c.update(0.0)
    ff = c._ff
    U, s, _ = np.linalg.svd(ff.weights[:, None] * ff.lin.jacobian)
    assert s[-1] < 1e-3 * s[0] and abs(U[5, -1]) > 0.98 and s[-2] > 0.05 * s[0]
    weak = U[:, -1] / ff.weights
    weak *= np.radians(0.2) / np.linalg.norm(weak[3:])
    asked = ff.wanted(moved_pose(ff.promised, weak), ff.u, ff.u) - ff.u
    assert np.abs(asked).max() < 1e-9                                       # m
    tilted = moved_pose(ff.promised, np.r_[0.0, 0.0, 0.0, np.radians(0.2), 0.0, 0.0])
    assert np.abs(ff.wanted(tilted, ff.u, ff.u) - ff.u).max() > 1e-4


def test_the_feedback_linearises_at_the_inputs_it_aims_at(manipulator):
    """The feedback's Jacobian is the model's at the inputs aimed at: re-linearised once they are more than
    FEEDBACK_STEP from where it was; at the feed-forward's own inputs it is the feed-forward's."""
    _, targets = reachable_targets(manipulator, 1, seed=31, fraction=0.3)
    c = PoseController(manipulator, FRAME)
    c.set_goal(targets[0])
    c.update(0.0)
    ff = c._ff
    ff.aim(ff.u)
    assert ff.feedback is ff.lin
    aimed = ff.u - np.r_[0.02, 0.02, 0.02, 0.0, 0.0, 0.0]              # 20 mm more reel-out of the lower stage
    ff.aim(aimed)
    assert np.allclose(ff.feedback.state.u, aimed) and not np.allclose(ff.feedback.jacobian, ff.lin.jacobian)
    expected = settle_inputs(manipulator, aimed, ff.lin.state)
    assert np.abs(ff.feedback.state.X - expected.X).max() < 1e-9
    kept = ff.feedback
    ff.aim(aimed + 1e-3)
    assert ff.feedback is kept
