"""Simulation bringup: the tensegrity simulator, the self-collision monitor, robot_state_publisher and RViz.

    ros2 launch tensegrity_bringup simulation.launch.py                          # installed package
    ros2 launch tensegrity_bringup simulation.launch.py rviz:=false experiment:=true
    ros2 launch tensegrity_bringup simulation.launch.py namespace:=robot1 physics_rate:=500.0
    ros2 launch tensegrity_bringup simulation.launch.py live_view:=true   # watch and steer in Foxglove (port 8765)
    ros2 launch launch/simulation.launch.py              # from a source checkout (tensegrity_bringup importable)

The node parameters come from config/tensegrity_simulator.yaml and config/collision_monitor.yaml. The
launch arguments model, physics_rate, publish_rate, experiment and frame_id override the simulator's
parameters of the same name (experiment -> experiment.enabled) when given; left empty they keep the
file's value. robot_state_publisher (the URDF's fixed base plate, for RViz's RobotModel) runs only for the
model the URDF describes, stacked_manipulator.

The monitor's safety stop latches until its ~/clear_safety_stop service releases it (refused while the
hazard lasts): ros2 service call /collision_monitor/clear_safety_stop std_srvs/srv/Trigger (with a namespace:
/<namespace>/collision_monitor/clear_safety_stop).

The simulator and the monitor are required: if either exits, the launch shuts down (the others get SIGINT),
and an exit code other than 0 (a bad parameter: 2; killed: -9) makes ``ros2 launch`` exit 1.
robot_state_publisher and RViz are optional: when not installed (or, for RViz, without a display) they are
skipped with a message; closing RViz ends the launch.
"""
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from tensegrity_bringup.launch_support import (STOP_TIMEOUTS, bringup_share, installed, live_view_actions, required,
                                               rviz_actions)

SIM_CONFIG = 'tensegrity_simulator.yaml'
MONITOR_CONFIG = 'collision_monitor.yaml'
RVIZ_CONFIG = 'tensegrity.rviz'
URDF_FILE = 'stacked_manipulator.urdf'
URDF_MODEL = 'stacked_manipulator'      # the model the URDF describes
URDF_ROOT = 'world'                     # the URDF's root link
# Topics that config/tensegrity.rviz names absolutely: remapped into the namespace when one is given.
RVIZ_TOPICS = ('markers', 'collision_markers', 'node_positions', 'plate_pose/c0', 'plate_pose/c1',
               'plate_pose/c2', 'robot_description', 'markers/raw', 'markers/rviz', 'markers/obstacles',
               'markers/contacts', 'odom')

ARGUMENTS = (
    # name, default, description, choices
    ('model', '', ('simulator model: built-in name or path to a model YAML file '
                   f'(empty: the value in config/{SIM_CONFIG})'), None),
    ('namespace', '', 'ROS namespace of all nodes and topics (empty: none)', None),
    ('physics_rate', '', f'physics step rate [Hz] (empty: config/{SIM_CONFIG})', None),
    ('publish_rate', '', f'state publishing rate [Hz] (empty: config/{SIM_CONFIG})', None),
    ('experiment', '', ("run the paper's sinusoid experiment from the start "
                        f'(empty: config/{SIM_CONFIG})'), ['', 'true', 'false']),
    ('frame_id', '', f'fixed frame of the simulator and RViz (empty: config/{SIM_CONFIG})', None),
    ('rviz', 'true', 'start RViz with config/tensegrity.rviz', ['true', 'false']),
    ('robot_state_publisher', 'true', (f'start robot_state_publisher with urdf/{URDF_FILE} '
                                       f'(only for the model {URDF_MODEL})'), ['true', 'false']),
    ('live_view', 'false', 'serve the live view for the Foxglove app (config/live_view.yaml)', ['true', 'false']),
    ('live_view_port', '8765', 'TCP port of the live view (0: any free port)', None),
)


def node_parameters(params_file: Path, node_name: str) -> dict:
    """The ros__parameters of ``node_name`` in a parameter file (keys '/**/name', '/name' or 'name')."""
    data = yaml.safe_load(params_file.read_text()) or {}
    for key, value in data.items():
        if str(key).rstrip('/').split('/')[-1] == node_name:
            return dict((value or {}).get('ros__parameters') or {})
    return {}


