"""NatNet (OptiTrack Motive streaming protocol) packets and a poll-driven UDP client; pure Python + numpy.

Written from the NatNet SDK's depacketization samples (PacketClient.cpp, the Python NatNetClient.py) and
NatNetTypes.h, which are the reference for the byte layout; no code of theirs is used here.

Packets
=======
Every datagram is ``uint16 message id, uint16 payload size, payload`` (little endian throughout).
Frames (``NAT_FRAMEOFDATA``) as parsed by :func:`parse_frame`, in this order::

    int32  frame number
    -- marker sets ---------  int32 count [, int32 bytes]; per set: name (NUL-terminated),
                              int32 n, n x float32[3]
    -- legacy other markers -  int32 count [, int32 bytes]; count x float32[3]          (``unlabeled``)
    -- rigid bodies --------  int32 count [, int32 bytes]; per body (38 bytes): int32 id,
                              float32[3] position, float32[4] qx qy qz qw, float32 mean error,
                              int16 params (bit 0: tracking valid)
    -- skeletons -----------  int32 count [, int32 bytes]; per skeleton: int32 id, int32 n,
                              n x rigid body (38 bytes, as above)
    -- assets (4.1+) -------  int32 count, int32 bytes; per asset: int32 id, int32 n_rb,
                              n_rb x rigid body (38 bytes), int32 n_markers, n_markers x marker (26 bytes)
    -- labeled markers -----  int32 count [, int32 bytes]; per marker (26 bytes): int32 id
                              (model id << 16 | marker id), float32[3] position, float32 size,
                              int16 params, float32 residual
    -- force plates --------  int32 count [, int32 bytes]; per plate: int32 id, int32 channels;
                              per channel: int32 n, n x float32
    -- devices -------------  same layout as force plates
    -- suffix --------------  uint32 timecode, uint32 timecode sub, float64 timestamp [s],
                              uint64 camera mid-exposure, uint64 camera data received, uint64 transmit
                              (host high-resolution clock ticks),
                              (4.1+: uint32 precision timestamp seconds, uint32 fraction),
                              int16 params (bit 0 recording, bit 1 tracked models changed),
                              int32 end of data (0)

``[, int32 bytes]``: from NatNet 4.1 on, every section count is followed by the size in bytes of the
section's remaining data (what follows the size field up to the next section's count); in 4.0 and before
there is none. The asset section and the precision timestamp exist only from 4.1 on. NatNet 3.0, 3.1 and
4.0 frames have the same layout. (The SDK's 4.1 Python sample reads the precision timestamp for every
major version >= 4, contradicting its own comment and PacketClient.cpp, which read it for 4.1+ only; we
follow PacketClient.cpp.)

Labeled-marker params: bit 0 occluded, 1 point-cloud solved, 2 model solved, 3 has model, 4 unlabeled,
5 active marker. Residuals are passed on as sent (the SDK sample multiplies them by 1000 for display).

Robustness
==========
:func:`parse_packet` and :func:`parse_frame` raise only :class:`NatNetError` (a ``ValueError``) with a short
``reason`` ("truncated", "bad_count", "bad_string", "section_size", "oversized", "bad_version",
"unknown_message", ...). Every count is checked against the bytes left *before* anything is allocated
(count x smallest item size must fit), names must end within 256 bytes (NatNet's MAX_NAMELENGTH, NUL
included), so a hostile packet can neither allocate much nor loop long (at most ~16 k iterations for a
64 KiB payload). NaN positions are kept (Motive sends them). Rules chosen here:

* a 4.1 section whose declared byte size differs from what its items take is rejected ("section_size");
  for versions above 4.1 a larger declared size is skipped (forward compatibility: newer servers may append
  fields) and counted in ``MocapFrame.skipped_bytes``;
* bytes after the end-of-data tag (inside the declared payload or after it in the datagram) are tolerated and
  counted in ``MocapFrame.trailing_bytes``; a payload shorter than the declared size is rejected;
* a non-zero end-of-data tag is kept in ``MocapFrame.end_of_data`` (not rejected);
* two marker sets with the same name: the later one wins in ``MocapFrame.marker_sets``;
* unknown message ids are rejected ("unknown_message"); known non-frame messages are returned.

Precision timestamp: NatNet does not document the unit of the fraction; we read it as 1/2**32 s (the binary
fraction of NTP/PTP style timestamps), see :data:`PRECISION_FRACTION_SCALE`; the raw integers are kept too.

Client
======
:class:`NatNetClient` is thread-free: the caller polls :meth:`NatNetClient.receive` (e.g. from a ROS
timer or a worker loop); sockets are non-blocking and each call handles a bounded number of datagrams.

* Multicast (Motive's default): frames go to the multicast group (239.255.42.99) on the data port; the
  client joins the group on ``local_address`` and reads the data socket. Commands (connect, requests) go to
  the server's command port from the client's command socket, and replies come back to that socket.
* Unicast: Motive sends the frames to the client that connected. As in the SDK's Python sample the
  client's command socket (``local_address``, ephemeral port) sends NAT_CONNECT and then NAT_KEEPALIVE every
  ``keepalive_interval`` (Motive drops unicast clients that go silent), and frames arriving on the command
  socket are parsed. Because some server setups instead send unicast frames to the client's address at the
  *data port*, the client also binds a data socket to (``local_address``, ``data_port``) and reads both.
"""
from __future__ import annotations

import math
import select
import socket
import struct
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np

