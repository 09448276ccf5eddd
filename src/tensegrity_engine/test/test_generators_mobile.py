"""Mobile templates on the ground (``generators/mobile.py``, ``tensegrity new threebar|superball|--ground``):
masses, geometry and topology as documented, the ground plane and gravity present, the lowest bar surface at
the requested lift, and a prestress (in zero gravity: the ground carries the weight) that is an all-taut,
stable equilibrium."""
import itertools
import shlex
from pathlib import Path

import numpy as np
import pytest

from tensegrity_engine.cli import main
from tensegrity_engine.generators import icosahedron, on_ground, superball, three_bar_prism, verify_template
from tensegrity_engine.model.load import load_model

GEOM = 1e-12     # m: positions come from a few trigonometric evaluations and one rotation (rounding only)


def lowest_surface(m):
    """Height [m] of the lowest point of the bar capsules."""
    return min(min(m.positions[a, 2], m.positions[b, 2]) - r for (a, b), r in zip(m.bars, m.bar_radius))


def assert_on_ground(m, lift):
    assert len(m.obstacles) == 1
    g = m.obstacles[0]
    assert (g.type, g.normal, g.point) == ("plane", (0.0, 0.0, 1.0), (0.0, 0.0, 0.0))
    assert np.allclose(m.gravity, [0.0, 0.0, -9.81])
    assert abs(lowest_surface(m) - lift) < GEOM


@pytest.mark.parametrize("lift", [0.0, 0.3])
def test_three_bar_prism_of_the_paper(lift):
    m, rep = verify_template(three_bar_prism(lift=lift), min_tension=10.0)
    assert m.bar_names == ("b1", "b2", "b3") and np.allclose(m.bar_mass, 0.2)
    L = np.linalg.norm(m.positions[m.bars[:, 1]] - m.positions[m.bars[:, 0]], axis=1)
    assert np.allclose(L, np.hypot(0.3, 2 * 0.15 * np.sin(np.radians(105))), atol=GEOM)   # 0.417 m
    # the paper's cables: c1..c3 down node of bar i to up node of bar i-1, c4..c6 bottom, c7..c9 top
    ends = [{m.node_names[i] for i in s} for s in m.segments]
    assert ends[:3] == [{"p11", "p23"}, {"p12", "p21"}, {"p13", "p22"}]
    assert ends[3:6] == [{"p11", "p12"}, {"p12", "p13"}, {"p11", "p13"}]
    assert ends[6:] == [{"p21", "p23"}, {"p21", "p22"}, {"p22", "p23"}]
    assert np.allclose(m.string_stiffness, 500.0)
    down = [m.node_names.index(f"p1{k}") for k in (1, 2, 3)]
    assert np.allclose(m.positions[down, 2], lift + 0.01, atol=GEOM)     # standing on its bottom triangle
    assert_on_ground(m, lift)
    assert rep["residual"] <= 1e-9 and rep["stable"] and rep["tensions"].min() >= 10.0 - 1e-9


def test_superball_like_six_bar():
    m, rep = verify_template(superball(), min_tension=100.0)
    assert len(m.bar_names) == 6 and len(m.string_names) == 24
    assert np.allclose(m.bar_mass, 3.5) and np.allclose(m.bar_radius, 0.031)
    L = np.linalg.norm(m.positions[m.bars[:, 1]] - m.positions[m.bars[:, 0]], axis=1)
    assert np.allclose(L, 1.5, atol=GEOM)
    assert np.allclose(m.string_stiffness, 3000.0)
    # every string has its own motor
    assert len(m.actuator_names) == 24 and sorted(m.actuator_string.tolist()) == list(range(24))
    assert np.allclose(m.spool_radius, 0.015)
    # it lies on a closed string triangle: three nodes touch, mutually linked by strings
    low = np.flatnonzero(m.positions[:, 2] < 0.031 + 1e-9)
    linked = {frozenset(s) for s in m.segments}
    assert len(low) == 3 and all(frozenset(p) in linked for p in itertools.combinations(low, 2))
    assert_on_ground(m, 0.0)
    # the expanded octahedron's one self-stress: all strings equally tense
    assert rep["residual"] <= 1e-9 and rep["stable"] and np.allclose(rep["tensions"], 100.0, rtol=1e-9)


