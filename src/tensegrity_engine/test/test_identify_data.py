"""Captures for dynamic identification from engine trajectories and arrays: round trips, windows, and a clear
InputError for every kind of bad input (the MCAP and Motive CSV sources: tensegrity_mocap's tests)."""
from __future__ import annotations

import numpy as np
import pytest

from tensegrity_engine import InputError, Simulator, no_input, paper_sinusoid, table
from tensegrity_engine.identify.data import (PARAMS, DynamicCapture, capture_from_arrays, load_capture,
                                             read_dynamic_cases)

RATE = 120.0


@pytest.fixture(scope="module")
def run(manipulator, tmp_path_factory):
    """One second of the paper's experiment at 120 Hz, saved as an engine trajectory directory."""
    traj = Simulator(manipulator).run(1.0, inputs=paper_sinusoid(manipulator), rate=RATE)
    d = tmp_path_factory.mktemp("run1")
    traj.save(d)
    return traj, d


def _csv(path, t, u, names):
    rows = ["t," + ",".join(names)] + [",".join(f"{x:.17g}" for x in (ti, *ui)) for ti, ui in zip(t, u)]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_trajectory_round_trip(manipulator, run):
    traj, d = run
    mu = manipulator.n_physical
    for src in (d, d / "trajectory.npz"):
        cap = load_capture(manipulator, src)
        assert isinstance(cap, DynamicCapture) and cap.name == d.name and not cap.held_out
        np.testing.assert_array_equal(cap.t, traj.t)
        np.testing.assert_array_equal(cap.nodes, traj.nodes[:, :mu])
        u, _ = cap.inputs(cap.t)
        np.testing.assert_allclose(u, traj.inputs, rtol=0, atol=1e-12)
        assert "recorded inputs" in cap.inputs.description


def test_window_keeps_the_inputs_clock(manipulator, run):
    traj, d = run
    cap = load_capture(manipulator, d, start=0.25, end=0.75, name="mid")
    keep = (traj.t >= 0.25 - 1e-9) & (traj.t <= 0.75 + 1e-9)
    np.testing.assert_array_equal(cap.t, traj.t[keep])
    assert cap.name == "mid" and abs(cap.t[0] - 0.25) < 1e-9
    np.testing.assert_allclose(cap.inputs(cap.t)[0], traj.inputs[keep], atol=1e-12)
    with pytest.raises(InputError, match="end .* must be after start"):
        load_capture(manipulator, d, start=0.5, end=0.5)
    with pytest.raises(InputError, match="at least 10"):
        load_capture(manipulator, d, start=0.5, end=0.55)


def test_inputs_choices(manipulator, run, tmp_path):
    traj, d = run
    assert load_capture(manipulator, d, inputs="paper").inputs.params.mode == 1
    assert load_capture(manipulator, d, inputs="none").inputs.params.mode == 0
    f = _csv(tmp_path / "u.csv", traj.t, traj.inputs, manipulator.actuator_names)
    np.testing.assert_allclose(load_capture(manipulator, d, inputs=f).inputs(traj.t)[0], traj.inputs, atol=1e-15)
    short = _csv(tmp_path / "short.csv", traj.t[:60], traj.inputs[:60], manipulator.actuator_names)
    with pytest.raises(InputError, match=r"commands end at 0\.49\d* s but the capture runs to 1 s"):
        load_capture(manipulator, d, inputs=short)
    with pytest.raises(InputError, match="no such file.*inputs CSV"):
        load_capture(manipulator, d, inputs=str(tmp_path / "missing.csv"))
    with pytest.raises(InputError, match=r"3 actuator\(s\).*has 6 \(m1, m2, m3, m4, m5, m6\)"):
        load_capture(manipulator, d, inputs=no_input(3))


