"""The safety-stop latch (no ROS).

Before the first clean assessment the stop is on ("not armed": nothing is known to be safe). A clean
assessment is one with every required node known, no contact and fresh input: a check of nothing (all
nodes unknown) is never clean. The first clean assessment releases the stop. After that a hazard (contact,
unknown nodes beyond their grace time, or stale input when ``stop_on_stale``) sets the stop and it stays set
until :meth:`clear` is called with the hazard gone (or, with ``auto_clear``, until the hazard is gone).
"""
from __future__ import annotations


class SafetyLatch:
    def __init__(self, stop_on_stale: bool = True, auto_clear: bool = False):
        self.stop_on_stale = bool(stop_on_stale)
        self.auto_clear = bool(auto_clear)
        self.armed = False
        self.stop = True
        self.reason = "no node positions received yet"
        self.hazard = ""
        self.incomplete = ""

    def update(self, contact: str = "", stale: str = "", unknown: str = "", incomplete: str = "",
               conflict: str = "") -> bool:
        """Feed the current findings (empty string = none, else a description): ``contact``, ``stale``
        input, ``unknown`` required nodes (past their grace time: a hazard), ``incomplete`` (unknown
        nodes within their grace time: not a hazard, but not clean either) and ``conflict`` (the input
        cannot be trusted to be this robot's, e.g. two models on the description topic: a hazard for as
        long as it lasts). Returns True if stop changed."""
        hazard = conflict or contact or unknown or (stale if self.stop_on_stale else "")
        self.hazard = hazard
        self.incomplete = stale or unknown or incomplete
        before = self.stop
        if not self.armed:
            if not hazard and not self.incomplete:
                self.armed, self.stop, self.reason = True, False, ""
            elif hazard and hazard != stale:
                self.reason = hazard
            elif self.incomplete:
                self.reason = self.incomplete
        elif hazard and not self.stop:
            self.stop, self.reason = True, hazard
        elif self.stop and not hazard and not self.incomplete and self.auto_clear:
            self.stop, self.reason = False, ""
        return self.stop != before

    def clear(self) -> tuple:
        """Operator reset: (success, message)."""
        if not self.stop:
            return True, "safety stop was not set"
        if self.hazard:
            return False, f"cannot clear: {self.hazard}"
        if not self.armed or self.incomplete:
            return False, f"cannot clear: {self.incomplete or self.reason}"
        self.stop, self.reason = False, ""
        return True, "safety stop cleared"