# --- message ids ---------------------------------------------------------------------------------------
NAT_CONNECT = 0
NAT_SERVERINFO = 1
NAT_REQUEST = 2
NAT_RESPONSE = 3
NAT_REQUEST_MODELDEF = 4
NAT_MODELDEF = 5
NAT_REQUEST_FRAMEOFDATA = 6
NAT_FRAMEOFDATA = 7
NAT_MESSAGESTRING = 8
NAT_DISCONNECT = 9
NAT_KEEPALIVE = 10
NAT_DISCONNECTBYTIMEOUT = 11
NAT_ECHOREQUEST = 12
NAT_ECHORESPONSE = 13
NAT_DISCOVERY = 14
NAT_UNRECOGNIZED_REQUEST = 100

MESSAGE_NAMES = {
    NAT_CONNECT: "NAT_CONNECT", NAT_SERVERINFO: "NAT_SERVERINFO", NAT_REQUEST: "NAT_REQUEST",
    NAT_RESPONSE: "NAT_RESPONSE", NAT_REQUEST_MODELDEF: "NAT_REQUEST_MODELDEF", NAT_MODELDEF: "NAT_MODELDEF",
    NAT_REQUEST_FRAMEOFDATA: "NAT_REQUEST_FRAMEOFDATA", NAT_FRAMEOFDATA: "NAT_FRAMEOFDATA",
    NAT_MESSAGESTRING: "NAT_MESSAGESTRING", NAT_DISCONNECT: "NAT_DISCONNECT", NAT_KEEPALIVE: "NAT_KEEPALIVE",
    NAT_DISCONNECTBYTIMEOUT: "NAT_DISCONNECTBYTIMEOUT", NAT_ECHOREQUEST: "NAT_ECHOREQUEST",
    NAT_ECHORESPONSE: "NAT_ECHORESPONSE", NAT_DISCOVERY: "NAT_DISCOVERY",
    NAT_UNRECOGNIZED_REQUEST: "NAT_UNRECOGNIZED_REQUEST",
}

DEFAULT_MULTICAST_ADDRESS = "239.255.42.99"
DEFAULT_COMMAND_PORT = 1510
DEFAULT_DATA_PORT = 1511
MAX_NAMELENGTH = 256                      # bytes, NUL included
MAX_PAYLOAD = 0xFFFF                      # the header's uint16 size field
SERVER_INFO_SIZE = 279                    # sSender_Server, packed: name 256, 2 x version 4, clock 8, port 2,
SENDER_SIZE = 264                         # multicast flag 1, group 4; sSender alone (older servers): 264
PRECISION_FRACTION_SCALE = 2.0 ** 32      # assumed unit of the precision-timestamp fraction: 1/2**32 s

# labeled-marker params bits
MARKER_OCCLUDED = 0x01
MARKER_PC_SOLVED = 0x02
MARKER_MODEL_SOLVED = 0x04
MARKER_HAS_MODEL = 0x08
MARKER_UNLABELED = 0x10
MARKER_ACTIVE = 0x20
# frame suffix params bits
FRAME_RECORDING = 0x01
FRAME_MODELS_CHANGED = 0x02

_HDR = struct.Struct("<HH")
_I32 = struct.Struct("<i")
_I32x2 = struct.Struct("<ii")
_SUFFIX30 = struct.Struct("<IIdQQQ")      # timecode, sub, timestamp, mid-exposure, received, transmit
_PREC = struct.Struct("<II")
_TAIL = struct.Struct("<Hi")              # params (read unsigned: only bits matter), end of data
_VEC3 = np.dtype("<f4")
RB_DTYPE = np.dtype([("id", "<i4"), ("pos", "<f4", (3,)), ("quat", "<f4", (4,)), ("err", "<f4"),
                     ("params", "<u2")])                       # 38 bytes
MARKER_DTYPE = np.dtype([("id", "<i4"), ("pos", "<f4", (3,)), ("size", "<f4"), ("params", "<u2"),
                         ("residual", "<f4")])                 # 26 bytes
assert RB_DTYPE.itemsize == 38 and MARKER_DTYPE.itemsize == 26


class NatNetError(ValueError):
    """A packet that cannot be decoded; ``reason`` is a short machine-readable cause."""

    def __init__(self, message: str, reason: str = "malformed"):
        super().__init__(message)
        self.reason = reason


# --- data ----------------------------------------------------------------------------------------------
def _f64(a, shape) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).reshape(shape)


@dataclass
class RigidBody:
    """A rigid body (or skeleton bone / asset rigid body) in one frame; quaternion is (qx, qy, qz, qw)."""
    id: int
    position: np.ndarray
    quaternion: np.ndarray
    mean_error: float = 0.0
    tracking_valid: bool = True
    params: int | None = None          # raw int16 params; None -> derived from tracking_valid

    def __post_init__(self):
        self.position = _f64(self.position, (3,))
        self.quaternion = _f64(self.quaternion, (4,))
        if self.params is None:
            self.params = 1 if self.tracking_valid else 0
        self.tracking_valid = bool(self.params & 1)


@dataclass
class Skeleton:
    id: int
    rigid_bodies: list = field(default_factory=list)


@dataclass
class Asset:
    """NatNet 4.1+ asset: its rigid bodies and markers (markers as in the labeled-marker section)."""
    id: int
    rigid_bodies: list = field(default_factory=list)
    marker_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    marker_positions: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    marker_sizes: np.ndarray = field(default_factory=lambda: np.zeros(0))
    marker_params: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    marker_residuals: np.ndarray = field(default_factory=lambda: np.zeros(0))


@dataclass
class AnalogDevice:
    """A force plate or peripheral device: per channel, the analog samples of this mocap frame."""
    id: int
    channels: list = field(default_factory=list)     # list of float arrays


def _empty_ids():
    return np.zeros(0, np.int64)


