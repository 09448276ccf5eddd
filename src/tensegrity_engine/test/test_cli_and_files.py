"""Command line, output files, resolved model round trip, input files and input validation."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tensegrity_engine import InputError, Simulator, Trajectory, from_csv, load_model, table
from tensegrity_engine.cli import main


def test_simulate_writes_documented_outputs(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["simulate", "prism3", "--duration", "1", "--input", "none", "--out", str(out), "--quiet"]) == 0
    for name in ("model.yaml", "trajectory.npz", "trajectory.csv", "summary.json", "tensions.png",
                 "bar_error.png", "snapshot.png"):
        assert (out / name).stat().st_size > 0, name
    d = np.load(out / "trajectory.npz")
    for key in ("t", "nodes", "velocities", "node_names", "bars", "strings", "tensions", "inputs",
                "string_lengths", "rest_lengths", "bar_forces", "bar_length_error"):
        assert key in d.files, key
    assert d["nodes"].shape == (101, 6, 3) and d["tensions"].shape == (101, 9) and d["strings"].shape == (9, 2)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["max_bar_length_error_rel"] < 1e-12
    header = (out / "trajectory.csv").read_text().splitlines()[0].split(",")
    assert header[:4] == ["t", "b1.x", "b1.y", "b1.z"] and "T.c0" in header
    assert "wrote" in capsys.readouterr().out


def test_resolved_model_reruns_identically(tmp_path):
    out = tmp_path / "run"
    main(["simulate", "prism3", "--duration", "0.5", "--input", "none", "--out", str(out), "--quiet",
          "--no-plots", "--integrator", "rk4"])
    again = tmp_path / "again"
    main(["simulate", str(out / "model.yaml"), "--duration", "0.5", "--input", "none", "--out", str(again),
          "--quiet", "--no-plots", "--integrator", "rk4"])
    a, b = Trajectory.load(out), Trajectory.load(again)
    assert np.array_equal(a.nodes, b.nodes)


def test_trajectory_save_load_round_trip(tmp_path, prism3):
    tr = Simulator(prism3).run(0.2, rate=50)
    tr.save(tmp_path)
    back = Trajectory.load(tmp_path / "trajectory.npz")
    assert np.array_equal(back.nodes, tr.nodes) and back.string_names == tr.string_names
    assert back.settings["integrator"] == "dopri5"


def test_bad_model_and_bad_input_exit_code_2(tmp_path, capsys):
    assert main(["simulate", "no_such_model", "--quiet"]) == 2
    assert "Fix:" in capsys.readouterr().err
    bad = tmp_path / "u.csv"
    bad.write_text("t,x\n0,1\n")
    assert main(["simulate", "prism3", "--input", str(bad), "--quiet", "--out", str(tmp_path / "o")]) == 2
    assert "unknown column" in capsys.readouterr().err


def test_equilibrium_command(capsys):
    assert main(["equilibrium", "prism3", "--settle"]) == 0
    out = capsys.readouterr().out
    assert "residual" in out and "stable: yes" in out


def _actuated(tmp_path):
    p = tmp_path / "act.yaml"
    p.write_text("""schema: tensegrity-model
version: 1
gravity: [0, 0, -9.81]
nodes:
  - {name: a, position: [0, 0, 1], fixed: true}
  - {name: b, position: [0, 0, 0.5], mass: 1.0}
strings:
  - {name: s, path: [a, b], stiffness: 500, damping: 2, rest_length: 0.48}
actuators:
  - {name: m, string: s, spool_radius: 0.01, angle_limits: [-5, 5]}
""")
    return load_model(p)


def test_csv_inputs_and_validation(tmp_path):
    m = _actuated(tmp_path)
    f = tmp_path / "in.csv"
    f.write_text("t,m\n0,0\n1,0.02\n")
    s = from_csv(f, m)
    u, ud = s(0.5)
    assert u[0] == pytest.approx(0.01) and ud[0] == pytest.approx(0.02)
    f.write_text("t,m\n0,0\n1,nan\n")
    with pytest.raises(InputError, match="NaN"):
        from_csv(f, m)
    f.write_text("t,other\n0,0\n")
    with pytest.raises(InputError, match="unknown column"):
        from_csv(f, m)
    f.write_text("t\n0\n")
    with pytest.raises(InputError, match="missing column"):
        from_csv(f, m)
    sim = Simulator(m)
    with pytest.raises(InputError, match="outside its limits"):       # 0.2 m > 5 rad * 0.01 m
        sim.run(1.0, inputs=table([0, 1], [[0], [0.2]]))
    # the rejected input changed nothing
    assert sim.t == 0.0 and np.allclose(sim.positions, m.positions)
