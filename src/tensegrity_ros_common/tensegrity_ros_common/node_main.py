"""The entry point every tensegrity node uses: init, spin until Ctrl-C / SIGTERM / shutdown, clean up."""
from __future__ import annotations

import signal
import sys
import time

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor


def run(node_factory, args=None) -> int:
    """Create the node with ``node_factory()`` after ``rclpy.init(args)`` and spin it. Returns an exit code."""
    rclpy.init(args=sys.argv if args is None else args)
    node = None
    try:
        node = node_factory()
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        # A signal shuts the context down asynchronously; a callback or a take running at that instant
        # fails ("context is invalid", pybind conversion errors). If the context goes down within 0.2 s it
        # was that race, a clean shutdown; anything else is a real error.
        for _ in range(20):
            if not rclpy.ok():
                break
            time.sleep(0.01)
        if rclpy.ok():
            raise
    finally:
        # one Ctrl-C is enough: a terminal sends SIGINT to the whole process group and a launcher sends
        # its own, and a second KeyboardInterrupt must not cut the clean-up (torque off) short
        ignore_signals()
        if node is not None:
            close_node(node)
        if rclpy.ok():
            rclpy.shutdown()
    return 0


def ignore_signals():
    """Ignore further SIGINT/SIGTERM (called once shutting down; the clean-up is short and bounded)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)


def close_node(node):
    """Release what the node holds (its ``close()``: torque off, sockets, threads), then destroy it."""
    close = getattr(node, "close", None)
    try:
        if close is not None:
            close()
    finally:
        node.destroy_node()