@dataclass
class MocapFrame:
    """One NAT_FRAMEOFDATA. Positions in metres (Motive's streaming units), arrays float64."""
    frame_number: int = 0
    timestamp: float = 0.0                            # s, Motive software time
    stamp_camera_mid_exposure: int | None = None      # host high-resolution clock ticks (3.0+)
    stamp_data_received: int | None = None
    stamp_transmit: int | None = None
    precision_timestamp: float | None = None          # s (4.1+, None if absent or zero)
    recording: bool = False
    models_changed: bool = False
    marker_sets: dict = field(default_factory=dict)   # name -> (k, 3)
    unlabeled: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))   # legacy "other" markers
    rigid_bodies: list = field(default_factory=list)
    labeled_ids: np.ndarray = field(default_factory=_empty_ids)
    labeled_positions: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    labeled_sizes: np.ndarray = field(default_factory=lambda: np.zeros(0))
    labeled_params: np.ndarray = field(default_factory=_empty_ids)
    labeled_residuals: np.ndarray = field(default_factory=lambda: np.zeros(0))
    skeletons: list = field(default_factory=list)
    assets: list = field(default_factory=list)        # 4.1+
    force_plates: list = field(default_factory=list)
    devices: list = field(default_factory=list)
    timecode: int = 0
    timecode_sub: int = 0
    precision_timestamp_secs: int | None = None       # raw 4.1+ fields
    precision_timestamp_frac: int | None = None
    suffix_params: int = 0                            # raw frame params (recording/models_changed are bits 0/1)
    end_of_data: int = 0
    trailing_bytes: int = 0                           # bytes after end-of-data (tolerated)
    skipped_bytes: int = 0                            # section bytes skipped (versions above 4.1 only)
    version: tuple | None = None                      # NatNet (major, minor) it was decoded with
    receive_time_ns: int | None = None                # time.perf_counter_ns() when the datagram was read
    sender: tuple | None = None                       # (ip, port) the datagram came from (client-set)

    # -- convenience -----------------------------------------------------------------------------------
    def _bit(self, mask):
        return (np.asarray(self.labeled_params, np.int64) & mask) != 0

    @property
    def occluded(self) -> np.ndarray:
        return self._bit(MARKER_OCCLUDED)

    @property
    def point_cloud_solved(self) -> np.ndarray:
        return self._bit(MARKER_PC_SOLVED)

    @property
    def model_solved(self) -> np.ndarray:
        return self._bit(MARKER_MODEL_SOLVED)

    @property
    def has_model(self) -> np.ndarray:
        return self._bit(MARKER_HAS_MODEL)

    @property
    def unlabeled_flag(self) -> np.ndarray:
        return self._bit(MARKER_UNLABELED)

    @property
    def active(self) -> np.ndarray:
        return self._bit(MARKER_ACTIVE)

    @property
    def model_ids(self) -> np.ndarray:
        return np.asarray(self.labeled_ids, np.int64) >> 16

    @property
    def marker_ids(self) -> np.ndarray:
        return np.asarray(self.labeled_ids, np.int64) & 0xFFFF

    def rigid_body(self, body_id: int) -> RigidBody | None:
        for rb in self.rigid_bodies:
            if rb.id == body_id:
                return rb
        return None


def make_marker_id(model_id: int, marker_id: int) -> int:
    """NatNet labeled-marker id: model (asset) id in the high 16 bits, member id in the low 16 (int32)."""
    v = ((int(model_id) & 0xFFFF) << 16) | (int(marker_id) & 0xFFFF)
    return v - (1 << 32) if v >= (1 << 31) else v


@dataclass
class ServerInfo:
    """NAT_SERVERINFO (sSender_Server). The last four fields are absent (None) from 264-byte replies."""
    app_name: str
    app_version: tuple
    natnet_version: tuple
    clock_frequency: int | None = None        # host high-resolution clock [ticks/s]
    data_port: int | None = None
    is_multicast: bool | None = None
    multicast_address: str | None = None

    @property
    def version(self) -> tuple:
        return tuple(self.natnet_version[:2])


# --- versions ------------------------------------------------------------------------------------------
def normalize_version(version) -> tuple:
    """(major, minor) from a tuple/list (extra fields ignored) or a "4.1" string; NatNet 3.0+ only."""
    try:
        if isinstance(version, str):
            parts = version.strip().split(".")
            major, minor = int(parts[0]), int(parts[1]) if len(parts) > 1 and parts[1] else 0
        else:
            major, minor = int(version[0]), int(version[1]) if len(version) > 1 else 0
    except (TypeError, ValueError, IndexError) as exc:
        raise NatNetError(f"cannot read NatNet version {version!r}", "bad_version") from exc
    if major < 3 or major > 4 or minor < 0:
        raise NatNetError(f"NatNet {major}.{minor} is not supported (3.0 to 4.x)", "bad_version")
    return major, minor


def _has_sizes(v) -> bool:
    return v >= (4, 1)


# --- reading -------------------------------------------------------------------------------------------
class _Reader:
    __slots__ = ("buf", "end", "pos")

    def __init__(self, buf: bytes):
        self.buf = buf
        self.pos = 0
        self.end = len(buf)

    def left(self) -> int:
        return self.end - self.pos

    def need(self, n: int, what: str):
        if n > self.end - self.pos:
            raise NatNetError(f"truncated: {what} needs {n} bytes at offset {self.pos}, "
                              f"{self.end - self.pos} left", "truncated")

    def i32(self, what: str) -> int:
        self.need(4, what)
        v = _I32.unpack_from(self.buf, self.pos)[0]
        self.pos += 4
        return v

    def count(self, what: str, min_item: int) -> int:
        n = self.i32(what)
        if n < 0:
            raise NatNetError(f"negative {what}: {n}", "bad_count")
        if n * min_item > self.end - self.pos:
            raise NatNetError(f"{what} {n} cannot fit in {self.end - self.pos} bytes "
                              f"(>= {min_item} bytes each)", "bad_count")
        return n

    def cstring(self, what: str) -> str:
        stop = min(self.pos + MAX_NAMELENGTH, self.end)
        i = self.buf.find(b"\0", self.pos, stop)
        if i < 0:
            if stop == self.end and self.end - self.pos < MAX_NAMELENGTH:
                raise NatNetError(f"truncated: unterminated {what} at offset {self.pos}", "truncated")
            raise NatNetError(f"{what} at offset {self.pos} longer than {MAX_NAMELENGTH - 1} bytes",
                              "bad_string")
        s = self.buf[self.pos:i].decode("utf-8", "replace")
        self.pos = i + 1
        return s

    def records(self, dtype: np.dtype, n: int, what: str) -> np.ndarray:
        nb = n * dtype.itemsize
        self.need(nb, what)
        a = np.frombuffer(self.buf, dtype, n, self.pos)
        self.pos += nb
        return a

    def vec3(self, n: int, what: str) -> np.ndarray:
        a = self.records(_VEC3, 3 * n, what)
        return a.astype(np.float64).reshape(n, 3)


