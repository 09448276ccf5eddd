#!/usr/bin/env bash
# Run the test suite (after ./setup.sh) on every core (pytest-xdist; TENSEGRITY_TEST_JOBS=1 runs it in one
# process). Extra arguments go to pytest, e.g. ./test.sh -k energy
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x .venv/bin/python ]; then
  echo "error: .venv is missing: run ./setup.sh first" >&2
  exit 1
fi
exec .venv/bin/python -m pytest -n "${TENSEGRITY_TEST_JOBS:-auto}" "$@"
