"""The Dynamixel actuator driver alone (lifecycle node, autostart from config/dynamixel_driver.yaml).

    ros2 launch tensegrity_bringup driver.launch.py port:=/dev/ttyUSB0
    ros2 launch tensegrity_bringup driver.launch.py port:=/dev/ttyUSB0 experiment:=true namespace:=robot

Launch arguments override the parameter file when given (empty keeps the file's value). The driver obeys
``safety_stop`` in its namespace (from the collision monitor); without a monitor nothing stops it.
"""
from pathlib import Path

from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

ARGUMENTS = (
    ('port', '', 'serial device of the adapter (empty: config/dynamixel_driver.yaml)'),
    ('namespace', '', 'ROS namespace of the driver and its topics'),
    ('experiment', '', "run the paper's sinusoids from the start: true/false (empty: the file's value)"),
    ('loop_rate', '', 'control loop rate [Hz] (empty: the file)'),
)


def config_dir() -> Path:
    try:
        return Path(get_package_share_directory('tensegrity_bringup')) / 'config'
    except (PackageNotFoundError, OSError):
        return Path(__file__).resolve().parent.parent / 'config'


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
                 output='screen', emulate_tty=True)]


def generate_launch_description():
    return LaunchDescription([DeclareLaunchArgument(n, default_value=d, description=t) for n, d, t in ARGUMENTS]
                             + [OpaqueFunction(function=launch_setup)])
