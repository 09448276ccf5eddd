"""Per-frame processing latency of the motion-capture bridge at 360 Hz (not a test).

The NatNet emulator (own process) streams the simulated manipulator experiment (24 labeled markers,
Motive Y-up, 0.5 mm noise) at --rate over loopback unicast; the bridge node (real rclpy) receives,
parses, converts, tracks all nodes and publishes node positions and plate poses. Printed: frames,
received rate, and the bridge's latency from datagram read to published positions (p50/p99/max; the
issue's target is p99 <= 2 ms), plus the tracking result (invalid nodes, relabels).

    .venv/bin/python bench/bench_mocap_bridge.py [--seconds 10] [--rate 360]
"""
from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor

ROOT = Path(__file__).resolve().parents[1]
EMULATOR_DIR = ROOT / "src" / "tensegrity_mocap" / "test"
sys.path.insert(0, str(EMULATOR_DIR))
from natnet_emulator import free_udp_port  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=360.0)
    ap.add_argument("-p", "--param", action="append", default=[], metavar="NAME:=VALUE",
                    help="extra bridge parameter, e.g. raw_markers_rate:=0 (repeatable)")
    a = ap.parse_args()
    from tensegrity_engine import Simulator, load_model, paper_sinusoid
    from tensegrity_mocap.bridge.node import MocapBridge
    model = load_model("stacked_manipulator")
    traj = Simulator(model).run(a.seconds + 10.0, inputs=paper_sinusoid(model), rate=a.rate)   # no loop
    tmp = Path(tempfile.mkdtemp(prefix="mocap-bench-"))
    np.savez(tmp / "trajectory.npz", t=traj.t, nodes=traj.nodes, n_physical=model.n_physical,
             node_names=np.array(model.node_names))
    cmd_port, data_port = free_udp_port(), free_udp_port()
    emu = subprocess.Popen([sys.executable, str(EMULATOR_DIR / "natnet_emulator.py"),
                            "--trajectory", str(tmp / "trajectory.npz"), "--rate", str(a.rate), "--version", "4.1",
                            "--y-up", "--noise", "0.0005", "--command-port", str(cmd_port), "--data-port",
                            str(data_port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rclpy.init(args=[], domain_id=96)
    node = MocapBridge(cli_args=["--ros-args", "-p", "natnet.use_multicast:=false", "-p",
                                 f"natnet.command_port:={cmd_port}", "-p", f"natnet.data_port:={data_port}",
                                 *[x for p in a.param for x in ("-p", p)]])
    node.latencies_all = []
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    try:
        t0 = time.monotonic()
        while node.frames < 50 and time.monotonic() - t0 < 20:
            ex.spin_once(timeout_sec=0.05)
        f0, w0 = node.frames, time.monotonic()
        with node.lock:
            node.latencies = []
        lat = []
        while time.monotonic() - w0 < a.seconds:
            ex.spin_once(timeout_sec=0.05)
            with node.lock:
                lat += node.latencies
                node.latencies = []
        frames = node.frames - f0
        wall = time.monotonic() - w0
        st = node.tracker.stats
    finally:
        emu.send_signal(signal.SIGINT)
        emu.wait(timeout=10)
        node.close()
        node.destroy_node()
        rclpy.shutdown()
    lat = np.array(lat) * 1e3
    print(f"{frames} frames in {wall:.1f} s = {frames / wall:.1f} Hz (emulator at {a.rate:g} Hz, NatNet 4.1, 24 markers)")
    print(f"bridge latency datagram read -> positions + plate poses published: p50 {np.percentile(lat, 50):.3f} ms, "
          f"p99 {np.percentile(lat, 99):.3f} ms, max {lat.max():.3f} ms (target p99 <= 2 ms)")
    print(f"tracking: invalid node-frames {st.invalid_node_frames}, relabels {st.dropped_labels}, "
          f"ambiguous {st.ambiguous}")


if __name__ == "__main__":
    main()
