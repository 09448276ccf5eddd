"""Rolling locomotion in simulation: the simulator with a rolling robot on the ground, the collision monitor,
the locomotion controller and RViz.

    tensegrity new superball -o superball.yaml                      # a robot on the ground (once)
    ros2 launch tensegrity_bringup locomotion.launch.py model:=$PWD/superball.yaml
    ros2 topic pub -r 5 /cmd_vel geometry_msgs/Twist '{linear: {x: 0.0, y: 0.2}}'    # roll toward +y
    ros2 topic pub -1 /goal_pose geometry_msgs/PoseStamped '{header: {frame_id: world}, pose: {position: {x: 2.0}}}'
    ros2 service call /collision_monitor/clear_safety_stop std_srvs/srv/Trigger    # after a safety stop

cmd_vel's linear.x and linear.y are a direction in the odom frame (the robot has no front; see
docs/controllers.md). The controller moves only while the monitor's all-clear is fresh: a safety stop
drops the heading or goal and latches until the collision monitor's ~/clear_safety_stop service
(std_srvs/Trigger, refused while the hazard lasts) releases it; then command again. The node parameters
come from config/tensegrity_simulator.yaml, config/collision_monitor.yaml and
config/locomotion_controller.yaml; the launch argument model sets the simulator's and the controller's model
(required: the built-in models do not roll). The simulator, the
monitor and the controller are required: if one exits, the launch shuts down, and an exit code other than 0
makes ``ros2 launch`` exit 1. RViz is optional (skipped with a message when not installed or without a
display).
"""
from launch.actions import LogInfo
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from tensegrity_bringup.launch_support import (STOP_TIMEOUTS, config_dir, launch_description, live_view_actions,
                                               required, rviz_actions)

SIM_CONFIG = 'tensegrity_simulator.yaml'
MONITOR_CONFIG = 'collision_monitor.yaml'
CONTROLLER_CONFIG = 'locomotion_controller.yaml'
RVIZ_CONFIG = 'tensegrity.rviz'
# Topics that config/tensegrity.rviz names absolutely: remapped into the namespace when one is given.
RVIZ_TOPICS = ('markers', 'collision_markers', 'node_positions', 'markers/obstacles', 'markers/contacts', 'odom')

ARGUMENTS = (
    # name, default, description, choices
    ('model', '', 'the rolling robot: a model file on the ground (e.g. from tensegrity new superball)', None),
    ('namespace', '', 'ROS namespace of all nodes and topics (empty: none)', None),
    ('rviz', 'true', f'start RViz with config/{RVIZ_CONFIG}', ['true', 'false']),
    ('live_view', 'false', 'serve the live view for the Foxglove app (config/live_view.yaml)', ['true', 'false']),
    ('live_view_port', '8765', 'TCP port of the live view (0: any free port)', None),
)


def launch_setup(context, *args, **kwargs):
    arg = {name: LaunchConfiguration(name).perform(context).strip() for name, *_ in ARGUMENTS}
    if not arg['model']:
        raise RuntimeError('launch argument model:= is required: a rolling robot on the ground, e.g. '
                           "'tensegrity new superball -o superball.yaml' then model:=$PWD/superball.yaml")
    config = config_dir(__file__)
    namespace = arg['namespace'].strip('/')
    ns = namespace or None
    model = {'model': ParameterValue(arg['model'], value_type=str)}
    actions = [
        LogInfo(msg=f"locomotion: parameters from {config}, model {arg['model']!r}"),
        Node(**STOP_TIMEOUTS, package='tensegrity_sim', executable='simulator_node', namespace=ns,
             parameters=[str(config / SIM_CONFIG), model], output='screen', emulate_tty=True,
             on_exit=required('the tensegrity simulator')),
        Node(**STOP_TIMEOUTS, package='tensegrity_monitor', executable='collision_monitor_node', namespace=ns,
             parameters=[str(config / MONITOR_CONFIG)], output='screen', emulate_tty=True,
             on_exit=required('the collision monitor')),
        Node(**STOP_TIMEOUTS, package='tensegrity_control', executable='locomotion_controller', namespace=ns,
             parameters=[str(config / CONTROLLER_CONFIG), model], output='screen', emulate_tty=True,
             on_exit=required('the locomotion controller')),
    ]
    actions += rviz_actions(arg['rviz'] == 'true', config / RVIZ_CONFIG, 'world', namespace, RVIZ_TOPICS)
    actions += live_view_actions(arg['live_view'] == 'true', arg['live_view_port'], config, namespace)
    return actions


def generate_launch_description():
    return launch_description(ARGUMENTS, launch_setup)
