"""Topic names (relative, so a namespace or remapping moves them) and their QoS profiles.

Streams use SensorDataQoS (best effort, keep last 5): a late sample is worth nothing. Commands and the
safety stop are reliable; the model description and the safety stop are latched (transient local) so
late joiners get the last value.
"""
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy,
                       qos_profile_sensor_data)

MODEL_DESCRIPTION = "model_description"          # std_msgs/String (JSON, see description.py), latched
NODE_POSITIONS = "node_positions"                # geometry_msgs/PoseArray, physical nodes in model order
STRING_STATES = "string_states"                  # sensor_msgs/JointState: length [m], rate [m/s], tension [N]
JOINT_STATES = "joint_states"                    # sensor_msgs/JointState: motor angle [rad], rate [rad/s]
MOTOR_COMMANDS = "motor_commands"                # sensor_msgs/JointState: goal motor angles [rad]
DISPLACEMENT_COMMANDS = "displacement_commands"  # sensor_msgs/JointState: goal reeled-in length u [m]
EXTERNAL_FORCE = "external_force"                # geometry_msgs/WrenchStamped, header.frame_id = node name
MARKERS = "markers"                              # visualization_msgs/MarkerArray
OBSTACLE_MARKERS = "markers/obstacles"           # visualization_msgs/MarkerArray, latched (static obstacles)
CONTACT_MARKERS = "markers/contacts"             # visualization_msgs/MarkerArray: contact force arrows
ODOMETRY = "odom"                                # nav_msgs/Odometry of a mobile robot's body frame
PLATE_POSE = "plate_pose/{frame}"                # geometry_msgs/PoseStamped per model frame (lower case)
PLATE_GOAL_NEAREST = "plate_goal/nearest"        # geometry_msgs/PoseStamped: a goal's nearest reachable pose, latched
PLATE_GOAL_REACHED = "plate_goal/reached"        # geometry_msgs/PoseStamped: where the plate arrived, when, latched
CLEARANCES = "clearances"                        # std_msgs/Float64MultiArray, pair order in CLEARANCE_PAIRS
CLEARANCE_PAIRS = "clearance_pairs"              # std_msgs/String (JSON list of [element, element]), latched
MIN_CLEARANCE = "min_clearance"                  # std_msgs/Float64 [m]
OBSTACLE_CLEARANCES = "obstacle_clearances"      # std_msgs/Float64MultiArray, order in OBSTACLE_PAIRS
OBSTACLE_PAIRS = "obstacle_clearance_pairs"      # std_msgs/String (JSON list of [bar, obstacle]), latched
MIN_OBSTACLE_CLEARANCE = "min_obstacle_clearance"  # std_msgs/Float64 [m]
COLLISION_MARKERS = "collision_markers"          # visualization_msgs/MarkerArray
SAFETY_STOP = "safety_stop"                      # std_msgs/Bool, latched
DIAGNOSTICS = "/diagnostics"                     # diagnostic_msgs/DiagnosticArray (the aggregator's topic)


def plate_pose_topic(frame_name: str) -> str:
    return PLATE_POSE.format(frame=frame_name.lower())


def latched_qos(depth: int = 1) -> QoSProfile:
    """Reliable + transient local: the last message is delivered to subscribers that join later."""
    return QoSProfile(depth=depth, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


def command_qos(depth: int = 10) -> QoSProfile:
    """Reliable, volatile: commands must not be lost."""
    return QoSProfile(depth=depth, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)


def sensor_qos() -> QoSProfile:
    """Best effort, keep last 5 (rclpy's SensorDataQoS)."""
    return qos_profile_sensor_data


def state_qos(depth: int = 10) -> QoSProfile:
    """Reliable, volatile: low-rate state (clearances, markers) that tools like RViz subscribe to reliably."""
    return command_qos(depth)
