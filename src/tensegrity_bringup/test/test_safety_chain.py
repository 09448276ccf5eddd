"""The safety chain end to end, as processes over real DDS: the driver on emulated servos runs the paper's
experiment, the simulator follows the driver's goals, the collision monitor watches the simulator. Killing
the monitor (SIGKILL: no goodbye message) must stop the servos within the stated bound, and the bringup must
then bring everything down, driver first (torque off), with a non-zero exit code and no orphan process.

The default run kills the monitor once; TENSEGRITY_SAFETY_RUNS=10 repeats it (the issue's acceptance run).
"""
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tensegrity_dynamixel", "test"))
from emulator_fixtures import PAPER_SERVOS, ServoEmulator  # noqa: E402
from tensegrity_dynamixel.safety import hold_bound  # noqa: E402
from tensegrity_ros_common.domains import claim_domain  # noqa: E402

# s from SIGKILL of the monitor to the last servo motion: the one stated bound, with the configs' values
# (safety.timeout 0.15 s, 100 Hz loop, 50 Hz heartbeat): 0.244 s
HOLD_BOUND = hold_bound(0.15, 0.01)
# The emulated servos move until the emulator's thread processes the hold (it advances them lazily by the
# clock), so on a loaded machine a starved emulator, not the driver, would stretch the measured time (real
# servos answer in microseconds): its thread runs at nice -10 where permitted, like the driver.
RUNS = int(os.environ.get("TENSEGRITY_SAFETY_RUNS", "1"))


