"""Real-time pacing: no drift from the wall clock, bounded catch-up with counted overruns, pause rebase."""
import numpy as np
import pytest

from tensegrity_sim.pacer import RealTimePacer


def test_no_drift_over_an_hour_of_jittered_ticks():
    rng = np.random.default_rng(1)
    p = RealTimePacer(dt=1e-3)
    p.start(100.0)
    wall = 100.0
    for _ in range(360_000):                        # 1 h of 10 ms ticks with +-3 ms timer jitter
        wall += 0.01 + rng.uniform(-0.003, 0.003)
        p.done(p.steps_due(wall))
    # simulated time trails the wall clock by less than one physics step: the count is taken from a fixed
    # origin, so tick jitter and float rounding never accumulate
    assert 0.0 <= p.lag(wall) < 1e-3
    assert p.overruns == 0


def test_overrun_skips_ahead_and_is_counted():
    p = RealTimePacer(dt=1e-3, max_lag=0.1)
    p.start(0.0)
    p.done(p.steps_due(0.01))
    due = p.steps_due(2.0)                           # the process stalled for ~2 s
    assert due == 100                                # at most max_lag worth of physics at once
    p.done(due)
    assert p.overruns == 1 and p.skipped_steps == 2000 - 10 - 100
    assert p.lag(2.0) == pytest.approx(0.0, abs=1e-9)


def test_real_time_factor_and_rebase_after_pause():
    p = RealTimePacer(dt=1e-3, real_time_factor=2.0)
    p.start(0.0)
    p.done(p.steps_due(0.01), 20 * 3e-6)             # first batch measures the cost per step (3 us)
    n = p.steps_due(1.0)                             # 0.99 s of wall time owed: more than max_lag
    p.done(n, n * 3e-6)
    assert n == 200 and p.overruns == 1              # max_lag x rtf / dt
    assert p.steps == 2000                           # 2 simulated seconds per wall second
    p.rebase(50.0)                                   # resumed after a 49 s pause: nothing is owed
    assert p.steps_due(50.0) == 0
    assert p.steps_due(50.05) == 100                 # 0.05 wall s x 2 / 1 ms


@pytest.mark.parametrize("kw", [{"dt": 0.0}, {"dt": 1e-3, "real_time_factor": -1}, {"dt": 1e-3, "max_lag": 0}])
def test_bad_settings_raise(kw):
    with pytest.raises(ValueError):
        RealTimePacer(**kw)


def test_first_batch_is_small_until_the_cost_per_step_is_known():
    p = RealTimePacer(dt=1e-3, max_lag=10.0)
    p.start(0.0)
    assert p.steps_due(5.0) == 100                   # 5000 owed, but the cost of a step is unknown
    assert p.overruns == 1


def test_compute_budget_bounds_one_call_whatever_the_rates():
    """A physics rate far beyond what the machine computes (1 GHz) must not make one call block for
    minutes (the node could not even be stopped): steps per call are capped at max_lag of compute."""
    p = RealTimePacer(dt=1e-9, max_lag=0.1)
    p.start(0.0)
    n = p.steps_due(1e-6)                            # the first, small batch: 3 us per step
    p.done(n, n * 3e-6)
    due = p.steps_due(1.0)                           # a wall second later 1e9 steps are owed
    assert due == int(0.1 / 3e-6)                    # 0.1 s of compute at the measured cost
    assert p.overruns >= 1
    p.done(due, due * 6e-6)                          # the machine got slower: the cap follows
    assert p.steps_due(2.0) < int(0.1 / 3e-6)
