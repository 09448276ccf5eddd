"""Motion-capture-like measurements of node positions for closed-loop runs (:func:`.closed_loop.roll`): Gaussian
noise per coordinate, frames in which cameras lose some markers (those nodes NaN: unseen), and a latency."""
from __future__ import annotations

import math

import numpy as np

HIDDEN = 0.5        # of the nodes: hidden in an occluded frame, each (at least one), as learn.realism.Sensors


class MocapNoise:
    """``sigma`` [m] standard deviation of the noise on each coordinate; ``occluded`` the fraction of frames
    with hidden nodes (NaN rows); ``latency`` [s] how old a measurement is when it arrives; ``seed`` of the
    draws. Mocap systems: sub-millimetre to a few mm, a few % occluded frames, 5-20 ms."""

    def __init__(self, sigma: float = 0.002, occluded: float = 0.05, latency: float = 0.01, seed: int = 0):
        if not (math.isfinite(sigma) and sigma >= 0 and 0 <= occluded <= 1 and math.isfinite(latency)
                and latency >= 0):
            raise ValueError(f"MocapNoise needs sigma >= 0 [m], occluded in [0, 1], latency >= 0 [s]; got {sigma}, "
                             f"{occluded}, {latency}")
        self.sigma, self.occluded, self.latency = float(sigma), float(occluded), float(latency)
        self.rng = np.random.default_rng(seed)

    def measure(self, X) -> np.ndarray:
        """(n, 3) [m] what the cameras report of node positions X (n, 3) [m] now."""
        Y = np.asarray(X, float) + self.sigma * self.rng.standard_normal(np.shape(X))
        if self.rng.random() < self.occluded:
            hidden = self.rng.random(len(Y)) < HIDDEN
            hidden[self.rng.integers(len(Y))] = True
            Y[hidden] = np.nan
        return Y

    def ticks(self, rate: float) -> int:
        """The latency as whole control ticks at ``rate`` [Hz], rounded up (10 ms at 50 Hz: one 20 ms tick)."""
        return int(math.ceil(self.latency * rate - 1e-9))
