"""A test client that speaks the Foxglove WebSocket protocol (subprotocols foxglove.sdk.v1 / foxglove.websocket.v1).

Written from the protocol specification (github.com/foxglove/ws-protocol docs/spec.md), on the locked `websockets`
(its threaded sync client) and `protobuf`: it shares no code with the server it tests. A background thread reads
every frame; JSON operations (serverInfo, status, advertise, unadvertise) update the client's state, binary
messageData frames (opcode 0x01: subscription id u32 LE, log time u64 LE, payload) are kept per subscription,
undecoded, so reading never falls behind; `decode` turns a payload into a protobuf message (built from the channel's
ADVERTISED FileDescriptorSet) or a JSON value. As a client it advertises its own channels and publishes
clientMessageData (opcode 0x01: client channel id u32 LE, payload).
"""
import base64
import collections
import json
import struct
import threading
import time
from dataclasses import dataclass, field

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

SUBPROTOCOLS = ("foxglove.sdk.v1", "foxglove.websocket.v1")
OP_MESSAGE_DATA = 0x01
MESSAGE_DATA_HEADER = struct.Struct("<BIQ")        # opcode, subscription id, log time (ns)
CLIENT_MESSAGE_HEADER = struct.Struct("<BI")       # opcode, client channel id


@dataclass
class Message:
    """One messageData frame: `log_time_ns` from the frame header, `received` = time.monotonic() on arrival (s)."""
    subscription_id: int
    log_time_ns: int
    payload: bytes
    received: float


@dataclass
class Subscription:
    id: int
    channel: dict
    messages: collections.deque = field(default_factory=lambda: collections.deque(maxlen=4096))
    count: int = 0


