"""A robot that starts inside an obstacle: checked before it is simulated (Simulator: the state the first
integration starts from, after every reset; BatchSimulator: every reset).

The contact law (:mod:`~tensegrity_engine.dynamics.contact`) is a spring k = m ω² at each touching point
("slot": a node, or a bar's interior on a box), ω = π / contact_time. A robot resting on a surface presses
every slot with at most its whole weight W = M |g| (the normal forces balance the weight and none pulls), so
a resting slot is at most W / k deep: the deepest start a pose at rest explains (W / k is 0.1 mm x M / m at
the default 10 ms contact time; 1.2 mm for a 1.2 kg six-bar whose nodes carry 0.1 kg each).

* deeper than WARN_WEIGHTS x W / k: a warning - the spring pushes harder than any rest pose explains, so
  the robot is pushed out at the start;
* deeper than REFUSE_WEIGHTS x W / k: a ModelError naming the model file, the node or bar, the obstacle and
  the fix. The spring then stores ½ k δ² = 50 W (W / k): enough to throw the robot 50 resting depths high
  (6 cm for the six-bar) before damping - a start in a wedge between two obstacles can press a slot with a
  few weights, ten is no pose a user means. Unchecked, a six-bar started 0.81 m in the ground held 17.6 kJ in
  its contact springs and its nodes were 143 m up 2 s later.

A weightless model (|g| = 0) is judged with the weight it has under standard gravity, so a start inside a
wall is refused in space too. Fixed nodes never move, so they may start anywhere.
"""
from __future__ import annotations

import numpy as np

from tensegrity_engine.collision.obstacles import bar_contacts, model_obstacles, point_contacts
from tensegrity_engine.dynamics.kernel_params import kernel_params
from tensegrity_engine.errors import ModelError

WARN_WEIGHTS = 1.0        # x the robot's weight: the largest force a slot of a robot at rest carries
REFUSE_WEIGHTS = 10.0     # x the robot's weight: no start pose a user means (module docstring)
STANDARD_GRAVITY = 9.80665  # m/s², the weight scale of a weightless model


def start_depths(model, X) -> tuple:
    """(depth [m] (k,), rest depth W / k [m] (k,)) of every contact slot (the kernels' order, named by
    :func:`slot_name`) at node positions X (n, 3); depth <= 0: not touching."""
    p = kernel_params(model)                      # the contact slots as the kernels have them (kept per model)
    node, bar, ob = p.cs_node, p.cs_bar, p.cs_ob
    if not len(ob):
        return np.zeros(0), np.zeros(0)
    obstacles, X = model_obstacles(model), np.asarray(X, float)
    depth = np.zeros(len(ob))
    at = node >= 0
    nodes, row = np.unique(node[at], return_inverse=True)     # each node once against all obstacles (a
    radius = np.zeros(len(nodes))                             # node's slots share its radius), not every
    radius[row] = p.cs_r[at]                                  # slot against every obstacle
    depth[at] = -point_contacts(obstacles, X[nodes], radius).clearance[row, ob[at]]
    if (~at).any():
        depth[~at] = -bar_contacts(model, X, obstacles).clearance[bar[~at], ob[~at]]
    g = float(np.linalg.norm(model.gravity))
    weight = model.total_mass() * (g if g > 0 else STANDARD_GRAVITY)          # N
    return depth, weight / p.cs_k


def slot_name(model, k: int) -> str:
    """Contact slot ``k`` as "node 'a' in obstacle 'ground'" (or "bar 'b0' in ...": a bar's interior)."""
    p = kernel_params(model)
    i, b, o = int(p.cs_node[k]), int(p.cs_bar[k]), int(p.cs_ob[k])
    return (f"node '{model.node_names[i]}'" if i >= 0 else f"bar '{model.bar_names[b]}'") + \
        f" in obstacle '{model.obstacles[o].name}'"


def check_start(model, X=None) -> list:
    """Warnings (text) for a start at node positions X (default: the model's) deeper in an obstacle than a
    resting robot sinks in; raises ModelError deeper than REFUSE_WEIGHTS times that (module docstring)."""
    depth, rest = start_depths(model, model.positions if X is None else X)
    if not len(depth):
        return []
    ratio = depth / rest
    k = int(np.argmax(ratio))
    if ratio[k] > REFUSE_WEIGHTS:
        raise ModelError(model.source, slot_name(model, k), f"starts {depth[k]:.4g} m deep inside the obstacle, "
                         f"more than the {REFUSE_WEIGHTS * rest[k]:.3g} m at which its contact pushes with "
                         f"{REFUSE_WEIGHTS:g} times the robot's weight (a robot at rest sinks in at most "
                         f"{rest[k]:.3g} m): the start would throw it out",
                         f"move the robot at least {depth[k]:.4g} m out of the obstacle (the model file's node "
                         "positions or the positions given to reset, or the obstacle's point or centre); "
                         "statics.equilibrium.settle stands a robot on the ground")
    return [f"{slot_name(model, k)} starts {depth[k]:.3g} m deep inside the obstacle, more than a robot at rest "
            f"sinks in ({rest[k]:.3g} m): it is pushed out at the start" for k in np.flatnonzero(ratio > WARN_WEIGHTS)]
