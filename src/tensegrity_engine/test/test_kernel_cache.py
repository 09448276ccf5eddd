"""The kernel parts nodes ask for (warmup.PARTS) name exactly the kernels a full compile caches, and
kernels_cached() tells a complete cache from an empty one (it decides whether a node compiles at start)."""
import json
import os
import subprocess
import sys

from tensegrity_engine.warmup import PARTS

LIST_COMPILED = """
import importlib, json, sys
from numba.core.registry import CPUDispatcher
from tensegrity_engine.warmup import PARTS, compile_kernels, kernels_cached
modules = [importlib.import_module(m) for m in sorted({m for part in PARTS.values() for m, _ in part})]
before = kernels_cached()
compile_kernels()
compiled = sorted(f"{m.__name__}.{n}" for m in modules
                  for n, f in vars(m).items()
                  if isinstance(f, CPUDispatcher) and f.overloads and f.py_func.__module__ == m.__name__)
print(json.dumps({"before": before, "compiled": compiled, "after": kernels_cached()}))
"""


def run_python(code, **env):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, **env))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_parts_name_the_kernels_a_full_compile_caches():
    out = run_python(LIST_COMPILED)         # the checkout's cache (setup compiled it; else this compiles)
    listed = sorted(f"{module}.{name}" for kernels in PARTS.values() for module, name in kernels)
    assert out["compiled"] == listed
    assert out["after"] is True


def test_an_empty_cache_is_not_taken_for_a_complete_one(tmp_path):
    code = ("import json; from tensegrity_engine.warmup import kernels_cached, PARTS; "
            "print(json.dumps({p: kernels_cached((p,)) for p in PARTS}))")
    assert run_python(code, NUMBA_CACHE_DIR=str(tmp_path)) == {part: False for part in PARTS}


def test_a_change_to_any_kernel_source_drops_every_cached_kernel(tmp_path):
    """numba checks a cached kernel against its own file only; a caller cached with an old callee from
    another module would run the old code (seen: a stale dopri5 kept the old pulley friction law). Any
    kernel source changing drops the entries of all of them, once; other files are left alone."""
    from tensegrity_engine.kernel_cache import drop_stale, kernel_sources
    pkg, cache = tmp_path / "pkg", tmp_path / "pkg" / "__pycache__"
    cache.mkdir(parents=True)
    (pkg / "kernels.py").write_text("from numba import njit\n")
    (pkg / "kernels_rk4.py").write_text("from numba import njit\nfrom .kernels import x\n")
    (pkg / "plots.py").write_text("import matplotlib\n")
    entries = ["kernels.accel-10.py311.nbi", "kernels.accel-10.py311.1.nbc", "kernels_rk4.step-5.py311.nbi"]
    keep = ["plots.cpython-311.pyc", "other.f-1.py311.nbi"]
    for name in entries + keep:
        (cache / name).write_bytes(b"x")
    sources = kernel_sources(pkg)
    assert [p.name for p in sources] == ["kernels.py", "kernels_rk4.py"]
    assert drop_stale(sources, [(cache / 'tensegrity_kernels.sha256', [cache])]) == 3                  # no stamp yet: whatever is there is unknown
    assert sorted(p.name for p in cache.iterdir()) == sorted(keep + ["tensegrity_kernels.sha256"])
    for name in entries:
        (cache / name).write_bytes(b"x")                      # compiled again from these sources
    assert drop_stale(sources, [(cache / 'tensegrity_kernels.sha256', [cache])]) == 0                  # same sources: the cache is kept
    (pkg / "kernels.py").write_text("from numba import njit\n# the force law changed\n")
    assert drop_stale(kernel_sources(pkg), [(cache / 'tensegrity_kernels.sha256', [cache])]) == 3      # the callee changed: its callers go too
    assert not (cache / "kernels_rk4.step-5.py311.nbi").exists()
