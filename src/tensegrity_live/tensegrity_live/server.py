"""The Foxglove WebSocket server of the live view (no rclpy): typed and JSON channels in a context of its own,
client publishes handed to a callback, clients and subscriptions counted.

The SDK's server runs on its own (Rust) threads: logging on a channel queues the message for each subscribed
client and returns at once (a slow client's oldest messages are dropped: ``message_backlog_size``), so the
caller never waits for the network. A channel nobody subscribes to costs nothing
(:meth:`LiveServer.wanted` says whether a message would go anywhere).
"""
from __future__ import annotations

import json
import math
import threading

import foxglove
from foxglove import Capability, Channel, Context
from foxglove.websocket import ServerListener

MAX_CLIENT_CHANNELS = 256       # client-advertised channels remembered (a flood of advertisements beyond: refused)
BACKLOG = 64                    # messages buffered per client: ~2 s of every channel at 30 Hz, then the oldest go


def json_safe(value):
    """``value`` with every non-finite float as None (JSON has no NaN or infinity)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


class _Listener(ServerListener):
    """Counts subscriptions per client and passes client messages, with their channel, to ``on_message``."""

    def __init__(self, on_message, on_refused):
        self.on_message, self.on_refused = on_message, on_refused
        self.lock = threading.Lock()
        self.subscriptions = {}         # client id -> set of channel ids
        self.advertised = {}            # (client id, client channel id) -> ClientChannel

    def on_subscribe(self, client, channel):
        with self.lock:
            self.subscriptions.setdefault(client.id, set()).add(channel.id)

    def on_unsubscribe(self, client, channel):
        with self.lock:
            subs = self.subscriptions.get(client.id, set())
            subs.discard(channel.id)
            if not subs:
                self.subscriptions.pop(client.id, None)

    def on_client_advertise(self, client, channel):
        with self.lock:
            full = len(self.advertised) >= MAX_CLIENT_CHANNELS
            if not full:
                self.advertised[(client.id, channel.id)] = channel
        if full:
            self.on_refused(f"client {client.id} advertised {channel.topic!r}: over {MAX_CLIENT_CHANNELS} client "
                            "channels, ignored")

    def on_client_unadvertise(self, client, client_channel_id):
        with self.lock:
            self.advertised.pop((client.id, client_channel_id), None)

    def on_message_data(self, client, client_channel_id, data):
        with self.lock:
            channel = self.advertised.get((client.id, client_channel_id))
        if channel is None:
            self.on_refused(f"client {client.id}: message on channel {client_channel_id} it never advertised")
            return
        self.on_message(channel.topic, channel.schema_name, channel.encoding, bytes(data))


class LiveServer:
    """A Foxglove WebSocket server on ``host``:``port`` (0: any free port; :attr:`port` is the one taken).

    ``on_message(topic, schema_name, encoding, payload)`` gets every client publish (on the server's thread:
    keep it short); ``on_refused(reason)`` a message or channel that could not be matched. With ``steering``
    false the server does not offer client publishing at all."""

    def __init__(self, host: str, port: int, on_message, on_refused, steering: bool = True,
                 name: str = "tensegrity live view"):
        self.context = Context()
        self.listener = _Listener(on_message, on_refused)
        self.server = foxglove.start_server(
            name=name, host=host, port=int(port), context=self.context, server_listener=self.listener,
            capabilities=[Capability.ClientPublish] if steering else [], supported_encodings=["json"],
            message_backlog_size=BACKLOG)
        self.port = int(self.server.port)
        self.channels = {}

    def typed(self, channel_class, topic: str):
        """A typed channel (a class of ``foxglove.channels``, e.g. SceneUpdateChannel) on ``topic``, made once."""
        if topic not in self.channels:
            self.channels[topic] = channel_class(topic, context=self.context)
        return self.channels[topic]

    def json(self, topic: str, schema: dict):
        """A JSON channel on ``topic`` advertising the JSON ``schema``, made once."""
        if topic not in self.channels:
            self.channels[topic] = Channel(topic, schema=schema, message_encoding="json", context=self.context)
        return self.channels[topic]

    def wanted(self, topic: str) -> bool:
        """A client subscribes to ``topic`` (its channel exists and has a sink)."""
        channel = self.channels.get(topic)
        if channel is None:
            return False
        base = getattr(channel, "base", channel)
        return bool(base.has_sinks())

    def log_json(self, topic: str, schema: dict, data: dict, log_time: int | None = None):
        """Log ``data`` (non-finite floats as null) on the JSON channel ``topic``."""
        channel = self.json(topic, schema)
        channel.log(json.dumps(json_safe(data), allow_nan=False).encode(), log_time=log_time)

    def counts(self) -> dict:
        """{'clients': clients with a subscription, 'subscriptions': their subscriptions in all,
        'client_channels': channels clients advertised}."""
        with self.listener.lock:
            subs = self.listener.subscriptions
            return {"clients": len(subs), "subscriptions": sum(len(s) for s in subs.values()),
                    "client_channels": len(self.listener.advertised)}

    def stop(self):
        """Stop the server (clients are disconnected); safe to call twice."""
        if self.server is not None:
            self.server.stop()
            self.server = None
