"""The mode viewer node with real rclpy and DDS: markers and node positions oscillate along the computed mode
shape, the mode switches at run time through the parameter service, bad values are rejected.

Why proportional to 1e-6 (relative): the node publishes X(t) = X_eq + a sin(2 pi t / T) phi_k evaluated in
float64, and Point / Pose carry float64, so X - X_eq deviates from a multiple of phi_k only by rounding,
about 1e-16 |X| / |X - X_eq| <= 1e-13 for the samples used (at least 5 % of the amplitude). The test's
X_eq and phi_k come from the same deterministic engine calls (settle to 1e-10 N, then the eigenproblem),
and the node's equilibrium is checked against them. Any other mode is mass-orthogonal to phi_k and would
leave a residual of order 1, so 1e-6 separates the right shape from a wrong one by orders of magnitude
on both sides.
"""
import numpy as np
import pytest
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseArray
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from visualization_msgs.msg import MarkerArray

from ros_harness import CONFIG, config_dir, ros  # noqa: F401  (fixtures)
from tensegrity_engine import load_model
from tensegrity_engine.statics.mode_shapes import at_equilibrium, mode_shape
from tensegrity_ros_common import topics
from tensegrity_ros_common.conversions import pose_array_to_positions, stamp_to_seconds
from tensegrity_sim.mode_viewer_node import PARAMETERS, ModeViewer

MODEL = load_model("prism3")
EQ, LIN = at_equilibrium(MODEL)
X_EQ = LIN.positions
AMPLITUDE = 0.1 * 0.3                 # default: 10 % of the 0.3 m bars
PERIOD = 1.0                          # s: the test sees whole periods in about a second


class Listener:
    def __init__(self, ros):
        self.node = ros.plain("mode_listener")
        self.markers, self.poses, self.diag = [], [], []
        self.node.create_subscription(MarkerArray, topics.MARKERS, self.markers.append, topics.state_qos())
        self.node.create_subscription(PoseArray, topics.NODE_POSITIONS, self.poses.append, topics.sensor_qos())
        self.node.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, self.diag.append, 10)

    def marker_nodes(self, after=-np.inf):
        """(stamp [s], node sphere positions (6, 3)) of every MarkerArray stamped after ``after``."""
        out = []
        for msg in self.markers:
            mk = next(m for m in msg.markers if m.ns == "nodes")
            if stamp_to_seconds(mk.header.stamp) > after:
                out.append(np.array([(p.x, p.y, p.z) for p in mk.points]))
        return out

    def pose_nodes(self, after=-np.inf):
        return [pose_array_to_positions(m) for m in self.poses if stamp_to_seconds(m.header.stamp) > after]

    def diag_values(self):
        st = [s for msg in self.diag for s in msg.status if s.name.endswith(": modes")][-1]
        return st, {kv.key: kv.value for kv in st.values}


def coefficients(samples, phi):
    """Excursions s (along phi) of the samples; asserts each sample is X_eq + s phi to 1e-6 relative."""
    phi = phi[:MODEL.n_physical]
    out = []
    for X in samples:
        D = X - X_EQ[:MODEL.n_physical]
        s = float(np.sum(D * phi) / np.sum(phi * phi))
        out.append(s)
        if abs(s) >= 0.05 * AMPLITUDE:
            assert np.linalg.norm(D - s * phi) <= 1e-6 * np.linalg.norm(D), "not along the mode shape"
    return np.array(out)


def assert_oscillates(samples, phi):
    s = coefficients(samples, phi)
    assert len(s) >= 10
    assert np.all(np.abs(s) <= AMPLITUDE * (1 + 1e-9))
    assert s.max() > 0.5 * AMPLITUDE and s.min() < -0.5 * AMPLITUDE      # both ways within a period


def set_parameter(ros, client_node, name, value):
    if isinstance(value, int):
        pv = ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=value)
    else:
        pv = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=float(value))
    req = SetParameters.Request(parameters=[Parameter(name=name, value=pv)])
    return ros.call(client_node, SetParameters, "/mode_viewer/set_parameters", req).results[0]


def now(node):
    return node.get_clock().now().nanoseconds * 1e-9


