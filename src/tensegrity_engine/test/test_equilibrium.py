"""Prestress and equilibrium: residuals, all-taut tensions, stability, round trips."""
from __future__ import annotations

import numpy as np
import pytest

from tensegrity_engine import ModelError, Simulator
from tensegrity_engine.statics.equilibrium import prestress, settle, stability, with_rest_lengths
from tensegrity_engine.statics.balance import equilibrium_matrix


def test_prism3_self_stress_and_prestress_level(prism3):
    eq = settle(prism3)
    assert eq.residual <= 1e-9                          # target: static residual <= 1e-9 N
    ps = prestress(prism3, eq.positions, min_tension=0.5)    # 10 N/m cables: rest = L - T/k must stay > 0
    assert ps.self_stress_states == 1
    assert ps.residual <= 1e-9
    assert ps.tensions.min() >= 0.5 - 1e-9
    # the single self-stress of a 3-prism keeps the symmetric ratio of the settled state
    ratio = ps.tensions / eq.tensions
    assert np.ptp(ratio) <= 1e-6 * ratio.mean()


def test_prestressed_rest_lengths_hold_the_shape(prism3):
    """Rest lengths from prestress() keep the configuration still when simulated (zero gravity)."""
    eq = settle(prism3)
    ps = prestress(prism3, eq.positions, min_tension=1.0)
    m = with_rest_lengths(prism3, ps.rest_lengths, eq.positions)
    tr = Simulator(m, rtol=1e-10, atol=1e-12).run(2.0, rate=10)
    assert np.abs(tr.nodes - eq.positions).max() <= 1e-8
    assert np.allclose(tr.tensions[-1], ps.tensions, rtol=1e-6)


def test_equilibrium_matrix_balances_settled_forces(prism3):
    eq = settle(prism3)
    E, W = equilibrium_matrix(prism3, eq.positions)
    x = np.r_[eq.tensions, eq.bar_forces]
    assert np.abs(E @ x + W).max() <= 1e-9


def test_non_equilibrium_shape_reports_residual(prism3):
    """The paper's start pose of prism3 is not an equilibrium: prestress says so and gives a residual."""
    ps = prestress(prism3, min_tension=0.5)
    assert ps.residual > 1e-3 and "not an all-taut equilibrium" in ps.message


def test_stability_of_settled_prism(prism3):
    eq = settle(prism3)
    st = stability(prism3, eq.positions)
    assert st["stable"] and st["rigid_body_modes"] == 6
    assert st["frequencies_hz"][6] > 0.05


def test_settle_reports_the_self_stress_states_of_its_shape(prism3):
    """settle counts the self-stress states at the shape it found (it printed -1 before); the zero-gravity
    prism settles into a shape with exactly one (the prism's classic single self-stress)."""
    from tensegrity_engine.statics.equilibrium import self_stress_states
    eq = settle(prism3)
    assert eq.self_stress_states == self_stress_states(prism3, eq.positions) == 1
    assert "-1 state" not in eq.summary(prism3)


def test_prestress_error_names_the_model_file(prism3):
    # was a ValueError without the file: "string 'c5' would need a rest length <= 0 ..."
    with pytest.raises(ModelError, match=r"prism3\.yaml: string '\w+': would need a rest length <= 0 .* Fix: "):
        prestress(prism3, min_tension=100.0)


def test_without_free_nodes_prestress_is_a_clear_error_and_settle_keeps_the_held_shape():
    from conftest import make_model
    m = make_model([("a", (0, 0, 0), {"fixed": True}), ("b", (1, 0, 0), {"fixed": True})],
                   strings=[{"name": "s", "path": ["a", "b"], "stiffness": 10.0, "rest_length": 0.9}])
    with pytest.raises(ModelError, match="every node is fixed"):    # no tensions to find: any balance
        prestress(m)
    eq = settle(m)                                                     # the held shape is the equilibrium
    assert eq.tensions == pytest.approx([10.0 * 0.1]) and eq.residual == 0.0
