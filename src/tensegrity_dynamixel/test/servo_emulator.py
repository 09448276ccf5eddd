#!/usr/bin/env python3
"""Dynamixel Protocol 2.0 servo emulator on a pseudo-terminal.

The emulator opens a pty, answers Protocol 2.0 instruction packets on its master side from a background
thread and exposes a stable symlink (``ServoEmulator.path``) to the slave side, so that the real
``dynamixel_sdk`` (``PortHandler(path)``, ``setBaudRate(1000000)``) talks to it as to a U2D2 with servos.
The baud rate set by the client is irrelevant on a pty (Linux accepts B1000000 on a pty slave).

Usage in tests::

    with ServoEmulator({1: "L54-50-S290-R", 4: "M42-10-S260-R"}) as emu:
        port = PortHandler(emu.path)
        ...
        emu.servo(1).present          # inspect state
        emu.set_no_reply([4])         # inject faults

Command line (demo)::

    python servo_emulator.py [--servo ID:MODEL[:POSITION] ...] [--link PATH] [--trace]

Protocol 2.0 as emulated
------------------------
* packets ``FF FF FD 00 | ID | LEN_L LEN_H | INST | params | CRC_L CRC_H``; LEN counts the (stuffed)
  instruction, parameters and CRC; CRC-16 (polynomial 0x8005, initial value 0, not reflected) over
  everything from the first header byte to the byte before the CRC; byte stuffing (an extra ``FD``
  after every ``FF FF FD``) inside instruction + parameters in both directions;
* status packets ``INST 0x55``, then the error byte (bit 7: hardware alert, low bits: 1 result fail,
  2 instruction error, 3 CRC error, 4 data range, 5 data length, 6 data limit, 7 access error);
* PING (broadcast: every servo answers, in ID order), READ, WRITE, REG_WRITE, ACTION, REBOOT, SYNC_READ,
  SYNC_WRITE, BULK_READ, BULK_WRITE, FAST_SYNC_READ and FAST_BULK_READ; FACTORY_RESET, CLEAR and unknown
  instructions are answered with an instruction error (2);
* instructions to the broadcast ID get no status packet (except PING); SYNC/BULK_WRITE never get one;
  a WRITE that changes the ID is answered from the old ID (the SDK only accepts that), then the servo
  answers to the new ID;
  a unicast ACTION is answered (as the e-Manual says) although the SDK's ``action()`` does not wait for
  the answer: prefer a broadcast ACTION, otherwise the stale answer can be mistaken for the next reply;
* an instruction packet with a wrong CRC is counted in ``stats['crc_errors']``; if it is addressed to
  one existing, responsive servo it is answered with a CRC error (3) as a real servo does, a broadcast
  one is ignored; its instruction is not executed;
* status packets are sent back to back in one write (a sync read of six servos is one write of six
  packets); the Status Return Level and Return Delay Time registers are not emulated (always answer);
* fast sync/bulk read: one status packet from ID 0xFE with ``ERR ID DATA CRC`` per servo, where each
  inner CRC is the CRC of the packet up to that point (the last one is the packet CRC); this packet is
  not byte-stuffed (the SDK's fast path does not remove stuffing either).

Control table checks (WRITE, REG_WRITE, SYNC_WRITE, BULK_WRITE; silently for the latter two):
* no data, or a write that covers only part of a multi-byte item -> data length error (5);
* beyond the table (address + length > table size) -> data range error (4) (also for reads);
* read-only items (model number, firmware version, hardware error status, present position, present
  velocity) -> access error (7); EEPROM (addresses below torque enable) while torque is on -> access (7);
* torque enable other than 0/1, negative profile velocity/acceleration, a new ID above 252 or in use ->
  data range error (4);
* goal position outside [model.min_counts, model.max_counts] in position control mode (3) -> data limit
  error (6); the whole write is then rejected (nothing changes);
* torque enable 1 while the hardware error status is non-zero: accepted but torque stays off (the
  status packet carries the alert bit), as on the real servos.

Dynamics (position control modes 3, 4 and 5; other modes hold the present position): while torque is on
the present position moves toward the goal at the profile velocity (legacy PRO: goal velocity) converted
with ``velocity_unit_rpm``; 0 means ``max_speed_rpm``; never faster than ``max_speed_rpm``. Acceleration
(profile acceleration, goal acceleration) is ignored: the speed jumps to the profile velocity and back to
0 at the goal (a trapezoid with infinite acceleration). The present velocity register (signed, velocity
units) is the commanded speed while moving and 0 at rest; within half a count of the goal the servo
counts as arrived (so present == goal always comes with velocity 0). The state is advanced lazily from
``time.monotonic()`` whenever anything (a packet or the test API) touches it, so timing is exact up to
the moment of access. Without torque the servo keeps its position (no gravity, no back-driving).

REBOOT answers first (with the state before the reboot, so the alert bit is still set if there was a
hardware error), then resets the RAM area (addresses from torque enable on: torque off, hardware error
0, profile velocity/acceleration 0, goal = present) and keeps the EEPROM; with ``reboot_delay`` > 0 the
servo does not answer for that long afterwards.

Faults (see the methods): ``set_no_reply`` (the servo is offline: it neither answers nor executes),
``corrupt_next`` (wrong CRC on the next n status packets: a CRC burst), ``delay_next`` (the next n
answers come late, after the SDK's timeout, so they arrive during the client's next transaction),
``short_next`` (the next n status packets with parameters lose their last bytes: valid header, ID and
CRC), ``swap_servo`` (another servo, e.g. of the wrong model, answers to an ID), ``set_hardware_error``,
``unplug`` / ``replug``, ``unplug_after_writes`` (the port drops in the middle of a sequence of writes,
e.g. a torque off). ``torques()`` reports the torque state of every servo. ``replug`` keeps the
servo state, like a USB adapter replugged while the servos stay powered; a client has to reopen the same
``path``.

All state is guarded by one re-entrant lock shared by the serving thread and the test API.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import errno
import os
import select
import shutil
import signal
import sys
import tempfile
import threading
import time
import tty
from typing import ClassVar

try:
    from tensegrity_dynamixel.control_tables import (BY_NUMBER, LEGACY_PRO, MODELS, POSITION_CONTROL_MODE,  # noqa: F401
                                                     PRO_PLUS, X_SERIES, MotorModel, motor_model)
except ImportError:  # package not installed: use the source tree (<repo>/src/tensegrity_dynamixel)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tensegrity_dynamixel.control_tables import (BY_NUMBER, LEGACY_PRO, MODELS, POSITION_CONTROL_MODE,  # noqa: F401
                                                     PRO_PLUS, X_SERIES, MotorModel, motor_model)

__all__ = ["ServoEmulator", "EmulatedServo", "PAPER_SERVOS", "crc16", "stuff", "unstuff",
           "build_packet", "INSTRUCTIONS"]

# ----------------------------------------------------------------------------------------------------
# protocol constants

HEADER = b"\xff\xff\xfd\x00"
BROADCAST_ID = 0xFE
MAX_ID = 0xFC
MAX_PACKET_LENGTH = 1024 + 16        # LEN field limit accepted from a client

INST_PING = 0x01
INST_READ = 0x02
INST_WRITE = 0x03
INST_REG_WRITE = 0x04
INST_ACTION = 0x05
INST_FACTORY_RESET = 0x06
INST_REBOOT = 0x08
INST_CLEAR = 0x10
INST_STATUS = 0x55
INST_SYNC_READ = 0x82
INST_SYNC_WRITE = 0x83
INST_FAST_SYNC_READ = 0x8A
INST_BULK_READ = 0x92
INST_BULK_WRITE = 0x93
INST_FAST_BULK_READ = 0x9A

INSTRUCTIONS = {
    INST_PING: "PING", INST_READ: "READ", INST_WRITE: "WRITE", INST_REG_WRITE: "REG_WRITE",
    INST_ACTION: "ACTION", INST_FACTORY_RESET: "FACTORY_RESET", INST_REBOOT: "REBOOT", INST_CLEAR: "CLEAR",
    INST_STATUS: "STATUS", INST_SYNC_READ: "SYNC_READ", INST_SYNC_WRITE: "SYNC_WRITE",
    INST_FAST_SYNC_READ: "FAST_SYNC_READ", INST_BULK_READ: "BULK_READ", INST_BULK_WRITE: "BULK_WRITE",
    INST_FAST_BULK_READ: "FAST_BULK_READ",
}

ERR_OK = 0
ERR_RESULT_FAIL = 1
ERR_INSTRUCTION = 2
ERR_CRC = 3
ERR_DATA_RANGE = 4
ERR_DATA_LENGTH = 5
ERR_DATA_LIMIT = 6
ERR_ACCESS = 7
ERRBIT_ALERT = 0x80

POSITION_MODES = (3, 4, 5)           # position, extended position, current-based position
DEFAULT_FIRMWARE = 45
STALE_PARTIAL_S = 0.1                # an incomplete packet older than this is dropped

# The manipulator paper's servos: stage 1 (IDs 1-3) L54-50-S290-R, stage 2 (IDs 4-6) M42-10-S260-R.
PAPER_SERVOS = {1: "L54-50-S290-R", 2: "L54-50-S290-R", 3: "L54-50-S290-R",
                4: "M42-10-S260-R", 5: "M42-10-S260-R", 6: "M42-10-S260-R"}


# ----------------------------------------------------------------------------------------------------
# packet helpers

def _crc_table():
    table = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = (crc << 1) ^ 0x8005 if crc & 0x8000 else crc << 1
        table.append(crc & 0xFFFF)
    return table


_CRC_TABLE = _crc_table()


def crc16(data, crc: int = 0) -> int:
    """CRC-16 of Protocol 2.0 (polynomial 0x8005, MSB first, initial value 0); ``crc`` continues a CRC."""
    for b in data:
        crc = ((crc << 8) ^ _CRC_TABLE[((crc >> 8) ^ b) & 0xFF]) & 0xFFFF
    return crc


def stuff(raw) -> bytes:
    """Byte stuffing of instruction + parameters: an extra 0xFD after every FF FF FD of the raw bytes."""
    out = bytearray()
    for i, b in enumerate(raw):
        out.append(b)
        if b == 0xFD and i >= 2 and raw[i - 1] == 0xFF and raw[i - 2] == 0xFF:
            out.append(0xFD)
    return bytes(out)


def unstuff(stuffed) -> bytes:
    """Inverse of :func:`stuff`: drop the 0xFD that follows FF FF FD in the received bytes."""
    out = bytearray()
    for i, b in enumerate(stuffed):
        if b == 0xFD and i >= 3 and stuffed[i - 1] == 0xFD and stuffed[i - 2] == 0xFF and stuffed[i - 3] == 0xFF:
            continue
        out.append(b)
    return bytes(out)


def build_packet(dxl_id: int, instruction: int, params=b"", *, corrupt: bool = False,
                 stuffing: bool = True) -> bytes:
    """A complete Protocol 2.0 packet (instruction or, with INST_STATUS and the error as first
    parameter, status). ``corrupt`` flips CRC bits."""
    body = bytes([instruction]) + bytes(params)
    if stuffing:
        body = stuff(body)
    length = len(body) + 2
    packet = HEADER + bytes([dxl_id, length & 0xFF, length >> 8]) + body
    crc = crc16(packet)
    if corrupt:
        crc ^= 0xA5A5
    return packet + bytes([crc & 0xFF, crc >> 8])


def _le(value: int, size: int) -> bytes:
    return (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")


def _from_le(data, signed: bool) -> int:
    return int.from_bytes(bytes(data), "little", signed=signed)


def _u16(data, i: int) -> int:
    return data[i] | (data[i + 1] << 8)


# ----------------------------------------------------------------------------------------------------
# one servo

class EmulatedServo:
    """State of one emulated servo. Returned by :meth:`ServoEmulator.servo`; every accessor takes the
    emulator's lock and first advances the dynamics to now."""

    def __init__(self, emulator: ServoEmulator, dxl_id: int, model: MotorModel, initial_position: int,
                 firmware_version: int):
        self._emu = emulator
        self.model = model
        self.family = model.family
        self.firmware_version = firmware_version
        self.table = bytearray(self.family.table_size)
        self._pos = float(initial_position)     # exact present position (counts)
        self._t = time.monotonic()
        self.registered = None                   # (address, data) of a REG_WRITE, until ACTION
        self.no_reply = False
        self.offline_until = 0.0                 # after a reboot with reboot_delay
        self._init_table(dxl_id)

    # -- raw table access (caller holds the lock) --------------------------------------------------

    def _init_table(self, dxl_id: int):
        f = self.family
        self.table[:] = bytes(len(self.table))
        self._put(f.model_number, self.model.number)
        self._put(f.firmware_version, self.firmware_version)
        self._put(f.id, dxl_id)
        self._put(f.operating_mode, POSITION_CONTROL_MODE)
        self._reset_ram()

    def _reset_ram(self):
        """RAM (from torque enable on) to its power-on values; goal = present = current position."""
        f = self.family
        start = f.torque_enable.address
        self.table[start:] = bytes(len(self.table) - start)
        here = int(round(self._pos))
        self._put(f.goal_position, here)
        self._put(f.present_position, here)
        self.registered = None

    def _get(self, item, signed: bool = False) -> int:
        return _from_le(self.table[item.address:item.address + item.size], signed)

    def _put(self, item, value: int):
        self.table[item.address:item.address + item.size] = _le(int(value), item.size)

    @property
    def _id(self) -> int:
        return self.table[self.family.id.address]

    @property
    def _torque(self) -> bool:
        return self.table[self.family.torque_enable.address] != 0

    @property
    def _hw_error(self) -> int:
        return self._get(self.family.hardware_error)

    def _speed_rpm(self) -> float:
        units = self._get(self.family.profile_velocity, signed=True)
        rpm = self.model.max_speed_rpm if units <= 0 else units * self.model.velocity_unit_rpm
        return min(rpm, self.model.max_speed_rpm)

    def _advance(self, now: float):
        """Move the present position toward the goal for the time since the last update."""
        dt = now - self._t
        self._t = now
        f = self.family
        moving_units = 0
        if dt > 0 and self._torque and self.table[f.operating_mode.address] in POSITION_MODES:
            goal = self._get(f.goal_position, signed=True)
            error = goal - self._pos
            if error != 0:
                rpm = self._speed_rpm()
                step = rpm / 60.0 * self.model.counts_per_rev * dt
                if abs(error) <= step + 0.5:   # the last half count: at the goal (register == goal)
                    self._pos = float(goal)
                else:
                    self._pos += step if error > 0 else -step
                    units = int(round(rpm / self.model.velocity_unit_rpm))
                    moving_units = units if error > 0 else -units
        elif dt <= 0:   # same instant: keep the velocity register as it is
            return
        self._put(f.present_velocity, moving_units)
        self._put(f.present_position, int(round(self._pos)))

    def _status_error(self, code: int) -> int:
        return code | (ERRBIT_ALERT if self._hw_error else 0)

    def _responsive(self, now: float) -> bool:
        return not self.no_reply and now >= self.offline_until

    # -- protocol-level read/write with checks (caller holds the lock, dynamics advanced) -------------

    def _read_check(self, address: int, length: int) -> int:
        if length <= 0:
            return ERR_DATA_LENGTH
        if address + length > len(self.table):
            return ERR_DATA_RANGE
        return ERR_OK

    def _write_check(self, address: int, data: bytes) -> int:
        f = self.family
        n = len(data)
        if n == 0:
            return ERR_DATA_LENGTH
        if address + n > len(self.table):
            return ERR_DATA_RANGE
        end = address + n

        def covers(item):
            return address < item.address + item.size and item.address < end

        def value(item, signed=True):
            lo = item.address - address
            return _from_le(data[lo:lo + item.size], signed)

        for item in (f.model_number, f.firmware_version, f.hardware_error, f.present_velocity,
                     f.present_position):
            if covers(item):
                return ERR_ACCESS
        if address < f.torque_enable.address and self._torque:
            return ERR_ACCESS
        for item in (f.goal_position, f.profile_velocity, f.profile_acceleration):
            if covers(item) and (item.address < address or item.address + item.size > end):
                return ERR_DATA_LENGTH
        if covers(f.torque_enable) and value(f.torque_enable, False) not in (0, 1):
            return ERR_DATA_RANGE
        for item in (f.profile_velocity, f.profile_acceleration):
            if covers(item) and value(item) < 0:
                return ERR_DATA_RANGE
        if covers(f.id):
            new_id = value(f.id, False)
            if new_id > MAX_ID or (new_id != self._id and new_id in self._emu._servos):
                return ERR_DATA_RANGE
        if covers(f.goal_position):
            mode = data[f.operating_mode.address - address] if covers(f.operating_mode) \
                else self.table[f.operating_mode.address]
            if mode == POSITION_CONTROL_MODE and \
                    not self.model.min_counts <= value(f.goal_position) <= self.model.max_counts:
                return ERR_DATA_LIMIT
        return ERR_OK

    def _apply_write(self, address: int, data: bytes):
        f = self.family
        old_id = self._id
        was_on = self._torque
        self.table[address:address + len(data)] = data
        if self._torque and self._hw_error:        # torque cannot be enabled with a hardware error
            self.table[f.torque_enable.address] = 0
        if was_on and not self._torque:
            self._put(f.present_velocity, 0)
        if self._id != old_id:
            self._emu._rekey(old_id, self._id)

    def _write(self, address: int, data: bytes) -> int:
        code = self._write_check(address, data)
        if code == ERR_OK:
            self._apply_write(address, data)
        return code

    # -- public accessors for tests -------------------------------------------------------------------

    @contextlib.contextmanager
    def _state(self):
        """Hold the emulator's lock with the dynamics advanced to now."""
        with self._emu._lock:
            self._advance(time.monotonic())
            yield

    @property
    def id(self) -> int:
        with self._emu._lock:
            return self._id

    @property
    def torque(self) -> bool:
        with self._state():
            return self._torque

    @torque.setter
    def torque(self, on: bool):
        self.write(self.family.torque_enable.address, 1, 1 if on else 0)

    @property
    def goal(self) -> int:
        return self.read(self.family.goal_position.address, 4)

    @goal.setter
    def goal(self, counts: int):
        self.write(self.family.goal_position.address, 4, counts)

    @property
    def present(self) -> int:
        return self.read(self.family.present_position.address, 4)

    @present.setter
    def present(self, counts: int):
        self.write(self.family.present_position.address, 4, counts)

    @property
    def velocity(self) -> int:
        """Present velocity (signed velocity units)."""
        return self.read(self.family.present_velocity.address, 4)

    @property
    def profile_velocity(self) -> int:
        return self.read(self.family.profile_velocity.address, 4)

    @profile_velocity.setter
    def profile_velocity(self, units: int):
        self.write(self.family.profile_velocity.address, 4, units)

    @property
    def operating_mode(self) -> int:
        return self.read(self.family.operating_mode.address, 1)

    @property
    def hardware_error(self) -> int:
        return self.read(self.family.hardware_error.address, self.family.hardware_error.size)

    @hardware_error.setter
    def hardware_error(self, bits: int):
        self._emu.set_hardware_error(self.id, bits)

    @property
    def moving(self) -> bool:
        return self.velocity != 0

    def read(self, address: int, size: int, signed: bool | None = None) -> int:
        """A little-endian value from the control table (no protocol checks). 4-byte values are signed
        by default (positions, velocities), 1- and 2-byte values unsigned."""
        if signed is None:
            signed = size == 4
        with self._state():
            if address < 0 or address + size > len(self.table):
                raise IndexError(f"{address}+{size} outside the {len(self.table)}-byte table")
            return _from_le(self.table[address:address + size], signed)

    def write(self, address: int, size: int, value: int):
        """Poke a little-endian value into the control table, bypassing the protocol checks (read-only
        items can be set too). Writing the present position moves the servo there instantly; turning
        torque off stops it; an ID change re-keys the servo."""
        with self._state():
            if address < 0 or address + size > len(self.table):
                raise IndexError(f"{address}+{size} outside the {len(self.table)}-byte table")
            f = self.family
            old_id = self._id
            self.table[address:address + size] = _le(int(value), size)
            pp = f.present_position
            if address < pp.address + pp.size and pp.address < address + size:
                self._pos = float(self._get(pp, signed=True))
            if not self._torque:
                self._put(f.present_velocity, 0)
            if self._id != old_id:
                self._emu._rekey(old_id, self._id)

    def __repr__(self):
        return (f"EmulatedServo(id={self.id}, model={self.model.name!r}, torque={self.torque}, "
                f"goal={self.goal}, present={self.present}, hardware_error=0x{self.hardware_error:02X})")


