"""Static identification's inputs (issue 21 #18-#21): inputs that would silently mean something else are named
before fitting (a mass without gravity, a case without loads, a take in mm, swapped node labels); a failed
estimate still leaves a report; the tracker's output with a few untracked frames is read; a held-out take in
its capture frame is predicted at its own pose, or warned about."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import yaml

from test_identify_static import chain, six_bar_run  # noqa: F401  (six_bar_run: a fixture)
from tensegrity_engine import build_model, spec_from_dict
from tensegrity_engine.identify.boundary import BOUNDARY_TOL, placed_at
from tensegrity_engine.cli.identify import main
from tensegrity_engine.identify.static import identify_static, load_forces, predict
from tensegrity_engine.model.write import dump_model


@pytest.fixture(scope="module")
def six(six_bar_run):
    """The six-bar, its 4 loads, the truth shapes under them and noisy captures of the first 3."""
    model, _, loads, shapes, cases, _ = six_bar_run
    return model, loads, shapes, cases


def write_cases(tmp_path, model, cases, **top):
    """model.yaml and cases.yaml in ``tmp_path``; returns the argument list of ``identify``."""
    dump_model(model, tmp_path / "model.yaml")
    (tmp_path / "cases.yaml").write_text(yaml.safe_dump({**top, "cases": cases}))
    return [str(tmp_path / "model.yaml"), "--static", str(tmp_path / "cases.yaml"), "--out", str(tmp_path / "out"),
            "--no-plots"]


def entries(model, cases, loads, held=None):
    out = [{"name": f"load {k}", "positions": c.positions.tolist(), "loads": ld} for k, (c, ld) in
           enumerate(zip(cases, loads))]
    if held is not None:
        out.append({"name": "check", "positions": held[0].tolist(), "loads": held[1], "held_out": True})
    return out


# --- 18: inputs that mean something else ------------------------------------------------------------
def test_a_mass_without_gravity_is_an_error_naming_the_fix():
    d = {"schema": "tensegrity-model", "version": 1, "name": "floating", "gravity": [0, 0, 0],
         "nodes": [{"name": "a", "position": [0, 0, 1.0], "fixed": True},
                   {"name": "b", "position": [0, 0, 0.5], "mass": 1.0}],
         "strings": [{"name": "s", "path": ["a", "b"], "stiffness": 100.0, "rest_length": 0.45}]}
    model = build_model(spec_from_dict(d, "<floating>"))
    with pytest.raises(ValueError, match=r"payload: load 0 hangs 2\.0 kg on 'b', but model 'floating' has zero "
                                         r"gravity.*give gravity in the model file.*force: \[fx, fy, fz\]"):
        load_forces(model, [{"node": "b", "mass": 2.0}], where="payload")
    assert load_forces(model, [{"node": "b", "force": [0, 0, -19.6]}])[1, 2] == -19.6


def test_a_case_without_loads_is_an_error(six, tmp_path, capsys):
    model, loads, _, cases = six
    items = entries(model, cases, loads)
    del items[1]["loads"]
    assert main(write_cases(tmp_path, model, items)) == 2
    err = capsys.readouterr().err
    assert "case 'load 1': 'loads' is missing" in err and "loads: [] for an unloaded case" in err
    items[1]["load"] = loads[1]                            # a misspelt key is named, with the right one
    assert main(write_cases(tmp_path, model, items)) == 2
    assert "unknown key 'load' (did you mean 'loads'?)" in capsys.readouterr().err


def test_a_take_in_millimetres_is_named_and_units_fixes_it(six, tmp_path, capsys):
    model, loads, _, cases = six
    mm = [replace(c, positions=c.positions * 1e3) if k == 2 else c for k, c in enumerate(cases)]
    with pytest.raises(ValueError, match=r"load 2: the measured bar lengths are 1000× the model's \(median\): the "
                                         r"positions look like mm.*units: mm"):
        identify_static(model, mm)
    items = entries(model, mm, loads)
    assert main(write_cases(tmp_path, model, items)) == 2
    assert "cases.yaml: case 'load 2': the measured bar lengths are 1000×" in capsys.readouterr().err
    items[2]["units"] = "mm"
    assert main(write_cases(tmp_path, model, items)) == 0
    got = json.loads((tmp_path / "out" / "report.json").read_text())["parameters"]
    ref = identify_static(model, cases)
    assert [p["estimate"] for p in got] == pytest.approx(list(ref.estimate), rel=1e-9)


def test_swapped_node_labels_are_named_before_fitting(six):
    model, _, _, cases = six
    names = list(model.node_names)
    i, j = names.index("n2"), names.index("n8")               # free nodes on different bars
    P = cases[1].positions.copy()
    P[[i, j]] = P[[j, i]]
    bad = [replace(c, positions=P) if k == 1 else c for k, c in enumerate(cases)]
    with pytest.raises(ValueError, match=r"load 1: bar\(s\) b1 \(n2-n3: .* mm, model 600\.0 mm\), b4 .* differ from "
                                         r"the model's lengths by more than 5%: nodes n2 and n8 look swapped"):
        identify_static(model, bad)
    # unchecked, the same data give a negative stiffness and no word about the labels (the report)
    unchecked = identify_static(model, bad, bar_tol=None)
    assert unchecked.estimate.min() < 0


# --- 19: a failed estimate still leaves a report ----------------------------------------------------
def test_a_non_positive_estimate_writes_the_report_with_the_failure(tmp_path, capsys):
    """The 2 kg case's load given as 25 N upward (a sign slip): both stiffnesses come out negative."""
    model, truth = chain(), chain(900.0, 450.0)
    shapes = [predict(truth, load_forces(truth, ld)) for ld in ([], [{"node": "mid", "mass": 2.0}])]
    items = [{"name": "empty", "positions": shapes[0].tolist(), "loads": []},
             {"name": "payload", "positions": shapes[1].tolist(), "loads": [{"node": "mid", "force": [0, 0, 25.0]}]},
             {"name": "check", "positions": shapes[1].tolist(), "loads": [{"node": "mid", "mass": 2.0}],
              "held_out": True}]
    args = write_cases(tmp_path, model, items)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "identified.yaml").write_text("an earlier run's model")
    assert main(args) == 1
    out = capsys.readouterr()
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["failure"]["parameters"] == ["stiffness:upper", "stiffness:lower"]
    assert "not a positive number: stiffness:upper = -" in report["failure"]["problem"]
    assert "check each case's loads" in report["failure"]["fix"]
    assert all(p["failed"] and p["estimate"] < 0 for p in report["parameters"])
    assert report["held_out"][0]["rms_identified_m"] is None and report["held_out"][0]["rms_before_m"] > 0
    assert not (tmp_path / "out" / "identified.yaml").exists()
    assert "error: identification failed: not a positive number" in out.err and "Fix:" in out.err
    assert "stiffness:upper" in out.out                      # the estimates are still printed


