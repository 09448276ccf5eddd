"""Bus faults with the driver node (real rclpy, DDS and dynamixel-sdk) on emulated servos: late and short
status packets, CRC bursts, unplug/replug, a silent servo and a wrong model never crash the node (an
exception in a callback would end the test's spin), are ERRORs in diagnostics with the reason, and are
retried by themselves (with backoff, at start-up and while running; a bus lost while running is not
restarted without the operator's deactivate + activate once it is back); torque goes off at
shutdown from every state, as the emulator reports it, or the driver says truthfully that it is unknown."""
import os
import signal
import subprocess
import sys
import time

import pytest

from driver_harness import CONFIG, harness, start_driver_process  # noqa: F401  (fixture)
from emulator_fixtures import emulator  # noqa: F401  (fixture)
from tensegrity_ros_common import diagnostics as diag
from tensegrity_ros_common.domains import claim_domain  # noqa: E402

# fault: (inject, clear or None, words of the ERROR at start-up)
STARTUP = {
    "late": (lambda e: e.delay_next(1), None, "There is no status packet"),
    "short": (lambda e: e.short_next(1), None, "Incorrect status packet"),
    "crc_burst": (lambda e: e.corrupt_next(3), None, "Incorrect status packet"),
    "corrupt_during_activate": (lambda e: e.corrupt_next(1, after=12), None,   # 6 pings + 6 torque reads
                                "activation failed: read 892 on ID 1: [TxRxResult] Incorrect status packet"),
    "silent": (lambda e: e.set_no_reply([6]), lambda e: e.set_no_reply([6], enabled=False),
               "motor m6 (ID 6) does not answer a ping"),
    "wrong_model": (lambda e: e.swap_servo(3, "XM430-W350"), lambda e: e.swap_servo(3, "L54-50-S290-R"),
                    "motor m3 (ID 3) is a XM430-W350 (model number 1020), the configuration says "
                    "L54-50-S290-R (38176): fix 'model' or the ID"),
    "unplugged": (lambda e: e.unplug(), lambda e: e.replug(), "check the adapter is plugged in"),
}

# fault while running: (inject, clear or None, words of the ERROR or None if it is survived without one)
RUNNING = {
    "late": (lambda e: e.delay_next(40), None, None),
    "short": (lambda e: e.short_next(60), None, "bus lost"),          # 6 packets a cycle
    "crc_burst": (lambda e: e.corrupt_next(60), None, "bus lost"),
    "silent": (lambda e: e.set_no_reply([6]), lambda e: e.set_no_reply([6], enabled=False),
               "motor m6 (ID 6) does not answer a ping"),
    "wrong_model": (lambda e: e.swap_servo(3, "XM430-W350"), lambda e: e.swap_servo(3, "L54-50-S290-R"),
                    "motor m3 (ID 3) is a XM430-W350"),
    "unplug_replug": (lambda e: e.unplug(), lambda e: e.replug(), "bus lost"),
}


def _running(h):
    n = len(h.joints)
    h.until(lambda: h.node.driver.state == "active" and len(h.joints) > n + 20, 15, "joint states again")
    assert all(h.torques())


@pytest.mark.parametrize("fault", STARTUP)
def test_fault_at_start_up_is_an_error_and_retried(harness, emulator, fault):  # noqa: F811
    inject, clear, words = STARTUP[fault]
    inject(emulator)
    h = harness()
    h.until(lambda: h.saw(diag.ERROR, words), 10, f"ERROR with {words!r}")
    if clear is not None:
        h.spin(0.5)
        assert h.node.driver.state != "active" and h.saw(diag.ERROR, "start-up retry in")
        clear(emulator)
    _running(h)
    assert h.node.driver.torque is True


@pytest.mark.parametrize("fault", RUNNING)
def test_fault_while_running_is_survived(harness, emulator, fault):  # noqa: F811
    inject, clear, words = RUNNING[fault]
    h = harness()
    h.until(h.ready, 10, "active")
    errors = sum(h.node.driver.stats.errors.values())
    inject(emulator)
    if words is None:
        h.until(lambda: sum(h.node.driver.stats.errors.values()) > errors, 10, "errors counted")
    else:
        h.until(lambda: h.saw(diag.ERROR, words), 10, f"ERROR with {words!r}")
    if clear is not None:
        h.spin(0.3)
        assert h.node.driver.state == "disconnected"
        clear(emulator)
    if words is not None:                   # the bus was lost: back, it waits for the operator (issue 33 #3)
        h.operator_restart()
    _running(h)
    h.diag.clear()
    h.until(lambda: h.saw(diag.OK, "active") or h.saw(diag.WARN, "communication errors"), 5, "healthy again")


