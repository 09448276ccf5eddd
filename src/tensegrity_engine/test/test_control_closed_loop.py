"""PoseController in closed loop with the simulated dynamics of the stacked manipulator (issue 32): unreachable
goals end at their nearest pose (no integral wind-up), reachable goals settle fast (input shaping of the
1.5 Hz mode), the arrival status, a path sent after an unreachable goal, and the re-linearised static map
along a path."""
from __future__ import annotations

import numpy as np
import pytest

from control_cases import (FRAME, closed_loop, reachable_targets, settling_time, unreachable_goals)
from tensegrity_engine.control import PoseController, inverse_statics
from tensegrity_engine.control.pose import frame_pose, misses
from tensegrity_engine.control.static_map import settle_inputs
from tensegrity_engine.sweep.variants import variant_model

NEAREST_POSITION = 1e-3           # m, issue 32's acceptance for an unreachable goal's end
NEAREST_ANGLE = np.radians(0.1)   # rad
SETTLE_POSITION = 1e-3            # m, and
SETTLE_ANGLE = np.radians(0.2)    # rad: "settled" = within these of the goal from then on


def _ends_at_the_nearest_pose(model, goal, duration=20.0):
    """(position, angle) distance of the plate at the end from a fresh solve's nearest pose; the exact
    measurement (the simulator's plate pose): the acceptance is about wind-up, not noise."""
    nearest = inverse_statics(model, FRAME, goal)
    assert not nearest.reachable
    c = PoseController(model, FRAME)
    _, poses, _ = closed_loop(c, model, goal, duration, seed=None)
    lo, hi = model.u_limits.T
    assert np.all(c._ff.u + c.u_integral >= lo - 1e-12) and np.all(c._ff.u + c.u_integral <= hi + 1e-12)
    return misses(poses[-1], nearest.pose)


def test_an_unreachable_goal_ends_at_its_nearest_pose(manipulator):
    """The issue's case (+120 mm along x): before, the integral wound up to -0.21 m and the plate ended
    74 mm from the nearest pose. Measured now: 1 um, 1e-4 deg."""
    dp, da = _ends_at_the_nearest_pose(manipulator, unreachable_goals(manipulator, 1, seed=32)[0])
    assert dp < NEAREST_POSITION and da < NEAREST_ANGLE


@pytest.mark.slow      # ~20 s
def test_ten_unreachable_goals_end_at_their_nearest_poses(manipulator):
    """Measured: worst 12 um, 0.002 deg after 20 s (before: up to 74 mm; the ones whose nearest pose has no
    actuator at a limit drifted 1.5 mm along a flat direction of the fit while the output ramped)."""
    for goal in unreachable_goals(manipulator, 10, seed=32):
        dp, da = _ends_at_the_nearest_pose(manipulator, goal)
        print(f"unreachable goal: plate {dp * 1e3:.3f} mm, {np.degrees(da):.4f} deg from the nearest pose")
        assert dp < NEAREST_POSITION and da < NEAREST_ANGLE


def _settling_times(model, stiffness: float, count: int, seed: int = 31):
    """Settling times [s] of goals from inputs within 30 % of the limits (|u| <= 15 mm: the ramp at the
    default 0.01 m/s takes <= 1.5 s), against the plant with every string ``stiffness`` times as stiff,
    0.5 mm noise on the measured nodes, 10 Hz updates, 15 s."""
    plant = variant_model(model, ["stiffness"], [stiffness])
    _, targets = reachable_targets(model, count, seed=seed, fraction=0.3)
    out = []
    for k, target in enumerate(targets):
        times, poses, _ = closed_loop(PoseController(model, FRAME), plant, target, 15.0, seed=k)
        out.append(settling_time(times, poses, target, SETTLE_POSITION, SETTLE_ANGLE))
    print(f"stiffness x{stiffness}: settled within 1 mm, 0.2 deg after {np.round(out, 2).tolist()} s")
    return np.array(out)


