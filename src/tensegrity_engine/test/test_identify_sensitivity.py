"""Forward sensitivities of the shooting simulation are the derivatives of that simulation, and the
excitation report names what a capture did not excite."""
import numpy as np
import pytest

from tensegrity_engine import load_model
from tensegrity_engine.dynamics.inputs import paper_sinusoid
from tensegrity_engine.identify.params import DYNAMIC_PARAMS, model_with, parameters
from tensegrity_engine.identify.sensitivity import residual_jacobian, simulate_with_sensitivities
from tensegrity_engine.identify.sensitivity_report import excitation_report
from tensegrity_engine.identify.shooting import shooting_windows
from tensegrity_engine.identify.synthetic import manipulator_truth, synthetic_capture


@pytest.fixture(scope="module")
def manip():
    return load_model("stacked_manipulator")


def test_sensitivities_match_central_differences(manip):
    """All six kinds (26 parameters) on the manipulator with pulley friction, damping and a delay, under
    sinusoidal inputs: every column within 1e-5 of central differences of the same simulation."""
    truth, _ = manipulator_truth(manip, pulley=80.0)
    plist = parameters(truth, DYNAMIC_PARAMS, "model")
    theta = np.zeros(len(plist))
    theta[[p.kind in ("actuator_delay", "pulley_damping") for p in plist]] = 0.5   # 5 ms, +5 N s/m: all > 0
    cap, _ = synthetic_capture(truth, paper_sinusoid(manip), 0.25, rate=200, noise=0.0, seed=1)
    w = shooting_windows(truth, cap, None)[0]
    dt = 1e-3
    _, S = simulate_with_sensitivities(truth, plist, theta, w, dt)
    h = 1e-4      # θ step: truncation ~h² of the columns' scale, rounding ~1e-16/h of the positions (~1e-12 m)
    for j, p in enumerate(plist):
        up, dn = theta.copy(), theta.copy()
        up[j] += h
        dn[j] -= h
        fd = (simulate_with_sensitivities(truth, plist, up, w, dt, cols=[])[0]
              - simulate_with_sensitivities(truth, plist, dn, w, dt, cols=[])[0]) / (2 * h)
        # 1e-5 of the column's largest entry: central differences with this step agree to ~1e-7 (measured
        # 1e-9..6e-7 over the 26 columns; a wrong term in a derivative is off by O(1)), plus their rounding
        # floor, 1e-10 m per unit θ (measured 1e-11: positions rounded to ~1e-15 m, divided by 2h and
        # amplified by the bar projections; 1e-7 of a 1 mm capture noise)
        assert np.abs(S[..., j] - fd).max() <= 1e-5 * np.abs(fd).max() + 1e-10, p.name


def test_slow_small_motion_leaves_damping_not_excited(manip):
    """A slow (period 4 s), small (2 mm) actuation: the stiffnesses move the nodes far beyond the noise,
    the string damping of the passive strings does not; the report says so and asks for faster motion."""
    plist = parameters(manip, ("stiffness", "string_damping"), "model")
    inputs = paper_sinusoid(manip, period=4.0, amplitudes=(0.002, 0.002))
    cap, _ = synthetic_capture(manip, inputs, 0.5, rate=100, noise=5e-4, seed=2)
    wins = shooting_windows(manip, cap, None)
    J = residual_jacobian(manip, plist, wins, 2e-3, np.zeros(len(plist)))
    se = np.full(len(plist), np.inf)
    rows = {r["name"]: r for r in excitation_report(manip, plist, J, 5e-4, se, np.eye(len(plist)), [cap], 0.1)}
    assert rows["damping:stage1 passive"]["status"] == "not excited"
    assert "faster" in rows["damping:stage1 passive"]["advice"]
    assert rows["EA:stage1 actuated"]["excitation"] > 1.0


