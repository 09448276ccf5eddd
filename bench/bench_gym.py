#!/usr/bin/env python3
"""Throughput of the vectorised learning environment against MuJoCo Gymnasium-style environments of the same
robot, in the same run on one core (the learning issue's acceptance: ≥ 3× the MuJoCo gym-style env).

    .venv/bin/python bench/bench_gym.py [--sizes 1 16 64 256] [--robot-steps 4096] [--repeats 5] [--cpu N]

Robot: the SUPERball-like six-bar on the ground (``tensegrity/Rolling-v0``: 24 actuated strings with
damping, friction and string stiffness drawn per robot at each reset), RK4 at 1 ms, 20 physics steps per
control step (50 Hz), 250-step episodes with autoreset. All engines get the same actions: a periodic gait
(every actuator's target u = 0.1 m sin(2π t / 0.8 s + its phase)) moving u at most 0.5 m/s.

1. **ours**: ``gymnasium.make_vec("tensegrity/Rolling-v0", num_envs=N)``: N robots in one compiled call per
   control step (observations, rewards, autoreset included);
2. **MuJoCo gym-style**: ``gymnasium.vector.SyncVectorEnv`` of N environments written as gymnasium's
   ``MujocoEnv`` is (one ``MjModel`` and ``MjData`` per env, ``mj_step(model, data, nstep=frame_skip)`` per
   control step, observations from ``qpos``/``qvel``), the scene of ``mujoco_contact_peer.py`` (the same
   bars, strings, capsules, ground contact and friction; MuJoCo RK4 at 1 ms) with the strings' damping as
   tendon damping and the inputs as the tendons' upper spring lengths (rest length − u);
3. **MuJoCo batched loop**: one ``MjModel`` and N ``MjData`` stepped in a plain loop (no env, no
   observations): MuJoCo's cost without Python env overhead.

Printed per N: robot control steps per second and robot physics steps per second (summed over the robots,
median of the repeats, the three taking turns) for the three, and the ratios ours / MuJoCo gym-style and ours / MuJoCo loop.
"""
import os
import sys

if "numba" not in sys.modules:      # run as a script: one thread everywhere
    for _v in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_v] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import gymnasium  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_contact  # noqa: E402
import mujoco_peer as mp  # noqa: E402
import mujoco_contact_peer as mcp  # noqa: E402
import tensegrity_engine.learn  # noqa: E402,F401  (registers the ids)
from tensegrity_engine.learn.robots import six_bar_on_ground  # noqa: E402
from tensegrity_engine.learn.tasks import centre_of_mass  # noqa: E402

FRAME_SKIP = 20             # physics steps per control step
DT = 1e-3                   # s
EPISODE = 250               # control steps
MAX_RATE = 0.5              # m/s, as the env's default
GAIT_AMPLITUDE = 0.1        # m
GAIT_PERIOD = 0.8           # s


def gait(phase, k) -> np.ndarray:
    """The actions (N, alpha) [m] of control step k for actuator phases (N, alpha)."""
    return (GAIT_AMPLITUDE * np.sin(2 * np.pi * k * FRAME_SKIP * DT / GAIT_PERIOD + phase)).astype(np.float32)


def mujoco_scene(model):
    """The MuJoCo scene of ``model`` on its ground (bench_contact.peer) with the strings' damping on the tendons."""
    mm = bench_contact.peer(model)
    mm.tendon_damping[:] = model.string_damping
    return mm


class MujocoRolling(gymnasium.Env):
    """The six-bar in MuJoCo as a gymnasium ``MujocoEnv`` is written: own model and data, ``frame_skip``
    steps per action; observation = node positions relative to their centroid and ``qvel``; reward = the
    centroid's velocity along +x."""

    def __init__(self, model, start):
        self.mm = mujoco_scene(model)
        self.data = mujoco.MjData(self.mm)
        self.model, self.start = model, start
        self.rest = self.mm.tendon_lengthspring[:, 1].copy()
        self.lo, self.hi = model.u_limits[:, 0], model.u_limits[:, 1]
        self.action_space = gymnasium.spaces.Box(self.lo.astype(np.float32), self.hi.astype(np.float32))
        size = 3 * model.n_nodes + self.mm.nv
        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (size,), np.float64)
        self.u = np.zeros(len(self.lo))
        self.steps = 0

    def _obs(self):
        X = mp.node_positions(self.mm, self.data, self.model.bars)
        return np.concatenate([(X - X.mean(axis=0)).ravel(), self.data.qvel]), X.mean(axis=0)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.data = mcp.data_at(self.mm, self.start, self.model.bars)
        self.u[:] = 0.0
        self.steps = 0
        return self._obs()[0], {}

    def step(self, action):
        step = MAX_RATE * FRAME_SKIP * DT
        self.u = np.clip(np.clip(action, self.lo, self.hi), self.u - step, self.u + step)
        self.mm.tendon_lengthspring[:, 1] = self.rest - self.u
        c0 = self._obs()[1]
        mujoco.mj_step(self.mm, self.data, nstep=FRAME_SKIP)
        obs, c1 = self._obs()
        self.steps += 1
        return obs, float(c1[0] - c0[0]) / (FRAME_SKIP * DT), False, self.steps >= EPISODE, {}


