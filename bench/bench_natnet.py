"""NatNet parse time and loopback receive latency for the manipulator at 360 Hz (not a test).

The manipulator's mocap load: 24 labeled markers (one per physical node), 3 rigid bodies (stand-ins for
the plates) and the marker set of the 24 markers, NatNet 4.1 (Motive 3.1).

1. parse: ``parse_packet`` on that frame, ``--parse-iterations`` times -> p50 / p99 / max [us];
2. stream: the NatNet emulator (``src/tensegrity_mocap/test/natnet_emulator.py``, in a separate process by
   default, ``--in-process`` for a thread) streams the simulated manipulator trajectory at ``--rate``
   (360 Hz) for ``--seconds`` over loopback UDP (unicast, or ``--multicast``); the client polls
   ``receive()`` in a loop. Per frame:
   * arrival latency: datagram read (``frame.receive_time_ns``) - emulator transmit stamp;
   * delivered latency: ``receive()`` returned the parsed frame - transmit stamp (what a consumer sees).
   Both clocks are ``time.perf_counter_ns`` (CLOCK_MONOTONIC, shared by processes on Linux); the
   emulator's transmit stamp is a 10 MHz tick count taken just before it builds and sends the packet.

Target: p99 <= 2 ms.

    .venv/bin/python bench/bench_natnet.py [--seconds 10] [--rate 360] [--version 4.1] [--in-process]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TEST_DIR = ROOT / "src" / "tensegrity_mocap" / "test"
sys.path.insert(0, str(TEST_DIR))
sys.path.insert(0, str(ROOT / "src" / "tensegrity_mocap"))

from natnet_emulator import MarkerSource, NatNetEmulator, free_udp_port, plate_rigid_bodies  # noqa: E402
from tensegrity_mocap import natnet as nn  # noqa: E402

TARGET_P99_MS = 2.0


def manipulator_trajectory(seconds: float = 4.0, rate: float = 120.0):
    """(t, (T, 24, 3)) physical node positions of the simulated manipulator (synthetic if no engine)."""
    try:
        from tensegrity_engine import Simulator, load_model, paper_sinusoid
        m = load_model("stacked_manipulator")
        traj = Simulator(m).run(seconds, inputs=paper_sinusoid(m), rate=rate)
        return np.asarray(traj.t), np.asarray(traj.nodes[:, :m.n_physical]), "simulated stacked_manipulator"
    except Exception as exc:  # noqa: BLE001  # pragma: no cover - the engine is part of this repo, but keep the bench usable
        t = np.arange(int(seconds * rate)) / rate
        base = np.random.default_rng(0).uniform(-0.2, 0.2, (1, 24, 3))
        return t, base + 0.01 * np.sin(2 * np.pi * t)[:, None, None], f"synthetic ({exc})"


def pct(a, scale=1.0) -> str:
    a = np.asarray(a, float) * scale
    if not len(a):
        return "n/a"
    return f"p50 {np.percentile(a, 50):7.3f}  p99 {np.percentile(a, 99):7.3f}  max {a.max():7.3f}"


def bench_parse(P, rbs, version, iterations: int):
    src = MarkerSource(P, rigid_bodies=rbs)
    emu = NatNetEmulator(src, version=version, rate=360.0)
    try:
        frame = emu._stamp(emu.make_frame(0))
    finally:
        emu.close()
    pkt = nn.build_frame(frame, version)
    for _ in range(200):                       # warm-up
        nn.parse_packet(pkt, version)
    t_parse = np.empty(iterations)
    t_build = np.empty(iterations)
    for i in range(iterations):
        t0 = time.perf_counter_ns()
        nn.parse_packet(pkt, version)
        t1 = time.perf_counter_ns()
        nn.build_frame(frame, version)
        t2 = time.perf_counter_ns()
        t_parse[i], t_build[i] = t1 - t0, t2 - t1
    return len(pkt), t_parse / 1e3, t_build / 1e3


def bench_stream(t, P, a):
    cmd_port, data_port = free_udp_port(), free_udp_port()
    proc = emu = None
    if a.in_process:
        rbs = plate_rigid_bodies(P, 3)
        emu = NatNetEmulator(MarkerSource(P, t=t, rigid_bodies=rbs), version=a.version, rate=a.rate,
                             command_port=cmd_port, data_port=data_port, multicast=a.multicast)
        emu.streaming = False
        emu.start()
    else:
        tmp = tempfile.mkdtemp(prefix="bench_natnet_")
        path = os.path.join(tmp, "trajectory.npz")
        np.savez(path, t=t, nodes=P, n_physical=np.int64(P.shape[1]),
                 node_names=np.array([f"node{j}" for j in range(P.shape[1])]))
        cmd = [sys.executable, str(TEST_DIR / "natnet_emulator.py"), "--trajectory", path, "--rate", str(a.rate),
               "--version", a.version, "--rigid-bodies", "3", "--command-port", str(cmd_port),
               "--data-port", str(data_port), "--duration", str(a.seconds + 30), "--quiet"]
        if a.multicast:
            cmd.append("--multicast")
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    client = nn.NatNetClient(command_port=cmd_port, data_port=data_port if a.multicast else free_udp_port(),
                             use_multicast=a.multicast)
    arrival, delivered, numbers, rx = [], [], [], []
    try:
        end = time.monotonic() + 20
        while True:
            try:
                info = client.connect(timeout=0.5)
                break
            except TimeoutError:
                if time.monotonic() > end or (proc is not None and proc.poll() is not None):
                    raise RuntimeError("the emulator did not answer" +
                                       ("" if proc is None else f": {proc.communicate()[1].decode()}"))
        if emu is not None:
            emu.streaming = True
        print(f"connected: {info.app_name} {'.'.join(map(str, info.app_version))}, NatNet "
              f"{'.'.join(map(str, info.natnet_version))}, clock {info.clock_frequency} Hz, "
              f"{'multicast' if a.multicast else 'unicast'}")
        client.receive(timeout=1.0)                          # first frame, then skip the queued backlog
        for _ in range(10000):
            if client.receive(timeout=0.0) is None:
                break
        client.reset_stats()
        client.last_frame_number = None
        tick_ns = 1e9 / info.clock_frequency
        t_end = time.monotonic() + a.seconds
        while time.monotonic() < t_end:
            f = client.receive(timeout=0.05)
            if f is None:
                continue
            now = time.perf_counter_ns()
            tx = f.stamp_transmit * tick_ns
            arrival.append((f.receive_time_ns - tx) / 1e6)
            delivered.append((now - tx) / 1e6)
            numbers.append(f.frame_number)
            rx.append(f.receive_time_ns / 1e9)
    finally:
        stats = dict(client.stats)
        client.close()
        if emu is not None:
            emu.close()
        if proc is not None:
            proc.terminate()
            proc.communicate(timeout=10)
    return np.array(arrival), np.array(delivered), np.array(numbers), np.array(rx), stats


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=360.0)
    ap.add_argument("--version", default="4.1", choices=["3.0", "3.1", "4.0", "4.1"])
    ap.add_argument("--parse-iterations", type=int, default=20000)
    ap.add_argument("--in-process", action="store_true", help="emulator in a thread of this process")
    ap.add_argument("--multicast", action="store_true")
    a = ap.parse_args(argv)
    version = nn.normalize_version(a.version)

    t, P, what = manipulator_trajectory()
    print(f"trajectory: {what}, {P.shape[0]} samples x {P.shape[1]} nodes")
    rbs = plate_rigid_bodies(P, 3)
    size, t_parse, t_build = bench_parse(P, rbs, version, a.parse_iterations)
    print(f"\nparse  NatNet {a.version}, {size} B packet (24 labeled markers, 3 rigid bodies, marker set), "
          f"{a.parse_iterations} iterations")
    print(f"  parse_packet [us]  {pct(t_parse)}")
    print(f"  build_frame  [us]  {pct(t_build)}")

    arrival, delivered, numbers, rx, stats = bench_stream(t, P, a)
    n = len(numbers)
    span = rx[-1] - rx[0] if n > 1 else float("nan")
    iv = np.diff(rx) * 1e3 if n > 1 else np.zeros(0)
    print(f"\nstream {a.rate:g} Hz for {a.seconds:g} s over loopback "
          f"({'in-process thread' if a.in_process else 'emulator process'}): {n} frames, "
          f"achieved {(n - 1) / span if n > 1 else 0:.1f} Hz, dropped {stats['dropped_frames']}, "
          f"stale {stats['stale_frames']}, rejected {sum(stats['rejected'].values())}")
    print(f"  arrival   latency [ms]  {pct(arrival)}")
    print(f"  delivered latency [ms]  {pct(delivered)}")
    print(f"  inter-arrival     [ms]  {pct(iv)}  (nominal {1e3 / a.rate:.3f})")
    p99_parse = np.percentile(t_parse, 99) / 1e3
    p99_lat = np.percentile(delivered, 99) if n else float("inf")
    ok = p99_parse <= TARGET_P99_MS and p99_lat <= TARGET_P99_MS
    print(f"\ntarget p99 <= {TARGET_P99_MS} ms: parse p99 {p99_parse:.3f} ms, delivered p99 {p99_lat:.3f} ms "
          f"-> {'OK' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
