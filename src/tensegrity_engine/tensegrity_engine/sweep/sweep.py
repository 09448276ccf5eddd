"""Sweeps: many simulations of variants of one model (grids, Monte Carlo), locally or on a Dask cluster.

    spec = SweepSpec.build("prism3", grid={"stiffness": np.linspace(0.8, 1.2, 11)},
                           random={"rest_offset.side": ("uniform", -0.01, 0.01)}, draws=100, seed=0)
    res = run_sweep(spec, duration=5.0)                        # all local cores (processes)
    res = run_sweep(spec, duration=5.0, scheduler="tcp://host:8786")   # a Dask cluster (or a Client/LocalCluster)
    res.save("runs/sweep")                                     # sweep.npz and sweep.parquet (pyarrow; npz only without it)

Parameters (``NAME`` or ``NAME.SEL``; SEL is a string ``group`` of the model file or a string name, none =
all strings); several parameters on the same strings apply in column order:

* ``stiffness`` factor [-] on the string stiffness [N/m] (or EA [N]);
* ``damping`` string damping [N s/m] (set); ``damping_scale`` factor [-] on it;
* ``rest_offset`` [m] added to the rest lengths;
* ``structural_damping`` [1/s] mass-proportional damping; ``gravity.x|y|z`` [m/s^2] gravity components;
* ``velocity_sigma`` [m/s]: initial node velocities drawn N(0, sigma) per axis (seeded by (seed, run);
  projected onto the constraints by ``Simulator.reset``).

Every run is ``Simulator(variant).reset(velocities=V0)`` then ``run(duration, inputs, rate)``; the summary of
each run (status, error, final time, steps, final positions/velocities, min/max tension per string, optionally
the sampled nodes) is gathered into one :class:`SweepResult` with the parameters of each run. Runs are sent in
batches; each worker process builds the model and loads the compiled kernels once (``_worker_state``).
A run that raises is recorded with its message; a worker process that dies is handled in ``sweep_exec``.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tensegrity_engine.model.checks import MAX_GRAVITY, MAX_STIFFNESS, MAX_STRUCTURAL_DAMPING

KINDS = ("stiffness", "damping", "damping_scale", "rest_offset", "structural_damping", "gravity", "velocity_sigma")
STRING_KINDS = ("stiffness", "damping", "damping_scale", "rest_offset")
OUTPUTS = ("final", "tensions", "nodes")
OK, ERROR, DIED, NOT_RUN = 0, 1, 2, 3
STATUS_NAMES = {OK: "ok", ERROR: "error", DIED: "worker died", NOT_RUN: "not run"}


class SweepError(ValueError):
    """A sweep specification or its settings are invalid (the message says which parameter and why)."""


# --- parameters -> model variant ----------------------------------------------------------------------
def _selection(model, kind: str, sel: str | None) -> np.ndarray:
    """Indices of the composite strings a parameter ``kind.sel`` acts on."""
    if sel is None:
        return np.arange(len(model.string_names))
    groups = sorted({g for g in model.string_group if g})
    idx = [c for c, g in enumerate(model.string_group) if g == sel]
    if not idx and sel in model.string_names:
        idx = [model.string_names.index(sel)]
    if not idx:
        raise SweepError(f"parameter '{kind}.{sel}': '{sel}' is neither a string group "
                         f"({', '.join(groups) or 'the model has none'}) nor a string of model '{model.name}'")
    return np.array(idx)


def parse_name(model, name: str):
    """``NAME[.SEL]`` -> (kind, target): string indices, a gravity axis (0..2) or None."""
    if not isinstance(name, str) or not name:
        raise SweepError(f"parameter names are text, got {name!r}")
    kind, _, sel = name.partition(".")
    if kind not in KINDS:
        raise SweepError(f"unknown parameter '{name}': use one of {', '.join(KINDS)} "
                         "(stiffness/damping/damping_scale/rest_offset may take .GROUP or .STRING, gravity .x/.y/.z)")
    if kind in STRING_KINDS:
        return kind, _selection(model, kind, sel or None)
    if kind == "gravity":
        if sel not in ("x", "y", "z"):
            raise SweepError(f"parameter '{name}': write gravity.x, gravity.y or gravity.z [m/s^2]")
        return kind, "xyz".index(sel)
    if sel:
        raise SweepError(f"parameter '{name}': '{kind}' takes no selector")
    return kind, None


def _nodal_mass(model) -> np.ndarray:
    m = np.array(model.node_mass, float).copy()
    np.add.at(m, model.bars[:, 0], model.bar_mass / 2)
    np.add.at(m, model.bars[:, 1], model.bar_mass / 2)
    return m


def _ro(a):
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def variant_model(base, names, values):
    """The model ``base`` with the parameters ``names`` set to ``values`` (see the module docstring).

    Only string stiffness/EA, damping, rest lengths, gravity and structural damping change (the arrays are
    computed as ``build_model`` computes them from an edited model file, so results are identical).
    Raises SweepError for values outside the model file's ranges."""
    ea, k = np.array(base.string_EA, float), np.array(base.string_stiffness, float)
    zeta, rest = np.array(base.string_damping, float), np.array(base.rest_length, float)
    g, sd = np.array(base.gravity, float), base.structural_damping
    for name, v in zip(names, values):
        kind, target = parse_name(base, name)
        v = float(v)
        if not math.isfinite(v):
            raise SweepError(f"parameter '{name}' = {v}: must be finite")
        if kind == "stiffness":
            if v <= 0:
                raise SweepError(f"parameter '{name}' = {v:g}: a stiffness factor must be > 0")
            ea[target] *= v
            k[target] *= v
        elif kind == "damping":
            if v < 0:
                raise SweepError(f"parameter '{name}' = {v:g}: string damping [N s/m] must be >= 0")
            zeta[target] = v
        elif kind == "damping_scale":
            if v < 0:
                raise SweepError(f"parameter '{name}' = {v:g}: a damping factor must be >= 0")
            zeta[target] *= v
        elif kind == "rest_offset":
            rest[target] += v
        elif kind == "structural_damping":
            if not 0 <= v <= MAX_STRUCTURAL_DAMPING:
                raise SweepError(f"parameter '{name}' = {v:g}: must be in [0, {MAX_STRUCTURAL_DAMPING:g}] 1/s")
            sd = v
        elif kind == "gravity":
            g[target] = v
        elif v < 0:
            raise SweepError(f"parameter '{name}' = {v:g}: a standard deviation [m/s] must be >= 0")
    bad = np.flatnonzero(~(rest > 0))
    if bad.size:
        raise SweepError(f"rest length of string '{base.string_names[bad[0]]}' becomes {rest[bad[0]]:g} m "
                         "(must stay > 0): reduce the rest_offset")
    for a, c in enumerate(base.actuator_string):
        if base.u_limits[a, 1] >= rest[c]:
            raise SweepError(f"actuator '{base.actuator_names[a]}' can reel in {base.u_limits[a, 1]:g} m, more "
                             f"than the rest length {rest[c]:g} m of string '{base.string_names[c]}'")
    if np.nanmax(np.r_[ea, k, 0.0]) > MAX_STIFFNESS:
        raise SweepError(f"a string stiffness exceeds the supported {MAX_STIFFNESS:g}: reduce the stiffness factor")
    if math.hypot(*g) > MAX_GRAVITY:
        raise SweepError(f"|gravity| = {math.hypot(*g):g} m/s^2 exceeds the supported {MAX_GRAVITY:g} m/s^2")
    return dataclasses.replace(base, string_EA=_ro(ea), string_stiffness=_ro(k), string_damping=_ro(zeta),
                               rest_length=_ro(rest), gravity=_ro(g), structural_damping=float(sd),
                               gravity_forces=_ro(_nodal_mass(base)[:, None] * g[None, :]))


