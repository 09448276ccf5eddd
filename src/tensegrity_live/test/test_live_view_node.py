"""Smoke test of the live view with real rclpy and a real WebSocket client: a tiny publisher node stands in for
the simulator (model description + node positions); the client gets serverInfo and the advertised channels,
decodes one robot scene (bar ends = the published node positions), and steers: its cmd_vel and a goal_pose
in the apps' 3D-panel form (ROS 1 schema name, sec/nsec stamp) arrive on ROS,
its malformed message is rejected and counted."""
import asyncio
import json
import struct
import threading

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")
websockets = pytest.importorskip("websockets")
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import PoseArray, PoseStamped, Twist  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from std_msgs.msg import Header, String  # noqa: E402

from tensegrity_engine import load_model  # noqa: E402
from tensegrity_live.live_view_node import LiveView  # noqa: E402
from tensegrity_ros_common import topics  # noqa: E402
from tensegrity_ros_common.conversions import positions_to_pose_array  # noqa: E402
from tensegrity_ros_common.description import describe  # noqa: E402
from tensegrity_ros_common.domains import claim_domain  # noqa: E402

from foxglove_decoding import channel_parser  # noqa: E402

SUBPROTOCOL = "foxglove.sdk.v1"
TIMEOUT = 20.0        # s: generous for a loaded 2-core machine; the exchange itself takes well under 1 s


def bar_ends(c):
    p, o = c.pose.position, c.pose.orientation
    u, w, mid = np.array([o.x, o.y, o.z]), o.w, np.array([p.x, p.y, p.z])
    v = np.array([0.0, 0.0, 0.5 * c.size.z])
    half = v + 2.0 * np.cross(u, np.cross(u, v) + w * v)
    return mid - half, mid + half


@pytest.fixture
def live():
    """(live view node, publisher node, context) on a private ROS domain, spun on a thread."""
    context = rclpy.Context()
    rclpy.init(args=[], context=context, domain_id=claim_domain())
    model = load_model("prism3")
    X = model.positions[:model.n_physical] + 0.001 * np.arange(3 * model.n_physical).reshape(-1, 3)
    sim = rclpy.create_node("fake_simulator", context=context)
    sim.create_publisher(String, topics.MODEL_DESCRIPTION, topics.latched_qos()).publish(String(data=describe(model)))
    pub = sim.create_publisher(PoseArray, topics.NODE_POSITIONS, topics.sensor_qos())
    sim.positions = X                          # what the fake simulator publishes (a test may change it)
    sim.create_timer(0.02, lambda: sim.positions is not None and pub.publish(      # None: the source died
        positions_to_pose_array(sim.positions, Header(frame_id="world"))))
    sim.twists, sim.diagnostics = [], []
    sim.create_subscription(Twist, "cmd_vel", sim.twists.append, topics.command_qos())
    sim.goals = []
    sim.create_subscription(PoseStamped, "goal_pose", sim.goals.append, topics.command_qos())
    sim.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, sim.diagnostics.append, topics.state_qos())
    sim.description = sim.create_publisher(String, topics.MODEL_DESCRIPTION, topics.latched_qos())
    view = LiveView(context=context, cli_args=["--ros-args", "-p", "port:=0", "-p", "rate_hz:=20.0",
                                              "-p", "diagnostic_rate:=10.0", "-p", "stale_after:=0.3"])
    executor = SingleThreadedExecutor(context=context)
    for n in (sim, view):
        executor.add_node(n)
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.02)
    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        yield view, sim, X
    finally:
        stop.set()
        thread.join(5.0)
        view.close()
        for n in (sim, view):
            n.destroy_node()
        executor.shutdown()
        rclpy.shutdown(context=context)


def _named(channel) -> list:
    """The property names of a JSON channel's advertised schema ([] before the model re-advertised it)."""
    return list(json.loads(channel["schema"]).get("properties", {})) if channel else []


