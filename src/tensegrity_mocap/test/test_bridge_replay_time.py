"""Issue #12: a Motive CSV replay keeps the capture's time. Header stamps are the frames' capture times
(``csv.stamps: capture``) or the replay's wall-clock start plus the capture time since the first frame
(``replay_start``), at any replay speed; ``/clock`` carries them; looping never makes them go back."""
import time

import numpy as np
import pytest
from geometry_msgs.msg import PoseArray
from rosgraph_msgs.msg import Clock

from bridge_harness import deep_qos, frame_of, rigid_motion, ros, spin_until, stamp_ns, write_take
from tensegrity_mocap.bridge.node import MocapBridge
from tensegrity_mocap.bridge.replay_time import ReplayTime, frame_period, seconds_to_ns, stamp_msg
from tensegrity_mocap.motive import read_motive_csv
from tensegrity_ros_common import topics
from tensegrity_ros_common.conversions import pose_array_to_positions

TOL_NS = 1000                        # 1 us: the stamps are computed from the CSV's times, not measured


# --- the arithmetic (no ROS) ----------------------------------------------------------------------------
def test_capture_stamps_are_the_capture_times_and_replay_start_keeps_their_intervals():
    t = 2.5 + np.arange(121) / 120.0
    cap = ReplayTime(t, 120.0, "capture", rate_scale=1.0)
    assert [cap.stamp_ns(x) for x in t] == [seconds_to_ns(x) for x in t]
    start = 1_700_000_000_123_456_789
    rs = ReplayTime(t, 120.0, "replay_start", rate_scale=0.0, start_ns=start)
    s = np.array([rs.stamp_ns(x) for x in t])
    assert s[0] == start and abs((s[-1] - s[0]) - seconds_to_ns(t[-1] - t[0])) <= 1
    assert np.all(np.abs(np.diff(s) - 1e9 / 120.0) <= 1)
    # pacing: rate_scale 1 is the capture's own intervals, 2 twice as fast, 0 nothing waits
    assert ReplayTime(t, 120.0, "capture", 1.0).due(t[-1]) == pytest.approx(1.0)
    assert ReplayTime(t, 120.0, "capture", 2.0).due(t[-1]) == pytest.approx(0.5)
    assert rs.due(t[-1]) == 0.0


@pytest.mark.parametrize("mode", ["capture", "replay_start"])
def test_looping_stamps_go_on_one_frame_period_after_the_last_frame(mode):
    t = np.arange(61) / 120.0                                       # a 0.5 s take
    rt = ReplayTime(t, 120.0, mode, 1.0, start_ns=10**18)
    span = 0.5 + 1 / 120.0
    assert rt.span == pytest.approx(span)
    seq = [rt.stamp_ns(x, k) for k in range(3) for x in t]
    assert np.all(np.diff(seq) > 0)                                 # never backwards, never twice
    assert np.all(np.abs(np.diff(seq) - 1e9 / 120.0) <= 2)          # the seam keeps the frame period
    assert rt.due(t[0], 2) == pytest.approx(2 * span)               # pacing goes on too


def test_frame_period_and_stamp_message():
    assert frame_period([0.0, 0.01, 0.02], 0.0) == pytest.approx(0.01)      # no rate: from the times
    assert frame_period([0.0], float("nan")) == 0.0
    assert frame_period([0.0, 1.0], 100.0) == pytest.approx(0.01)
    assert seconds_to_ns(1.008333) == 1_008_333_000
    msg = stamp_msg(12_345_678_901)
    assert (msg.sec, msg.nanosec) == (12, 345_678_901)
    with pytest.raises(ValueError, match="csv.stamps"):
        ReplayTime([0.0], 120.0, "wall")


# --- end to end (real rclpy) -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def take(tmp_path_factory):
    t, X = rigid_motion(10.0, 120.0)                              # a 10 s take, Motive's times from 0 s
    path = write_take(tmp_path_factory.mktemp("take") / "take10s.csv", t, X)
    return path, read_motive_csv(path).times, X                     # the times as written (6 decimals)


def _bridge(ctx, path, ns, *params):
    return MocapBridge(context=ctx, namespace=ns, cli_args=[
        "--ros-args", "-p", "source:=csv", "-p", f"csv.path:={path}", "-p", "raw_markers_rate:=0.0", *params])


def _matched(msgs, X, times):
    """[(stamp ns, capture time ns of the frame the message shows)] in arrival order."""
    return [(stamp_ns(m.header), seconds_to_ns(times[frame_of(pose_array_to_positions(m), X)])) for m in msgs]


