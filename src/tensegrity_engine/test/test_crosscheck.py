"""The node model against an independent formulation (rigid rods with quaternions, SciPy DOP853) on
class-1 structures: the issue's bound is 1e-8 m over 5 s."""
from dataclasses import replace

import pytest

from tensegrity_engine.cli import main
from tensegrity_engine.dynamics.crosscheck import crosscheck
from tensegrity_engine.statics.equilibrium import prestress, with_rest_lengths
from tensegrity_engine.generators import icosahedron, n_prism
from tensegrity_engine.model.build import build_model
from tensegrity_engine.model.load import load_model
from tensegrity_engine.model.spec import spec_from_dict


def _damped(m, zeta):
    return build_model(replace(m.spec, strings=tuple(replace(s, damping=zeta) for s in m.spec.strings)))


def _prestressed(doc, t_min, gravity=(0.0, 0.0, 0.0)):
    doc = dict(doc, gravity=list(gravity))
    m = build_model(spec_from_dict(doc, doc["name"] + ".yaml"))
    return with_rest_lengths(m, prestress(m, min_tension=t_min).rest_lengths)


@pytest.mark.parametrize("case", ["prism3", pytest.param("prism3 damped", marks=pytest.mark.slow), pytest.param("icosahedron", marks=pytest.mark.slow),
                                  pytest.param("prism5 gravity", marks=pytest.mark.slow)])
def test_node_model_equals_rigid_rods(case):
    # the prestressed templates vibrate at ~50 Hz: the pure-Python reference needs ~9 s per simulated
    # second at rtol 1e-12, so they run 0.5-1 s here (5 s for prism3, as in the issue)
    duration = 5.0
    if case == "prism3":
        m = load_model("prism3")                    # strings go slack and taut in this run
    elif case == "prism3 damped":
        m = _damped(load_model("prism3"), 3.0)
    elif case == "icosahedron":
        m, duration = _prestressed(icosahedron(), 10.0), 0.5
    else:
        m, duration = _damped(_prestressed(n_prism(5), 5.0, gravity=(0.0, 0.0, -9.81)), 1.0), 1.0
    r = crosscheck(m, duration=duration, seed=1)
    assert r["motion_m"] > 0.02                      # it moved
    assert r["max_deviation_m"] < 1e-8, r["max_deviation_m"]


def test_refuses_what_it_cannot_model(capsys):
    with pytest.raises(ValueError, match="class-k joints"):
        crosscheck(load_model("stacked_manipulator"), duration=0.1)
    assert main(["crosscheck", "prism3", "--duration", "1"]) == 0
    assert "agree" in capsys.readouterr().out
    assert main(["crosscheck", "stacked_manipulator", "--duration", "1"]) == 2
