"""The protocol test client against a bare Foxglove SDK server (no node of ours): it negotiates the subprotocol,
reads serverInfo and advertisements, subscribes, decodes protobuf payloads with the advertised schema and JSON
payloads, sees an unsubscribe stop the stream and an unadvertise, and publishes as a client. So the live view tests
that use it rest on a client proven independent of the live view."""
import json
import threading
import time

import pytest

foxglove = pytest.importorskip("foxglove")
from foxglove.channels import SceneUpdateChannel  # noqa: E402
from foxglove.messages import (  # noqa: E402
    CylinderPrimitive, Pose, Quaternion, SceneEntity, SceneUpdate, Vector3)

from foxglove_ws_client import FoxgloveWsClient  # noqa: E402

TWIST = {"linear": {"x": 0.25, "y": -0.5, "z": 0.0}, "angular": {"x": 0.0, "y": 0.0, "z": 1.5}}


class Listener:
    """Records what the server hears from clients (the SDK calls it from its own threads)."""

    def __init__(self):
        self.advertised = []
        self.data = []
        self.event = threading.Event()

    def on_client_advertise(self, client, channel):
        self.advertised.append((channel.id, channel.topic, channel.encoding, channel.schema_name))

    def on_message_data(self, client, client_channel_id, data):
        self.data.append((client_channel_id, bytes(data)))
        self.event.set()


def scene(x: float) -> SceneUpdate:
    cyl = CylinderPrimitive(pose=Pose(position=Vector3(x=x, y=2.0, z=3.0), orientation=Quaternion(w=1.0)),
                            size=Vector3(x=0.02, y=0.02, z=0.4))
    return SceneUpdate(entities=[SceneEntity(id="robot", frame_id="world", cylinders=[cyl])])


@pytest.fixture
def bare_server():
    ctx = foxglove.Context()                 # its own context: no channel of another test leaks in
    listener = Listener()
    server = foxglove.start_server(port=0, context=ctx, capabilities=[foxglove.Capability.ClientPublish],
                                   supported_encodings=["json"], server_listener=listener)
    yield ctx, server, listener
    server.stop()


def test_client_speaks_the_protocol_with_a_bare_sdk_server(bare_server):
    ctx, server, listener = bare_server
    robot = SceneUpdateChannel("/scene/robot", context=ctx)
    numbers = foxglove.Channel("/numbers", schema={"type": "object"}, context=ctx)
    with FoxgloveWsClient(f"ws://127.0.0.1:{server.port}") as client:
        assert client.subprotocol in ("foxglove.sdk.v1", "foxglove.websocket.v1")
        assert "clientPublish" in client.server_info["capabilities"]
        assert client.server_info["supportedEncodings"] == ["json"]
        ch = client.channel("/scene/robot")
        assert (ch["encoding"], ch["schemaName"]) == ("protobuf", "foxglove.SceneUpdate")
        sub = client.subscribe("/scene/robot")
        jsub = client.subscribe("/numbers")
        time.sleep(0.2)                      # the server registers the subscriptions
        robot.log(scene(1.25), log_time=123_456_789_012)
        numbers.log({"a": 1.5, "b": [1, 2]}, log_time=5)
        msg = client.next_message(sub, after=0)
        assert msg.log_time_ns == 123_456_789_012
        decoded = client.decode(sub, msg)
        cyl = decoded.entities[0].cylinders[0]
        assert (decoded.entities[0].id, decoded.entities[0].frame_id) == ("robot", "world")
        assert (cyl.pose.position.x, cyl.pose.position.y, cyl.size.z) == (1.25, 2.0, 0.4)
        assert client.decode(jsub, client.next_message(jsub, after=0)) == {"a": 1.5, "b": [1, 2]}

        client.unsubscribe(sub)
        time.sleep(0.2)
        robot.log(scene(2.0))
        numbers.log({"a": 2.0})
        client.next_message(jsub, after=1)   # the still-subscribed channel gets the later message ...
        assert sub not in client.subscriptions and not [m for m in client.unknown if isinstance(m, bytes)]

        numbers.close()                      # ... and a closed channel is unadvertised
        client.wait_until(lambda: "/numbers" not in client.topics(), 5.0, "unadvertise of /numbers")
        assert client.unadvertised

        cid = client.advertise("/cmd_vel", "geometry_msgs/msg/Twist")
        client.wait_until(lambda: listener.advertised, 5.0, "the server to hear the advertisement")
        assert listener.advertised == [(cid, "/cmd_vel", "json", "geometry_msgs/msg/Twist")]
        client.publish(cid, TWIST)
        assert listener.event.wait(5.0)
        assert listener.data[0][0] == cid and json.loads(listener.data[0][1]) == TWIST
