"""What makes a learning environment's robot behave like the real one: motors of finite speed (on by default:
the model's spools at the simulator node's motor speed), and the optional sensor noise, observation latency
and actuator delay (off by default). NumPy over all robots at once; no gymnasium here.
"""
from __future__ import annotations

import math

import numpy as np

from tensegrity_engine.locomotion.planner import MOTOR_SPEED   # rad/s: the simulator node's motor_speed_limit

HIDDEN = 0.5        # of the nodes: hidden in an occluded frame, each (at least one)
PERIOD_ROUNDING = 1e-9      # s: a delay within this of a whole number of control periods counts as whole


def input_rates(model, motor_speed: float = MOTOR_SPEED, max_rate=None) -> np.ndarray:
    """(alpha,) fastest change of each actuator's input u [m/s]: ``max_rate`` (a number or one per actuator)
    if given, else ``motor_speed`` [rad/s] times the actuator's spool radius [m] (the twin's motors: 3 rad/s
    on the six-bar's 15 mm spools is 0.045 m/s)."""
    if max_rate is None:
        if not (math.isfinite(motor_speed) and motor_speed > 0):
            raise ValueError(f"motor_speed must be a positive finite angular speed [rad/s], got {motor_speed}")
        return motor_speed * np.asarray(model.spool_radius, float)
    rate = np.broadcast_to(np.asarray(max_rate, float), np.shape(model.spool_radius)).copy()
    if not (np.all(np.isfinite(rate)) and np.all(rate > 0)):
        raise ValueError(f"max_rate must be positive finite speeds [m/s] (one, or one per actuator), got {max_rate}")
    return rate


def whole_steps(seconds: float, period: float, name: str) -> int:
    """``seconds`` [s] as a whole number of control periods of ``period`` [s] (ValueError otherwise)."""
    steps = round(seconds / period) if math.isfinite(seconds) else -1
    if steps < 0 or abs(steps * period - seconds) > PERIOD_ROUNDING:
        raise ValueError(f"{name} must be a whole number of control periods ({period:g} s) >= 0 [s], got {seconds}")
    return int(steps)


class CommandDelay:
    """Actions reach the motors ``steps`` control steps after they are given; until a robot's first action
    arrives (after a reset) its motors hold (NaN rows: "hold")."""

    def __init__(self, steps: int, num_envs: int, size: int):
        self.queue = np.full((steps, num_envs, size), np.nan)

    def push(self, actions) -> np.ndarray:
        """Queue ``actions`` (num_envs, size); the ones that arrive now (NaN rows: hold)."""
        if not len(self.queue):
            return actions
        out = self.queue[0].copy()
        self.queue[:-1] = self.queue[1:]
        self.queue[-1] = actions
        return out

    def clear(self, robots):
        """The robots' pending actions dropped (a reset)."""
        self.queue[:, robots] = np.nan


class Sensors:
    """What the policy sees of the true observations: ``latency`` control steps old (the reset observation
    until then), with Gaussian noise of standard deviation ``noise`` (per observation entry, in its unit; 0
    for exact entries) drawn from each robot's own generator; in a fraction ``occlusion`` of the frames (per
    robot) some nodes are hidden, as a motion-capture camera loses markers: each node with probability
    ``HIDDEN`` (at least one), its entries (``node_of`` (size,): the node of each entry, -1 for none) then
    repeat what the robot last reported (what a node that fills unseen markers with their last position sees)."""

    def __init__(self, latency: int, noise: np.ndarray, num_envs: int, occlusion: float = 0.0, node_of=None):
        if not (math.isfinite(occlusion) and 0.0 <= occlusion <= 1.0):
            raise ValueError(f"occlusion must be a fraction of frames in [0, 1], got {occlusion}")
        self.latency, self.noise = int(latency), np.asarray(noise, float)
        self.history = np.zeros((self.latency + 1, num_envs, len(self.noise)), np.float32)
        self.noisy = bool(np.any(self.noise > 0))
        self.occlusion = float(occlusion)
        self.node_of = np.full(len(self.noise), -1) if node_of is None else np.asarray(node_of)
        self.last = np.zeros((num_envs, len(self.noise)), np.float32)

    def restart(self, robots, true_obs):
        """The robots' history after a reset: their reset observation ``true_obs`` (len(robots), size)."""
        self.history[:, robots] = true_obs
        self.last[robots] = true_obs

    def record(self, true_obs):
        """Record every robot's true observations (num_envs, size) of this control step."""
        self.history[:-1] = self.history[1:]
        self.history[-1] = true_obs

    def report(self, rngs, robots=None) -> np.ndarray:
        """The observations (len(robots), size) of ``robots`` (default all) as their sensors give them now."""
        robots = np.arange(self.history.shape[1]) if robots is None else np.asarray(robots)
        seen = self.history[0, robots]
        if self.noisy and len(robots):
            draws = np.stack([rngs[i].standard_normal(len(self.noise)) for i in robots])
            seen = seen + (draws * self.noise).astype(np.float32)
        if self.occlusion > 0 and len(robots):
            seen = self._occlude(rngs, robots, seen)
        self.last[robots] = seen
        return seen

    def _occlude(self, rngs, robots, seen) -> np.ndarray:
        n = int(self.node_of.max()) + 1
        seen = seen.copy()
        for row, i in enumerate(robots):
            if rngs[i].random() >= self.occlusion:
                continue
            hidden = rngs[i].random(n) < HIDDEN
            hidden[rngs[i].integers(n)] = True
            mask = (self.node_of >= 0) & hidden[np.maximum(self.node_of, 0)]
            seen[row, mask] = self.last[i, mask]
        return seen
