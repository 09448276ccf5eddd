"""One thread of a node's own that parses and handles its large inputs, off the executor's thread.

A node's executor thread runs its safety path (the ``safety_stop`` heartbeat, the control timer); parsing a
large message (a 1000-point trajectory, a model description, node positions at 100 Hz) must not delay it.
rclpy's ``MultiThreadedExecutor`` would run such callbacks side by side, but it spins without waiting
(ros2/rclpy#1223): a controller node on it used a whole core and, on a 2-core machine with the simulator
and the monitor, held its motors for 0.15-0.5 s about once a second for want of CPU. Here the executor stays
single-threaded: a subscription's callback only queues the serialized bytes (``InputThread.queue``), and
this thread takes them in arrival order. Each topic keeps its ``depth`` newest messages (as its QoS
history would), so a flood drops the oldest of that topic only.
"""
from __future__ import annotations

import collections
import threading


class InputThread:
    """A worker thread for queued inputs. ``log(text)`` reports a handler that raised (the thread goes on)."""

    def __init__(self, log, name: str = "node-inputs"):
        self.log = log
        self._wake = threading.Condition()
        self._order = collections.deque()      # (queue, entry) in arrival order; entries a full queue dropped are skipped
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def queue(self, handle, depth: int):
        """A function ``put(item)`` that queues ``item`` for ``handle(item)`` on this thread, keeping the
        ``depth`` newest items not yet handled."""
        items, depth = collections.deque(), max(1, int(depth))

        def put(item):
            with self._wake:
                if self._closed:
                    return
                if len(items) >= depth:
                    items.popleft()            # its place in the arrival order is skipped by _next
                entry = (handle, item)
                items.append(entry)
                self._order.append((items, entry))
                self._wake.notify()
        return put

    def close(self, timeout: float = 1.0):
        """Stop the thread: queued items are dropped; waits up to ``timeout`` [s] for a running handler."""
        with self._wake:
            self._closed = True
            self._order.clear()
            self._wake.notify()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _next(self):
        """(lock held) The next (handle, item) still queued, or None when none is."""
        while self._order:
            items, entry = self._order.popleft()
            if items and items[0] is entry:
                return items.popleft()
        return None

    def _run(self):
        while True:
            with self._wake:
                job = self._next()
                while job is None and not self._closed:
                    self._wake.wait()
                    job = self._next()
                if self._closed:
                    return
            handle, item = job
            try:
                handle(item)
            except Exception as exc:          # noqa: BLE001 - the thread must survive a handler's bug: logged
                self.log(f"handling an input failed unexpectedly: {exc!r}")
