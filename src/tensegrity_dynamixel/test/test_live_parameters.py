"""Issue 33 #9: a run-time parameter change is applied or refused with a reason, never accepted and ignored.

Every node as the other tests start it (real rclpy and DDS; the driver on emulated servos). Through the
parameter services (as ``ros2 param set`` does) every parameter the node lists is set to another value of
its type; the answer must be a refusal with a reason, or the node's state must show the new value (the
checks in LIVE). Invalid values of the live parameters are refused and change nothing."""
import math
import time

import numpy as np
import pytest
import rclpy
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.srv import DescribeParameters, GetParameters, ListParameters, SetParameters
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter, parameter_value_to_python

from driver_harness import Harness
from emulator_fixtures import emulator  # noqa: F401  (fixture)
from tensegrity_bringup.recorder import McapRecorder
from tensegrity_control.locomotion_node import LocomotionController
from tensegrity_control.pose_node import PoseControllerNode
from tensegrity_mocap.bridge.node import MocapBridge
from tensegrity_monitor.collision_monitor_node import CollisionMonitor
from tensegrity_ros_common.domains import claim_domain
from tensegrity_sim.mode_viewer_node import ModeViewer
from tensegrity_sim.simulator_node import TensegritySimulator


def clock_is(node, value):
    return node.get_clock().ros_time_is_active == value


def sim_schedule(node):
    """The simulator's experiment restarted with its parameters now: its input parameters."""
    node._set_experiment(False)
    node._set_experiment(True)
    return node.sim.inputs.params


def driver_schedule(node):
    """The driver's experiment restarted with its parameters now: its schedule's parameters."""
    node._start_experiment()
    return node.experiment.schedule.params


LIVE = {      # node -> {parameter: state check(node, new value)}
    "tensegrity_simulator": {
        "use_sim_time": clock_is,
        "paused": lambda n, v: n.paused == v,
        "experiment.enabled": lambda n, v: n.actuation.experiment_on == v,
        "experiment.period": lambda n, v: math.isclose(sim_schedule(n).omega, 2 * math.pi / v),
        "experiment.amplitudes": lambda n, v: np.allclose(sim_schedule(n).sin_par[::3, 0], v),
        "experiment.ramp": lambda n, v: sim_schedule(n).ramp == v,
    },
    "mode_viewer": {
        "use_sim_time": clock_is,
        "mode": lambda n, v: n.shape.number == v,
        "amplitude": lambda n, v: n.amplitude == v,
        "period": lambda n, v: n.period == v,
    },
    "dynamixel_driver": {
        "use_sim_time": clock_is,
        "experiment.enabled": lambda n, v: (n.experiment_state != "off") == v,
        "experiment.period": lambda n, v: math.isclose(driver_schedule(n).omega, 2 * math.pi / v),
        "experiment.amplitudes": lambda n, v: np.allclose(driver_schedule(n).sin_par[::3, 0], v),
        "experiment.ramp": lambda n, v: driver_schedule(n).ramp == v,
    },
    "collision_monitor": {"use_sim_time": clock_is},
    "mocap_bridge": {"use_sim_time": clock_is},
    "locomotion_controller": {"use_sim_time": clock_is},
    "pose_controller": {"use_sim_time": clock_is},
    "mcap_recorder": {"use_sim_time": clock_is},          # tensegrity-bringup's: rclpy's parameters only
}

INVALID = {   # node -> values of live parameters the start-up checks refuse
    "tensegrity_simulator": [("experiment.period", 0.0), ("experiment.period", -5.0), ("experiment.ramp", -1.0),
                             ("experiment.amplitudes", [0.01]), ("experiment.amplitudes", [math.nan, 0.01])],
    "mode_viewer": [("mode", 0), ("mode", 10 ** 6), ("amplitude", -0.1), ("period", 0.0)],
    "dynamixel_driver": [("experiment.period", 1e-9), ("experiment.amplitudes", [1.0, 1.0]),
                         ("experiment.ramp", 0.0), ("experiment.period", math.inf)],
}

VALID = {     # node -> values of live parameters the generic values above miss (out of the motors' range)
    "tensegrity_simulator": [("experiment.amplitudes", [0.02, 0.01])],
    "mode_viewer": [("amplitude", 0.05)],
    "dynamixel_driver": [("experiment.amplitudes", [0.02, 0.01])],
}


