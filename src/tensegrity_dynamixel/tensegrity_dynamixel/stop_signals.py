"""Stop signals for the driver run as its own process (``node_main.run``): taken over from rclpy, so the ROS
context stays up until the clean-up has published the final diagnostics (torque off, or unknown with the
bus unplugged). rclpy's handler shuts every context down at once on SIGINT / SIGTERM, before the node's
``close()`` runs: the final report could not be published and the last one seen said torque on.

Here a stop signal only wakes the executor: a thread reads the signal wakeup fd (written by the C-level
handler at once, also while the executor waits) and triggers a guard condition, whose callback (``stop``)
ends the spin (it raises ``node_main.Finished``); ``run()`` then closes the node with the context up and
shuts rclpy down itself."""
from __future__ import annotations

import os
import signal
import threading

import rclpy.signals

from tensegrity_ros_common.node_process import STOP_SIGNALS


def take_over(node, stop) -> None:
    """From now on SIGINT / SIGTERM / SIGHUP call ``stop()`` from ``node``'s executor (a guard condition
    callback) instead of shutting the context down. Only for a node in its own process."""
    guard = node.create_guard_condition(stop)
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    rclpy.signals.uninstall_signal_handlers()
    for sig in STOP_SIGNALS:
        if signal.getsignal(sig) in (signal.SIG_DFL, signal.SIG_IGN, None):
            signal.signal(sig, _noted)            # a Python handler: the wakeup fd is written for it
    signal.set_wakeup_fd(write_fd)
    stops = {int(s) for s in STOP_SIGNALS}

    def watch():
        while True:
            data = os.read(read_fd, 64)
            if not data:
                return
            if stops.intersection(data):
                guard.trigger()

    threading.Thread(target=watch, name="stop-signals", daemon=True).start()


def _noted(signum, frame):
    """The Python-level handler (the work is done by the wakeup fd's reader)."""