@pytest.mark.slow
@pytest.mark.parametrize("start", [0.5, 2.0, pytest.param(4.0, marks=pytest.mark.xfail(strict=True, reason=(
    "measured 2026-11-29: from 4x the truth the fit ends in a local minimum (misfit 0.656 mm against 0.5 mm "
    "noise; 'damping:stage2 actuated' 72 N s/m, truth 9; the multiple-shooting stage at its evaluation limit, "
    "single shooting stopped by xtol): an optimiser start problem, not the start-state bias of 0.5x/2x")))])
def test_damping_friction_and_delay_recovered_within_their_errors_from_three_starts(manip, start):
    """Actuator inputs only (no swinging payload: the hung payload of issue 35 is another branch): string
    damping, pulley friction and the delay from a model file that has them wrong by ``start`` x the truth
    (delay: start x 20 ms; pulley friction start x 20 N s/m), no regressor start: each estimate within
    three of its reported standard errors of the truth. The capture's start state estimated with the
    parameters (``start_states``): held at the smoothed capture (0.7 mm, 28 mm/s off at the first frame), the
    fits ended at 30-38 N s/m for 'damping:stage1 actuated' (truth 18, se ~3) and a 19.7-19.8 ms delay (truth
    20, se 0.07), 4-10 standard errors off (measured 2026-11-29, this test then a strict xfail)."""
    from tensegrity_engine.identify.dynamic import identify_dynamic
    kinds = ("string_damping", "pulley_damping", "actuator_delay")
    plist = parameters(manip, kinds, "model")

    def true(p):
        return {"string_damping": 3 * p.initial, "actuator_delay": 0.02}.get(
            p.kind, 40.0 if "actuated" in p.name else 0.0)
    truth = model_with(manip, plist, [true(p) for p in plist])
    base = model_with(manip, plist, [start * (p.initial if p.kind == "string_damping" else
                                              0.02 if p.kind == "actuator_delay" else 20.0) for p in plist])
    cap, _ = synthetic_capture(truth, paper_sinusoid(manip, period=1.5), 3.0, rate=120, noise=5e-4, seed=7)
    res = identify_dynamic(base, [cap], params=kinds, regressor=False, max_nfev=30, workers=1, start_states=True)
    tv = np.array([true(p) for p in plist])
    # 3 standard errors: a 0.3 % chance per parameter for a Gaussian error; the prior (3 scales) is far wider
    bad = {n: (e, t, s) for n, e, t, s in zip(res.names, res.estimate, tv, res.std_error) if abs(e - t) > 3 * s}
    assert not bad, bad


def test_a_window_start_state_estimated_with_the_parameters_is_closer_to_the_truth(manip):
    """A capture's smoothed first state is off by about the noise (and more in velocity): simulated from it
    the model misses the noise-free motion; a few Gauss-Newton steps of the start on the first 0.25 s at the
    true parameters bring the simulation closer to it, and the refined start stays on the bar lengths."""
    from dataclasses import replace
    from tensegrity_engine.identify.sensitivity_start import refine_start
    from tensegrity_engine.identify.shooting import window_residuals
    plist = parameters(manip, ("actuator_delay",), "model")
    cap, truth = synthetic_capture(manip, paper_sinusoid(manip, period=1.5), 0.3, rate=120, noise=5e-4, seed=3)
    w = shooting_windows(manip, cap, None)[0]
    ref = refine_start(manip, plist, np.zeros(1), w, 2e-3, 5e-4, span=0.25)
    clean = truth[np.asarray(cap.t) >= w.t0][:, w.nodes]             # noise-free frames of the window
    err = [np.sqrt(np.mean(window_residuals(manip, [replace(x, measured=clean)], 2e-3) ** 2)) for x in (w, ref)]
    # the window simulated from its start against the noise-free motion [m RMS]: measured 0.194 -> 0.095 mm
    assert err[1] < 0.8 * err[0], err
    assert manip.bar_length_error(ref.X0).max() < 1e-9      # projected: bar lengths to rounding