def test_a_reachable_goal_settles_within_5_s_and_8_s_on_a_10_percent_stiffer_plant(manipulator):
    """Before (no shaping, integral gain 0.2/s filtered over 2 s): 18.8 s on the model itself (the 1.5 Hz
    mode, damping ratio 0.002, rang after the ramp). Measured: 1.9 s; 3.8 s on the stiffer plant."""
    assert _settling_times(manipulator, 1.0, 2)[1] <= 5.0
    assert _settling_times(manipulator, 1.1, 2)[1] <= 8.0


def test_a_goal_at_the_edge_of_a_softer_plants_reach_settles_within_8_s(manipulator):
    """Goal 8 of the ten below on a plant with strings 10 % softer: the plant sags, and its plate reaches the
    goal's height only at the top of a fold of the static map (~30 mm more reel-out of the lower stage; the
    nearest pose there misses by 0.80 mm and 0.15 deg, the unreachable part mostly yaw, which no input
    moves). Before, the feedback used the model's Jacobian at the feed-forward's inputs, which still says
    "reel out to rise": it pushed past the fold into the limits and the plate sank (1.4 mm off after 15 s,
    5.4 mm after 40 s: never settled). Now the Jacobian is the model's at the inputs aimed at (the fold is
    there too) and yaw is cut: settled after 4.9 s, 0.80 mm and 0.16 deg off at the end."""
    plant = variant_model(manipulator, ["stiffness"], [0.9])
    _, targets = reachable_targets(manipulator, 10, seed=31, fraction=0.3)
    times, poses, _ = closed_loop(PoseController(manipulator, FRAME), plant, targets[8], 15.0, seed=8)
    assert settling_time(times, poses, targets[8], SETTLE_POSITION, SETTLE_ANGLE) <= 8.0


@pytest.mark.slow      # ~40 s
@pytest.mark.parametrize("stiffness, bound", [(1.0, 5.0), (1.1, 8.0), (0.9, 8.0)])
def test_ten_reachable_goals_settle_in_time(manipulator, stiffness, bound):
    """Measured (15 s each, 0.5 mm noise per node): model 0.7-2.0 s, 10 % stiffer 2.6-4.0 s, 10 % softer
    3.4-4.9 s (before: one of the softer ten never settled). docs/manipulation.md."""
    assert np.all(_settling_times(manipulator, stiffness, 10) <= bound)


def test_arrival_is_reported_once_the_plate_has_settled(manipulator):
    """Exact measurements at 10 Hz: arrived once the last 30 measured poses (2.9 s), fitted with an offset
    and a swing at the 1.5 Hz mode, are within the tolerances (measured: 2.6 s after the plate settled), at
    their filtered pose; a new goal clears it."""
    _, targets = reachable_targets(manipulator, 2, seed=31, fraction=0.3)
    c = PoseController(manipulator, FRAME)
    times, poses, _ = closed_loop(c, manipulator, targets[0], 8.0, seed=None)
    st = c.status
    settled = settling_time(times, poses, targets[0], SETTLE_POSITION, SETTLE_ANGLE)
    assert st["arrived"] and settled <= st["arrived_at"] <= settled + 3.0   # s: the window of 30 samples
    dp, da = misses(st["arrived_pose"], targets[0])
    assert dp <= SETTLE_POSITION and da <= SETTLE_ANGLE
    assert np.allclose(st["nearest"], targets[0], atol=1e-5) and st["solves"] == 1
    c.set_goal(targets[1])
    assert not c.status["arrived"]
    c.update(times[-1] + 0.1, poses[-1])
    assert not c.status["arrived"] and c.status["solves"] == 2


