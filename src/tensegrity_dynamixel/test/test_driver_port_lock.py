"""Issue 33 #4: a second driver on the same serial port (two real driver processes on one pty). The defect: it
opened the port, its traffic caused timeouts and corrupt packets in the first, and stopping it (never
configured) broadcast torque off to every servo, faulting the running robot. Now the port is opened
exclusively: the second refuses to start (exit code 2) naming the first, and sends the servos nothing."""
import os
import subprocess
import time

import pytest

from driver_harness import driver_command, start_driver_process, stop_process
from emulator_fixtures import emulator  # noqa: F401  (fixture)


@pytest.mark.parametrize("first_in", ["active", "fault"])
def test_a_second_driver_on_the_same_port_refuses_to_start_and_names_the_first(emulator, first_in):  # noqa: F811
    """``fault``: the first driver's fault, whose torque off the adapter's drop cut short, finished after the
    replug: it still holds the port (it reopened it for that torque off)."""
    first = start_driver_process(emulator, "safety.required:=false", "max_consecutive_errors:=50",
                                 "reconnect_backoff:=[0.1, 0.5]")
    try:
        if first_in == "fault":
            emulator.unplug_after_writes(emulator.servo(1).family.torque_enable.address, 2)
            emulator.set_hardware_error(1, 0x20)
            _wait(lambda: not emulator.plugged, "the drop")
            emulator.replug()
            _wait(lambda: not any(emulator.torques().values()), "torque off on every servo")
            _wait(lambda: _quiet(emulator), "the first driver's torque off finished (no WRITE for 0.5 s)")
        writes = emulator.stats.get("WRITE", 0)
        second = subprocess.Popen(driver_command(emulator, "safety.required:=false"), text=True,
                                  env=dict(os.environ, ROS_DOMAIN_ID=str(first.domain)),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            code = second.wait(timeout=60)
        except subprocess.TimeoutExpired:
            code = None                                          # still running after 60 s
        out = stop_process(second)
        assert code == 2, out
        assert f"is in use by pid {first.pid} (" in out and "could not start" in out, out
        assert emulator.stats.get("WRITE", 0) == writes, out     # not even a torque off from the second
        assert all(emulator.torques().values()) == (first_in == "active")   # the second changed nothing
        assert first.poll() is None
    finally:
        first_out = stop_process(first)
    if first_in == "active":
        for trouble in ("bus lost", "fault", "torque went off"):   # (single timeouts of a starved emulator: not logged)
            assert trouble not in first_out, first_out
    assert not any(emulator.torques().values())                  # the first's own shutdown: torque off


def _quiet(emulator, seconds=0.5) -> bool:
    writes = emulator.stats.get("WRITE", 0)
    time.sleep(seconds)
    return emulator.stats.get("WRITE", 0) == writes


def _wait(pred, what, timeout=15.0):
    end = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.01)
