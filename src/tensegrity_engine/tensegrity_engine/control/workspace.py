"""The reachable workspace of a model frame: inputs sampled within the actuator limits, each settled.

Samples are a seeded Latin hypercube over the box of ``model.u_limits`` (``scipy.stats.qmc``); each is settled
by Newton's method warm-started from the nearest sample already settled (:func:`.static_map.settle_inputs`).
A sample is *feasible* when its equilibrium converged and every string is taut (the inputs are within the
limits by construction). :meth:`Workspace.save` writes the arrays to ``.npz``; figures are in
:mod:`tensegrity_engine.plots.workspace`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import qmc

from tensegrity_engine.control.pose import frame_index, frame_pose
from tensegrity_engine.control.static_map import initial_state, require_actuators, settle_inputs
from tensegrity_engine.frames import euler_zyx, relative

CONVERGED_RESIDUAL = 1e-6        # N: a settled shape with a larger force residual is not an equilibrium


@dataclass(frozen=True)
class Workspace:
    """``u`` (N, alpha) [m] sampled inputs, ``poses`` (N, 4, 4) the frame reached, ``min_tension`` (N,) [N],
    ``residual`` (N,) [N] of each equilibrium, ``feasible`` (N,) bool; ``home`` (4, 4) the pose at u = 0."""
    model_name: str
    frame: str
    actuator_names: tuple
    u: np.ndarray
    poses: np.ndarray
    min_tension: np.ndarray
    residual: np.ndarray
    feasible: np.ndarray
    home: np.ndarray
    seed: int

    def save(self, path) -> Path:
        """Write the workspace to ``path`` (.npz); :meth:`load` reads it back."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(path, model_name=self.model_name, frame=self.frame,
                            actuator_names=np.array(self.actuator_names), u=self.u, poses=self.poses,
                            min_tension=self.min_tension, residual=self.residual, feasible=self.feasible,
                            home=self.home, seed=self.seed)
        return path

    @classmethod
    def load(cls, path) -> "Workspace":
        """A workspace written by :meth:`save`."""
        with np.load(path, allow_pickle=False) as d:
            return cls(str(d["model_name"]), str(d["frame"]), tuple(str(a) for a in d["actuator_names"]), d["u"],
                       d["poses"], d["min_tension"], d["residual"], d["feasible"].astype(bool), d["home"],
                       int(d["seed"]))

    def relative_angles(self) -> np.ndarray:
        """(N, 3) ZYX Euler angles [rad] (psi, theta, phi) of each pose relative to the u = 0 pose."""
        return euler_zyx(relative(self.home, self.poses))

    def summary(self) -> dict:
        """Counts, the bounding box [m] of the feasible origins and the ranges [rad] of their relative
        Euler angles (empty lists when no sample is feasible)."""
        ok = self.feasible
        out = {"model": self.model_name, "frame": self.frame, "samples": int(len(ok)), "feasible": int(ok.sum()),
               "seed": self.seed, "position_min_m": [], "position_max_m": [], "angle_min_rad": [],
               "angle_max_rad": []}
        if ok.any():
            r, ang = self.poses[ok, :3, 3], self.relative_angles()[ok]
            out.update(position_min_m=r.min(axis=0).tolist(), position_max_m=r.max(axis=0).tolist(),
                       angle_min_rad=ang.min(axis=0).tolist(), angle_max_rad=ang.max(axis=0).tolist())
        return out


def sample_inputs(model, samples: int, seed: int = 0) -> np.ndarray:
    """(samples, alpha) inputs [m]: a seeded Latin hypercube over the actuator limits."""
    lo, hi = model.u_limits[:, 0], model.u_limits[:, 1]
    return qmc.scale(qmc.LatinHypercube(d=len(lo), seed=seed).random(samples), lo, hi) if np.all(hi > lo) else \
        np.broadcast_to(lo, (samples, len(lo))).copy()


def _progress_bar(progress, total):
    if progress is True:
        from tqdm import tqdm
        return tqdm(total=total, unit="pose", desc="settling")
    return None


def workspace(model, frame: str, samples: int = 200, seed: int = 0, progress=None) -> Workspace:
    """Sample ``samples`` inputs within the limits (seeded), settle each and record the pose of ``frame``.

    ``progress``: True for a progress bar on stderr, a callable ``(done, total)``, or None."""
    require_actuators(model)
    frame_index(model, frame)
    if int(samples) < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    U = sample_inputs(model, int(samples), seed)
    home = initial_state(model)
    solved, states = [home.u], [home]
    poses, t_min, res = np.zeros((len(U), 4, 4)), np.zeros(len(U)), np.zeros(len(U))
    bar = _progress_bar(progress, len(U))
    for i, u in enumerate(U):
        near = int(np.argmin(np.abs(np.asarray(solved) - u).max(axis=1)))
        s = settle_inputs(model, u, states[near])
        poses[i], t_min[i], res[i] = frame_pose(model, frame, s.X), s.tensions.min(initial=np.inf), s.residual
        if res[i] <= CONVERGED_RESIDUAL:
            solved.append(s.u)
            states.append(s)
        if bar is not None:
            bar.update()
        elif callable(progress):
            progress(i + 1, len(U))
    if bar is not None:
        bar.close()
    feasible = (res <= CONVERGED_RESIDUAL) & (t_min > 0)
    return Workspace(model.name, frame, tuple(model.actuator_names), U, poses, t_min, res, feasible,
                     frame_pose(model, frame, home.X), int(seed))
