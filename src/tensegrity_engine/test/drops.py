"""Random drops of a robot for the contact tests: the total energy sampled through each drop."""
from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from tensegrity_engine import Simulator


def drop_energies(model, rng, trials: int = 3, height: float = 0.6, samples: int = 400, every: float = 0.005):
    """Per trial: (total energy [J] every ``every`` s (samples + 1,), the simulator at the end) of ``model``
    dropped from its centroid at ``height`` [m] in a random orientation with a random spin (3 rad/s scale)
    and velocity (1, 1, 0.5 m/s scale); RK4 at 1 ms."""
    out = []
    for _ in range(trials):
        R = Rotation.random(random_state=rng.integers(1 << 30)).as_matrix()
        X = (model.positions - model.positions.mean(axis=0)) @ R.T + [0, 0, height]
        V = np.cross(rng.normal(size=3) * 3.0, X - X.mean(axis=0)) + rng.normal(size=3) * [1, 1, 0.5]
        sim = Simulator(model, integrator="rk4", dt=1e-3)
        sim.reset(X, V)
        E = [sim.energy()["total"]]
        for _ in range(samples):
            sim.advance(every)
            E.append(sim.energy()["total"])
        out.append((np.array(E), sim))
    return out