def test_arrays_accept_all_nodes_and_occlusions(manipulator, run):
    traj, _ = run
    X = traj.nodes.copy()                                   # (T, n, 3): virtual nodes are dropped
    X[::3, 5] = np.nan                                      # occlusions are kept, nothing is dropped
    cap = capture_from_arrays(manipulator, traj.t, X, paper_sinusoid(manipulator))
    assert cap.nodes.shape == (len(traj.t), manipulator.n_physical, 3)
    assert np.isnan(cap.nodes[::3, 5]).all() and np.isfinite(cap.nodes[1::3]).all()


def _bad_cases(model, traj):
    t, X, mu = traj.t, traj.nodes[:, :model.n_physical], model.n_physical
    paper = paper_sinusoid(model)
    blind = X.copy()
    blind[np.arange(len(t)), np.arange(len(t)) % mu] = np.nan
    back = t.copy()
    back[7] = back[6]
    return {
        "node count": ((t, X[:, :12], paper), r"12 nodes per frame, but model 'stacked_manipulator' has 24 physical"),
        "t 2-D": ((t[:, None], X, paper), "1-D array"),
        "t length": ((t[:-1], X, paper), "120 times but 121 frames"),
        "not increasing": ((back, X, paper), r"increase strictly: t\[7\]"),
        "non-finite t": ((np.where(np.arange(len(t)) == 4, np.nan, t), X, paper), r"t\[4\] is not a finite"),
        "few frames": ((t[:9], X[:9], paper), "9 frames; at least 10"),
        "slow": ((t * 10, X, paper), r"frame rate 12 Hz .*outside 50\.\.5000 Hz"),
        "fast": ((t / 100, X, paper), r"frame rate 1.2e\+04 Hz"),
        "infinite": ((t, np.where(X == X[3, 2, 0], np.inf, X), paper), "infinite position; use NaN"),
        "never complete": ((t, blind, paper), "no frame has every node seen"),
        "actuators": ((t, X, no_input(2)), r"2 actuator\(s\), model 'stacked_manipulator' has 6 \(m1, m2"),
        "not a schedule": ((t, X, traj.inputs), "must be an InputSchedule"),
        "table short": ((t, X, table(t[:50], traj.inputs[:50])),
                        r"commands end at 0\.4083 s but the capture runs to 1 s"),
        "table late": ((t, X, table(t[30:], traj.inputs[30:])), "commands start at 0.25 s but the capture starts at 0"),
    }


@pytest.mark.parametrize("case", ["node count", "t 2-D", "t length", "not increasing", "non-finite t", "few frames",
                                  "slow", "fast", "infinite", "never complete", "actuators", "not a schedule",
                                  "table short", "table late"])
def test_bad_arrays_are_input_errors(manipulator, run, case):
    args, pattern = _bad_cases(manipulator, run[0])[case]
    with pytest.raises(InputError, match=pattern):
        capture_from_arrays(manipulator, *args, name="take")


def test_bad_sources(manipulator, prism3, run, tmp_path, monkeypatch):
    _, d = run
    with pytest.raises(InputError, match="no such file or directory"):
        load_capture(manipulator, tmp_path / "missing.npz")
    (tmp_path / "x.txt").write_text("1")
    with pytest.raises(InputError, match=r"unknown capture type '\.txt'"):
        load_capture(manipulator, tmp_path / "x.txt")
    with pytest.raises(InputError, match="not model 'prism3''s 6"):
        load_capture(prism3, d)
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(InputError, match="bad.npz"):
        load_capture(manipulator, tmp_path / "bad.npz")
    with pytest.raises(InputError, match="marker_map is for Motive CSV"):
        load_capture(manipulator, d, marker_map={"a": "n1"})
    (tmp_path / "take.csv").write_text("")
    from tensegrity_engine.identify import data
    monkeypatch.setattr(data, "capture_reader", lambda suffix: None)  # no reader installed (no tensegrity_mocap)
    with pytest.raises(InputError, match="needs the tensegrity_mocap package"):
        load_capture(manipulator, tmp_path / "take.csv", inputs="paper")


