"""A process that watches its parent (parent_watch) learns within a fraction of a second that the parent is
gone, and the supervisor reaps what a dead launcher left behind. Plain processes, no ROS."""
import ast
import importlib.util
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tensegrity_ros_common.domains import claim_domain
from tensegrity_ros_common.supervise import exit_code

# The watched child: writes the parent's name to a file when the parent is gone, then exits 3.
CHILD = textwrap.dedent("""
    import os, sys, time
    from tensegrity_ros_common.parent_watch import watch_parent
    def gone(pid, name):
        with open(sys.argv[1], "w") as f:
            f.write(f"{pid} {name}")
        os._exit(3)
    print("watching" if watch_parent(gone) else "not watching", flush=True)
    time.sleep(60)
""")
# A launcher that starts the child and dies on SIGTERM without passing it on (as ros2 launch does)
LAUNCHER = textwrap.dedent("""
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]], stdout=subprocess.PIPE, text=True)
    print(child.pid, child.stdout.readline().strip(), flush=True)
    time.sleep(60)
""")
# s for the child to notice its parent is gone: 0.05 s polling plus a generous margin for a loaded machine
NOTICE = 10.0


def running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def start_launcher(tmp_path, env=None):
    marker = tmp_path / "gone.txt"
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, CHILD, str(marker)], stdout=subprocess.PIPE,
                                text=True, env=env)
    pid, state = launcher.stdout.readline().split(maxsplit=1)
    return launcher, int(pid), state.strip(), marker


def wait_gone(pid: int, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while running(pid) and time.monotonic() < end:
        time.sleep(0.01)
    return not running(pid)


def test_a_child_stops_when_its_launcher_dies(tmp_path):
    launcher, child, state, marker = start_launcher(tmp_path)
    assert state == "watching"
    launcher.send_signal(signal.SIGTERM)                 # the launcher alone: the child is orphaned
    launcher.wait(timeout=10)
    assert wait_gone(child, NOTICE), "the orphaned child kept running"
    pid, name = marker.read_text().split(maxsplit=1)
    assert int(pid) == launcher.pid and name.startswith("python")


def test_the_watch_can_be_turned_off(tmp_path):
    env = dict(os.environ, TENSEGRITY_EXIT_WITH_PARENT="0")
    launcher, child, state, marker = start_launcher(tmp_path, env)
    try:
        assert state == "not watching"
        launcher.send_signal(signal.SIGTERM)
        launcher.wait(timeout=10)
        time.sleep(0.5)                                 # ten watch periods
        assert running(child) and not marker.exists()
    finally:
        if running(child):
            os.kill(child, signal.SIGKILL)


def test_the_supervisor_waits_for_what_a_dead_launcher_left_behind(tmp_path):
    marker = tmp_path / "gone.txt"
    sup = subprocess.Popen([sys.executable, "-m", "tensegrity_ros_common.supervise", "--grace", "30", "--",
                            sys.executable, "-c", LAUNCHER, CHILD, str(marker)], stdout=subprocess.PIPE, text=True)
    child = int(sup.stdout.readline().split()[0])
    launcher = [p for p in os.listdir("/proc") if p.isdigit() and p != str(sup.pid) and _ppid(p) == sup.pid]
    assert len(launcher) == 1
    os.kill(int(launcher[0]), signal.SIGKILL)            # the launcher dies without a word
    # the orphan is re-parented to the supervisor (a subreaper), notices, exits 3; the supervisor reaps it
    assert sup.wait(timeout=NOTICE + 20) == 128 + signal.SIGKILL
    assert not running(child)
    assert marker.read_text().split()[0] == launcher[0]


def test_the_supervisor_passes_a_sigterm_on_as_sigint(tmp_path):
    script = "import signal, sys, time\nsignal.signal(signal.SIGINT, lambda *a: sys.exit(7))\nprint('up', flush=True)\ntime.sleep(60)"
    sup = subprocess.Popen([sys.executable, "-m", "tensegrity_ros_common.supervise", "--", sys.executable, "-c",
                            script], stdout=subprocess.PIPE, text=True)
    assert sup.stdout.readline().strip() == "up"
    sup.send_signal(signal.SIGTERM)
    assert sup.wait(timeout=20) == 7                     # the launcher saw SIGINT and exited 7


def test_exit_codes_of_signalled_processes():
    assert exit_code(9) == 128 + 9                       # waitpid status of a SIGKILL
    assert exit_code(3 << 8) == 3


def _ppid(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return -1


NODE_MODULES = ["tensegrity_dynamixel.driver_node", "tensegrity_mocap.bridge.node",
                "tensegrity_monitor.collision_monitor_node", "tensegrity_sim.mode_viewer_node",
                "tensegrity_sim.simulator_node", "tensegrity_ros_common.node_process"]


@pytest.mark.parametrize("module", NODE_MODULES)
def test_node_modules_note_their_launcher_before_the_slow_imports(module):
    """The parent is noted by the first import, so a launcher that dies while the node imports numpy, rclpy
    and the engine (seconds under load) is still noticed."""
    path = importlib.util.find_spec(module).origin
    imports = [n for n in ast.parse(open(path).read()).body if isinstance(n, (ast.Import, ast.ImportFrom))]
    imports = [n for n in imports if not (isinstance(n, ast.ImportFrom) and n.module == "__future__")]
    first = imports[0]
    names = [a.name for a in first.names]
    assert names == ["tensegrity_ros_common.parent_watch"] or (first.module is None and names == ["parent_watch"]), \
        ast.dump(first)


def test_a_node_whose_launcher_dies_while_it_starts_stops(tmp_path):
    """The launcher (a shell job: its process group's leader, as `ros2 launch` started from a terminal) is
    killed 0.1 s after it started the simulator node process, before the node has even noted its parent
    (Python's own start-up), long before it has imported rclpy: the node must still stop (before: it ran on
    as an orphan of init)."""
    env = dict(os.environ, ROS_DOMAIN_ID=str(claim_domain()))
    node = [sys.executable, "-m", "tensegrity_sim.simulator_node"]
    launcher = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time\n"
                                 "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
                                 "print(p.pid, flush=True)\ntime.sleep(60)", *node],
                                stdout=subprocess.PIPE, text=True, env=env, start_new_session=True)
    child = int(launcher.stdout.readline())
    time.sleep(0.1)
    launcher.kill()
    launcher.wait()
    try:
        # the node's imports and start-up (a few s idle, more under load), then it notices and stops
        assert wait_gone(child, 120.0), "the node kept running after its launcher died"
    finally:
        if running(child):
            os.kill(child, signal.SIGKILL)
