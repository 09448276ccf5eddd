"""bench/bench_locomotion.py (the judging table of docs/locomotion.md): its rows name registered robots,
terrains and methods, and ``--quick`` on one row prints the table's columns with physical numbers (the full
run, 20 seeds of every row, is a benchmark, not a test)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
import bench_locomotion as bl  # noqa: E402


def test_rows_are_named_once_and_registered():
    names = [r.name for r in bl.ROWS]
    assert len(names) == len(set(names)), names
    for r in bl.ROWS:
        assert r.robot in bl.ROBOTS and r.terrain in bl.TERRAINS and r.method in bl.METHODS, r
    assert bl.pick_rows(["superball/flat/goal"]) == [r for r in bl.ROWS if r.name.startswith("superball/flat/goal")]
    assert all(r.robot == "superball" for r in bl.pick_rows(["superball"]))     # not superball-12
    with pytest.raises(SystemExit, match="unknown row"):
        bl.pick_rows(["superball/moon"])


def test_quick_run_prints_the_judging_table_with_physical_numbers(capsys):
    """One seed of the quasi-static heading row, one face: every column, success in [0, 1], a positive bar-bar
    clearance, faces and metres per minute positive, heading errors between 0° and 180°."""
    bl.main(["--quick", "--rows", "superball/flat/heading-0", "--seeds", "1", "--workers", "1"])
    out = capsys.readouterr().out
    assert re.search(r"<!-- bench/bench_locomotion.py .*load [\d.]+ [\d.]+ [\d.]+ -->", out), out
    lines = [line for line in out.splitlines() if line.startswith("|")]
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    assert cells[0] == bl.COLUMNS and len(cells) == 3, out
    row = dict(zip(cells[0], cells[2]))
    assert (row["robot"], row["terrain"], row["seeds"]) == ("superball", "flat", "1")
    assert 0.0 <= float(row["success"]) <= 1.0
    assert float(row["min clearance mm"]) > 0.0                  # mm: bars never pass through each other
    assert float(row["faces/min"]) > 0.0 and float(row["m/min"]) > 0.0
    median, worst = map(float, re.findall(r"[\d.]+", row["heading error"]))
    assert 0.0 <= median <= worst <= 180.0
    assert float(row["path/straight"]) >= 1.0 - 1e-9              # a path is never shorter than its chord
