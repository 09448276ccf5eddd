"""A sweep's result: per-run parameters, status and summaries; saved as ``sweep.npz`` (and ``sweep.parquet``
with pyarrow) and read back."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

OUTPUTS = ("final", "tensions", "nodes")
OK, ERROR, DIED, NOT_RUN = 0, 1, 2, 3
STATUS_NAMES = {OK: "ok", ERROR: "error", DIED: "worker died", NOT_RUN: "not run"}


@dataclass
class SweepResult:
    """Per-run parameters and summaries. Arrays have one row per run; failed runs hold NaN.

    ``status`` 0 ok, 1 error (exception in the run), 2 worker died, 3 not run (interrupted); ``error`` text;
    ``t_final`` [s]; ``steps``; ``final_positions``/``final_velocities`` (runs, n, 3) [m, m/s];
    ``min_tension``/``max_tension`` (runs, sigma_c) [N] over the samples; ``nodes`` (runs, T, n, 3) [m] if
    asked for; ``wall`` [s] per run; ``worker`` pid per run."""
    model_name: str
    names: tuple
    values: np.ndarray
    seed: int
    status: np.ndarray
    error: np.ndarray
    t_final: np.ndarray
    steps: np.ndarray
    final_positions: np.ndarray
    final_velocities: np.ndarray
    min_tension: np.ndarray
    max_tension: np.ndarray
    wall: np.ndarray
    worker: np.ndarray
    node_names: tuple = ()
    string_names: tuple = ()
    nodes: np.ndarray | None = None
    settings: dict = field(default_factory=dict)
    workers: list = field(default_factory=list)

    @classmethod
    def empty(cls, spec, model, settings):
        R, n, nc = spec.n_runs, model.n_nodes, len(model.string_names)
        nan = lambda *s: np.full(s, np.nan)  # noqa: E731
        T = int(round(settings["duration"] * settings["rate"])) + 1
        return cls(model.name, tuple(spec.names), np.asarray(spec.values, float), spec.seed,
                   np.full(R, NOT_RUN, np.int8), np.full(R, "not run", dtype=object), nan(R),
                   np.zeros(R, np.int64), nan(R, n, 3), nan(R, n, 3), nan(R, nc), nan(R, nc), nan(R),
                   np.zeros(R, np.int64), tuple(model.node_names), tuple(model.string_names),
                   nan(R, T, n, 3) if "nodes" in settings["outputs"] else None, dict(settings))

    def record(self, run, status, err, res, wall, pid):
        self.status[run], self.error[run], self.wall[run], self.worker[run] = status, err, wall, pid
        if res is not None:
            self.t_final[run], self.steps[run] = res["t_final"], res["steps"]
            for k in ("final_positions", "final_velocities", "min_tension", "max_tension"):
                getattr(self, k)[run] = res[k]
            if self.nodes is not None:
                self.nodes[run] = res["nodes"]

    @property
    def n_runs(self) -> int:
        return len(self.status)

    @property
    def ok(self) -> np.ndarray:
        return self.status == OK

    def failed(self) -> list:
        """[(run, {parameter: value}, status name, error)] of every run that did not finish."""
        return [(int(r), dict(zip(self.names, map(float, self.values[r]))), STATUS_NAMES[int(self.status[r])],
                 str(self.error[r])) for r in np.flatnonzero(self.status != OK)]

    def save(self, out_dir) -> dict:
        """Write ``sweep.npz`` (everything) and, if pyarrow is installed, ``sweep.parquet`` (one row per run:
        parameters, status, error, t_final, steps, min/max tension over all strings). Returns the paths."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        arrays = {k: getattr(self, k) for k in ("values", "status", "t_final", "steps", "final_positions",
                                                  "final_velocities", "min_tension", "max_tension", "wall", "worker")}
        if self.nodes is not None:
            arrays["nodes"] = self.nodes
        paths = {"npz": out / "sweep.npz"}
        np.savez_compressed(paths["npz"], names=np.array(self.names, dtype=str), error=self.error.astype(str),
                            node_names=np.array(self.node_names, dtype=str), model_name=np.array(self.model_name),
                            string_names=np.array(self.string_names, dtype=str), seed=np.int64(self.seed),
                            settings=np.array(json.dumps(self.settings)),
                            workers=np.array(json.dumps(self.workers)), **arrays)
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            return paths
        cols = {n: self.values[:, i] for i, n in enumerate(self.names)}
        cols.update(run=np.arange(self.n_runs), status=self.status, error=self.error.astype(str), t_final=self.t_final,
                    steps=self.steps, min_tension=np.min(self.min_tension, axis=1, initial=np.inf),
                    max_tension=np.max(self.max_tension, axis=1, initial=-np.inf))
        paths["parquet"] = out / "sweep.parquet"
        pq.write_table(pa.table(cols), paths["parquet"])
        return paths

    @classmethod
    def load(cls, path) -> "SweepResult":
        """Read ``sweep.npz`` (the file or its directory)."""
        p = Path(path)
        p = p / "sweep.npz" if p.is_dir() else p
        with np.load(p, allow_pickle=False) as d:
            return cls(str(d["model_name"]), tuple(d["names"].tolist()), d["values"], int(d["seed"]), d["status"],
                       d["error"].astype(object), d["t_final"], d["steps"], d["final_positions"],
                       d["final_velocities"], d["min_tension"], d["max_tension"], d["wall"], d["worker"],
                       tuple(d["node_names"].tolist()), tuple(d["string_names"].tolist()),
                       d["nodes"] if "nodes" in d else None, json.loads(str(d["settings"])),
                       json.loads(str(d["workers"])))
