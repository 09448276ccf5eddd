#!/usr/bin/env bash
# Re-resolve the lock file to the newest versions that requirements-dev.txt allows, install them into a
# scratch venv and run the test suite there. The lock is only rewritten when the tests pass (a deliberate,
# tested upgrade); the difference is printed either way.
#   tools/relock.sh              resolve, install into .venv-relock, run ./test.sh's pytest there, update the lock
#   tools/relock.sh --no-test    only resolve and show what would change (the lock stays as it is)
#   extra arguments after --     go to pytest (e.g. tools/relock.sh -- -x -q)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
UV_VERSION=$(sed -n 's/^uv==//p' requirements-tools.txt)
NO_TEST=0
if [ "${1:-}" = "--no-test" ]; then NO_TEST=1; shift; fi
[ "${1:-}" = "--" ] && shift
VENV=.venv-relock
rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet "uv==$UV_VERSION"
NEW=$(mktemp --suffix=.lock)
echo "==> resolving the newest versions allowed by requirements-dev.txt"
"$VENV/bin/uv" pip compile --quiet --upgrade --generate-hashes --python "$VENV/bin/python" \
  --custom-compile-command "tools/relock.sh" requirements-dev.txt -o "$NEW"
echo "==> changes against requirements.lock (old -> new):"
python3 - requirements.lock "$NEW" <<'PYEOF'
import re, sys
def pins(path):
    return dict(re.findall(r"^([A-Za-z0-9_.\-\[\]]+)==([^\s\\]+)", open(path).read(), re.M))
old, new = pins(sys.argv[1]), pins(sys.argv[2])
changed = [f"  {k}: {old.get(k, '-')} -> {new.get(k, '-')}" for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
print("\n".join(changed) if changed else "  none: the lock is up to date")
PYEOF
if [ "$NO_TEST" = 1 ]; then rm -f "$NEW"; rm -rf "$VENV"; exit 0; fi
echo "==> installing the new versions into $VENV and running the tests there"
"$VENV/bin/uv" pip install --quiet --python "$VENV/bin/python" -r "$NEW"
for pkg in src/*/; do
  "$VENV/bin/uv" pip install --quiet --python "$VENV/bin/python" --no-deps -e "$pkg"
done
"$VENV/bin/tensegrity" compile
if "$VENV/bin/python" -m pytest "$@"; then
  mv "$NEW" requirements.lock
  echo "==> tests passed: requirements.lock updated (review with 'git diff requirements.lock', then commit)"
  rm -rf "$VENV"
else
  echo "==> tests FAILED with the new versions: requirements.lock left as it was (new lock kept in $NEW, venv in $VENV)" >&2
  exit 1
fi
