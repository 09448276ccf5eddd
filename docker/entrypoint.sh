#!/usr/bin/env bash
# Entry point of the tensegrity images: the ROS 2 environment and the workspace overlay, then the command.
set -e
# (no `set -u`: the setup files read unset variables)
source "/opt/ros/${ROS_DISTRO:-jazzy}/setup.bash"
source /ws/install/setup.bash
exec "$@"