def test_any_template_on_the_ground():
    doc = on_ground(icosahedron(), lift=0.25, friction=0.5, restitution=0.1, contact_time=0.02)
    m, rep = verify_template(doc, min_tension=5.0)
    assert_on_ground(m, 0.25)
    g = m.obstacles[0]
    assert (g.friction, g.restitution, g.contact_time) == (0.5, 0.1, 0.02)
    assert rep["stable"] and rep["residual"] <= 1e-9


@pytest.mark.parametrize("args, bars", [(["threebar"], 3), (["superball"], 6),
                                        (["prism", "--ground", "--lift", "0.3", "--friction", "0.5"], 3)])
def test_new_writes_robots_on_the_ground(tmp_path, args, bars, capsys):
    out = tmp_path / "robot.yaml"
    assert main(["new", *args, "-o", str(out)]) == 0
    assert "on the ground" in capsys.readouterr().out
    m = load_model(out)
    assert len(m.bar_names) == bars
    # positions round-trip through the YAML text exactly (shortest repr), so GEOM holds in the file too
    assert_on_ground(m, 0.3 if "--lift" in args else 0.0)
    if "--friction" in args:
        assert m.obstacles[0].friction == 0.5


def test_ground_options_need_the_ground(tmp_path):
    assert main(["new", "icosahedron", "--lift", "0.3", "-o", str(tmp_path / "a.yaml")]) == 2
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("args, motors", [(["prism", "--n", "4", "--ground"], 12), (["icosahedron"], 24),
                                          (["cuboctahedron", "--ground"], 48),
                                          (["tower", "--stages", "2", "--n", "3"], 30),
                                          (["shell", "--n", "3", "--m", "1", "--primal"], 24),
                                          (["threebar"], 9), (["superball"], 24)])
def test_new_puts_a_motor_on_every_string(tmp_path, args, motors, capsys):
    """``--motors all`` on every template: one motor per string, within the default reach (a fifth of the mean
    bar length, at most half the shortest string), the written file loads and the --png picture is drawn."""
    out, png = tmp_path / "robot.yaml", tmp_path / "robot.png"
    assert main(["new", *args, "--motors", "all", "-o", str(out), "--png", str(png)]) == 0
    printed = capsys.readouterr().out
    m = load_model(out)
    assert len(m.actuator_names) == len(m.string_names) == motors
    assert sorted(m.actuator_string.tolist()) == list(range(motors))
    reach = min(0.2 * np.mean(m.bar_length), 0.5 * np.min(np.linalg.norm(np.diff(m.positions[m.segments], axis=1),
                                                                        axis=2)))
    assert np.allclose(m.u_limits, [-reach, reach], rtol=1e-6) and np.allclose(m.spool_radius, 0.015)
    assert f"{motors} motors" in printed and png.stat().st_size > 5_000
    assert ("shape control only" in printed) != bool(m.obstacles)
    if m.obstacles:     # a robot to roll rests on a face (three or more nodes), not balanced on two bar ends
        assert np.count_nonzero(m.positions[:, 2] < m.positions[:, 2].min() + GEOM) >= 3


def test_new_ground_motors_turns_the_icosahedron_onto_a_face(tmp_path):
    """Generated, the six-bar stands on two bar ends (an edge); with motors on the ground it lies on a closed
    string triangle, as the superball does; without motors --ground keeps its orientation."""
    out = tmp_path / "a.yaml"
    for motors, touching in ((["--motors", "all"], 3), ([], 2)):
        assert main(["new", "icosahedron", "--ground", *motors, "-o", str(out)]) == 0
        m = load_model(out)
        low = np.flatnonzero(m.positions[:, 2] < m.positions[:, 2].min() + GEOM)
        linked = {frozenset(s) for s in m.segments}
        assert len(low) == touching
        assert touching == 2 or all(frozenset(p) in linked for p in itertools.combinations(low, 2))


