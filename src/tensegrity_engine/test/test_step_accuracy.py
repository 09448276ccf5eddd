"""RK4 sub-stepping for stiff models (issue 22 #3): the stiffest mode, the substeps it needs and the energy
error they leave. Generated templates (EA 2000 N, 0.1 kg bars) have modes of 1000-2000 rad/s; at the
real-time simulator's 1 ms step RK4 damps them by percents per step. Each model here runs 10 s with no
damping and no gravity, knocked at its stiffest mode: the planned substeps hold the energy error within
1e-3 of the largest kinetic energy, one step per millisecond does not."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tensegrity_engine import Simulator, build_model, load_model, spec_from_dict
from tensegrity_engine.cli import main
from tensegrity_engine.dynamics.energy import energies
from tensegrity_engine.statics.equilibrium import settle
from tensegrity_engine.cli.new import TEMPLATES
from tensegrity_engine.statics.modal import linearise
from tensegrity_engine.model.write import spec_to_dict
from tensegrity_engine.statics.step_accuracy import (expected_energy_error, plan_substeps, rk4_energy_factor,
                                             step_for_accuracy, stiffest_mode)

DT = 1e-3                          # the simulator node's default physics step (1 kHz)
SLOW = {"icosahedron", "cuboctahedron", "tower", "shell"}   # 12-29 substeps, 30-180 coordinates: 3-40 s each
# soft models and the substeps they need: prism3 (11 rad/s), the mobile robots' springs on heavier bars (superball
# 123 rad/s, threebar 174 rad/s: 1 ms loses 0.3 % of the energy, not the stiff templates' 37-90 %)
SOFT = {"prism3": 1, "superball": 1, "threebar": 2}


def _conservative(model):
    """The model with no gravity, no structural damping and no obstacles (contact dissipates; the mobile
    templates stand on the ground); string damping is switched off per run."""
    d = spec_to_dict(model, resolved=True)
    d["gravity"] = [0.0, 0.0, 0.0]
    d.pop("structural_damping", None)
    d.pop("obstacles", None)
    return build_model(spec_from_dict(d, f"<{model.name}, no gravity>"))


def _model(name, tmp_path):
    if name in TEMPLATES:                     # as 'tensegrity new <template>' writes it, default arguments
        path = tmp_path / f"{name}.yaml"
        assert main(["new", name, "-o", str(path)]) == 0
        return _conservative(load_model(str(path)))
    return _conservative(load_model(name))


def _knocked(model):
    """Equilibrium and initial velocities: 10 mm/s (largest node) along the stiffest mode plus 3 mm/s
    random, small enough that every string stays taut (smooth dynamics)."""
    X = settle(model).positions
    lin = linearise(model, X, damping=False)
    k = int(np.argmax(lin.frequencies_hz))
    v = (lin.C @ lin.modes[:, k]).reshape(-1, 3)
    V = 0.01 * v / np.abs(v).max() + np.random.default_rng(0).normal(scale=0.003, size=v.shape)
    return X, V


def _energy_error(model, X, V, h, duration=10.0):
    """max |E(t) - E(0)| / max kinetic energy over ``duration`` [s] of undamped RK4 with step h [s]."""
    sim = Simulator(model, integrator="rk4", dt=h, damping=False, node_damping=0.0)
    sim.reset(X, V)
    tr = sim.run(duration, rate=100)
    assert tr.tensions.min() > 0.0                     # smooth: no string went slack
    E = energies(model, tr.nodes, tr.velocities, tr.inputs)
    assert sim.energy()["total"] == pytest.approx(E["total"][-1], rel=1e-12)   # the simulator's own account
    return float(np.abs(E["total"] - E["total"][0]).max() / E["kinetic"].max())


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n
                                  for n in TEMPLATES + ("prism3", "stacked_manipulator")])
def test_planned_substeps_keep_the_energy_error_within_1e3_over_10_s(name, tmp_path):
    model = _model(name, tmp_path)
    X, V = _knocked(model)
    plan = plan_substeps(model, DT, X)
    assert plan.effective_step == DT / plan.substeps and not plan.capped
    err = _energy_error(model, X, V, plan.effective_step)
    assert err <= 1e-3, (plan.describe(), err)
    # the worst-case prediction (all the energy in the stiffest mode) bounds what happens
    assert err <= plan.expected_error <= 1e-3, (plan.describe(), err)
    if name in SOFT:
        assert plan.substeps == SOFT[name]
    else:
        assert plan.substeps > 1
        # one RK4 step per millisecond (what the node did): 37 % (stacked manipulator) to 90 % of the
        # energy gone, as the issue measured
        err1 = _energy_error(model, X, V, DT)
        assert err1 > 0.1, (plan.describe(), err1)


def test_stiffest_mode_matches_the_modal_analysis(tmp_path):
    model = _model("icosahedron", tmp_path)
    lin = linearise(model, damping=False)
    mode = stiffest_mode(model)
    assert mode.omega == pytest.approx(2 * math.pi * lin.frequencies_hz.max(), rel=1e-9)
    assert mode.exact and mode.number == mode.count == 24        # 30 coordinates, 6 rigid-body modes
    assert mode.string in model.string_names
    assert mode.name.startswith("mode 24 of 24 (157.6 Hz, mostly string s")


def test_large_models_get_an_upper_bound(monkeypatch):
    import tensegrity_engine.statics.step_accuracy as sa
    model = load_model("stacked_manipulator")
    exact = stiffest_mode(model)
    monkeypatch.setattr(sa, "DENSE_MAX_DOF", 0)
    bound = stiffest_mode(model)
    # the unconstrained stiffness and mass can only raise the highest frequency (Rayleigh quotient)
    assert not bound.exact and exact.omega <= bound.omega <= 3 * exact.omega
    assert bound.name.startswith("highest mode (upper bound)")


def test_rk4_energy_factor_is_the_integrator_s():
    """|R(iωh)|² is what one classic RK4 step does to a harmonic oscillator's energy."""
    for wh in (0.05, 0.5, 1.0, 2.0, 2.9):
        w, h = 7.0, wh / 7.0
        y = np.array([1.0, 0.0])
        f = lambda s: np.array([s[1], -w * w * s[0]])      # noqa: E731
        k1 = f(y)
        k2 = f(y + h / 2 * k1)
        k3 = f(y + h / 2 * k2)
        k4 = f(y + h * k3)
        y1 = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        energy = lambda s: 0.5 * s[1] ** 2 + 0.5 * w * w * s[0] ** 2    # noqa: E731
        assert energy(y1) / energy(y) == pytest.approx(float(rk4_energy_factor(wh)), rel=1e-12)
    assert expected_energy_error(1000.0, 3e-3) == math.inf            # ωh 3 > 2√2: unstable


def test_step_for_accuracy_meets_the_goal_and_the_cap_is_reported():
    for omega in (10.0, 400.0, 2000.0, 2e4):
        for eps in (1e-6, 1e-3, 1e-2):
            h = step_for_accuracy(omega, eps, 10.0)
            assert expected_energy_error(omega, h, 10.0) <= eps
            assert expected_energy_error(omega, h, 10.0) > 0.5 * eps      # not far on the safe side either
    model = load_model("stacked_manipulator")
    plan = plan_substeps(model, DT, max_substeps=2)
    assert plan.capped and plan.substeps == 2 and plan.needed > 2
    text = plan.describe()
    assert plan.mode.name in text and f"{plan.step_needed:.3g} s" in text and "capped at 2" in text
    assert plan.expected_error > 1e-3
    with pytest.raises(ValueError, match="max_substeps"):
        plan_substeps(model, DT, max_substeps=0)
