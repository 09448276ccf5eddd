"""Controller updates off the executor's thread. A gait plan or an exact inverse-statics solve takes up to ~1 s;
run in a timer callback it would keep a single-threaded executor from taking the ``safety_stop`` message.
Here one update runs at a time on a worker thread, and its result is sent only if no safety stop came while
it ran (the stop callback and the send take the same lock, so a result is sent either before the node saw
the stop or never). The engine's numba kernels hold Python's GIL for up to ~0.1 s per call, which delays
the stop callback by as much (docs/controllers.md states the bound)."""
from __future__ import annotations

import threading


class UpdateWorker:
    """One worker thread for ``submit(compute, send)``: ``compute()`` runs on the thread, then ``send(result)``
    under ``lock`` unless ``compute`` returned None, a stop was counted (``count_stop``) since the submit, or
    the worker was closed. ``log``: a callable for errors the node did not catch."""

    def __init__(self, log):
        self.lock = threading.Lock()          # held briefly: the stop count, the node's safety state, the send
        self.stops = 0                        # safety stops seen: an update begun before one is never sent
        self.log = log
        self._wake = threading.Condition()
        self._job = None                      # (compute, send, stop count at submit) waiting or running
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="controller-update", daemon=True)
        self._thread.start()

    def busy(self) -> bool:
        """True while an update is waiting or running."""
        return self._job is not None

    def submit(self, compute, send, unsent=None) -> bool:
        """Start an update; False (nothing started) while the previous one still runs or after close().
        ``unsent(result)`` (under ``lock``) is told of a result that is not sent (a stop came meanwhile)."""
        with self._wake:
            if self._job is not None or self._closed:
                return False
            with self.lock:
                stops = self.stops
            self._job = (compute, send, unsent, stops)
            self._wake.notify()
        return True

    def count_stop(self):
        """A safety stop (call with ``lock`` held): the update running now is not sent."""
        self.stops += 1

    def close(self, timeout: float = 1.0):
        """Stop the thread: nothing is sent from now on; waits up to ``timeout`` [s] for a running update."""
        with self.lock:
            self._closed = True
        with self._wake:
            self._wake.notify()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self):
        while True:
            with self._wake:
                while self._job is None and not self._closed:
                    self._wake.wait()
                if self._closed:
                    return
                compute, send, unsent, stops = self._job
            try:
                self._finish(compute(), send, unsent, stops)
            except Exception as exc:          # noqa: BLE001 - the worker must survive a node bug: logged
                self.log(f"controller update failed unexpectedly: {exc!r}")
            finally:
                with self._wake:
                    self._job = None

    def _finish(self, result, send, unsent, stops: int):
        with self.lock:
            if result is None:
                return
            if stops == self.stops and not self._closed:
                send(result)
            elif unsent is not None:
                unsent(result)
