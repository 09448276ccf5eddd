"""The Foxglove WebSocket server of the live view (no rclpy): typed and JSON channels in a context of its own,
client publishes handed to a callback, clients and subscriptions counted.

The SDK's server runs on its own (Rust) threads: logging on a channel queues the message for each subscribed
client and returns at once (a slow client's oldest messages are dropped: ``message_backlog_size``), so the
caller never waits for the network. A channel nobody subscribes to costs nothing
(:meth:`LiveServer.wanted` says whether a message would go anywhere).
"""
from __future__ import annotations

import json
import logging
import math
import threading
import time

import foxglove
from foxglove import Capability, Channel, Context
from foxglove.websocket import ServerListener

MAX_CLIENT_CHANNELS = 256       # client-advertised channels remembered (a flood of advertisements beyond: refused)
BACKLOG = 64                    # messages buffered per client: ~2 s of every channel at 30 Hz, then the oldest go
SDK_LOGGER = "foxglove"         # the SDK's Python loggers (foxglove.websocket.*) once foxglove.set_log_level ran
LOG_EVERY = 10.0                # s: at most one SDK warning/error line per this period (a hostile client's flood)


class SdkLogLimiter(logging.Filter):
    """Counts the SDK's warnings and errors (a malformed frame from a client is one each) and lets at most
    one line through every ``period`` seconds, naming how many were held back: a client sending 1,000 bad
    frames a second must not fill the log."""

    def __init__(self, period: float = LOG_EVERY):
        super().__init__()
        self.period = period
        self.lock = threading.Lock()
        self.count = 0                  # warnings and errors seen in all
        self.last = ""                  # the newest one's text
        self.held = 0                   # not logged since the last line let through
        self.next_line = -math.inf      # monotonic time from which a line may go through again

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        now = time.monotonic()
        with self.lock:
            self.count += 1
            self.last = record.getMessage()[:300]
            if now < self.next_line:
                self.held += 1
                return False
            held, self.held, self.next_line = self.held, 0, now + self.period
        if held:
            record.msg, record.args = f"{record.getMessage()} ({held} more held back in {self.period:g} s)", ()
        return True


def sdk_log_limiter() -> SdkLogLimiter:
    """Route the SDK's log (warnings and up) to stderr through one limiter per process: the ``foxglove``
    logger gets a handler of its own and does not propagate, so other loggers are left alone."""
    logger = logging.getLogger(SDK_LOGGER)
    for handler in logger.handlers:
        for f in handler.filters:
            if isinstance(f, SdkLogLimiter):
                return f
    limiter = SdkLogLimiter()
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("[%(levelname)s] [live view: Foxglove server] %(message)s"))
    handler.addFilter(limiter)
    logger.addHandler(handler)
    logger.propagate = False
    foxglove.set_log_level("WARNING")               # before the server starts; only the first call counts
    return limiter


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
        self.log_limiter = sdk_log_limiter()
        self.context = Context()
        self.listener = _Listener(on_message, on_refused)
        self.server = foxglove.start_server(
            name=name, host=host, port=int(port), context=self.context, server_listener=self.listener,
            capabilities=[Capability.ClientPublish] if steering else [], supported_encodings=["json"],
            message_backlog_size=BACKLOG)
        self.port = int(self.server.port)
        self.channels = {}
        self.schemas = {}               # JSON channel topic -> its advertised schema

    def typed(self, channel_class, topic: str):
        """A typed channel (a class of ``foxglove.channels``, e.g. SceneUpdateChannel) on ``topic``, made once."""
        if topic not in self.channels:
            self.channels[topic] = channel_class(topic, context=self.context)
        return self.channels[topic]

    def json(self, topic: str, schema: dict):
        """A JSON channel on ``topic`` advertising the JSON ``schema``, made once."""
        if topic not in self.channels:
            self.channels[topic] = Channel(topic, schema=schema, message_encoding="json", context=self.context)
            self.schemas[topic] = schema
        return self.channels[topic]

    def reschema_json(self, topic: str, schema: dict):
        """The JSON channel ``topic`` advertised again with ``schema`` (closed and made anew: clients see an
        unadvertise and an advertise) unless it already has that schema."""
        if self.schemas.get(topic) == schema:
            return self.channels[topic]
        old = self.channels.pop(topic, None)
        if old is not None:
            old.close()
        return self.json(topic, schema)

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
        'client_channels': channels clients advertised, 'protocol_errors': the SDK's warnings and errors (a
        malformed client frame is one), 'last_protocol_error'}."""
        with self.listener.lock:
            subs = self.listener.subscriptions
            out = {"clients": len(subs), "subscriptions": sum(len(s) for s in subs.values()),
                   "client_channels": len(self.listener.advertised)}
        out.update(protocol_errors=self.log_limiter.count, last_protocol_error=self.log_limiter.last or "none")
        return out

    def stop(self):
        """Stop the server (clients are disconnected); safe to call twice."""
        if self.server is not None:
            self.server.stop()
            self.server = None
