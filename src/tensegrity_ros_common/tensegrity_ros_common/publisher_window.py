"""Which publishers of one topic were heard lately (ROS-free): two robots on one network without namespaces
publish on one topic, and a node that acts on the topic must notice a second writer. Identities are the DDS
writers' GIDs (:func:`tensegrity_ros_common.safety_gate.receipt`); any hashable value works."""
from __future__ import annotations

import time


class PublisherWindow:
    """Publishers heard within ``window`` [s] (monotonic ``clock``), each with the last value it sent."""

    def __init__(self, window: float, clock=time.monotonic):
        self.window = float(window)
        self.clock = clock
        self.sources = {}                # identity -> (monotonic time [s] last heard, its last value)

    def heard(self, source, value=None, at: float | None = None):
        """``source`` sent ``value`` (received at monotonic time ``at`` [s], default now). None (the middleware
        gives no identity) is not counted."""
        if source is not None:
            self.sources[source] = (self.clock() if at is None else float(at), value)

    def forget_silent(self) -> dict:
        """Drop the publishers not heard within the window; returns them {identity: (time [s], last value)}."""
        now = self.clock()
        gone = {k: v for k, v in self.sources.items() if now - v[0] > self.window}
        for k in gone:
            del self.sources[k]
        return gone

    def count(self) -> int:
        """How many publishers were heard within the window."""
        self.forget_silent()
        return len(self.sources)
