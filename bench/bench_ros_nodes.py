"""Real-time behaviour of the ROS 2 nodes as separate processes over real DDS (not part of the tests).

Starts the simulator (experiment on) and the collision monitor as processes on a private domain, listens
for ``--seconds`` and prints: received rate and interval percentiles of node_positions, simulated vs wall
time (real time held?), the simulator's own diagnostics (compute load = wall time inside its physics +
publish callback per wall second, real-time margin = 1 - load, overruns), CPU use of each process (from
/proc, user + system), and the monitor's check rate and per-message check time.

    .venv/bin/python bench/bench_ros_nodes.py --seconds 20 [--physics-rate 1000 --publish-rate 100]
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseArray
from rclpy.executors import SingleThreadedExecutor

from tensegrity_ros_common import topics

ROOT = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--physics-rate", type=float, default=1000.0)
    ap.add_argument("--publish-rate", type=float, default=100.0)
    ap.add_argument("--domain", type=int, default=None,
                    help="ROS domain id (default: a free one claimed on this host, so another run never mixes in)")
    a = ap.parse_args()
    if a.domain is None:
        from tensegrity_ros_common.domains import claim_domain
        a.domain = claim_domain()
    env = dict(os.environ, ROS_DOMAIN_ID=str(a.domain))
    cfg = ROOT / "config"
    procs = {
        "simulator": subprocess.Popen([sys.executable, "-m", "tensegrity_sim.simulator_node", "--ros-args",
                                       "--params-file", str(cfg / "tensegrity_simulator.yaml"), "-p",
                                       "experiment.enabled:=true", "-p", f"physics_rate:={a.physics_rate}", "-p",
                                       f"publish_rate:={a.publish_rate}"], env=env, stderr=subprocess.DEVNULL),
        "collision_monitor": subprocess.Popen([sys.executable, "-m", "tensegrity_monitor.collision_monitor_node",
                                               "--ros-args", "--params-file", str(cfg / "collision_monitor.yaml")],
                                              env=env, stderr=subprocess.DEVNULL),
    }
    rclpy.init(args=[], domain_id=a.domain)
    node = rclpy.create_node("bench_listener")
    arrivals, diag = [], {}
    node.create_subscription(PoseArray, topics.NODE_POSITIONS, lambda m: arrivals.append(time.monotonic()),
                             topics.sensor_qos())
    node.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, lambda m: diag.update(
        {s.name: {kv.key: kv.value for kv in s.values} for s in m.status}), 10)
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    try:
        while len(arrivals) < 50:                       # wait until everything runs (imports, kernel cache)
            ex.spin_once(timeout_sec=0.1)
        arrivals.clear()
        cpu0 = {k: cpu_seconds(p.pid) for k, p in procs.items()}
        w0 = time.monotonic()
        end = w0 + a.seconds
        while time.monotonic() < end:
            ex.spin_once(timeout_sec=0.05)
        wall = time.monotonic() - w0
        cpu = {k: (cpu_seconds(p.pid) - cpu0[k]) / wall for k, p in procs.items()}
        sim = next(v for k, v in diag.items() if k.endswith("physics"))
        mon = next(v for k, v in diag.items() if k.endswith("self-collision"))
    finally:
        for p in procs.values():
            p.send_signal(signal.SIGINT)
        codes = {k: p.wait(timeout=20) for k, p in procs.items()}
        rclpy.shutdown()
    iv = np.diff(arrivals) * 1e3
    print(f"{a.seconds:g} s, physics {a.physics_rate:g} Hz, publishing {a.publish_rate:g} Hz, 2 processes + listener")
    print(f"node_positions received: {len(arrivals) / wall:.1f} Hz; interval p50 {np.percentile(iv, 50):.2f} ms, "
          f"p99 {np.percentile(iv, 99):.2f} ms, max {iv.max():.2f} ms, std {iv.std():.2f} ms")
    print(f"simulator: compute load {float(sim['compute_load']):.1%} (real-time margin "
          f"{float(sim['real_time_margin']):.1%}), max tick {float(sim['max_tick_compute_ms']):.2f} ms, "
          f"overruns {sim['overruns']}, skipped sim time {sim['skipped_sim_time_s']} s, lag {sim['lag_ms']} ms")
    print("CPU use (one core = 100 %): " + ", ".join(f"{k} {v:.1%}" for k, v in cpu.items()))
    print(f"collision monitor: {float(mon['check_rate_hz']):.1f} checks/s, last check {float(mon['last_check_us']):.0f} us "
          f"(PoseArray -> 1068 pairs -> messages), safety stop {mon['safety_stop']}")
    print(f"exit codes: {codes}")


if __name__ == "__main__":
    main()
