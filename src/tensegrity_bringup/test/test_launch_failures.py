"""The launch files under the real ros2/launch + launch_ros (ROS 2 installs): they fail as a whole.

* robot_state_publisher and RViz not installed: skipped with a message, the simulator and the monitor run;
  Ctrl-C ends the launch with exit code 0 and no process left;
* a node that cannot start (exit code 2, a bad parameter): ``ros2 launch`` exits 1, no process left;
* hardware.launch.py on the pty servo emulator and a Motive CSV take: SIGKILL of the collision monitor
  shuts the launch down, the driver turns torque off and exits cleanly, the launch exits 1, no orphans.

Each launch runs as ``ros2 launch`` does (ros2launch.api.launch_a_launch_file) in a child process with its
own session, so every process it starts can be found (and must be gone) afterwards. Needs launch,
launch_ros and ros2launch importable and the tensegrity packages in the ament index (a sourced colcon
workspace); plain pytest skips it otherwise. ``launch_testing`` runs one launch per file, and the exit code
of ``ros2 launch`` itself is what is tested here, hence plain pytest with a child process; the running
simulation is tested by ``test_simulation_launch.py`` (launch_testing).
"""
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("launch_ros")
pytest.importorskip("ros2launch.api")
ament = pytest.importorskip("ament_index_python.packages")
from tensegrity_ros_common.domains import claim_domain  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
for _package in ("tensegrity_bringup", "tensegrity_sim", "tensegrity_monitor", "tensegrity_dynamixel",
                 "tensegrity_mocap"):
    try:
        ament.get_package_prefix(_package)
    except (ament.PackageNotFoundError, ValueError):
        pytest.skip(f"{_package} is not in the ament index (source the workspace)", allow_module_level=True)

STARTUP = 240.0         # s: a first start may compile the numba kernels

# ros2 launch <file> <args>, optionally with some packages hidden from the launch file's installed() check
RUNNER = """
import importlib.util, os, sys
from launch import LaunchDescription, LaunchDescriptionSource, LaunchService
from launch.actions import IncludeLaunchDescription
path, args = sys.argv[1], sys.argv[2:]
hidden = set(filter(None, os.environ.get("HIDE_PACKAGES", "").split(",")))
if not hidden:
    from ros2launch.api import launch_a_launch_file
    sys.exit(launch_a_launch_file(launch_file_path=path, launch_file_arguments=args))
spec = importlib.util.spec_from_file_location("launch_under_test", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
installed = module.installed
module.installed = lambda package, executable: package not in hidden and installed(package, executable)
service = LaunchService(argv=args)
service.include_launch_description(LaunchDescription([IncludeLaunchDescription(
    LaunchDescriptionSource(module.generate_launch_description()),
    launch_arguments=[tuple(a.split(":=", 1)) for a in args])]))
sys.exit(service.run())
"""


def launch_file(name: str) -> Path:
    here = ROOT / "launch" / name
    if here.is_file():
        return here
    return Path(ament.get_package_share_directory("tensegrity_bringup")) / "launch" / name


class Launch:
    """``ros2 launch`` in its own session; output collected; the session's processes can be listed."""

    def __init__(self, name, *args, hide=()):
        env = dict(os.environ, PYTHONUNBUFFERED="1", HIDE_PACKAGES=",".join(hide),
                   ROS_DOMAIN_ID=str(claim_domain()))
        env.pop("DISPLAY", None)
        env.pop("WAYLAND_DISPLAY", None)
        self.lines = []
        self.proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(launch_file(name)), *args], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        self.session = self.proc.pid
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())

    @property
    def output(self):
        return "\n".join(self.lines)

    def wait_for(self, text, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            if any(text in line for line in self.lines):
                return True
            time.sleep(0.1)
        time.sleep(0.2)
        return any(text in line for line in self.lines)

    def processes(self, containing=""):
        """Pids of the processes in the launch's session (other than the launch) whose command line
        contains ``containing``."""
        out = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == self.proc.pid:
                continue
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[3]) == self.session and containing in cmdline and fields[0] != "Z":
                out.append(int(entry.name))
        return out

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def close(self):
        """Kill whatever is left of the session (after a failed assertion)."""
        for pid in self.processes() + ([self.proc.pid] if self.proc.poll() is None else []):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()


