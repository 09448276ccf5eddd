"""Per-frame processing latency of the motion-capture bridge at 360 Hz, on a quiet and a loaded machine (not a test).

The NatNet emulator (own process) streams the simulated manipulator experiment (24 labeled markers,
Motive Y-up, 0.5 mm noise) at --rate over loopback unicast; the bridge node (real rclpy, its executor
spinning the diagnostics and markers/rviz timers as a running node's does) receives, parses, converts,
tracks all nodes and publishes node positions, plate poses and the raw markers. Printed per window: frames,
received rate, CPU time per frame of the bridge's frame thread and of its whole process (figures the
machine's other load disturbs much less than the latency's tail), and the bridge's latency from datagram
read to node positions + plate poses published
(p50/p99/max; the issue's target is p99 <= 2 ms with one core loaded), plus the tracking result.

``--load N`` measures each repeat twice in the same run, without and with ``tools/cpu_load.py --workers N``
(N busy processes at normal priority, started for the window and stopped after it), and prints the machine's
busy fraction over each window (all cores, /proc/stat) and the 1-minute load average.

    .venv/bin/python bench/bench_mocap_bridge.py [--seconds 10] [--rate 360] [--load 1] [--repeats 2]
"""
from __future__ import annotations

import argparse
import os
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
CPU_LOAD = ROOT / "tools" / "cpu_load.py"
sys.path.insert(0, str(EMULATOR_DIR))
from natnet_emulator import free_udp_port  # noqa: E402