def ours(n, phase):
    """A runner of ``steps`` control steps of the vectorised environment (kernels loaded, reset done)."""
    env = gymnasium.make_vec("tensegrity/Rolling-v0", num_envs=n)
    env.reset(seed=0)
    env.step(gait(phase, 0))

    def run(steps):
        for k in range(steps):
            env.step(gait(phase, k))
    return run


def mujoco_gym(n, phase, model, start):
    env = gymnasium.vector.SyncVectorEnv([lambda: MujocoRolling(model, start) for _ in range(n)])
    env.reset(seed=0)

    def run(steps):
        for k in range(steps):
            env.step(gait(phase, k))
    return run


def mujoco_loop(n, phase, model, start):
    mm = mujoco_scene(model)
    rest = mm.tendon_lengthspring[:, 1].copy()
    datas = [mcp.data_at(mm, start, model.bars) for _ in range(n)]
    u = np.zeros((n, len(model.actuator_names)))

    def run(steps):
        nonlocal u
        for k in range(steps):
            step = MAX_RATE * FRAME_SKIP * DT
            u = np.clip(gait(phase, k), u - step, u + step)
            for i, d in enumerate(datas):
                mm.tendon_lengthspring[:, 1] = rest - u[i]
                mujoco.mj_step(mm, d, nstep=FRAME_SKIP)
    return run


def rates(runners, n, steps, repeats) -> list:
    """Median robot control steps per second of each runner, the runners taking turns in every repeat (a
    load change on a shared machine then hits all of them alike)."""
    out = [[] for _ in runners]
    for _ in range(repeats):
        for r, run in enumerate(runners):
            t0 = time.perf_counter()
            run(steps)
            out[r].append(n * steps / (time.perf_counter() - t0))
    return [statistics.median(x) for x in out]


def rolled(model, start, phase) -> tuple:
    """Distance [m] along +x the centroid of robot 0 rolls in 5 s of the gait: (ours, MuJoCo)."""
    env = gymnasium.make_vec("tensegrity/Rolling-v0", num_envs=1, randomise={})
    env.reset(seed=0)
    c0 = centre_of_mass(model, env.unwrapped.batch.positions)[0, 0]
    for k in range(EPISODE - 1):
        env.step(gait(phase[:1], k))
    ours_x = centre_of_mass(model, env.unwrapped.batch.positions)[0, 0] - c0
    peer = MujocoRolling(model, start)
    peer.reset()
    total = sum(peer.step(gait(phase[0], k))[1] for k in range(EPISODE - 1))
    return ours_x, total * FRAME_SKIP * DT


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 16, 64, 256])
    ap.add_argument("--robot-steps", type=int, default=4096, help="robot control steps per measurement")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cpu", type=int, default=None, help="pin to this CPU")
    args = ap.parse_args(argv)
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    model, start = six_bar_on_ground()
    phase = np.random.default_rng(0).uniform(0, 2 * np.pi, (max(args.sizes), len(model.actuator_names)))
    a, b = rolled(model, start, phase)
    print(f"the gait rolls robot 0 by {a:+.3f} m (ours) and {b:+.3f} m (MuJoCo) along +x in {EPISODE * FRAME_SKIP * DT:g} s")
    print(f"{'N':>4} | {'ours ctrl/s':>11} {'phys/s':>9} | {'MuJoCo gym ctrl/s':>17} {'phys/s':>9} | "
          f"{'MuJoCo loop ctrl/s':>18} {'phys/s':>9} | ours/gym | ours/loop")
    for n in args.sizes:
        steps = max(20, args.robot_steps // n)
        runners = [ours(n, phase[:n]), mujoco_gym(n, phase[:n], model, start), mujoco_loop(n, phase[:n], model, start)]
        r = rates(runners, n, steps, args.repeats)
        print(f"{n:>4} | {r[0]:>11.0f} {r[0] * FRAME_SKIP:>9.0f} | {r[1]:>17.0f} {r[1] * FRAME_SKIP:>9.0f} | "
              f"{r[2]:>18.0f} {r[2] * FRAME_SKIP:>9.0f} | {r[0] / r[1]:>7.2f}x | {r[0] / r[2]:>8.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
