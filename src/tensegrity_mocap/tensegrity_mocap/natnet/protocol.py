"""NatNet (OptiTrack Motive streaming protocol) packets and a poll-driven UDP client; pure Python + numpy.
This module holds the wire constants, the frame types and the parser; building packets is in
:mod:`tensegrity_mocap.natnet.build` and the client in :mod:`tensegrity_mocap.natnet.client` (the package
:mod:`tensegrity_mocap.natnet` exports all three: ``natnet.build_frame``, ``natnet.NatNetClient``).

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

import socket
import struct
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

#: wire structures (little endian), shared with the packet builder
HDR = struct.Struct("<HH")
I32 = struct.Struct("<i")
I32X2 = struct.Struct("<ii")
SUFFIX30 = struct.Struct("<IIdQQQ")      # timecode, sub, timestamp, mid-exposure, received, transmit
PREC = struct.Struct("<II")
TAIL = struct.Struct("<Hi")              # params (read unsigned: only bits matter), end of data
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


def has_sizes(v) -> bool:
    """NatNet 4.1 and later: every section count is followed by the section's size in bytes."""
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
        v = I32.unpack_from(self.buf, self.pos)[0]
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
        if has_sizes(v):
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

    if has_sizes(v):
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

    r.need(SUFFIX30.size, "frame suffix")
    (f.timecode, f.timecode_sub, f.timestamp, f.stamp_camera_mid_exposure, f.stamp_data_received,
     f.stamp_transmit) = SUFFIX30.unpack_from(buf, r.pos)
    r.pos += SUFFIX30.size
    if has_sizes(v):
        r.need(PREC.size, "precision timestamp")
        secs, frac = PREC.unpack_from(buf, r.pos)
        r.pos += PREC.size
        f.precision_timestamp_secs, f.precision_timestamp_frac = secs, frac
        if secs or frac:
            f.precision_timestamp = secs + frac / PRECISION_FRACTION_SCALE
    r.need(TAIL.size, "frame params and end-of-data tag")
    params, f.end_of_data = TAIL.unpack_from(buf, r.pos)
    r.pos += TAIL.size
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
    return HDR.unpack_from(mv, 0)


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
            return mid, I32.unpack_from(payload, 0)[0]
        return mid, _c_text(payload)
    if mid in MESSAGE_NAMES:
        return mid, payload
    raise NatNetError(f"unknown message id {mid}", "unknown_message")