def _to_state(h, emulator, state):
    """Bring the driver into ``state``; returns what the torque report must say afterwards."""
    if state == "configured":               # a previous run left the servos on: the driver reads the truth
        for i in emulator.ids:
            emulator.servo(i).torque = True
        h.node.trigger_configure()
        assert h.node.driver.state == "configured" and h.node.driver.torque is True
        return
    h.until(lambda: h.node.driver.state == "active", 10, "active")
    if state == "holding":
        h.set_monitor(True)
        h.until(lambda: h.node.driver.holding, 5, "holding")
    elif state == "fault":
        emulator.set_hardware_error(4, 0x04)
        h.until(lambda: h.node.driver.state == "fault", 5, "fault")
    elif state in ("disconnected", "unplugged"):
        emulator.set_no_reply(None) if state == "disconnected" else emulator.unplug()
        h.until(lambda: h.node.driver.state == "disconnected", 5, "bus lost")
        if state == "disconnected":
            emulator.set_no_reply(None, enabled=False)     # the servos answer again; the retry is 30 s away
    assert any(h.torques()) or state == "fault"


@pytest.mark.parametrize("state", ["configured", "active", "holding", "fault", "disconnected", "unplugged"])
def test_torque_off_at_shutdown_from_every_state(harness, emulator, state):  # noqa: F811
    h = harness("autostart:=false" if state == "configured" else "autostart:=true",
                *(["reconnect_backoff:=[30.0, 60.0]"] if state in ("disconnected", "unplugged") else []))
    _to_state(h, emulator, state)
    h.diag.clear()
    h.node.close()
    h.spin(0.3)
    if state == "unplugged":                # cannot be reached: said so, not "False"
        assert h.node.driver.torque is None and all(h.torques())
        assert "torque state UNKNOWN" in h.node.driver.torque_problem
        assert h.saw(diag.ERROR, "torque state UNKNOWN")
        assert h.values(h.bus_status())["torque"] == "unknown"
        emulator.replug()
        return
    assert not any(h.torques()) and h.node.driver.torque is False
    assert h.values(h.bus_status())["torque"] == "False"


@pytest.mark.parametrize("sig", ["SIGHUP", "SIGTERM"])
def test_a_hang_up_or_terminate_turns_torque_off(emulator, sig):  # noqa: F811
    """Issue 21 #8: SIGHUP (terminal closed, ssh lost) killed the driver without its clean-up, every servo
    torqued. Now it stops as for Ctrl-C: torque off on every servo, exit code 0."""
    p = start_driver_process(emulator, "safety.required:=false")
    try:
        time.sleep(0.2)
    finally:
        p.send_signal(getattr(signal, sig))
        code = p.wait(timeout=20)
        out = p.stdout.read()
    assert code == 0, out
    assert "torque off on every motor" in out, out
    assert not any(emulator.torques().values()), out


@pytest.mark.parametrize("unplugged", [False, True])
def test_sigint_while_the_bus_is_lost(emulator, unplugged):  # noqa: F811
    """The defect: Ctrl-C with the bus lost left every servo's torque on and logged nothing. Now the port is
    reopened and torque_enable = 0 broadcast; unplugged, the log says the torque state is unknown."""
    p = start_driver_process(emulator, "reconnect_backoff:=[30.0, 60.0]")
    try:
        emulator.unplug() if unplugged else emulator.set_no_reply(None)
        time.sleep(1.5)                     # bus lost after 5 failed cycles; the next retry is 30 s away
        if not unplugged:
            emulator.set_no_reply(None, enabled=False)
    finally:
        p.send_signal(signal.SIGINT)
        code = p.wait(timeout=20)
        out = p.stdout.read()
    assert code == (1 if unplugged else 0), out           # issue 21 #6: a script can tell torque stayed on
    assert "bus lost" in out, out
    if unplugged:
        assert "[ERROR]" in out and "torque state UNKNOWN" in out, out
        assert "stopped unsafely" in out, out
        assert all(emulator.torques().values())          # truly still on: nobody could reach them
    else:
        assert "torque off on every motor" in out, out
        assert not any(emulator.torques().values()), out


def test_a_port_that_never_appears_ends_the_driver_with_exit_code_2(tmp_path):
    """Issue 21 #11: port:=/nonexistent retried forever. A missing port is waited for port_wait seconds
    (the adapter plugged in late still works: test_fault_at_start_up_is_an_error_and_retried[unplugged]),
    then the node ends with exit code 2 and one line naming the port."""
    env = dict(os.environ, ROS_DOMAIN_ID=str(claim_domain()))
    missing = tmp_path / "ttyUSB_typo"
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "tensegrity_dynamixel.driver_node", "--ros-args", "--params-file",
                        CONFIG, "-p", f"port:={missing}", "-p", "port_wait:=0.5"],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{missing} does not exist" in r.stderr and "could not start" in r.stderr, r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    assert time.monotonic() - t0 < 30
