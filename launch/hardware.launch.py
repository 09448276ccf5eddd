"""The real robot: Dynamixel driver, motion-capture bridge and the self-collision monitor on the measured
node positions (its safety stop holds the motors).

    ros2 launch tensegrity_bringup hardware.launch.py port:=/dev/ttyUSB0 server:=192.168.1.10 local:=192.168.1.20
    ros2 launch tensegrity_bringup hardware.launch.py csv:=take.csv port:=/dev/ttyUSB0   # mocap from a file

The monitor takes the model from its ``model`` parameter (no simulator publishes a description here). Its
safety stop holds the motors until released by ``ros2 service call /collision_monitor/clear_safety_stop
std_srvs/srv/Trigger`` (with a namespace: /<namespace>/collision_monitor/clear_safety_stop), which it
refuses while the hazard lasts.
All three nodes are required: if one exits (or is killed), the launch shuts down, the driver gets SIGINT
and turns torque off (launch waits DRIVER_SIGTERM_TIMEOUT + DRIVER_SIGKILL_TIMEOUT before SIGKILL), and an
exit code other than 0 makes ``ros2 launch`` exit 1.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from tensegrity_bringup.launch_support import (DRIVER_SIGKILL_TIMEOUT, DRIVER_SIGTERM_TIMEOUT, STOP_TIMEOUTS,
                                               config_dir, driver_overrides, live_view_actions, required)

ARGUMENTS = (
    ('port', '', 'serial device of the Dynamixel adapter (empty: config/dynamixel_driver.yaml)'),
    ('server', '', 'Motive (NatNet server) address (empty: config/mocap_bridge.yaml)'),
    ('local', '', "this machine's address on the capture network (empty: the file)"),
    ('csv', '', 'replay this Motive CSV export instead of the live stream'),
    ('model', 'stacked_manipulator', 'model of the robot (tracking and collision checking)'),
    ('namespace', '', 'ROS namespace of the three nodes'),
    ('experiment', '', "the driver runs the paper's sinusoids: true/false (empty: the file)"),
    ('live_view', 'false', 'serve the live view for the Foxglove app (config/live_view.yaml): true/false'),
    ('live_view_port', '8765', 'TCP port of the live view (0: any free port)'),
)

def launch_setup(context, *args, **kwargs):
    arg = {name: LaunchConfiguration(name).perform(context).strip() for name, *_ in ARGUMENTS}
    cfg = config_dir(__file__)
    ns = arg['namespace'].strip('/') or None
    text = lambda v: ParameterValue(v, value_type=str)  # noqa: E731
    drv = driver_overrides(arg['port'], arg['experiment'])
    mocap = {'model': text(arg['model'])}
    if arg['server']:
        mocap['natnet.server_address'] = text(arg['server'])
    if arg['local']:
        mocap['natnet.local_address'] = text(arg['local'])
    if arg['csv']:
        mocap.update({'source': text('csv'), 'csv.path': text(arg['csv'])})
    return live_view_actions(arg['live_view'] == 'true', arg['live_view_port'], cfg, arg['namespace']) + [
        Node(package='tensegrity_dynamixel', executable='dynamixel_driver_node', name='dynamixel_driver',
             namespace=ns, parameters=[str(cfg / 'dynamixel_driver.yaml')] + ([drv] if drv else []),
             output='screen', emulate_tty=True, sigterm_timeout=DRIVER_SIGTERM_TIMEOUT,
             sigkill_timeout=DRIVER_SIGKILL_TIMEOUT, on_exit=required('the Dynamixel driver')),
        Node(**STOP_TIMEOUTS, package='tensegrity_mocap', executable='mocap_bridge_node', name='mocap_bridge',
             namespace=ns,
             parameters=[str(cfg / 'mocap_bridge.yaml'), mocap], output='screen', emulate_tty=True,
             on_exit=required('the motion-capture bridge')),
        Node(**STOP_TIMEOUTS, package='tensegrity_monitor', executable='collision_monitor_node', namespace=ns,
             parameters=[str(cfg / 'collision_monitor.yaml'), {'model': text(arg['model'])}],
             output='screen', emulate_tty=True, on_exit=required('the collision monitor')),
    ]


def generate_launch_description():
    return LaunchDescription([DeclareLaunchArgument(n, default_value=d, description=t) for n, d, t in ARGUMENTS]
                             + [OpaqueFunction(function=launch_setup)])
