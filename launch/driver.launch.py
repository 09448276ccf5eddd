"""The Dynamixel actuator driver alone (lifecycle node, autostart from config/dynamixel_driver.yaml).

    ros2 launch tensegrity_bringup driver.launch.py port:=/dev/ttyUSB0
    ros2 launch tensegrity_bringup driver.launch.py port:=/dev/ttyUSB0 experiment:=true namespace:=robot

Launch arguments override the parameter file when given (empty keeps the file's value). The driver obeys
``safety_stop`` in its namespace (from the collision monitor); without a monitor nothing stops it.
If the driver exits, the launch ends; an exit code other than 0 makes ``ros2 launch`` exit 1. At shutdown
(Ctrl-C) the driver turns torque off; launch gives it DRIVER_SIGTERM_TIMEOUT + DRIVER_SIGKILL_TIMEOUT.
"""
from pathlib import Path

from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, Shutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

ARGUMENTS = (
    ('port', '', 'serial device of the adapter (empty: config/dynamixel_driver.yaml)'),
    ('namespace', '', 'ROS namespace of the driver and its topics'),
    ('experiment', '', "run the paper's sinusoids from the start: true/false (empty: the file's value)"),
    ('loop_rate', '', 'control loop rate [Hz] (empty: the file)'),
)

# The driver turns torque off when it gets SIGINT (launch sends it at shutdown) and then ignores further
# signals; give it time to do so before launch escalates (SIGTERM after sigterm_timeout, SIGKILL
# sigkill_timeout later; launch's defaults are 5 s + 5 s).
DRIVER_SIGTERM_TIMEOUT = '10'
DRIVER_SIGKILL_TIMEOUT = '10'


def config_dir() -> Path:
    try:
        return Path(get_package_share_directory('tensegrity_bringup')) / 'config'
    except (PackageNotFoundError, OSError):
        return Path(__file__).resolve().parent.parent / 'config'


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


def driver_overrides(arg: dict) -> dict:
    out = {}
    if arg.get('port'):
        out['port'] = ParameterValue(arg['port'], value_type=str)
    if arg.get('experiment'):
        if arg['experiment'] not in ('true', 'false'):
            raise RuntimeError(f"experiment:={arg['experiment']} must be true or false")
        out['experiment.enabled'] = arg['experiment'] == 'true'
    if arg.get('loop_rate'):
        out['loop_rate'] = float(arg['loop_rate'])
    return out


def launch_setup(context, *args, **kwargs):
    arg = {name: LaunchConfiguration(name).perform(context).strip() for name, *_ in ARGUMENTS}
    overrides = driver_overrides(arg)
    return [Node(package='tensegrity_dynamixel', executable='dynamixel_driver_node', name='dynamixel_driver',
                 namespace=arg['namespace'].strip('/') or None,
                 parameters=[str(config_dir() / 'dynamixel_driver.yaml')] + ([overrides] if overrides else []),
                 output='screen', emulate_tty=True, sigterm_timeout=DRIVER_SIGTERM_TIMEOUT,
                 sigkill_timeout=DRIVER_SIGKILL_TIMEOUT, on_exit=required('the Dynamixel driver'))]


def generate_launch_description():
    return LaunchDescription([DeclareLaunchArgument(n, default_value=d, description=t) for n, d, t in ARGUMENTS]
                             + [OpaqueFunction(function=launch_setup)])
