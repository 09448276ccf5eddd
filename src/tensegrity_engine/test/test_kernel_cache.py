"""The kernel parts nodes ask for (warmup.PARTS) name exactly the kernels a full compile caches, and
kernels_cached() tells a complete cache from an empty one (it decides whether a node compiles at start)."""
import json
import os
import subprocess
import sys

from tensegrity_engine.warmup import PARTS

LIST_COMPILED = """
import json, sys
from numba.core.registry import CPUDispatcher
from tensegrity_engine import collision, kernels
from tensegrity_engine.warmup import compile_kernels, kernels_cached
before = kernels_cached()
compile_kernels()
compiled = sorted(f"{m.__name__}.{n}" for m in (kernels, collision) for n, f in vars(m).items()
                  if isinstance(f, CPUDispatcher) and f.overloads)
print(json.dumps({"before": before, "compiled": compiled, "after": kernels_cached()}))
"""


def run_python(code, **env):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, **env))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_parts_name_the_kernels_a_full_compile_caches():
    out = run_python(LIST_COMPILED)         # the checkout's cache (setup compiled it; else this compiles)
    listed = sorted(f"{module}.{name}" for module, names in PARTS.values() for name in names)
    assert out["compiled"] == listed
    assert out["after"] is True


def test_an_empty_cache_is_not_taken_for_a_complete_one(tmp_path):
    code = ("import json; from tensegrity_engine.warmup import kernels_cached, PARTS; "
            "print(json.dumps({p: kernels_cached((p,)) for p in PARTS}))")
    assert run_python(code, NUMBA_CACHE_DIR=str(tmp_path)) == {part: False for part in PARTS}
