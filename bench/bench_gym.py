#!/usr/bin/env python3
"""Throughput of the vectorised learning environment against three MuJoCo peers of the same robot, in the same
run on one core (the learning issue's goal: >= 2x the fastest peer at N = 1, 16, 256).

    .venv/bin/python bench/bench_gym.py [--sizes 1 16 256] [--robot-steps 4096] [--repeats 5] [--cpu N]

Robot: the SUPERball-like six-bar on the ground (``tensegrity/Rolling-v0``: 24 actuated strings with
damping, friction and string stiffness drawn per robot at each reset), 1 ms physics steps, 20 per control
step (50 Hz) in every engine, 250-step episodes with autoreset. All engines get the same actions: the rolling
gait ``train_rolling.py`` learns first (its default search, seeded: ~10 s; a 1 s periodic target per
actuator), each robot starting it at its own point of the period, u moving at most at the env's motor speed
(3 rad/s x 15 mm spool = 0.045 m/s): the robots roll, as a learner's would, and do not idle.

1. **ours**: ``gymnasium.make_vec("tensegrity/Rolling-v0", num_envs=N)``: N robots in one compiled call per
   control step (RK4 with switching events; observations, rewards, autoreset included);
2. **MuJoCo gym-style, RK4**: ``gymnasium.vector.SyncVectorEnv`` of N environments written as gymnasium's
   ``MujocoEnv`` is (one ``MjModel`` and ``MjData`` per env, ``mj_step(model, data, nstep=frame_skip)`` per
   control step, observations from ``qpos``/``qvel``), the scene of ``mujoco_contact_peer.py`` (the same
   bars, strings, capsules, ground contact and friction) with the strings' damping as tendon damping and the
   inputs as the tendons' upper spring lengths (rest length - u): RK4, elliptic cones, impratio 10 (the
   settings under which its contact matches ours best);
3. **MuJoCo gym-style, defaults**: the same env with MuJoCo's default solver settings: semi-implicit Euler,
   pyramidal cones, impratio 1;
4. **MuJoCo plain loop, defaults**: one ``MjModel`` and N ``MjData`` stepped in a plain loop (Euler,
   pyramidal, impratio 1; no env, no observations, no rewards): MuJoCo's cost alone.

Printed: the settings, the distance robot 0 rolls in each engine, then per N robot control steps per second
(summed over the robots, median of the repeats, the engines taking turns in every repeat) and ours / each peer.
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
import train_rolling  # noqa: E402
import mujoco_peer as mp  # noqa: E402
import mujoco_contact_peer as mcp  # noqa: E402
import tensegrity_engine.learn  # noqa: E402,F401  (registers the ids)
from tensegrity_engine.learn.robots import six_bar_on_ground  # noqa: E402
from tensegrity_engine.learn.tasks import centre_of_mass  # noqa: E402

FRAME_SKIP = 20             # physics steps per control step
DT = 1e-3                   # s
EPISODE = 250               # control steps
GAIT_PERIOD = 1.0           # s: train_rolling's default
RK4_CONTACT = dict(integrator=mujoco.mjtIntegrator.mjINT_RK4, cone=mujoco.mjtCone.mjCONE_ELLIPTIC,
                   impratio=mcp.IMPRATIO)
DEFAULTS = dict(integrator=mujoco.mjtIntegrator.mjINT_EULER, cone=mujoco.mjtCone.mjCONE_PYRAMIDAL, impratio=1.0)
PEERS = {"MuJoCo gym RK4": RK4_CONTACT, "MuJoCo gym default": DEFAULTS, "MuJoCo loop default": DEFAULTS}


def gait(phase, k) -> np.ndarray:
    """The actions (N, alpha) [m] of control step k for N robots; ``phase`` = (gait parameters (3, alpha),
    each robot's starting control step (N,))."""
    params, offsets = phase
    period_steps = GAIT_PERIOD / (FRAME_SKIP * DT)
    return train_rolling.gait_actions(params[None], (k + offsets)[:, None], period_steps).astype(np.float32)


def learned_gait(robots: int) -> tuple:
    """train_rolling's gait (its default search) and a random starting step of its period for each robot."""
    params = train_rolling.train(period=GAIT_PERIOD, log=lambda text: None)["gait"]
    offsets = np.random.default_rng(0).integers(0, int(round(GAIT_PERIOD / (FRAME_SKIP * DT))), robots)
    return params, offsets


def first(phase, n: int) -> tuple:
    """The gait of the first ``n`` robots."""
    return phase[0], phase[1][:n]


def env_rates() -> np.ndarray:
    """(alpha,) the environment's motor speeds [m/s] (its default: the model's spools at 3 rad/s)."""
    return gymnasium.make_vec("tensegrity/Rolling-v0", num_envs=1).unwrapped.max_rate


def mujoco_scene(model, settings: dict):
    """The MuJoCo scene of ``model`` on its ground (bench_contact.peer) with the strings' damping on the
    tendons and the solver ``settings`` (integrator, cone, impratio)."""
    mm = bench_contact.peer(model)
    mm.tendon_damping[:] = model.string_damping
    mm.opt.integrator, mm.opt.cone, mm.opt.impratio = settings["integrator"], settings["cone"], settings["impratio"]
    assert mm.opt.timestep == DT
    return mm


def describe(settings: dict) -> str:
    return (f"{mujoco.mjtIntegrator(settings['integrator']).name[6:]}, "
            f"{mujoco.mjtCone(settings['cone']).name[7:].lower()} cones, impratio {settings['impratio']:g}")


class MujocoRolling(gymnasium.Env):
    """The six-bar in MuJoCo as a gymnasium ``MujocoEnv`` is written: own model and data, ``frame_skip``
    steps per action; observation = node positions relative to their centroid and ``qvel``; reward = the
    centroid's velocity along +x."""

    def __init__(self, model, start, settings, rates):
        self.mm = mujoco_scene(model, settings)
        self.data = mujoco.MjData(self.mm)
        self.model, self.start, self.step_limit = model, start, rates * FRAME_SKIP * DT
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
        self.u = np.clip(np.clip(action, self.lo, self.hi), self.u - self.step_limit, self.u + self.step_limit)
        self.mm.tendon_lengthspring[:, 1] = self.rest - self.u
        c0 = self._obs()[1]
        mujoco.mj_step(self.mm, self.data, nstep=FRAME_SKIP)
        obs, c1 = self._obs()
        self.steps += 1
        return obs, float(c1[0] - c0[0]) / (FRAME_SKIP * DT), False, self.steps >= EPISODE, {}


def stepping(env, phase):
    """A runner of ``steps`` control steps of a reset vector env with the gait."""
    env.reset(seed=0)
    env.step(gait(phase, 0))

    def run(steps):
        for k in range(steps):
            env.step(gait(phase, k))
    return run


def mujoco_gym(n, phase, model, start, settings, rates):
    return stepping(gymnasium.vector.SyncVectorEnv([lambda: MujocoRolling(model, start, settings, rates)
                                                    for _ in range(n)]), phase)


def mujoco_loop(n, phase, model, start, settings, rates):
    mm = mujoco_scene(model, settings)
    rest = mm.tendon_lengthspring[:, 1].copy()
    datas = [mcp.data_at(mm, start, model.bars) for _ in range(n)]
    u = np.zeros((n, len(model.actuator_names)))
    step = rates * FRAME_SKIP * DT

    def run(steps):
        nonlocal u
        for k in range(steps):
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


def rolled(model, start, phase, speeds) -> list:
    """Distance [m] along +x the centroid of robot 0 rolls in 5 s of the gait: ours, MuJoCo RK4, MuJoCo defaults."""
    env = gymnasium.make_vec("tensegrity/Rolling-v0", num_envs=1, randomise={})
    env.reset(seed=0)
    c0 = centre_of_mass(model, env.unwrapped.batch.positions)[0, 0]
    for k in range(EPISODE - 1):
        env.step(gait(first(phase, 1), k))
    out = [centre_of_mass(model, env.unwrapped.batch.positions)[0, 0] - c0]
    for settings in (RK4_CONTACT, DEFAULTS):
        peer = MujocoRolling(model, start, settings, speeds)
        peer.reset()
        out.append(sum(peer.step(gait(first(phase, 1), k)[0])[1] for k in range(EPISODE - 1)) * FRAME_SKIP * DT)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 16, 256])
    ap.add_argument("--robot-steps", type=int, default=4096, help="robot control steps per measurement")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cpu", type=int, default=None, help="pin to this CPU")
    args = ap.parse_args(argv)
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    model, start = six_bar_on_ground()
    speeds = env_rates()
    phase = learned_gait(max(args.sizes))
    print(f"every engine: {DT * 1e3:g} ms physics steps, {FRAME_SKIP} per control step, inputs at most "
          f"{speeds.max():g} m/s; ours: RK4 with switching events")
    for name, settings in PEERS.items():
        print(f"{name}: {describe(settings)}")
    dist = rolled(model, start, phase, speeds)
    print(f"the gait rolls robot 0 along +x in {EPISODE * FRAME_SKIP * DT:g} s: ours {dist[0]:+.3f} m, "
          f"MuJoCo RK4 {dist[1]:+.3f} m, MuJoCo defaults {dist[2]:+.3f} m")
    print(f"{'N':>4} | {'ours':>7} | " + " | ".join(f"{name:>19}" for name in PEERS) + " | ours / each peer"
          "   (robot control steps/s)")
    for n in args.sizes:
        steps = max(20, args.robot_steps // n)
        peers = [mujoco_gym, mujoco_gym, mujoco_loop]
        runners = [stepping(gymnasium.make_vec("tensegrity/Rolling-v0", num_envs=n), first(phase, n))] + [
            make(n, first(phase, n), model, start, settings, speeds) for make, settings in zip(peers, PEERS.values())]
        r = rates(runners, n, steps, args.repeats)
        ratios = " ".join(f"{r[0] / x:5.2f}x" for x in r[1:])
        print(f"{n:>4} | {r[0]:>7.0f} | " + " | ".join(f"{x:>19.0f}" for x in r[1:]) +
              f" | {ratios}  (fastest peer: {r[0] / max(r[1:]):.2f}x)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
