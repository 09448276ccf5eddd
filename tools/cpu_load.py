#!/usr/bin/env python3
"""Keep every core busy (for running the test suite under load, as a loaded lab PC would be).

    python tools/cpu_load.py --seconds 1800 &      # one busy process per core, stops by itself
    ./test.sh; ./test.sh; ./test.sh
    kill %1

Each worker alternates floating-point work and memory traffic (not just a sleep-free loop) at normal
priority, so the test processes compete with it on equal terms.
"""
import argparse
import multiprocessing as mp
import os
import signal
import time


def burn(seconds: float, parent: int):
    """Busy until ``seconds`` pass or the parent process is gone (killed: no orphans left burning)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)     # terminate() ends a worker quietly
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # Ctrl-C is the parent's to handle
    end = time.monotonic() + seconds
    buf = bytearray(8 << 20)
    x = 1.0001
    while time.monotonic() < end and os.getppid() == parent:
        for _ in range(200_000):
            x = x * 1.0000001 + 1e-9
        buf[::4096] = bytes(len(buf[::4096]))       # touch 8 MiB


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=1800.0, help="stop after this long (default 30 min)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="busy processes (default: cores)")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, _interrupt)
    procs = [mp.Process(target=burn, args=(a.seconds, os.getpid()), daemon=True) for _ in range(a.workers)]
    for p in procs:
        p.start()
    print(f"cpu_load: {a.workers} busy process(es) for {a.seconds:g} s", flush=True)
    try:
        for p in procs:
            p.join()
    except KeyboardInterrupt:
        pass
    finally:
        for p in procs:
            p.terminate()


if __name__ == "__main__":
    main()