# ----------------------------------------------------------------------------------------------------
# the bus

class ServoEmulator:
    """A Dynamixel bus with Protocol 2.0 servos behind a pseudo-terminal.

    ``servos`` maps ID -> model name (or MotorModel, or ``(model, initial_position_counts)``);
    ``initial_positions`` maps ID -> counts (default: the model's centre); ``link_path`` is where the
    symlink to the pty slave goes (default ``<fresh temp dir>/ttyDXL``, removed on stop).
    """

    def __init__(self, servos: dict | None = None, link_path: str | None = None, *,
                 initial_positions: dict | None = None, firmware_version: int = DEFAULT_FIRMWARE,
                 reboot_delay: float = 0.0, trace=None, nice: int = 0):
        """``nice`` < 0: the serving thread asks for that scheduling priority (where permitted), so a loaded
        test machine delays its answers less: real servos answer in microseconds whatever the host's load."""
        self.nice = int(nice)
        self._lock = threading.RLock()
        self._servos: dict[int, EmulatedServo] = {}
        initial_positions = dict(initial_positions or {})
        for dxl_id, spec in (PAPER_SERVOS if servos is None else servos).items():
            position = None
            if isinstance(spec, tuple):
                spec, position = spec
            model = spec if isinstance(spec, MotorModel) else motor_model(spec)
            position = initial_positions.get(dxl_id, position)
            if not 0 <= int(dxl_id) <= MAX_ID:
                raise ValueError(f"servo ID {dxl_id} outside 0..{MAX_ID}")
            self._servos[int(dxl_id)] = EmulatedServo(
                self, int(dxl_id), model, model.centre_counts if position is None else position,
                firmware_version)
        self.reboot_delay = float(reboot_delay)
        self._trace = trace                 # None, or a callable(str) for a packet log
        self._own_dir = None
        if link_path is None:
            self._own_dir = tempfile.mkdtemp(prefix="dxl-emulator-")
            link_path = os.path.join(self._own_dir, "ttyDXL")
        self.path = os.path.abspath(link_path)
        self._master = None
        self._slave = None
        self.slave_name = None
        self._generation = 0
        self._corrupt = self._corrupt_after = 0
        self._delayed, self._delay_after, self._late = 0, 0, b""  # answers to hold back; held answers
        self._short, self._short_missing = 0, 0
        self._drop_address, self._drop_after, self._drop_now = None, 0, False   # unplug_after_writes
        self._stats = collections.Counter()
        self._thread = None
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._wake_r = self._wake_w = None
        self._closed = False

    # -- lifecycle --------------------------------------------------------------------------------------

    def start(self) -> ServoEmulator:
        if self._thread is not None:
            return self
        if self._closed:
            raise RuntimeError("a stopped ServoEmulator cannot be restarted; make a new one")
        if os.path.lexists(self.path) and not os.path.islink(self.path):
            raise FileExistsError(f"{self.path} exists and is not a symlink")
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        with self._lock:
            self._open_pty()
        self._stop.clear()
        self._ready.clear()
        self._thread = threading.Thread(target=self._serve, name="dxl-emulator", daemon=True)
        self._thread.start()
        self._ready.wait(5.0)               # serving: the first request is not delayed by thread start-up
        return self

    def stop(self):
        """Stop the serving thread, close every fd, remove the symlink (and the temp dir it made)."""
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            self._stop.set()
            self._wake()
            self._thread.join(timeout=5.0)
            if self._thread.is_alive():   # pragma: no cover - would be a bug
                raise RuntimeError("the emulator thread did not stop")
            self._thread = None
        with self._lock:
            self._close_pty()
        for fd in (self._wake_r, self._wake_w):
            if fd is not None:
                os.close(fd)
        self._wake_r = self._wake_w = None
        if self._own_dir is not None:
            shutil.rmtree(self._own_dir, ignore_errors=True)
            self._own_dir = None

    close = stop

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def plugged(self) -> bool:
        with self._lock:
            return self._master is not None

    def _open_pty(self):
        master, slave = os.openpty()
        try:
            tty.setraw(slave)                # no echo, no line editing, 8 data bits
            os.set_blocking(master, False)
            name = os.ttyname(slave)
            tmp = f"{self.path}.{os.getpid()}.tmp"
            if os.path.lexists(tmp):
                os.unlink(tmp)
            os.symlink(name, tmp)
            os.replace(tmp, self.path)       # atomic: a client never sees a missing path on replug
        except BaseException:
            os.close(master)
            os.close(slave)
            raise
        # the slave stays open here: otherwise the master reads EIO whenever the client closes it
        self._master, self._slave, self.slave_name = master, slave, name
        self._generation += 1

    def _close_pty(self):
        self._late = b""
        for fd in (self._master, self._slave):
            if fd is not None:
                os.close(fd)
        self._master = self._slave = None
        self._generation += 1
        if os.path.islink(self.path):
            os.unlink(self.path)

    def _wake(self):
        if self._wake_w is not None:
            try:
                os.write(self._wake_w, b"x")
            except OSError:
                pass

    # -- fault injection ---------------------------------------------------------------------------------

    def set_no_reply(self, ids=None, enabled: bool = True):
        """The servos ``ids`` (an ID, an iterable of IDs, or None = all) go offline: they neither answer
        nor execute anything (like a servo with a broken cable) until called again with enabled=False."""
        with self._lock:
            if ids is None:
                ids = list(self._servos)
            elif isinstance(ids, int):
                ids = [ids]
            for dxl_id in ids:
                self._servos[dxl_id].no_reply = bool(enabled)

    def corrupt_next(self, n: int = 1, after: int = 0):
        """The next ``n`` status packets get a wrong CRC (a fast sync/bulk read reply counts as one), after
        ``after`` good ones."""
        with self._lock:
            self._corrupt += int(n)
            self._corrupt_after = int(after)

    def delay_next(self, n: int = 1, after: int = 0):
        """The next ``n`` answers (all status packets of one instruction), after ``after`` answers on time,
        come late: each is held back and sent just before the answer to the next instruction that has one,
        i.e. after the client's status timeout, while it waits for its next transaction (which then sees
        the old answer first)."""
        with self._lock:
            self._delayed += int(n)
            self._delay_after = int(after)

    def short_next(self, n: int = 1, missing: int = 2):
        """The next ``n`` status packets that carry parameters (ping, read, sync read answers) lose their
        last ``missing`` parameter bytes; header, ID, length and CRC stay valid."""
        with self._lock:
            self._short += int(n)
            self._short_missing = int(missing)

    def swap_servo(self, servo_id: int, model):
        """Replace the servo at ``servo_id`` by a fresh one of ``model`` (name or MotorModel; centre
        position, torque off), as if someone had swapped it, e.g. for the wrong model."""
        model = model if isinstance(model, MotorModel) else motor_model(model)
        with self._lock:
            old = self._servos[servo_id]
            self._servos[servo_id] = EmulatedServo(self, servo_id, model, model.centre_counts,
                                                   old.firmware_version)

    def brown_out(self, servo_id: int):
        """The servo resets by itself (a power dip): RAM to its power-on values (torque off, goal = present),
        EEPROM kept, no hardware error; it answers as before."""
        with self._lock:
            s = self._servos[servo_id]
            s._advance(time.monotonic())
            s._reset_ram()

    def torques(self) -> dict:
        """{ID: torque enabled} of every servo."""
        with self._lock:
            return {i: self._servos[i].torque for i in sorted(self._servos)}

    def set_hardware_error(self, servo_id: int, bits: int):
        """Set the hardware error status register (e.g. 0x20 overload, 0x04 overheating); a non-zero value
        turns torque off and sets the alert bit (0x80) in the servo's status packets until a REBOOT
        (or ``set_hardware_error(id, 0)``) clears the register."""
        with self._lock:
            s = self._servos[servo_id]
            s._advance(time.monotonic())
            s._put(s.family.hardware_error, bits)
            if bits:
                s.table[s.family.torque_enable.address] = 0
                s._put(s.family.present_velocity, 0)

    def unplug(self):
        """The port disappears: the pty master (and the emulator's slave fd) are closed and the symlink
        removed. A client's open fd then fails (pyserial: SerialException on read/write, OSError from
        in_waiting, termios.error from reset_input_buffer) and opening ``path`` fails (no such file)."""
        with self._lock:
            if self._master is None:
                return
            self._close_pty()
        self._wake()

    def unplug_after_writes(self, address: int, n: int = 1):
        """The adapter drops in the middle of a sequence of writes: right after the ``n``-th WRITE to control
        table ``address`` (unicast or broadcast) has been executed, before its answer is sent, the port goes
        as with :meth:`unplug` (packets after it in the same read are lost with it)."""
        with self._lock:
            self._drop_address, self._drop_after = int(address), int(n)

    def replug(self):
        """A new pty; ``path`` points to it again. The servo state is kept (servos stay powered)."""
        if self._thread is None:
            raise RuntimeError("start() the emulator first")
        with self._lock:
            if self._master is not None:
                return
            self._open_pty()
        self._wake()

    # -- inspection ---------------------------------------------------------------------------------------

    def servo(self, dxl_id: int) -> EmulatedServo:
        with self._lock:
            return self._servos[dxl_id]

    @property
    def ids(self) -> list:
        with self._lock:
            return sorted(self._servos)

    @property
    def stats(self) -> dict:
        """Counters: received instructions by name (PING, READ, ..., unknown ones as 'INST_0xNN'),
        'packets_received' (valid CRC), 'crc_errors' (instruction packets with a wrong CRC),
        'packets_sent' (status packets), 'corrupted_sent', 'stuffed_received' / 'stuffed_sent'
        (packets with byte stuffing), 'dropped_bytes' (garbage between packets), 'delayed_sent' (late
        answers), 'short_sent' (shortened status packets)."""
        with self._lock:
            return dict(self._stats)

    def reset_stats(self):
        with self._lock:
            self._stats.clear()

    def status_line(self) -> str:
        now = time.monotonic()
        parts = []
        with self._lock:
            for dxl_id in sorted(self._servos):
                s = self._servos[dxl_id]
                s._advance(now)
                flags = ("T" if s._torque else "-") + ("!" if s._hw_error else "") + \
                        ("x" if not s._responsive(now) else "")
                parts.append(f"{dxl_id}{flags} g={s._get(s.family.goal_position, True)} "
                             f"p={s._get(s.family.present_position, True)}")
            plugged = "" if self._master is not None else " [unplugged]"
        return " | ".join(parts) + plugged

    def _rekey(self, old_id: int, new_id: int):
        with self._lock:
            servo = self._servos.pop(old_id)
            self._servos[new_id] = servo
            self._servos = dict(sorted(self._servos.items()))

    # -- serving thread --------------------------------------------------------------------------------------

    def _serve(self):
        if self.nice < 0:
            try:
                os.setpriority(os.PRIO_PROCESS, 0, self.nice)     # Linux: this thread only
            except OSError:
                pass
        buf = bytearray()
        buf_generation = -1
        last_rx = 0.0
        self._ready.set()
        while not self._stop.is_set():
            with self._lock:
                fd, generation = self._master, self._generation
            if generation != buf_generation:
                buf.clear()
                buf_generation = generation
            watch = [self._wake_r] + ([fd] if fd is not None else [])
            try:
                readable, _, _ = select.select(watch, [], [], 0.05)
            except (OSError, ValueError):    # fd closed by unplug() meanwhile: take the new state
                continue
            if self._wake_r in readable:
                try:
                    while os.read(self._wake_r, 64):
                        pass
                except OSError:
                    pass
            now = time.monotonic()
            if fd is None or fd not in readable:
                if buf and now - last_rx > STALE_PARTIAL_S:
                    with self._lock:
                        self._stats["dropped_bytes"] += len(buf)
                    buf.clear()
                continue
            with self._lock:
                if self._generation != generation:
                    continue
                try:
                    data = os.read(fd, 4096)
                except OSError as e:
                    if e.errno in (errno.EAGAIN, errno.EINTR):
                        continue
                    data = b""
                if not data:
                    continue
                last_rx = now
                buf.extend(data)
                out = self._process(buf)
                if self._drop_now:           # unplug_after_writes: the port goes before the answer
                    self._drop_now = False
                    self._close_pty()
                    continue
                if out:
                    late, self._late = self._late, b""
                    if self._delayed > 0 and self._delay_after > 0:
                        self._delay_after -= 1
                    elif self._delayed > 0:
                        self._delayed -= 1
                        self._stats["delayed_sent"] += 1
                        self._late, out = out, b""
                    if late or out:
                        self._send(fd, late + out)

    def _send(self, fd: int, data: bytes):
        try:
            while data:
                n = os.write(fd, data)
                data = data[n:]
        except OSError:   # client gone / buffer full (nobody reading): the bytes are lost, as on a bus
            pass

    def _process(self, buf: bytearray) -> bytes:
        """Consume complete packets from ``buf``; return the status bytes to send (caller holds the lock)."""
        out = bytearray()
        while True:
            i = buf.find(HEADER)
            if i < 0:
                keep = 3 if buf[-3:] == HEADER[:3] else 2 if buf[-2:] == HEADER[:2] else \
                    1 if buf[-1:] == HEADER[:1] else 0
                if len(buf) > keep:
                    self._stats["dropped_bytes"] += len(buf) - keep
                    del buf[:len(buf) - keep]
                return bytes(out)
            if i:
                self._stats["dropped_bytes"] += i
                del buf[:i]
            if len(buf) < 7:
                return bytes(out)
            length = _u16(buf, 5)
            if length < 3 or length > MAX_PACKET_LENGTH:
                self._stats["dropped_bytes"] += 1
                del buf[:1]
                continue
            total = 7 + length
            if len(buf) < total:
                return bytes(out)
            packet = bytes(buf[:total])
            del buf[:total]
            out += self._packet(packet)
            if self._drop_now:
                return bytes(out)

    def _packet(self, packet: bytes) -> bytes:
        dxl_id = packet[4]
        now = time.monotonic()
        if crc16(packet[:-2]) != _u16(packet, len(packet) - 2):
            self._stats["crc_errors"] += 1
            self._log("rx (bad CRC)", packet)
            servo = self._servos.get(dxl_id)
            if servo is not None and servo._responsive(now):
                servo._advance(now)
                return self._status(servo, ERR_CRC)
            return b""
        body = packet[7:-2]
        raw = unstuff(body)
        if len(raw) != len(body):
            self._stats["stuffed_received"] += 1
        self._stats["packets_received"] += 1
        self._log("rx", packet)
        instruction, params = raw[0], raw[1:]
        self._stats[INSTRUCTIONS.get(instruction, f"INST_0x{instruction:02X}")] += 1
        for servo in self._servos.values():
            servo._advance(now)
        if instruction == INST_STATUS:       # another device's status packet: not for servos
            return b""
        handler = self._HANDLERS.get(instruction)
        if handler is None:
            return self._unicast_error(dxl_id, ERR_INSTRUCTION, now)
        return handler(self, dxl_id, params, now)

    # -- status packets ------------------------------------------------------------------------------------

    def _take_corrupt(self) -> bool:
        if self._corrupt > 0 and self._corrupt_after > 0:
            self._corrupt_after -= 1
        elif self._corrupt > 0:
            self._corrupt -= 1
            self._stats["corrupted_sent"] += 1
            return True
        return False

    def _status(self, servo: EmulatedServo, code: int, params=b"", reply_id: int | None = None) -> bytes:
        if params and self._short > 0:
            self._short -= 1
            self._stats["short_sent"] += 1
            params = bytes(params)[:max(0, len(params) - self._short_missing)]
        packet = build_packet(servo._id if reply_id is None else reply_id, INST_STATUS,
                              bytes([servo._status_error(code)]) + bytes(params), corrupt=self._take_corrupt())
        if len(packet) != len(params) + 11:
            self._stats["stuffed_sent"] += 1
        self._stats["packets_sent"] += 1
        self._log("tx", packet)
        return packet

    def _log(self, what: str, packet: bytes):
        if self._trace is not None:
            self._trace(f"{what} {packet.hex(' ')}")

    def _targets(self, dxl_id: int, now: float) -> list:
        """The responsive servos an instruction to ``dxl_id`` reaches, in ID order."""
        if dxl_id == BROADCAST_ID:
            return [s for _, s in sorted(self._servos.items()) if s._responsive(now)]
        servo = self._servos.get(dxl_id)
        return [servo] if servo is not None and servo._responsive(now) else []

    def _unicast_error(self, dxl_id: int, code: int, now: float) -> bytes:
        if dxl_id == BROADCAST_ID:
            return b""
        return b"".join(self._status(s, code) for s in self._targets(dxl_id, now))

    # -- instructions ----------------------------------------------------------------------------------------

    def _i_ping(self, dxl_id, params, now):
        out = b""
        for s in self._targets(dxl_id, now):
            out += self._status(s, ERR_OK, _le(s.model.number, 2) + bytes([s.firmware_version & 0xFF]))
        return out

    def _i_read(self, dxl_id, params, now):
        if dxl_id == BROADCAST_ID:
            return b""
        out = b""
        for s in self._targets(dxl_id, now):
            if len(params) != 4:
                out += self._status(s, ERR_DATA_LENGTH)
                continue
            address, length = _u16(params, 0), _u16(params, 2)
            code = s._read_check(address, length)
            out += self._status(s, code, s.table[address:address + length] if code == ERR_OK else b"")
        return out

    def _i_write(self, dxl_id, params, now):
        out = b""
        for s in self._targets(dxl_id, now):
            code = s._write(_u16(params, 0), params[2:]) if len(params) >= 3 else ERR_DATA_LENGTH
            if dxl_id != BROADCAST_ID:   # after an ID change still from the addressed ID (the SDK waits for it)
                out += self._status(s, code, reply_id=dxl_id)
        self._count_drop(_u16(params, 0) if len(params) >= 3 else -1)
        return out

    def _count_drop(self, address: int):
        if self._drop_address == address and self._drop_after > 0:
            self._drop_after -= 1
            self._drop_now = self._drop_after == 0

    def _i_reg_write(self, dxl_id, params, now):
        out = b""
        for s in self._targets(dxl_id, now):
            if len(params) >= 3:
                code = s._write_check(_u16(params, 0), params[2:])
                if code == ERR_OK:
                    s.registered = (_u16(params, 0), bytes(params[2:]))
            else:
                code = ERR_DATA_LENGTH
            if dxl_id != BROADCAST_ID:
                out += self._status(s, code)
        return out

    def _i_action(self, dxl_id, params, now):
        out = b""
        for s in self._targets(dxl_id, now):
            if s.registered is None:
                code = ERR_INSTRUCTION          # ACTION without a registered instruction
            else:
                address, data = s.registered
                s.registered = None
                code = s._write(address, data)
            if dxl_id != BROADCAST_ID:
                out += self._status(s, code)
        return out

    def _i_reboot(self, dxl_id, params, now):
        out = b""
        for s in self._targets(dxl_id, now):
            if dxl_id != BROADCAST_ID:
                out += self._status(s, ERR_OK)   # the answer comes before the reboot
            s._reset_ram()
            s.offline_until = now + self.reboot_delay
        return out

    def _i_not_supported(self, dxl_id, params, now):
        return self._unicast_error(dxl_id, ERR_INSTRUCTION, now)

    def _i_sync_read(self, dxl_id, params, now, fast=False):
        if dxl_id != BROADCAST_ID or len(params) < 5:
            return self._unicast_error(dxl_id, ERR_INSTRUCTION, now)
        address, length = _u16(params, 0), _u16(params, 2)
        requests = [(i, address, length) for i in params[4:]]
        return self._read_many(requests, now, fast)

    def _i_fast_sync_read(self, dxl_id, params, now):
        return self._i_sync_read(dxl_id, params, now, fast=True)

    def _i_bulk_read(self, dxl_id, params, now, fast=False):
        if dxl_id != BROADCAST_ID or len(params) < 5 or len(params) % 5:
            return self._unicast_error(dxl_id, ERR_INSTRUCTION, now)
        requests = [(params[k], _u16(params, k + 1), _u16(params, k + 3)) for k in range(0, len(params), 5)]
        return self._read_many(requests, now, fast)

    def _i_fast_bulk_read(self, dxl_id, params, now):
        return self._i_bulk_read(dxl_id, params, now, fast=True)

    def _read_many(self, requests, now, fast):
        """Answers of a sync/bulk read in the listed order; offline and unknown servos are skipped."""
        answers = []
        for servo_id, address, length in requests:
            s = self._servos.get(servo_id)
            if s is None or not s._responsive(now):
                continue
            code = s._read_check(address, length)
            answers.append((s, code, bytes(s.table[address:address + length]) if code == ERR_OK else b""))
        if not fast:
            return b"".join(self._status(s, code, data) for s, code, data in answers)
        if not answers:
            return b""
        # one packet from the broadcast ID: ERR ID DATA CRC per servo, inner CRCs are running CRCs
        length = 1 + sum(4 + len(data) for _, _, data in answers)
        packet = bytearray(HEADER + bytes([BROADCAST_ID, length & 0xFF, length >> 8, INST_STATUS]))
        corrupt = self._take_corrupt()
        for k, (s, code, data) in enumerate(answers):
            packet += bytes([s._status_error(code), s._id]) + data
            crc = crc16(packet)
            if corrupt and k == len(answers) - 1:
                crc ^= 0xA5A5
            packet += bytes([crc & 0xFF, crc >> 8])
        self._stats["packets_sent"] += 1
        self._log("tx", bytes(packet))
        return bytes(packet)

    def _i_sync_write(self, dxl_id, params, now):
        if dxl_id != BROADCAST_ID or len(params) < 4:
            return self._unicast_error(dxl_id, ERR_INSTRUCTION, now)
        address, length = _u16(params, 0), _u16(params, 2)
        block = 1 + length
        rest = params[4:]
        if length == 0 or len(rest) % block:
            return b""                          # malformed: ignored (a sync write is never answered)
        for k in range(0, len(rest), block):
            s = self._servos.get(rest[k])
            if s is not None and s._responsive(now):
                s._write(address, rest[k + 1:k + block])
        return b""

    def _i_bulk_write(self, dxl_id, params, now):
        if dxl_id != BROADCAST_ID:
            return self._unicast_error(dxl_id, ERR_INSTRUCTION, now)
        k = 0
        writes = []
        while k + 5 <= len(params):
            servo_id, address, length = params[k], _u16(params, k + 1), _u16(params, k + 3)
            data = params[k + 5:k + 5 + length]
            if len(data) != length:
                return b""                      # malformed: ignored
            writes.append((servo_id, address, data))
            k += 5 + length
        if k != len(params):
            return b""
        for servo_id, address, data in writes:
            s = self._servos.get(servo_id)
            if s is not None and s._responsive(now):
                s._write(address, data)
        return b""

    _HANDLERS: ClassVar[dict] = {
        INST_PING: _i_ping, INST_READ: _i_read, INST_WRITE: _i_write, INST_REG_WRITE: _i_reg_write,
        INST_ACTION: _i_action, INST_REBOOT: _i_reboot, INST_FACTORY_RESET: _i_not_supported,
        INST_CLEAR: _i_not_supported, INST_SYNC_READ: _i_sync_read, INST_FAST_SYNC_READ: _i_fast_sync_read,
        INST_SYNC_WRITE: _i_sync_write, INST_BULK_READ: _i_bulk_read, INST_FAST_BULK_READ: _i_fast_bulk_read,
        INST_BULK_WRITE: _i_bulk_write,
    }


