"""Hostile NatNet traffic for tests (used by natnet_emulator.py and the bridge tests); loopback UDP only.

* :func:`malformed_packet`: datagrams certain to be rejected by a correct parser (:data:`MALFORMED_KINDS`);
* :func:`flip_bits`: random bit flips anywhere in a datagram (header included), seeded by the caller's
  generator - what a corrupting link or a bad NIC does; some flipped frames still parse;
* :class:`SpoofSender`: a second sender on another loopback address (127.0.0.2 by default: all of
  127.0.0.0/8 is loopback on Linux) sending *valid* frames of the emulator's source, displaced by
  ``offset`` [m, Motive coordinates], with its own frame numbers and timestamps, at ``rate`` Hz (1 kHz) to
  wherever the emulator streams (its unicast clients or its multicast group). It stops by itself after
  ``duration`` s or ``max_frames`` frames.
"""
from __future__ import annotations

import socket
import struct
import threading
import time
from dataclasses import replace

import numpy as np

try:
    from tensegrity_mocap import natnet as nn
except ImportError:  # pragma: no cover - source tree without the package installed
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from tensegrity_mocap import natnet as nn


MALFORMED_KINDS = ("truncated", "huge_count", "negative_count", "garbage", "unknown_id", "short",
                   "size_overclaim", "unterminated_name")


def malformed_packet(emu, kind: str, f: nn.MocapFrame | None = None) -> bytes:
    """A datagram that a correct parser must reject, for emulator ``emu``'s version (``f``: the frame to
    break, default ``emu``'s frame 0); ``kind`` one of :data:`MALFORMED_KINDS`."""
    v = emu.version
    f = f or emu.make_frame(0)
    good = nn.build_frame(emu._stamp(replace(f)), v)
    hdr = struct.Struct("<HH")
    fn = struct.pack("<i", f.frame_number)
    sized = v >= (4, 1)
    if kind == "truncated":          # header unchanged, half the payload missing
        return good[:4 + (len(good) - 4) // 2]
    if kind == "huge_count":         # marker-set count that cannot fit
        body = fn + struct.pack("<i", 0x7FFFFFFF) + (struct.pack("<i", 16) if sized else b"") + bytes(16)
        return hdr.pack(nn.NAT_FRAMEOFDATA, len(body)) + body
    if kind == "negative_count":
        body = fn + struct.pack("<i", -3) + bytes(40)
        return hdr.pack(nn.NAT_FRAMEOFDATA, len(body)) + body
    if kind == "garbage":            # random bytes after a count of -1
        body = fn + struct.pack("<i", -1) + emu.rng.integers(0, 256, 200, dtype=np.uint8).tobytes()
        return hdr.pack(nn.NAT_FRAMEOFDATA, len(body)) + body
    if kind == "unknown_id":
        return hdr.pack(0x7777, 8) + bytes(8)
    if kind == "short":
        return b"\x07"
    if kind == "size_overclaim":     # header declares more bytes than the datagram has
        return hdr.pack(nn.NAT_FRAMEOFDATA, len(good) - 4 + 100) + good[4:]
    if kind == "unterminated_name":  # one marker set whose name never ends
        name = b"x" * 300
        body = fn + struct.pack("<i", 1) + (struct.pack("<i", len(name) + 4) if sized else b"") + \
            name + bytes(4)
        return hdr.pack(nn.NAT_FRAMEOFDATA, len(body)) + body
    raise ValueError(f"unknown malformed kind {kind!r}")


def flip_bits(packet: bytes, rng: np.random.Generator, n_bits: int = 1) -> bytes:
    """``packet`` with ``n_bits`` bits (chosen by ``rng``, possibly the same one twice) inverted."""
    out = bytearray(packet)
    for b in rng.integers(0, 8 * len(out), int(n_bits)):
        out[b >> 3] ^= 1 << (b & 7)
    return bytes(out)


class SpoofSender:
    """See the module docstring. ``emulator``: a running :class:`natnet_emulator.NatNetEmulator` (its
    source, version and targets are used); ``start_frame`` [-]: first frame number sent."""

    def __init__(self, emulator, address: str = "127.0.0.2", rate: float = 1000.0, offset=(0.0, 0.05, 0.0),
                 duration: float = 10.0, max_frames: int | None = None, start_frame: int = 500_000):
        self.emulator = emulator
        self.rate = float(rate)
        self.offset = np.asarray(offset, float).reshape(3)
        self.duration = float(duration)
        self.max_frames = max_frames
        self.start_frame = int(start_frame)
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
        self.socket.bind((address, 0))
        if emulator.multicast:
            self.socket.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(address))
            self.socket.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
        self.address = self.socket.getsockname()          # (ip, port) the spoofed datagrams come from
        self.sent = 0
        self._stop = threading.Event()
        self._thread = None

    def frame(self, i: int) -> nn.MocapFrame:
        """Spoofed frame ``i``: the emulator's source frame ``i``, displaced, own number and time."""
        emu = self.emulator
        f = emu.source(i, emu.rate) if hasattr(emu.source, "sample") else emu.source(i)
        return replace(f, frame_number=self.start_frame + i, timestamp=1000.0 + i / self.rate,
                       labeled_positions=np.asarray(f.labeled_positions, float) + self.offset)

    def run(self):
        period, t0, i = 1.0 / self.rate, time.monotonic(), 0
        while not self._stop.is_set() and time.monotonic() - t0 < self.duration:
            if self.max_frames is not None and i >= self.max_frames:
                break
            targets = self.emulator._targets()
            if targets:
                packet = nn.build_frame(self.emulator._stamp(self.frame(i)), self.emulator.version)
                for addr in targets:
                    try:
                        self.socket.sendto(packet, addr)
                        self.sent += 1
                    except OSError:
                        pass
                i += 1
            delay = t0 + i * period - time.monotonic() if targets else 0.01
            if delay > 0:
                self._stop.wait(delay)
            elif delay < -0.1:                       # fell far behind (loaded machine): no catch-up burst
                t0 = time.monotonic() - i * period

    def start(self) -> SpoofSender:
        self._stop.clear()
        self._thread = threading.Thread(target=self.run, name="natnet-spoof", daemon=True)
        self._thread.start()
        return self

    def close(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None
        self.socket.close()
