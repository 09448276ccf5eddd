"""Nodes make their numba kernels ready before they start their timers, and Ctrl-C stops that at once.

A node process on a fresh, empty numba cache (NUMBA_CACHE_DIR) logs that it compiles (first start only);
SIGINT or SIGTERM then ends it within seconds with exit code 0 and no compiling child left behind. The
collision monitor (its collision kernels compile in ~10 s) compiles once; its next start on the same
cache loads them and does not compile again.
"""
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from tensegrity_ros_common.domains import claim_domain  # noqa: E402

pytest.importorskip("rclpy")

REPO = Path(__file__).resolve().parents[3]
CONFIG = REPO / "config"
COMPILING = "compiling the engine's numba kernels"
STOP_WITHIN = 3.0         # s from the signal to the exit (measured 0.3-0.8 s on a loaded 2-core machine)


class NodeProcess:
    """A node started as ``python -m module --ros-args --params-file config/<params>`` with its own numba
    cache directory and ROS domain; its output is collected line by line."""

    def __init__(self, module, params, cache_dir):
        env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), ROS_DOMAIN_ID=str(claim_domain()),
                   PYTHONUNBUFFERED="1")
        self.lines = []
        self.proc = subprocess.Popen([sys.executable, "-m", module, "--ros-args", "--params-file",
                                      str(CONFIG / params)], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        """Kill the node if it is still running (after a failed assertion)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())

    @property
    def output(self):
        return "\n".join(self.lines)

    def wait_for(self, text, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(text in line for line in self.lines):
                return True
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        return any(text in line for line in self.lines)

    def stop(self, sig=signal.SIGINT, timeout=30.0):
        """Send ``sig``; returns (exit code, seconds until the exit)."""
        t0 = time.monotonic()
        self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(5)
        return code, time.monotonic() - t0


def processes_using(cache_dir) -> list:
    """Pids of this user's processes whose environment names ``cache_dir`` (the node and its children)."""
    needle = f"NUMBA_CACHE_DIR={cache_dir}".encode()
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    out.append(int(entry.name))
            except OSError:
                pass
    return out


def processes_left(cache_dir, within: float) -> list:
    """``processes_using(cache_dir)`` once none is left or ``within`` seconds have passed."""
    deadline = time.monotonic() + within
    while processes_using(cache_dir) and time.monotonic() < deadline:
        time.sleep(0.1)
    return processes_using(cache_dir)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_signal_during_the_first_compile_stops_the_simulator_at_once(tmp_path, sig):
    cache = tmp_path / "numba"
    with NodeProcess("tensegrity_sim.simulator_node", "tensegrity_simulator.yaml", cache) as node:
        assert node.wait_for(COMPILING, timeout=60), f"no '{COMPILING}' line:\n{node.output}"
        assert node.wait_for("equilibrium", timeout=30), node.output      # the compile is under way
        time.sleep(1.0)
        assert node.proc.poll() is None, node.output
        code, seconds = node.stop(sig)
    assert code == 0, node.output
    assert seconds < STOP_WITHIN, f"{sig.name}: exit {seconds:.1f} s after the signal"
    assert "Traceback" not in node.output, node.output
    assert processes_left(cache, within=0.5) == [], "a compiling process outlived the node"


def test_a_killed_node_leaves_no_compiling_process(tmp_path):
    cache = tmp_path / "numba"
    with NodeProcess("tensegrity_sim.simulator_node", "tensegrity_simulator.yaml", cache) as node:
        assert node.wait_for("equilibrium", timeout=90), node.output          # compiling in the child
        assert len(processes_using(cache)) == 2                                # the node and its child
        code, _ = node.stop(signal.SIGKILL)
    assert code == -signal.SIGKILL
    assert processes_left(cache, within=3.0) == [], "the compiling child outlived the killed node"


@pytest.mark.slow       # 18 s: a cold compile of the monitor kernels in a child process
def test_the_monitor_compiles_its_kernels_once_then_loads_them(tmp_path):
    cache = tmp_path / "numba"
    first = NodeProcess("tensegrity_monitor.collision_monitor_node", "collision_monitor.yaml", cache)
    try:
        assert first.wait_for(COMPILING, timeout=60), first.output
        assert first.wait_for("kernels compiled in", timeout=600), first.output
        assert first.wait_for("margins:", timeout=60), first.output          # the node is up
    finally:
        code, _ = first.stop()
    assert code == 0, first.output
    assert any(cache.rglob("*.nbi")), "nothing cached"

    second = NodeProcess("tensegrity_monitor.collision_monitor_node", "collision_monitor.yaml", cache)
    try:
        assert second.wait_for("margins:", timeout=60), second.output
    finally:
        code, _ = second.stop()
    assert code == 0, second.output
    assert COMPILING not in second.output, second.output