class _Section:
    """Count (+ 4.1 byte size) of one frame section; limits the reader to the declared size."""
    __slots__ = ("frame", "n", "name", "r", "saved_end", "v")

    def __init__(self, r: _Reader, v: tuple, name: str, min_item: int, frame: MocapFrame):
        self.r, self.v, self.name, self.frame = r, v, name, frame
        self.saved_end = None
        if _has_sizes(v):
            n = r.i32(f"{name} count")
            size = r.i32(f"{name} byte size")
            if n < 0:
                raise NatNetError(f"negative {name} count: {n}", "bad_count")
            if size < 0 or size > r.left():
                raise NatNetError(f"{name} byte size {size} with {r.left()} bytes left", "section_size")
            if n * min_item > size:
                raise NatNetError(f"{name} count {n} cannot fit in its {size} bytes", "bad_count")
            self.saved_end = r.end
            r.end = r.pos + size
            self.n = n
        else:
            self.n = r.count(f"{name} count", min_item)

    def close(self):
        r = self.r
        if self.saved_end is None:
            return
        extra = r.end - r.pos
        if extra:
            if self.v == (4, 1):
                raise NatNetError(f"{self.name}: declared byte size exceeds its items by {extra}",
                                  "section_size")
            self.frame.skipped_bytes += extra
            r.pos = r.end
        r.end = self.saved_end


def _rigid_bodies(rec: np.ndarray) -> list:
    if len(rec) == 0:
        return []
    pos = rec["pos"].astype(np.float64)
    quat = rec["quat"].astype(np.float64)
    ids = rec["id"].tolist()
    err = rec["err"].tolist()
    par = rec["params"].tolist()
    return [RigidBody(ids[i], pos[i], quat[i], err[i], bool(par[i] & 1), par[i]) for i in range(len(ids))]


def _analog(r: _Reader, v, name: str, frame: MocapFrame) -> list:
    sec = _Section(r, v, name, 8, frame)
    out = []
    for _ in range(sec.n):
        dev_id = r.i32(f"{name} id")
        nch = r.count(f"{name} channel count", 4)
        chans = []
        for _ in range(nch):
            nfr = r.count(f"{name} sample count", 4)
            chans.append(r.records(_VEC3, nfr, f"{name} samples").astype(np.float64))
        out.append(AnalogDevice(dev_id, chans))
    sec.close()
    return out


def _view(obj, what: str) -> memoryview:
    """A flat byte view of a bytes-like object (no copy); NatNetError for anything else (an int, a list)."""
    try:
        mv = memoryview(obj)
        return mv if mv.format == "B" and mv.ndim == 1 else mv.cast("B")
    except (TypeError, ValueError) as exc:
        raise NatNetError(f"{what} is not bytes-like: {type(obj).__name__}", "malformed") from exc


def parse_frame(payload, version) -> MocapFrame:
    """Decode the payload of a NAT_FRAMEOFDATA packet (without the 4-byte header)."""
    v = normalize_version(version)
    mv = _view(payload, "payload")
    if mv.nbytes > MAX_PAYLOAD:
        raise NatNetError(f"payload of {mv.nbytes} bytes exceeds {MAX_PAYLOAD}", "oversized")
    buf = mv.tobytes()
    try:
        with np.errstate(all="ignore"):       # signalling NaNs in hostile data must not warn or raise
            return _parse_frame(buf, v)
    except NatNetError:
        raise
    except Exception as exc:  # pragma: no cover - safety net: a bug must not escape as another type
        raise NatNetError(f"internal decoding error: {type(exc).__name__}: {exc}", "internal") from exc


