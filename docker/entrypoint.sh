#!/usr/bin/env bash
# Entry point of the tensegrity images: the ROS 2 environment and the workspace overlay, then the command.
set -e
# (no `set -u`: the setup files read unset variables)
source "/opt/ros/${ROS_DISTRO:-jazzy}/setup.bash"
source /ws/install/setup.bash
# PID 1 is the supervisor: SIGTERM (docker stop) reaches `ros2 launch` as SIGINT, and nodes a dead launcher
# left behind are waited for (their torque off) before the container ends (tensegrity_ros_common.supervise)
exec python3 -m tensegrity_ros_common.supervise -- "$@"
