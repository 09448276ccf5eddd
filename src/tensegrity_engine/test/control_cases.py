"""Shared cases of the plate-pose control tests: reachable targets, a stiffer plant, closed loops."""
from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

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


def closed_loop(controller, plant, target, duration: float, seed: int | None, rate: float = 10.0):
    """Run the controller at ``rate`` [Hz] against the plant's simulated dynamics (inputs ramped linearly
    between updates), measuring FRAME's pose with NOISE (``seed`` None: exactly); returns the times (K,) [s],
    the true poses (K, 4, 4) after each update and the largest node speeds (K,) [m/s]."""
    rng = None if seed is None else np.random.default_rng(seed)
    sim = Simulator(plant)
    sim.reset(positions=initial_state(plant).X)
    controller.set_goal(target)
    dt, u_prev, times, poses, speeds = 1.0 / rate, np.zeros(len(plant.actuator_names)), [], [], []
    for k in range(int(round(duration * rate))):
        measured = frame_pose(plant, FRAME, sim.positions) if rng is None else noisy_pose(plant, sim.positions, rng)
        u = controller.update(sim.t, measured)
        sim.set_inputs(table([sim.t, sim.t + dt], [u_prev, u]), horizon=2 * dt)
        u_prev = u
        sim.advance(dt)
        times.append(sim.t)
        poses.append(frame_pose(plant, FRAME, sim.positions))
        speeds.append(np.abs(sim.velocities).max())
    return np.array(times), np.array(poses), np.array(speeds)


def dynamic_loop(controller, plant, target, duration: float, seed: int, rate: float = 10.0):
    """:func:`closed_loop` with noise; returns (position miss [m], angle miss [rad]) of the true pose at the
    end and the largest node speed [m/s] over the last second."""
    _, poses, speeds = closed_loop(controller, plant, target, duration, seed, rate)
    return misses(poses[-1], target), speeds[-int(rate):].max()


def settling_time(times, poses, target, position_tol: float, angle_tol: float) -> float:
    """Time [s] after which every pose stays within the tolerances of ``target`` (inf: not at the end)."""
    miss = np.array([misses(p, target) for p in poses])
    outside = np.flatnonzero((miss[:, 0] > position_tol) | (miss[:, 1] > angle_tol))
    if not len(outside):
        return 0.0
    return float("inf") if outside[-1] == len(times) - 1 else float(times[outside[-1]])


def unreachable_goals(model, count: int, seed: int):
    """(count, 4, 4) poses out of FRAME's reach: the issue's case first (the rest pose 120 mm along +x), then
    reachable poses (inputs within half the limits) moved 60..120 mm in a random direction (the workspace
    spans ~125 mm in x and y and ~20 mm in z) and turned by up to 5 deg."""
    rng = np.random.default_rng(seed)
    first = frame_pose(model, FRAME, initial_state(model).X)
    first[0, 3] += 0.12
    if count == 1:
        return first[None]
    _, poses = reachable_targets(model, count - 1, seed, fraction=0.5)
    for pose in poses:
        direction = rng.normal(size=3)
        pose[:3, 3] += rng.uniform(0.06, 0.12) * direction / np.linalg.norm(direction)
        axis = rng.normal(size=3)
        pose[:3, :3] = Rotation.from_rotvec(np.radians(rng.uniform(0, 5)) * axis / np.linalg.norm(axis)).as_matrix() \
            @ pose[:3, :3]
    return np.concatenate([first[None], poses])


def rest_by_simulation(model, u, duration: float = 15.0):
    """Node positions (n, 3) after simulating the model with inputs ramped to u over 1 s and held for
    ``duration`` [s], with added mass-proportional damping of 5/s (it changes no static force, only how fast
    the motion dies out: the manipulator's own damping ratio is 0.002) and the largest node speed [m/s]."""
    sim = Simulator(model, node_damping=5.0)
    sim.set_inputs(table([0.0, 1.0], [np.zeros(len(u)), u]), horizon=duration)
    sim.advance(duration)
    return sim.positions, float(np.abs(sim.velocities).max())