def _parse_frame(buf: bytes, v: tuple) -> MocapFrame:
    r = _Reader(buf)
    f = MocapFrame(version=v)
    f.frame_number = r.i32("frame number")

    sec = _Section(r, v, "marker set", 5, f)
    for _ in range(sec.n):
        name = r.cstring("marker set name")
        n = r.count("marker set marker count", 12)
        f.marker_sets[name] = r.vec3(n, "marker set markers")
    sec.close()

    sec = _Section(r, v, "other marker", 12, f)
    f.unlabeled = r.vec3(sec.n, "other markers")
    sec.close()

    sec = _Section(r, v, "rigid body", RB_DTYPE.itemsize, f)
    f.rigid_bodies = _rigid_bodies(r.records(RB_DTYPE, sec.n, "rigid bodies"))
    sec.close()

    sec = _Section(r, v, "skeleton", 8, f)
    for _ in range(sec.n):
        sk_id = r.i32("skeleton id")
        n = r.count("skeleton rigid body count", RB_DTYPE.itemsize)
        f.skeletons.append(Skeleton(sk_id, _rigid_bodies(r.records(RB_DTYPE, n, "skeleton rigid bodies"))))
    sec.close()

    if _has_sizes(v):
        sec = _Section(r, v, "asset", 12, f)
        for _ in range(sec.n):
            a_id = r.i32("asset id")
            n = r.count("asset rigid body count", RB_DTYPE.itemsize)
            rbs = _rigid_bodies(r.records(RB_DTYPE, n, "asset rigid bodies"))
            m = r.count("asset marker count", MARKER_DTYPE.itemsize)
            mk = r.records(MARKER_DTYPE, m, "asset markers")
            f.assets.append(Asset(a_id, rbs, mk["id"].astype(np.int64), mk["pos"].astype(np.float64),
                                  mk["size"].astype(np.float64), mk["params"].astype(np.int64),
                                  mk["residual"].astype(np.float64)))
        sec.close()

    sec = _Section(r, v, "labeled marker", MARKER_DTYPE.itemsize, f)
    mk = r.records(MARKER_DTYPE, sec.n, "labeled markers")
    f.labeled_ids = mk["id"].astype(np.int64)
    f.labeled_positions = mk["pos"].astype(np.float64)
    f.labeled_sizes = mk["size"].astype(np.float64)
    f.labeled_params = mk["params"].astype(np.int64)
    f.labeled_residuals = mk["residual"].astype(np.float64)
    sec.close()

    f.force_plates = _analog(r, v, "force plate", f)
    f.devices = _analog(r, v, "device", f)

    r.need(_SUFFIX30.size, "frame suffix")
    (f.timecode, f.timecode_sub, f.timestamp, f.stamp_camera_mid_exposure, f.stamp_data_received,
     f.stamp_transmit) = _SUFFIX30.unpack_from(buf, r.pos)
    r.pos += _SUFFIX30.size
    if _has_sizes(v):
        r.need(_PREC.size, "precision timestamp")
        secs, frac = _PREC.unpack_from(buf, r.pos)
        r.pos += _PREC.size
        f.precision_timestamp_secs, f.precision_timestamp_frac = secs, frac
        if secs or frac:
            f.precision_timestamp = secs + frac / PRECISION_FRACTION_SCALE
    r.need(_TAIL.size, "frame params and end-of-data tag")
    params, f.end_of_data = _TAIL.unpack_from(buf, r.pos)
    r.pos += _TAIL.size
    f.suffix_params = params
    f.recording = bool(params & FRAME_RECORDING)
    f.models_changed = bool(params & FRAME_MODELS_CHANGED)
    f.trailing_bytes = r.end - r.pos
    return f


def parse_header(data) -> tuple:
    """(message id, declared payload size) of a packet; NatNetError if shorter than the header."""
    mv = _view(data, "packet")
    if mv.nbytes < 4:
        raise NatNetError(f"packet of {mv.nbytes} bytes is shorter than the 4-byte header", "truncated")
    return _HDR.unpack_from(mv, 0)


def parse_server_info(payload) -> ServerInfo:
    buf = _view(payload, "server info")[:MAX_PAYLOAD].tobytes()
    if len(buf) < SENDER_SIZE:
        raise NatNetError(f"server info of {len(buf)} bytes (needs {SENDER_SIZE})", "truncated")
    raw = buf[:MAX_NAMELENGTH]
    nul = raw.find(b"\0")
    name = (raw if nul < 0 else raw[:nul]).decode("utf-8", "replace")
    info = ServerInfo(name, tuple(buf[256:260]), tuple(buf[260:264]))
    if len(buf) >= SERVER_INFO_SIZE:
        info.clock_frequency, info.data_port, mc = struct.unpack_from("<QHB", buf, SENDER_SIZE)
        info.is_multicast = bool(mc)
        info.multicast_address = socket.inet_ntoa(buf[275:279])
    return info


def _c_text(buf: bytes) -> str:
    nul = buf.find(b"\0")
    return (buf if nul < 0 else buf[:nul]).decode("utf-8", "replace")


def parse_packet(data, version=None) -> tuple:
    """Decode one datagram -> (message id, object).

    NAT_FRAMEOFDATA -> :class:`MocapFrame` (needs ``version``); NAT_SERVERINFO -> :class:`ServerInfo`;
    NAT_MESSAGESTRING -> str; NAT_RESPONSE -> int (4-byte payload) or str; other known ids -> the raw
    payload bytes; unknown ids -> NatNetError("unknown_message").
    """
    mv = _view(data, "packet")
    mid, size = parse_header(mv)
    if size > mv.nbytes - 4:
        raise NatNetError(f"truncated: header declares {size} payload bytes, datagram has {mv.nbytes - 4}",
                          "truncated")
    payload = mv[4:4 + size].tobytes()
    extra = mv.nbytes - 4 - size
    if mid == NAT_FRAMEOFDATA:
        if version is None:
            raise NatNetError("frame received before the NatNet version is known", "no_version")
        frame = parse_frame(payload, version)
        frame.trailing_bytes += extra
        return mid, frame
    if mid == NAT_SERVERINFO:
        return mid, parse_server_info(payload)
    if mid == NAT_MESSAGESTRING:
        return mid, _c_text(payload)
    if mid == NAT_RESPONSE:
        if size == 4:
            return mid, _I32.unpack_from(payload, 0)[0]
        return mid, _c_text(payload)
    if mid in MESSAGE_NAMES:
        return mid, payload
    raise NatNetError(f"unknown message id {mid}", "unknown_message")


# --- building ------------------------------------------------------------------------------------------
def _packet(mid: int, payload: bytes) -> bytes:
    if len(payload) > MAX_PAYLOAD:
        raise NatNetError(f"payload of {len(payload)} bytes does not fit the uint16 size field", "oversized")
    return _HDR.pack(mid, len(payload)) + payload


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
    if _has_sizes(v):
        out.append(_I32x2.pack(count, len(body)))
    else:
        out.append(_I32.pack(count))
    out.append(body)


