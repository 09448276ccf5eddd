"""Shared cases of the plate-pose control tests: reachable targets, a stiffer plant, closed loops."""
from __future__ import annotations

import numpy as np

from tensegrity_engine import Simulator, table
from tensegrity_engine.control.pose import frame_pose, misses
from tensegrity_engine.control.static_map import initial_state, settle_inputs
from tensegrity_engine.sweep.variants import variant_model

FRAME = "C2"
NOISE = 5e-4                   # m: standard deviation of the measured node positions (per axis)
STIFFER = 1.2                  # the plant's strings are 20 % stiffer than the controller's model


def reachable_targets(model, count: int, seed: int, fraction: float = 1.0):
    """(inputs (count, alpha) [m], poses (count, 4, 4)): random inputs within ``fraction`` of the limits,
    settled, and the pose of FRAME they give: poses inside the reachable workspace."""
    rng = np.random.default_rng(seed)
    home = initial_state(model)
    U = fraction * rng.uniform(model.u_limits[:, 0], model.u_limits[:, 1], size=(count, len(model.actuator_names)))
    return U, np.stack([frame_pose(model, FRAME, settle_inputs(model, u, home).X) for u in U])


def stiffer_plant(model):
    """The plant: the model with every string 20 % stiffer (EA and spring rates)."""
    return variant_model(model, ["stiffness"], [STIFFER])


def noisy_pose(plant, X, rng):
    """FRAME's pose from node positions X with NOISE added (what a motion-capture system would give)."""
    return frame_pose(plant, FRAME, X + rng.normal(0.0, NOISE, X.shape))


def quasi_static_loop(controller, plant, target, iterations: int, seed: int, dt: float = 1.0):
    """Run the controller against the plant settled after every update (one update per ``dt`` [s]); returns
    (position miss [m], angle miss [rad]) of the plant's true pose at the end, and the outputs (K, alpha)."""
    rng = np.random.default_rng(seed)
    state = initial_state(plant)
    controller.set_goal(target)
    outputs = []
    for k in range(iterations):
        outputs.append(controller.update(k * dt, noisy_pose(plant, state.X, rng)))
        state = settle_inputs(plant, outputs[-1], state)
    return misses(frame_pose(plant, FRAME, state.X), target), np.array(outputs)


def dynamic_loop(controller, plant, target, duration: float, seed: int, rate: float = 10.0):
    """Run the controller at ``rate`` [Hz] against the plant's simulated dynamics (inputs ramped linearly
    between updates); returns (position miss [m], angle miss [rad]) of the true pose at the end and the
    largest node speed [m/s] over the last second."""
    rng = np.random.default_rng(seed)
    sim = Simulator(plant)
    sim.reset(positions=initial_state(plant).X)
    controller.set_goal(target)
    dt, u_prev, speeds = 1.0 / rate, np.zeros(len(plant.actuator_names)), []
    for k in range(int(round(duration * rate))):
        u = controller.update(sim.t, noisy_pose(plant, sim.positions, rng))
        sim.set_inputs(table([sim.t, sim.t + dt], [u_prev, u]), horizon=2 * dt)
        u_prev = u
        sim.advance(dt)
        speeds.append(np.abs(sim.velocities).max())
    return misses(frame_pose(plant, FRAME, sim.positions), target), max(speeds[-int(rate):])


def rest_by_simulation(model, u, duration: float = 15.0):
    """Node positions (n, 3) after simulating the model with inputs ramped to u over 1 s and held for
    ``duration`` [s], with added mass-proportional damping of 5/s (it changes no static force, only how fast
    the motion dies out: the manipulator's own damping ratio is 0.002) and the largest node speed [m/s]."""
    sim = Simulator(model, node_damping=5.0)
    sim.set_inputs(table([0.0, 1.0], [np.zeros(len(u)), u]), horizon=duration)
    sim.advance(duration)
    return sim.positions, float(np.abs(sim.velocities).max())
