"""Residual evaluations of dynamic identification, many parameter vectors at once: the columns of a
finite-difference Jacobian are independent simulations.

:class:`ResidualPool` evaluates ``residuals(θ)`` for a list of θ serially (``workers=1``), on local worker
processes (``workers=N``; each builds the model and loads the compiled kernels once, forked when this
process has no other thread, else spawned) or on a Dask distributed cluster (``scheduler``: an address
``tcp://HOST:8786``, a ``Client`` or a cluster; the problem is scattered once to every worker). Results are
bit-identical whichever way they are computed (the same simulations in the same order per θ).
"""
from __future__ import annotations

import multiprocessing
import os
import threading
import uuid
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from tensegrity_engine.identify.shooting import residuals_at

_STATE = {}


def _problem_state(payload):
    """(model, plist, windows, dt) of a payload, the model built once per process."""
    key = payload["key"]
    if _STATE.get("key") != key:
        from tensegrity_engine.model.build import build_model
        _STATE.clear()
        _STATE.update(key=key, model=build_model(payload["spec"]), payload=payload)
    return _STATE["model"], payload["plist"], payload["windows"], payload["dt"]


def _local_init(payload):
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    _problem_state(payload)


def _local_eval(theta):
    p = _STATE["payload"]
    return residuals_at(_STATE["model"], p["plist"], p["windows"], p["dt"], theta)


def _local_jac(theta, cols):
    from tensegrity_engine.identify.sensitivity import residual_jacobian
    p = _STATE["payload"]
    return residual_jacobian(_STATE["model"], p["plist"], p["windows"], p["dt"], theta, cols)


def _dask_jac(payload, theta, cols):
    from tensegrity_engine.identify.sensitivity import residual_jacobian
    model, plist, windows, dt = _problem_state(payload)
    return residual_jacobian(model, plist, windows, dt, theta, cols)


def _dask_eval(payload, theta):
    model, plist, windows, dt = _problem_state(payload)
    return residuals_at(model, plist, windows, dt, theta)


class ResidualPool:
    """Evaluates residuals for many θ (module docstring). Use as a context manager or call :meth:`close`."""

    def __init__(self, model, plist, windows, dt, workers: int = 1, scheduler=None):
        self.model, self.plist, self.windows, self.dt = model, plist, windows, dt
        self.workers = max(1, int(workers))
        self._pool = self._client = self._remote = None
        payload = {"key": uuid.uuid4().hex, "spec": model.spec, "plist": plist, "windows": windows, "dt": dt}
        if scheduler is not None:
            from tensegrity_engine.sweep.execute import dask_client
            self._client, self._owned = dask_client(scheduler)
            self._remote = self._client.scatter(payload, broadcast=True)
        elif self.workers > 1:
            method = "fork" if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods() \
                else "spawn"
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context(method),
                                             initializer=_local_init, initargs=(payload,))

    def map(self, thetas) -> list:
        """Residual vectors for every θ in ``thetas``, in order."""
        thetas = [np.asarray(t, float) for t in thetas]
        if self._client is not None:
            futs = self._client.map(_dask_eval, [self._remote] * len(thetas), thetas, pure=False)
            return self._client.gather(futs)
        if self._pool is not None:
            return list(self._pool.map(_local_eval, thetas))
        return [residuals_at(self.model, self.plist, self.windows, self.dt, t) for t in thetas]

    def jacobian(self, theta) -> np.ndarray:
        """d residuals / d θ by forward sensitivities (:mod:`.sensitivity`), the parameters split between the
        workers (each simulates the windows once with its share of the derivatives)."""
        from tensegrity_engine.identify.sensitivity import residual_jacobian
        theta = np.asarray(theta, float)
        n = max(1, self.workers if self._client is None else len(self._client.scheduler_info()["workers"]))
        shares = [c.tolist() for c in np.array_split(np.arange(len(self.plist)), min(n, len(self.plist)))]
        if self._client is not None:
            futs = self._client.map(_dask_jac, [self._remote] * len(shares), [theta] * len(shares), shares,
                                    pure=False)
            return np.hstack(self._client.gather(futs))
        if self._pool is not None:
            return np.hstack(list(self._pool.map(_local_jac, [theta] * len(shares), shares)))
        return residual_jacobian(self.model, self.plist, self.windows, self.dt, theta)

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None
        if self._client is not None and getattr(self, "_owned", False):
            self._client.close()
        self._client = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