def no_orphans(launch, grace=3.0):
    deadline = time.monotonic() + grace
    while launch.processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    return launch.processes() == []


def test_missing_robot_state_publisher_and_rviz_are_skipped():
    launch = Launch("simulation.launch.py", "rviz:=true", hide=("robot_state_publisher", "rviz2"))
    try:
        assert launch.wait_for("robot_state_publisher not started", 60), launch.output
        assert launch.wait_for("RViz not started", 10), launch.output
        assert launch.wait_for("safety stop released", STARTUP), launch.output     # sim and monitor run
        time.sleep(2.0)
        assert launch.proc.poll() is None, launch.output
        assert len(launch.processes("simulator_node")) == 1 and len(launch.processes("collision_monitor")) == 1
        os.killpg(launch.session, signal.SIGINT)                                  # Ctrl-C in a terminal
        code = launch.wait(30)
        assert code == 0, launch.output
        assert no_orphans(launch), launch.output
    finally:
        launch.close()


def test_a_node_that_cannot_start_fails_the_launch():
    launch = Launch("simulation.launch.py", "rviz:=false", "robot_state_publisher:=false", "physics_rate:=10.0")
    try:
        code = launch.wait(STARTUP)
        assert code == 1, launch.output
        assert "exit code 2" in launch.output and "exited with code 2" in launch.output, launch.output
        assert no_orphans(launch), launch.output
    finally:
        launch.close()


@pytest.fixture
def take(tmp_path):
    """A Motive CSV take of the manipulator at rest, long enough for the test."""
    import numpy as np
    from tensegrity_engine import load_model
    from tensegrity_engine.statics.equilibrium import settle
    from tensegrity_mocap.axes import z_up_to_y_up
    from tensegrity_mocap.motive import write_motive_csv
    model = load_model("stacked_manipulator")
    X = settle(model).positions
    n = 120 * 120
    markers = {f"Robot:{name}": z_up_to_y_up(np.repeat(X[None, i], n, axis=0))
               for i, name in enumerate(model.node_names[:24])}
    path = tmp_path / "take.csv"
    write_motive_csv(path, np.arange(n) / 120.0, markers, frame_rate=120.0, length_units="Millimeters")
    return path


def test_killing_the_monitor_ends_the_hardware_launch_with_torque_off(take):
    sys.path.insert(0, str(ROOT / "src" / "tensegrity_dynamixel" / "test"))
    from servo_emulator import PAPER_SERVOS, ServoEmulator
    with ServoEmulator(dict(PAPER_SERVOS)) as emu:
        launch = Launch("hardware.launch.py", f"port:={emu.path}", f"csv:={take}", "experiment:=true")
        try:
            assert launch.wait_for("torque on", STARTUP), launch.output
            assert launch.wait_for("safety stop released", STARTUP), launch.output
            time.sleep(1.0)
            assert all(emu.servo(i).torque for i in emu.ids), emu.status_line()
            monitors = launch.processes("collision_monitor_node")
            assert len(monitors) == 1, launch.output
            os.kill(monitors[0], signal.SIGKILL)
            code = launch.wait(30)
            assert code == 1, launch.output
            assert "exited with code -9" in launch.output, launch.output
            assert not any(emu.servo(i).torque for i in emu.ids), emu.status_line()
            driver_exit = [line for line in launch.lines if "dynamixel_driver_node" in line and "process" in line]
            assert any("finished cleanly" in line for line in driver_exit), launch.output
            assert no_orphans(launch), launch.output
        finally:
            launch.close()
