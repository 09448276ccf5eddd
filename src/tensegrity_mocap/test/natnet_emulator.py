"""A NatNet server emulator (a stand-in for Motive) for tests, benchmarks and demos; loopback UDP.

It answers NAT_CONNECT on its command port with NAT_SERVERINFO (NatNet 3.0, 3.1, 4.0 or 4.1) and streams
NAT_FRAMEOFDATA at ``rate`` Hz:

* unicast (default): to every client that sent NAT_CONNECT - at the address the request came from
  (``unicast_target="command"``, what the SDK's Python sample expects) or at the client's IP and the
  data port (``unicast_target="data_port"``). A client is forgotten after ``client_timeout`` seconds
  without NAT_CONNECT / NAT_KEEPALIVE (like Motive) and on NAT_DISCONNECT;
* multicast (``multicast=True``): to ``multicast_address:data_port`` on the loopback interface.

Frames come from a :class:`MarkerSource` (labeled-marker trajectories ``(T, k, 3)`` with marker ids,
optional rigid bodies; :func:`natnet_synthetic.natnet_source` makes one from a synthetic take, with unlabeled markers,
per-frame ids and dropped frames) or any callable ``source(index) -> MocapFrame``. Camera stamps use a
``clock_hz`` (10 MHz) clock driven by ``time.perf_counter_ns()``: ``stamp_transmit`` is taken just before the
packet is built and sent, mid-exposure is ``system_latency`` earlier, so a client on the same machine can
measure the transport latency as ``perf_counter_ns() - stamp_transmit * 1e9 / clock_hz``.

Fault knobs (frame *index* ``i`` = ``frame_number - start_frame``, 0-based; end frames exclusive):

* ``noise``: gaussian noise [m] on every marker position;
* ``occlusions``: ``(marker index, start, end)``. ``occlusion_mode="absent"`` (default) leaves the marker
  out of the labeled-marker list - Motive's labeled list holds the markers reconstructed in that frame,
  so a passive marker the cameras lose simply disappears; ``"flagged"`` keeps it with params bit 0
  (occluded) set and a NaN position, the form in which a consumer sees the occluded bit. Either way the
  marker's row in the marker set (``marker_set_name``) is NaN (this emulator's convention);
* ``relabels``: ``(marker index, from frame, new NatNet id)`` - the marker gets a new id from that frame
  on (Motive's relabeling / a swap of labels);
* ``drop_frames`` (indices) / ``drop_probability``: frames built but not sent (a gap in frame numbers);
* ``malformed_every``: after every N-th frame one deliberately broken datagram is also sent, cycling
  through :data:`MALFORMED_KINDS`; each is certain to be rejected by a correct parser;
* ``bitflip_fraction`` of the frame datagrams get ``bitflip_bits`` random bit flips (seeded); frames
  ``backward_timestamps`` (indices) go back ``backward_by`` s in time (frame numbers still increase) and
  their markers move by ``backward_offset`` [m]. A spoofing sender: :class:`natnet_faults.SpoofSender`.

Command line (a demo server streaming an engine trajectory's physical nodes as labeled markers, a
Motive CSV take or a synthetic six-bar take)::

    python natnet_emulator.py --trajectory runs/twin/trajectory/trajectory.npz --rate 120 --version 4.1 \
        [--y-up] [--multicast] [--noise 0.0005] [--rigid-bodies 3] [--malformed-every 0] [--duration 0]
    python natnet_emulator.py --csv take.csv            # at the take's frame rate, looped
(``--y-up`` converts ROS (x, y, z) to Motive's Y-up (x, z, -y)). ``--csv``: every row of the take is a
frame (its frame number, relative to the first, after ``start_frame`` 1), labeled markers with their ID
cells ("1:3"), unlabeled ones ("Unlabeled 1008": asset 0, id 1008) left out of the frame in a gap, the
take's rigid bodies; positions as the CSV gives them (Motive's Y-up, metres): see ``natnet_csv.py``.
"""
from __future__ import annotations

