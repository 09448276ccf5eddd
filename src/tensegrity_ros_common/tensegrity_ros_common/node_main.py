"""The entry point every tensegrity node uses: init, spin until Ctrl-C / SIGTERM / shutdown, clean up."""
from __future__ import annotations

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
        if node is not None:
            close = getattr(node, "close", None)
            if close is not None:
                close()
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return 0
