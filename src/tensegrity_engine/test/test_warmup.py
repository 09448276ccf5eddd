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
