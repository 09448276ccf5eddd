"""The Dynamixel actuator driver alone (lifecycle node, autostart from config/dynamixel_driver.yaml).

    ros2 launch tensegrity_bringup driver.launch.py port:=/dev/ttyUSB0
    ros2 launch tensegrity_bringup driver.launch.py port:=/dev/ttyUSB0 experiment:=true namespace:=robot

Launch arguments override the parameter file when given (empty keeps the file's value). The driver moves
only on a fresh all-clear on ``safety_stop`` in its namespace (``safety.required: true``, the default): on
its own, without a collision monitor, it activates and then holds, so ``experiment:=true`` waits for one
(hardware.launch.py / twin.launch.py start it; ``safety.required: false`` is for benches only). A stop
latches in the monitor until its ~/clear_safety_stop service (std_srvs/Trigger) releases it.
If the driver exits, the launch ends; an exit code other than 0 makes ``ros2 launch`` exit 1. At shutdown
(Ctrl-C) the driver turns torque off; launch gives it DRIVER_SIGTERM_TIMEOUT + DRIVER_SIGKILL_TIMEOUT.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from tensegrity_bringup.launch_support import (DRIVER_SIGKILL_TIMEOUT, DRIVER_SIGTERM_TIMEOUT, config_dir,
                                               driver_overrides, required)

ARGUMENTS = (
    ('port', '', 'serial device of the adapter (empty: config/dynamixel_driver.yaml)'),
    ('namespace', '', 'ROS namespace of the driver and its topics'),
    ('experiment', '', "run the paper's sinusoids from the start: true/false (empty: the file's value)"),
    ('loop_rate', '', 'control loop rate [Hz] (empty: the file)'),
)

def launch_setup(context, *args, **kwargs):
    arg = {name: LaunchConfiguration(name).perform(context).strip() for name, *_ in ARGUMENTS}
    if arg['experiment'] not in ('', 'true', 'false'):
        raise RuntimeError(f"experiment:={arg['experiment']} must be true or false")
    overrides = driver_overrides(arg['port'], arg['experiment'])
    if arg['loop_rate']:
        overrides['loop_rate'] = float(arg['loop_rate'])
    return [Node(package='tensegrity_dynamixel', executable='dynamixel_driver_node', name='dynamixel_driver',
                 namespace=arg['namespace'].strip('/') or None,
                 parameters=[str(config_dir(__file__) / 'dynamixel_driver.yaml')] + ([overrides] if overrides else []),
                 output='screen', emulate_tty=True, sigterm_timeout=DRIVER_SIGTERM_TIMEOUT,
                 sigkill_timeout=DRIVER_SIGKILL_TIMEOUT, on_exit=required('the Dynamixel driver'))]


def generate_launch_description():
    return LaunchDescription([DeclareLaunchArgument(n, default_value=d, description=t) for n, d, t in ARGUMENTS]
                             + [OpaqueFunction(function=launch_setup)])