def initial_velocities(model, sigma: float, seed: int, run: int):
    """Initial node velocities (n,3) [m/s] of run ``run``: N(0, sigma) per axis, or None if sigma is 0."""
    if sigma == 0:
        return None
    return np.random.default_rng([int(seed), int(run)]).normal(0.0, sigma, (model.n_nodes, 3))


# --- the specification ---------------------------------------------------------------------------------
def _draw(rng, name, dist, n):
    """n draws of ``dist``: ("uniform", lo, hi) or ("normal", mean, sd[, lo, hi]) (truncated by rejection)."""
    if not isinstance(dist, (tuple, list)) or not dist or dist[0] not in ("uniform", "normal"):
        raise SweepError(f"random parameter '{name}': give ('uniform', lo, hi) or ('normal', mean, sd[, lo, hi]), "
                         f"got {dist!r}")
    kind, args = dist[0], [float(a) for a in dist[1:]]
    if not all(math.isfinite(a) for a in args):
        raise SweepError(f"random parameter '{name}': bounds must be finite numbers, got {args}")
    if kind == "uniform":
        if len(args) != 2 or not args[0] < args[1]:
            raise SweepError(f"random parameter '{name}': uniform needs lo < hi, got {args}")
        return rng.uniform(args[0], args[1], n)
    if len(args) not in (2, 4) or args[1] <= 0:
        raise SweepError(f"random parameter '{name}': normal needs mean, sd > 0 and optional lo < hi, got {args}")
    lo, hi = (args[2], args[3]) if len(args) == 4 else (-math.inf, math.inf)
    if not lo < hi:
        raise SweepError(f"random parameter '{name}': normal bounds need lo < hi, got {lo}, {hi}")
    out = np.empty(0)
    for _ in range(100):
        x = rng.normal(args[0], args[1], max(n, 64))
        out = np.r_[out, x[(x >= lo) & (x <= hi)]]
        if out.size >= n:
            return out[:n]
    raise SweepError(f"random parameter '{name}': the bounds [{lo}, {hi}] keep almost no mass of "
                     f"N({args[0]}, {args[1]}): widen them")


