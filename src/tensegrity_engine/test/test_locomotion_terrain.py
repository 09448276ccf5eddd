"""Rolling over rough ground (slow tier): the six-bar sent to a goal 3 m ahead over 20 random boxes up to 5 cm
and over a height field of bumps up to 5 cm arrives (bench/bench_rough.py measures more seeds;
docs/locomotion.md "Slopes and rough ground")."""
from __future__ import annotations

import numpy as np
import pytest

from tensegrity_engine.generators import superball, verify_template
from tensegrity_engine.generators.terrain import box_field, rough_ground
from tensegrity_engine.locomotion import RollingController
from tensegrity_engine.locomotion.closed_loop import at_rest, roll
from tensegrity_engine.locomotion.support import centre_of_mass
from tensegrity_engine.model.load import with_obstacles

TERRAINS = {"boxes": lambda: box_field(seed=0, n=20, max_height=0.05, region=((0.5, -1.0), (3.0, 1.0))),
            "field": lambda: [rough_ground(seed=0, size=(5.0, 4.0), amplitude=0.05, origin=(-1.0, -2.0),
                                           flat_at=(0.0, 0.0), flat_radius=0.8)]}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(TERRAINS))
def test_superball_crosses_rough_ground_to_a_goal(kind):
    """Seed 0 of each terrain (measured 2026-11-29: boxes 8 faces, field 8 faces, both within 0.2 m)."""
    robot, _ = verify_template(superball(friction=0.8), min_tension=100.0)
    model = with_obstacles(robot, *TERRAINS[kind]())
    X = at_rest(model)
    goal = centre_of_mass(model, X)[:2] + np.array([3.0, 0.0])
    c = RollingController(model, horizon=1)
    c.set_goal(goal, tolerance=0.25)                # m: a tip moves it 0.45-0.7 m (bench/bench_rough.py)
    r = roll(c, X, duration=400.0, until_state=("arrived", "error", "stopped"))
    assert r.status["state"] == "arrived", r.status
    assert r.faces_changed >= 4                      # 3 m at about 0.45 m a tip
    assert r.min_clearance > 0.0                     # the bars never cross
