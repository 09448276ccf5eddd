"""``tensegrity info`` warns that a model falls freely only when nothing holds it (issue 35, 7d): a node
pinned by a constraint holds it as ``fixed: true`` does (rotational supports alone hold a direction)."""
from __future__ import annotations

import pytest

from tensegrity_engine.cli import main

BASE = """schema: tensegrity-model
version: 1
name: pinned
gravity: [0, 0, -9.81]
nodes:
  - {name: n0, position: [0, 0, 0]FIXED}
  - {name: n1, position: [0, 0, 0.3]}
  - {name: n2, position: [0.2, 0, 0]}
  - {name: n3, position: [0.2, 0, 0.3]}
bars:
  - {name: b0, nodes: [n0, n1], mass: 0.1, radius: 0.01}
  - {name: b1, nodes: [n2, n3], mass: 0.1, radius: 0.01}
strings:
  - {name: s0, path: [n1, n3], stiffness: 100, rest_length: 0.19}
  - {name: s1, path: [n0, n3], stiffness: 100, rest_length: 0.3}
"""
ROTATIONAL = """supports:
  - {name: hinge, type: rotational, bar: b0, stiffness: 50}
  - {name: hinge2, type: rotational, bar: b1, stiffness: 50}
"""
PIN = """constraints:
  - {name: pin0, terms: {n0: 1}, value: [0, 0, 0]}
"""
TIE = """constraints:
  - {name: tie, terms: {n2: 1, n0: -1}, value: [0.2, 0, 0]}
"""


@pytest.mark.parametrize("text, falls", [
    (BASE.replace("FIXED", "") + ROTATIONAL + PIN, False),            # pinned by a constraint (warned before)
    (BASE.replace("FIXED", ", fixed: true") + ROTATIONAL, False),
    (BASE.replace("FIXED", "") + ROTATIONAL, True),                   # rotational supports hold no place
    (BASE.replace("FIXED", "") + TIE, True),                          # a constraint that moves with the robot
])
def test_info_warns_of_free_fall_only_when_nothing_holds_the_model(tmp_path, capsys, text, falls):
    path = tmp_path / "m.yaml"
    path.write_text(text)
    assert main(["info", str(path)]) == 0
    assert ("falls freely" in capsys.readouterr().out) == falls
