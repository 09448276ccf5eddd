"""Hostile NatNet input end to end (issue #11, item 11): the emulator streams the manipulator experiment
with 20 % of its frame datagrams bit-flipped, two frames whose timestamp goes back 1 s with the markers
moved 15 mm, and a spoofer on 127.0.0.2 sends valid frames of the trajectory moved 5 cm at 1 kHz. The
bridge (real rclpy, sender filter on or off) publishes no frame that breaks a bar by more than 5 mm or puts
a node 1 cm off, still publishes most real frames, counts every kind of reject in diagnostics (WARN), names
its status by its fully qualified name and builds its messages with Python floats in float64 fields."""
import os
import time

import numpy as np
import pytest
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseArray
from rclpy.executors import SingleThreadedExecutor

from natnet_emulator import MarkerSource, NatNetEmulator, free_udp_port, ros_to_motive
from natnet_faults import SpoofSender
from tensegrity_engine import Simulator, load_model, paper_sinusoid
from tensegrity_mocap.bridge.node import MocapBridge
from tensegrity_mocap.tracking import rigid_pairs
from tensegrity_ros_common import diagnostics as diag
from tensegrity_ros_common import topics
from tensegrity_ros_common.conversions import pose_array_to_positions
from tensegrity_ros_common.domains import claim_domain  # noqa: E402

MODEL = load_model("stacked_manipulator")
NOISE = 0.0005                      # m, emulated marker noise
BAR_LIMIT = 0.005                   # m, acceptance: no published bar broken by more than this
JUMP_LIMIT = 0.010                  # m, no published node this far from the truth
BACKWARD = [200, 320]               # frame indices whose timestamp goes back


@pytest.fixture(scope="module")
def truth():
    traj = Simulator(MODEL).run(4.0, inputs=paper_sinusoid(MODEL), rate=120.0)
    return traj.t, traj.nodes[:, :24]


def bar_breaks(P, pairs) -> np.ndarray:
    i, j, L = pairs
    ok = np.isfinite(P[i, 0]) & np.isfinite(P[j, 0])
    return np.abs(np.linalg.norm(P[i[ok]] - P[j[ok]], axis=1) - L[ok])


