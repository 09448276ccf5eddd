"""Rolling with a learned policy in simulation: the simulator with a rolling robot on the ground, the collision
monitor, the policy controller and RViz.

    tensegrity new superball --friction 0.8 -o superball.yaml      # the robot the committed policy was trained for
    ros2 launch tensegrity_bringup policy.launch.py model:=$PWD/superball.yaml \
        policy:=$PWD/config/policies/superball_rolling.npz
    ros2 topic pub -r 5 /cmd_vel geometry_msgs/Twist '{linear: {x: 0.2}}'       # run it (it rolls toward +x)

The policy file (bench/train_rolling.py --save) is checked against the model: a policy of another robot stops
the controller with a message naming the file and the fix. cmd_vel runs the policy while it is fresh; its
direction must lie within heading_tolerance of the policy's heading (docs/controllers.md). The node parameters
come from config/tensegrity_simulator.yaml, config/collision_monitor.yaml and config/policy_controller.yaml; the
simulator, the monitor and the controller are required (if one exits, the launch shuts down). RViz is optional.
"""
from launch.actions import LogInfo
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from tensegrity_bringup.launch_support import (STOP_TIMEOUTS, config_dir, launch_description, live_view_actions,
                                               required, rviz_actions)

SIM_CONFIG = 'tensegrity_simulator.yaml'
MONITOR_CONFIG = 'collision_monitor.yaml'
CONTROLLER_CONFIG = 'policy_controller.yaml'
RVIZ_CONFIG = 'tensegrity.rviz'
RVIZ_TOPICS = ('markers', 'collision_markers', 'node_positions', 'markers/obstacles', 'markers/contacts', 'odom')

ARGUMENTS = (
    # name, default, description, choices
    ('model', '', 'the rolling robot: a model file on the ground (the one the policy was trained for)', None),
    ('policy', '', 'the policy file (.npz from bench/train_rolling.py --save)', None),
    ('namespace', '', 'ROS namespace of all nodes and topics (empty: none)', None),
    ('rviz', 'true', f'start RViz with config/{RVIZ_CONFIG}', ['true', 'false']),
    ('live_view', 'false', 'serve the live view for the Foxglove app (config/live_view.yaml)', ['true', 'false']),
    ('live_view_port', '8765', 'TCP port of the live view (0: any free port)', None),
)


def launch_setup(context, *args, **kwargs):
    arg = {name: LaunchConfiguration(name).perform(context).strip() for name, *_ in ARGUMENTS}
    for name in ('model', 'policy'):
        if not arg[name]:
            raise RuntimeError(f'launch argument {name}:= is required: model:=$PWD/superball.yaml (tensegrity new '
                               'superball --friction 0.8 -o superball.yaml) and '
                               'policy:=$PWD/config/policies/superball_rolling.npz')
    config = config_dir(__file__)
    namespace = arg['namespace'].strip('/')
    ns = namespace or None
    model = {'model': ParameterValue(arg['model'], value_type=str)}
    policy = {'policy': ParameterValue(arg['policy'], value_type=str)}
    actions = [
        LogInfo(msg=f"policy: parameters from {config}, model {arg['model']!r}, policy {arg['policy']!r}"),
        Node(**STOP_TIMEOUTS, package='tensegrity_sim', executable='simulator_node', namespace=ns,
             parameters=[str(config / SIM_CONFIG), model], output='screen', emulate_tty=True,
             on_exit=required('the tensegrity simulator')),
        Node(**STOP_TIMEOUTS, package='tensegrity_monitor', executable='collision_monitor_node', namespace=ns,
             parameters=[str(config / MONITOR_CONFIG)], output='screen', emulate_tty=True,
             on_exit=required('the collision monitor')),
        Node(**STOP_TIMEOUTS, package='tensegrity_control', executable='policy_controller', namespace=ns,
             parameters=[str(config / CONTROLLER_CONFIG), model, policy], output='screen', emulate_tty=True,
             on_exit=required('the policy controller')),
    ]
    actions += rviz_actions(arg['rviz'] == 'true', config / RVIZ_CONFIG, 'world', namespace, RVIZ_TOPICS)
    actions += live_view_actions(arg['live_view'] == 'true', arg['live_view_port'], config, namespace)
    return actions


def generate_launch_description():
    return launch_description(ARGUMENTS, launch_setup)