def test_mode_viewer_animates_switches_and_rejects(ros):
    viewer = ros.node(ModeViewer, "-p", "model:=prism3", "-p", f"period:={PERIOD}", "-p", "rate:=40.0",
                      "-p", "diagnostic_rate:=5.0")
    assert np.allclose(viewer.X_eq, X_EQ, rtol=0, atol=1e-12)
    lis = Listener(ros)
    ros.spin_until(lambda: len(lis.marker_nodes()) >= 2 and lis.poses and lis.diag, 20, "first messages")
    t_start = now(lis.node)
    ros.spin_until(lambda: len(lis.marker_nodes(t_start)) >= 10 and now(lis.node) > t_start + 1.3 * PERIOD,
                   20, "1.3 periods of markers")
    phi1 = mode_shape(LIN, 1).displacement
    assert_oscillates(lis.marker_nodes(t_start), phi1)
    assert_oscillates(lis.pose_nodes(t_start), phi1)
    st, v = lis.diag_values()
    assert v["model"] == "prism3" and v["mode"] == "1" and float(v["frequency_hz"]) == pytest.approx(0.221770, rel=1e-5)
    assert "mode 1 of 9" in st.message and v["rigid_body_modes"] == "6"

    # switch to mode 6 (1.32 Hz, not degenerate) through the parameter service
    assert set_parameter(ros, lis.node, "mode", 6).successful
    t_switch = now(lis.node)
    ros.spin_until(lambda: len(lis.marker_nodes(t_switch)) >= 10 and now(lis.node) > t_switch + 1.3 * PERIOD,
                   20, "markers of mode 6")
    phi6 = mode_shape(LIN, 6).displacement
    assert_oscillates(lis.marker_nodes(t_switch), phi6)
    assert_oscillates(lis.pose_nodes(t_switch), phi6)
    ros.spin_until(lambda: lis.diag_values()[1]["mode"] == "6", 5, "diagnostics of mode 6")
    assert float(lis.diag_values()[1]["frequency_hz"]) == pytest.approx(LIN.frequencies_hz[11], rel=1e-5)

    # bad values are rejected with the reason; the node keeps showing mode 6
    for name, value, reason in (("mode", 99, "elastic mode number 1..9"), ("mode", 0, "1..9"),
                                ("period", -1.0, "'period' must be in (0"), ("rate", 5.0, "start-up only")):
        res = set_parameter(ros, lis.node, name, value)
        assert not res.successful and reason in res.reason, (name, value, res.reason)
    assert not set_parameter(ros, lis.node, "mode", 2.0).successful          # wrong type (rclpy)
    assert viewer.get_parameter("mode").value == 6
    t_bad = now(lis.node)
    ros.spin_until(lambda: len(lis.marker_nodes(t_bad)) >= 10 and now(lis.node) > t_bad + 1.3 * PERIOD,
                   20, "markers after the rejections")
    assert_oscillates(lis.marker_nodes(t_bad), phi6)
    ros.spin_until(lambda: lis.diag_values()[1]["rejected_changes"] == "4", 5, "rejections in the diagnostics")
    assert "start-up only" in lis.diag_values()[1]["last_rejection"]


def test_bad_start_mode_fails_with_the_reason(ros):
    with pytest.raises(ValueError, match=r"mode' must be an elastic mode number 1..9 of model 'prism3', got 10"):
        ros.node(ModeViewer, "-p", "model:=prism3", "-p", "mode:=10")


def test_config_file_sets_declared_parameters_of_their_types():
    data = yaml.safe_load(open(f"{CONFIG}/mode_viewer.yaml"))
    assert list(data) == ["/**/mode_viewer"]
    params = data["/**/mode_viewer"]["ros__parameters"]
    assert set(params) == set(PARAMETERS)
    for name, value in params.items():
        assert type(value) is type(PARAMETERS[name][0]), name


def test_pip_only_bringup_knows_the_mode_viewer(config_dir):
    from pathlib import Path

    from tensegrity_bringup.bringup import NODES, check_parameter_names, declared_parameters, ros_args
    entry = NODES["mode_viewer"]
    assert (Path(config_dir) / entry.config).is_file() and entry.node_name == "mode_viewer"
    assert declared_parameters("mode_viewer")[0] == tuple(PARAMETERS)
    assert ros_args(entry, Path(config_dir), "", ["mode:=2"])[-2:] == ["-p", "mode:=2"]
    with pytest.raises(SystemExit, match="did you mean 'mode'"):
        check_parameter_names({"mode_viewer": ["mdoe:=2"]})
