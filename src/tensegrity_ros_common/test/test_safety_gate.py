"""The safety gate with several safety_stop publishers (ROS-free): a publisher that goes silent while
holding a stop keeps the gate closed until the operator's clear_lost (issue 33 #1)."""
from tensegrity_ros_common.safety_gate import CLEAR_LOST_STOP, SOURCE_WINDOW, SafetyGate, answer_clear_lost


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def beat(gate, clock, stop, source, seconds):
    """``source`` heartbeats ``stop`` at 50 Hz for ``seconds``."""
    for _ in range(int(round(seconds / 0.02))):
        clock.t += 0.02
        gate.receive(stop, source=source)


def test_a_silent_publisher_holding_a_stop_keeps_the_gate_closed_until_the_operator_clears_it():
    clock = FakeClock()
    g = SafetyGate(0.15, clock=clock)
    beat(g, clock, False, b"A", 0.1)
    assert g.clear()
    g.receive(True, source=b"A")                                   # A latches a stop ...
    beat(g, clock, False, b"B", 0.5)                               # ... B heartbeats an all-clear
    assert not g.clear() and "2 publishers" in g.reason()
    beat(g, clock, False, b"B", 3 * SOURCE_WINDOW)                 # A dead (SIGKILL) long past the window
    assert not g.clear()                                           # before: B's all-clear released it here
    assert "lost stop" in g.reason() and CLEAR_LOST_STOP in g.reason() and "Trigger" in g.reason()

    class Response:
        success, message = None, None
    logged = []
    answer_clear_lost(g, Response, logged.append)
    assert Response.success and "cleared 1 lost stop" in Response.message and logged
    assert g.clear()                                               # B's fresh all-clear counts now
    assert g.clear_lost() == (True, "no lost stop to clear")


def test_a_silent_publisher_whose_last_word_was_an_all_clear_is_simply_forgotten():
    clock = FakeClock()
    g = SafetyGate(0.15, clock=clock)
    beat(g, clock, False, b"A", 0.2)
    beat(g, clock, False, b"B", SOURCE_WINDOW + 0.1)               # A silent past the window: forgotten
    assert g.clear() and not g.lost


def test_a_hung_publisher_that_resumes_decides_again_with_its_own_messages():
    """SIGSTOP of the monitor holding the stop, then SIGCONT: its stop stays until it clears it itself."""
    clock = FakeClock()
    g = SafetyGate(0.15, clock=clock)
    beat(g, clock, False, b"A", 0.1)
    g.receive(True, source=b"A")
    beat(g, clock, False, b"B", 2 * SOURCE_WINDOW)                 # A stopped: lost
    assert not g.clear() and g.lost
    g.receive(True, source=b"A")                                   # A resumes, still holding: not lost, but 2
    assert not g.lost and not g.clear() and "2 publishers" in g.reason()
    g.receive(False, source=b"A")                                  # A's operator clears A's stop
    g.receive(False, source=b"B")
    assert not g.clear()                                           # still two publishers: as before
    beat(g, clock, False, b"A", SOURCE_WINDOW + 0.1)               # B gone with an all-clear: forgotten
    assert g.clear()


def test_the_only_monitor_lost_while_holding_a_stop_is_not_released_by_its_restart():
    """A restarted monitor is a new publisher: its all-clear does not release the dead one's stop."""
    clock = FakeClock()
    g = SafetyGate(0.15, clock=clock)
    beat(g, clock, False, b"A", 0.1)
    g.receive(True, source=b"A")
    clock.t += SOURCE_WINDOW + 0.1                                 # A silent (dead)
    beat(g, clock, False, b"A2", 0.5)                              # its restart heartbeats an all-clear
    assert not g.clear() and "lost stop" in g.reason()
    g.clear_lost()
    assert g.clear()
