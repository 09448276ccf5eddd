"""The driver's side of the safety chain (ROS-free): a deadline on the collision monitor's ``safety_stop``
heartbeat, and the experiment schedule that pauses while the driver holds.

Protocol: the collision monitor publishes ``safety_stop`` (std_msgs/Bool, reliable, transient local) on
every change and again at a fixed rate as a heartbeat (50 Hz by default). The driver may move (accept
commands, run the experiment, send goals other than holding) only while it holds a *fresh all-clear*: the
last message received was False and was received at most ``timeout`` seconds ago (the driver's own
monotonic clock at receipt). The node checks this every control cycle; without a fresh all-clear it holds
(goals = present positions) in that cycle, and at once when a stop (True) is received. The one stated
bound, from the monitor's death to every servo holding, is :func:`hold_bound` (0.244 s with the defaults).
The age of a message is taken from the middleware's receive time, not from
when the callback runs. The first message after subscribing may be the latched one of a monitor that has
since hung, so an all-clear counts only once a second message (a live heartbeat) has arrived.

One monitor per driver: messages carry their publisher's identity (the DDS writer's GID). While two or more
publishers have been heard within ``SOURCE_WINDOW`` (two robots' monitors on one topic, e.g. neither
namespaced), the driver cannot tell which one watches its robot, so it holds and says so: one monitor's
all-clear never releases another's stop. Each robot belongs in its own namespace.
"""
from __future__ import annotations

import time

SOURCE_WINDOW = 1.0     # s: a safety_stop publisher heard within this long is live (heartbeats come at 50 Hz)
HEARTBEAT_PERIOD = 0.02  # s: the monitor's heartbeat at its default 50 Hz
SERIAL_TIMEOUT = 0.034   # s: the longest a transaction waits for its answer (dynamixel-sdk at 1 Mbaud)
SCHEDULING_MARGIN = 0.03  # s: the driver process woken late on a loaded machine (it runs at nice -10: node_main)


def hold_bound(timeout: float, loop_period: float, heartbeat_period: float = HEARTBEAT_PERIOD) -> float:
    """The bound [s] from the monitor's death (no goodbye) to every servo holding: its last all-clear can be
    one heartbeat period old; the driver's deadline is ``timeout`` after that was received; the deadline is
    checked every control cycle (``loop_period``) and the hold goes out in that cycle's sync write, which can
    wait behind one transaction that times out; plus a margin for a late wake-up under CPU load. With the
    defaults (timeout 0.15 s, 100 Hz loop, 50 Hz heartbeat): 0.244 s."""
    return heartbeat_period + timeout + loop_period + SERIAL_TIMEOUT + SCHEDULING_MARGIN


class SafetyGate:
    """Freshness of the monitor's all-clear. ``required=False`` (a bench without a monitor) makes it always
    clear; the node warns about that."""

    def __init__(self, timeout: float, required: bool = True, clock=time.monotonic):
        """``timeout`` [s]: the longest age of the last all-clear that still allows motion."""
        self.timeout = float(timeout)
        self.required = bool(required)
        self.clock = clock
        self.started = clock()
        self.last = None                 # value of the last safety_stop received (None: nothing yet)
        self.received_at = None          # monotonic time [s] of that receipt
        self.ever_clear = False          # a fresh all-clear was seen at least once
        self.received = 0                # messages received (the first may be latched history)
        self.sources = {}                # publisher identity -> monotonic time [s] it was last heard

    def receive(self, stop: bool, waited: float = 0.0, source=None):
        """A safety_stop message arrived ``waited`` seconds ago [s] (the middleware's receive time: a driver
        process stalled by a loaded CPU takes queued heartbeats late, and they must not look fresh) from
        publisher ``source`` (any hashable identity; None if the middleware gives none)."""
        self.last = bool(stop)
        self.received_at = self.clock() - max(0.0, float(waited))
        self.received += 1
        if source is not None:
            self.sources[source] = self.received_at

    def publishers(self) -> int:
        """How many safety_stop publishers were heard within SOURCE_WINDOW (older ones are forgotten)."""
        now = self.clock()
        self.sources = {k: t for k, t in self.sources.items() if now - t <= SOURCE_WINDOW}
        return len(self.sources)

    def clear(self) -> bool:
        """True while motion is allowed (a fresh all-clear from the one monitor, or ``required`` off)."""
        if not self.required:
            return True
        ok = (self.last is False and self.received >= 2 and self.clock() - self.received_at <= self.timeout
              and self.publishers() <= 1)
        self.ever_clear |= ok
        return ok

    def age(self) -> float:
        """Seconds [s] since the last safety_stop message (since start if none came)."""
        return self.clock() - (self.started if self.received_at is None else self.received_at)

    def reason(self) -> str:
        """Why motion is not allowed ('' when it is)."""
        if self.clear():
            return ""
        if self.publishers() > 1:
            return (f"safety_stop comes from {len(self.sources)} publishers (two robots' collision monitors on one "
                    "topic?): cannot tell which watches this robot; give each robot its own namespace")
        if self.last:
            return "safety stop from the monitor"
        if self.last is None:
            return (f"no all-clear from the collision monitor yet: nothing received in {self.age():.2f} s "
                    f"(timeout {self.timeout:g} s)")
        if self.received < 2 and self.clock() - self.received_at <= self.timeout:
            return "waiting for the collision monitor's heartbeat (one latched all-clear is not enough)"
        return f"no all-clear from the collision monitor for {self.age():.2f} s (timeout {self.timeout:g} s)"


class PausableSchedule:
    """A schedule ``u(t)`` of the monotonic time t [s] (the paper's sinusoids) that can be paused: frozen
    while paused, and after ``resume`` it continues from the last goal it gave before the pause (its clock
    shifted by the length of the pause), so the goals do not jump. That is the last call, not the moment
    the pause was noticed: on a loaded machine a control cycle can come 0.1-0.2 s late, and resuming from
    the schedule at the later moment jumped the goals by that much of the motion (0.29 rad seen)."""

    def __init__(self, schedule, start: float):
        """``schedule(t)`` -> (u [m], du/dt [m/s]); ``start``: monotonic time [s] it began."""
        self.schedule = schedule
        self.start = float(start)
        self.shift = 0.0                 # s: total length of the pauses so far
        self.paused_at = None
        self.last_call = None            # s: monotonic time of the last goal given while running

    @property
    def paused(self) -> bool:
        return self.paused_at is not None

    def pause(self, now: float):
        """Freeze at the last goal given (at ``now`` if none was given yet)."""
        if self.paused_at is None:
            self.paused_at = float(now) if self.last_call is None else min(self.last_call, float(now))

    def resume(self, now: float):
        if self.paused_at is not None:
            self.shift += float(now) - self.paused_at
            self.paused_at = None

    def __call__(self, now: float):
        """Goal displacements u [m] at ``now`` (at the moment of the pause while paused)."""
        if self.paused_at is None:
            self.last_call = float(now)
        t = self.paused_at if self.paused_at is not None else float(now)
        return self.schedule(t - self.shift)[0]
