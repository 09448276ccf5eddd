"""Generated templates are prestressed equilibria, and prestress() accepts a verified optimum.

The exact expanded octahedron (6-bar icosahedron, bar pairs half a bar length apart) has one self-stress
with all 24 strings equally tense. prestress() used to discard SLSQP's answer whenever the optimiser's
success flag was False and fall back to its LP start scaled to 1e6 N: tensions of 1e6-1e8 N for
min_tension 1-100 N. Now the answer is checked by us (bounds, no worse than a bounded LP start).
"""
import numpy as np
import pytest

from tensegrity_engine.statics.equilibrium import prestress, stability, with_rest_lengths
from tensegrity_engine.generators import icosahedron, n_prism
from tensegrity_engine.model.build import build_model
from tensegrity_engine.model.spec import spec_from_dict


def built(doc):
    return build_model(spec_from_dict(doc, doc["name"] + ".yaml"))


@pytest.mark.parametrize("t_min", [1.0, 10.0, 100.0])
def test_expanded_octahedron_prestress_is_the_uniform_self_stress(t_min):
    m = built(icosahedron())
    eq = prestress(m, min_tension=t_min)
    assert len(m.string_names) == 24 and eq.message == ""
    # one self-stress state, all strings equal: the least-squares optimum puts every string at t_min
    assert np.allclose(eq.tensions, t_min, rtol=1e-9)
    assert eq.residual <= 1e-9 * max(1.0, t_min)


@pytest.mark.parametrize("n", [3, 4, 5, 8, 12])
def test_n_prisms_are_stable_prestressed_equilibria(n):
    m = built(n_prism(n))
    eq = prestress(m, min_tension=5.0)
    assert eq.message == "" and eq.residual <= 1e-9          # N
    assert eq.tensions.min() >= 5.0 - 1e-9 and eq.tensions.max() < 20.0
    ms = with_rest_lengths(m, eq.rest_lengths)
    st = stability(ms, ms.positions)
    assert st["stable"] and st["rigid_body_modes"] == 6


def test_icosahedron_is_stable():
    m = built(icosahedron())
    eq = prestress(m, min_tension=10.0)
    assert stability(with_rest_lengths(m, eq.rest_lengths), m.positions)["stable"]
