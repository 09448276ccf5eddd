"""The touching points of a simulator state as plain arrays (for users, plots and the ROS markers)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Contacts:
    """Touching points (k of them): ``point`` (k, 3) [m] on the obstacle surface, ``normal`` (k, 3) unit out
    of the obstacle, ``force`` (k, 3) [N] on the robot, ``depth`` (k,) [m] penetration, ``obstacle`` (k,)
    index into ``model.obstacles``, ``names`` "<node or bar>/<obstacle>"."""
    point: np.ndarray
    normal: np.ndarray
    force: np.ndarray
    depth: np.ndarray
    obstacle: np.ndarray
    names: tuple

    def __len__(self):
        return len(self.names)

    @property
    def total_force(self) -> np.ndarray:
        """(3,) [N] sum of the contact forces on the robot."""
        return self.force.sum(axis=0)


def contacts_of(model, params, work) -> Contacts:
    """The slots that carry a force in ``work`` (filled by the last force evaluation)."""
    on = np.flatnonzero((work.cg > 0.0) & np.any(work.cforce != 0.0, axis=1))
    names = tuple(f"{model.node_names[params.cs_node[i]] if params.cs_node[i] >= 0 else model.bar_names[params.cs_bar[i]]}"
                  f"/{model.obstacles[params.cs_ob[i]].name}" for i in on)
    return Contacts(work.cpt[on].copy(), work.cn[on].copy(), work.cforce[on].copy(), work.cg[on].copy(), params.cs_ob[on].copy(), names)
