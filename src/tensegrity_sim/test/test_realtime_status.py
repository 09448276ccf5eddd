"""Real-time status: OK / WARN / ERROR from the measured lag, overruns and skipped simulated time, with figures."""
import pytest

from tensegrity_sim.pacer import RealTimePacer
from tensegrity_sim.realtime_status import ERROR, OK, WARN, RealTimeStatus

DT = 1e-3                      # 1 kHz physics
TICK = 0.01                    # 100 Hz ticks


def run(pacer, status, t0, t1, stall_at=None, stall=0.0):
    """Ticks of a paced simulation from wall time t0 to t1 [s], each tick's lag recorded; the process stalls
    ``stall`` seconds at ``stall_at``. Returns the wall time reached."""
    wall = t0
    while wall < t1 - 1e-9:
        wall += TICK
        if stall_at is not None and abs(wall - stall_at) < TICK / 2:
            wall += stall
        pacer.done(pacer.steps_due(wall))
        status.record_lag(pacer.last_lag)
    return wall


def windows(pacer, status, t0, seconds, **stall):
    """One diagnostics window per wall second: the verdicts."""
    out = []
    for k in range(seconds):
        wall = run(pacer, status, t0 + k, t0 + k + 1, **stall)
        out.append(status.assess(wall, pacer.overruns, pacer.skipped_steps, pacer.steps, pacer.lag(wall)))
    return out


def fresh():
    p = RealTimePacer(dt=DT, max_lag=0.1)
    p.start(0.0)
    return p, RealTimeStatus(DT, TICK, wall_start=0.0)


def test_a_run_that_keeps_up_is_ok_with_its_lag():
    p, s = fresh()
    v = windows(p, s, 0.0, 3)[-1]
    assert v.level == OK
    assert v.message == "running in real time"       # steady: the figures are in the values
    assert v.values["overruns_in_window"] == 0 and v.values["skipped_sim_time_recent_s"] == 0.0
    assert v.values["realtime_lag_max_ms"] == pytest.approx(10.0)              # one tick owed


def test_an_overrun_keeps_the_status_warn_for_the_recent_history_then_ok_naming_the_totals():
    """The old status warned only in the window where the overrun count grew: the next second said
    'running in real time' with the overrun and the skipped time still in its values."""
    p, s = fresh()
    verdicts = windows(p, s, 0.0, 14, stall_at=2.5, stall=0.3)       # a 0.3 s stall once, at 2.5 s
    assert p.overruns == 1 and p.skipped_steps == 300 + 10 - 100     # owed 310 steps, 100 taken at once
    assert [v.level for v in verdicts[:2]] == [OK, OK]
    after = verdicts[2:12]                       # assessed at 3 s ... 12 s (the stall at 2.5 s)
    first = after[0]                             # its tick owed 310 ms of physics
    assert first.level == ERROR
    assert first.message == ("far behind real time: 1 overruns, 0.21 s of simulated time skipped (2%) in the "
                             "last 3 s, lag 310 ms")                     # 0.21 s of the 10 s history
    assert all(v.level == WARN for v in after[1:]), [v.message for v in after]
    assert after[1].message.startswith("behind real time: 1 overruns, 0.21 s of simulated time skipped (")
    assert first.values["overruns_in_window"] == 1
    assert first.values["skipped_sim_time_in_window_s"] == pytest.approx(0.21)
    assert after[-1].values["overruns_in_window"] == 0 and after[-1].values["overruns_recent"] == 1
    last = verdicts[-1]                          # over 10 s after the stall
    assert last.level == OK
    assert last.message == ("running in real time (no overrun in the last 10 s; 1 overruns, 0.21 s skipped "
                            "since the start)")


def test_lag_without_overruns_warns_then_errors():
    for lag, level in [(0.049, OK), (0.05, WARN), (0.249, WARN), (0.25, ERROR)]:
        s = RealTimeStatus(DT, TICK)
        s.record_lag(lag)
        v = s.assess(1.0, 0, 0, 1000)
        assert v.level == level, (lag, v.message)
        assert f"lag {1e3 * lag:.0f} ms" in (v.message if level != OK else v.figures)
        assert v.values["realtime_lag_max_ms"] == pytest.approx(1e3 * lag)


def test_a_stalled_tick_is_seen_in_the_lag_at_the_diagnostics_instant():
    s = RealTimeStatus(DT, TICK)
    s.record_lag(0.01)
    v = s.assess(1.0, 0, 0, 1000, lag_now=0.4)                 # no tick ran for 0.4 s
    assert v.level == ERROR and v.message.startswith("far behind real time:") and "lag 400 ms" in v.message


def test_skipping_more_than_a_tenth_of_the_simulated_time_recently_is_an_error():
    s = RealTimeStatus(DT, TICK)
    s.assess(0.0, 0, 0, 0)
    assert s.assess(10.0, 3, 1000, 10_000).level == WARN        # exactly 10 % skipped
    s = RealTimeStatus(DT, TICK)
    s.assess(0.0, 0, 0, 0)
    v = s.assess(10.0, 46, 1001, 10_000)
    assert v.level == ERROR
    assert v.message == "far behind real time: 46 overruns, 1 s of simulated time skipped (10%) in the last 10 s, lag 0 ms"
    assert v.values["skipped_fraction_recent"] == pytest.approx(0.1001)


def test_an_overrun_in_the_first_second_is_a_warning_not_an_error():
    """The skipped fraction is over the whole history also while the run is younger: 0.2 s skipped in the
    first second is 2 % of 10 s (it read 20 %, ERROR, until the history filled)."""
    s = RealTimeStatus(DT, TICK)
    s.assess(0.0, 0, 0, 0)
    v = s.assess(1.0, 1, 200, 1000)
    assert v.level == WARN, v.message
    assert v.values["skipped_fraction_recent"] == pytest.approx(0.02)


def test_slow_ticks_raise_the_lag_thresholds_to_whole_tick_periods():
    """At 10 Hz ticks each tick owes 100 ms of physics: normal, not a warning."""
    s = RealTimeStatus(DT, 0.1)
    s.record_lag(0.1)
    assert s.assess(1.0, 0, 0, 1000).level == OK
    assert s.warn_lag == pytest.approx(0.2) and s.error_lag == pytest.approx(0.5)


def test_a_restarted_pacer_counts_from_zero():
    """~/reset restarts the pacer's step count: the owed steps go down; no negative figures."""
    s = RealTimeStatus(DT, TICK)
    s.assess(0.0, 0, 0, 5000)
    v = s.assess(1.0, 0, 0, 800)
    assert v.level == OK and v.values["skipped_fraction_recent"] == 0.0
