"""Harness for tests that run the nodes with real rclpy and DDS (PyPI wheels): import `ros` from here.

Every test gets its own ROS domain id (and context), so concurrent or consecutive tests never see each
other's topics.
"""
import os
import time

import pytest

rclpy = pytest.importorskip("rclpy")
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from tensegrity_ros_common.domains import claim_domain  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
CONFIG = os.path.join(REPO, "config")


def next_domain_id() -> int:
    """A domain id no other process on this host uses (tensegrity_ros_common.domains: file locks)."""
    return claim_domain()


class Ros:
    """A context on a private domain, an executor, and helpers to create nodes and wait for things."""

    def __init__(self):
        self.domain_id = next_domain_id()
        self.context = rclpy.Context()
        rclpy.init(args=[], context=self.context, domain_id=self.domain_id)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.nodes = []

    def add(self, node):
        self.nodes.append(node)
        self.executor.add_node(node)
        return node

    def node(self, cls, *ros_args, **kw):
        args = list(ros_args)
        return self.add(cls(context=self.context, cli_args=["--ros-args", *args] if args else None, **kw))

    def plain(self, name):
        return self.add(rclpy.create_node(name, context=self.context))

    def spin_for(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.01)

    def spin_until(self, predicate, timeout=10.0, what="condition"):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.01)
            if predicate():
                return
        raise AssertionError(f"timed out after {timeout} s waiting for {what}")

    def call(self, node, srv_type, name, request, timeout=5.0):
        cli = node.create_client(srv_type, name)
        self.spin_until(lambda: cli.service_is_ready(), timeout, f"service {name}")
        fut = cli.call_async(request)
        self.spin_until(fut.done, timeout, f"reply of {name}")
        return fut.result()

    def close(self):
        for n in self.nodes:
            n.destroy_node()
        self.executor.shutdown()
        rclpy.shutdown(context=self.context)


@pytest.fixture
def ros():
    r = Ros()
    yield r
    r.close()


@pytest.fixture
def config_dir():
    return CONFIG
