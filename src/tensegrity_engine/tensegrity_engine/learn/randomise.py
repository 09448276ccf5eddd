"""Per-robot parameters drawn at each reset from the sweep machinery's distributions (docs/sweeps.md):
``{parameter: ("uniform", lo, hi) | ("normal", mean, sd[, lo, hi])}`` over the sweep parameters (e.g.
``friction``, ``stiffness``, ``damping_scale.GROUP``, ``velocity_sigma``), checked against the model up front."""
from __future__ import annotations

import numpy as np

from tensegrity_engine.sweep.spec import SweepSpec
from tensegrity_engine.sweep.variants import SweepError, initial_velocities, variant_model

SEED_RANGE = 2 ** 63         # a robot's draw is seeded by an integer from its own generator


class Randomiser:
    """Draws model variants of ``model`` for the distributions ``random`` (empty: the model itself)."""

    def __init__(self, model, random: dict):
        self.model, self.random = model, dict(random)
        if self.random:
            try:
                SweepSpec.build(model, random=self.random, draws=4, seed=0)   # names, ranges, distributions
            except SweepError as exc:
                raise ValueError(f"randomise: {exc}") from None

    def draw(self, rng) -> tuple:
        """(model variant, initial node velocities (n,3) [m/s] or None) for one robot from ``rng``."""
        if not self.random:
            return self.model, None
        spec = SweepSpec.build(self.model, random=self.random, draws=1, seed=int(rng.integers(SEED_RANGE)))
        values = spec.values[0]
        sigma = dict(zip(spec.names, values)).get("velocity_sigma", 0.0)
        velocities = initial_velocities(self.model, float(sigma), int(rng.integers(SEED_RANGE)), 0)
        return variant_model(self.model, spec.names, values), velocities
