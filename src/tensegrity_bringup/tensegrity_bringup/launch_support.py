"""Helpers shared by the launch files in launch/ (driver, hardware, simulation, twin).

Only the launch files import this module: it needs launch, launch_ros and ament_index_python (ROS installs),
which the rest of the package (the pip-only bringup) does not.
"""
import os
from pathlib import Path

from ament_index_python.packages import PackageNotFoundError, get_package_prefix, get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction, Shutdown
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

PACKAGE = 'tensegrity_bringup'

# The driver turns torque off when it gets SIGINT (launch sends it at shutdown) and then ignores further
# signals; give it time to do so before launch escalates (SIGTERM after sigterm_timeout, SIGKILL
# sigkill_timeout later; launch's defaults are 5 s + 5 s).
DRIVER_SIGTERM_TIMEOUT = '10'
DRIVER_SIGKILL_TIMEOUT = '10'
# Every other node: its clean-up after SIGINT is bounded (the controllers' worker join 1 s, the executor's
# shutdown 1 s, the DDS teardown; node_main then ends the process without the interpreter's teardown) and
# took 0.6-1.4 s at a load of 15-21 on 2 cores (test_stop_under_load.py); 8 s before SIGTERM, 5 s more
# before SIGKILL. Given to each Node as **STOP_TIMEOUTS.
NODE_SIGTERM_TIMEOUT = '8'
NODE_SIGKILL_TIMEOUT = '5'
STOP_TIMEOUTS = {'sigterm_timeout': NODE_SIGTERM_TIMEOUT, 'sigkill_timeout': NODE_SIGKILL_TIMEOUT}


def bringup_share(launch_file: str) -> Path:
    """share/tensegrity_bringup of the installed package, else the checkout (or share directory) that
    ``launch_file`` (the calling launch file's ``__file__``, in <dir>/launch/) is in."""
    try:
        return Path(get_package_share_directory(PACKAGE))
    except (PackageNotFoundError, OSError):     # not installed, or no ROS environment sourced
        return Path(launch_file).resolve().parent.parent


def config_dir(launch_file: str) -> Path:
    """The parameter files: ``bringup_share(launch_file) / 'config'``."""
    return bringup_share(launch_file) / 'config'


def installed(package: str, executable: str) -> bool:
    """The ament index knows ``package`` and it has the executable ``lib/<package>/<executable>``."""
    try:
        prefix = Path(get_package_prefix(package))
    except (PackageNotFoundError, ValueError, OSError):
        return False
    return os.access(prefix / 'lib' / package / executable, os.X_OK)


def required(what: str):
    """``on_exit`` of a node the launch cannot run without: its exit shuts the launch down (the others get
    SIGINT), and a non-zero exit code fails it. (launch's Shutdown alone makes ``ros2 launch`` return 0; the
    launch service returns 1 when an action raises, so a failed node's exit raises.)"""
    def on_exit(event, context):
        code = event.returncode
        if code == 0:
            return None if context.is_shutdown else [Shutdown(reason=f'{what} exited')]

        def fail(context):
            raise RuntimeError(f'{what} ({event.process_name}) exited with code {code}')
        return [OpaqueFunction(function=fail)]
    return on_exit


def rviz_actions(wanted: bool, rviz_file, frame_id: str, namespace: str, topics) -> list:
    """RViz with ``rviz_file`` in ``namespace`` ('' for none; the absolute ``topics`` the config names are
    remapped into it), or a message saying why it is not started (not wanted: nothing; not installed; no
    display). Closing RViz ends the launch."""
    if not wanted:
        return []
    if not installed('rviz2', 'rviz2'):
        return [LogInfo(msg='RViz not started: rviz2 is not installed (apt install ros-$ROS_DISTRO-rviz2)')]
    if not (os.environ.get('DISPLAY') or os.environ.get('WAYLAND_DISPLAY')):
        return [LogInfo(msg='RViz not started: no display (neither DISPLAY nor WAYLAND_DISPLAY is set)')]
    remaps = [(f'/{t}', f'/{namespace}/{t}') for t in topics] if namespace else []
    return [Node(**STOP_TIMEOUTS, package='rviz2', executable='rviz2', namespace=namespace or None,
                 arguments=['-d', str(rviz_file), '-f', frame_id], remappings=remaps, output='screen',
                 on_exit=Shutdown(reason='RViz was closed'))]


def live_view_actions(wanted: bool, port: str, config: Path, namespace: str = '') -> list:
    """The live view (tensegrity_live's live_view node: the Foxglove WebSocket server) with config/live_view.yaml
    on TCP ``port`` (text of an integer 0-65535; 0: any free port) in ``namespace``, or nothing if not
    ``wanted``. Optional: its exit does not end the launch."""
    if not wanted:
        return []
    try:
        number = int(port)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise RuntimeError(f"launch argument live_view_port:='{port}' is not a TCP port (0-65535; 0: any free port)")
    return [Node(**STOP_TIMEOUTS, package='tensegrity_live', executable='live_view_node',
                 namespace=namespace.strip('/') or None, parameters=[str(config / 'live_view.yaml'), {'port': number}],
                 output='screen', emulate_tty=True)]


def driver_overrides(port: str, experiment: str) -> dict:
    """Dynamixel driver parameters from the launch arguments port and experiment, when given (empty: the
    parameter file's value). ``experiment`` is taken as true when it is 'true', false otherwise."""
    out = {}
    if port:
        out['port'] = ParameterValue(port, value_type=str)
    if experiment:
        out['experiment.enabled'] = experiment == 'true'
    return out


def launch_description(arguments, launch_setup) -> LaunchDescription:
    """The LaunchDescription of a launch file: its ``arguments`` ((name, default, description, choices) each)
    declared, then ``launch_setup(context)`` run once they are known."""
    declared = [DeclareLaunchArgument(name, default_value=default, description=text, choices=choices)
                for name, default, text, choices in arguments]
    return LaunchDescription(declared + [OpaqueFunction(function=launch_setup)])
