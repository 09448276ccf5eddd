"""`tensegrity compile` exercises every kernel path (so nodes never compile while they must keep time)."""
import subprocess
import sys

from tensegrity_engine.warmup import compile_kernels


def test_compile_kernels_runs_every_path_and_reports_its_time():
    assert compile_kernels("stacked_manipulator") >= 0.0
    assert compile_kernels("prism3") >= 0.0            # a model without actuators takes the no-input paths


def test_cli_compile():
    r = subprocess.run([sys.executable, "-m", "tensegrity_engine.cli", "compile", "--model", "prism3"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "kernels ready in" in r.stdout


def test_a_stop_signal_during_the_load_from_the_cache_ends_it_after_the_load(monkeypatch):
    """SIGINT while the kernels load from the cache: raised inside the load it could land in one of numba's
    ctypes callbacks, which prints a traceback and drops it (seen once under load: the node then started);
    it must end ensure_kernels right after the load, as a KeyboardInterrupt."""
    import os
    import signal

    import pytest

    from tensegrity_engine import warmup
    done = []

    def load(parts):
        os.kill(os.getpid(), signal.SIGINT)       # lands while loading
        done.append(parts)

    monkeypatch.setattr(warmup, "kernels_cached", lambda parts: True)
    monkeypatch.setattr(warmup, "compile_kernels", load)
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        warmup.ensure_kernels(("dynamics",))
    assert done == [("dynamics",)]                # the load was not cut in the middle
    assert signal.getsignal(signal.SIGINT) is before
