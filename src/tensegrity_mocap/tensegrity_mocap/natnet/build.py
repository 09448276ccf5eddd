"""Building NatNet packets (frames, server info, commands) - the inverse of the parser in
:mod:`tensegrity_mocap.natnet.protocol`, for the NatNet emulator and the tests."""
from __future__ import annotations

import math
import socket
import struct

import numpy as np

from tensegrity_mocap.natnet.protocol import (DEFAULT_DATA_PORT, DEFAULT_MULTICAST_ADDRESS, FRAME_MODELS_CHANGED,
                                              FRAME_RECORDING, MARKER_DTYPE, MAX_NAMELENGTH, MAX_PAYLOAD,
                                              NAT_CONNECT, NAT_DISCONNECT, NAT_FRAMEOFDATA, NAT_KEEPALIVE,
                                              NAT_MESSAGESTRING, NAT_REQUEST, NAT_SERVERINFO,
                                              PRECISION_FRACTION_SCALE, RB_DTYPE, MocapFrame, NatNetError, HDR, I32,
                                              I32X2, PREC, SUFFIX30, TAIL, has_sizes, normalize_version)


# --- building ------------------------------------------------------------------------------------------
def _packet(mid: int, payload: bytes) -> bytes:
    if len(payload) > MAX_PAYLOAD:
        raise NatNetError(f"payload of {len(payload)} bytes does not fit the uint16 size field", "oversized")
    return HDR.pack(mid, len(payload)) + payload


def _name_bytes(name: str) -> bytes:
    b = str(name).encode("utf-8")
    if b"\0" in b or len(b) >= MAX_NAMELENGTH:
        raise NatNetError(f"name {name!r} has a NUL or is longer than {MAX_NAMELENGTH - 1} bytes", "bad_string")
    return b + b"\0"


def _f32(a, shape_tail) -> bytes:
    return np.ascontiguousarray(np.asarray(a, dtype="<f4").reshape((-1,) + shape_tail)).tobytes()


def _rb_bytes(rbs) -> bytes:
    rec = np.zeros(len(rbs), RB_DTYPE)
    for i, rb in enumerate(rbs):
        rec[i] = (rb.id, rb.position, rb.quaternion, rb.mean_error,
                  (rb.params if rb.params is not None else int(bool(rb.tracking_valid))) & 0xFFFF)
    return rec.tobytes()


def _marker_bytes(ids, pos, sizes, params, residuals) -> bytes:
    ids = np.asarray(ids, np.int64).reshape(-1)
    n = len(ids)
    rec = np.zeros(n, MARKER_DTYPE)
    rec["id"] = ids.astype(np.int32)
    rec["pos"] = np.asarray(pos, float).reshape(n, 3)
    rec["size"] = np.broadcast_to(np.asarray(sizes, float), (n,)) if n else []
    rec["params"] = (np.broadcast_to(np.asarray(params, np.int64), (n,)) & 0xFFFF) if n else []
    rec["residual"] = np.broadcast_to(np.asarray(residuals, float), (n,)) if n else []
    return rec.tobytes()


def _section(out: list, v, count: int, body: bytes):
    if has_sizes(v):
        out.append(I32X2.pack(count, len(body)))
    else:
        out.append(I32.pack(count))
    out.append(body)


def _analog_bytes(devs) -> bytes:
    parts = []
    for d in devs:
        parts.append(I32X2.pack(d.id, len(d.channels)))
        for ch in d.channels:
            ch = np.asarray(ch, "<f4").reshape(-1)
            parts.append(I32.pack(len(ch)))
            parts.append(ch.tobytes())
    return b"".join(parts)


