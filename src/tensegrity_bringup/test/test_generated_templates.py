"""Generated templates (``tensegrity new``) run through the real simulator node and collision monitor node
(real rclpy and DDS): a small shell and a class-2 tower are written by the CLI, loaded by the simulator
from the file (started *from the file's positions*, no settling), and must stay at rest while the monitor
checks them."""
import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseArray
from std_msgs.msg import Float64
from visualization_msgs.msg import MarkerArray

from ros_harness import Ros
from tensegrity_engine.cli import main
from tensegrity_monitor.collision_monitor_node import CollisionMonitor
from tensegrity_ros_common import topics
from tensegrity_ros_common.conversions import pose_array_to_positions
from tensegrity_sim.simulator_node import TensegritySimulator


def _run(path, n_nodes, n_bars):
    """Run simulator + monitor on the model file for ~2 s; returns (first, last positions, got dict)."""
    ros = Ros()
    try:
        ros.node(TensegritySimulator, "-p", f"model:={path}", "-p", "start_from_equilibrium:=false")
        ros.node(CollisionMonitor)
        probe = ros.plain("probe")
        got = {"pos": [], "markers": [], "diag": [], "minc": []}
        probe.create_subscription(PoseArray, topics.NODE_POSITIONS, lambda m: got["pos"].append(m),
                                  topics.sensor_qos())
        probe.create_subscription(MarkerArray, topics.MARKERS, lambda m: got["markers"].append(m), 10)
        probe.create_subscription(Float64, topics.MIN_CLEARANCE, lambda m: got["minc"].append(m.data), 10)
        probe.create_subscription(DiagnosticArray, topics.DIAGNOSTICS,
                                  lambda m: got["diag"].extend(s.name for s in m.status), 10)
        try:
            ros.spin_until(lambda: got["pos"] and got["markers"] and got["minc"]
                           and any(n.endswith("self-collision") for n in got["diag"]), 20, "first messages")
        except AssertionError as e:
            raise AssertionError(f"{e}: got {[(k, len(v)) for k, v in got.items()]}, {set(got['diag'])}") from None
        first = pose_array_to_positions(got["pos"][-1])
        ros.spin_for(2.0)
        last = pose_array_to_positions(got["pos"][-1])
        bars = [m for m in got["markers"][-1].markers if m.ns == "bars"]
        assert first.shape == (n_nodes, 3) and len(bars) == n_bars
        return first, last, got
    finally:
        ros.close()


def test_generated_shell_class2_tower_and_cuboctahedron_run_at_rest_through_simulator_and_monitor(tmp_path):
    shell = tmp_path / "shell.yaml"
    tower = tmp_path / "tower.yaml"
    assert main(["new", "shell", "--n", "3", "--m", "1", "-o", str(shell)]) == 0
    assert main(["new", "tower", "--stages", "3", "--n", "3", "--joints", "class2", "-o", str(tower)]) == 0
    cubo = tmp_path / "cuboctahedron.yaml"
    assert main(["new", "cuboctahedron", "--length", "0.4", "-o", str(cubo)]) == 0
    # physical nodes: shell (3,1) 12; class-2 tower of three 3-prisms: 4 rings of 3 shared nodes;
    # cuboctahedron 24
    for path, n_nodes, n_bars in ((shell, 12, 6), (tower, 12, 9), (cubo, 24, 12)):
        first, last, got = _run(path, n_nodes, n_bars)
        # a prestressed equilibrium with no gravity: nothing moves; 1 mm is the brief's bound, the
        # integrator's drift at rest is many orders below it
        assert np.abs(last - first).max() < 1e-3
        # ~100 Hz for 2 s when idle; an oversubscribed machine delivered 48 once: the stream going on is
        # the behaviour, its rate is the machine's
        assert len(got["pos"]) > 10
        assert all(np.isfinite(got["minc"]))