async def _session(port: int):
    """serverInfo, the channels, one decoded robot scene; then a good and a bad client publish."""
    async with websockets.connect(f"ws://127.0.0.1:{port}", subprotocols=[SUBPROTOCOL], max_size=None) as ws:
        info = json.loads(await ws.recv())
        channels = {}
        while "/scene/robot" not in channels or "/tf" not in channels or not _named(channels.get("/tensions")):
            msg = json.loads(await ws.recv())
            if msg["op"] == "advertise":
                channels.update({c["topic"]: c for c in msg["channels"]})
        robot = channels["/scene/robot"]
        await ws.send(json.dumps({"op": "subscribe", "subscriptions": [{"id": 1, "channelId": robot["id"]}]}))
        scene = None
        while scene is None:
            data = await ws.recv()
            if isinstance(data, bytes) and data[0] == 1 and struct.unpack("<I", data[1:5])[0] == 1:
                scene = channel_parser(robot)(data[13:])            # opcode, subscription id, log time (8 bytes)
        await ws.send(json.dumps({"op": "advertise", "channels": [
            {"id": 5, "topic": "/cmd_vel", "encoding": "json", "schemaName": "geometry_msgs/msg/Twist"}]}))
        await ws.send(b"\x01" + struct.pack("<I", 5) + b'{"linear": {"x": 0.25}, "angular": {"z": 0.5}}')
        await ws.send(b"\x01" + struct.pack("<I", 5) + b'{"linear": {"x": NaN}}')
        await ws.send(json.dumps({"op": "advertise", "channels": [         # as the apps' 3D panel sends it
            {"id": 6, "topic": "/goal_pose", "encoding": "json", "schemaName": "geometry_msgs/PoseStamped"}]}))
        await ws.send(b"\x01" + struct.pack("<I", 6) + json.dumps(
            {"header": {"stamp": {"sec": 1, "nsec": 5}, "frame_id": "world"},
             "pose": {"position": {"x": 2.4, "y": 0.9, "z": 0.0},
                      "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}}}).encode())
        await asyncio.sleep(0.5)
        return info, channels, scene


def test_a_client_sees_the_robot_and_steers_it(live):
    view, sim, X = live
    assert view.port > 0
    info, channels, scene = asyncio.run(asyncio.wait_for(_session(view.port), TIMEOUT))
    assert info["op"] == "serverInfo" and "clientPublish" in info["capabilities"]
    assert {"/scene/robot", "/scene/world", "/tf", "/tensions", "/safety"} <= set(channels)
    (entity,) = scene.entities
    model = view.model
    assert _named(channels["/tensions"]) == list(model.string_names)     # the apps' plot paths /tensions.<name>
    assert _named(channels["/inputs"]) == list(model.actuator_names)
    assert entity.id == "robot" and len(entity.cylinders) == len(model.bar_names)
    Xall = model.from_physical(X)
    for c, (i, j) in zip(entity.cylinders, model.bars):
        a, b = bar_ends(c)
        assert np.allclose(a, Xall[i], atol=1e-9) and np.allclose(b, Xall[j], atol=1e-9)
    for _ in range(200):                       # the command goes out at the next tick (20 Hz)
        if sim.twists:
            break
        threading.Event().wait(0.05)
    assert sim.twists, "the client's cmd_vel never reached ROS"
    assert sim.twists[-1].linear.x == 0.25 and sim.twists[-1].angular.z == 0.5
    wait_for(lambda: sim.goals, "the client's goal_pose on ROS")
    goal = sim.goals[-1]
    assert (goal.pose.position.x, goal.pose.position.y, goal.header.frame_id) == (2.4, 0.9, "world")
    assert view.counts["rejected"] == 1 and "not JSON" in view.last_rejection


async def _watch(port: int, done: threading.Event):
    """A client subscribed to the robot scene until ``done`` (the view parses streams only for a client)."""
    async with websockets.connect(f"ws://127.0.0.1:{port}", subprotocols=[SUBPROTOCOL], max_size=None) as ws:
        await ws.recv()
        robot = None
        while robot is None:
            msg = json.loads(await ws.recv())
            robot = next((c for c in msg.get("channels", []) if c["topic"] == "/scene/robot"), None)
        await ws.send(json.dumps({"op": "subscribe", "subscriptions": [{"id": 1, "channelId": robot["id"]}]}))
        while not done.is_set():
            try:
                await asyncio.wait_for(ws.recv(), 0.1)
            except asyncio.TimeoutError:
                pass


def wait_for(predicate, what: str, timeout: float = TIMEOUT):
    end = threading.Event()
    for _ in range(int(timeout / 0.05)):
        if predicate():
            return
        end.wait(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_bad_input_is_rejected_and_the_last_good_state_stays(live):
    """A description that is not JSON, node positions of the wrong count and NaN rows: counted, reported, the
    node keeps serving its last good state."""
    view, sim, X = live
    done = threading.Event()
    client = threading.Thread(target=lambda: asyncio.run(_watch(view.port, done)), daemon=True)
    client.start()
    wait_for(lambda: view.X is not None, "the first state")
    good_model = view.model
    sim.description.publish(String(data="{not json"))
    wait_for(lambda: "model_description" in view.last_rejection, "the bad description's rejection")
    assert view.model is good_model
    sim.positions = X[:-1]
    wait_for(lambda: "node_positions" in view.last_rejection, "the short node_positions' rejection")
    assert np.array_equal(view.X, X)
    occluded = X.copy()
    occluded[0] = np.nan
    sim.positions = occluded
    wait_for(lambda: np.isnan(view.X[0]).all(), "the positions with an unknown node")
    wait_for(lambda: any(kv.key == "port" and kv.value == str(view.port) for a in sim.diagnostics
                         for st in a.status if st.name.endswith("live view") for kv in st.values),
             "the port in the diagnostics")
    last = [st for a in sim.diagnostics for st in a.status if st.name.endswith("live view")][-1]
    values = {kv.key: kv.value for kv in last.values}
    assert int(values["rejected"]) >= 2 and values["last_error"] == "none", values
    done.set()
    client.join(10.0)


def test_a_dead_source_is_shown_and_reported_as_stale_then_fresh_again(live):
    """The simulator or bridge stops: the view keeps its last state but says so (orange text over the robot,
    WARN with the age) instead of showing a frozen robot as live; fresh again once positions come back."""
    view, sim, X = live
    done = threading.Event()
    client = threading.Thread(target=lambda: asyncio.run(_watch(view.port, done)), daemon=True)
    client.start()
    wait_for(lambda: view.X is not None, "the first state")
    sim.positions = None
    wait_for(lambda: view.positions_age() is not None, "the positions to go stale")
    assert np.array_equal(view.X, X)                                        # the last state kept

    def stale_status():
        return [st for a in sim.diagnostics for st in a.status
                if st.name.endswith("live view") and "node positions stale" in st.message]
    wait_for(lambda: stale_status(), "a stale WARN in the diagnostics")
    assert stale_status()[-1].level == DiagnosticStatus.WARN
    sim.positions = X
    wait_for(lambda: view.positions_age() is None, "fresh positions again")
    done.set()
    client.join(10.0)


def test_a_port_in_use_stops_the_start_with_the_setting_to_change():
    context = rclpy.Context()
    rclpy.init(args=[], context=context, domain_id=claim_domain())
    view = LiveView(context=context, cli_args=["--ros-args", "-p", "port:=0"])
    try:
        with pytest.raises(ValueError, match="parameter 'port'"):
            LiveView(context=context, cli_args=["--ros-args", "-p", f"port:={view.port}"])
    finally:
        view.close()
        view.destroy_node()
        rclpy.shutdown(context=context)
