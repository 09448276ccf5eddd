"""A Dynamixel Protocol 2.0 bus on the real dynamixel-sdk: ping, read, write, reboot, broadcast torque
off, and one sync write of goal positions plus one sync read of present velocity+position per cycle. Every
failure becomes a :class:`BusError` with a kind the driver counts and reacts to; nothing from the SDK or
pyserial escapes.

The SDK accepts any status packet with a valid CRC from the addressed ID as the answer, also one with the
wrong number of parameter bytes (a late answer to an earlier instruction, a truncated packet): it then
slices the CRC into the data or indexes past the end (``IndexError`` in ``GroupSyncRead.getData``,
``read4ByteTxRx``, ``ping``). Here every answer's parameter count (from its LEN field) is checked against
the request, and a mismatch is a ``corrupt`` BusError.

The port is opened exclusively: an advisory lock (``flock``, released by the kernel when the process dies)
and the tty's exclusive mode (``TIOCEXCL``: other non-root programs cannot open it; cleared again on close).
A port another process holds is a ``port`` BusError naming that process (:func:`port_holder`).
"""
from __future__ import annotations

import fcntl
import os
import termios

import dynamixel_sdk as sdk

# kinds of BusError
TIMEOUT, CORRUPT, PORT, STATUS, TX = "timeout", "corrupt", "port", "status", "tx"
_COMM_KIND = {sdk.COMM_RX_TIMEOUT: TIMEOUT, sdk.COMM_RX_CORRUPT: CORRUPT, sdk.COMM_TX_FAIL: TX,
              sdk.COMM_TX_ERROR: TX, sdk.COMM_PORT_BUSY: PORT, sdk.COMM_RX_FAIL: TIMEOUT}
_STATUS_TEXT = {1: "result fail", 2: "instruction error", 3: "CRC error", 4: "data range error",
                5: "data length error", 6: "data limit error", 7: "access error"}
ALERT = 0x80
BROADCAST_ID = 0xFE


class _CheckedPacketHandler(sdk.Protocol2PacketHandler):
    """The SDK's Protocol 2.0 packet handler, except that an answer whose parameter count differs from the
    request is COMM_RX_CORRUPT instead of a success with wrong data."""

    _params = -1            # parameter bytes (after the error byte) of the last status packet received

    def rxPacket(self, port, fast_option):
        packet, result = super().rxPacket(port, fast_option)
        # LEN (bytes 5, 6) counts instruction, error, parameters and CRC
        self._params = (packet[5] | packet[6] << 8) - 4 if result == sdk.COMM_SUCCESS else -1
        return packet, result

    def _expect(self, result, length):
        return sdk.COMM_RX_CORRUPT if result == sdk.COMM_SUCCESS and self._params != length else result

    def readRx(self, port, dxl_id, length):
        data, result, error = super().readRx(port, dxl_id, length)
        return data, self._expect(result, length), error

    def readTxRx(self, port, dxl_id, address, length):
        data, result, error = super().readTxRx(port, dxl_id, address, length)
        return data, self._expect(result, length), error

    def ping(self, port, dxl_id):
        number, result, error = super().ping(port, dxl_id)
        return number, self._expect(result, 3), error       # model number (2 bytes) + firmware version


class BusError(Exception):
    def __init__(self, kind: str, message: str, motor_id: int | None = None, held_by: str = ""):
        super().__init__(message)
        self.kind = kind
        self.motor_id = motor_id
        self.held_by = held_by           # the port is locked by another process (who, as far as known)


def port_holder(path: str) -> str:
    """Who holds the lock on serial device ``path``: 'pid N (command line)' from /proc/locks (Linux), or
    the other processes that have it open (/proc/*/fd), or 'another process' where the OS does not say."""
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except OSError:
        return "another process"
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids = []
    try:
        with open("/proc/locks") as f:
            for line in f:
                fields = line.split()
                if "->" not in fields and len(fields) > 5 and fields[1] == "FLOCK" and fields[5] == key:
                    pids.append(int(fields[4]))
    except (OSError, ValueError):
        pass
    if not pids:
        pids = _pids_with_open(real)
    pids = [p for p in dict.fromkeys(pids) if p != os.getpid()]
    return ", ".join(_describe(p) for p in pids) or "another process"


