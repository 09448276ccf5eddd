"""Running a sweep (:func:`run_sweep`): batches of runs on local worker processes or on a Dask distributed cluster.

    spec = SweepSpec.build("prism3", grid={"stiffness": np.linspace(0.8, 1.2, 11)},
                           random={"rest_offset.side": ("uniform", -0.01, 0.01)}, draws=100, seed=0)
    res = run_sweep(spec, duration=5.0)                        # all local cores (processes)
    res = run_sweep(spec, duration=5.0, scheduler="tcp://host:8786")   # a Dask cluster (or a Client/LocalCluster)
    res.save("runs/sweep")                                     # sweep.npz and sweep.parquet (pyarrow; npz only without it)

The summaries of the runs (:mod:`.runs`) are gathered into one :class:`~.result.SweepResult` with the
parameters of each run.

Local (``scheduler=None``): a ``ProcessPoolExecutor`` whose initializer builds the model and loads the
compiled kernels once per worker process (the numba cache is filled first, in a child, if it is cold). Workers are forked when this process has no
other thread (they start in a fraction of a second), else spawned (about 2 s: imports). Each
worker marks the run it is simulating in a small ledger file; if a worker process dies (segfault, OOM kill,
``os._exit``), the pool breaks, and the run that was in progress in the dead worker is recorded as failed
("worker died", **not retried**), while every unfinished run of the other workers (which the pool terminates)
is re-run in a fresh pool. Results of finished batches are kept.

Dask (``scheduler`` = address, Client or cluster): a worker plugin (``Client.register_plugin``) builds the
model and loads the kernels once per worker, also on workers that join or restart later; tasks carry the
model too and build it lazily if the plugin has not run. A batch whose worker dies is **retried by Dask** up
to ``distributed.scheduler.allowed-failures`` times (default 3); when it still fails (``KilledWorker``) it is
split into single runs. A single run that fails that way may only have been queued beside the culprit, so
such runs are retried at the end one at a time with nothing else running: one that still kills its worker
is recorded as failed ("worker died"), the others are kept.
"""
from __future__ import annotations

import itertools
import math
import os
import signal
import struct
import tempfile
import threading
import uuid
from pathlib import Path

import numpy as np

from tensegrity_engine.paths import output_path_problem
from tensegrity_engine.sweep.result import DIED, ERROR, NOT_RUN, OUTPUTS, SweepResult
from tensegrity_engine.sweep.runs import drop_worker_state, run_batch, worker_state
from tensegrity_engine.sweep.spec import SweepSpec
from tensegrity_engine.sweep.variants import SweepError

try:                                  # optional: only Dask sweeps need it
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError:                   # pragma: no cover
    WorkerPlugin = object

_LOCK = threading.Lock()
_LEDGER = {"fd": None}


def _batches(runs, size):
    runs = np.asarray(sorted(runs), dtype=np.int64)
    return [runs[i:i + size] for i in range(0, len(runs), size)]


def _batch_size(n_runs, n_workers, batch):
    return batch or max(1, min(64, math.ceil(n_runs / (8 * max(1, n_workers)))))


def run_sweep(spec: SweepSpec, duration: float, integrator: str = "rk4", dt: float = 1e-3, rtol: float = 1e-6,
              atol: float = 1e-9, damping: bool = True, inputs: str = "none", rate: float = 100.0,
              outputs=("final", "tensions"), scheduler=None, workers: int | None = None, batch: int | None = None,
              progress: bool = True, out=None, _faults=None) -> SweepResult:
    """Run every variant of ``spec`` for ``duration`` [s] and gather the summaries.

    ``integrator`` rk4 (fixed step ``dt`` [s]) or dopri5 (``rtol``/``atol``); ``inputs`` "none" or "paper";
    ``rate`` [Hz] samples for the tension range (and ``outputs`` "nodes"); ``scheduler`` None = local processes
    (``workers``, default all cores), a "tcp://HOST:8786" address, a ``distributed.Client`` or a cluster object
    (LocalCluster); ``batch`` runs per task (default: about 8 tasks per worker, at most 64 runs); ``out`` a
    directory to write ``sweep.npz`` into (also when runs failed). Worker deaths: see the module docstring."""
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
        problem = output_path_problem(Path(out))
        if problem:
            raise SweepError(f"out {out}: {problem}")
    settings = {"duration": float(duration), "integrator": integrator, "dt": float(dt), "rtol": float(rtol),
                "atol": float(atol), "damping": bool(damping), "inputs": inputs, "rate": float(rate),
                "outputs": list(outputs)}
    return execute(spec, settings, scheduler, workers, batch, progress, out, _faults)


