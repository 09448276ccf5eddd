"""Reading the suite's MCAP recordings back: raw messages, and the arrays of the standard topics
(node positions, string and motor states, clearances, safety stop, the model description, diagnostics).
Used by the bringup's report and the motion-capture comparison tool."""
from __future__ import annotations


def _stamp(msg) -> float:
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def iter_messages(path):
    """(topic, decoded ROS message, log time [ns]) of every message in an MCAP recording."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    with open(path, "rb") as fh:
        reader = make_reader(fh, decoder_factories=[DecoderFactory()])
        for _, channel, message, decoded in reader.iter_decoded_messages():
            yield channel.topic, decoded, message.log_time


def read_recording(path, namespace: str = "") -> dict:
    """Arrays from a recording: times are seconds (header stamps; log time for stamp-less messages)."""
    pre = "/" + namespace.strip("/") if namespace.strip("/") else ""
    rec = {"counts": {}, "positions": [], "strings": [], "joints": [], "min_clearance": [], "stop": [],
           "diagnostics": {}, "description": None}
    for topic, msg, log_ns in iter_messages(path):
        rec["counts"][topic] = rec["counts"].get(topic, 0) + 1
        t_log = log_ns * 1e-9
        local = topic[len(pre):] if pre and topic.startswith(pre) else topic
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
    return rec
