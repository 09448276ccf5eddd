#!/usr/bin/env bash
# Set up a fresh machine and run the main job.
#   ./setup.sh            create .venv, install everything, run the digital twin of the manipulator experiment
#                         through the ROS 2 nodes (MCAP recording + plots in runs/twin)
#   ./setup.sh --no-run   only install
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  echo "error: Python >= 3.10 is required (found $("$PY" --version 2>&1))" >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  echo "==> creating virtual environment .venv"
  "$PY" -m venv .venv
fi
# Exact versions from requirements.lock (resolved from requirements-dev.txt's ranges and tested;
# tools/relock.sh re-resolves them). uv (pinned in requirements-tools.txt) installs them in seconds;
# TENSEGRITY_INSTALLER=pip uses plain pip instead (same lock, same versions).
echo "==> installing the locked packages (requirements.lock: engine, ROS 2 wheels from PyPI, tools) and src/*"
PKGS="tensegrity_engine tensegrity_ros_common tensegrity_sim tensegrity_monitor tensegrity_dynamixel tensegrity_mocap tensegrity_control tensegrity_live tensegrity_bringup"
if [ "${TENSEGRITY_INSTALLER:-uv}" = "uv" ] && .venv/bin/python -m pip install --quiet -r requirements-tools.txt; then
  .venv/bin/uv pip install --quiet --python .venv/bin/python --compile-bytecode -r requirements.lock
  for pkg in $PKGS; do
    .venv/bin/uv pip install --quiet --python .venv/bin/python --no-deps -e "src/$pkg"
  done
else
  .venv/bin/python -m pip install --quiet -r requirements.lock
  for pkg in $PKGS; do
    .venv/bin/python -m pip install --quiet --no-deps -e "src/$pkg"
  done
fi
.venv/bin/python -m pip check >/dev/null || { .venv/bin/python -m pip check; exit 1; }
# Byte-code written now (uv's --compile-bytecode above, pip's default, compileall for src/): where
# PYTHONDONTWRITEBYTECODE is set (containers, CI), every process would otherwise recompile numpy, scipy,
# rclpy and matplotlib from source on each start (~5 s per CLI run or node, ~100 s of the test suite).
.venv/bin/python -m compileall -q src >/dev/null
echo "==> installed: $(.venv/bin/tensegrity models | wc -l) built-in models; rclpy $(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("ros-rclpy"))')"
echo "==> compiling the engine's kernels once (cached; nodes then start in a second)"
.venv/bin/tensegrity compile
if [ "${1:-}" = "--no-run" ]; then
  exit 0
fi
echo "==> main job: digital twin of the manipulator experiment through the ROS 2 nodes (real DDS, pip-only bringup)"
echo "    simulator + self-collision monitor as separate processes, the paper's sinusoids, 17 s, MCAP recording"
# A private ROS domain unless the caller chose one, so the run does not mix with other ROS 2 traffic.
export ROS_DOMAIN_ID=${ROS_DOMAIN_ID:-$(( (RANDOM % 90) + 10 ))}
.venv/bin/tensegrity-bringup --processes --experiment --duration 17 \
  --record runs/twin/twin.mcap --report runs/twin
echo "==> the paper's comparison on the recording: twin (through ROS 2) vs the engine run offline"
.venv/bin/tensegrity-compare runs/twin/twin.mcap --simulate stacked_manipulator --align auto --out runs/twin/compare
echo
echo "Done: runs/twin/twin.mcap (all topics), plots runs/twin/*.png, summary runs/twin/summary.json,"
echo "      comparison runs/twin/compare/ (comparison.png, deviation.png, rms.json)."
