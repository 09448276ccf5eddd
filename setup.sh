#!/usr/bin/env bash
# Set up a fresh machine and run the main job.
#   ./setup.sh            create .venv, install everything, run the manipulator experiment (plots + trajectory)
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
echo "==> installing packages (src/tensegrity_engine and its dependencies)"
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -r requirements-dev.txt
.venv/bin/python -m pip install --quiet -e src/tensegrity_engine
echo "==> installed: $(.venv/bin/tensegrity models | wc -l) built-in models"
if [ "${1:-}" = "--no-run" ]; then
  exit 0
fi
echo "==> main job: the manipulator paper's experiment (14 s, phase-shifted sinusoids, damped vs undamped)"
.venv/bin/tensegrity simulate stacked_manipulator --duration 14 --input paper --compare-undamped --out runs/manipulator
echo
echo "Done. Open the plots in runs/manipulator/*.png; the trajectory is runs/manipulator/trajectory.npz (and .csv)."
