"""The "Try it without a robot" block of docs/bring_your_own_robot.md runs as written (issue 35, 7f): synth,
model, track, and the comparison of a second static take with the model, put into the model's robot frame
(the block compared the room frame with the robot frame before: the start was 0.2 m inside the floor).
The commands run in-process (``main(argv)``), so the code under test is this tree's."""
import json
import shlex
from pathlib import Path

import pytest

from tensegrity_mocap.cli.compare import main as compare_main
from tensegrity_mocap.cli.mocap import main as mocap_main

PAGE = Path(__file__).resolve().parents[3] / "docs" / "bring_your_own_robot.md"


def demo_block() -> list:
    """The command lines (comments dropped) of the first ```bash block of the page."""
    text = PAGE.read_text().split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [ln.split("  #")[0].strip() for ln in text.splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("#")]


@pytest.mark.slow
def test_the_demo_block_runs_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lines = demo_block()
    assert lines[0] == "T=.venv/bin/tensegrity-mocap"
    for line in lines[1:]:
        argv = shlex.split(line)
        if argv[0] == "$T":
            assert mocap_main(argv[1:]) == 0, line
        else:
            assert argv[0] == ".venv/bin/tensegrity-compare", line
            assert compare_main(argv[1:]) == 0, line
    assert any("tensegrity-compare" in ln and "--capture-transform" in ln for ln in lines)
    rms = json.loads((tmp_path / "demo" / "cmp" / "rms.json").read_text())
    assert rms["nodes"]["per_node"].keys() == {f"n{k}" for k in range(1, 13)}