@dataclass(frozen=True)
class SweepSpec:
    """A model (validated model-file spec, shipped to the workers) and one row of parameter values per run."""
    model_spec: object
    names: tuple
    values: np.ndarray          # (runs, len(names))
    seed: int = 0
    description: dict = field(default_factory=dict)

    @property
    def n_runs(self) -> int:
        return int(self.values.shape[0])

    @classmethod
    def build(cls, model, grid=None, random=None, draws=None, seed=0, runs=None):
        """Runs = the cartesian product of ``grid`` {name: values} x ``draws`` Monte Carlo draws of ``random``
        {name: ("uniform", lo, hi) | ("normal", mean, sd[, lo, hi])} (seeded; one draw per grid point and draw
        index). ``runs`` ({name: values} of equal length) gives explicit rows instead. ``model``: name, path
        or Model."""
        from tensegrity_engine.model.load import load_model
        from tensegrity_engine.model.model import Model
        base = model if isinstance(model, Model) else load_model(model)
        grid, random = dict(grid or {}), dict(random or {})
        if runs is not None:
            if grid or random:
                raise SweepError("give either explicit runs or grid/random parameters, not both")
            names = tuple(runs)
            cols = [np.asarray(runs[n], float).ravel() for n in names]
            if len({c.size for c in cols}) > 1:
                raise SweepError("explicit runs: every parameter needs the same number of values")
            values = np.column_stack(cols) if cols else np.zeros((0, 0))
        else:
            if random and draws is None:
                raise SweepError("random parameters need a number of Monte Carlo draws (draws=N)")
            draws = 1 if draws is None else draws
            if not isinstance(draws, (int, np.integer)) or draws < 1:
                raise SweepError(f"draws (--monte-carlo) must be a positive integer, got {draws!r}")
            axes = [np.asarray(v, float).ravel() for v in grid.values()]
            for n, a in zip(grid, axes):
                if a.size == 0:
                    raise SweepError(f"grid parameter '{n}' has no values")
            rng = np.random.default_rng(seed)
            mc = np.column_stack([_draw(rng, n, d, draws * max(1, math.prod(a.size for a in axes)))
                                  for n, d in random.items()]) if random else None
            rows = [list(p) for p in itertools.product(*axes) for _ in range(draws)]
            values = np.array(rows, float).reshape(len(rows), len(axes))
            if mc is not None:
                values = np.column_stack([values, mc[:len(rows)]])
            names = tuple(grid) + tuple(random)
        if len(set(names)) != len(names):
            raise SweepError(f"a parameter is given twice: {names}")
        if values.shape[0] == 0 or not names:
            raise SweepError("the sweep has no runs: give at least one parameter with at least one value")
        spec = cls(base.spec, names, values, int(seed), {"grid": {k: list(map(float, v)) for k, v in grid.items()},
                                                         "random": {k: list(v) for k, v in random.items()},
                                                         "draws": draws})
        spec.check(base)
        return spec

    def check(self, base):
        """Validate every run's parameters against ``base`` (raises SweepError naming the run)."""
        for name in self.names:
            parse_name(base, name)
        seen = set()
        for r, row in enumerate(self.values):
            key = row.tobytes()
            if key in seen:
                continue
            seen.add(key)
            try:
                variant_model(base, self.names, row)
            except SweepError as exc:
                raise SweepError(f"run {r} ({', '.join(f'{n}={v:g}' for n, v in zip(self.names, row))}): {exc}") from None


