"""Record ROS 2 topics to an MCAP file (raw CDR, ``ros2msg`` schemas): opens in Foxglove and ``ros2 bag``.

Subscribes to the given topics at once (so nothing at start-up is missed) and, every ``discover_period``
seconds, to any other topic under the namespace, matching each publisher's reliability and durability
(latched topics such as ``model_description`` are received by late joiners).
"""
from __future__ import annotations

import importlib
import time
from pathlib import Path

from mcap.writer import CompressionType, Writer
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from tensegrity_ros_common.msgdefs import definition


def message_class(type_name: str):
    """'pkg/msg/Type' -> the Python message class."""
    pkg, _, name = type_name.split("/", 2)
    return getattr(importlib.import_module(f"{pkg}.msg"), name)


class McapRecorder(Node):
    def __init__(self, path, topics=(), namespace: str = "", discover_period: float = 1.0, **kwargs):
        super().__init__("mcap_recorder", **kwargs)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("wb")
        self.writer = Writer(self._fh, compression=CompressionType.ZSTD)
        self.writer.start(profile="ros2", library="tensegrity_bringup")
        self.prefix = "/" + namespace.strip("/") if namespace.strip("/") else ""
        self.schemas = {}
        self.channels = {}                 # topic -> channel id
        self.counts = {}
        self.sequence = 0
        self.closed = False
        self._subs = []
        for topic, type_name, qos in topics:
            self._subscribe(self._absolute(topic), type_name, qos)
        if discover_period > 0:
            self.create_timer(discover_period, self._discover)

    def _absolute(self, topic: str) -> str:
        return topic if topic.startswith("/") else f"{self.prefix}/{topic}"

    def _subscribe(self, topic: str, type_name: str, qos: QoSProfile):
        if topic in self.channels:
            return
        if type_name not in self.schemas:
            self.schemas[type_name] = self.writer.register_schema(
                name=type_name, encoding="ros2msg", data=definition(type_name).encode())
        durability = "transient_local" if qos.durability == DurabilityPolicy.TRANSIENT_LOCAL else "volatile"
        reliability = "reliable" if qos.reliability == ReliabilityPolicy.RELIABLE else "best_effort"
        meta = {"offered_qos_profiles": f"- history: keep_last\n  depth: {qos.depth}\n  reliability: {reliability}\n"
                                        f"  durability: {durability}\n"}
        cid = self.writer.register_channel(topic=topic, message_encoding="cdr", schema_id=self.schemas[type_name],
                                           metadata=meta)
        self.channels[topic] = cid
        self.counts[topic] = 0
        cb = lambda data, cid=cid, topic=topic: self._write(cid, topic, data)  # noqa: E731
        self._subs.append(self.create_subscription(message_class(type_name), topic, cb, qos, raw=True))

    def _write(self, cid: int, topic: str, data: bytes):
        if self.closed:
            return
        now = time.time_ns()
        self.writer.add_message(channel_id=cid, log_time=now, data=data, publish_time=now, sequence=self.sequence)
        self.sequence += 1
        self.counts[topic] += 1

    def _discover(self):
        for topic, types in self.get_topic_names_and_types():
            if topic in self.channels or not types:
                continue
            if self.prefix and not topic.startswith(self.prefix + "/") and topic != "/diagnostics":
                continue
            if topic in ("/rosout", "/parameter_events"):
                continue
            infos = self.get_publishers_info_by_topic(topic)
            if not infos:
                continue
            offered = [i.qos_profile for i in infos]
            latched = any(q.durability == DurabilityPolicy.TRANSIENT_LOCAL for q in offered)
            reliable = all(q.reliability == ReliabilityPolicy.RELIABLE for q in offered)
            qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE if reliable else
                             ReliabilityPolicy.BEST_EFFORT,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE)
            try:
                self._subscribe(topic, types[0], qos)
            except (FileNotFoundError, ImportError, AttributeError) as exc:
                self.get_logger().warning(f"not recording {topic} ({types[0]}): {exc}", once=True)

    def close(self):
        """Finish the MCAP file (summary and index); safe to call twice."""
        if not self.closed:
            self.closed = True
            self.writer.finish()
            self._fh.close()
