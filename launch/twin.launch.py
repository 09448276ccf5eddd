"""Digital twin: the real robot's Dynamixel driver and the simulator side by side.

    ros2 launch tensegrity_bringup twin.launch.py port:=/dev/ttyUSB0 experiment:=true

The driver runs in namespace ``robot``, the simulator and a collision monitor in ``twin``. The simulator
takes the goals the driver sends to the motors (``/robot/motor_goals`` -> ``/twin/motor_commands``), so it
moves as the robot is commanded; with ``predictive_stop:=true`` (default) the twin's collision monitor
stops the real robot (``/twin/safety_stop`` -> the driver's ``safety_stop``) before a predicted contact.
Compare ``/robot/joint_states`` with ``/twin/joint_states`` (and, with the motion-capture bridge, the
measured with the simulated node positions).
The driver, the simulator and the monitor are required: if one exits, the launch shuts down (the driver
gets SIGINT and turns torque off first) and an exit code other than 0 makes ``ros2 launch`` exit 1. RViz
is optional (skipped with a message when not installed).
"""
import os
from pathlib import Path

from ament_index_python.packages import PackageNotFoundError, get_package_prefix, get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction, Shutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

ARGUMENTS = (
    ('port', '', 'serial device of the adapter (empty: config/dynamixel_driver.yaml)'),
    ('experiment', '', "the driver runs the paper's sinusoids from the start: true/false (empty: the file)"),
    ('predictive_stop', 'true', "the twin's collision monitor stops the real robot: true/false"),
    ('robot_namespace', 'robot', 'namespace of the driver'),
    ('twin_namespace', 'twin', 'namespace of the simulator and its collision monitor'),
    ('rviz', 'false', 'start RViz on the twin (config/tensegrity.rviz): true/false'),
)

# The driver turns torque off when it gets SIGINT (launch sends it at shutdown) and then ignores further
# signals; give it time to do so before launch escalates (SIGTERM after sigterm_timeout, SIGKILL
# sigkill_timeout later; launch's defaults are 5 s + 5 s).
DRIVER_SIGTERM_TIMEOUT = '10'
DRIVER_SIGKILL_TIMEOUT = '10'


def share() -> Path:
    try:
        return Path(get_package_share_directory('tensegrity_bringup'))
    except (PackageNotFoundError, OSError):
        return Path(__file__).resolve().parent.parent


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


def launch_setup(context, *args, **kwargs):
    arg = {name: LaunchConfiguration(name).perform(context).strip() for name, *_ in ARGUMENTS}
    cfg = share() / 'config'
    robot, twin = arg['robot_namespace'].strip('/'), arg['twin_namespace'].strip('/')
    if not robot or not twin or robot == twin:
        raise RuntimeError('robot_namespace and twin_namespace must be two different, non-empty namespaces')
    drv = {}
    if arg['port']:
        drv['port'] = ParameterValue(arg['port'], value_type=str)
    if arg['experiment']:
        drv['experiment.enabled'] = arg['experiment'] == 'true'
    stop_remap = [('safety_stop', f'/{twin}/safety_stop')] if arg['predictive_stop'] == 'true' else []
    actions = [
        Node(package='tensegrity_dynamixel', executable='dynamixel_driver_node', name='dynamixel_driver',
             namespace=robot, parameters=[str(cfg / 'dynamixel_driver.yaml')] + ([drv] if drv else []),
             remappings=stop_remap, output='screen', emulate_tty=True, sigterm_timeout=DRIVER_SIGTERM_TIMEOUT,
             sigkill_timeout=DRIVER_SIGKILL_TIMEOUT, on_exit=required('the Dynamixel driver')),
        Node(package='tensegrity_sim', executable='simulator_node', namespace=twin,
             parameters=[str(cfg / 'tensegrity_simulator.yaml'), {'experiment.enabled': False}],
             remappings=[('motor_commands', f'/{robot}/motor_goals')], output='screen', emulate_tty=True,
             on_exit=required('the twin simulator')),
        Node(package='tensegrity_monitor', executable='collision_monitor_node', namespace=twin,
             parameters=[str(cfg / 'collision_monitor.yaml')], output='screen', emulate_tty=True,
             on_exit=required('the twin collision monitor')),
    ]
    if arg['rviz'] == 'true' and not installed('rviz2', 'rviz2'):
        actions.append(LogInfo(msg='RViz not started: rviz2 is not installed (apt install ros-$ROS_DISTRO-rviz2)'))
    elif arg['rviz'] == 'true':
        topics = ('markers', 'collision_markers', 'node_positions', 'plate_pose/c0', 'plate_pose/c1',
                  'plate_pose/c2')
        actions.append(Node(package='rviz2', executable='rviz2', arguments=['-d', str(cfg / 'tensegrity.rviz')],
                            remappings=[(f'/{t}', f'/{twin}/{t}') for t in topics], output='screen'))
    return actions


def generate_launch_description():
    return LaunchDescription([DeclareLaunchArgument(n, default_value=d, description=t) for n, d, t in ARGUMENTS]
                             + [OpaqueFunction(function=launch_setup)])
