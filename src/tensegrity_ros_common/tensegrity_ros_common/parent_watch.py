"""A node stops when the process that started it is gone.

``ros2 launch`` has no SIGTERM handler (ros2/launch#666): a SIGTERM to the launch process alone (a process
manager, ``kill <pid>``, a container runtime) ends it and leaves its nodes running, the Dynamixel driver with
torque on and nobody watching. Every tensegrity node therefore watches its parent process: once it is gone
(the node was re-parented to init or to a subreaper), the node stops exactly as on Ctrl-C, so the driver's
clean-up turns torque off. The same holds for ``ros2 run``, ``tensegrity-bringup --processes`` or a script.

A node whose parent is init from the start (PID 1: a container's launcher, a systemd service) has nothing to
watch. ``TENSEGRITY_EXIT_WITH_PARENT=0`` turns the watch off (e.g. for a node deliberately left running in
the background with ``nohup ... &``)."""
from __future__ import annotations

import os
import threading
import time

WATCH_ENV = "TENSEGRITY_EXIT_WITH_PARENT"
# s between two checks of the parent PID: the delay this adds to the stop, small against the driver's hold
# bound (0.244 s) and costing ~20 system calls per second
PERIOD = 0.05


def process_name(pid: int) -> str:
    """The command name of process ``pid`` ('?' if it cannot be read)."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def watch_parent(on_gone, period: float = PERIOD):
    """Start a daemon thread that calls ``on_gone(pid, name)`` once, when this process's parent (``pid``,
    command ``name``) has exited. Returns the thread, or None if there is nothing to watch (parent is init)
    or the watch is switched off (``TENSEGRITY_EXIT_WITH_PARENT=0``)."""
    if os.environ.get(WATCH_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    parent = os.getppid()
    if parent <= 1:
        return None
    name = process_name(parent)

    def loop():
        while os.getppid() == parent:
            time.sleep(period)
        on_gone(parent, name)

    thread = threading.Thread(target=loop, name="parent-watch", daemon=True)
    thread.start()
    return thread


def gone_message(pid: int, name: str) -> str:
    return (f"the process that started this node ({name}, PID {pid}) is gone: stopping as on Ctrl-C (a launcher "
            f"that dies must not leave the robot running; {WATCH_ENV}=0 turns this off)")