def _float_argument(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise RuntimeError(f"launch argument {name}:='{text}' is not a number") from None
    if not value > 0:
        raise RuntimeError(f'launch argument {name}:={text} must be positive')
    return value


def simulator_overrides(args: dict) -> dict:
    """Simulator parameters from the launch arguments that were given (typed as the node declares them)."""
    out = {}
    for name in ('model', 'frame_id'):
        if args[name]:
            out[name] = ParameterValue(args[name], value_type=str)
    for name in ('physics_rate', 'publish_rate'):
        if args[name]:
            out[name] = _float_argument(name, args[name])
    if args['experiment']:
        out['experiment.enabled'] = args['experiment'] == 'true'
    return out


def urdf_with_root(urdf_file: Path, root: str) -> str:
    """The URDF text, with the root link renamed to ``root`` if that is not the URDF's own root."""
    text = urdf_file.read_text()
    if root == URDF_ROOT:
        return text
    robot = ET.fromstring(text)
    for link in robot.iter('link'):
        if link.get('name') == URDF_ROOT:
            link.set('name', root)
    for parent in robot.iter('parent'):
        if parent.get('link') == URDF_ROOT:
            parent.set('link', root)
    return ET.tostring(robot, encoding='unicode')


def launch_setup(context, *args, **kwargs):
    arg = {name: LaunchConfiguration(name).perform(context).strip() for name, *_ in ARGUMENTS}
    share = bringup_share(__file__)
    config = share / 'config'
    sim_file, monitor_file = config / SIM_CONFIG, config / MONITOR_CONFIG
    rviz_file, urdf_file = config / RVIZ_CONFIG, share / 'urdf' / URDF_FILE
    namespace = arg['namespace'].strip('/')
    ns = namespace or None                  # Node(namespace=None): no namespace
    sim_yaml = node_parameters(sim_file, 'tensegrity_simulator')
    model = arg['model'] or str(sim_yaml.get('model', ''))
    frame_id = arg['frame_id'] or str(sim_yaml.get('frame_id', URDF_ROOT))

    overrides = simulator_overrides(arg)
    actions = [
        LogInfo(msg=f'tensegrity simulation: parameters from {config}, model {model!r}, frame {frame_id!r}, '
                    f"namespace {('/' + namespace) if namespace else '(none)'}"),
        Node(**STOP_TIMEOUTS, package='tensegrity_sim', executable='simulator_node', namespace=ns,
             parameters=[str(sim_file)] + ([overrides] if overrides else []),
             output='screen', emulate_tty=True, on_exit=required('the tensegrity simulator')),
        Node(**STOP_TIMEOUTS, package='tensegrity_monitor', executable='collision_monitor_node', namespace=ns,
             parameters=[str(monitor_file)], output='screen', emulate_tty=True,
             on_exit=required('the collision monitor')),
    ]

    if arg['robot_state_publisher'] == 'true':
        if not installed('robot_state_publisher', 'robot_state_publisher'):
            actions.append(LogInfo(msg='robot_state_publisher not started: the package is not installed '
                                       '(apt install ros-$ROS_DISTRO-robot-state-publisher); RViz shows the '
                                       'markers without the base plate model'))
        elif Path(model).stem == URDF_MODEL:
            urdf = urdf_with_root(urdf_file, frame_id)
            actions.append(Node(
                **STOP_TIMEOUTS,
                package='robot_state_publisher', executable='robot_state_publisher', namespace=ns,
                parameters=[{'robot_description': ParameterValue(urdf, value_type=str)}], output='screen'))
        else:
            actions.append(LogInfo(msg=f'robot_state_publisher not started: urdf/{URDF_FILE} describes '
                                       f'{URDF_MODEL}, not {model!r}'))

    actions += rviz_actions(arg['rviz'] == 'true', rviz_file, frame_id, namespace, RVIZ_TOPICS)
    actions += live_view_actions(arg['live_view'] == 'true', arg['live_view_port'], config, namespace)
    return actions


def generate_launch_description():
    declared = [DeclareLaunchArgument(name, default_value=default, description=text, choices=choices)
                for name, default, text, choices in ARGUMENTS]
    return LaunchDescription(declared + [OpaqueFunction(function=launch_setup)])