def test_new_motors_by_pattern_and_list(tmp_path):
    out = tmp_path / "a.yaml"
    assert main(["new", "threebar", "--motors", "c[4-6],c1", "--motor-reach", "0.05", "--spool-radius", "0.01",
                 "-o", str(out)]) == 0
    m = load_model(out)
    assert [m.string_names[k] for k in m.actuator_string] == ["c1", "c4", "c5", "c6"]
    assert np.allclose(m.u_limits, [-0.05, 0.05]) and np.allclose(m.spool_radius, 0.01)
    assert main(["new", "superball", "--motors", "s1?", "-o", str(out)]) == 0     # s10..s19 keep their motors
    m = load_model(out)
    assert [m.string_names[k] for k in m.actuator_string] == [f"s{k}" for k in range(10, 20)]
    assert m.actuator_names == tuple(f"m{k}" for k in range(10, 20))           # mK drives the K-th string
    assert np.allclose(m.u_limits, [-0.3, 0.3])                                    # the superball's own reach


def test_new_motors_reject_unknown_strings(tmp_path, capsys):
    """An unknown name or pattern fails naming the template's strings; nothing is written."""
    for args in (["prism", "--motors", "s1,top_1"], ["threebar", "--motors", "s*"], ["icosahedron", "--motors", ""],
                 ["prism", "--motor-reach", "0.1"], ["threebar", "--motors", "all", "--motor-reach", "0.5"],
                 ["threebar", "--motors", "all", "--spool-radius", "-1"],
                 ["threebar", "--motors", "all", "--spool-radius", "0"]):
        assert main(["new", *args, "-o", str(tmp_path / "a.yaml")]) == 2, args
        err = capsys.readouterr().err
        assert "error" in err.lower(), (args, err)
    assert not list(tmp_path.iterdir())
    main(["new", "threebar", "--motors", "s*", "-o", str(tmp_path / "a.yaml")])
    assert "names no string of 'three_bar_robot' (its strings: c1, c2, c3, c4, c5, c6, c7, c8, c9)" in \
        capsys.readouterr().err


def motors_section_commands() -> list:
    """The ``tensegrity new`` lines of the ```bash block of docs/generators.md's motors section."""
    text = (Path(__file__).resolve().parents[3] / "docs/generators.md").read_text()
    block = text.split("## Motors on any template")[1].split("```bash")[1].split("```")[0]
    return [line.strip() for line in block.splitlines() if line.strip()]


def test_the_motors_section_commands_run_as_written(tmp_path, monkeypatch, capsys):
    """docs/generators.md's motors commands, as written (through the CLI's main, in a scratch directory):
    each writes a loadable model with the motors it names."""
    from tensegrity_engine.locomotion.subsets import disjoint_triangle_actuators
    commands = motors_section_commands()
    assert len(commands) == 5 and all(c.startswith(".venv/bin/tensegrity new ") for c in commands)
    monkeypatch.chdir(tmp_path)
    for cmd in commands:
        assert main(shlex.split(cmd)[1:]) == 0, cmd
    motors = {f: len(load_model(tmp_path / f).actuator_names) for f in
              ("threebar_motors.yaml", "ico_rover.yaml", "prism4_base.yaml", "cubo_shape.yaml", "superball12.yaml")}
    assert motors == {"threebar_motors.yaml": 9, "ico_rover.yaml": 24, "prism4_base.yaml": 4,
                      "cubo_shape.yaml": 11, "superball12.yaml": 12}
    # the documented 12 are those of locomotion.subsets, with the same names
    full, _ = verify_template(superball(), min_tension=100.0)
    assert list(load_model(tmp_path / "superball12.yaml").actuator_names) == disjoint_triangle_actuators(full)