import argparse
import ipaddress
import math
import os
import select
import socket
import struct
import sys
import threading
import time
import zipfile
import zlib
from dataclasses import replace

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:                    # natnet_faults sits next to this file
    sys.path.insert(0, _HERE)
from natnet_faults import MALFORMED_KINDS, flip_bits, malformed_packet, nn  # noqa: E402, F401  (it also finds the package in a bare source tree)

APP_VERSIONS = {(3, 0): (2, 0, 0, 0), (3, 1): (2, 2, 0, 0), (4, 0): (3, 0, 0, 0), (4, 1): (3, 1, 0, 0)}
LABELED_PARAMS = nn.MARKER_PC_SOLVED | nn.MARKER_HAS_MODEL          # a reconstructed asset marker


def ros_to_motive(P) -> np.ndarray:
    """ROS z-up (x, y, z) -> Motive Y-up (x, z, -y)."""
    P = np.asarray(P, float)
    return np.stack([P[..., 0], P[..., 2], -P[..., 1]], axis=-1)


class MarkerSource:
    """Labeled markers (and optional rigid bodies) from arrays.

    positions: (T, k, 3) m; marker_ids: (k,) NatNet ids (default ``make_marker_id(model_id, j + 1)``) or
    (T, k) per-frame ids; t: (T,) s - if given, frame i shows the sample at time ``i / rate`` (looping
    over the duration), else sample ``i % T``; rigid_bodies: (T, r, 7) [x y z qx qy qz qw] with
    rigid_body_ids (r,).

    ``missing="keep"`` (default) sends NaN positions as they are. ``missing="motive"`` does what Motive
    does with a marker that is not reconstructed (NaN row): a marker of an asset (model id > 0) is sent
    with the occluded flag (params bit 0, NaN position), an unlabeled one (model id 0) is left out of the
    frame; unlabeled markers carry params "point-cloud solved | unlabeled". ``frame_numbers`` (T,) (only
    with ``t=None``): the frame numbers of the rows, relative to the first; they may jump (frames dropped
    by the server), and :class:`NatNetEmulator` then numbers and times its frames by them.
    """

    def __init__(self, positions, marker_ids=None, t=None, rigid_bodies=None, rigid_body_ids=None,
                 model_id: int = 1, marker_size: float = 0.010, residual: float = 0.0002,
                 missing: str = "keep", frame_numbers=None):
        self.positions = np.asarray(positions, float)
        if self.positions.ndim != 3 or self.positions.shape[2] != 3:
            raise ValueError(f"positions must be (T, k, 3), got {self.positions.shape}")
        T, k, _ = self.positions.shape
        if marker_ids is None:
            marker_ids = [nn.make_marker_id(model_id, j + 1) for j in range(k)]
        ids = np.asarray(marker_ids, np.int64)
        self.marker_ids = ids.reshape(T, k) if ids.ndim == 2 else ids.reshape(k)
        self.t = None if t is None else np.asarray(t, float).reshape(T)
        self.rigid_bodies = None if rigid_bodies is None else np.asarray(rigid_bodies, float)
        if self.rigid_bodies is not None:
            r = self.rigid_bodies.shape[1]
            self.rigid_body_ids = list(range(1, r + 1)) if rigid_body_ids is None else list(rigid_body_ids)
        self.marker_size, self.residual = float(marker_size), float(residual)
        if missing not in ("keep", "motive"):
            raise ValueError("missing must be 'keep' or 'motive'")
        self.missing = missing
        self.frame_numbers = None
        if frame_numbers is not None:
            if self.t is not None:
                raise ValueError("frame_numbers need t=None (rows are frames)")
            fn = np.asarray(frame_numbers, np.int64).reshape(T)
            if T > 1 and np.any(np.diff(fn) <= 0):
                raise ValueError("frame_numbers must increase")
            self.frame_numbers = fn - fn[0]

    def __len__(self):
        return len(self.positions)

    def sample(self, index: int, rate: float) -> int:
        T = len(self.positions)
        if self.t is None or T < 2 or rate <= 0:
            return index % T
        t0, dur = self.t[0], self.t[-1] - self.t[0]
        tt = t0 + ((index / rate) % dur if dur > 0 else 0.0)
        return int(min(np.searchsorted(self.t, tt, side="right") - 1, T - 1))

    def frame_offset(self, index: int) -> int:
        """Frame number of emulator frame ``index`` relative to the first (loops continue the count)."""
        if self.frame_numbers is None:
            return index
        T = len(self.frame_numbers)
        return (index // T) * (int(self.frame_numbers[-1]) + 1) + int(self.frame_numbers[index % T])

    def __call__(self, index: int, rate: float = 0.0) -> nn.MocapFrame:
        s = self.sample(index, rate)
        ids = (self.marker_ids[s] if self.marker_ids.ndim == 2 else self.marker_ids).copy()
        P = self.positions[s].copy()
        k = len(ids)
        params = np.full(k, LABELED_PARAMS, np.int64)
        if self.missing == "motive":
            unlabeled = (ids >> 16) & 0xFFFF == 0
            params[unlabeled] = nn.MARKER_PC_SOLVED | nn.MARKER_UNLABELED
            gone = ~np.isfinite(P).all(axis=1)
            P[gone] = np.nan
            params[gone] = (params[gone] | nn.MARKER_OCCLUDED) & ~nn.MARKER_PC_SOLVED
            keep = ~(gone & unlabeled)
            ids, P, params, k = ids[keep], P[keep], params[keep], int(keep.sum())
        f = nn.MocapFrame(labeled_ids=ids, labeled_positions=P, labeled_sizes=np.full(k, self.marker_size),
                          labeled_params=params, labeled_residuals=np.full(k, self.residual))
        if self.rigid_bodies is not None:
            f.rigid_bodies = [nn.RigidBody(rid, rb[:3], rb[3:7], self.residual, bool(np.isfinite(rb).all()))
                              for rid, rb in zip(self.rigid_body_ids, self.rigid_bodies[s])]
        return f


def plate_rigid_bodies(positions, n_bodies: int) -> np.ndarray:
    """(T, n_bodies, 7) stand-in rigid bodies: centroids of consecutive marker groups, identity rotation."""
    P = np.asarray(positions, float)
    groups = np.array_split(np.arange(P.shape[1]), max(1, n_bodies))
    out = np.zeros((P.shape[0], len(groups), 7))
    for j, g in enumerate(groups):
        out[:, j, :3] = P[:, g].mean(axis=1)
        out[:, j, 6] = 1.0
    return out


def free_udp_port() -> int:
    """A UDP port on 127.0.0.1 that is free right now (for tests and benchmarks)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _udp(bind_addr) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    s.bind(bind_addr)
    return s


class NatNetEmulator:
    """See the module docstring. ``start()`` runs it in a background thread; ``stop()`` ends it. With
    ``rate=0`` nothing is streamed automatically and :meth:`send_frame` sends frames on demand."""

    def __init__(self, source, version=(4, 1), rate: float = 120.0, address: str = "127.0.0.1",
                 command_port: int = 0, data_port: int = nn.DEFAULT_DATA_PORT, multicast: bool = False,
                 multicast_address: str = nn.DEFAULT_MULTICAST_ADDRESS, unicast_target: str = "command",
                 app_name: str = "Motive", app_version=None, clock_hz: int = 10_000_000,
                 system_latency: float = 0.004, start_frame: int = 1, marker_set_name: str | None = "all",
                 noise: float = 0.0, occlusions=(), occlusion_mode: str = "absent", relabels=(),
                 drop_frames=(), drop_probability: float = 0.0, malformed_every: int = 0,
                 client_timeout: float | None = 10.0, answer_connect: bool = True, seed: int = 0,
                 max_frames: int | None = None, bitflip_fraction: float = 0.0, bitflip_bits: int = 1,
                 backward_timestamps=(), backward_by: float = 1.0, backward_offset=(0.0, 0.0, 0.0)):
        self.source = source
        self.version = nn.normalize_version(version)
        self.rate = float(rate)
        self.address = address
        self.multicast = bool(multicast)
        self.multicast_address = multicast_address
        if unicast_target not in ("command", "data_port"):
            raise ValueError("unicast_target must be 'command' or 'data_port'")
        self.unicast_target = unicast_target
        self.app_name = app_name
        self.app_version = app_version or APP_VERSIONS.get(self.version, (3, 1, 0, 0))
        self.clock_hz = int(clock_hz)
        self.system_latency = float(system_latency)
        self.start_frame = int(start_frame)
        self.marker_set_name = marker_set_name
        self.noise = float(noise)
        self.occlusions = [tuple(int(x) for x in o) for o in occlusions]
        if occlusion_mode not in ("absent", "flagged"):
            raise ValueError("occlusion_mode must be 'absent' or 'flagged'")
        self.occlusion_mode = occlusion_mode
        self.relabels = sorted((int(a), int(b), int(c)) for a, b, c in relabels)
        self.drop_frames = {int(i) for i in drop_frames}
        self.drop_probability = float(drop_probability)
        self.malformed_every = int(malformed_every)
        self.client_timeout = client_timeout
        self.answer_connect = bool(answer_connect)
        self.max_frames = max_frames
        self.rng = np.random.default_rng(seed)
        self.bitflip_fraction, self.bitflip_bits = float(bitflip_fraction), int(bitflip_bits)
        self.flip_rng = np.random.default_rng([seed, 1])      # own stream: noise etc. stay as without flips
        self.backward = ({int(i) for i in backward_timestamps}, float(backward_by),
                         np.asarray(backward_offset, float))          # indices, s, m
        self.command_socket = _udp((address, int(command_port)))
        self.command_port = self.command_socket.getsockname()[1]
        self.data_port = int(data_port)
        self.send_socket = _udp((address, 0))
        if self.multicast:
            self.send_socket.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(address))
            self.send_socket.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
            self.send_socket.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
        self.clients: dict = {}               # (ip, port) -> last seen (monotonic)
        self.index = 0                        # next frame index
        self.counters = {"frames_built": 0, "frames_sent": 0, "frames_dropped": 0, "malformed_sent": 0,
                         "datagrams_sent": 0, "connects": 0, "keepalives": 0, "disconnects": 0,
                         "requests": 0, "bad_commands": 0, "send_errors": 0, "frames_corrupted": 0,
                         "frames_backward": 0}
        self.sent_frame_numbers: list = []
        self._malformed_i = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        self.streaming = self.rate > 0

    # -- frames -----------------------------------------------------------------------------------------
    def ticks(self) -> int:
        return time.perf_counter_ns() * self.clock_hz // 1_000_000_000

    def make_frame(self, index: int) -> nn.MocapFrame:
        """Frame ``index`` from the source with the faults applied (no timestamps yet)."""
        src = self.source
        marker_source = hasattr(src, "frame_offset")    # a MarkerSource (also one made by a module that imported
        f = src(index, self.rate) if marker_source else src(index)    # this file as natnet_emulator, not __main__)
        number = src.frame_offset(index) if marker_source else index
        f = replace(f, frame_number=self.start_frame + number,
                    timestamp=number / self.rate if self.rate > 0 else 0.0)
        ids = np.asarray(f.labeled_ids, np.int64).copy()
        P = np.asarray(f.labeled_positions, float).reshape(-1, 3).copy()
        params = np.asarray(f.labeled_params, np.int64).reshape(-1).copy()
        k = len(ids)
        sizes = np.broadcast_to(np.asarray(f.labeled_sizes, float), (k,)).copy() if k else np.zeros(0)
        res = np.broadcast_to(np.asarray(f.labeled_residuals, float), (k,)).copy() if k else np.zeros(0)
        if len(params) != k:
            params = np.full(k, LABELED_PARAMS, np.int64)
        if self.noise > 0 and k:
            P = P + self.rng.normal(0.0, self.noise, P.shape)
        if index in self.backward[0]:
            f.timestamp -= self.backward[1]
            P = P + self.backward[2]
        for j, start, new_id in self.relabels:
            if 0 <= j < k and index >= start:
                ids[j] = new_id
        occ = np.zeros(k, bool)
        for j, start, end in self.occlusions:
            if 0 <= j < k and start <= index < end:
                occ[j] = True
        if self.marker_set_name is not None and k:
            ms = P.copy()
            ms[occ] = np.nan
            f.marker_sets = {self.marker_set_name: ms}
        if self.occlusion_mode == "flagged":
            P[occ] = np.nan
            params[occ] = (params[occ] | nn.MARKER_OCCLUDED) & ~nn.MARKER_PC_SOLVED
            keep = np.ones(k, bool)
        else:
            keep = ~occ
        f.labeled_ids, f.labeled_positions, f.labeled_params = ids[keep], P[keep], params[keep]
        f.labeled_sizes, f.labeled_residuals = sizes[keep], res[keep]
        return f

    def _stamp(self, f: nn.MocapFrame) -> nn.MocapFrame:
        tx = self.ticks()
        lat = round(self.system_latency * self.clock_hz)
        f.stamp_transmit = tx
        f.stamp_camera_mid_exposure = max(tx - lat, 0)
        f.stamp_data_received = max(tx - lat // 4, 0)
        if self.version >= (4, 1):
            f.precision_timestamp = time.time()
        return f

    def _targets(self) -> list:
        if self.multicast:
            return [(self.multicast_address, self.data_port)]
        with self._lock:
            clients = list(self.clients)
        if self.unicast_target == "data_port":
            return sorted({(ip, self.data_port) for ip, _ in clients})
        return clients

    def _sendto(self, packet: bytes, targets) -> int:
        n = 0
        for addr in targets:
            try:
                self.send_socket.sendto(packet, addr)
                n += 1
            except OSError:
                self.counters["send_errors"] += 1
        self.counters["datagrams_sent"] += n
        return n

    def send_frame(self, index: int | None = None) -> bool:
        """Build frame ``index`` (default: the next one) and send it unless it is to be dropped; then the
        malformed datagram if one is due. Returns whether the frame was sent."""
        with self._lock:
            if index is None:
                index = self.index
            self.index = max(self.index, index + 1)
        f = self.make_frame(index)
        self.counters["frames_built"] += 1
        targets = self._targets()
        drop = index in self.drop_frames or (self.drop_probability > 0 and
                                             self.rng.random() < self.drop_probability)
        sent = False
        if drop:
            self.counters["frames_dropped"] += 1
        elif targets:
            packet = nn.build_frame(self._stamp(f), self.version)
            corrupt = self.bitflip_fraction > 0 and self.flip_rng.random() < self.bitflip_fraction
            if corrupt:
                packet = flip_bits(packet, self.flip_rng, self.bitflip_bits)
            sent = self._sendto(packet, targets) > 0
            if sent:
                self.counters["frames_sent"] += 1
                self.counters["frames_corrupted"] += corrupt
                self.counters["frames_backward"] += index in self.backward[0]
                self.sent_frame_numbers.append(f.frame_number)
        if self.malformed_every > 0 and (index + 1) % self.malformed_every == 0 and targets:
            kind = MALFORMED_KINDS[self._malformed_i % len(MALFORMED_KINDS)]
            self._malformed_i += 1
            self._sendto(self.malformed_packet(kind, f), targets)
            self.counters["malformed_sent"] += 1
        return sent

    def malformed_packet(self, kind: str, f: nn.MocapFrame | None = None) -> bytes:
        """A datagram that a correct parser must reject (for the emulator's version), see natnet_faults."""
        return malformed_packet(self, kind, f)

    # -- commands ---------------------------------------------------------------------------------------
    def server_info_packet(self) -> bytes:
        return nn.build_server_info(self.app_name, self.app_version, self.version + (0, 0), self.clock_hz,
                                    self.data_port, self.multicast, self.multicast_address)

    def handle_commands(self, timeout: float = 0.0) -> int:
        """Answer pending command datagrams (waiting up to ``timeout`` s for the first); returns how many."""
        n = 0
        try:
            ready, _, _ = select.select([self.command_socket], [], [], max(0.0, timeout))
        except (OSError, ValueError):
            return 0
        while ready:
            try:
                self.command_socket.setblocking(False)
                data, addr = self.command_socket.recvfrom(65536)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break
            n += 1
            self._command(data, addr)
        self._expire_clients()
        return n

    def _command(self, data: bytes, addr):
        if len(data) < 4:
            self.counters["bad_commands"] += 1
            return
        mid, _size = struct.unpack_from("<HH", data, 0)
        now = time.monotonic()
        if mid == nn.NAT_CONNECT:
            self.counters["connects"] += 1
            with self._lock:
                self.clients[addr] = now
            if self.answer_connect:
                self._reply(self.server_info_packet(), addr)
        elif mid == nn.NAT_KEEPALIVE:
            self.counters["keepalives"] += 1
            with self._lock:
                if addr in self.clients:
                    self.clients[addr] = now
        elif mid == nn.NAT_DISCONNECT:
            self.counters["disconnects"] += 1
            with self._lock:
                self.clients.pop(addr, None)
        elif mid == nn.NAT_REQUEST_MODELDEF:
            self._reply(struct.pack("<HHi", nn.NAT_MODELDEF, 4, 0), addr)     # no data descriptions
        elif mid == nn.NAT_REQUEST_FRAMEOFDATA:
            f = self._stamp(self.make_frame(max(self.index - 1, 0)))
            self._reply(nn.build_frame(f, self.version), addr)
        elif mid == nn.NAT_REQUEST:
            self.counters["requests"] += 1
            text = data[4:].split(b"\0", 1)[0].decode("utf-8", "replace")
            if text.startswith("Bitstream") and "," not in text:
                msg = f"Bitstream,{self.version[0]}.{self.version[1]}".encode() + b"\0"
                self._reply(struct.pack("<HH", nn.NAT_RESPONSE, len(msg)) + msg, addr)
            else:
                self._reply(struct.pack("<HH", nn.NAT_UNRECOGNIZED_REQUEST, 0), addr)
        else:
            self.counters["bad_commands"] += 1

    def _reply(self, packet: bytes, addr):
        try:
            self.command_socket.sendto(packet, addr)
        except OSError:
            self.counters["send_errors"] += 1

    def _expire_clients(self):
        if self.client_timeout is None:
            return
        now = time.monotonic()
        with self._lock:
            for addr in [a for a, t in self.clients.items() if now - t > self.client_timeout]:
                del self.clients[addr]

    # -- running ----------------------------------------------------------------------------------------
    def run(self, duration: float | None = None):
        """Serve commands and stream frames until ``stop()``, ``duration`` seconds or ``max_frames``."""
        t_end = None if not duration else time.monotonic() + duration
        period = 1.0 / self.rate if self.rate > 0 else None
        next_t = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            if t_end is not None and now >= t_end:
                break
            if self.max_frames is not None and self.index >= self.max_frames:
                self.streaming = False
            if period and self.streaming:
                if now >= next_t:
                    self.send_frame()
                    next_t += period
                    if now - next_t > 10 * period:      # fell far behind (paused process): resync
                        next_t = now + period
                    continue
                wait = next_t - now
            else:
                wait = 0.05
                next_t = now            # streaming (re)starts without a catch-up burst
            self.handle_commands(min(wait, 0.05))

    def start(self) -> NatNetEmulator:
        self._stop.clear()
        self._thread = threading.Thread(target=self.run, name="natnet-emulator", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None

    def close(self):
        self.stop()
        for s in (self.command_socket, self.send_socket):
            try:
                s.close()
            except OSError:
                pass

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()


# --- command line --------------------------------------------------------------------------------------
def _is_ipv4(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def load_trajectory(path, y_up: bool = False):
    """(t, positions (T, n_physical, 3), node names) from an engine ``trajectory.npz`` (file or directory).
    Raises ValueError naming the file if it is missing or not such a trajectory."""
    p = path
    if os.path.isdir(p):
        p = os.path.join(p, "trajectory.npz")
    if not os.path.isfile(p):
        raise ValueError(f"{p}: no such file (expected an engine trajectory.npz or its directory)")
    if not str(p).lower().endswith(".npz"):
        raise ValueError(f"{p}: expected an engine trajectory.npz or its directory (trajectory.csv is not read)")
    try:
        with np.load(p, allow_pickle=False) as d:
            n = int(d["n_physical"])
            t, P = np.asarray(d["t"], float), np.asarray(d["nodes"], float)[:, :n]
            names = [str(s) for s in d["node_names"][:n]] if "node_names" in d else [f"node{j}" for j in range(n)]
    except (OSError, EOFError, ValueError, KeyError, IndexError, TypeError, zipfile.BadZipFile, zlib.error) as e:
        reason = e.args[0] if isinstance(e, KeyError) and e.args else f"{type(e).__name__}: {e}"
        raise ValueError(f"{p}: not an engine trajectory.npz ({reason})") from None
    if P.ndim != 3 or P.shape[0] == 0 or P.shape[1] == 0 or P.shape[2] != 3 or t.shape != (len(P),):
        raise ValueError(f"{p}: not an engine trajectory.npz (nodes {P.shape}, t {t.shape}: expected (T, n, 3) "
                         "and (T,) with T, n >= 1)")
    if y_up:
        P = ros_to_motive(P)
    return t, P, names


def _number(lo: float, hi: float = math.inf, positive: bool = False, kind=float):
    """An argparse type: a finite ``kind`` in [lo, hi] (``positive``: also > 0)."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {'an integer' if kind is int else 'a number'}, "
                                             f"got {text!r}") from None
        if not (math.isfinite(value) and lo <= value <= hi and (value > 0 or not positive)):
            want = "> 0" if positive else f">= {lo:g}" if hi == math.inf else f"in [{lo:g}, {hi:g}]"
            raise argparse.ArgumentTypeError(f"must be {want}, got {text!r}")
        return value
    return parse


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--trajectory", help="engine trajectory.npz (or its directory)")
    what.add_argument("--csv", metavar="TAKE.csv", help="a Motive CSV take, streamed at its frame rate (looped)")
    what.add_argument("--six-bar", type=_number(0, kind=int), metavar="SEED",
                      help="a synthetic six-bar take (tensegrity_mocap.synthetic, seed SEED: unlabeled markers "
                           "renamed after gaps, 2 strays, a payload asset id 2, occlusions, dropped frames) "
                           "of --take-duration s, looped")
    ap.add_argument("--take-duration", type=_number(0, positive=True), default=20.0,
                    help="length of the --six-bar take [s]")
    ap.add_argument("--rate", type=_number(0, positive=True), default=None,
                    help="frames per second (default: a --csv take's frame rate, else 120)")
    ap.add_argument("--version", default="4.1", choices=["3.0", "3.1", "4.0", "4.1"])
    ap.add_argument("--y-up", action="store_true", help="convert ROS (x, y, z) to Motive Y-up (x, z, -y)")
    ap.add_argument("--address", default="127.0.0.1", help="address to serve on (default loopback)")
    ap.add_argument("--command-port", type=_number(0, 65535, kind=int), default=nn.DEFAULT_COMMAND_PORT,
                    help=f"UDP port for commands (default {nn.DEFAULT_COMMAND_PORT}; 0: any free port)")
    ap.add_argument("--data-port", type=_number(1, 65535, kind=int), default=nn.DEFAULT_DATA_PORT)
    ap.add_argument("--multicast", action="store_true", help="stream to the multicast group")
    ap.add_argument("--multicast-address", default=nn.DEFAULT_MULTICAST_ADDRESS)
    ap.add_argument("--unicast-target", default="command", choices=["command", "data_port"])
    ap.add_argument("--model-id", type=_number(0, 65535, kind=int), default=1,
                    help="asset id in the high 16 bits of marker ids")
    ap.add_argument("--rigid-bodies", type=_number(0, kind=int), default=0,
                    help="stand-in rigid bodies (marker-group centroids)")
    ap.add_argument("--noise", type=_number(0), default=0.0, help="gaussian marker noise [m]")
    ap.add_argument("--drop-probability", type=_number(0, 1), default=0.0)
    ap.add_argument("--malformed-every", type=_number(0, kind=int), default=0)
    ap.add_argument("--duration", type=_number(0), default=0.0, help="seconds to run (0: until Ctrl-C)")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)
    if a.address.replace(".", "").isdigit() and not _is_ipv4(a.address):      # not looked up as a host name
        ap.error(f"argument --address: {a.address!r} is not an IPv4 address")
    if not (_is_ipv4(a.multicast_address) and ipaddress.IPv4Address(a.multicast_address).is_multicast):
        ap.error(f"argument --multicast-address: {a.multicast_address!r} is not an IPv4 multicast address "
                 "(224.0.0.0-239.255.255.255)")
    if a.csv is not None:
        from tensegrity_mocap.motive import read_motive_csv
        from natnet_csv import csv_source
        try:
            rec = read_motive_csv(a.csv)
            src = csv_source(rec)
        except (OSError, ValueError) as e:
            ap.error(f"argument --csv: {e}")
        a.rate = a.rate or rec.frame_rate
        P, names, rbs = src.positions, src.names, src.rigid_bodies
    elif a.six_bar is not None:
        a.rate = a.rate or 120.0
        from tensegrity_mocap.synthetic import make_capture, six_bar_robot
        cap = make_capture(six_bar_robot(seed=a.six_bar), duration=a.take_duration, rate=a.rate, seed=a.six_bar)
        from natnet_synthetic import natnet_source
        src, P, names, rbs = natnet_source(cap), cap.markers, list(cap.marker_names), None
    else:
        a.rate = a.rate or 120.0
        try:
            t, P, names = load_trajectory(a.trajectory, a.y_up)
        except ValueError as e:
            ap.error(f"argument --trajectory: {e}")
        if a.rigid_bodies > P.shape[1]:
            ap.error(f"argument --rigid-bodies: {a.rigid_bodies} is more than the trajectory's {P.shape[1]} markers")
        rbs = plate_rigid_bodies(P, a.rigid_bodies) if a.rigid_bodies > 0 else None
        src = MarkerSource(P, t=t, model_id=a.model_id, rigid_bodies=rbs)
    try:
        emu = NatNetEmulator(src, version=a.version, rate=a.rate, address=a.address, command_port=a.command_port,
                             data_port=a.data_port, multicast=a.multicast, multicast_address=a.multicast_address,
                             unicast_target=a.unicast_target, noise=a.noise, drop_probability=a.drop_probability,
                             malformed_every=a.malformed_every)
    except OSError as e:
        ap.error(f"argument --address/--command-port: cannot serve on {a.address}:{a.command_port}: "
                 f"{e.strerror or e}")
    mode = f"multicast {a.multicast_address}:{a.data_port}" if a.multicast else f"unicast ({a.unicast_target})"
    if not a.quiet:
        print(f"NatNet {a.version} emulator on {a.address}:{emu.command_port}, {mode}, {a.rate:g} Hz, "
              f"{P.shape[1]} markers ({', '.join(names[:4])}{', ...' if len(names) > 4 else ''}), "
              f"{0 if src.rigid_bodies is None else src.rigid_bodies.shape[1]} rigid bodies", flush=True)
    emu.start()
    t0 = time.monotonic()
    try:
        while emu._thread is not None and emu._thread.is_alive():
            time.sleep(1.0)
            if a.duration and time.monotonic() - t0 >= a.duration:
                break
            if not a.quiet:
                c = emu.counters
                print(f"  {time.monotonic() - t0:6.1f} s: {c['frames_sent']} frames sent, "
                      f"{len(emu.clients)} unicast client(s), {c['malformed_sent']} malformed", flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        emu.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
