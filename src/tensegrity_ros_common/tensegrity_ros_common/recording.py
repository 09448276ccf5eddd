"""Reading the suite's MCAP recordings back: raw messages, and the arrays of the standard topics
(node positions, string and motor states, clearances, safety stop, the model description, diagnostics).
Used by the bringup's report and the motion-capture comparison tool.

A file that cannot be read (not an MCAP file, empty, truncated, corrupt) raises :class:`RecordingError`
naming the file, as does a namespace none of whose topics is in the recording."""
from __future__ import annotations


class RecordingError(ValueError):
    """The recording cannot be read, or does not hold what was asked for."""


_TYPES = {"/node_positions": "geometry_msgs/PoseArray", "/string_states": "sensor_msgs/JointState",
          "/joint_states": "sensor_msgs/JointState", "/min_clearance": "std_msgs/Float64",
          "/safety_stop": "std_msgs/Bool", "/model_description": "std_msgs/String",
          "/diagnostics": "diagnostic_msgs/DiagnosticArray"}
_SUITE_TOPICS = tuple(t for t in _TYPES if t != "/diagnostics")


def _stamp(msg) -> float:
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def iter_messages(path):
    """(topic, decoded ROS message, log time [ns]) of every message in an MCAP recording."""
    import os
    from mcap.exceptions import InvalidMagic
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise RecordingError(f"{path}: cannot open: {exc.strerror or exc}") from None
    with fh:
        try:
            reader = make_reader(fh, decoder_factories=[DecoderFactory()])
            for _, channel, message, decoded in reader.iter_decoded_messages():
                yield channel.topic, decoded, message.log_time
        except InvalidMagic:
            raise RecordingError(f"{path}: not an MCAP recording (wrong magic bytes at its start)") from None
        except Exception as exc:     # any failure of the MCAP reader or the CDR decoder on this file's bytes
            size = os.fstat(fh.fileno()).st_size
            detail = ("the file is empty" if size == 0 else
                      f"{size} bytes; {type(exc).__name__}" + (f": {exc}" if str(exc) else ""))
            raise RecordingError(f"{path}: not a readable MCAP recording, truncated or corrupt ({detail})") from None


def read_recording(path, namespace: str = "") -> dict:
    """Arrays from a recording: times are seconds (header stamps; log time for stamp-less messages).

    With a ``namespace`` only its topics are read (and the global ``/diagnostics``); a recording with
    messages on other topics but none in that namespace raises :class:`RecordingError` listing them."""
    pre = "/" + namespace.strip("/") if namespace.strip("/") else ""
    rec = {"counts": {}, "positions": [], "strings": [], "joints": [], "min_clearance": [], "stop": [],
           "diagnostics": {}, "description": None}
    for topic, msg, log_ns in iter_messages(path):
        rec["counts"][topic] = rec["counts"].get(topic, 0) + 1
        local = topic if not pre else topic[len(pre):] if topic.startswith(pre + "/") else None
        try:
            _take(rec, local, topic, msg, log_ns * 1e-9)
        except (AttributeError, TypeError, IndexError):
            key = local if local in _TYPES else topic
            raise RecordingError(f"{path}: topic {topic} does not hold {_TYPES.get(key, 'the expected type')} "
                                 f"messages (got {type(msg).__name__}); the suite's topics have fixed types") from None
    topics = sorted(t for t in rec["counts"] if t != "/diagnostics")
    if pre and topics and not any(t.startswith(pre + "/") for t in topics):
        spaces = sorted({t[:-len(name)] or "none (root)" for t in topics for name in _SUITE_TOPICS if t.endswith(name)})
        raise RecordingError(f"{path}: no topic in namespace {pre}; the recording's namespaces: "
                             f"{', '.join(spaces) or '-'}; topics: {', '.join(topics[:12])}"
                             + (" ..." if len(topics) > 12 else ""))
    return rec


def _take(rec: dict, local, topic: str, msg, t_log: float):
    """Add one message to the arrays of ``rec`` (``local``: its topic without the namespace, or None)."""
    if local == "/node_positions":
        rec["positions"].append((_stamp(msg), t_log, [(p.position.x, p.position.y, p.position.z) for p in msg.poses]))
    elif local == "/string_states":
        rec["strings"].append((_stamp(msg), list(msg.name), list(msg.position), list(msg.effort)))
    elif local == "/joint_states":
        rec["joints"].append((_stamp(msg), list(msg.name), list(msg.position)))
    elif local == "/min_clearance":
        rec["min_clearance"].append((t_log, msg.data))
    elif local == "/safety_stop":
        rec["stop"].append((t_log, bool(msg.data)))
    elif local == "/model_description" and rec["description"] is None:
        rec["description"] = msg.data
    elif topic == "/diagnostics":
        for st in msg.status:
            rec["diagnostics"][st.name] = {"level": int(st.level[0]) if isinstance(st.level, (bytes, bytearray))
                                           else int(st.level), "message": st.message,
                                           **{kv.key: kv.value for kv in st.values}}
