"""A rolling policy as a file: a feedback term on the measured node positions plus a periodic term of a clock,
trained in the vectorised environment (bench/train_rolling.py ``--save``) and run anywhere the node positions
are measured (the ``policy_controller`` node, :func:`~tensegrity_engine.locomotion.closed_loop.roll`-like loops).

The action (alpha,) [m], the target input of each actuator (``action_mode`` "target": the motors move toward it
at most at their speed), is

    a = clip(K @ f, u_min, u_max),   f = [(p - mean) / std, sin(2 pi t / T), cos(2 pi t / T), 1]

with p (3n,) [m] the node positions (model order, physical then virtual) relative to the centre of mass,
x y z per node, in the world frame; ``mean``, ``std`` (3n,) [m] the normalisation; t [s] the time since the
policy started, T [s] ``gait_period``. The file (.npz, ``numpy.load(allow_pickle=False)``) holds the arrays
``K`` (alpha, 3n + 3), ``mean``, ``std`` and ``meta``, a JSON text: ``format`` (FORMAT), ``model`` (name,
node_names, actuator_names, ``hash``: :func:`model_hash`), ``observation`` (the blocks of f), ``action_mode``,
``control_period`` [s] (the policy is evaluated once per period, the action held in between), ``gait_period``
[s], ``heading`` [rad] (the direction it was trained to roll: 0 = +x, counter-clockwise), ``trained`` (how).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tensegrity_engine.learn.tasks import centre_of_mass

FORMAT = "tensegrity-policy/1"
OBSERVATION = [{"name": "positions", "size": "3n", "unit": "m",
                "what": "node positions relative to the centre of mass (lumped node masses), world axes, "
                        "x y z per node in model order, normalised by mean and std"},
               {"name": "phase", "size": 2, "unit": "1", "what": "sin and cos of 2 pi t / gait_period"},
               {"name": "bias", "size": 1, "unit": "1", "what": "1"}]
RETRAIN = "retrain it for this model: .venv/bin/python bench/train_rolling.py --save FILE"


class PolicyError(ValueError):
    """A policy file that cannot be used (says which file, why, and how to fix it)."""


def model_hash(model) -> str:
    """sha256 (hex) of what a policy depends on: node and actuator names, bars, string segments, rest lengths,
    node masses, actuated strings, spool radii and input limits (not friction or obstacles)."""
    h = hashlib.sha256()
    for names in (model.node_names, model.actuator_names):
        h.update("\n".join(names).encode() + b"\0")
    for a in (model.bars, model.segments, model.actuator_string):
        h.update(np.ascontiguousarray(a, np.int64).tobytes())
    for a in (model.rest_length, model.node_mass, model.spool_radius, model.u_limits):
        h.update(np.round(np.asarray(a, float), 6).tobytes())    # µm, mg: below any real difference
    return h.hexdigest()


@dataclass
class Policy:
    """See the module docstring. ``K`` (alpha, 3n + 3); ``mean``, ``std`` (3n,) [m]; ``lo``, ``hi`` (alpha,) [m]
    the actuators' input limits; ``meta`` the file's description (FORMAT)."""
    K: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    meta: dict = field(default_factory=dict)

    @classmethod
    def for_model(cls, model, K, mean, std, gait_period: float, control_period: float, heading: float = 0.0,
                  trained: str = "") -> "Policy":
        meta = {"format": FORMAT, "model": {"name": model.name, "node_names": list(model.node_names),
                                            "actuator_names": list(model.actuator_names), "hash": model_hash(model)},
                "observation": OBSERVATION, "action_mode": "target", "control_period": float(control_period),
                "gait_period": float(gait_period), "heading": float(heading), "trained": trained}
        return cls(np.asarray(K, float), np.asarray(mean, float), np.asarray(std, float),
                   model.u_limits[:, 0].astype(float), model.u_limits[:, 1].astype(float), meta)

    @property
    def gait_period(self) -> float:
        return float(self.meta["gait_period"])

    @property
    def control_period(self) -> float:
        return float(self.meta["control_period"])

    @property
    def heading(self) -> float:
        return float(self.meta["heading"])

    def features(self, rel, t) -> np.ndarray:
        """(N, 3n + 3) features of positions relative to the centre of mass ``rel`` (N, 3n) [m] at times t [s]
        (a number or (N,))."""
        rel = np.atleast_2d(np.asarray(rel, float))
        phase = 2 * np.pi * np.broadcast_to(np.asarray(t, float), (len(rel),)) / self.gait_period
        return np.column_stack([(rel - self.mean) / self.std, np.sin(phase), np.cos(phase), np.ones(len(rel))])

    def act_relative(self, rel, t, K=None) -> np.ndarray:
        """(N, alpha) target inputs [m] for relative positions ``rel`` (N, 3n) [m] at t [s]; ``K`` (N, alpha, F)
        per-robot gains (training) instead of the policy's."""
        f = self.features(rel, t)
        a = f @ self.K.T if K is None else np.einsum("naf,nf->na", K, f)
        return np.clip(a, self.lo, self.hi)

    def act(self, model, X, t: float) -> np.ndarray:
        """(alpha,) target inputs [m] for node positions X (n, 3) [m] of ``model`` (all finite) at t [s]."""
        X = np.asarray(X, float)
        rel = (X - centre_of_mass(model, X)).reshape(1, -1)
        return self.act_relative(rel, t)[0]

    # --- the file ------------------------------------------------------------------------------------
    def save(self, path) -> Path:
        path = Path(path)
        if path.suffix != ".npz":
            raise PolicyError(f"{path}: a policy file ends in .npz (numpy.savez); name it e.g. {path.stem}.npz")
        with open(path, "wb") as fh:        # savez on a file object: no second '.npz' appended
            np.savez_compressed(fh, K=self.K, mean=self.mean, std=self.std, lo=self.lo, hi=self.hi,
                                meta=np.array(json.dumps(self.meta, indent=1)))
        return path

    @classmethod
    def load(cls, path, model=None) -> "Policy":
        """The policy in ``path``; with ``model``, checked against it (:meth:`check`). PolicyError naming the
        file and the fix for a file that is missing, not a policy, of another format or for another model."""
        path = Path(path)
        try:
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in ("K", "mean", "std", "lo", "hi", "meta")}
        except FileNotFoundError:
            raise PolicyError(f"{path}: no such policy file (write one with bench/train_rolling.py --save "
                              f"{path})") from None
        except (OSError, ValueError, KeyError) as exc:
            raise PolicyError(f"{path}: not a policy file ({type(exc).__name__}: {exc}); policy files are "
                              f"written by bench/train_rolling.py --save FILE.npz") from None
        try:
            meta = json.loads(str(arrays.pop("meta")))
        except json.JSONDecodeError as exc:
            raise PolicyError(f"{path}: its 'meta' is not JSON ({exc}); {RETRAIN}") from None
        if meta.get("format") != FORMAT:
            raise PolicyError(f"{path}: format {meta.get('format')!r}, this engine reads {FORMAT!r}; {RETRAIN}")
        policy = cls(meta=meta, **arrays)
        policy._check_shapes(path)
        if model is not None:
            policy.check(model, path)
        return policy

    def _check_shapes(self, path):
        m = self.meta["model"]
        n3, alpha = 3 * len(m["node_names"]), len(m["actuator_names"])
        want = {"K": (alpha, n3 + 3), "mean": (n3,), "std": (n3,), "lo": (alpha,), "hi": (alpha,)}
        for name, shape in want.items():
            a = getattr(self, name)
            if a.shape != shape or not np.all(np.isfinite(a)):
                raise PolicyError(f"{path}: array {name} is {a.shape} (finite: {bool(np.all(np.isfinite(a)))}), "
                                  f"its meta says {shape} finite; the file is damaged: {RETRAIN}")
        if not np.all(self.std > 0) or not (self.gait_period > 0 and self.control_period > 0):
            raise PolicyError(f"{path}: std, gait_period and control_period must be positive; {RETRAIN}")

    def check(self, model, path="policy") -> None:
        """PolicyError unless ``model`` is the one the policy was trained for (names, then :func:`model_hash`)."""
        m = self.meta["model"]
        for key, have in (("node_names", list(model.node_names)), ("actuator_names", list(model.actuator_names))):
            if m[key] != have:
                missing = [x for x in m[key] if x not in have]
                raise PolicyError(f"{path}: trained for model '{m['name']}' whose {key} differ from model "
                                  f"'{model.name}'s ({len(m[key])} vs {len(have)}; the model lacks {missing[:6]}): "
                                  f"give the model it was trained on, or {RETRAIN}")
        if m["hash"] != model_hash(model):
            raise PolicyError(f"{path}: trained for model '{m['name']}' (hash {m['hash'][:12]}), but model "
                              f"'{model.name}' differs (hash {model_hash(model)[:12]}: rest lengths, masses, spools or "
                              f"limits): give the model it was trained on (e.g. tensegrity new superball), or "
                              f"{RETRAIN}")


def run_in_env(policy, seconds: float, seeds, **options) -> np.ndarray:
    """(len(seeds), 2) [m] the ground-plane displacement of the centre of mass of one robot per seed running
    ``policy`` for ``seconds`` in ``tensegrity/Rolling-v0`` made with ``options`` (realism, ``randomise``, ...),
    the policy's control period being the environment's."""
    import gymnasium
    env = gymnasium.make_vec("tensegrity/Rolling-v0", num_envs=len(seeds), max_episode_steps=10 ** 6, **options)
    if abs(env.period - policy.control_period) > 1e-9:
        raise PolicyError(f"the environment's control period {env.period:g} s is not the policy's "
                          f"{policy.control_period:g} s: make it with frame_skip and dt to match")
    obs, _ = env.reset(seed=list(seeds))
    n3 = 3 * env.model.n_nodes
    start = centre_of_mass(env.model, env.batch.positions)[:, :2]
    for k in range(int(round(seconds / env.period))):
        obs = env.step(policy.act_relative(obs[:, :n3], k * env.period))[0]
    return centre_of_mass(env.model, env.batch.positions)[:, :2] - start
