"""The robots of the registered environments and their starting states: the SUPERball-like six-bar on the
ground (rolling) and the built-in stacked manipulator (reach), each computed once per process."""
from __future__ import annotations

import functools

import numpy as np

ROLLING_MIN_TENSION = 100.0      # N: the six-bar template's prestress (as tests and benchmarks build it)


@functools.lru_cache(maxsize=4)
def six_bar_on_ground(friction: float = 0.8):
    """The SUPERball-like six-bar template (generators.mobile.superball) prestressed, on a ground plane of
    Coulomb ``friction``: (model, node positions (n,3) [m] at rest on the ground)."""
    from tensegrity_engine.generators import superball, verify_template
    model, _ = verify_template(superball(friction=friction), min_tension=ROLLING_MIN_TENSION)
    return model, rest_positions(model)


@functools.lru_cache(maxsize=4)
def manipulator(name: str = "stacked_manipulator"):
    """A built-in model with frames and actuators: (model, positions (n,3) [m] at rest)."""
    from tensegrity_engine.model.load import load_model
    model = load_model(name)
    return model, rest_positions(model)


def rest_positions(model, u=None) -> np.ndarray:
    """Node positions (n,3) [m] of ``model`` settled under gravity (on its obstacles) with the actuator
    inputs ``u`` (alpha,) [m reeled in] (default 0)."""
    from tensegrity_engine.statics.equilibrium import settle
    rest = model.rest_length.copy()
    if u is not None:
        np.subtract.at(rest, model.actuator_string, np.asarray(u, float))
    return settle(model, rest_lengths=rest, X=model.positions).positions


def reachable_poses(model, frame: str, count: int = 8, fraction: float = 0.6, seed: int = 0) -> np.ndarray:
    """(count, 4, 4) world poses of ``frame`` that the robot reaches at rest with random inputs drawn
    uniformly within ``fraction`` of its actuator limits (seeded): targets it can hold."""
    from tensegrity_engine.frames import model_frames
    rng = np.random.default_rng(seed)
    lo, hi = fraction * model.u_limits[:, 0], fraction * model.u_limits[:, 1]
    X = np.stack([rest_positions(model, rng.uniform(lo, hi)) for _ in range(count)])
    return model_frames(model, X)[frame]