@pytest.mark.slow       # 21 s end to end; the replay clock's other four tests stay in the default tier
@pytest.mark.parametrize("rate_scale", [0.0, 1.0])
def test_replay_stamps_equal_the_capture_times_at_any_replay_speed(take, rate_scale):
    """Acceptance: a 10 s take replayed as fast as possible and in real time; two bridges side by side,
    one stamping capture times (and publishing /clock), one replay_start times. Every message's stamp is
    its frame's capture time (capture) or the first stamp plus the capture time since the first frame
    (replay_start), the first and last frames included."""
    path, times, X = take
    with ros(20) as (ctx, ex, listener):
        got = {"cap": [], "rs": []}
        clock = []
        for ns, box in got.items():
            listener.create_subscription(PoseArray, f"/{ns}/{topics.NODE_POSITIONS}", box.append, deep_qos())
        listener.create_subscription(Clock, "/clock", clock.append, deep_qos())
        time.sleep(0.3)
        wall_before = time.time_ns()
        made = time.monotonic()
        nodes = [_bridge(ctx, path, "cap", "-p", f"csv.rate_scale:={rate_scale}", "-p", "csv.stamps:=capture",
                         "-p", "csv.publish_clock:=true"),
                 _bridge(ctx, path, "rs", "-p", f"csv.rate_scale:={rate_scale}")]
        first_seen = {}
        try:
            for n in nodes:
                ex.add_node(n)

            def done():
                for ns, box in got.items():
                    if box and ns not in first_seen:
                        first_seen[ns] = time.time_ns()
                return all(n.finished for n in nodes)
            spin_until(ex, done, timeout=120, settle=0.5)
            replay_wall = time.monotonic() - made
        finally:
            for n in nodes:
                n.close()
                n.destroy_node()
    assert all(n.finished for n in nodes)
    cap, rs = _matched(got["cap"], X, times), _matched(got["rs"], X, times)
    # every frame arrived (deep best-effort queue, one process), in order
    for m in (cap, rs):
        assert [c for _, c in m] == [seconds_to_ns(x) for x in times]
    err_cap = max(abs(s - c) for s, c in cap)
    s0 = rs[0][0]
    err_rs = max(abs((s - s0) - (c - rs[0][1])) for s, c in rs)
    print(f"rate_scale {rate_scale}: {len(times)} frames replayed in {replay_wall:.2f} s; max |stamp - capture "
          f"time| {err_cap} ns (capture), max |interval error| {err_rs} ns (replay_start); first/last stamps "
          f"{cap[0][0] / 1e9:.6f}/{cap[-1][0] / 1e9:.6f} s vs {times[0]:.6f}/{times[-1]:.6f} s")
    assert err_cap <= TOL_NS and err_rs <= TOL_NS
    assert abs(cap[-1][0] - cap[0][0] - seconds_to_ns(times[-1] - times[0])) <= TOL_NS
    # replay_start is on the wall clock: the replay's start, between making the node and the first message
    assert wall_before <= s0 <= first_seen["rs"]
    # /clock: the capture time before each frame, in order, first to last
    ct = [c.clock.sec * 1_000_000_000 + c.clock.nanosec for c in clock]
    assert len(ct) == len(times) and np.all(np.abs(np.array(ct) - [s for s, _ in cap]) <= TOL_NS)
    if rate_scale == 1.0:                          # paced: the last frame was due 10 s after the start
        assert replay_wall >= times[-1] - times[0]


@pytest.mark.parametrize("mode", ["capture", "replay_start"])
def test_looping_replay_stamps_never_go_backwards(tmp_path, mode):
    """csv.loop: each pass continues the stamps by the take's duration plus one frame period."""
    t, X = rigid_motion(0.5, 120.0, t0=3.0)                       # times 3.0 .. 3.5 s
    path = write_take(tmp_path / "short.csv", t, X)
    times = read_motive_csv(path).times
    span = seconds_to_ns(times[-1] - times[0] + 1 / 120.0)
    got = []
    with ros(25) as (ctx, ex, listener):
        listener.create_subscription(PoseArray, topics.NODE_POSITIONS, got.append, deep_qos())
        time.sleep(0.3)
        node = _bridge(ctx, path, None, "-p", "csv.rate_scale:=0.0", "-p", "csv.loop:=true", "-p",
                       f"csv.stamps:={mode}")
        try:
            ex.add_node(node)
            spin_until(ex, lambda: node.loops >= 3, timeout=60)
            node.close()
            spin_until(ex, lambda: False, timeout=0.0, settle=0.3)
        finally:
            node.close()
            node.destroy_node()
    m = _matched(got, X, times)
    stamps = np.array([s for s, _ in m])
    assert np.all(np.diff(stamps) > 0), "stamps went backwards or repeated"
    base = seconds_to_ns(times[0]) if mode == "capture" else stamps[0]
    passes = set()
    for s, c in m:                                  # stamp = first stamp + capture time since t0 + pass * span
        k = round((s - base - (c - seconds_to_ns(times[0]))) / span)
        passes.add(k)
        assert abs(s - base - (c - seconds_to_ns(times[0])) - k * span) <= 2 * TOL_NS
    assert {0, 1, 2} <= passes