# ----------------------------------------------------------------------------------------------------
# command line

def _parse_servo(text: str):
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise argparse.ArgumentTypeError(f"expected ID:MODEL[:POSITION], got {text!r}")
    try:
        dxl_id = int(parts[0])
        model = motor_model(parts[1])
        position = int(parts[2]) if len(parts) == 3 else None
    except (ValueError, KeyError) as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if not 0 <= dxl_id <= MAX_ID:
        raise argparse.ArgumentTypeError(f"servo ID {dxl_id} in {text!r} outside 0..{MAX_ID}")
    if position is not None and not -2**31 <= position < 2**31:
        raise argparse.ArgumentTypeError(f"position {position} in {text!r} does not fit the 4-byte register")
    return dxl_id, model, position


def _period(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description="Dynamixel Protocol 2.0 servo emulator on a pseudo-terminal (Ctrl-C to stop).",
        epilog="models: " + ", ".join(MODELS))
    parser.add_argument("--servo", action="append", type=_parse_servo, metavar="ID:MODEL[:POSITION]",
                        help="a servo (repeatable); default: the manipulator paper's six servos "
                             "(1-3 L54-50-S290-R, 4-6 M42-10-S260-R)")
    parser.add_argument("--link", metavar="PATH", help="symlink to create (default: <temp dir>/ttyDXL)")
    parser.add_argument("--period", type=_period, default=1.0, help="status line period in s (default 1)")
    parser.add_argument("--trace", action="store_true", help="print every packet (hex)")
    args = parser.parse_args(argv)
    if args.servo:
        ids = [i for i, _, _ in args.servo]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            parser.error(f"argument --servo: ID {', '.join(map(str, twice))} given more than once")
        servos = {i: (m, p) if p is not None else m for i, m, p in args.servo}
    else:
        servos = dict(PAPER_SERVOS)
    if args.link is not None:
        link_dir = os.path.dirname(os.path.abspath(args.link))
        if not os.path.isdir(link_dir):
            parser.error(f"argument --link: {link_dir} is not a directory")
        if os.path.lexists(args.link) and not os.path.islink(args.link):
            parser.error(f"argument --link: {args.link} exists and is not a symlink")
    trace = (lambda line: print(line, flush=True)) if args.trace else None
    emu = ServoEmulator(servos, args.link, trace=trace)
    try:
        emu.start()
    except OSError as e:
        emu.stop()
        parser.error(f"argument --link: cannot create the symlink {emu.path}: {e.strerror or e}")
    # Ctrl-C and SIGTERM end the loop below through an event: a KeyboardInterrupt raised at an arbitrary
    # bytecode could land between a lock's acquire and its release (in status_line) and deadlock stop()
    # (seen under load: the CLI then ignored SIGINT for 10 s)
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        _serve_until(emu, stop, args.period)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def _serve_until(emu, stop, period: float):
    """Print the servos' status every ``period`` s until ``stop`` is set, then stop the emulator."""
    with emu:
        try:
            print(f"Dynamixel emulator on {emu.path} -> {emu.slave_name}", flush=True)
            for dxl_id in emu.ids:
                print(f"  ID {dxl_id}: {emu.servo(dxl_id).model.name}", flush=True)
            while not stop.wait(period):
                print(f"{time.strftime('%H:%M:%S')} {emu.status_line()}", flush=True)
            print("stopped", flush=True)
        except KeyboardInterrupt:
            print("stopped", flush=True)
        except BrokenPipeError:                 # the reader went away (e.g. '| head'): stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
