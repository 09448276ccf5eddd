"""Plate pose control in simulation: the simulator with the stacked manipulator, the collision monitor, the
pose controller and RViz.

    ros2 launch tensegrity_bringup manipulation.launch.py
    ros2 topic pub -1 /plate_goal geometry_msgs/PoseStamped '{header: {frame_id: world}, pose: {position:
        {x: 0.008, y: 0.0, z: 1.352}, orientation: {x: 0.001094, y: 0.013044, z: -0.083584, w: 0.996415}}}'
    ros2 service call /collision_monitor/clear_safety_stop std_srvs/srv/Trigger    # after a safety stop

The goal is the plate C2 8 mm aside, 4 mm lower and pitched 1.5 deg (yaw -9.59 deg as at rest; the plate
starts at 0, 0, 1.356 m): reachable, the inputs within 36 % of their limits (tensegrity workspace
stacked_manipulator --frame C2 shows the reachable poses; an unreachable goal goes to the nearest pose).

The node parameters come from config/tensegrity_simulator.yaml, config/collision_monitor.yaml and
config/pose_controller.yaml; the launch arguments model and frame override the simulator's and the
controller's model and the controlled plate when given. The pose controller moves only while the monitor's
all-clear is fresh: a safety stop drops the goal and latches until the collision monitor's
~/clear_safety_stop service (std_srvs/Trigger, refused while the hazard lasts) releases it; then send the
goal again (docs/controllers.md, docs/safety.md). The simulator, the monitor and the
controller are required: if one exits, the launch shuts down, and an exit code other than 0 makes
``ros2 launch`` exit 1. RViz is optional (skipped with a message when not installed or without a display).
"""
from launch.actions import LogInfo
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from tensegrity_bringup.launch_support import (STOP_TIMEOUTS, config_dir, launch_description, live_view_actions,
                                               required, rviz_actions)

SIM_CONFIG = 'tensegrity_simulator.yaml'
MONITOR_CONFIG = 'collision_monitor.yaml'
CONTROLLER_CONFIG = 'pose_controller.yaml'
RVIZ_CONFIG = 'tensegrity.rviz'
# Topics that config/tensegrity.rviz names absolutely: remapped into the namespace when one is given.
RVIZ_TOPICS = ('markers', 'collision_markers', 'node_positions', 'plate_pose/c0', 'plate_pose/c1',
               'plate_pose/c2')

ARGUMENTS = (
    # name, default, description, choices
    ('model', '', f'model of the simulator and the controller (empty: config/{SIM_CONFIG}, {CONTROLLER_CONFIG})',
     None),
    ('frame', '', f'the controlled plate frame (empty: config/{CONTROLLER_CONFIG})', None),
    ('namespace', '', 'ROS namespace of all nodes and topics (empty: none)', None),
    ('rviz', 'true', f'start RViz with config/{RVIZ_CONFIG}', ['true', 'false']),
    ('live_view', 'false', 'serve the live view for the Foxglove app (config/live_view.yaml)', ['true', 'false']),
    ('live_view_port', '8765', 'TCP port of the live view (0: any free port)', None),
)


def launch_setup(context, *args, **kwargs):
    arg = {name: LaunchConfiguration(name).perform(context).strip() for name, *_ in ARGUMENTS}
    config = config_dir(__file__)
    namespace = arg['namespace'].strip('/')
    ns = namespace or None
    model = {'model': ParameterValue(arg['model'], value_type=str)} if arg['model'] else {}
    controller = dict(model, **({'frame': ParameterValue(arg['frame'], value_type=str)} if arg['frame'] else {}))
    actions = [
        LogInfo(msg=f"manipulation: parameters from {config}, model {arg['model'] or '(from the files)'}"),
        Node(**STOP_TIMEOUTS, package='tensegrity_sim', executable='simulator_node', namespace=ns,
             parameters=[str(config / SIM_CONFIG)] + ([model] if model else []), output='screen',
             emulate_tty=True, on_exit=required('the tensegrity simulator')),
        Node(**STOP_TIMEOUTS, package='tensegrity_monitor', executable='collision_monitor_node', namespace=ns,
             parameters=[str(config / MONITOR_CONFIG)], output='screen', emulate_tty=True,
             on_exit=required('the collision monitor')),
        Node(**STOP_TIMEOUTS, package='tensegrity_control', executable='pose_controller', namespace=ns,
             parameters=[str(config / CONTROLLER_CONFIG)] + ([controller] if controller else []), output='screen',
             emulate_tty=True, on_exit=required('the pose controller')),
    ]
    actions += rviz_actions(arg['rviz'] == 'true', config / RVIZ_CONFIG, 'world', namespace, RVIZ_TOPICS)
    actions += live_view_actions(arg['live_view'] == 'true', arg['live_view_port'], config, namespace)
    return actions


def generate_launch_description():
    return launch_description(ARGUMENTS, launch_setup)