# --- one run and one batch (executed in the workers) ---------------------------------------------------
_STATE: dict = {}            # per worker process: key -> base model, settings, kernel signatures
_INITS: dict = {}            # per worker process: key -> how many times the state was built (1 expected)


def _kernel_signatures() -> dict:
    """{kernel name: compiled signatures} of the kernels a run uses (a worker compiles each once)."""
    from tensegrity_engine.dynamics.kernels import _record, project
    from tensegrity_engine.dynamics.kernels_dopri5 import integrate_dopri5
    from tensegrity_engine.dynamics.kernels_rk4 import integrate_rk4
    kernels = {"integrate_rk4": integrate_rk4, "integrate_dopri5": integrate_dopri5, "_record": _record,
               "project": project}
    return {name: len(kernel.overloads) for name, kernel in kernels.items()}


def _worker_state(key, payload):
    """Build the base model and load the kernels once per worker process (the first call per ``key``)."""
    st = _STATE.get(key)
    if st is None:
        import os

        from tensegrity_engine.model.build import build_model
        from tensegrity_engine.dynamics.simulator import Simulator
        model_spec, settings = payload
        base = build_model(model_spec)
        sim = Simulator(base, integrator=settings["integrator"], dt=settings["dt"], rtol=settings["rtol"],
                        atol=settings["atol"], damping=settings["damping"])
        sim.run(min(settings["duration"], 2.0 / settings["rate"]), inputs=_inputs(base, settings),
                rate=settings["rate"])                   # loads (or compiles) exactly the kernels the runs use
        _INITS[key] = _INITS.get(key, 0) + 1
        st = {"base": base, "settings": settings, "pid": os.getpid(), "signatures": _kernel_signatures()}
        _STATE[key] = st
    return st


def _inputs(model, settings):
    from tensegrity_engine.dynamics.inputs import no_input, paper_sinusoid
    return paper_sinusoid(model) if settings["inputs"] == "paper" else no_input(len(model.actuator_names))


def simulate_one(base, names, values, settings, seed, run):
    """Run one variant -> dict of its summary (raises what the simulation raises)."""
    from tensegrity_engine.dynamics.simulator import Simulator
    model = variant_model(base, names, values)
    sim = Simulator(model, integrator=settings["integrator"], dt=settings["dt"], rtol=settings["rtol"],
                    atol=settings["atol"], damping=settings["damping"])
    sigma = dict(zip(names, values)).get("velocity_sigma", 0.0)
    sim.reset(velocities=initial_velocities(model, float(sigma), seed, run))
    traj = sim.run(settings["duration"], inputs=_inputs(model, settings), rate=settings["rate"])
    out = {"t_final": sim.t, "steps": sim.stats["steps"], "final_positions": traj.nodes[-1],
           "final_velocities": traj.velocities[-1], "min_tension": traj.tensions.min(0),
           "max_tension": traj.tensions.max(0)}
    if "nodes" in settings["outputs"]:
        out["nodes"] = traj.nodes
    return out


