"""Run a node module as a child process that a stop signal ends cleanly at any moment, also while it is
still importing (seconds under load, before its own handlers exist; tensegrity-bringup --processes starts
its nodes this way):

    python -m tensegrity_ros_common.node_process tensegrity_sim.simulator_node --ros-args ...

SIGINT, SIGTERM and SIGHUP raise KeyboardInterrupt until the node's :func:`~.node_main.run` installs its
own handlers; one that lands before that ends the process with exit code 0 (nothing was opened yet)."""
from __future__ import annotations

from . import parent_watch  # noqa: F401,I001 - first: notes the launcher before the slow imports

import runpy
import signal
import sys


# the signals that stop a node (SIGINT first); node_main and tensegrity-bringup use this one list
STOP_SIGNALS = tuple(s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None)


def _interrupt(signum, frame):
    """The first stop signal ends the start-up; later ones (a launcher repeats it to the group) are ignored,
    so none lands while the process is already exiting (it would end it by SIGINT, exit code -2)."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    raise KeyboardInterrupt


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:
        print("usage: python -m tensegrity_ros_common.node_process <node module> [node arguments]", file=sys.stderr)
        return 2
    for sig in STOP_SIGNALS:
        signal.signal(sig, _interrupt)
    module, sys.argv = argv[0], argv
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