def other_value(value):
    """A different value of the same parameter type."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return 1.5 * value if value > 0 else 0.5
    if isinstance(value, str):
        return value + "_x"
    value = list(value)
    if value and isinstance(value[0], str) or not value:
        return value + ["x"]
    return [other_value(v) for v in value]


class Client:
    """The parameter services of one node, called as ``ros2 param`` does."""

    def __init__(self, ctx, ex, target):
        self.ex = ex
        self.node = rclpy.create_node("param_client", context=ctx)
        ex.add_node(self.node)
        self.target = target.get_fully_qualified_name()

    def call(self, srv, name, request):
        cli = self.node.create_client(srv, f"{self.target}/{name}")
        self._spin_until(cli.service_is_ready, f"{self.target}/{name}")
        fut = cli.call_async(request)
        self._spin_until(fut.done, f"reply of {name}")
        self.node.destroy_client(cli)
        return fut.result()

    def _spin_until(self, pred, what, timeout=20.0):
        end = time.monotonic() + timeout
        while not pred():
            assert time.monotonic() < end, f"timed out waiting for {what}"
            self.ex.spin_once(timeout_sec=0.01)

    def names(self):
        return list(self.call(ListParameters, "list_parameters", ListParameters.Request()).result.names)

    def get(self, name):
        msg = self.call(GetParameters, "get_parameters", GetParameters.Request(names=[name])).values[0]
        return parameter_value_to_python(msg)

    def descriptions(self, names):
        reply = self.call(DescribeParameters, "describe_parameters", DescribeParameters.Request(names=names))
        return {d.name: d.description for d in reply.descriptors}

    def set(self, name, value):
        msg = ParameterMsg(name=name, value=Parameter(name, value=value).get_parameter_value())
        return self.call(SetParameters, "set_parameters", SetParameters.Request(parameters=[msg])).results[0]


def start(kind, ctx, tmp_path):
    """The node (all but the driver) as the other tests start it."""
    def args(*a):
        return ["--ros-args", *a] if a else None
    return {
        "tensegrity_simulator": lambda: TensegritySimulator(context=ctx, cli_args=args("-p", "diagnostic_rate:=5.0")),
        "mode_viewer": lambda: ModeViewer(context=ctx, cli_args=args("-p", "model:=prism3")),
        "collision_monitor": lambda: CollisionMonitor(context=ctx, cli_args=args("-p", "unknown_timeout:=1.0")),
        "mocap_bridge": lambda: MocapBridge(context=ctx, cli_args=args("-p", "natnet.server:=127.0.0.1",
                                                                       "-p", "natnet.local:=127.0.0.1")),
        "locomotion_controller": lambda: LocomotionController(context=ctx,
                                                              cli_args=args("-p", "diagnostic_rate:=10.0")),
        "pose_controller": lambda: PoseControllerNode(context=ctx, cli_args=args("-p", "diagnostic_rate:=10.0")),
        "mcap_recorder": lambda: McapRecorder(tmp_path / "run.mcap", context=ctx),
    }[kind]()


@pytest.fixture
def ros_node(request):
    """(kind, node, client) for the parametrised node kind; closed after the test."""
    kind = request.param
    if kind == "dynamixel_driver":
        h = Harness(request.getfixturevalue("emulator"), monitor=False)
        h.until(lambda: h.node.driver.state == "active", 20, "driver active")
        node, ctx, ex = h.node, h.ctx, h.ex
    else:
        ctx = rclpy.Context()
        rclpy.init(args=[], context=ctx, domain_id=claim_domain())
        ex = SingleThreadedExecutor(context=ctx)
        node = start(kind, ctx, request.getfixturevalue("tmp_path"))
        ex.add_node(node)
        h = None
    client = Client(ctx, ex, node)
    try:
        yield kind, node, client
    finally:
        if h is not None:
            h.close()
        else:
            close = getattr(node, "close", None)
            if close is not None:
                close()
            node.destroy_node()
            ex.shutdown()
            rclpy.shutdown(context=ctx)


KINDS = list(LIVE)


@pytest.mark.parametrize("ros_node", KINDS, indirect=True)
def test_every_parameter_is_applied_or_refused_with_a_reason(ros_node):
    kind, node, client = ros_node
    live = LIVE[kind]
    names = client.names()
    assert "use_sim_time" in names
    described = client.descriptions(names)        # what `ros2 param describe` shows
    for name in set(names) - {"use_sim_time", "start_type_description_service"}:      # rclpy's own
        assert described[name].endswith("(live: settable at run time)" if name in live else "(fixed at start-up)"), \
            (name, described[name])
    applied, refused = [], []
    for name in names:
        old = client.get(name)
        new = other_value(old)
        res = client.set(name, new)
        if res.successful:
            assert name in live, f"{kind}: '{name}' = {new!r} accepted, but nothing shows it is used"
            assert client.get(name) == new
            assert live[name](node, new), f"{kind}: '{name}' = {new!r} accepted, but the node does not use it"
            applied.append(name)
        else:
            assert res.reason.strip(), f"{kind}: '{name}' refused without a reason"
            assert client.get(name) == old, f"{kind}: '{name}' refused but changed"
            refused.append(name)
    assert "use_sim_time" in applied
    safety = [n for n in names if n.startswith("safety.") or n in ("stale_timeout", "contact_margin",
                                                                  "obstacle_contact_margin", "stop_on_stale",
                                                                  "auto_clear", "heartbeat_rate",
                                                                  "unknown_timeout", "control_rate")]
    assert set(safety) <= set(refused)


@pytest.mark.parametrize("ros_node", list(INVALID), indirect=True)
def test_invalid_values_of_live_parameters_are_refused_valid_ones_used(ros_node):
    kind, node, client = ros_node
    for name, value in INVALID[kind]:
        old = client.get(name)
        res = client.set(name, value)
        assert not res.successful and res.reason.strip(), f"{kind}: '{name}' = {value!r} accepted"
        assert client.get(name) == old
    for name, value in VALID[kind]:
        res = client.set(name, value)
        assert res.successful, res.reason
        assert LIVE[kind][name](node, value)