def run_batch(key, payload, runs, values, names, seed, faults=None, ledger=None):
    """Simulate runs (indices) with parameter rows ``values`` -> list of (run, status, error, summary) plus
    worker info. ``faults`` (tests): {"exit": runs whose worker calls os._exit, "raise": runs that raise}.
    ``ledger``: a file this process marks with the run in progress (local pool, see sweep_exec)."""
    import os
    import time
    st = _worker_state(key, payload)
    faults = faults or {}
    out = []
    for run, row in zip(runs, values):
        if ledger is not None:
            ledger(run)
        t0 = time.perf_counter()
        try:
            if run in faults.get("exit", ()):
                os._exit(17)
            if run in faults.get("raise", ()):
                raise RuntimeError(f"injected failure in run {run}")
            res, status, err = simulate_one(st["base"], names, row, st["settings"], seed, run), OK, ""
        except Exception as exc:      # noqa: BLE001 - any failure of one run is recorded, the others go on
            res, status, err = None, ERROR, f"{type(exc).__name__}: {exc}"
        out.append((int(run), status, err, res, time.perf_counter() - t0))
    if ledger is not None:
        ledger(-1)
    import socket
    info = {"host": socket.gethostname(), "pid": st["pid"], "inits": _INITS[key],
            "init_signatures": st["signatures"], "signatures": _kernel_signatures()}
    return out, info


# --- the result ----------------------------------------------------------------------------------------
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


def run_sweep(spec: SweepSpec, duration: float, integrator: str = "rk4", dt: float = 1e-3, rtol: float = 1e-6,
              atol: float = 1e-9, damping: bool = True, inputs: str = "none", rate: float = 100.0,
              outputs=("final", "tensions"), scheduler=None, workers: int | None = None, batch: int | None = None,
              progress: bool = True, out=None, _faults=None) -> SweepResult:
    """Run every variant of ``spec`` for ``duration`` [s] and gather the summaries.

    ``integrator`` rk4 (fixed step ``dt`` [s]) or dopri5 (``rtol``/``atol``); ``inputs`` "none" or "paper";
    ``rate`` [Hz] samples for the tension range (and ``outputs`` "nodes"); ``scheduler`` None = local processes
    (``workers``, default all cores), a "tcp://HOST:8786" address, a ``distributed.Client`` or a cluster object
    (LocalCluster); ``batch`` runs per task (default: about 8 tasks per worker, at most 64 runs); ``out`` a
    directory to write ``sweep.npz`` into (also when runs failed). Worker deaths: see ``sweep_exec``."""
    from tensegrity_engine.sweep.execute import execute
    if not isinstance(spec, SweepSpec):
        raise SweepError(f"spec must be a SweepSpec (SweepSpec.build(...)), got {type(spec).__name__}")
    for name, v in (("duration", duration), ("dt", dt), ("rtol", rtol), ("atol", atol), ("rate", rate)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise SweepError(f"{name} must be a positive finite number, got {v!r}")
    if integrator not in ("rk4", "dopri5"):
        raise SweepError(f"integrator must be 'rk4' or 'dopri5', got {integrator!r}")
    if inputs not in ("none", "paper"):
        raise SweepError(f"inputs must be 'none' or 'paper', got {inputs!r}")
    bad = set(outputs) - set(OUTPUTS)
    if bad:
        raise SweepError(f"unknown output(s) {sorted(bad)}: choose from {OUTPUTS}")
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise SweepError(f"workers must be a positive integer, got {workers!r}")
    if batch is not None and (not isinstance(batch, int) or batch < 1):
        raise SweepError(f"batch must be a positive integer, got {batch!r}")
    if out is not None:
        from tensegrity_engine.paths import output_path_problem
        problem = output_path_problem(Path(out))
        if problem:
            raise SweepError(f"out {out}: {problem}")
    settings = {"duration": float(duration), "integrator": integrator, "dt": float(dt), "rtol": float(rtol),
                "atol": float(atol), "damping": bool(damping), "inputs": inputs, "rate": float(rate),
                "outputs": list(outputs)}
    return execute(spec, settings, scheduler, workers, batch, progress, out, _faults)
