"""What serving the Foxglove live view costs the 1 kHz simulator (issue 36; not a test).

Four cases, each on a fresh simulator process (stacked manipulator, experiment on, 1 kHz physics, 100 Hz
publishing, diagnostics each second) on a private ROS domain, measured for ``--seconds`` after a warm-up:
(a) the simulator alone; (b) plus the live view (its own process, as always) with no client; (c) plus one
Foxglove WebSocket client subscribed to every channel; (d) plus a hostile client: 1,000 subscriptions,
malformed frames and a flood of client messages (``--flood-rate`` per second, half of them invalid).
Printed per case, from the simulator's own diagnostics: overruns and skipped simulated time during the run,
the lag p99 (worst diagnostics window) and the tick rate; the CPU of the simulator, the live view and this
process (listener + client), the messages the client received; then the ratios against (a).

    .venv/bin/python bench/bench_live_view.py --seconds 20
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.executors import SingleThreadedExecutor
from websockets.exceptions import WebSocketException

from tensegrity_ros_common import topics
from tensegrity_ros_common.domains import claim_domain

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src" / "tensegrity_live" / "test"))
from foxglove_ws_client import FoxgloveWsClient  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
CASES = {"a": "simulator alone", "b": "+ live view, no client", "c": "+ one client, all channels",
         "d": "+ hostile client"}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_processes(case: str, domain: int, port: int) -> dict:
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    cfg = ROOT / "config"
    procs = {"simulator": subprocess.Popen(
        [sys.executable, "-m", "tensegrity_sim.simulator_node", "--ros-args", "--params-file",
         str(cfg / "tensegrity_simulator.yaml"), "-p", "experiment.enabled:=true", "-p", "diagnostic_rate:=1.0"],
        env=env, stderr=subprocess.DEVNULL)}
    if case != "a":
        procs["live_view"] = subprocess.Popen(
            [sys.executable, "-m", "tensegrity_live.live_view_node", "--ros-args", "--params-file",
             str(cfg / "live_view.yaml"), "-p", f"port:={port}"], env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
    return procs


def stop_processes(procs: dict) -> dict:
    for p in procs.values():
        p.send_signal(signal.SIGINT)
    codes = {}
    for k, p in procs.items():
        try:
            codes[k] = p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            codes[k] = "killed"
    return codes


def connect(port: int, timeout: float = 30.0) -> FoxgloveWsClient:
    """A client of the live view once its server listens (the process imports and starts first)."""
    end = time.monotonic() + timeout
    while True:
        try:
            return FoxgloveWsClient(f"ws://127.0.0.1:{port}", timeout=5.0, name="bench client")
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.2)


def subscribe_all(client: FoxgloveWsClient, settle: float = 3.0) -> list:
    """Subscribe to every advertised channel (channels advertised within ``settle`` s of connecting)."""
    time.sleep(settle)
    return [client.subscribe(topic) for topic in sorted(client.topics())]


class Hostile:
    """Two misbehaving clients on threads until ``stop``, each reconnecting when the server drops it: one sends
    1,000 subscriptions (one operation) and malformed frames twice a second, one floods ``rate`` client
    messages per second on /cmd_vel (half of them invalid, one in 100 of 70 kB)."""

    GOOD = {"linear": {"x": 0.0, "y": 0.0, "z": 0.0}, "angular": {"x": 0.0, "y": 0.0, "z": 0.0}}
    BAD = [b"{not json", json.dumps({"linear": {"x": "NaN"}}).encode(), b"[1e999]"]

    def __init__(self, port: int, rate: float):
        self.port, self.rate = port, rate
        self.sent = {"subscriptions": 0, "malformed": 0, "messages": 0}
        self.dropped = 0
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._again, args=(work,), daemon=True)
                        for work in (self._subscriptions, self._messages)]

    def start(self):
        for t in self.threads:
            t.start()

    def join(self):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=10)

    def _again(self, work):
        while not self.stop.is_set():
            try:
                with connect(self.port) as c:
                    work(c)
            except (OSError, WebSocketException, AssertionError):     # dropped or refused by the server
                self.dropped += 1
                time.sleep(0.1)

    def _subscriptions(self, c: FoxgloveWsClient):
        ids = [c.channel(topic)["id"] for topic in ("/scene/robot", "/tensions")]
        while not self.stop.is_set():
            c.send_json({"op": "subscribe", "subscriptions": [{"id": 10_000 + k, "channelId": ids[k % len(ids)]}
                                                              for k in range(1000)]})
            c.send_text('{"op": "subscribe", "subscriptions": [{]}')              # malformed operation
            c.send_bytes(b"\x07\x01\x02")                                          # unknown opcode
            c.send_json({"op": "unsubscribe", "subscriptionIds": [10_000 + k for k in range(1000)]})
            self.sent["subscriptions"] += 1000
            self.sent["malformed"] += 2
            c.unknown.clear()                              # the replies to the flood: not kept
            time.sleep(0.5)

    def _messages(self, c: FoxgloveWsClient):
        cmd = c.advertise("/cmd_vel", "geometry_msgs/msg/Twist")
        period, k, next_t = 1.0 / self.rate, 0, time.monotonic()
        while not self.stop.is_set():
            c.publish(cmd, self.GOOD if k % 2 else self.BAD[k % 3])
            if k % 100 == 0:
                c.publish(cmd, b"{" + b" " * 70_000 + b"}")                       # over the size cap
                c.publish(9999, self.GOOD)                                         # never advertised
            self.sent["messages"] += 1
            k += 1
            next_t += period
            time.sleep(max(0.0, next_t - time.monotonic()))


def run_case(case: str, a, domain: int) -> dict:
    port = free_tcp_port()
    procs = start_processes(case, domain, port)
    node = rclpy.create_node(f"bench_live_{case}")
    windows = []
    node.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, lambda m: windows.extend(
        {"name": s.name, "message": s.message, **{kv.key: kv.value for kv in s.values}} for s in m.status), 50)
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    client = hostile = None
    try:
        spin_until(ex, lambda: any(w["name"].endswith(": physics") for w in windows), 60)   # imports, kernels
        if case in ("c", "d"):
            client = connect(port)
            subs = subscribe_all(client)
        if case == "d":
            hostile = Hostile(port, a.flood_rate)
            hostile.start()
        spin(ex, a.warmup)
        windows.clear()
        counts0 = [client.count(s) for s in subs] if client else []
        cpu0 = {k: cpu_seconds(p.pid) for k, p in procs.items()}
        me0, w0 = time.process_time(), time.monotonic()
        spin(ex, a.seconds)
        wall = time.monotonic() - w0
        out = {k: (cpu_seconds(p.pid) - cpu0[k]) / wall for k, p in procs.items()}
        out["bench_cpu"] = (time.process_time() - me0) / wall
        out["client_msgs_per_s"] = (sum(client.count(s) for s in subs) - sum(counts0)) / wall if client else 0.0
        out["flood_sent"] = dict(hostile.sent, dropped=hostile.dropped) if hostile else 0
        out["client_open"] = client.is_open if client else None
    finally:
        if hostile:
            hostile.join()
        if client:
            client.close()
        out_codes = stop_processes(procs)
        node.destroy_node()
    out.update(summarise(windows))
    out["exit_codes"] = out_codes
    out["load"] = Path("/proc/loadavg").read_text().split()[0]          # 1-min load average after the case
    return out


def spin_until(ex, predicate, timeout: float):
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise RuntimeError("the simulator published no diagnostics")
        ex.spin_once(timeout_sec=0.05)


def spin(ex, seconds: float):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ex.spin_once(timeout_sec=0.05)


def summarise(windows: list) -> dict:
    """The simulator's physics windows and the live view's last status over the measured run."""
    sim = [w for w in windows if w["name"].endswith(": physics")]
    live = [w for w in windows if "live" in w["name"]]
    if len(sim) < 2:
        raise RuntimeError(f"only {len(sim)} diagnostics windows of the simulator")
    first, last = sim[0], sim[-1]
    return {
        "windows": len(sim),
        "overruns": int(last["overruns"]) - int(first["overruns"]) + int(first["overruns_in_window"]),
        "skipped_s": float(last["skipped_sim_time_s"]) - float(first["skipped_sim_time_s"])
        + float(first["skipped_sim_time_in_window_s"]),
        "lag_p99_ms": max(float(w["realtime_lag_p99_ms"]) for w in sim),
        "lag_p99_median_ms": float(np.median([float(w["realtime_lag_p99_ms"]) for w in sim])),
        "tick_rate_hz": float(np.mean([float(w["tick_rate_hz"]) for w in sim])),
        "not_ok_windows": sum("running in real time" not in w.get("message", "") for w in sim),
        "live": live[-1] if live else {},
    }


def ratio(x: float, base: float) -> str:
    return f"{x / base:.2f}" if base > 0 else ("1.00" if x == 0 else "inf")


def report(rounds: list, a):
    print(f"{a.seconds:g} s per case after {a.warmup:g} s warm-up, {len(rounds)} round(s) of cases {a.cases}; "
          f"simulator 1 kHz physics, 100 Hz publishing; hostile flood {a.flood_rate:g} client messages/s")
    print(" | ".join(("round", "case", "overruns", "skipped s", "lag p99 ms (worst / median window)", "tick Hz",
                      "sim CPU", "live view CPU", "bench CPU", "client msg/s", "load")))
    for k, results in enumerate(rounds, 1):
        for case, r in results.items():
            print(" | ".join([str(k), f"({case}) {CASES[case]}", str(r["overruns"]), f"{r['skipped_s']:.3f}",
                              f"{r['lag_p99_ms']:.1f} / {r['lag_p99_median_ms']:.1f}", f"{r['tick_rate_hz']:.1f}",
                              f"{r['simulator']:.1%}", f"{r.get('live_view', 0.0):.1%}", f"{r['bench_cpu']:.1%}",
                              f"{r['client_msgs_per_s']:.0f}", r["load"]]))
    for k, results in enumerate(rounds, 1):
        base = results.get("a")
        if base:
            print(f"round {k}, ratios against (a): " + "; ".join(
                f"({c}) overruns {ratio(r['overruns'], base['overruns'])}, skipped "
                f"{ratio(r['skipped_s'], base['skipped_s'])}, lag p99 {ratio(r['lag_p99_ms'], base['lag_p99_ms'])}, "
                f"tick rate {ratio(r['tick_rate_hz'], base['tick_rate_hz'])}, sim CPU "
                f"{ratio(r['simulator'], base['simulator'])}" for c, r in results.items() if c != "a"))
        for case, r in results.items():
            live = {key: r["live"][key] for key in ("clients", "subscriptions", "scene_rate_hz") if key in r["live"]}
            print(f"round {k} ({case}): windows {r['windows']} (not 'running in real time': {r['not_ok_windows']}), "
                  f"hostile {r['flood_sent']}, client open {r['client_open']}, live view {live}, "
                  f"exit codes {r['exit_codes']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--flood-rate", type=float, default=1000.0, help="hostile client messages per second")
    ap.add_argument("--cases", default="abcd")
    ap.add_argument("--rounds", type=int, default=2, help="the cases in turn, this many times (load drifts)")
    ap.add_argument("--domain", type=int, default=None, help="ROS domain id (default: a free one, claimed)")
    a = ap.parse_args()
    a.domain = claim_domain() if a.domain is None else a.domain          # no other run's nodes on it
    logging.getLogger("websockets").setLevel(logging.CRITICAL)            # the hostile clients' dropped connections
    rclpy.init(args=[], domain_id=a.domain)
    try:
        rounds = [{c: run_case(c, a, a.domain) for c in a.cases} for _ in range(a.rounds)]
    finally:
        rclpy.shutdown()
    report(rounds, a)


if __name__ == "__main__":
    main()
