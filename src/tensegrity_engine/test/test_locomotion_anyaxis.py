"""Any-axis rolling (issue 34): a goal in any direction is reached by a face sequence chosen over every edge of
every face (``locomotion/goal_search.py``), not by first turning to a rolling axis: the route search itself on
the planned tips; the slow tier rolls to goals 3 m away in several directions from turned start poses (the
default tier's closed-loop case, a goal toward a corner of the face, is in test_locomotion.py, sharing its
plans)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tensegrity_engine.generators import superball, verify_template
from tensegrity_engine.locomotion import RollingController
from tensegrity_engine.locomotion.closed_loop import at_rest, roll
from tensegrity_engine.locomotion.goal_search import route_to
from tensegrity_engine.locomotion.support import centre_of_mass

ENDED = ("arrived", "stopped", "error")


@pytest.fixture(scope="module")
def six():
    model, _ = verify_template(superball(friction=0.8), min_tension=100.0)
    return model, at_rest(model)


@pytest.fixture(scope="module")
def plans():
    """The tips planned so far in this module (a plan holds wherever the robot lies on its face: planning every
    edge of the 20 faces once takes 5-15 s)."""
    return {}


def controller(model, plans) -> RollingController:
    ctl = RollingController(model)
    ctl.planner.plans = plans
    return ctl


def turned(model, X, yaw: float) -> np.ndarray:
    """(n, 3) [m] X turned by ``yaw`` [rad] about the vertical through its centre of mass."""
    c = centre_of_mass(model, X)
    R = np.array([[math.cos(yaw), -math.sin(yaw), 0.0], [math.sin(yaw), math.cos(yaw), 0.0], [0.0, 0.0, 1.0]])
    return (X - [c[0], c[1], 0.0]) @ R.T + [c[0], c[1], 0.0]


def rests(model, run) -> np.ndarray:
    """(k, 2) [m] the centre of mass at the start and wherever the robot came to rest on a new face."""
    return run.com[[0, *run.stops], :2]


@pytest.mark.slow
def test_goals_three_metres_away_in_any_direction_are_reached(six, plans):
    """Goals 3 m away in six directions, the robot turned to different start yaws: at least five 'arrived'
    within 0.2 m, the others 'stopped' near it ('nearest_face': the last tip landed a few millimetres farther
    than predicted and no short route comes nearer); paths through the resting places at most twice the
    straight distance, the bar-bar clearance positive. Measured: 5 arrived 0.11-0.18 m from their goals in 8-11
    faces (path 1.3-1.6 x straight), 330° (yaw 60°) stopped 0.21 m away after 9 faces. Before the route search
    the controller arrived at 4 of 12 such goals at start yaw 0 (it stopped 0.23-0.33 m away at the others)."""
    model, X0 = six
    arrived = 0
    for direction_deg, yaw_deg in [(0, 0), (75, 40), (150, 0), (210, 17), (285, 0), (330, 60)]:
        X = turned(model, X0, math.radians(yaw_deg))
        c = centre_of_mass(model, X)[:2]
        a = math.radians(direction_deg)
        goal = c + 3.0 * np.array([math.cos(a), math.sin(a)])
        ctl = controller(model, plans)
        ctl.set_goal(goal, tolerance=0.2)
        run = roll(ctl, X, 240.0, until_state=ENDED)
        left = float(np.hypot(*(centre_of_mass(model, run.positions)[:2] - goal)))
        pts = np.vstack([rests(model, run), run.com[-1, :2]])
        path = float(np.sum(np.hypot(*np.diff(pts, axis=0).T)))
        print(f"goal {direction_deg}° (yaw {yaw_deg}°): {run.status['state']}, {run.faces_changed} faces, "
              f"{left:.2f} m left, path {path / 3.0:.2f} x straight, {run.times[-1]:.0f} s, gap "
              f"{1e3 * run.min_clearance:.0f} mm")
        assert run.status["state"] in ("arrived", "stopped"), (direction_deg, run.status, left)
        assert left <= (0.2 if run.status["state"] == "arrived" else 0.25), (direction_deg, run.status, left)
        assert path <= 2.0 * 3.0, direction_deg    # the lattice zig-zags, a route may detour; no loop round
        assert run.min_clearance > 0.0
        arrived += run.status["state"] == "arrived"
    assert arrived >= 5


def test_route_search_finds_the_fewest_tips_to_a_resting_place_within_the_tolerance(six, plans):
    """On the planned tips alone (no dynamics): a goal at the place two chosen tips lead to is found by a
    two-tip route ending there, and a goal at the start needs no tip."""
    model, X = six
    ctl = controller(model, plans)
    first = ctl.planner.plan_options(X, 0.0, np.pi)[0]
    second = max(ctl.planner.plan_options(first.end, first.direction, np.pi),     # on, not back
                 key=lambda s: np.hypot(*(centre_of_mass(model, s.end) - centre_of_mass(model, X))[:2]))
    goal = centre_of_mass(model, second.end)[:2]
    route = route_to(ctl.planner, X, goal, 0.05, fewest=1)
    assert route.tips <= 2 and route.distance <= 0.05 * (1.0 - 0.15) and route.first is not None
    if route.tips == 2:
        assert route.faces[-1] == second.face_to
    home = route_to(ctl.planner, X, centre_of_mass(model, X)[:2], 0.05, fewest=1)
    assert home.first is None and home.tips == 0 and home.distance < 1e-12