def _pids_with_open(real: str) -> list:
    """Processes (other than this one) with ``real`` open, from /proc/*/fd (those this user may read)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") == real for fd in os.listdir(f"/proc/{pid}/fd")):
                pids.append(int(pid))
        except OSError:
            continue
    return pids


def _describe(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        cmd = ""
    return f"pid {pid} ({cmd[:160]})" if cmd else f"pid {pid}"


# read every few cycles to notice a servo that faulted, reset (brown-out: torque off by itself) or was swapped
HEALTH_ITEMS = ("hardware_error", "torque_enable", "model_number")


def _signed32(v: int) -> int:
    return v - (1 << 32) if v & 0x80000000 else v


def _lock(fd: int):
    """This process alone on the port: BlockingIOError if another holds it."""
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        fcntl.ioctl(fd, termios.TIOCEXCL)
    except OSError:                       # not a tty (never for an adapter): the lock is what counts
        pass


class DynamixelBus:
    def __init__(self, port: str, baudrate: int = 1_000_000, protocol: float = 2.0):
        if protocol != 2.0:
            raise ValueError("only Dynamixel Protocol 2.0 is supported")
        self.port_name = port
        self.baudrate = int(baudrate)
        self.port = None
        self.ph = _CheckedPacketHandler()
        self._sync_write = self._sync_read = None
        self._item_reads = {}
        self.alerts = set()            # ids whose last status packet carried the hardware alert bit

    # --- port ----------------------------------------------------------------------------------------
    def open(self):
        """Open the port exclusively (a port this bus had open is closed first)."""
        self.close()
        port = sdk.PortHandler(self.port_name)
        try:
            ok = port.openPort() and port.setBaudRate(self.baudrate)
        except Exception as exc:          # pyserial: SerialException / OSError when the device is missing
            raise BusError(PORT, f"cannot open {self.port_name}: {exc}") from None
        if not ok:
            raise BusError(PORT, f"cannot open {self.port_name} at {self.baudrate} baud")
        try:
            _lock(port.ser.fileno())
        except BlockingIOError:
            port.closePort()
            holder = port_holder(self.port_name)
            raise BusError(PORT, f"{self.port_name} is in use by {holder}: another driver (or program) has it; "
                                 "stop it first (one driver per bus)", held_by=holder) from None
        self.port = port

    def close(self):
        if self.port is not None:
            try:
                fcntl.ioctl(self.port.ser.fileno(), termios.TIOCNXCL)    # the tty's exclusive mode off again
            except Exception:             # noqa: BLE001 - already gone
                pass
            try:
                self.port.closePort()
            except Exception:             # already gone
                pass
        self.port = None
        self._sync_write = self._sync_read = None
        self._item_reads = {}

    def release(self):
        """Clear the SDK's port-in-use flag and stale input after an interrupted transaction (e.g. a signal
        during a cycle); without this every later instruction fails with 'Port is in use'."""
        if self.port is not None:
            self.port.is_using = False
            try:
                self.port.clearPort()
            except Exception:             # the device may be gone
                pass

    @property
    def is_open(self) -> bool:
        return self.port is not None

    def _call(self, fn, *args, motor_id=None):
        if self.port is None:
            raise BusError(PORT, f"{self.port_name} is not open", motor_id)
        try:
            return fn(*args)
        except BusError:
            raise
        except IndexError:                # the SDK indexed past the end of a short status packet
            raise BusError(CORRUPT, f"short status packet{'' if motor_id is None else f' from ID {motor_id}'}",
                           motor_id) from None
        except Exception as exc:          # the device vanished under pyserial
            raise BusError(PORT, f"{self.port_name}: {type(exc).__name__}: {exc}", motor_id) from None

    def _check(self, result: int, error: int, what: str, motor_id=None):
        if result != sdk.COMM_SUCCESS:
            kind = _COMM_KIND.get(result, TX)
            raise BusError(kind, f"{what}: {self.ph.getTxRxResult(result)}", motor_id)
        if motor_id is not None:
            if error & ALERT:
                self.alerts.add(motor_id)
            else:
                self.alerts.discard(motor_id)
        if error & 0x7F:
            code = error & 0x7F
            raise BusError(STATUS, f"{what}: servo reports {_STATUS_TEXT.get(code, f'error {code}')}", motor_id)

    # --- single-servo instructions -------------------------------------------------------------------
    def ping(self, motor_id: int) -> int:
        """Model number of servo ``motor_id``."""
        number, result, error = self._call(self.ph.ping, self.port, motor_id, motor_id=motor_id)
        self._check(result, error, f"ping ID {motor_id}", motor_id)
        return int(number)

    def write(self, motor_id: int, item, value: int):
        fn = {1: self.ph.write1ByteTxRx, 2: self.ph.write2ByteTxRx, 4: self.ph.write4ByteTxRx}[item.size]
        v = int(value) & ((1 << (8 * item.size)) - 1)
        result, error = self._call(fn, self.port, motor_id, item.address, v, motor_id=motor_id)
        self._check(result, error, f"write {item.address} on ID {motor_id}", motor_id)

    def broadcast_write(self, item, value: int):
        """Write ``value`` to ``item`` of every servo at once (broadcast ID: no status packet, no check)."""
        fn = {1: self.ph.write1ByteTxRx, 2: self.ph.write2ByteTxRx, 4: self.ph.write4ByteTxRx}[item.size]
        v = int(value) & ((1 << (8 * item.size)) - 1)
        result, _ = self._call(fn, self.port, BROADCAST_ID, item.address, v)
        self._check(result, 0, f"broadcast write {item.address}")

    def read(self, motor_id: int, item, signed: bool = False) -> int:
        data, result, error = self._call(self.ph.readTxRx, self.port, motor_id, item.address, item.size,
                                         motor_id=motor_id)
        self._check(result, error, f"read {item.address} on ID {motor_id}", motor_id)
        value = int.from_bytes(bytes(data), "little")
        return _signed32(value) if signed and item.size == 4 else value

    def reboot(self, motor_id: int):
        result, error = self._call(self.ph.reboot, self.port, motor_id, motor_id=motor_id)
        self._check(result, error, f"reboot ID {motor_id}", motor_id)

    # --- the cycle: one sync write, one sync read ----------------------------------------------------
    def setup_sync(self, ids, family):
        """Prepare the group instructions for servos ``ids`` of one control-table family."""
        self.ids = list(ids)
        self.family = family
        self._sync_write = sdk.GroupSyncWrite(self.port, self.ph, family.goal_position.address, 4)
        blk = family.present_block
        self._sync_read = sdk.GroupSyncRead(self.port, self.ph, blk.address, blk.size)
        self._item_reads = {}                    # item name -> its GroupSyncRead (the health checks)
        for name in HEALTH_ITEMS:
            item = getattr(family, name)
            self._item_reads[name] = sdk.GroupSyncRead(self.port, self.ph, item.address, item.size)
        for i in self.ids:
            self._sync_read.addParam(i)
            for group in self._item_reads.values():
                group.addParam(i)

    def sync_write_goals(self, goals: dict):
        """Goal positions [counts] by ID in one SYNC WRITE (no reply).

        dynamixel-sdk 4.1 sends instruction packets without byte stuffing (txPacket drops the stuffed
        copy), so parameter bytes FF FF FD FD would lose a byte at the servo. Goal bytes cannot contain it
        for any position a supported servo accepts (it needs a value beyond +-2^24 counts or an ID of
        0xFD, which is not a servo ID), so goal writes are safe; the emulator tests pin this down."""
        sw = self._sync_write
        sw.clearParam()
        for i, counts in goals.items():
            v = int(counts) & 0xFFFFFFFF
            sw.addParam(i, [v & 0xFF, (v >> 8) & 0xFF, (v >> 16) & 0xFF, (v >> 24) & 0xFF])
        result = self._call(sw.txPacket)
        if result != sdk.COMM_SUCCESS:
            raise BusError(_COMM_KIND.get(result, TX), f"sync write: {self.ph.getTxRxResult(result)}")

    def sync_read_present(self) -> dict:
        """{id: (position counts, velocity units)} in one SYNC READ."""
        sr = self._sync_read
        result = self._call(sr.txRxPacket)
        if result != sdk.COMM_SUCCESS:
            raise BusError(_COMM_KIND.get(result, TX), f"sync read: {self.ph.getTxRxResult(result)}")
        f = self.family
        self._check_lengths(sr, f.present_block, "sync read")
        out = {}
        for i in self.ids:
            pos = _signed32(sr.getData(i, f.present_position.address, 4))
            vel = _signed32(sr.getData(i, f.present_velocity.address, 4))
            out[i] = (pos, vel)
        return out

    def sync_read_item(self, name: str) -> dict:
        """{id: value} of control-table item ``name`` (one of HEALTH_ITEMS) in one SYNC READ."""
        group = self._item_reads[name]
        what = f"{name.replace('_', ' ')} read"
        result = self._call(group.txRxPacket)
        if result != sdk.COMM_SUCCESS:
            raise BusError(_COMM_KIND.get(result, TX), f"{what}: {self.ph.getTxRxResult(result)}")
        item = getattr(self.family, name)
        self._check_lengths(group, item, what)
        return {i: int(group.getData(i, item.address, item.size)) for i in self.ids}

    def sync_read_hardware_errors(self) -> dict:
        """{id: hardware error status byte} in one SYNC READ."""
        return self.sync_read_item("hardware_error")

    def _check_lengths(self, group, block, what: str):
        """BusError(CORRUPT) unless every servo's answer in ``group`` holds the whole ``block`` (a second
        line of defence: the packet handler already refuses answers of the wrong length)."""
        for i in self.ids:
            got = len(group.data_dict.get(i) or ())
            if not group.isAvailable(i, block.address, block.size) or got != block.size:
                raise BusError(CORRUPT, f"{what}: {got} of {block.size} bytes from ID {i}", i)
