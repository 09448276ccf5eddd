"""The poll-driven NatNet UDP client (see the "Client" part of :mod:`tensegrity_mocap.natnet.protocol`'s
docstring)."""
from __future__ import annotations

import select
import socket
import time
from collections import deque

from tensegrity_mocap.natnet.protocol import (DEFAULT_COMMAND_PORT, DEFAULT_DATA_PORT, DEFAULT_MULTICAST_ADDRESS,
                                              NAT_FRAMEOFDATA, NAT_SERVERINFO, MocapFrame, NatNetError, ServerInfo,
                                              normalize_version, parse_packet)
from tensegrity_mocap.natnet.build import build_connect, build_disconnect, build_keepalive, build_request


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