# --- 20: the tracker's output with a few untracked frames --------------------------------------------
def test_tracker_output_with_untracked_frames_is_averaged_per_node(six, tmp_path, capsys):
    """tracks.npz / tracks.csv as ``tensegrity-mocap track`` writes them: 4 of 2,074 frames miss a node."""
    model, loads, _, cases = six
    names = list(model.node_names)
    rng = np.random.default_rng(5)
    T = 2074
    X = cases[1].positions + rng.normal(0.0, 2e-4, (T, len(names), 3))
    X[[100, 700, 701, 1500], names.index("n4")] = np.nan
    X[700, names.index("n9")] = np.nan                        # one frame with two nodes missing
    t = np.arange(T) / 120.0
    np.savez_compressed(tmp_path / "tracks.npz", t=t, nodes=X, node_names=np.array(names),
                        reasons=np.isnan(X[..., 0]).astype(np.int8), reason_names=np.array(["tracked", "no_marker"]))
    header = ["t"] + [f"{n}.{a}" for n in names for a in "xyz"]
    np.savetxt(tmp_path / "tracks.csv", np.column_stack([t, X.reshape(T, -1)]), delimiter=",",
               header=",".join(header), comments="", fmt="%.6f")
    items = entries(model, cases, loads)
    for src in ("tracks.npz", "tracks.csv"):
        items[1]["positions"] = src
        assert main(write_cases(tmp_path, model, items)) == 0, capsys.readouterr().err
        report = json.loads((tmp_path / "out" / "report.json").read_text())
        frames = report["frames"]["load 1"]
        # the frame-to-frame scatter is the capture noise (0.2 mm drawn; ~2e5 samples: within 1 %), reported
        # apart from the misfit (issue 21 #17); the csv's 6 decimals add 0.3 µm RMS rounding at most
        assert frames.pop("scatter_m") == pytest.approx(2e-4, rel=0.01)
        assert report["noise_m"] == pytest.approx(2e-4, rel=0.01) and report["misfit_rms_m"] != report["noise_m"]
        assert frames == {"frames": T, "frames_with_untracked_nodes": 4,
                          "untracked_frames_per_node": {"n4": 4, "n9": 1}}
        assert "case 'load 1': 4 of 2074 frames had untracked nodes (n4: 4, n9: 1)" in capsys.readouterr().out
    assert main(write_cases(tmp_path, model, items) + ["--noise", "0.01"]) == 0   # given: it wins [mm]
    assert json.loads((tmp_path / "out" / "report.json").read_text())["noise_m"] == pytest.approx(1e-5)
    assert "capture noise 0.01 mm" in capsys.readouterr().out
    X[: T // 2 + 1, names.index("n7")] = np.nan               # lost for more than half of the take
    np.savez_compressed(tmp_path / "tracks.npz", nodes=X, node_names=np.array(names))
    items[1]["positions"] = "tracks.npz"
    assert main(write_cases(tmp_path, model, items)) == 2
    assert "node(s) n7 (1036 of 2074 frames) seen in fewer than 50% of the frames" in capsys.readouterr().err


# --- 21: a held-out take in its capture frame ----------------------------------------------------------
def test_held_out_take_in_its_capture_frame(six, tmp_path, capsys):
    model, loads, shapes, cases = six
    a = 0.5
    R = np.array([[np.cos(a), -np.sin(a), 0.0], [np.sin(a), np.cos(a), 0.0], [0.0, 0.0, 1.0]])
    moved = shapes[3] @ R.T + [0.35, -0.2, 0.3]               # the robot elsewhere in the capture volume
    F = load_forces(model, loads[3])
    np.testing.assert_allclose(predict(model, F, boundary=moved), predict(model, F) @ R.T + [0.35, -0.2, 0.3],
                               atol=1e-6)
    _, residual = placed_at(model, moved)
    assert residual.max() < 1e-9
    args = write_cases(tmp_path, model, entries(model, cases, loads[:3], held=(moved, loads[3])))
    assert main(args) == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    held = report["held_out"][0]
    assert held["boundary"] == "model" and held["fixed_node_offset_max_m"] > 0.1 > BOUNDARY_TOL
    assert held["rms_identified_m"] > 0.1                    # the frame offset, not the model's error
    assert any("held-out 'check': the model's fixed nodes are up to" in w and "--held-out-boundary measured" in w
               for w in report["warnings"])
    assert "warning: held-out 'check'" in capsys.readouterr().out
    assert main(args + ["--held-out-boundary", "measured"]) == 0
    held = json.loads((tmp_path / "out" / "report.json").read_text())["held_out"][0]
    assert held["boundary"] == "measured" and held["fixed_node_fit_max_m"] < 1e-3
    assert held["rms_identified_m"] <= 1e-3 < held["rms_before_m"]
    out = capsys.readouterr().out
    assert "warning: held-out" not in out
    print(f"\nheld-out in its capture frame: model boundary {report['held_out'][0]['rms_before_m'] * 1e3:.1f} -> "
          f"{report['held_out'][0]['rms_identified_m'] * 1e3:.1f} mm; measured boundary "
          f"{held['rms_before_m'] * 1e3:.2f} -> {held['rms_identified_m'] * 1e3:.2f} mm")


@pytest.mark.parametrize("anchors", [[(0.5, 0.0, 1.0), (-0.5, 0.0, 1.0)], [(0.0, 0.0, 1.0), (0.0, 0.0, 0.0)]])
def test_placement_on_fixed_nodes_along_a_line_turns_about_the_vertical_only(anchors):
    """Two fixed nodes leave the turn about their line open: the placement turns about the vertical only
    (a level line: the take's turn comes back exactly; a vertical line: no turn at all)."""
    d = {"schema": "tensegrity-model", "version": 1, "name": "sling",
         "nodes": [{"name": f"a{i}", "position": list(p), "fixed": True} for i, p in enumerate(anchors)]
         + [{"name": "mid", "position": [0.1, 0.05, 0.6], "mass": 1.0}],
         "strings": [{"name": f"s{i}", "path": [f"a{i}", "mid"], "stiffness": 300.0, "rest_length": 0.4}
                     for i in range(2)]}
    model = build_model(spec_from_dict(d, "<sling>"))
    a = 0.7 if anchors[0][2] == anchors[1][2] else 0.0
    R = np.array([[np.cos(a), -np.sin(a), 0.0], [np.sin(a), np.cos(a), 0.0], [0.0, 0.0, 1.0]])
    F = load_forces(model, [{"node": "mid", "mass": 0.5}])
    take = predict(model, F) @ R.T + [1.0, 2.0, 0.1]
    placed, residual = placed_at(model, take)
    assert residual.max() < 1e-9
    np.testing.assert_allclose(placed.positions, model.positions @ R.T + [1.0, 2.0, 0.1], atol=1e-9)
    np.testing.assert_allclose(predict(model, F, boundary=take), take, atol=1e-6)