def test_arrival_under_measurement_noise(manipulator):
    """0.5 mm of noise per measured node (~0.3 deg of plate angle per measurement, more than the 0.2 deg
    tolerance), updates at 50 Hz as the node runs: arrived (before: never, each measurement had to be within
    the tolerances for 1 s), at a filtered pose within the tolerances of the goal, while the plate is."""
    _, targets = reachable_targets(manipulator, 1, seed=31, fraction=0.3)
    c = PoseController(manipulator, FRAME)
    times, poses, _ = closed_loop(c, manipulator, targets[0], 6.0, seed=3, rate=50.0)
    st = c.status
    assert st["arrived"], "never arrived"
    settled = settling_time(times, poses, targets[0], SETTLE_POSITION, SETTLE_ANGLE)
    print(f"noisy arrival at {st['arrived_at']:.2f} s (settled {settled:.2f} s); filtered pose "
          f"{misses(st['arrived_pose'], targets[0])[0] * 1e3:.3f} mm, "
          f"{np.degrees(misses(st['arrived_pose'], targets[0])[1]):.3f} deg from the goal")
    assert settled <= st["arrived_at"] <= 5.0
    dp, da = misses(st["arrived_pose"], targets[0])
    assert dp <= SETTLE_POSITION and da <= SETTLE_ANGLE


def test_arrival_without_measurements_waits_for_the_shaped_output(manipulator):
    _, targets = reachable_targets(manipulator, 1, seed=31, fraction=0.3)
    c = PoseController(manipulator, FRAME)
    c.set_goal(targets[0])
    t = np.arange(0.0, 6.0, 0.02)
    arrived = np.array([(c.update(tk), c.status["arrived"])[1] for tk in t])
    at = c.status["arrived_at"]
    assert arrived[-1] and np.allclose(c.status["arrived_pose"], c.status["nearest"])
    ramp = np.abs(c.u).max() / c.max_rate                       # s: the rate-limited ramp
    assert at >= ramp + c._shaper.duration + 1.0 - 0.04


def test_a_path_after_an_unreachable_goal_starts_from_the_nearest_pose(manipulator):
    """Before, the path started at the unreachable goal itself, so its first update solved that pose and
    reported the path unreachable."""
    goal = unreachable_goals(manipulator, 1, seed=32)[0]
    _, targets = reachable_targets(manipulator, 1, seed=31, fraction=0.3)
    c = PoseController(manipulator, FRAME)
    c.set_goal(goal)
    for t in (0.0, 0.1):
        c.update(t)
    assert not c.status["reachable"]
    c.set_trajectory([3.0], targets)
    # the fresh solve's nearest pose (a flat valley of the fit: solves agree to a few um)
    assert np.allclose(c._path.poses[0], inverse_statics(manipulator, FRAME, goal).pose, atol=1e-4)
    c.update(0.2)
    st = c.status
    assert st["reachable"] and st["miss_position"] < 1e-5
    assert np.allclose(st["goal"], targets[0])


def test_along_a_path_the_linearised_map_stays_on_the_exact_statics(manipulator):
    """Between the exact solves at the path's ends, the inputs come from the static map linearised at the
    last equilibrium (re-linearised every 2 mm): no exact solve on the way, and the model settled at those
    inputs is within 0.1 mm and 0.01 deg of the pose they promise (second order: 20 um, 0.0015 deg measured).
    The reference leads the path by the shaper's mean delay; once it is at the end, the end's exact solve
    (made when the path came) is used."""
    _, targets = reachable_targets(manipulator, 2, seed=21, fraction=0.5)
    c = PoseController(manipulator, FRAME, max_rate=0.05, max_step=0.05)
    c.set_goal(targets[0])
    c.update(0.0)
    c.set_trajectory([1.0, 4.0], targets)
    first, end = c._ff.exact, c._end
    state, worst, t = c._ff.state, np.zeros(2), 0.05
    while t + c._shaper.delay < c._path.end:
        c.update(t)
        assert c._ff.exact is first                 # no exact solve while the reference moves
        state = settle_inputs(manipulator, c._ff.u, state)
        worst = np.maximum(worst, misses(frame_pose(manipulator, FRAME, state.X), c._ff.promised))
        t += 0.05
    print(f"linearised map along the path: worst {worst[0] * 1e6:.1f} um, {np.degrees(worst[1]):.5f} deg")
    assert t > 3.0 and worst[0] < 1e-4 and worst[1] < np.radians(0.01)
    c.update(t)
    assert c._ff.exact is end and end.miss_position < 1e-5