def frame_payload(frame: MocapFrame, version) -> bytes:
    """The NAT_FRAMEOFDATA payload (no header) for ``version``: exactly the layout :func:`parse_frame` reads."""
    v = normalize_version(version)
    out = [I32.pack(int(frame.frame_number))]
    body = b"".join(_name_bytes(name) + I32.pack(len(np.asarray(p).reshape(-1, 3))) + _f32(p, (3,))
                    for name, p in frame.marker_sets.items())
    _section(out, v, len(frame.marker_sets), body)
    other = np.asarray(frame.unlabeled, float).reshape(-1, 3)
    _section(out, v, len(other), _f32(other, (3,)))
    _section(out, v, len(frame.rigid_bodies), _rb_bytes(frame.rigid_bodies))
    body = b"".join(I32X2.pack(sk.id, len(sk.rigid_bodies)) + _rb_bytes(sk.rigid_bodies)
                    for sk in frame.skeletons)
    _section(out, v, len(frame.skeletons), body)
    if has_sizes(v):
        parts = []
        for a in frame.assets:
            parts.append(I32X2.pack(a.id, len(a.rigid_bodies)) + _rb_bytes(a.rigid_bodies))
            ids = np.asarray(a.marker_ids, np.int64).reshape(-1)
            parts.append(I32.pack(len(ids)) + _marker_bytes(ids, a.marker_positions, a.marker_sizes,
                                                             a.marker_params, a.marker_residuals))
        _section(out, v, len(frame.assets), b"".join(parts))
    ids = np.asarray(frame.labeled_ids, np.int64).reshape(-1)
    _section(out, v, len(ids), _marker_bytes(ids, frame.labeled_positions, frame.labeled_sizes,
                                             frame.labeled_params, frame.labeled_residuals))
    _section(out, v, len(frame.force_plates), _analog_bytes(frame.force_plates))
    _section(out, v, len(frame.devices), _analog_bytes(frame.devices))
    out.append(SUFFIX30.pack(int(frame.timecode) & 0xFFFFFFFF, int(frame.timecode_sub) & 0xFFFFFFFF,
                              float(frame.timestamp), int(frame.stamp_camera_mid_exposure or 0),
                              int(frame.stamp_data_received or 0), int(frame.stamp_transmit or 0)))
    if has_sizes(v):
        secs, frac = frame.precision_timestamp_secs, frame.precision_timestamp_frac
        if secs is None or frac is None:
            secs = frac = 0
            pt = frame.precision_timestamp
            if pt is not None and math.isfinite(pt) and pt > 0:
                secs = math.floor(pt)
                frac = min(round((pt - secs) * PRECISION_FRACTION_SCALE), 0xFFFFFFFF)
        out.append(PREC.pack(int(secs) & 0xFFFFFFFF, int(frac) & 0xFFFFFFFF))
    params = (int(frame.suffix_params) & ~0x3 & 0xFFFF) | (FRAME_RECORDING if frame.recording else 0) | \
             (FRAME_MODELS_CHANGED if frame.models_changed else 0)
    out.append(TAIL.pack(params, int(frame.end_of_data)))
    return b"".join(out)


def build_frame(frame: MocapFrame, version) -> bytes:
    """A complete NAT_FRAMEOFDATA packet (header + payload) for ``version``."""
    return _packet(NAT_FRAMEOFDATA, frame_payload(frame, version))


def build_server_info(app_name: str = "Motive", app_version=(3, 1, 0, 0), natnet_version=(4, 1, 0, 0),
                      clock_frequency: int = 10_000_000, data_port: int = DEFAULT_DATA_PORT,
                      is_multicast: bool = True, multicast_address: str = DEFAULT_MULTICAST_ADDRESS,
                      extended: bool = True) -> bytes:
    """NAT_SERVERINFO packet: sSender (264 bytes) and, if ``extended``, the sSender_Server tail (279 bytes)."""
    name = str(app_name).encode("utf-8")[:MAX_NAMELENGTH - 1]
    payload = name.ljust(MAX_NAMELENGTH, b"\0") + bytes(tuple(app_version)[:4]).ljust(4, b"\0") + \
        bytes(tuple(natnet_version)[:4]).ljust(4, b"\0")
    if extended:
        payload += struct.pack("<QHB", int(clock_frequency), int(data_port), 1 if is_multicast else 0) + \
            socket.inet_aton(multicast_address)
    return _packet(NAT_SERVERINFO, payload)


def build_connect(requested_version=None) -> bytes:
    """NAT_CONNECT. Without ``requested_version`` an empty payload (the server streams its own version);
    with one, the SDK's 4.x form: a 264-byte sender block named "Ping", connection options
    (subscribed-data-only flag, 4-byte bitstream version), padding and a NUL (271 bytes)."""
    if requested_version is None:
        return _packet(NAT_CONNECT, b"")
    ver = tuple(int(x) for x in requested_version)[:4]
    ver = ver + (0,) * (4 - len(ver))
    payload = bytearray(270)
    payload[0:4] = b"Ping"
    payload[265:269] = bytes(ver)
    return _packet(NAT_CONNECT, bytes(payload) + b"\0")


def build_request(command: str) -> bytes:
    return _packet(NAT_REQUEST, str(command).encode("utf-8") + b"\0")


def build_keepalive() -> bytes:
    return _packet(NAT_KEEPALIVE, b"")


def build_disconnect() -> bytes:
    return _packet(NAT_DISCONNECT, b"")


def build_message_string(text: str) -> bytes:
    return _packet(NAT_MESSAGESTRING, str(text).encode("utf-8") + b"\0")