def cpu_times() -> tuple:
    """(busy, total) jiffies of all cores from /proc/stat ((0, 0) where there is none)."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return 0, 0
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return sum(v) - idle, sum(v)


def thread_cpu(tid: int) -> float:
    """CPU time [s] of thread ``tid`` of this process (user + system, /proc; nan where there is none)."""
    try:
        with open(f"/proc/self/task/{tid}/stat") as f:
            v = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")


def start_emulator(seconds: float, rate: float, tmp: Path):
    """(emulator process, command port, data port) streaming the manipulator's trajectory at ``rate``."""
    from tensegrity_engine import Simulator, load_model, paper_sinusoid
    model = load_model("stacked_manipulator")
    traj = Simulator(model).run(seconds + 10.0, inputs=paper_sinusoid(model), rate=rate)   # no loop
    np.savez(tmp / "trajectory.npz", t=traj.t, nodes=traj.nodes, n_physical=model.n_physical,
             node_names=np.array(model.node_names))
    cmd_port, data_port = free_udp_port(), free_udp_port()
    emu = subprocess.Popen([sys.executable, str(EMULATOR_DIR / "natnet_emulator.py"),
                            "--trajectory", str(tmp / "trajectory.npz"), "--rate", str(rate), "--version", "4.1",
                            "--y-up", "--noise", "0.0005", "--command-port", str(cmd_port), "--data-port",
                            str(data_port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return emu, cmd_port, data_port


def measure(node, ex, seconds: float) -> dict:
    """Spin for ``seconds`` and collect the bridge's per-frame latencies [ms], frames, rate and CPU busy."""
    with node.lock:
        node.latencies = []
    tid = node.worker.native_id
    f0, w0, (b0, t0), c0, th0 = node.frames, time.monotonic(), cpu_times(), os.times(), thread_cpu(tid)
    lat = []
    while time.monotonic() - w0 < seconds:
        ex.spin_once(timeout_sec=0.05)
        with node.lock:
            lat += node.latencies
            node.latencies = []
    b1, t1 = cpu_times()
    c1 = os.times()
    frames, wall = node.frames - f0, time.monotonic() - w0
    cpu = (c1.user + c1.system - c0.user - c0.system) / max(frames, 1)
    frame_cpu = (thread_cpu(tid) - th0) / max(frames, 1)
    return {"lat": np.array(lat) * 1e3, "frames": frames, "rate": frames / wall, "cpu_ms": 1e3 * cpu,
            "frame_cpu_ms": 1e3 * frame_cpu,
            "busy": (b1 - b0) / max(t1 - t0, 1), "loadavg": os.getloadavg()[0]}


def loaded_window(node, ex, seconds: float, workers: int) -> dict:
    """:func:`measure` while ``tools/cpu_load.py`` keeps ``workers`` processes busy (stopped after)."""
    load = subprocess.Popen([sys.executable, str(CPU_LOAD), "--workers", str(workers), "--seconds",
                             str(seconds + 30)], stdout=subprocess.DEVNULL)
    try:
        time.sleep(1.0)                           # the workers are up and running
        return measure(node, ex, seconds)
    finally:
        load.send_signal(signal.SIGTERM)
        load.wait(timeout=10)


def report(name: str, r: dict, rate: float):
    lat = r["lat"]
    if not len(lat):
        print(f"{name}: no frames")
        return
    print(f"{name}: {r['frames']} frames at {r['rate']:.1f} Hz (emulator {rate:g} Hz); latency p50 "
          f"{np.percentile(lat, 50):.3f} ms, p99 {np.percentile(lat, 99):.3f} ms, max {lat.max():.3f} ms, "
          f"> 2 ms {100 * np.mean(lat > 2):.2f} %; CPU per frame: frame thread {r['frame_cpu_ms']:.2f} ms, "
          f"process {r['cpu_ms']:.2f} ms; machine busy {100 * r['busy']:.0f} % of "
          f"{os.cpu_count()} cores, loadavg {r['loadavg']:.2f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="length of each measured window [s]")
    ap.add_argument("--rate", type=float, default=360.0)
    ap.add_argument("--load", type=int, default=0, metavar="N",
                    help="also measure each window with tools/cpu_load.py --workers N running (0: quiet only)")
    ap.add_argument("--repeats", type=int, default=1, help="windows (pairs with --load) to measure")
    ap.add_argument("-p", "--param", action="append", default=[], metavar="NAME:=VALUE",
                    help="extra bridge parameter, e.g. raw_markers_rate:=0 (repeatable)")
    a = ap.parse_args()
    from tensegrity_mocap.bridge.node import MocapBridge
    windows = a.repeats * (2 if a.load > 0 else 1)
    emu, cmd_port, data_port = start_emulator(windows * (a.seconds + 2.0), a.rate,
                                              Path(tempfile.mkdtemp(prefix="mocap-bench-")))
    rclpy.init(args=[], domain_id=96)
    node = MocapBridge(cli_args=["--ros-args", "-p", "natnet.use_multicast:=false", "-p",
                                 f"natnet.command_port:={cmd_port}", "-p", f"natnet.data_port:={data_port}",
                                 *[x for p in a.param for x in ("-p", p)]])
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    results = {"quiet": [], "loaded": []}
    try:
        t0 = time.monotonic()
        while node.frames < 50 and time.monotonic() - t0 < 20:
            ex.spin_once(timeout_sec=0.05)
        for i in range(a.repeats):
            results["quiet"].append(measure(node, ex, a.seconds))
            report(f"[{i + 1}] quiet", results["quiet"][-1], a.rate)
            if a.load > 0:
                results["loaded"].append(loaded_window(node, ex, a.seconds, a.load))
                report(f"[{i + 1}] {a.load} core(s) loaded", results["loaded"][-1], a.rate)
        st = node.tracker.stats
    finally:
        emu.send_signal(signal.SIGINT)
        emu.wait(timeout=10)
        node.close()
        node.destroy_node()
        rclpy.shutdown()
    print("bridge latency datagram read -> node positions + plate poses published (target p99 <= 2 ms):")
    for name, rs in results.items():
        if rs:
            report(f"  all {name}", {"lat": np.concatenate([r["lat"] for r in rs]),
                                     "frames": sum(r["frames"] for r in rs), "rate": np.mean([r["rate"] for r in rs]),
                                     "cpu_ms": np.mean([r["cpu_ms"] for r in rs]),
                                     "frame_cpu_ms": np.mean([r["frame_cpu_ms"] for r in rs]),
                                     "busy": np.mean([r["busy"] for r in rs]), "loadavg": rs[-1]["loadavg"]}, a.rate)
    print(f"tracking: invalid node-frames {st.invalid_node_frames}, relabels {st.dropped_labels}, "
          f"ambiguous {st.ambiguous}")


if __name__ == "__main__":
    main()
