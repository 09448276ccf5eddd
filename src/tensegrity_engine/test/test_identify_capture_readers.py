"""Capture readers are plugins: the engine looks them up by file suffix in the entry-point group
``tensegrity_engine.capture_readers`` and, without one, says which package reads the capture (the readers
themselves: tensegrity_mocap's tests)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tensegrity_engine import InputError, load_model
from tensegrity_engine.identify import data


@pytest.fixture(scope="module")
def model():
    return load_model("stacked_manipulator")


@pytest.mark.parametrize("suffix", ["csv", "mcap"])
def test_a_missing_reader_is_a_clear_input_error(model, tmp_path, monkeypatch, suffix):
    calls = []
    monkeypatch.setattr(data, "capture_reader", lambda s: calls.append(s))     # nothing registered
    (tmp_path / f"take.{suffix}").write_text("")
    with pytest.raises(InputError, match=rf"take\.{suffix}: reading \.csv and \.mcap captures needs the "
                                         r"tensegrity_mocap package \(.*\); install it \(pip install -e "
                                         r"src/tensegrity_mocap\) or convert the capture to an engine "
                                         r"trajectory\.npz"):
        data.load_capture(model, tmp_path / f"take.{suffix}", inputs="paper")
    assert calls == [suffix]


def test_a_reader_that_cannot_be_imported_is_the_same_error(model, tmp_path, monkeypatch):
    def broken(suffix):
        raise ImportError("No module named 'tensegrity_mocap'")
    monkeypatch.setattr(data, "capture_reader", broken)
    (tmp_path / "take.csv").write_text("")
    with pytest.raises(InputError, match=r"needs the tensegrity_mocap package \(No module named 'tensegrity_mocap'\)"):
        data.load_capture(model, tmp_path / "take.csv", inputs="paper")


def test_the_reader_gets_the_capture_options_and_its_result_is_validated(model, tmp_path, monkeypatch):
    import numpy as np
    from tensegrity_engine import Simulator, paper_sinusoid
    traj = Simulator(model).run(0.5, inputs=paper_sinusoid(model), rate=100.0)
    seen = {}

    def reader(m, path, *, recorded, namespace, asset, marker_map, exclude):
        seen.update(path=path, recorded=recorded, namespace=namespace, asset=asset, marker_map=marker_map,
                    exclude=exclude)
        return traj.t, traj.nodes[:, :m.n_physical], None
    monkeypatch.setattr(data, "capture_reader", lambda s: reader)
    (tmp_path / "take.csv").write_text("")
    cap = data.load_capture(model, tmp_path / "take.csv", inputs="paper", marker_map={"a": "n1"}, asset="Robot",
                            exclude="x*", start=0.1)
    assert seen == {"path": tmp_path / "take.csv", "recorded": False, "namespace": "", "asset": "Robot",
                    "marker_map": {"a": "n1"}, "exclude": ("x*",)}
    assert cap.t[0] >= 0.1 - 1e-9 and cap.inputs.params.mode == 1
    np.testing.assert_array_equal(cap.nodes[-1], traj.nodes[-1, :model.n_physical])


def test_the_engine_imports_no_ros_or_mocap_package():
    """identify/data.py reads captures through entry points only."""
    tree = ast.parse(Path(data.__file__).read_text())
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | \
        {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in modules if m and m.split(".")[0] in ("tensegrity_mocap", "tensegrity_ros_common")}
