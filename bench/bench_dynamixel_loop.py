"""Control-loop rate and jitter of the Dynamixel driver against the pty servo emulator (not a test).

Runs the driver core (one sync write of six goals + one sync read of six present positions/velocities per
cycle, the hardware-error read every 10th cycle, through the real dynamixel-sdk) against the manipulator
paper's six emulated servos (3 x L54-50-S290-R, 3 x M42-10-S260-R):

* free-running: cycles back to back -> the highest rate the software stack allows;
* paced at --rate (default 100 Hz) with a sleep-until-deadline loop -> achieved rate and jitter.

A pty has no baud-rate timing, so both are upper bounds for a real bus. The script also prints the wire
time of one cycle at the chosen baud rate (bytes x 10 bits / baud) and why the FTDI latency timer must
be 1 ms on real adapters (each sync read waits for the USB latency timer once).

    .venv/bin/python bench/bench_dynamixel_loop.py [--seconds 10] [--rate 100] [--baud 1000000]
"""
from __future__ import annotations

import argparse
import importlib.metadata
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src" / "tensegrity_dynamixel" / "test"))

from servo_emulator import PAPER_SERVOS  # noqa: E402
from tensegrity_dynamixel.control_tables import motor_model  # noqa: E402
from tensegrity_dynamixel.driver import Driver, MotorConfig  # noqa: E402


def wire_bytes(n_servos: int, data_len: int = 8) -> int:
    """Bytes on the bus for one cycle: SYNC WRITE (4-byte goals) + SYNC READ + one status per servo."""
    sync_write = 10 + 4 + n_servos * (1 + 4) + 2 - 2 + 2          # header..inst, addr/len, id+data, CRC
    sync_read = 10 + 4 + n_servos + 2
    status = n_servos * (11 + data_len)
    return sync_write + sync_read + status


def run(driver, seconds, period=None):
    ticks, work = [], []
    end = time.monotonic() + seconds
    next_t = time.monotonic()
    while time.monotonic() < end:
        if period:
            next_t += period
            delay = next_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        t0 = time.monotonic()
        ticks.append(t0)
        driver.cycle()
        work.append(time.monotonic() - t0)
    iv = np.diff(ticks) * 1e3
    return len(ticks) / seconds, iv, np.array(work) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=100.0)
    ap.add_argument("--baud", type=int, default=1_000_000)
    a = ap.parse_args()
    # the emulator in its own process: in-process, its thread and the SDK's busy-polling reads would share
    # the GIL and the measurement would show Python's 5 ms thread switch interval instead of the driver
    tmp = tempfile.mkdtemp(prefix="dxl-bench-")
    link = os.path.join(tmp, "ttyDXL")
    emu = subprocess.Popen([sys.executable, str(ROOT / "src" / "tensegrity_dynamixel" / "test" / "servo_emulator.py"),
                            "--link", link], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if os.path.exists(link):
                break
            time.sleep(0.05)
        motors = [MotorConfig(f"m{i}", i, motor_model(m), 0.02, 1.0, 0.0, -2.5, 2.5, 3.0)
                  for i, m in sorted(PAPER_SERVOS.items())]
        d = Driver(motors, link, a.baud, error_read_every=10)
        d.configure()
        d.activate()
        d.set_goals(range(6), [0.5, -0.5, 0.3, -0.3, 0.2, -0.2])
        free_rate, free_iv, free_work = run(d, a.seconds / 2)
        rate, iv, work = run(d, a.seconds / 2, 1.0 / a.rate)
        errors = dict(d.stats.errors)
        d.shutdown()
    finally:
        emu.send_signal(signal.SIGINT)
        emu.wait(timeout=10)
    nb = wire_bytes(6)
    print(f"six emulated servos (emulator in its own process), dynamixel-sdk "
          f"{importlib.metadata.version('dynamixel-sdk')}, pty (no baud timing)")
    print(f"free-running: {free_rate:.0f} cycles/s (cycle p50 {np.percentile(free_work, 50):.2f} ms, "
          f"p99 {np.percentile(free_work, 99):.2f} ms): an upper bound")
    print(f"paced at {a.rate:g} Hz: {rate:.1f} Hz achieved; interval p50 {np.percentile(iv, 50):.2f} ms, "
          f"p99 {np.percentile(iv, 99):.2f} ms, max {iv.max():.2f} ms, jitter (std) {iv.std():.3f} ms; "
          f"cycle work p99 {np.percentile(work, 99):.2f} ms")
    print(f"communication errors: {errors}")
    print(f"real bus at {a.baud} baud: {nb} bytes per cycle -> {nb * 10 / a.baud * 1e3:.2f} ms on the wire, plus "
          f"one USB turnaround per sync read bounded by the FTDI latency timer (16 ms default -> < 60 Hz; "
          f"1 ms -> {1e3 / (nb * 10 / a.baud * 1e3 + 2 * 1.0):.0f} Hz possible)")


if __name__ == "__main__":
    main()
