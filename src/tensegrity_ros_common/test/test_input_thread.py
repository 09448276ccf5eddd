"""InputThread: large inputs handled on a thread of the node's own, in arrival order, the newest kept; and a
node spun by node_main's executor with such inputs neither spins the CPU nor delays its timer."""
import threading
import time

import rclpy
from rclpy.node import Node
from std_msgs.msg import String

from tensegrity_ros_common import topics
from tensegrity_ros_common.bounded import bounded_subscription
from tensegrity_ros_common.domains import claim_domain
from tensegrity_ros_common.input_thread import InputThread
from tensegrity_ros_common.node_main import _build_executor


def wait_for(predicate, timeout=5.0):
    end = time.monotonic() + timeout
    while not predicate() and time.monotonic() < end:
        time.sleep(0.005)
    return predicate()


def test_items_are_handled_in_arrival_order_and_a_flood_keeps_the_newest_of_its_topic():
    seen, started, gate = [], threading.Event(), threading.Event()
    thread = InputThread(log=seen.append)
    try:
        block = thread.queue(lambda item: (started.set(), gate.wait(5.0)), depth=1)
        a = thread.queue(lambda item: seen.append(("a", item)), depth=3)
        b = thread.queue(lambda item: seen.append(("b", item)), depth=2)
        block(None)                           # the thread is busy: everything below waits in its queues
        assert started.wait(5.0)
        for k in range(10):
            a(k)
        b("x")
        a(10)
        gate.set()
        assert wait_for(lambda: len(seen) == 4)
        # a keeps its 3 newest (8, 9, 10); b's one message keeps its place between them
        assert seen == [("a", 8), ("a", 9), ("b", "x"), ("a", 10)]
    finally:
        thread.close()


def test_a_handler_that_raises_is_logged_and_the_thread_goes_on():
    logged, seen = [], []
    thread = InputThread(log=logged.append)
    try:
        put = thread.queue(lambda item: seen.append(1 / item), depth=5)
        put(0)
        put(2)
        assert wait_for(lambda: seen == [0.5])
        assert len(logged) == 1 and "ZeroDivisionError" in logged[0]
    finally:
        thread.close()


def test_nothing_is_handled_after_close():
    seen = []
    thread = InputThread(log=seen.append)
    put = thread.queue(seen.append, depth=5)
    thread.close()
    put("late")
    time.sleep(0.1)
    assert seen == []


def test_a_slow_input_does_not_delay_the_timer_and_the_executor_does_not_spin():
    """A node whose bounded subscription's callback takes 0.6 s per message (a large parse), fed at 20 Hz, and a
    50 Hz timer, spun by node_main's executor for 3 s: the timer is never stopped by an input (its longest gap
    < 0.4 s, a loaded CPU's scheduling delays included) and the process uses under 60 % of one core. rclpy's MultiThreadedExecutor, which the
    controllers used before, took 100 % of a core while idle (ros2/rclpy#1223) and ran this timer at a tenth
    of its rate."""
    rclpy.init(domain_id=claim_domain())
    try:
        node, feeder = Node("input_thread_node"), Node("input_thread_feeder")
        thread = InputThread(log=print)
        handled, ticks = [], []

        def slow(msg):
            time.sleep(0.6)
            handled.append(msg.data)

        bounded_subscription(node, String, "big", slow, topics.command_qos(), 1 << 16, print, thread)
        node.create_timer(0.02, lambda: ticks.append(time.monotonic()))
        pub = feeder.create_publisher(String, "big", topics.command_qos())
        feeder.create_timer(0.05, lambda: pub.publish(String(data="x" * 1000)))
        executor = _build_executor(node)
        executor.add_node(feeder)
        cpu0, t0 = time.process_time(), time.monotonic()
        end = t0 + 3.0
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
        cpu = (time.process_time() - cpu0) / (time.monotonic() - t0)
        thread.close()
        executor.shutdown()
        node.destroy_node()
        feeder.destroy_node()
    finally:
        rclpy.shutdown()
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    print(f"timer ticks {len(ticks)}, longest gap {max(gaps):.3f} s, inputs handled {len(handled)}, "
          f"process CPU {100 * cpu:.0f} % of a core")
    assert len(handled) >= 3                  # the slow inputs were handled, ~1.7 per second
    assert max(gaps) < 0.4                    # s: on the executor's thread one input alone would stop it 0.6 s
    assert cpu < 0.6
