"""Integration test of launch/simulation.launch.py on a ROS 2 install (launch_testing).

Starts the launch file with rviz:=false experiment:=true, waits for the simulator's node positions and
markers, checks that the collision monitor's safety stop is released, and after shutdown that every
process exited cleanly. Run it with ``colcon test --packages-select tensegrity_bringup`` or
``launch_test src/tensegrity_bringup/test/test_simulation_launch.py``. Without launch_testing and
launch_ros (the PyPI-only setup) plain pytest skips it.

launch_testing runs one launch per file and cannot see the exit code of ``ros2 launch``: the launch files'
failure paths (a node exiting with code 2, a killed monitor on hardware, robot_state_publisher or RViz not
installed) are tested in ``test_launch_failures.py``, which runs them as ``ros2 launch`` does.
"""
import time
import unittest
from pathlib import Path

import pytest

pytest.importorskip("launch_testing")
pytest.importorskip("launch_ros")

import launch_testing  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
import rclpy  # noqa: E402
from geometry_msgs.msg import PoseArray  # noqa: E402
from launch import LaunchDescription  # noqa: E402
from launch.actions import IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy,  # noqa: E402
                       qos_profile_sensor_data)
from std_msgs.msg import Bool  # noqa: E402
from visualization_msgs.msg import MarkerArray  # noqa: E402

# The first start after an install compiles the engine's numba kernels (about a minute); later starts
# load them from the cache in a second or two.
STARTUP_TIMEOUT = 180.0     # s
N_PHYSICAL_NODES = 24       # stacked_manipulator
LAUNCH_FILE = "simulation.launch.py"


def launch_file_path() -> Path:
    """The checkout's launch/simulation.launch.py next to this test, else the installed one."""
    here = Path(__file__).resolve().parents[3] / "launch" / LAUNCH_FILE
    if here.is_file():
        return here
    from ament_index_python.packages import get_package_share_directory
    return Path(get_package_share_directory("tensegrity_bringup")) / "launch" / LAUNCH_FILE


@pytest.mark.launch_test
def generate_test_description():
    simulation = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(launch_file_path())),
        launch_arguments={"rviz": "false", "experiment": "true"}.items())
    return LaunchDescription([simulation, launch_testing.actions.ReadyToTest()]), {}


class TestSimulationRuns(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.node = rclpy.create_node("test_simulation_launch")

    @classmethod
    def tearDownClass(cls):
        cls.node.destroy_node()
        rclpy.shutdown()

    def receive(self, msg_type, topic, qos, enough=lambda msgs: len(msgs) > 0, timeout=STARTUP_TIMEOUT):
        """Messages received on ``topic`` until ``enough(messages)`` or the timeout."""
        messages = []
        sub = self.node.create_subscription(msg_type, topic, messages.append, qos)
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and not enough(messages):
                rclpy.spin_once(self.node, timeout_sec=0.1)
        finally:
            self.node.destroy_subscription(sub)
        return messages

    def test_node_positions_stream(self):
        msgs = self.receive(PoseArray, "node_positions", qos_profile_sensor_data,
                            enough=lambda m: len(m) >= 100)
        self.assertGreaterEqual(len(msgs), 100, "too few node_positions messages from the simulator")
        last = msgs[-1]
        self.assertEqual(len(last.poses), N_PHYSICAL_NODES)
        self.assertEqual(last.header.frame_id, "world")
        # experiment:=true moves the plates: a plate-2 corner (the last node) moves within ~1 s (100 Hz)
        a, b = msgs[0].poses[-1].position, last.poses[-1].position
        moved = max(abs(a.x - b.x), abs(a.y - b.y), abs(a.z - b.z))
        self.assertGreater(moved, 1e-6, "the experiment does not move the plates")

    def test_markers(self):
        msgs = self.receive(MarkerArray, "markers", QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        self.assertTrue(msgs, "no markers from the simulator")
        namespaces = {marker.ns for marker in msgs[-1].markers}
        self.assertTrue({"bars", "strings", "nodes"} <= namespaces, f"marker namespaces: {sorted(namespaces)}")

    def test_safety_stop_released(self):
        # wait until positions flow, so the monitor has seen the model and at least one state
        self.assertTrue(self.receive(PoseArray, "node_positions", qos_profile_sensor_data))
        latched = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        # the first message may be the stop the monitor latches while it loads (its heartbeat starts True):
        # wait for the release, not for the first message (under load that one is still True)
        msgs = self.receive(Bool, "safety_stop", latched, enough=lambda m: any(not x.data for x in m), timeout=30.0)
        self.assertTrue(msgs, "no safety_stop message from the collision monitor")
        self.assertFalse(msgs[-1].data, f"the collision monitor holds a safety stop in the free-running simulation "
                         f"({len(msgs)} messages in 30 s, all True)")


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