def _analog_bytes(devs) -> bytes:
    parts = []
    for d in devs:
        parts.append(_I32x2.pack(d.id, len(d.channels)))
        for ch in d.channels:
            ch = np.asarray(ch, "<f4").reshape(-1)
            parts.append(_I32.pack(len(ch)))
            parts.append(ch.tobytes())
    return b"".join(parts)


def frame_payload(frame: MocapFrame, version) -> bytes:
    """The NAT_FRAMEOFDATA payload (no header) for ``version``: exactly the layout :func:`parse_frame` reads."""
    v = normalize_version(version)
    out = [_I32.pack(int(frame.frame_number))]
    body = b"".join(_name_bytes(name) + _I32.pack(len(np.asarray(p).reshape(-1, 3))) + _f32(p, (3,))
                    for name, p in frame.marker_sets.items())
    _section(out, v, len(frame.marker_sets), body)
    other = np.asarray(frame.unlabeled, float).reshape(-1, 3)
    _section(out, v, len(other), _f32(other, (3,)))
    _section(out, v, len(frame.rigid_bodies), _rb_bytes(frame.rigid_bodies))
    body = b"".join(_I32x2.pack(sk.id, len(sk.rigid_bodies)) + _rb_bytes(sk.rigid_bodies)
                    for sk in frame.skeletons)
    _section(out, v, len(frame.skeletons), body)
    if _has_sizes(v):
        parts = []
        for a in frame.assets:
            parts.append(_I32x2.pack(a.id, len(a.rigid_bodies)) + _rb_bytes(a.rigid_bodies))
            ids = np.asarray(a.marker_ids, np.int64).reshape(-1)
            parts.append(_I32.pack(len(ids)) + _marker_bytes(ids, a.marker_positions, a.marker_sizes,
                                                             a.marker_params, a.marker_residuals))
        _section(out, v, len(frame.assets), b"".join(parts))
    ids = np.asarray(frame.labeled_ids, np.int64).reshape(-1)
    _section(out, v, len(ids), _marker_bytes(ids, frame.labeled_positions, frame.labeled_sizes,
                                             frame.labeled_params, frame.labeled_residuals))
    _section(out, v, len(frame.force_plates), _analog_bytes(frame.force_plates))
    _section(out, v, len(frame.devices), _analog_bytes(frame.devices))
    out.append(_SUFFIX30.pack(int(frame.timecode) & 0xFFFFFFFF, int(frame.timecode_sub) & 0xFFFFFFFF,
                              float(frame.timestamp), int(frame.stamp_camera_mid_exposure or 0),
                              int(frame.stamp_data_received or 0), int(frame.stamp_transmit or 0)))
    if _has_sizes(v):
        secs, frac = frame.precision_timestamp_secs, frame.precision_timestamp_frac
        if secs is None or frac is None:
            secs = frac = 0
            pt = frame.precision_timestamp
            if pt is not None and math.isfinite(pt) and pt > 0:
                secs = math.floor(pt)
                frac = min(round((pt - secs) * PRECISION_FRACTION_SCALE), 0xFFFFFFFF)
        out.append(_PREC.pack(int(secs) & 0xFFFFFFFF, int(frac) & 0xFFFFFFFF))
    params = (int(frame.suffix_params) & ~0x3 & 0xFFFF) | (FRAME_RECORDING if frame.recording else 0) | \
             (FRAME_MODELS_CHANGED if frame.models_changed else 0)
    out.append(_TAIL.pack(params, int(frame.end_of_data)))
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


