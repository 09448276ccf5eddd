"""A node stops when the process that started it is gone.

``ros2 launch`` has no SIGTERM handler (ros2/launch#666): a SIGTERM to the launch process alone (a process
manager, ``kill <pid>``, a container runtime) ends it and leaves its nodes running, the Dynamixel driver with
torque on and nobody watching. Every tensegrity node therefore watches its parent process: once it is gone
(the node was re-parented to init or to a subreaper), the node stops exactly as on Ctrl-C, so the driver's
clean-up turns torque off. The same holds for ``ros2 run``, ``tensegrity-bringup --processes`` or a script.

The parent is noted when this module is first imported: each node module imports it before its slow imports
(numpy, rclpy, the engine: seconds on a loaded machine), so a launcher that dies while the node is still
starting is noticed too. A node whose parent is init from the start (a systemd service, a container's
launcher) has nothing to watch, unless its process group's leader (the launcher of a shell job) is gone.
``TENSEGRITY_EXIT_WITH_PARENT=0`` turns the watch off (e.g. for a node deliberately left running in the
background with ``nohup ... &``)."""
from __future__ import annotations

import os
import threading
import time

WATCH_ENV = "TENSEGRITY_EXIT_WITH_PARENT"
# s between two checks of the parent PID: the delay this adds to the stop, small against the driver's hold
# bound (0.244 s) and costing ~20 system calls per second
PERIOD = 0.05
FIRST_PARENT = os.getppid()      # this process's parent when the node module started importing


def process_name(pid: int) -> str:
    """The command name of process ``pid`` ('?' if it cannot be read)."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def watch_parent(on_gone, period: float = PERIOD, parent: int | None = None):
    """Start a daemon thread that calls ``on_gone(pid, name)`` once, when this process's parent (``pid``,
    default: :data:`FIRST_PARENT`, command ``name``) has exited, or when the parent is init and the process
    group's leader (``pid`` then) has exited. Returns the thread, or None if there is nothing to watch or the
    watch is switched off (``TENSEGRITY_EXIT_WITH_PARENT=0``)."""
    if os.environ.get(WATCH_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    parent = FIRST_PARENT if parent is None else parent
    leader = os.getpgrp() if parent <= 1 and os.getpgrp() != os.getpid() else None
    if parent <= 1 and leader is None:
        return None
    watched = parent if leader is None else leader
    name = process_name(watched)

    def present() -> bool:
        return os.getppid() == parent and (leader is None or os.path.exists(f"/proc/{leader}"))

    def loop():
        while present():
            time.sleep(period)
        on_gone(watched, name)

    thread = threading.Thread(target=loop, name="parent-watch", daemon=True)
    thread.start()
    return thread


def gone_message(pid: int, name: str) -> str:
    return (f"the process that started this node ({name}, PID {pid}) is gone: stopping as on Ctrl-C (a launcher "
            f"that dies must not leave the robot running; {WATCH_ENV}=0 turns this off)")