def execute(spec, settings, scheduler, workers, batch, progress, out, faults) -> SweepResult:
    """Run all of ``spec`` (see :func:`run_sweep`); writes ``out``/sweep.npz even if runs failed or on Ctrl-C
    (unfinished runs then have status 'not run')."""
    from tqdm import tqdm

    from tensegrity_engine.model.build import build_model
    base = build_model(spec.model_spec)
    result = SweepResult.empty(spec, base, settings)
    key = uuid.uuid4().hex
    payload = (spec.model_spec, settings)
    bar = _Bar(lambda: tqdm(total=spec.n_runs, unit="run", desc=f"sweep {base.name}", disable=not progress,
                            leave=True))
    try:
        if scheduler is None:
            _local(spec, key, payload, result, workers or os.cpu_count() or 1, batch, bar, faults)
        else:
            _dask(spec, key, payload, result, scheduler, batch, bar, faults)
    finally:
        bar.close()
        result.error[result.status == NOT_RUN] = "not run (the sweep was interrupted)"
        result.workers.sort(key=lambda w: (w.get("host", ""), w["pid"]))
        if out is not None:
            result.save(out)
    return result


class _Bar:
    """A tqdm bar made on first use (tqdm starts a monitor thread; local workers are forked before it)."""

    def __init__(self, make):
        self.make, self.bar = make, None

    def update(self, n):
        if self.bar is None:
            self.bar = self.make()
        self.bar.update(n)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _record_batch(result, rows, info, bar):
    for run, status, err, res, wall in rows:
        result.record(run, status, err, res, wall, info["pid"])
    if info["pid"] >= 0:                      # per worker process: tasks, runs, kernel signatures
        who = (info.get("host"), info["pid"])
        known = next((w for w in result.workers if (w.get("host"), w["pid"]) == who), None)
        if known is None:
            result.workers.append(dict(info, tasks=1, runs=len(rows)))
        else:
            known.update(info, tasks=known["tasks"] + 1, runs=known["runs"] + len(rows))
    bar.update(len(rows))


# --- local processes -----------------------------------------------------------------------------------
def _ensure_cache():
    """Fill numba's cache once (in a child process) so the workers load the kernels instead of compiling."""
    from tensegrity_engine.warmup import compile_in_child, kernels_cached
    if kernels_cached(("dynamics",)) is False:
        compile_in_child(("dynamics",), lambda line: None)


def _mark(run):
    os.pwrite(_LEDGER["fd"], struct.pack("<qq", int(run), 0), 0)


def _on_term(signum, frame):          # the pool terminates the healthy workers after another one died
    os.pwrite(_LEDGER["fd"], struct.pack("<q", 1), 8)
    os._exit(128 + signum)


def _local_init(key, payload, ledger_dir):
    _LEDGER["fd"] = os.open(os.path.join(ledger_dir, str(os.getpid())), os.O_RDWR | os.O_CREAT, 0o600)
    _mark(-1)
    signal.signal(signal.SIGTERM, _on_term)
    try:
        worker_state(key, payload)
    except Exception:                 # noqa: BLE001 - reported by the first task (run_batch builds it again)
        pass


def _local_batch(key, payload, runs, values, names, seed, faults):
    return run_batch(key, payload, runs, values, names, seed, faults, ledger=_mark)


def _read_ledgers(ledger_dir):
    """{pid: (run in progress or -1, terminated by the pool)} and remove the files."""
    out = {}
    for p in Path(ledger_dir).iterdir():
        data = p.read_bytes()
        if len(data) >= 16:
            run, term = struct.unpack("<qq", data[:16])
            out[int(p.name)] = (run, bool(term))
        p.unlink()
    return out


def _collect(futs, result, pending, bar) -> bool:
    """Record the batches as they finish; True if the pool broke (a worker process died)."""
    from concurrent.futures import as_completed
    from concurrent.futures.process import BrokenProcessPool
    broken = False
    for f in as_completed(futs):
        try:
            rows, info = f.result()
        except BrokenProcessPool:
            broken = True
            continue
        except Exception as exc:  # noqa: BLE001 - e.g. the model could not be built in the worker
            rows = [(int(r), ERROR, f"{type(exc).__name__}: {exc}", None, np.nan) for r in futs[f]]
            info = {"pid": -1}
        _record_batch(result, rows, info, bar)
        pending.difference_update(r[0] for r in rows)
    return broken


def _local(spec, key, payload, result, workers, batch, bar, faults):
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    _ensure_cache()
    pending = set(range(spec.n_runs))
    unexplained = 0
    with tempfile.TemporaryDirectory(prefix="tensegrity-sweep-") as ledger_dir:
        while pending:
            n = min(workers, len(pending))
            size = _batch_size(len(pending), n, batch)
            method = "fork" if "fork" in mp.get_all_start_methods() and threading.active_count() == 1 else "spawn"
            result.settings["start_method"] = method
            with ProcessPoolExecutor(n, mp_context=mp.get_context(method), initializer=_local_init,
                                     initargs=(key, payload, ledger_dir)) as ex:
                futs = {ex.submit(_local_batch, key, payload, b, spec.values[b], spec.names, spec.seed, faults): b
                        for b in _batches(pending, size)}
                bar.update(0)                  # (the workers exist now)
                try:
                    broken = _collect(futs, result, pending, bar)
                except BaseException:          # Ctrl-C: do not start the queued batches
                    ex.shutdown(wait=False, cancel_futures=True)
                    raise
            if not broken:
                break
            culprits = {run: pid for pid, (run, term) in _read_ledgers(ledger_dir).items()
                        if run >= 0 and not term and run in pending}
            for run, pid in culprits.items():
                result.record(run, DIED, f"worker process {pid} died while simulating this run (not retried)",
                              None, np.nan, pid)
                pending.discard(run)
                bar.update(1)
            unexplained = 0 if culprits else unexplained + 1
            if unexplained >= 2:
                for run in pending:
                    result.record(run, DIED, "worker processes died twice outside any run (see the log)",
                                  None, np.nan, -1)
                bar.update(len(pending))
                break