# --- client --------------------------------------------------------------------------------------------
class NatNetClient:
    """Poll-driven NatNet client (no threads). See the module docstring for multicast vs unicast.

    ``version`` (e.g. ``(4, 1)``) is used when the server does not answer NAT_CONNECT; a server info reply
    overrides it. ``stats`` counts datagrams ``received``, frames ``parsed``, ``rejected`` (by reason),
    ``dropped_frames`` (gaps in frame numbers), ``stale_frames`` (duplicate or late frames, discarded),
    ``stream_resets`` (large jumps, e.g. Motive's playback looping), ``models_changed`` frames, non-frame
    ``messages``, ``keepalives_sent``, ``socket_errors``, ``trailing_bytes_frames``, ``superseded_frames``
    (by :meth:`receive_latest`), ``discarded_during_connect``, ``foreign_packets``.

    Sender filter (``filter_source``): only datagrams whose source address is the server's
    (``server_address``; with ``source_port`` > 0 frames must also come from that port) are read, during
    :meth:`connect` too (a NAT_SERVERINFO from elsewhere cannot set the version); the others are dropped
    unparsed and counted as ``foreign_packets`` (the last one's "ip:port" in :attr:`last_foreign_sender`).
    Frame-number bookkeeping (gaps, stale frames) is kept per sender (at most ``max_senders``), so a second
    stream cannot make the server's frames look stale.
    """

    def __init__(self, server_address: str = "127.0.0.1", local_address: str = "127.0.0.1",
                 multicast_address: str = DEFAULT_MULTICAST_ADDRESS, command_port: int = DEFAULT_COMMAND_PORT,
                 data_port: int = DEFAULT_DATA_PORT, use_multicast: bool = True, version=None,
                 request_version=None, keepalive_interval: float = 1.0, connect_retry_interval: float = 0.25,
                 max_datagrams_per_call: int = 256, reorder_window: int = 16, max_gap: int = 1_000_000,
                 receive_buffer: int = 1 << 20, filter_source: bool = False, source_port: int = 0,
                 max_senders: int = 16):
        self.server_address = server_address
        self.local_address = local_address
        self.multicast_address = multicast_address
        self.command_port = int(command_port)
        self.data_port = int(data_port)
        self.use_multicast = bool(use_multicast)
        self.version = None if version is None else normalize_version(version)
        self.request_version = request_version
        self.keepalive_interval = float(keepalive_interval)
        self.connect_retry_interval = float(connect_retry_interval)
        self.max_datagrams_per_call = int(max_datagrams_per_call)
        self.reorder_window = int(reorder_window)
        self.max_gap = int(max_gap)
        self.receive_buffer = int(receive_buffer)
        self.filter_source = bool(filter_source)
        self.source_port = int(source_port)
        self.max_senders = max(1, int(max_senders))
        self.last_foreign_sender: str | None = None
        self._last_fn: dict = {}                 # sender (ip, port) -> last frame number (insertion = recency)
        self.server_info: ServerInfo | None = None
        self.command_socket: socket.socket | None = None
        self.data_socket: socket.socket | None = None
        self.messages = deque(maxlen=100)        # (message id, object) of non-frame messages
        self.last_error: str | None = None
        self.last_frame_number: int | None = None
        self.notes: list = []                    # socket setup remarks (e.g. unicast data port busy)
        self._server_ip = None
        self._last_keepalive = 0.0
        self._connect_sent = False
        self.stats = self._new_stats()

    @staticmethod
    def _new_stats() -> dict:
        return {"received": 0, "parsed": 0, "rejected": {}, "dropped_frames": 0, "stale_frames": 0,
                "stream_resets": 0, "models_changed": 0, "messages": 0, "keepalives_sent": 0,
                "socket_errors": 0, "trailing_bytes_frames": 0, "superseded_frames": 0,
                "discarded_during_connect": 0, "foreign_packets": 0}

    def reset_stats(self):
        self.stats = self._new_stats()

    # -- sockets -----------------------------------------------------------------------------------------
    @property
    def is_open(self) -> bool:
        return self.command_socket is not None

    def open(self):
        """Create the sockets (done by :meth:`connect` / :meth:`receive` when needed)."""
        if self.command_socket is not None:
            return
        self._server_ip = socket.gethostbyname(self.server_address)
        cmd = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
        try:
            cmd.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.receive_buffer)
            cmd.bind((self.local_address, 0))
            cmd.setblocking(False)
        except OSError:
            cmd.close()
            raise
        data = None
        try:
            data = self._open_data_socket()
        except OSError:
            cmd.close()
            raise
        self.command_socket, self.data_socket = cmd, data

    def _open_data_socket(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.receive_buffer)
            if self.use_multicast:
                try:   # binding the group address filters other traffic on the port (Linux); else any
                    s.bind((self.multicast_address, self.data_port))
                except OSError:
                    s.bind(("", self.data_port))
                mreq = socket.inet_aton(self.multicast_address) + socket.inet_aton(self.local_address)
                s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
            else:
                try:
                    s.bind((self.local_address, self.data_port))
                except OSError as exc:
                    self.notes.append(f"unicast data port {self.data_port} unavailable ({exc}); "
                                      "frames are read from the command socket only")
                    s.close()
                    return None
            s.setblocking(False)
        except OSError:
            s.close()
            raise
        return s

    def _sockets(self) -> list:
        return [s for s in (self.command_socket, self.data_socket) if s is not None]

    def close(self):
        """Say goodbye to a unicast server (best effort) and close the sockets."""
        if self.command_socket is not None and not self.use_multicast and self._connect_sent:
            self._send(build_disconnect())
        for s in self._sockets():
            try:
                s.close()
            except OSError:
                pass
        self.command_socket = self.data_socket = None
        self._connect_sent = False

    def __enter__(self):
        self.open()
        return self

    def __exit__(self, *exc):
        self.close()

    def _send(self, packet: bytes) -> bool:
        try:
            self.command_socket.sendto(packet, (self._server_ip, self.command_port))
            return True
        except OSError as exc:
            self.stats["socket_errors"] += 1
            self.last_error = f"send: {exc}"
            return False

    def send_request(self, command: str) -> bool:
        """Send a NAT_REQUEST command string (e.g. "TimelinePlay"); replies land in :attr:`messages`."""
        self.open()
        return self._send(build_request(command))

    # -- connect -----------------------------------------------------------------------------------------
    def connect(self, timeout: float = 2.0) -> ServerInfo | None:
        """Send NAT_CONNECT (repeated every ``connect_retry_interval``) and wait for NAT_SERVERINFO.

        Returns the server info (and sets :attr:`version` from it). Without a reply: returns None if a
        ``version`` is configured, else raises ``TimeoutError``. Frames arriving meanwhile are discarded.
        """
        self.open()
        deadline = time.monotonic() + max(0.0, float(timeout))
        next_send = 0.0
        got = None
        while True:
            now = time.monotonic()
            if now >= next_send:
                if self._send(build_connect(self.request_version)):
                    self._connect_sent = True
                    self._last_keepalive = now
                next_send = now + self.connect_retry_interval
            for s in self._sockets():
                for _ in range(self.max_datagrams_per_call):
                    item = self._recv(s)
                    if item is None:
                        break
                    data = item[0]
                    self.stats["received"] += 1
                    if self._foreign(data, item[1]):
                        continue
                    try:
                        mid, obj = parse_packet(data, self.version)
                    except NatNetError as exc:
                        if exc.reason == "no_version":
                            self.stats["discarded_during_connect"] += 1
                        else:
                            self._reject(exc)
                        continue
                    if mid == NAT_SERVERINFO:
                        self._server_info(obj)
                        got = obj
                    elif mid == NAT_FRAMEOFDATA:
                        self.stats["discarded_during_connect"] += 1
                    else:
                        self._message(mid, obj)
            if got is not None:
                return got
            now = time.monotonic()
            if now >= deadline:
                break
            self._wait(min(deadline, next_send) - now)
        if self.version is not None:
            return None
        raise TimeoutError(f"no NAT_SERVERINFO from {self.server_address}:{self.command_port} within "
                           f"{timeout:.2f} s and no NatNet version configured")

    def _server_info(self, info: ServerInfo):
        self.server_info = info
        self.stats["messages"] += 1
        try:
            self.version = normalize_version(info.natnet_version)
        except NatNetError as exc:
            self.last_error = f"server reports NatNet {info.natnet_version}: {exc}"

    # -- receive -----------------------------------------------------------------------------------------
    def _wait(self, seconds: float):
        socks = self._sockets()
        if seconds <= 0 or not socks:
            return
        try:
            select.select(socks, [], [], seconds)
        except (OSError, ValueError):
            time.sleep(min(seconds, 0.01))

    def _recv(self, s):
        """(data, address, perf_counter_ns at arrival) or None."""
        try:
            data, addr = s.recvfrom(65536)
            return data, addr, time.perf_counter_ns()
        except (BlockingIOError, InterruptedError):
            return None
        except OSError as exc:             # e.g. ICMP port unreachable reported on Windows
            self.stats["socket_errors"] += 1
            self.last_error = f"recv: {exc}"
            return None

    def _maybe_keepalive(self, now: float):
        if (not self.use_multicast and self._connect_sent and self.keepalive_interval > 0
                and now - self._last_keepalive >= self.keepalive_interval):
            self._last_keepalive = now
            if self._send(build_keepalive()):
                self.stats["keepalives_sent"] += 1

    def _reject(self, exc: NatNetError):
        rej = self.stats["rejected"]
        rej[exc.reason] = rej.get(exc.reason, 0) + 1
        self.last_error = str(exc)

    def _message(self, mid, obj):
        self.stats["messages"] += 1
        self.messages.append((mid, obj))

    def _foreign(self, data: bytes, addr) -> bool:
        """With the sender filter on: True (and counted) for a datagram that is not from the server."""
        if not self.filter_source or not addr:
            return False
        ok = addr[0] == self._server_ip
        if ok and self.source_port and len(data) >= 2 and data[0] | data[1] << 8 == NAT_FRAMEOFDATA:
            ok = addr[1] == self.source_port
        if not ok:
            self.stats["foreign_packets"] += 1
            self.last_foreign_sender = f"{addr[0]}:{addr[1]}"
        return not ok

    def _accept(self, frame: MocapFrame) -> bool:
        """Frame-number bookkeeping per sender; False for a stale (duplicate / late) frame."""
        key = frame.sender
        fn, last = frame.frame_number, self._last_fn.pop(key, None)
        if last is not None:
            if fn > last + 1:
                gap = fn - last - 1
                if gap <= self.max_gap:
                    self.stats["dropped_frames"] += gap
                else:
                    self.stats["stream_resets"] += 1
            elif fn <= last:
                if last - fn <= self.reorder_window:
                    self.stats["stale_frames"] += 1
                    self._last_fn[key] = last
                    return False
                self.stats["stream_resets"] += 1
        self._last_fn[key] = fn
        while len(self._last_fn) > self.max_senders:       # forget the sender heard from least recently
            self._last_fn.pop(next(iter(self._last_fn)))
        self.last_frame_number = fn
        return True

    def _handle(self, data: bytes, addr, t_ns: int) -> MocapFrame | None:
        st = self.stats
        st["received"] += 1
        if self._foreign(data, addr):
            return None
        try:
            mid, obj = parse_packet(data, self.version)
        except NatNetError as exc:
            self._reject(exc)
            return None
        if mid == NAT_FRAMEOFDATA:
            obj.receive_time_ns = t_ns
            obj.sender = tuple(addr) if addr else None
            if not self._accept(obj):
                return None
            st["parsed"] += 1
            if obj.models_changed:
                st["models_changed"] += 1
            if obj.trailing_bytes:
                st["trailing_bytes_frames"] += 1
            return obj
        if mid == NAT_SERVERINFO:
            self._server_info(obj)
        else:
            self._message(mid, obj)
        return None

    def receive(self, timeout: float = 0.0) -> MocapFrame | None:
        """The next frame, waiting up to ``timeout`` seconds (0: only what is already queued); None if
        nothing arrived. Handles at most ``max_datagrams_per_call`` datagrams per call, so a flood cannot
        hold the caller; sends the unicast keep-alive when due."""
        self.open()
        deadline = time.monotonic() + max(0.0, float(timeout))
        budget = self.max_datagrams_per_call
        while True:
            now = time.monotonic()
            self._maybe_keepalive(now)
            idle = True
            for s in self._sockets():
                item = self._recv(s)
                if item is None:
                    continue
                idle = False
                budget -= 1
                frame = self._handle(*item)
                if frame is not None:
                    return frame
                if budget <= 0:
                    return None
            if idle:
                now = time.monotonic()
                if now >= deadline:
                    return None
                wait = deadline - now
                if not self.use_multicast and self._connect_sent and self.keepalive_interval > 0:
                    wait = min(wait, max(0.0, self._last_keepalive + self.keepalive_interval - now))
                self._wait(wait)

    def receive_latest(self, timeout: float = 0.0) -> MocapFrame | None:
        """Like :meth:`receive`, then drains what is queued and returns the newest frame (older ones are
        counted as ``superseded_frames``) - for a consumer that only wants the current pose."""
        frame = self.receive(timeout)
        if frame is None:
            return None
        for _ in range(self.max_datagrams_per_call):
            nxt = self.receive(0.0)
            if nxt is None:
                break
            self.stats["superseded_frames"] += 1
            frame = nxt
        return frame