class FoxgloveWsClient:
    """Connect to `url` (ws://host:port); raises if the handshake or the serverInfo does not arrive in `timeout` s."""

    def __init__(self, url: str, timeout: float = 10.0, subprotocols=SUBPROTOCOLS, name: str = "test client"):
        self.name = name
        self.ws = connect(url, subprotocols=list(subprotocols), open_timeout=timeout,
                          max_size=None, compression=None).__enter__()    # websockets 17: the non-legacy form
        self.subprotocol = self.ws.subprotocol
        self.server_info = None
        self.channels = {}              # server channel id -> advertised channel dict
        self.unadvertised = []          # server channel ids removed, in order
        self.statuses = []              # status operations received
        self.unknown = []               # frames the client could not place (kept, for assertions)
        self.subscriptions = {}         # subscription id -> Subscription
        self.closed_reason = None
        self._next_sub = 0
        self._next_client_channel = 1
        self._decoders = {}             # server channel id -> callable(bytes) -> decoded
        self._lock = threading.Condition()
        self._reader = threading.Thread(target=self._read_loop, name=f"{name} reader", daemon=True)
        self._reader.start()
        self.wait_until(lambda: self.server_info is not None, timeout, "serverInfo")

    # ---- reading -----------------------------------------------------------------------------------------
    def _read_loop(self):
        try:
            for frame in self.ws:
                if isinstance(frame, bytes):
                    self._on_binary(frame)
                else:
                    self._on_text(frame)
        except ConnectionClosed as exc:
            self.closed_reason = repr(exc)
        finally:
            if self.closed_reason is None:
                self.closed_reason = "closed"
            with self._lock:
                self._lock.notify_all()

    def _on_text(self, text: str):
        msg = json.loads(text)
        op = msg.get("op")
        with self._lock:
            if op == "serverInfo":
                self.server_info = msg
            elif op == "advertise":
                for ch in msg["channels"]:
                    self.channels[ch["id"]] = ch
                    self._decoders.pop(ch["id"], None)
            elif op == "unadvertise":
                for cid in msg["channelIds"]:
                    self.channels.pop(cid, None)
                    self.unadvertised.append(cid)
            elif op == "status":
                self.statuses.append(msg)
            else:
                self.unknown.append(msg)
            self._lock.notify_all()

    def _on_binary(self, data: bytes):
        now = time.monotonic()
        if len(data) < MESSAGE_DATA_HEADER.size or data[0] != OP_MESSAGE_DATA:
            with self._lock:
                self.unknown.append(data)
            return
        _, sub_id, log_time = MESSAGE_DATA_HEADER.unpack_from(data)
        with self._lock:
            sub = self.subscriptions.get(sub_id)
            if sub is None:
                self.unknown.append(data)
                return
            sub.messages.append(Message(sub_id, log_time, data[MESSAGE_DATA_HEADER.size:], now))
            sub.count += 1
            self._lock.notify_all()

    def wait_until(self, predicate, timeout: float, what: str):
        """Wait (s) until `predicate()` holds (checked under the client's lock at each received frame)."""
        end = time.monotonic() + timeout
        with self._lock:
            while not predicate():
                left = end - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{self.name}: timed out after {timeout} s waiting for {what} "
                                         f"(connection: {self.closed_reason or 'open'})")
                self._lock.wait(min(left, 0.1))

    # ---- channels and subscriptions ---------------------------------------------------------------------
    def channel(self, topic: str, timeout: float = 10.0) -> dict:
        """The advertised channel of `topic` (waits for its advertisement)."""
        found = []

        def advertised():
            found[:] = [c for c in self.channels.values() if c["topic"] == topic]
            return bool(found)
        self.wait_until(advertised, timeout, f"advertisement of {topic}")
        return found[0]

    def topics(self) -> set:
        with self._lock:
            return {c["topic"] for c in self.channels.values()}

    def subscribe(self, topic: str, timeout: float = 10.0) -> int:
        """Subscribe to `topic`'s channel; returns the subscription id (chosen here, as the protocol says)."""
        ch = self.channel(topic, timeout)
        with self._lock:
            sub_id = self._next_sub
            self._next_sub += 1
            self.subscriptions[sub_id] = Subscription(sub_id, ch)
        self.send_json({"op": "subscribe", "subscriptions": [{"id": sub_id, "channelId": ch["id"]}]})
        return sub_id

    def unsubscribe(self, sub_id: int):
        self.send_json({"op": "unsubscribe", "subscriptionIds": [sub_id]})
        with self._lock:
            self.subscriptions.pop(sub_id, None)

    def count(self, sub_id: int) -> int:
        with self._lock:
            return self.subscriptions[sub_id].count

    def messages(self, sub_id: int) -> list:
        """The kept messages of a subscription (newest last)."""
        with self._lock:
            return list(self.subscriptions[sub_id].messages)

    def next_message(self, sub_id: int, timeout: float = 10.0, after: int = None) -> Message:
        """The first message received as number `after`+1 or later (default: the next one from now)."""
        with self._lock:
            sub = self.subscriptions[sub_id]
            start = sub.count if after is None else after
        self.wait_until(lambda: sub.count > start, timeout, f"a message on {sub.channel['topic']}")
        with self._lock:
            return sub.messages[-1]

    # ---- decoding ---------------------------------------------------------------------------------------
    def decode(self, sub_id: int, msg: Message):
        """The payload decoded with the channel's advertised schema: a protobuf message or a JSON value."""
        ch = self.subscriptions[sub_id].channel
        decoder = self._decoders.get(ch["id"])
        if decoder is None:
            decoder = self._decoders[ch["id"]] = decoder_for(ch)
        return decoder(msg.payload)

    # ---- publishing as a client -------------------------------------------------------------------------
    def advertise(self, topic: str, schema_name: str, encoding: str = "json", schema: str = None) -> int:
        """Advertise a client channel; returns its id (chosen by the client)."""
        cid = self._next_client_channel
        self._next_client_channel += 1
        ch = {"id": cid, "topic": topic, "encoding": encoding, "schemaName": schema_name}
        if schema is not None:
            ch["schema"] = schema
        self.send_json({"op": "advertise", "channels": [ch]})
        return cid

    def unadvertise(self, client_channel_id: int):
        self.send_json({"op": "unadvertise", "channelIds": [client_channel_id]})

    def publish(self, client_channel_id: int, payload):
        """Send clientMessageData; a dict/list payload is sent as JSON, bytes as they are."""
        if not isinstance(payload, (bytes, bytearray)):
            payload = json.dumps(payload).encode()
        self.send_bytes(CLIENT_MESSAGE_HEADER.pack(OP_MESSAGE_DATA, client_channel_id) + bytes(payload))

    # ---- raw frames (also for hostile tests) -------------------------------------------------------------
    def send_json(self, obj):
        self.ws.send(json.dumps(obj))

    def send_text(self, text: str):
        self.ws.send(text)

    def send_bytes(self, data: bytes):
        self.ws.send(bytes(data))

    @property
    def is_open(self) -> bool:
        return self.closed_reason is None

    def close(self):
        self.ws.close()
        self._reader.join(timeout=5.0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def decoder_for(channel: dict):
    """A function bytes -> decoded message for an advertised channel (protobuf with a base64 FileDescriptorSet
    schema, or JSON)."""
    encoding = channel["encoding"]
    if encoding == "json":
        return lambda payload: json.loads(payload)
    if encoding == "protobuf":
        return protobuf_class(channel["schemaName"], channel["schema"]).FromString
    raise ValueError(f"channel {channel['topic']}: encoding {encoding!r} is not decoded by this client")


def protobuf_class(schema_name: str, schema_b64: str):
    """The message class `schema_name` built from a base64 FileDescriptorSet, in a pool of its own."""
    fds = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(schema_b64))
    pool = descriptor_pool.DescriptorPool()
    pending = list(fds.file)
    while pending:                               # add files after their dependencies
        added = [f for f in pending if all(_has_file(pool, d) for d in f.dependency)]
        if not added:
            raise ValueError(f"schema {schema_name}: unresolved dependencies "
                             f"{sorted({d for f in pending for d in f.dependency})}")
        for f in added:
            pool.Add(f)
            pending.remove(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(schema_name))


def _has_file(pool, name: str) -> bool:
    try:
        pool.FindFileByName(name)
        return True
    except KeyError:
        return False
