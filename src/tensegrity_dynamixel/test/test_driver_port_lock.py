"""Issue 33 #4: a second driver on the same serial port (two real driver processes on one pty). The defect: it
opened the port, its traffic caused timeouts and corrupt packets in the first, and stopping it (never
configured) broadcast torque off to every servo, faulting the running robot. Now the port is opened
exclusively: the second refuses to start (exit code 2) naming the first, and sends the servos nothing."""
import os
import subprocess

from driver_harness import driver_command, start_driver_process, stop_process
from emulator_fixtures import emulator  # noqa: F401  (fixture)


def test_a_second_driver_on_the_same_port_refuses_to_start_and_names_the_first(emulator):  # noqa: F811
    first = start_driver_process(emulator, "safety.required:=false", "max_consecutive_errors:=50")
    try:
        writes = emulator.stats.get("WRITE", 0)
        second = subprocess.Popen(driver_command(emulator, "safety.required:=false"), text=True,
                                  env=dict(os.environ, ROS_DOMAIN_ID=str(first.domain)),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            code = second.wait(timeout=60)
        finally:
            out = stop_process(second)
        assert code == 2, out
        assert f"is in use by pid {first.pid} (" in out and "could not start" in out, out
        assert emulator.stats.get("WRITE", 0) == writes, out     # not even a torque off from the second
        assert all(emulator.torques().values())                  # the first still drives every servo
        assert first.poll() is None
    finally:
        first_out = stop_process(first)
    for trouble in ("bus lost", "fault", "torque went off"):   # (single timeouts of a starved emulator: not logged)
        assert trouble not in first_out, first_out
    assert not any(emulator.torques().values())                  # the first's own shutdown: torque off
