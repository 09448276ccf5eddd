"""Smoke test of the live view with real rclpy and a real WebSocket client: a tiny publisher node stands in for
the simulator (model description + node positions); the client gets serverInfo and the advertised channels,
decodes one robot scene (bar ends = the published node positions), and steers: its cmd_vel arrives on ROS,
its malformed message is rejected and counted."""
import asyncio
import base64
import json
import struct
import threading

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")
websockets = pytest.importorskip("websockets")
from geometry_msgs.msg import PoseArray, Twist  # noqa: E402
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from std_msgs.msg import Header, String  # noqa: E402

from tensegrity_engine import load_model  # noqa: E402
from tensegrity_live.live_view_node import LiveView  # noqa: E402
from tensegrity_ros_common import topics  # noqa: E402
from tensegrity_ros_common.conversions import positions_to_pose_array  # noqa: E402
from tensegrity_ros_common.description import describe  # noqa: E402
from tensegrity_ros_common.domains import claim_domain  # noqa: E402

SUBPROTOCOL = "foxglove.sdk.v1"
TIMEOUT = 20.0        # s: generous for a loaded 2-core machine; the exchange itself takes well under 1 s


def decoder(channel: dict):
    """A function bytes -> protobuf message from an advertised channel's schema (a FileDescriptorSet)."""
    pool = descriptor_pool.DescriptorPool()
    for f in descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(channel["schema"])).file:
        pool.Add(f)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(channel["schemaName"]))
    return cls.FromString


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
    sim.create_timer(0.02, lambda: pub.publish(positions_to_pose_array(X, Header(frame_id="world"))))
    sim.twists = []
    sim.create_subscription(Twist, "cmd_vel", sim.twists.append, topics.command_qos())
    view = LiveView(context=context, cli_args=["--ros-args", "-p", "port:=0", "-p", "rate_hz:=20.0"])
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


async def _session(port: int):
    """serverInfo, the channels, one decoded robot scene; then a good and a bad client publish."""
    async with websockets.connect(f"ws://127.0.0.1:{port}", subprotocols=[SUBPROTOCOL], max_size=None) as ws:
        info = json.loads(await ws.recv())
        channels = {}
        while "/scene/robot" not in channels or "/tf" not in channels:
            msg = json.loads(await ws.recv())
            if msg["op"] == "advertise":
                channels.update({c["topic"]: c for c in msg["channels"]})
        robot = channels["/scene/robot"]
        await ws.send(json.dumps({"op": "subscribe", "subscriptions": [{"id": 1, "channelId": robot["id"]}]}))
        scene = None
        while scene is None:
            data = await ws.recv()
            if isinstance(data, bytes) and data[0] == 1 and struct.unpack("<I", data[1:5])[0] == 1:
                scene = decoder(robot)(data[13:])            # opcode, subscription id, log time (8 bytes)
        await ws.send(json.dumps({"op": "advertise", "channels": [
            {"id": 5, "topic": "/cmd_vel", "encoding": "json", "schemaName": "geometry_msgs/msg/Twist"}]}))
        await ws.send(b"\x01" + struct.pack("<I", 5) + b'{"linear": {"x": 0.25}, "angular": {"z": 0.5}}')
        await ws.send(b"\x01" + struct.pack("<I", 5) + b'{"linear": {"x": NaN}}')
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
    assert view.counts["rejected"] == 1 and "not JSON" in view.last_rejection
