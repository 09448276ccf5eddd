"""Inverse statics of the stacked manipulator's plate C2: the equilibrium derivative, reachable poses met at rest
(checked by the full ``settle`` and by the simulated dynamics), unreachable poses answered with the nearest."""
from __future__ import annotations

import time

import numpy as np
import pytest

from control_cases import FRAME, reachable_targets, rest_by_simulation
from tensegrity_engine.control import inverse_statics
from tensegrity_engine.control.pose import frame_pose, misses, pose_error
from tensegrity_engine.control.static_map import (initial_state, relaxed_state, rest_lengths, settle_inputs,
                                                  shape_sensitivity)
from tensegrity_engine.statics.balance import kkt_residual
from tensegrity_engine.statics.equilibrium import settle

POSITION_TOL = 1e-3            # m, the acceptance figures
ANGLE_TOL = np.radians(0.2)    # rad


def test_shape_sensitivity_matches_finite_differences(manipulator):
    """dX/du from the implicit derivative of the equilibrium equals central differences of settled shapes
    (h = 1e-5 m: truncation ~h² x curvature ~1e-9, Newton's residual 1e-9 N / 1e4 N/m ~1e-13 m per solve)."""
    u = np.array([0.02, -0.01, 0.03, -0.02, 0.01, 0.015])
    state = settle_inputs(manipulator, u)
    dX = shape_sensitivity(manipulator, state)
    h = 1e-5
    for a in range(len(u)):
        du = np.zeros_like(u)
        du[a] = h
        fd = (settle_inputs(manipulator, u + du, state).X - settle_inputs(manipulator, u - du, state).X) / (2 * h)
        assert np.abs(fd - dX[:, :, a]).max() < 1e-6 * max(np.abs(fd).max(), 1.0)
    assert np.abs(dX).max() > 0.1          # the inputs do move the nodes (m per m reeled in)
    # the fallback (full settle: dynamic relaxation + Newton) finds the same equilibrium and bar forces
    relaxed = relaxed_state(manipulator, u)
    assert np.abs(relaxed.X - state.X).max() < 1e-9 and np.allclose(relaxed.lam, state.lam, rtol=1e-6, atol=1e-6)


def _check_rest_state(model, result, target):
    """The full settle (dynamic relaxation + Newton, from the model's drawn shape) of the answer's rest lengths
    puts the frame at the target: the answer is an equilibrium, not just a fit."""
    eq = settle(model, rest_lengths=rest_lengths(model, result.u))
    assert eq.residual < 1e-6                                  # N, an equilibrium
    assert eq.tensions.min() > 0                               # every string taut
    dp, da = misses(frame_pose(model, FRAME, eq.positions), target)
    assert dp < POSITION_TOL and da < ANGLE_TOL


def test_reachable_poses_are_reached_at_rest(manipulator):
    U, targets = reachable_targets(manipulator, 3, seed=11)
    home = initial_state(manipulator)
    for u_true, target in zip(U, targets):
        t0 = time.perf_counter()
        res = inverse_statics(manipulator, FRAME, target, start=home)
        print(f"pose reached by {res.miss_position * 1e3:.2e} mm, {np.degrees(res.miss_angle):.2e} deg "
              f"in {time.perf_counter() - t0:.2f} s")
        assert res.reachable and res.message == "reached"
        assert res.miss_position < POSITION_TOL and res.miss_angle < ANGLE_TOL
        assert np.all(res.u >= manipulator.u_limits[:, 0]) and np.all(res.u <= manipulator.u_limits[:, 1])
        assert res.min_tension > 0
        # the returned shape is in balance with the returned inputs (residual of the static equations, N)
        F, g = kkt_residual(manipulator, manipulator.reduce(res.X), res.state.lam, rest_lengths(manipulator, res.u),
                            None)
        assert np.abs(F).max() < 1e-6 and np.abs(g).max() < 1e-9
        _check_rest_state(manipulator, res, target)
    X, speed = rest_by_simulation(manipulator, res.u)          # the last one also by the dynamics
    assert speed < 1e-5                                        # m/s: at rest
    dp, da = misses(frame_pose(manipulator, FRAME, X), targets[-1])
    assert dp < POSITION_TOL and da < ANGLE_TOL


def test_unreachable_pose_gives_the_nearest_and_the_miss(manipulator):
    _, targets = reachable_targets(manipulator, 1, seed=3)
    target = targets[0].copy()
    target[2, 3] += 0.2                                        # 20 cm above: far outside the ~2 cm z range
    res = inverse_statics(manipulator, FRAME, target)
    assert not res.reachable and res.message.startswith("unreachable")
    assert 0.15 < res.miss_position < 0.25
    assert np.allclose(res.pose, frame_pose(manipulator, FRAME, res.X))
    assert np.all(res.u >= manipulator.u_limits[:, 0] - 1e-12) and np.all(res.u <= manipulator.u_limits[:, 1] + 1e-12)
    # nearest: no input 1 mm away (within the limits) comes closer in the solver's metric
    scale = 0.13                                               # m, the plate's size (the default length scale)
    w = np.r_[np.ones(3), np.full(3, scale)]

    def cost(u):
        return np.sum((w * pose_error(frame_pose(manipulator, FRAME, settle_inputs(manipulator, u, res.state).X),
                                      target)) ** 2)
    best = cost(res.u)
    for a in range(len(res.u)):
        for step in (-1e-3, 1e-3):
            u = np.clip(res.u + step * np.eye(len(res.u))[a], manipulator.u_limits[:, 0], manipulator.u_limits[:, 1])
            assert cost(u) >= best * (1 - 1e-6)


def test_bad_requests_say_what_is_wrong(manipulator, prism3):
    with pytest.raises(ValueError, match="no frame 'C9'"):
        inverse_statics(manipulator, "C9", np.eye(4))
    with pytest.raises(ValueError, match="not a rotation"):
        inverse_statics(manipulator, FRAME, np.diag([2.0, 1.0, 1.0, 1.0]))
    if not len(prism3.actuator_names):
        with pytest.raises(ValueError, match="no actuators"):
            inverse_statics(prism3, FRAME, np.eye(4))


@pytest.mark.slow
def test_twenty_reachable_poses(manipulator):
    """The acceptance run: 20 random reachable poses, each met within 1 mm / 0.2 deg at rest (settle), five of
    them also by the simulated dynamics."""
    U, targets = reachable_targets(manipulator, 20, seed=2026)
    home = initial_state(manipulator)
    worst = np.zeros(2)
    for k, target in enumerate(targets):
        res = inverse_statics(manipulator, FRAME, target, start=home)
        assert res.reachable
        _check_rest_state(manipulator, res, target)
        worst = np.maximum(worst, [res.miss_position, res.miss_angle])
        if k < 5:
            X, speed = rest_by_simulation(manipulator, res.u)
            assert speed < 1e-5
            dp, da = misses(frame_pose(manipulator, FRAME, X), target)
            assert dp < POSITION_TOL and da < ANGLE_TOL
    print(f"worst miss of 20 poses: {worst[0] * 1e3:.2e} mm, {np.degrees(worst[1]):.2e} deg")