# --- Dask ----------------------------------------------------------------------------------------------
class SweepWorkerInit(WorkerPlugin):
    """Dask worker plugin: build the sweep's model and load its kernels once per worker process."""

    def __init__(self, key, payload):
        self.key, self.payload = key, payload

    def setup(self, worker):
        _dask_state(self.key, self.payload)

    def teardown(self, worker):
        drop_worker_state(self.key)


def _dask_state(key, payload):
    with _LOCK:
        return worker_state(key, payload)


def _dask_batch(key, payload, runs, values, names, seed, faults):
    _dask_state(key, payload)
    return run_batch(key, payload, runs, values, names, seed, faults)


def dask_client(scheduler):
    """(a ``distributed.Client`` for ``scheduler``: an address, a Client or a cluster; True if made here, so the
    caller closes it). Raises SweepError if dask.distributed is missing or the scheduler cannot be reached."""
    try:
        from distributed import Client
    except ImportError:
        raise SweepError("a Dask scheduler was given but dask.distributed is not installed: "
                         "pip install 'dask[distributed]'") from None
    if isinstance(scheduler, Client):
        return scheduler, False
    target = scheduler if isinstance(scheduler, str) else getattr(scheduler, "scheduler_address", None)
    if target is None:
        raise SweepError(f"scheduler must be an address 'tcp://HOST:8786', a distributed.Client or a cluster, "
                         f"got {type(scheduler).__name__}")
    import dask
    try:        # waits up to distributed.comm.timeouts.connect (dask config, default 30 s)
        return Client(scheduler, timeout=dask.config.get("distributed.comm.timeouts.connect")), True
    except (OSError, TimeoutError, ValueError) as exc:
        raise SweepError(f"cannot reach the Dask scheduler at {target}: {exc} (is 'dask scheduler' running "
                         "there and the port open?)") from None


def _dask_result(f, b, killed):
    """(rows, info) of a finished batch future, None if its worker died (KilledWorker)."""
    try:
        return f.result()
    except killed:
        return None
    except Exception as exc:          # noqa: BLE001 - the batch itself failed (rows: every run, the error)
        return [(int(r), ERROR, f"{type(exc).__name__}: {exc}", None, np.nan) for r in b], {"pid": -1}
    finally:
        f.release()


def _dask(spec, key, payload, result, scheduler, batch, bar, faults):
    from distributed import as_completed
    from distributed.scheduler import KilledWorker
    client, own = dask_client(scheduler)
    name = f"tensegrity-sweep-{key}"
    try:
        n_workers = max(1, sum(client.nthreads().values()))
        client.register_plugin(SweepWorkerInit(key, payload), name=name)
        size = _batch_size(spec.n_runs, n_workers, batch)

        count = itertools.count()

        def submit(b):              # a fresh key per submission (a retried run must not meet its erred task)
            f = client.submit(_dask_batch, key, payload, b, spec.values[b], spec.names, spec.seed, faults,
                              pure=False, key=f"sweep-{key}-{b[0]}-{len(b)}-{next(count)}")
            runs_of[f.key] = b
            return f
        runs_of = {}
        suspects = []
        ac = as_completed([submit(b) for b in _batches(range(spec.n_runs), size)])
        for f in ac:
            b = runs_of.pop(f.key)
            rows = _dask_result(f, b, KilledWorker)
            if rows is None and len(b) > 1:          # split the batch: single runs
                for i in range(len(b)):
                    ac.add(submit(b[i:i + 1]))
            elif rows is None:                       # maybe only beside the culprit: run it alone at the end
                suspects.append(b)
            else:
                _record_batch(result, *rows, bar)
        for b in suspects:                           # one at a time, nothing else running: a death is its own
            f = submit(b)
            runs_of.pop(f.key)
            rows = _dask_result(f, b, KilledWorker) or (
                [(int(b[0]), DIED, "the worker died while simulating this run alone (Dask retried it up to "
                  "distributed.scheduler.allowed-failures times)", None, np.nan)], {"pid": -1})
            _record_batch(result, *rows, bar)
    finally:
        try:
            client.unregister_worker_plugin(name)
        except Exception:             # noqa: BLE001 - best effort (the cluster may be gone)
            pass
        if own:
            client.close()