def children(pid: int) -> dict:
    """{pid: command line} of the live child processes of ``pid`` (from /proc)."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            if int(stat.rsplit(")", 1)[1].split()[1]) != pid:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                out[int(entry)] = f.read().replace(b"\0", b" ").decode()
        except (OSError, ValueError, IndexError):
            continue
    return out


def positions(emu):
    return [emu.servo(i).present for i in range(1, 7)]


# The emulator is a thread of this test process, which shares 2 cores with the other pytest worker (at times a
# test with 8 load processes): stalled for more than the driver's 5 failed cycles (50 ms) the bus counts as lost,
# and after a loss nothing moves without an operator (issue 33), so "the servos never moved" (twice in CI runs).
# Real servos answer in microseconds; these tests are about the monitor and the launcher, not the bus: 0.5 s.
EMULATED_BUS = ("--param", "dynamixel_driver:max_consecutive_errors:=50")


def wait_moving(emu, proc, timeout=150.0):
    """Until the experiment moves the servos (the driver got the monitor's first all-clear)."""
    end = time.monotonic() + timeout
    last = positions(emu)
    moved = 0
    while moved < 20:                 # 20 polls with motion (on a loaded machine the experiment may pause
        assert proc.poll() is None, proc.communicate()[0]      # while a heartbeat is late)
        assert time.monotonic() < end, "the servos never moved"
        time.sleep(0.02)
        now = positions(emu)
        moved += now != last
        last = now
    while positions(emu) == last:     # kill while they move
        assert time.monotonic() < end, "the servos stopped moving"
        time.sleep(0.005)


def last_motion_after(emu, t_kill, watch=1.5):
    """Seconds from ``t_kill`` to the last change of any servo's present position within ``watch`` s. The
    emulator advances a servo when it is read, so a change is dated when this poll sees it: the poll runs
    in its own thread at nice -10 (as the emulator and the driver) so that, on a loaded machine, a starved
    test process does not date the hold late (it measures the robot side, not itself)."""
    found = []

    def poll():
        try:
            os.setpriority(os.PRIO_PROCESS, 0, -10)        # Linux: this thread only (where permitted)
        except OSError:
            pass
        last_change = t_kill
        prev = positions(emu)
        end = t_kill + watch
        while time.monotonic() < end:
            now = positions(emu)
            if now != prev:
                last_change = time.monotonic()
                prev = now
            time.sleep(0.002)
        found.append(last_change - t_kill)
    thread = threading.Thread(target=poll)
    thread.start()
    thread.join()
    return found[0]


def detection_age(log: str) -> float:
    """The age [s] of the last all-clear when the driver noticed it was missing, from its log ('nan' if the
    log does not say): the gate timeout plus how late the driver's control cycle came."""
    ages = re.findall(r"no all-clear from the collision monitor for ([0-9.]+) s", log)
    return float(ages[-1]) if ages else float("nan")


def bringup(nodes, env, *extra):
    cmd = [sys.executable, "-m", "tensegrity_bringup.bringup", "--processes", "--nodes", ",".join(nodes), *extra]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def alive(pids) -> list:
    def running(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False
    return [pid for pid in pids if running(pid)]


def stop(p):
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def kill_monitor_once(run: int) -> float:
    """Driver, simulator and monitor in one bringup: SIGKILL the monitor process."""
    emu = ServoEmulator(dict(PAPER_SERVOS), nice=-10)   # see HOLD_BOUND
    emu.start()
    env = dict(os.environ, ROS_DOMAIN_ID=str(claim_domain()), PYTHONUNBUFFERED="1")
    p = bringup(["dynamixel_driver", "simulator", "collision_monitor"], env,
                *EMULATED_BUS, "--param", f"dynamixel_driver:port:={emu.path}",
                "--param", "dynamixel_driver:experiment.enabled:=true",
                "--remap", "simulator:motor_commands:=motor_goals",
                "--remap", "simulator:joint_states:=twin/joint_states")
    try:
        wait_moving(emu, p)
        monitor = [pid for pid, cmdline in children(p.pid).items() if "collision_monitor_node" in cmdline]
        assert len(monitor) == 1, children(p.pid)
        nodes = list(children(p.pid))
        os.kill(monitor[0], signal.SIGKILL)
        t_kill = time.monotonic()
        hold = last_motion_after(emu, t_kill)
        out, _ = p.communicate(timeout=60)
        assert p.returncode != 0, out                      # a required node died: the run failed
        assert "collision_monitor" in out and "exited with code -9" in out, out
        assert not any(emu.servo(i).torque for i in range(1, 7)), "torque left on"
        assert not alive(nodes), f"orphan node processes {alive(nodes)}"
        return hold
    finally:
        stop(p)
        emu.stop()


def kill_remote_monitor_once(run: int) -> float:
    """The monitor in another bringup (as on another machine): SIGKILL its whole process group. Nothing
    tells the robot side; only the driver's deadline on the monitor's heartbeat can hold the servos."""
    emu = ServoEmulator(dict(PAPER_SERVOS), nice=-10)   # see HOLD_BOUND
    emu.start()
    env = dict(os.environ, ROS_DOMAIN_ID=str(claim_domain()), PYTHONUNBUFFERED="1")
    robot = bringup(["dynamixel_driver", "simulator"], env, *EMULATED_BUS,
                    "--param", f"dynamixel_driver:port:={emu.path}",
                    "--param", "dynamixel_driver:experiment.enabled:=true",
                    "--remap", "simulator:motor_commands:=motor_goals",
                    "--remap", "simulator:joint_states:=twin/joint_states")
    # the stale-positions stop is not this test's subject: at load 15-20 a starved simulator made the monitor
    # latch one (0.53 s > 0.5 s) before anything moved, which ends the experiment; the heartbeat deadline is
    watcher = bringup(["collision_monitor"], env, "--param", "collision_monitor:stale_timeout:=5.0")
    try:
        try:
            wait_moving(emu, robot)
        except AssertionError as exc:         # say what each side logged
            stop(robot)
            stop(watcher)
            raise AssertionError(f"{exc}\n--- robot:\n{robot.communicate()[0][-3000:]}\n--- monitor:\n"
                                 f"{watcher.communicate()[0][-3000:]}") from None
        os.killpg(watcher.pid, signal.SIGKILL)
        t_kill = time.monotonic()
        hold = last_motion_after(emu, t_kill)
        assert robot.poll() is None                       # the robot side keeps running, holding
        if not all(emu.servo(i).torque for i in range(1, 7)):  # holding with torque on, not dropped: say why not
            robot.send_signal(signal.SIGINT)
            torques = [emu.servo(i).torque for i in range(1, 7)]
            raise AssertionError(f"torque dropped after the monitor's loss: {torques}\n"
                                 f"{robot.communicate(timeout=60)[0][-6000:]}")
        time.sleep(0.5)
        assert last_motion_after(emu, time.monotonic(), watch=0.5) == 0.0   # and stays still
        robot.send_signal(signal.SIGINT)
        out, _ = robot.communicate(timeout=60)
        assert not any(emu.servo(i).torque for i in range(1, 7)), "torque left on"
        if hold > HOLD_BOUND and os.environ.get("TENSEGRITY_SAFETY_DUMP"):    # a file for the robot's log
            with open(os.environ["TENSEGRITY_SAFETY_DUMP"], "a") as f:
                f.write(f"--- run {run}: hold {hold:.3f} s\n{out[-6000:]}\n")
        return hold, detection_age(out)
    finally:
        stop(robot)
        stop(watcher)
        emu.stop()


def kill_launcher_once(supervised: bool):
    """The launcher dies without a word (SIGKILL; a SIGTERM to `ros2 launch` alone is the same, it has no
    handler): its node processes are orphaned. Each notices its parent is gone and stops as on Ctrl-C, so
    the driver turns torque off. Under the supervisor (the containers' PID 1) the orphans are its children
    and it waits for them before it exits."""
    emu = ServoEmulator(dict(PAPER_SERVOS), nice=-10)
    emu.start()
    env = dict(os.environ, ROS_DOMAIN_ID=str(claim_domain()), PYTHONUNBUFFERED="1")
    args = [*EMULATED_BUS, "--param", f"dynamixel_driver:port:={emu.path}",
            "--param", "dynamixel_driver:experiment.enabled:=true",
            "--remap", "simulator:motor_commands:=motor_goals", "--remap", "simulator:joint_states:=twin/joint_states",
            "--param", "collision_monitor:stale_timeout:=5.0"]      # as in kill_remote_monitor_once: not the subject
    nodes = ["dynamixel_driver", "simulator", "collision_monitor"]
    supervise = [sys.executable, "-m", "tensegrity_ros_common.supervise", "--"] if supervised else []
    top = subprocess.Popen([*supervise, sys.executable, "-m", "tensegrity_bringup.bringup", "--processes",
                            "--nodes", ",".join(nodes), *args], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        wait_moving(emu, top)
        launcher = next(iter(children(top.pid))) if supervised else top.pid
        node_pids = list(children(launcher))
        assert len(node_pids) == 3, children(launcher)
        os.kill(launcher, signal.SIGKILL)
        end = time.monotonic() + 30.0         # generous: the nodes notice within 0.05 s, clean-up < 1 s idle
        while alive(node_pids) and time.monotonic() < end:
            time.sleep(0.05)
        assert not alive(node_pids), f"orphan node processes {alive(node_pids)}"
        assert not any(emu.servo(i).torque for i in range(1, 7)), "torque left on"
        if supervised:
            out, _ = top.communicate(timeout=30)
            assert top.returncode == 128 + signal.SIGKILL, out
    finally:
        try:                                  # the whole group, also orphans of a failed run
            os.killpg(top.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        top.wait()
        emu.stop()


@pytest.mark.parametrize("supervised", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_a_launcher_that_dies_leaves_no_servo_torqued(supervised):
    kill_launcher_once(supervised)


@pytest.mark.parametrize("run", range(RUNS))
@pytest.mark.parametrize("where", [pytest.param("same bringup", marks=pytest.mark.slow), "separate bringup"])
def test_killing_the_monitor_holds_the_servos(where, run):
    hold = kill_monitor_once(run) if where == "same bringup" else kill_remote_monitor_once(run)[0]
    print(f"{where}, run {run}: servos still for good {1e3 * hold:.0f} ms after SIGKILL of the monitor")
    assert hold <= HOLD_BOUND


@pytest.fixture
def loaded():
    """Busy processes (tools/cpu_load.py, normal priority) while the test runs: TENSEGRITY_LOAD_WORKERS of
    them (default 8: with the test's own processes a load of 15-20 on 2 cores, issue 33's condition)."""
    workers = int(os.environ.get("TENSEGRITY_LOAD_WORKERS", "8"))
    root = os.path.join(os.path.dirname(__file__), "..", "..", "..")
    load = subprocess.Popen([sys.executable, os.path.join(root, "tools", "cpu_load.py"), "--seconds", "3600",
                             "--workers", str(workers)], stdout=subprocess.DEVNULL) if workers > 0 else None
    yield
    if load is not None:
        load.terminate()
        load.wait(10)


@pytest.mark.slow
@pytest.mark.parametrize("run", range(RUNS))
def test_killing_the_monitor_holds_the_servos_under_load(loaded, run):
    """The separate-bringup case with both cores overloaded (issue 33 #6: 1 of 30 runs at 290 ms), against the
    same stated bound (docs/safety.md gives the figures: TENSEGRITY_SAFETY_RUNS=30 for the acceptance run)."""
    hold, age = kill_remote_monitor_once(run)
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(f"loaded run {run}: servos still for good {1e3 * hold:.0f} ms after SIGKILL of the monitor; the driver "
          f"noticed the missing all-clear at age {1e3 * age:.0f} ms; load {load}")
    assert hold <= HOLD_BOUND
