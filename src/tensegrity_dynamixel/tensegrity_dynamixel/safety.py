"""The driver's side of the safety chain (ROS-free): the deadline on the collision monitor's ``safety_stop``
heartbeat (:class:`~tensegrity_ros_common.safety_gate.SafetyGate`, shared with the pose controller), its
bound for the servos, and the experiment schedule that pauses while the driver holds.

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

# the gate lives in tensegrity_ros_common (the pose controller obeys it too); re-exported for the driver
from tensegrity_ros_common.safety_gate import HEARTBEAT_PERIOD, SOURCE_WINDOW, SafetyGate  # noqa: F401

SERIAL_TIMEOUT = 0.034   # s: the longest a transaction waits for its answer (dynamixel-sdk at 1 Mbaud)
SCHEDULING_MARGIN = 0.03  # s: the driver process woken late on a loaded machine (it runs at nice -10: node_main)


def hold_bound(timeout: float, loop_period: float, heartbeat_period: float = HEARTBEAT_PERIOD) -> float:
    """The bound [s] from the monitor's death (no goodbye) to every servo holding: its last all-clear can be
    one heartbeat period old; the driver's deadline is ``timeout`` after that was received; the deadline is
    checked every control cycle (``loop_period``) and the hold goes out in that cycle's sync write, which can
    wait behind one transaction that times out; plus a margin for a late wake-up under CPU load. With the
    defaults (timeout 0.15 s, 100 Hz loop, 50 Hz heartbeat): 0.244 s."""
    return heartbeat_period + timeout + loop_period + SERIAL_TIMEOUT + SCHEDULING_MARGIN


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
