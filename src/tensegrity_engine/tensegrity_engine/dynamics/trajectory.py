"""Simulation output: the :class:`Trajectory` and its files (``trajectory.npz`` and ``trajectory.csv``).

``trajectory.npz`` keys (T samples, n nodes in model order, sigma_c composite strings, sigma_s simple
strings, beta bars, alpha actuators):

============== ================ =========================================================
key            shape            meaning
============== ================ =========================================================
t              (T,)             time [s]
nodes          (T, n, 3)        node positions [m], model order (physical then virtual)
velocities     (T, n, 3)        node velocities [m/s]
node_names     (n,)             node names; the first ``n_physical`` are physical nodes
n_physical     ()               number of physical nodes (mu)
bars           (beta, 2)        node indices of each bar
bar_names      (beta,)
strings        (sigma_s, 2)     node indices of each simple string (segment of a composite)
segment_string (sigma_s,)       composite string index of each simple string
string_names   (sigma_c,)       composite string names
tensions       (T, sigma_c)     tension [N] of each composite string (equal along its path)
string_lengths (T, sigma_c)     total length [m] of each composite string
rest_lengths   (T, sigma_c)     rest length [m] (changes with the inputs)
inputs         (T, alpha)       reeled-in length u [m] per actuator
motor_angles   (T, alpha)       motor angle [rad] = u / (sign * spool_radius) + zero
actuator_names (alpha,)
bar_forces     (T, beta)        compressive force [N] in each bar (negative = tension)
bar_length_error (T, beta)      relative bar length error |(|b| - l)/l|
model_name     ()               model name
settings       ()               JSON text: integrator settings and input description
============== ================ =========================================================

``trajectory.csv`` has one row per sample: ``t``, then ``<node>.x/.y/.z`` for the physical nodes,
``T.<string>`` tensions [N], ``u.<actuator>`` inputs [m].
"""
from __future__ import annotations

import csv
import json
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class Trajectory:
    t: np.ndarray
    nodes: np.ndarray
    velocities: np.ndarray
    tensions: np.ndarray
    string_lengths: np.ndarray
    inputs: np.ndarray
    bar_forces: np.ndarray
    node_names: tuple
    n_physical: int
    bars: np.ndarray
    bar_names: tuple
    strings: np.ndarray
    segment_string: np.ndarray
    string_names: tuple
    actuator_names: tuple
    rest_lengths: np.ndarray
    motor_angles: np.ndarray
    bar_length_error: np.ndarray
    model_name: str = ""
    settings: dict = field(default_factory=dict)

    @classmethod
    def from_run(cls, model, t, X, Xd, T, L, u, bar_forces, inputs_description="", settings=None):
        from tensegrity_engine.dynamics.energy import rest_lengths
        from tensegrity_engine.dynamics.inputs import u_to_angles
        s = dict(settings or {})
        s["inputs"] = inputs_description
        return cls(t=t, nodes=X, velocities=Xd, tensions=T, string_lengths=L, inputs=u, bar_forces=bar_forces,
                   node_names=model.node_names, n_physical=model.n_physical, bars=np.array(model.bars),
                   bar_names=model.bar_names, strings=np.array(model.segments),
                   segment_string=np.array(model.segment_string), string_names=model.string_names,
                   actuator_names=model.actuator_names, rest_lengths=rest_lengths(model, u),
                   motor_angles=u_to_angles(model, u) if len(model.actuator_names) else np.zeros_like(u),
                   bar_length_error=model.bar_length_error(X), model_name=model.name, settings=s)

    def save(self, out_dir) -> dict:
        """Write ``trajectory.npz`` and ``trajectory.csv`` into ``out_dir``; returns the paths."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        npz = out / "trajectory.npz"
        np.savez_compressed(
            npz, t=self.t, nodes=self.nodes, velocities=self.velocities, node_names=np.array(self.node_names),
            n_physical=np.int64(self.n_physical), bars=self.bars, bar_names=np.array(self.bar_names),
            strings=self.strings, segment_string=self.segment_string, string_names=np.array(self.string_names),
            tensions=self.tensions, string_lengths=self.string_lengths, rest_lengths=self.rest_lengths,
            inputs=self.inputs, motor_angles=self.motor_angles, actuator_names=np.array(self.actuator_names),
            bar_forces=self.bar_forces, bar_length_error=self.bar_length_error,
            model_name=np.array(self.model_name), settings=np.array(json.dumps(self.settings)))
        csv_path = out / "trajectory.csv"
        mu = self.n_physical
        header = ["t"] + [f"{nm}.{c}" for nm in self.node_names[:mu] for c in "xyz"] + \
                 [f"T.{s}" for s in self.string_names] + [f"u.{a}" for a in self.actuator_names]
        data = np.column_stack([self.t, self.nodes[:, :mu].reshape(len(self.t), -1), self.tensions, self.inputs])
        with csv_path.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(header)
            w.writerows(np.char.mod("%.9g", data).tolist())
        return {"npz": npz, "csv": csv_path}

    @classmethod
    def load(cls, path) -> "Trajectory":
        """Load ``trajectory.npz`` (a file or the directory holding it). A missing file raises OSError, a
        truncated or foreign one ValueError naming the file."""
        p = Path(path)
        if p.is_dir():
            p = p / "trajectory.npz"
        try:
            with np.load(p, allow_pickle=False) as d:
                return cls._from_npz(d)
        except (zipfile.BadZipFile, zlib.error, EOFError, KeyError, ValueError) as exc:
            reason = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
            raise ValueError(f"{p}: not a complete trajectory file ({reason}); write it again with "
                             "'tensegrity simulate'") from None

    @classmethod
    def _from_npz(cls, d) -> "Trajectory":
        return cls(t=d["t"], nodes=d["nodes"], velocities=d["velocities"], tensions=d["tensions"],
                   string_lengths=d["string_lengths"], inputs=d["inputs"], bar_forces=d["bar_forces"],
                   node_names=tuple(d["node_names"].tolist()), n_physical=int(d["n_physical"]), bars=d["bars"],
                   bar_names=tuple(d["bar_names"].tolist()), strings=d["strings"], segment_string=d["segment_string"],
                   string_names=tuple(d["string_names"].tolist()), actuator_names=tuple(d["actuator_names"].tolist()),
                   rest_lengths=d["rest_lengths"], motor_angles=d["motor_angles"],
                   bar_length_error=d["bar_length_error"], model_name=str(d["model_name"]),
                   settings=json.loads(str(d["settings"])))
