"""The deadline on the collision monitor's ``safety_stop`` heartbeat (ROS-free), shared by every node that
moves the robot (the Dynamixel driver, the pose controller).

Protocol: the collision monitor publishes ``safety_stop`` (std_msgs/Bool, reliable, transient local) on
every change and again at a fixed rate as a heartbeat (50 Hz by default). A node may move only while it
holds a *fresh all-clear*: the last message received was False and was received at most ``timeout`` seconds
ago (the node's own monotonic clock at receipt, taken from the middleware's receive time: see
:func:`receipt`). The first message after subscribing may be the latched one of a monitor that has since
hung, so an all-clear counts only once a second message (a live heartbeat) has arrived. While two or more
publishers have been heard within ``SOURCE_WINDOW`` (two robots' monitors on one topic), the gate stays
closed: one monitor's all-clear never releases another's stop. A publisher silent for longer than
``SOURCE_WINDOW`` is forgotten, unless its last message was a stop: that *lost stop* (a monitor killed or
hung while holding a stop) keeps the gate closed until an operator releases it with the node's
``~/clear_lost_stop`` service (std_srvs/Trigger: :meth:`SafetyGate.clear_lost`), or the same publisher is
heard again (a hung monitor that resumes: its own messages count again). A dead all-clear is just forgotten.
"""
from __future__ import annotations

import time

from tensegrity_ros_common.publisher_window import PublisherWindow

SOURCE_WINDOW = 1.0     # s: a safety_stop publisher heard within this long is live (heartbeats come at 50 Hz)
HEARTBEAT_PERIOD = 0.02  # s: the monitor's heartbeat at its default 50 Hz
CLEAR_LOST_STOP = "~/clear_lost_stop"   # std_srvs/Trigger on every node that owns a gate: releases lost stops


def receipt(info) -> tuple:
    """(seconds the message waited in this process's queue, publisher identity) from rclpy's MessageInfo: the
    wait from its ``received_timestamp`` [ns, system clock] (0 if the middleware gives none), the identity is
    the DDS writer's GID as bytes (None if none)."""
    received = info.get("received_timestamp") if isinstance(info, dict) else None
    waited = (time.time_ns() - received) * 1e-9 if received else 0.0
    gid = info.get("publisher_gid") if isinstance(info, dict) else None
    data = gid.get("data") if isinstance(gid, dict) else None
    return max(0.0, waited), (bytes(data) if data else None)


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
        self.window = PublisherWindow(SOURCE_WINDOW, clock)   # safety_stop publishers: (time heard, last value)
        self.lost = {}                   # identity -> monotonic time [s] last heard: silent while holding a stop

    def receive(self, stop: bool, waited: float = 0.0, source=None):
        """A safety_stop message arrived ``waited`` seconds ago [s] (the middleware's receive time: a driver
        process stalled by a loaded CPU takes queued heartbeats late, and they must not look fresh) from
        publisher ``source`` (any hashable identity; None if the middleware gives none)."""
        self.last = bool(stop)
        self.received_at = self.clock() - max(0.0, float(waited))
        self.received += 1
        if source is not None:
            self.window.heard(source, self.last, self.received_at)
            self.lost.pop(source, None)          # heard again: its own messages decide

    @property
    def sources(self) -> dict:
        """{publisher identity: (monotonic time [s] last heard, its last value)} of the live publishers."""
        return self.window.sources

    def publishers(self) -> int:
        """How many safety_stop publishers were heard within SOURCE_WINDOW. Older ones are forgotten, those
        whose last message was a stop into ``lost`` (until :meth:`clear_lost`)."""
        for k, (t, stop) in self.window.forget_silent().items():
            if stop:
                self.lost[k] = t
        return len(self.sources)

    def clear_lost(self) -> tuple:
        """Operator action (the ``~/clear_lost_stop`` service): forget the lost stops. (success, message)."""
        self.publishers()
        if not self.lost:
            return True, "no lost stop to clear"
        text = self.lost_text()
        self.lost = {}
        return True, f"cleared {text}"

    def lost_text(self) -> str:
        """The lost stops in words ('' if none)."""
        if not self.lost:
            return ""
        silent = self.clock() - max(self.lost.values())
        return (f"{len(self.lost)} lost stop(s): a safety_stop publisher went silent while holding a stop "
                f"(monitor dead or hung?), the last {silent:.1f} s ago")

    def clear(self) -> bool:
        """True while motion is allowed (a fresh all-clear from the one monitor, or ``required`` off)."""
        if not self.required:
            return True
        ok = (self.last is False and self.received >= 2 and self.clock() - self.received_at <= self.timeout
              and self.publishers() <= 1 and not self.lost)
        self.ever_clear |= ok
        return ok

    def age(self) -> float:
        """Seconds [s] since the last safety_stop message (since start if none came)."""
        return self.clock() - (self.started if self.received_at is None else self.received_at)

    def reason(self) -> str:
        """Why motion is not allowed ('' when it is)."""
        if self.clear():
            return ""
        if self.lost:
            return (f"{self.lost_text()}: holding until an operator has checked the robot and calls this node's "
                    f"{CLEAR_LOST_STOP} (std_srvs/Trigger)")
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


def answer_clear_lost(gate: SafetyGate, response, log):
    """Fill a std_srvs/Trigger ``response`` for the ``~/clear_lost_stop`` service of a node with ``gate``;
    ``log(text)`` records the operator's action."""
    response.success, response.message = gate.clear_lost()
    log(f"{CLEAR_LOST_STOP}: {response.message}")
    return response
