"""Digital twin: the real robot's Dynamixel driver and the simulator side by side.

    ros2 launch tensegrity_bringup twin.launch.py port:=/dev/ttyUSB0 experiment:=true

The driver runs in namespace ``robot``, the simulator and a collision monitor in ``twin``. The simulator
takes the goals the driver sends to the motors (``/robot/motor_goals`` -> ``/twin/motor_commands``), so it
moves as the robot is commanded; with ``predictive_stop:=true`` (default) the twin's collision monitor
stops the real robot (``/twin/safety_stop`` -> the driver's ``safety_stop``) before a predicted contact.
A stop latches until ``ros2 service call /twin/collision_monitor/clear_safety_stop std_srvs/srv/Trigger``
(refused while the hazard lasts). Compare ``/robot/joint_states`` with ``/twin/joint_states`` (and, with
the motion-capture bridge, the measured with the simulated node positions).
The driver, the simulator and the monitor are required: if one exits, the launch shuts down (the driver
gets SIGINT and turns torque off first) and an exit code other than 0 makes ``ros2 launch`` exit 1. RViz
is optional (skipped with a message when not installed).
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from tensegrity_bringup.launch_support import (DRIVER_SIGKILL_TIMEOUT, DRIVER_SIGTERM_TIMEOUT, STOP_TIMEOUTS,
                                               config_dir, driver_overrides, installed, live_view_actions, required)

ARGUMENTS = (
    ('port', '', 'serial device of the adapter (empty: config/dynamixel_driver.yaml)'),
    ('experiment', '', "the driver runs the paper's sinusoids from the start: true/false (empty: the file)"),
    ('predictive_stop', 'true', "the twin's collision monitor stops the real robot: true/false"),
    ('robot_namespace', 'robot', 'namespace of the driver'),
    ('twin_namespace', 'twin', 'namespace of the simulator and its collision monitor'),
    ('rviz', 'false', 'start RViz on the twin (config/tensegrity.rviz): true/false'),
    ('live_view', 'false', 'serve the live view for the Foxglove app (config/live_view.yaml): true/false'),
    ('live_view_port', '8765', 'TCP port of the live view (0: any free port)'),
)

def launch_setup(context, *args, **kwargs):
    arg = {name: LaunchConfiguration(name).perform(context).strip() for name, *_ in ARGUMENTS}
    cfg = config_dir(__file__)
    robot, twin = arg['robot_namespace'].strip('/'), arg['twin_namespace'].strip('/')
    if not robot or not twin or robot == twin:
        raise RuntimeError('robot_namespace and twin_namespace must be two different, non-empty namespaces')
    drv = driver_overrides(arg['port'], arg['experiment'])
    stop_remap = [('safety_stop', f'/{twin}/safety_stop')] if arg['predictive_stop'] == 'true' else []
    actions = [
        Node(package='tensegrity_dynamixel', executable='dynamixel_driver_node', name='dynamixel_driver',
             namespace=robot, parameters=[str(cfg / 'dynamixel_driver.yaml')] + ([drv] if drv else []),
             remappings=stop_remap, output='screen', emulate_tty=True, sigterm_timeout=DRIVER_SIGTERM_TIMEOUT,
             sigkill_timeout=DRIVER_SIGKILL_TIMEOUT, on_exit=required('the Dynamixel driver')),
        Node(**STOP_TIMEOUTS, package='tensegrity_sim', executable='simulator_node', namespace=twin,
             parameters=[str(cfg / 'tensegrity_simulator.yaml'), {'experiment.enabled': False}],
             remappings=[('motor_commands', f'/{robot}/motor_goals')], output='screen', emulate_tty=True,
             on_exit=required('the twin simulator')),
        Node(**STOP_TIMEOUTS, package='tensegrity_monitor', executable='collision_monitor_node', namespace=twin,
             parameters=[str(cfg / 'collision_monitor.yaml')], output='screen', emulate_tty=True,
             on_exit=required('the twin collision monitor')),
    ]
    if arg['rviz'] == 'true' and not installed('rviz2', 'rviz2'):
        actions.append(LogInfo(msg='RViz not started: rviz2 is not installed (apt install ros-$ROS_DISTRO-rviz2)'))
    elif arg['rviz'] == 'true':
        topics = ('markers', 'collision_markers', 'node_positions', 'plate_pose/c0', 'plate_pose/c1',
                  'plate_pose/c2', 'markers/obstacles', 'markers/contacts', 'odom')
        actions.append(Node(**STOP_TIMEOUTS, package='rviz2', executable='rviz2',
                            arguments=['-d', str(cfg / 'tensegrity.rviz')],
                            remappings=[(f'/{t}', f'/{twin}/{t}') for t in topics], output='screen'))
    actions += live_view_actions(arg['live_view'] == 'true', arg['live_view_port'], cfg, twin)    # the twin's view
    return actions


def generate_launch_description():
    return LaunchDescription([DeclareLaunchArgument(n, default_value=d, description=t) for n, d, t in ARGUMENTS]
                             + [OpaqueFunction(function=launch_setup)])