CASES = """\
params: [stiffness, actuator_delay]
groups: model
shooting: 0.5
captures:
  - name: train
    data: run1
    inputs: u.csv
    start: 0.1
    end: 0.9
  - name: check
    data: run1/trajectory.npz
    held_out: true
"""


def _cases(tmp_path, run, text):
    traj, d = run
    (tmp_path / "run1").symlink_to(d, target_is_directory=True)
    _csv(tmp_path / "u.csv", traj.t, traj.inputs, ("m1", "m2", "m3", "m4", "m5", "m6"))
    p = tmp_path / "cases.yaml"
    p.write_text(text)
    return p


def test_cases_file(manipulator, run, tmp_path):
    fit, held, opts = read_dynamic_cases(manipulator, _cases(tmp_path, run, CASES))
    assert [c.name for c in fit] == ["train"] and [c.name for c in held] == ["check"] and held[0].held_out
    assert opts == {"params": ("stiffness", "actuator_delay"), "groups": "model", "shooting": 0.5,
                    "model": manipulator, "payload": None}      # no payload: the fit's model is the file's
    assert fit[0].t[0] >= 0.1 - 1e-9 and fit[0].t[-1] <= 0.9 + 1e-9
    assert str(tmp_path / "u.csv") in fit[0].inputs.description
    assert len(held[0].t) == len(run[0].t)


def test_cases_defaults(manipulator, run, tmp_path):
    fit, held, opts = read_dynamic_cases(manipulator, _cases(tmp_path, run, "captures: [{data: run1}]\n"))
    assert len(fit) == 1 and not held and fit[0].name == "run1"
    assert opts["groups"] is None and opts["shooting"] == 1.0 and set(opts["params"]) <= set(PARAMS)


@pytest.mark.parametrize("old, new, pattern", [
    ("shooting: 0.5", "shoting: 0.5", r"unknown key 'shoting' \(did you mean 'shooting'\?\)"),
    ("    end: 0.9", "    ends: 0.9", r"capture 0 'train': unknown key 'ends'"),
    ("actuator_delay]", "delay]", r"unknown param 'delay'.*choose from stiffness, string_damping"),
    ("data: run1\n", "data: run9\n", r"capture 0 'train': data file .*run9 not found; give a path relative"),
    ("inputs: u.csv", "inputs: v.csv", r"capture 0 'train': inputs file .*v.csv not found"),
    ("name: check", "name: train", "captures 0 and 1 are both named 'train'"),
    ("start: 0.1", "start: soon", r"capture 0 'train': start must be a number of seconds, got 'soon'"),
    ("end: 0.9", "end: 0.1", r"capture 0 'train': end \(0.1 s\) must be after start \(0.1 s\)"),
    ("    inputs: u.csv", "    held_out: true", "every capture is held out"),
    ("groups: model", "groups: strings", "groups must be model or none"),
    ("shooting: 0.5", "shooting: -1", "shooting must be a segment length > 0"),
    ("held_out: true", "held_out: maybe", r"capture 1 'check': held_out must be true or false"),
])
def test_bad_cases_files(manipulator, run, tmp_path, old, new, pattern):
    assert old in CASES
    p = _cases(tmp_path, run, CASES.replace(old, new, 1))
    with pytest.raises(InputError, match=pattern) as err:
        read_dynamic_cases(manipulator, p)
    assert str(p) in str(err.value)


def test_cases_file_errors_name_the_capture(manipulator, prism3, run, tmp_path):
    p = _cases(tmp_path, run, CASES)
    with pytest.raises(InputError, match=r"capture 0 'train': .*not model 'prism3''s"):
        read_dynamic_cases(prism3, p)
    for text, pattern in (("captures: [\n", "not readable YAML"), ("captures: []\n", "non-empty 'captures' list"),
                          (None, "cases file not found")):
        p.unlink()
        if text is not None:
            p.write_text(text)
        with pytest.raises(InputError, match=pattern):
            read_dynamic_cases(manipulator, p)
