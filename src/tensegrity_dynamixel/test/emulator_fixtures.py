"""Pytest fixtures around the pty servo emulator. There is no conftest.py (several test directories of
the repository would collide), so import the fixtures explicitly:

    from emulator_fixtures import emulator  # noqa: F401
    from emulator_fixtures import tolerant_sdk_timeout  # noqa: F401   (optional, see below)

``emulator`` yields a started :class:`servo_emulator.ServoEmulator` with the manipulator paper's six
servos (IDs 1-3 L54-50-S290-R, IDs 4-6 M42-10-S260-R; centre position, torque off) behind
``emulator.path`` and stops it afterwards (serving thread joined, pty fds closed, symlink and its temp
directory removed).
"""
import os
import sys

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from servo_emulator import PAPER_SERVOS, ServoEmulator  # noqa: E402

__all__ = ["emulator", "tolerant_sdk_timeout", "TOLERANT_LATENCY_TIMER_MS", "PAPER_SERVOS", "ServoEmulator"]

TOLERANT_LATENCY_TIMER_MS = 100


# Real servos answer in microseconds whatever the host's load; the emulator's serving thread runs at nice -10
# where permitted, so a loaded CPU does not starve it beyond even the tolerant SDK timeout (seen once: a
# read timed out at 202 ms with both cores busy and the thread at normal priority).
EMULATOR_NICE = -10


@pytest.fixture
def emulator():
    emu = ServoEmulator(dict(PAPER_SERVOS), nice=EMULATOR_NICE)
    emu.start()
    try:
        yield emu
    finally:
        emu.stop()


@pytest.fixture
def tolerant_sdk_timeout(monkeypatch):
    """Raise dynamixel_sdk's LATENCY_TIMER from 16 to 100 ms for one test, i.e. its status packet
    timeout (2 x LATENCY_TIMER + 2 ms + transmission time) from ~34 ms to ~202 ms.

    The emulator answers in ~0.1-2 ms (max ~10 ms) on an idle machine, but on an overloaded CPU (e.g.
    8 runnable processes on 2 cores) the serving thread is sometimes not scheduled for 30-50 ms, and
    the SDK then reports COMM_RX_TIMEOUT for a healthy servo (the same happens with the emulator in a
    separate process). Use this fixture in tests that must not see spurious timeouts; leave it out in
    tests that measure timeout behaviour with the SDK's real values. broadcastPing() is not affected
    (its timeout is hard-coded). Yields the LATENCY_TIMER value in ms.
    """
    import dynamixel_sdk.port_handler
    monkeypatch.setattr(dynamixel_sdk.port_handler, "LATENCY_TIMER", TOLERANT_LATENCY_TIMER_MS)
    yield TOLERANT_LATENCY_TIMER_MS
