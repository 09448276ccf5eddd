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


def _small(tmp_path, name, bars, strings):
    """A one-node pendulum hanging from a fixed node: by a bar, or by a string (bars/strings may be empty)."""
    p = tmp_path / f"{name}.yaml"
    p.write_text(f"""schema: tensegrity-model
version: 1
nodes:
  - {{name: a, position: [0, 0, 1], fixed: true}}
  - {{name: b, position: [0.3, 0, 0.5], mass: 1.0}}
bars: {bars}
strings: {strings}
""")
    return p


@pytest.mark.parametrize("kind", ["no strings", "no bars"])
def test_models_without_strings_or_without_bars_run(tmp_path, capsys, kind):
    # 'strings: []' passed 'info', then simulate/equilibrium failed with numpy's "zero-size array to
    # reduction operation minimum which has no identity"
    bars, strings = ("[{name: b1, nodes: [a, b], mass: 1.0}]", "[]") if kind == "no strings" else \
        ("[]", "[{name: s, path: [a, b], stiffness: 500, damping: 2, rest_length: 0.5}]")
    p = _small(tmp_path, "m", bars, strings)
    out = tmp_path / "run"
    assert main(["simulate", str(p), "--duration", "0.2", "--input", "none", "--out", str(out), "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    if kind == "no strings":
        assert summary["min_tension_N"] is None and summary["max_tension_N"] is None
        assert "no strings" in capsys.readouterr().out
    else:
        assert summary["max_bar_length_error_rel"] == 0.0 and summary["max_tension_N"] > 0
    capsys.readouterr()
    assert main(["equilibrium", str(p)]) == 0
    assert "residual" in capsys.readouterr().out
    assert main(["equilibrium", str(p), "--settle", "--json"]) == 0
    eq = json.loads(capsys.readouterr().out)
    assert eq["residual_N"] < 1e-6 and eq["stable"]           # the pendulum hangs straight down


@pytest.mark.parametrize("argv, words", [
    (["simulate", "prism3", "--rate", "0"], ["--rate", "positive"]),              # was ZeroDivisionError
    (["simulate", "prism3", "--rate", "-5"], ["--rate", "positive"]),             # blamed "duration"
    (["simulate", "prism3", "--duration", "nan"], ["--duration"]),
    (["simulate", "prism3", "--dt", "0"], ["--dt"]),
    (["simulate", "prism3", "--out", "{file}"], ["--out", "{file}", "not a directory"]),  # FileExistsError
    (["simulate", "prism3", "--out", "{file}/sub"], ["{file}/sub"]),              # cannot be created
    (["equilibrium", "prism3", "--write", "{dir}"], ["--write", "{dir}", "directory"]),   # IsADirectoryError
    (["equilibrium", "prism3", "--min-tension", "-1"], ["--min-tension", ">= 0"]),
    (["equilibrium", "prism3", "--min-tension", "nan"], ["--min-tension", "nan"]),
    (["equilibrium", "prism3", "--settle", "--tol", "-1"], ["--tol", "positive"]),
    (["equilibrium", "prism3", "--settle", "--tol", "nan"], ["--tol"]),
    (["equilibrium", "prism3", "--settle", "--tol", "0"], ["--tol"]),
    (["equilibrium", "prism3", "--min-tension", "100"], ["prism3.yaml", "string '", "rest length <= 0", "Fix:"]),
    (["clearance", "--segments", "{dir}/nonexist.csv"], ["{dir}/nonexist.csv", "cannot read"]),  # FileNotFoundError
    (["clearance", "--segments", "{neg}"], ["{neg}", "line 2", "radius", "negative"]),
    (["clearance", "{dir}", "--margin", "nan"], ["--margin"]),
    (["clearance", "{dir}"], ["{dir}/trajectory.npz", "no trajectory"]),                 # FileNotFoundError
    (["clearance", "{dir}", "--trunc"], ["{dir}/trajectory.npz", "not a complete trajectory"]),  # BadZipFile
    (["clearance", "{dir}", "--other"], ["{dir}/trajectory.npz", "are not those of", "model.yaml"]),
    (["clearance", "--segments", "{latin1}"], ["{latin1}", "not UTF-8"]),
    (["simulate", "prism3", "--input", "{latin1}", "--duration", "0.1"], ["{latin1}", "not UTF-8"]),
])
def test_cli_user_mistakes_give_one_line_errors(tmp_path, capsys, argv, words):
    """Bad options and unusable paths: exit 2 and one 'error: ...' line naming the option or path."""
    from tensegrity_engine.model.write import dump_model
    d = tmp_path / "run"
    d.mkdir()
    dump_model(load_model("prism3"), d / "model.yaml")
    (tmp_path / "file").write_text("x")
    (tmp_path / "neg.csv").write_text("0,0,0,1,0,0,0.1\n0,1,0,1,1,0,-0.1\n")
    (tmp_path / "latin1.csv").write_bytes("t,m1\n0,0\n# caf\u00e9\n".encode("latin-1"))
    if "--trunc" in argv:
        argv = [a for a in argv if a != "--trunc"]
        (d / "trajectory.npz").write_bytes(b"PK\x03\x04 truncated")
    if "--other" in argv:                        # a trajectory of another model next to this model.yaml
        argv = [a for a in argv if a != "--other"]
        Simulator(load_model("stacked_manipulator")).run(0.02, rate=100).save(d)
    fill = {"file": str(tmp_path / "file"), "dir": str(d), "neg": str(tmp_path / "neg.csv"),
            "latin1": str(tmp_path / "latin1.csv")}
    assert main([a.format(**fill) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    for w in words:
        assert w.format(**fill) in err, err


def test_truncated_trajectory_file_gives_value_error(tmp_path, prism3):
    Simulator(prism3).run(0.1, rate=50).save(tmp_path)
    f = tmp_path / "trajectory.npz"
    f.write_bytes(f.read_bytes()[:2000])
    with pytest.raises(ValueError, match="trajectory.npz: not a complete trajectory file"):
        Trajectory.load(tmp_path)
