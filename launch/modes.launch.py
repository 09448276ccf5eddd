"""Mode shapes in RViz: the mode viewer (one elastic mode of a model, animated) and RViz.

    ros2 launch tensegrity_bringup modes.launch.py                               # installed package
    ros2 launch tensegrity_bringup modes.launch.py model:=prism3 mode:=2
    ros2 launch launch/modes.launch.py rviz:=false       # from a source checkout (tensegrity_bringup importable)
    ros2 param set /mode_viewer mode 3                   # switch the mode while it runs

The node parameters come from config/mode_viewer.yaml; the launch arguments model and mode override them
when given (left empty they keep the file's value). The viewer publishes on the simulator's topics
(markers, node_positions, model_description): do not start it next to a simulator in the same namespace.
The viewer is required: if it exits, the launch shuts down, and an exit code other than 0 (a bad
parameter: 2) makes ``ros2 launch`` exit 1. RViz is optional: skipped with a message when not installed or
without a display; closing RViz ends the launch.
"""

import yaml
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from tensegrity_bringup.launch_support import STOP_TIMEOUTS, config_dir, required, rviz_actions

VIEWER_CONFIG = 'mode_viewer.yaml'
RVIZ_CONFIG = 'tensegrity.rviz'
# Topics that config/tensegrity.rviz names absolutely and the viewer publishes: remapped into the namespace.
RVIZ_TOPICS = ('markers', 'node_positions')

ARGUMENTS = (
    # name, default, description, choices
    ('model', '', f'built-in model name or path to a model YAML file (empty: config/{VIEWER_CONFIG})', None),
    ('mode', '', f'elastic mode shown, 1 = lowest (empty: config/{VIEWER_CONFIG})', None),
    ('namespace', '', 'ROS namespace of the viewer and its topics (empty: none)', None),
    ('rviz', 'true', f'start RViz with config/{RVIZ_CONFIG}', ['true', 'false']),
)


def viewer_overrides(args: dict) -> dict:
    """Viewer parameters from the launch arguments that were given (typed as the node declares them)."""
    out = {}
    if args['model']:
        out['model'] = ParameterValue(args['model'], value_type=str)
    if args['mode']:
        try:
            out['mode'] = int(args['mode'])
        except ValueError:
            raise RuntimeError(f"launch argument mode:='{args['mode']}' is not a mode number") from None
    return out


def launch_setup(context, *args, **kwargs):
    arg = {name: LaunchConfiguration(name).perform(context).strip() for name, *_ in ARGUMENTS}
    config = config_dir(__file__)
    viewer_file, rviz_file = config / VIEWER_CONFIG, config / RVIZ_CONFIG
    namespace = arg['namespace'].strip('/')
    ns = namespace or None
    params = (yaml.safe_load(viewer_file.read_text()) or {}).get('/**/mode_viewer', {}).get('ros__parameters', {})
    frame_id = str(params.get('frame_id', 'world'))
    overrides = viewer_overrides(arg)
    actions = [
        LogInfo(msg=f"mode viewer: parameters from {viewer_file}, model {arg['model'] or params.get('model')!r}"),
        Node(**STOP_TIMEOUTS, package='tensegrity_sim', executable='mode_viewer_node', namespace=ns,
             parameters=[str(viewer_file)] + ([overrides] if overrides else []),
             output='screen', emulate_tty=True, on_exit=required('the mode viewer')),
    ]
    actions += rviz_actions(arg['rviz'] == 'true', rviz_file, frame_id, namespace, RVIZ_TOPICS)
    return actions


def generate_launch_description():
    declared = [DeclareLaunchArgument(name, default_value=default, description=text, choices=choices)
                for name, default, text, choices in ARGUMENTS]
    return LaunchDescription(declared + [OpaqueFunction(function=launch_setup)])