@pytest.mark.parametrize("sender_filter", [True, False])
def test_bit_flips_spoofer_and_backward_time_never_reach_node_positions(truth, sender_filter):
    t, X = truth
    ns = "" if sender_filter else "robot1"                  # a namespaced bridge: its diagnostics say so
    data_port = free_udp_port()
    emu = NatNetEmulator(MarkerSource(ros_to_motive(X), t=t), version=(4, 1), rate=120.0, data_port=data_port,
                         noise=NOISE, bitflip_fraction=0.2, bitflip_bits=2, seed=11, backward_timestamps=BACKWARD,
                         backward_offset=(0.0, 0.015, 0.0), max_frames=len(t) - 1)
    ctx = rclpy.Context()
    rclpy.init(args=[], context=ctx, domain_id=claim_domain())
    ex = SingleThreadedExecutor(context=ctx)
    listener = rclpy.create_node("listener", context=ctx)
    got, diags = [], []
    listener.create_subscription(PoseArray, f"/{ns}/{topics.NODE_POSITIONS}" if ns else topics.NODE_POSITIONS,
                                 got.append, topics.sensor_qos())
    listener.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, lambda m: diags.extend(m.status), 10)
    ex.add_node(listener)
    # default tracking settings (bar_tol 10 mm against the model, bar_jump 3 mm between frames)
    node = MocapBridge(context=ctx, namespace=ns or None, cli_args=[
        "--ros-args", "-p", "source:=natnet", "-p", "natnet.use_multicast:=false",
        "-p", f"natnet.command_port:={emu.command_port}", "-p", f"natnet.data_port:={data_port}",
        "-p", f"natnet.sender_filter:={str(sender_filter).lower()}", "-p", "diagnostic_rate:=4.0"])
    # (an int in a float64 field of any published message fails the test: the repository's conftest.py)
    ex.add_node(node)
    spoof = SpoofSender(emu, address="127.0.0.2", rate=1000.0, offset=(0.0, 0.05, 0.0), duration=30.0)
    time.sleep(0.3)
    emu.start()
    try:
        end = time.monotonic() + 60                          # generous for a loaded machine
        while time.monotonic() < end and node.frames < 30:
            ex.spin_once(timeout_sec=0.01)
        spoof.start()                                        # the spoofer joins the running stream
        while time.monotonic() < end and emu.index < len(t) - 1:
            ex.spin_once(timeout_sec=0.01)
        # the spoofer stops with the real stream (it would never be tracked anyway: tracking.sender_silence
        # is 0 by default, test_plausibility covers the opt-in); this test is about the spoofer while the
        # real stream is alive
        spoof.close()
        settle = time.monotonic() + 1.0                      # last frames, then two diagnostics
        while time.monotonic() < settle:
            ex.spin_once(timeout_sec=0.01)
        sent, corrupted = emu.counters["frames_sent"], emu.counters["frames_corrupted"]
        assert emu.counters["frames_backward"] == len(BACKWARD) and corrupted > 0.1 * sent
        assert spoof.sent > 500
        # the real stream is still tracked (20 % of its frames were corrupted). How many of the rest get
        # through depends on the machine, not on the bridge: with both cores busy the 1 kHz flood makes the
        # socket drop real packets too (226 of 479 published seen with a parallel test run), so the bound
        # only says tracking went on throughout, not how fast this machine is
        assert node.frames > 0.25 * sent and len(got) > 0.2 * sent, (node.frames, len(got), sent)
        pairs = rigid_pairs(MODEL)
        worst_bar, worst_err, off = 0.0, 0.0, 0
        for msg in got:
            P = pose_array_to_positions(msg)
            b = bar_breaks(P, pairs)
            worst_bar = max(worst_bar, float(b.max()) if len(b) else 0.0)
            ok = np.isfinite(P[:, 0])
            if not ok.any():
                continue
            k = int(np.argmin(np.nanmax(np.abs(X[:, ok] - P[ok]), axis=(1, 2))))
            e = np.linalg.norm(X[k, ok] - P[ok], axis=1)
            worst_err = max(worst_err, float(e.max()))
            off += int(e.max() > JUMP_LIMIT)
        print(f"sent {sent} (corrupted {corrupted}, backward {len(BACKWARD)}), spoofed {spoof.sent}, "
              f"published {node.frames}, received {len(got)}; max bar break {1e3 * worst_bar:.2f} mm, "
              f"max node error {1e3 * worst_err:.2f} mm; guard {getattr(node, 'guard', None) and node.guard.stats}; "
              f"client {dict(node.client.stats)}")
        assert worst_bar <= BAR_LIMIT and off == 0, (worst_bar, worst_err, off)
        name = f"/{ns}/mocap_bridge: tracking" if ns else "/mocap_bridge: tracking"
        st = [s for s in diags if s.name == name]
        assert st, sorted({s.name for s in diags})
        v = {kv.key: kv.value for kv in st[-1].values}
        # the few backward-stamped frames are rejected if they arrive; with the cores oversubscribed the socket
        # can drop all of them (0 seen once, with frame gaps counted by the client)
        assert int(v["implausible_frames"]) >= 1
        assert int(v["out_of_order_frames"]) >= 1 or node.client.stats["dropped_frames"] > 0, v
        assert int(v["natnet_rejected"]) >= 1                # flips the parser caught
        # the spoofer's datagrams are counted where they are stopped (how many of its thousands the socket
        # buffer of a loaded machine keeps is its speed: 2099 of 4225 once; 100 is far above chance)
        if sender_filter:
            assert int(v["foreign_packets"]) >= 100 and v["last_foreign_sender"].startswith("127.0.0.2:")
            assert int(v["other_sender_frames"]) == 0
        else:
            assert int(v["other_sender_frames"]) >= 100 and int(v["foreign_packets"]) == 0
        warned = [s for s in st if diag.level_of(s) == diag.WARN and "rejecting input" in s.message]
        assert warned, [s.message for s in st]
    finally:
        spoof.close()
        emu.close()
        node.close()
        node.destroy_node()
        listener.destroy_node()
        ex.shutdown()
        rclpy.shutdown(context=ctx)
