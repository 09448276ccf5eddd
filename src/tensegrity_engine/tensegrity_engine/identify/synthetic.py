"""Synthetic captures made by the engine, for testing identification against known parameters.

:func:`synthetic_capture` simulates a model (tight-tolerance Dormand-Prince) under given inputs and returns
what a motion-capture system would give: the physical nodes' marker positions (the nodes themselves unless the
model puts a ``marker`` off them) at ``rate`` [Hz] with Gaussian noise
``noise`` [m] per coordinate, a fraction ``drop`` of frames missing, and occlusion runs (a node NaN for
``occlusion_frames`` consecutive frames, ``occlusions`` of them), plus the noise-free truth.
:func:`manipulator_truth` is the acceptance case of dynamic identification: the manipulator with every
stiffness +20 %, string damping x3, structural damping 0.3 1/s and viscous pulley friction on the
actuated strings, none of which the model file knows.
"""
from __future__ import annotations

import numpy as np

from tensegrity_engine.identify.data import DynamicCapture, capture_from_arrays
from tensegrity_engine.identify.params import model_with, parameters
from tensegrity_engine.dynamics.simulator import Simulator
from tensegrity_engine.model.markers import marker_positions


def synthetic_capture(model, inputs, duration: float, rate: float = 360.0, noise: float = 5e-4,
                      drop: float = 0.01, occlusions: int = 3, occlusion_frames: int = 20, seed: int = 0,
                      name: str = "synthetic", rtol: float = 1e-9, at_rest: bool = True) -> tuple:
    """(DynamicCapture with noise, dropped frames and occlusions; noise-free truth (T, mu, 3) at its times).
    ``at_rest``: start from the model's equilibrium (a changed model file's positions are not one)."""
    rng = np.random.default_rng(seed)
    sim = Simulator(model, rtol=rtol, atol=rtol * 1e-2)
    if at_rest and len(model.free_nodes):
        from tensegrity_engine.statics.equilibrium import settle
        sim.reset(settle(model).positions)         # a capture starts with the robot at rest
    traj = sim.run(duration, inputs=inputs, rate=rate)
    mu = model.n_physical
    truth = marker_positions(model, traj.nodes)      # a capture sees the markers (the nodes without markers off them)
    X = truth + rng.normal(0.0, noise, truth.shape)
    for _ in range(occlusions):
        i = int(rng.integers(mu))
        k = int(rng.integers(1, max(2, len(X) - occlusion_frames)))
        X[k:k + occlusion_frames, i] = np.nan
    keep = rng.random(len(X)) >= drop
    keep[[0, -1]] = True
    cap = capture_from_arrays(model, traj.t[keep], X[keep], inputs, name=name, source=f"synthetic ({model.name})")
    return cap, truth[keep]


def manipulator_truth(model, pulley: float = 20.0):
    """(truth model, {parameter name: true value}) for the acceptance case (module docstring)."""
    plist = parameters(model, ("stiffness", "string_damping", "structural_damping", "pulley_damping"), "model")
    true = {}
    for p in plist:
        if p.kind == "stiffness":
            true[p.name] = 1.2 * p.initial
        elif p.kind == "string_damping":
            true[p.name] = 3.0 * p.initial
        elif p.kind == "structural_damping":
            true[p.name] = 0.3
        else:
            true[p.name] = pulley if "actuated" in p.name else 0.0
    return model_with(model, plist, [true[p.name] for p in plist]), true


__all__ = ["DynamicCapture", "synthetic_capture", "manipulator_truth"]
