"""The actuator driver's logic without ROS: configuration, start-up model check, the control cycle, goals,
safety hold, fault handling, reconnection with backoff and a torque off that keeps its promise.

States: ``unconfigured`` -> ``configure()`` (open the port, ping every motor, check its model, read its
torque) -> ``configured`` -> ``activate()`` (hardware errors cleared by reboot, position mode, profiles,
goals = present positions, torque on) -> ``active``. ``cycle()`` runs one control cycle (one sync write of
goals, one sync read of present positions; every ``error_read_every`` cycles also sync reads of the
hardware error status, torque enable and model number, so a servo that faulted, reset by itself (power
dip: torque off) or was swapped for another is a fault within that many cycles). Communication errors
are counted; ``max_consecutive_errors`` failed cycles in a row, a lost port or an unexpected exception
inside the cycle (torque off is tried first) make the bus ``disconnected``: the driver retries with exponential backoff (``backoff`` = first, longest wait [s]),
forever. The torque off it could not do while the bus was gone is owed: when the port is back it is done
first (broadcast, then per motor written and read back). Once every motor answers with its configured
model again the driver does NOT restart by itself (the restart rule of machine safety: no automatic
restart after a link is restored): torque off on every motor, state ``fault`` until the operator's
``deactivate()``/``activate()``; a servo power-cycled during the drop (torque enable 0 or a hardware error
cleared without us, or a RAM register the driver wrote, e.g. the profile velocity, back at its power-on
value) is named in the fault and in ``power_cycled``. A hardware error on any motor is latched: torque
off on all motors, state ``fault`` until ``deactivate()``/``activate()`` (which reboots the faulty motors);
it is not retried by itself, because a servo that overheated or was overloaded should be looked at first.
A reconnect never clears one: an error found when the bus comes back is latched the same way.

Torque is reported as the truth per motor (``torque_on``: True, False or None = unknown). Torque off
(deactivate, shutdown, fault) works from every state: a closed or lost port is reopened, torque_enable = 0
is broadcast and then written to every motor and read back, retried for at most ``TORQUE_OFF_BUDGET``
seconds; motors that never confirmed stay unknown, and that is logged as an error and kept in
``torque_problem``. In state ``fault`` the torque off still owed (the port dropped in the middle of it) is
retried every ``backoff[0]`` seconds until every motor confirmed it (also after a deactivate, by
``retry_torque_off()``), ``torque_problem`` saying how far it got. A driver that never configured its servos (``owns_bus`` False: e.g. the port was held by another
driver) sends them nothing, not even a torque off. ``cycle()`` never raises.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .bus import PORT, BusError, DynamixelBus
from .control_tables import BY_NUMBER, POSITION_CONTROL_MODE, MotorModel, decode_hardware_error

TORQUE_OFF_BUDGET = 0.5      # s: torque off tries this long (plus one write) before it reports "unknown"


class ConfigError(ValueError):
    """The configuration or the hardware found does not match; the message says what to fix."""


class CommandRejected(ValueError):
    """A goal that was not applied; the message says why."""


@dataclass(frozen=True)
class MotorConfig:
    name: str                      # joint name (e.g. m1, the model's actuator)
    id: int
    model: MotorModel
    spool_radius: float = 0.02     # m
    sign: float = 1.0              # u = sign * spool_radius * (angle - zero)
    zero_offset: float = 0.0       # rad: motor angle 0 sits at this servo angle
    min_angle: float | None = None  # rad (joint angle); None: the servo's position range
    max_angle: float | None = None
    profile_velocity: float = 3.0  # rad/s (0: the servo's maximum)
    profile_acceleration: float = 0.0  # raw profile/goal acceleration units (0: the servo's maximum)

    def __post_init__(self):
        if not (0 <= self.id <= 252):
            raise ConfigError(f"motor {self.name}: id {self.id} must be 0..252")
        if not (self.spool_radius > 0 and math.isfinite(self.spool_radius) and self.sign in (-1.0, 1.0)):
            raise ConfigError(f"motor {self.name}: spool_radius must be > 0 and sign +1 or -1")
        for key in ("zero_offset", "profile_velocity", "profile_acceleration"):
            v = getattr(self, key)
            if not math.isfinite(v) or (key != "zero_offset" and v < 0):
                raise ConfigError(f"motor {self.name}: {key} must be a finite number"
                                  + ("" if key == "zero_offset" else " >= 0 (0: the servo's maximum)")
                                  + f", got {v}")
        for key in ("min_angle", "max_angle"):
            v = getattr(self, key)
            if v is not None and not math.isfinite(v):
                raise ConfigError(f"motor {self.name}: {key} must be a finite number [rad], got {v}")
        lo = self.model.counts_to_rad(self.model.min_counts) - self.zero_offset
        hi = self.model.counts_to_rad(self.model.max_counts) - self.zero_offset
        if self.min_angle is None:
            object.__setattr__(self, "min_angle", lo)
        if self.max_angle is None:
            object.__setattr__(self, "max_angle", hi)
        if not (self.min_angle < self.max_angle):
            raise ConfigError(f"motor {self.name}: min_angle must be below max_angle")
        if self.min_angle < lo - 1e-9 or self.max_angle > hi + 1e-9:
            raise ConfigError(f"motor {self.name}: limits [{self.min_angle}, {self.max_angle}] rad exceed the "
                              f"{self.model.name} position range [{lo:.4g}, {hi:.4g}] rad with zero_offset "
                              f"{self.zero_offset}")

    def angle_to_counts(self, angle: float) -> int:
        return self.model.rad_to_counts(angle + self.zero_offset)

    def counts_to_angle(self, counts: int) -> float:
        return self.model.counts_to_rad(counts) - self.zero_offset

    def angle_to_u(self, angle):
        return self.sign * self.spool_radius * np.asarray(angle, float)

    def u_to_angle(self, u):
        return np.asarray(u, float) / (self.sign * self.spool_radius)


@dataclass
class Stats:
    cycles: int = 0
    failed_cycles: int = 0
    errors: dict = field(default_factory=lambda: {"timeout": 0, "corrupt": 0, "port": 0, "status": 0, "tx": 0})
    reconnects: int = 0
    last_error: str = ""


class Driver:
    def __init__(self, motors, port: str, baudrate: int = 1_000_000, error_read_every: int = 10,
                 max_consecutive_errors: int = 5, backoff=(0.5, 5.0), clock=time.monotonic, log=print,
                 log_error=None):
        """``backoff``: first and longest wait [s] between reconnection attempts; ``log``/``log_error``:
        callables taking one line (warnings / errors; errors go to ``log`` if not given)."""
        motors = list(motors)
        if not motors:
            raise ConfigError("no motors configured")
        names = [m.name for m in motors]
        ids = [m.id for m in motors]
        if len(set(names)) != len(names) or len(set(ids)) != len(ids):
            raise ConfigError(f"motor names and ids must be unique (names {names}, ids {ids})")
        families = {m.model.family.name for m in motors}
        if len(families) > 1:
            raise ConfigError(f"all motors on one bus must share a control table family for sync read/write "
                              f"(found {sorted(families)}); use one driver per family")
        self.motors = motors
        self.family = motors[0].model.family
        self.names = tuple(names)
        self.bus = DynamixelBus(port, baudrate)
        self.error_read_every = max(1, int(error_read_every))
        self.max_consecutive = max(1, int(max_consecutive_errors))
        self.backoff = (float(backoff[0]), float(backoff[1]))
        self.clock = clock
        self.log = log
        self.log_error = log_error or log
        self.state = "unconfigured"
        self.stats = Stats()
        n = len(motors)
        self.goal = np.zeros(n)                  # rad (joint angles)
        self.position = np.full(n, np.nan)       # rad
        self.velocity = np.full(n, np.nan)       # rad/s
        self.hardware_error = np.zeros(n, int)
        self.holding = False                     # safety hold: goals frozen at the present positions
        self._hold_fresh = False                 # the hold still waits for its fresh read of the positions
        self.torque_on = [None] * n              # per motor: True, False or None (unknown)
        self.torque_problem = ""                 # why torque is unknown after a torque off, or ""
        self.fault_reason = ""                   # why the driver is not running, or "" (ERROR diagnostics)
        self._faults = []                        # faults not yet reported (take_faults)
        self._consecutive = 0
        self._retry_at = 0.0
        self._retry_wait = self.backoff[0]
        self._was_active = False
        self.ever_torqued = False                # this driver turned torque on at least once
        self.owns_bus = False                    # configured its servos once: only then does it write to them
        self._models_checked = False             # every model checked since the port was opened
        self.port_held_by = ""                   # the last open failed: another process holds the port
        self.power_cycled = {}                   # motor index -> evidence it was power-cycled during a drop
        self._lost = ""                          # why the bus was lost (while disconnected)
        self._off_owed = []                      # motors whose torque off is not confirmed yet
        self._off_tries, self._off_last = 0, ""  # torque off tries so far and the last error
        self._torque_at_loss = [None] * n        # torque per motor when the bus was lost
        self._written = [{} for _ in motors]     # RAM items activate wrote per motor: name -> value

    @property
    def torque(self):
        """True if torque is on on every motor, False if off on every motor, else None (unknown or mixed)."""
        states = set(self.torque_on)
        return states.pop() if len(states) == 1 else None

    # --- lifecycle -----------------------------------------------------------------------------------
    def configure(self):
        """Open the port and check every motor answers with the configured model (raises ConfigError)."""
        try:
            self._open()
        except BusError as exc:
            advice = "" if exc.held_by else "; check the adapter is plugged in and the 'port' parameter"
            raise self._failed(f"{exc}{advice}") from None
        try:
            self._check_models()
        except ConfigError as exc:
            self.bus.close()
            raise self._failed(str(exc)) from None
        self.bus.setup_sync([m.id for m in self.motors], self.family)
        self.owns_bus = self._models_checked = True
        self.fault_reason = ""
        self.state = "configured"

    def _open(self):
        """Open the port (exclusively: BusError naming the holder if another process has it)."""
        try:
            self.bus.open()
        except BusError as exc:
            self.port_held_by = exc.held_by
            raise
        self.port_held_by = ""

    def _reopen(self):
        """Open the port again for a torque off (held, so no other driver takes the servos over meanwhile);
        its models are checked again before the next activation."""
        self._open()
        self.bus.setup_sync([m.id for m in self.motors], self.family)
        self._models_checked = False

    def _failed(self, reason: str) -> ConfigError:
        self._note(reason)
        return ConfigError(reason)

    def _note(self, reason: str):
        """A fault: the reason stays in ``fault_reason`` while it lasts and in ``take_faults()`` until
        reported, so a fault recovered from within one diagnostics period is still reported."""
        self.fault_reason = reason
        self._faults = (self._faults + [reason])[-10:]

    def take_faults(self) -> list:
        """The faults noted since the last call (at most the last 10), oldest first."""
        faults, self._faults = self._faults, []
        return faults

    def _check_models(self):
        problems = []
        for k, m in enumerate(self.motors):
            try:
                number = self.bus.ping(m.id)
            except BusError as exc:
                problems.append(f"motor {m.name} (ID {m.id}) does not answer a ping ({exc})")
                continue
            if number != m.model.number:
                found = BY_NUMBER.get(number)
                problems.append(f"motor {m.name} (ID {m.id}) is a {found.name if found else 'unknown model'} "
                                f"(model number {number}), the configuration says {m.model.name} "
                                f"({m.model.number}): fix 'model' or the ID")
                continue
            try:
                self.torque_on[k] = bool(self.bus.read(m.id, self.family.torque_enable))
            except BusError as exc:
                problems.append(f"motor {m.name} (ID {m.id}): torque state not readable ({exc})")
        if problems:
            raise ConfigError("; ".join(problems))

    def activate(self):
        """Clear hardware errors (reboot), position mode, profiles, hold the present positions, torque on: the
        operator's action (never called by the driver itself). Configures first if the port is closed (after
        a lost bus or a deactivation that had to reopen it)."""
        if self.state == "active":
            raise ConfigError("already active")
        if not self.bus.is_open:
            self.configure()
        elif not self._models_checked:          # the port was reopened for a torque off only
            try:
                self._check_models()
            except ConfigError as exc:
                raise self._failed(str(exc)) from None
            self._models_checked = True
        f = self.family
        self.power_cycled = {}
        try:
            errors = [self.bus.read(m.id, f.hardware_error) for m in self.motors]
            for i, m in enumerate(self.motors):
                if errors[i]:
                    self.log(f"motor {m.name}: hardware error {decode_hardware_error(errors[i])}: rebooting it")
                    self.bus.reboot(m.id)
                    time.sleep(0.05)
                self.bus.write(m.id, f.torque_enable, 0)
                self.torque_on[i] = False
                self.bus.write(m.id, f.operating_mode, POSITION_CONTROL_MODE)
                vel = m.model.rad_s_to_velocity(m.profile_velocity) if m.profile_velocity > 0 else 0
                self.bus.write(m.id, f.profile_velocity, vel)
                self.bus.write(m.id, f.profile_acceleration, int(m.profile_acceleration))
                self._written[i] = {"profile_velocity": vel, "profile_acceleration": int(m.profile_acceleration)}
            present = self.bus.sync_read_present()
            self._store_present(present)
            self.goal = np.clip(self.position, [m.min_angle for m in self.motors],
                                [m.max_angle for m in self.motors])
            self.bus.sync_write_goals({m.id: m.angle_to_counts(g) for m, g in zip(self.motors, self.goal)})
            for i, m in enumerate(self.motors):
                self.torque_on[i] = None             # a write that fails may still have been executed
                self.ever_torqued = True
                self.bus.write(m.id, f.torque_enable, 1)
                self.torque_on[i] = True
        except BusError as exc:
            self._torque_off()
            raise self._failed(f"activation failed: {exc}") from None
        self.hardware_error[:] = 0
        self.fault_reason = ""
        self.torque_problem = ""
        self._off_owed = []
        self._consecutive = 0
        self.state = "active"
        self._was_active = True

    def deactivate(self):
        """Torque off (see :meth:`_torque_off`: from any state, reopening the port if needed)."""
        confirmed = self._torque_off()
        self._was_active = False
        if self.state in ("active", "fault", "disconnected"):
            self.state = "configured" if self.bus.is_open else "unconfigured"
        if confirmed:
            self.fault_reason = ""

    def cleanup(self):
        self.bus.close()
        self.state = "unconfigured"

    def shutdown(self):
        """Torque off and close the port (for node shutdown)."""
        self.deactivate()
        self.cleanup()

    def _torque_off(self, budget: float = TORQUE_OFF_BUDGET) -> bool:
        """Torque off on every motor; True if every motor confirmed it (written, then read back as 0).

        A closed or lost port is reopened; after a reopen or a failed try, torque_enable = 0 is also
        broadcast (ID 0xFE: every servo on the bus, no answer) before the per-motor writes. Tries again for
        ``budget`` seconds; motors that never confirmed are torque state unknown (logged as an error, kept in
        ``torque_problem``) and owed: retried in state ``fault`` (:meth:`retry_torque_off`). A port it had
        to open stays open (locked: no other driver takes the servos over; the models are checked again at
        the next activate). A driver that never configured its servos sends them nothing."""
        if not self.owns_bus:
            self.log(f"no torque off sent: this driver never configured the servos on {self.bus.port_name} "
                     "(they are not its own)")
            return False
        end = time.monotonic() + budget
        self._off_owed = list(range(len(self.motors)))
        self._off_tries, self._off_last = 0, ""
        reopened = False
        while True:
            try:
                if not self.bus.is_open:
                    self._reopen()
                    reopened = True
                self._off_try(broadcast=reopened or self._off_tries > 0, end=end)
            except BusError as exc:             # port gone: reopen on the next try
                self._off_tries += 1
                self._off_last = str(exc)
                self.bus.close()
                reopened = False
            if not self._off_owed or time.monotonic() >= end:
                break
            time.sleep(0.02)
        self._off_report()
        if self._off_owed:
            self.log_error(self.torque_problem)
            self._faults.append(self.torque_problem)
        return not self._off_owed

    def _off_try(self, broadcast: bool, end: float = math.inf):
        """One try at the torque off still owed, on the open port: broadcast (if asked), then per motor write
        torque_enable = 0 and read it back. Raises BusError if the port is lost."""
        self._off_tries += 1
        self.bus.release()
        if broadcast:
            self.bus.broadcast_write(self.family.torque_enable, 0)
        for k in list(self._off_owed):
            m = self.motors[k]
            try:
                self.bus.write(m.id, self.family.torque_enable, 0)
                if self.bus.read(m.id, self.family.torque_enable) == 0:
                    self.torque_on[k] = False
                    self._torque_at_loss[k] = False     # off by us now: no sign of a power cycle any more
                    self._off_owed.remove(k)
            except BusError as exc:
                if exc.kind == PORT:
                    raise
                self._off_last = str(exc)
            if time.monotonic() >= end:
                break

    def _off_report(self):
        """``torque_problem`` from the torque off still owed (how far it got), '' once all confirmed."""
        for k in self._off_owed:
            self.torque_on[k] = None
        if self._off_owed:
            n = len(self.motors)
            names = ", ".join(self.motors[k].name for k in self._off_owed)
            self.torque_problem = (f"torque off not confirmed on {names} after {self._off_tries} tries "
                                   f"({n - len(self._off_owed)} of {n} motors confirmed off; {self._off_last}): "
                                   "torque state UNKNOWN")
        elif self.torque_problem:
            self.log(f"torque off confirmed on every motor (read back) after {self._off_tries} tries")
            self.torque_problem = ""

    @property
    def torque_off_owed(self) -> bool:
        """A torque off is not yet confirmed on every motor (retried by :meth:`retry_torque_off`)."""
        return bool(self._off_owed)

    def retry_torque_off(self):
        """A torque off still owed (state ``fault``; or inactive after a deactivate that could not reach every
        motor): one more try every ``backoff[0]`` seconds, as soon as the port is back (it stays open)."""
        now = self.clock()
        if not self._off_owed or now < self._retry_at:
            return
        self._retry_at = now + self.backoff[0]
        try:
            if not self.bus.is_open:
                self._reopen()
            self._off_try(broadcast=True)
        except BusError as exc:
            self._off_tries += 1
            self._off_last = str(exc)
            self.bus.close()
        self._off_report()
        if self.torque_problem:
            self.torque_problem += f"; retrying every {self.backoff[0]:g} s"

    # --- goals ---------------------------------------------------------------------------------------
    def set_goals(self, indices, angles):
        """New goal angles [rad] for motors ``indices``; all-or-nothing validation."""
        angles = np.asarray(angles, float)
        idx = np.asarray(indices, int)
        if self.holding:
            raise CommandRejected("safety stop active: holding position")
        if not np.all(np.isfinite(angles)):
            raise CommandRejected("goal angle is NaN or infinite")
        for k, a in zip(idx, angles):
            m = self.motors[k]
            if not (m.min_angle <= a <= m.max_angle):
                raise CommandRejected(f"goal {a:.4g} rad for '{m.name}' is outside [{m.min_angle:.4g}, "
                                      f"{m.max_angle:.4g}] rad")
        self.goal[idx] = angles

    def set_goals_clamped(self, angles):
        """Goals for all motors, clamped to their limits (for generated trajectories). Ignored while holding."""
        if self.holding:
            return
        a = np.asarray(angles, float)
        if np.all(np.isfinite(a)):
            self.goal = np.clip(a, [m.min_angle for m in self.motors], [m.max_angle for m in self.motors])

    def hold(self, on: bool = True):
        """Safety hold: freeze goals at the present positions (where known); the next cycle reads the
        positions once more before it writes, so the servos hold where they are then, not where they were
        a cycle earlier (no step back)."""
        self.holding = bool(on)
        if on:
            known = np.isfinite(self.position)
            self.goal[known] = self.position[known]
            self._hold_fresh = True

    # --- the cycle -----------------------------------------------------------------------------------
    def cycle(self):
        """One control cycle. Never raises: communication problems are counted and handled, anything else
        (a bug, an SDK surprise) turns torque off and makes the bus disconnected (retried with backoff)."""
        try:
            if self.state == "disconnected":
                self._try_reconnect()
                return
            if self.state == "fault" and self._off_owed:
                self.retry_torque_off()
            if self.state != "active":
                return
            self.stats.cycles += 1
            try:
                if self._hold_fresh and self.holding:
                    self._store_present(self.bus.sync_read_present())
                    self.goal[:] = self.position
                self._hold_fresh = False
                self.bus.sync_write_goals({m.id: m.angle_to_counts(g) for m, g in zip(self.motors, self.goal)})
                self._store_present(self.bus.sync_read_present())
                if self.stats.cycles % self.error_read_every == 0 or self.bus.alerts:
                    problem = self._health_problem()
                    if problem:
                        self._fault(problem)
                        return
                self._consecutive = 0
            except BusError as exc:
                self._comm_error(exc)
        except Exception as exc:             # noqa: BLE001 - the control loop must survive anything
            self._unexpected(exc)

    def _store_present(self, present: dict):
        for k, m in enumerate(self.motors):
            pos, vel = present[m.id]
            self.position[k] = m.counts_to_angle(pos)
            self.velocity[k] = math.copysign(m.model.velocity_to_rad_s(abs(vel)), vel) if vel else 0.0

    def _comm_error(self, exc: BusError):
        self.stats.failed_cycles += 1
        self.stats.errors[exc.kind] = self.stats.errors.get(exc.kind, 0) + 1
        self.stats.last_error = str(exc)
        self._consecutive += 1
        if exc.kind == PORT or self._consecutive >= self.max_consecutive:
            self._lose_bus(f"bus lost ({exc}); torque state unknown")

    def _unexpected(self, exc: Exception):
        self.stats.failed_cycles += 1
        reason = f"unexpected {type(exc).__name__} in the control cycle: {exc}"
        self.stats.last_error = reason
        self.log_error(f"{reason}: torque off, then reconnecting with backoff")
        try:
            self._torque_off()
        except Exception as again:           # noqa: BLE001 - report it, the state below says unknown
            self.torque_on = [None] * len(self.motors)
            self.torque_problem = f"torque off failed: {type(again).__name__}: {again}: torque state UNKNOWN"
        self._lose_bus(reason)

    def _lose_bus(self, reason: str):
        """Close the port and retry with backoff (state ``disconnected``); positions are unknown."""
        self.log_error(f"{reason}; retrying with backoff")
        self.bus.close()
        self.state = "disconnected"
        self._lost = reason
        self._note(reason)
        self._torque_at_loss = list(self.torque_on)
        if self.owns_bus:                    # owed: done first when the port is back
            self._off_owed = [k for k, t in enumerate(self.torque_on) if t is not False]
        self.torque_on = [False if t is False else None for t in self.torque_on]
        self.position[:] = np.nan
        self.velocity[:] = np.nan
        self._retry_wait = self.backoff[0]
        self._retry_at = self.clock() + self._retry_wait

    def _health_problem(self) -> str:
        """'' if every servo is as configured and running, else why not: a hardware error; torque off by
        itself (the servo reset: a power dip / brown-out, or it was replaced); another model answering."""
        errors = self.bus.sync_read_item("hardware_error")
        self.hardware_error[:] = [errors[m.id] for m in self.motors]
        if np.any(self.hardware_error):
            return self._hardware_error_text()
        torque = self.bus.sync_read_item("torque_enable")
        off = [m.name for k, m in enumerate(self.motors) if self.torque_on[k] and not torque[m.id]]
        if off:
            return (f"torque went off by itself on {', '.join(off)}: the servo reset (power dip, brown-out) or "
                    "was replaced")
        models = self.bus.sync_read_item("model_number")
        swapped = [f"{m.name} (ID {m.id}) now answers with model number {models[m.id]}, configured "
                   f"{m.model.name} ({m.model.number})" for m in self.motors if models[m.id] != m.model.number]
        if swapped:
            return "servo replaced while running: " + "; ".join(swapped)
        return ""

    def _hardware_error_text(self) -> str:
        bad = [f"{m.name}: {', '.join(decode_hardware_error(int(e)))}"
               for m, e in zip(self.motors, self.hardware_error) if e]
        return "hardware error on " + "; ".join(bad)

    def _fault(self, reason: str | None = None):
        """Latch a fault: torque off on all motors, state ``fault`` until deactivate + activate."""
        reason = reason or self._hardware_error_text()
        self.log_error(f"{reason}: torque off on all motors")
        self._torque_off()
        self._note(reason)
        self.state = "fault"

    def _try_reconnect(self):
        """Reopen the port (backoff), do the torque off owed, re-check every model; then, if the driver was
        active, no automatic restart: a latched fault (:meth:`_link_restored`)."""
        now = self.clock()
        if now < self._retry_at:
            return
        try:
            self._open()
            for k, why in self._power_cycle_evidence().items():     # before the torque off changes torque;
                self.power_cycled.setdefault(k, why)                 # the first seen says the most
            if self._off_owed:
                self._off_try(broadcast=True)
                self._off_report()
            self._check_models()
            self.bus.setup_sync([m.id for m in self.motors], self.family)
            self._models_checked = True
            self.stats.reconnects += 1
            if self._was_active:
                self._link_restored()
            else:
                self.fault_reason = ""
                self.state = "configured"
                self.log(f"bus back after {self.stats.reconnects} reconnect(s)")
        except (BusError, ConfigError) as exc:
            self.bus.close()
            self.state = "disconnected"
            self.stats.last_error = f"reconnect failed: {exc}"
            grow = 1.0 if self._off_owed else 2.0       # a torque off still owed: keep trying at the first wait
            self._retry_wait = min(self._retry_wait * grow, self.backoff[1])
            self._retry_at = now + self._retry_wait
            self._note(f"{self._lost}; reconnect failed: {exc}; next try in {self._retry_wait:.2g} s")

    def _power_cycle_evidence(self) -> dict:
        """{motor index: why it looks power-cycled during the drop}, read whenever the port is back: torque
        enable 0 on a servo that was torqued, a latched hardware error gone, or a RAM item activate wrote no
        longer as written (power-on values). Servos that do not answer are left out (the model check says
        so). Raises BusError if the port is lost."""
        f, out = self.family, {}
        for k, m in enumerate(self.motors):
            try:
                torque = self.bus.read(m.id, f.torque_enable)
                error = self.bus.read(m.id, f.hardware_error)
                changed = {name: self.bus.read(m.id, getattr(f, name)) for name in self._written[k]}
            except BusError as exc:
                if exc.kind == PORT:
                    raise
                continue
            why = [f"{name.replace('_', ' ')} {v} (written {self._written[k][name]})"
                   for name, v in changed.items() if v != self._written[k][name]]
            if self._torque_at_loss[k] and not torque and not error:
                why.insert(0, "torque enable 0 (it was on)")
            if self.hardware_error[k] and not error:
                why.insert(0, "its hardware error cleared")
            if why:
                out[k] = ", ".join(why)
        return out

    def _link_restored(self):
        """The bus is back after a loss while active: torque off on every motor and a latched fault naming
        the servos power-cycled meanwhile and any hardware error; the operator's deactivate + activate
        resumes (the restart rule: nothing moves again by itself after a link is restored)."""
        evidence = self.power_cycled
        errors = self.bus.sync_read_item("hardware_error")
        self.hardware_error[:] = [errors[m.id] for m in self.motors]
        parts = [f"bus back after a loss ({self._lost.split('; torque state')[0]})"]
        if np.any(self.hardware_error):
            parts.append(self._hardware_error_text())
        if evidence:
            parts.append("power-cycled during the drop: " + "; ".join(
                f"servo ID {self.motors[k].id} ({self.motors[k].name}): {why}" for k, why in evidence.items()))
        parts.append("no automatic restart: deactivate + activate to resume")
        self._fault("; ".join(parts))

    # --- reporting -----------------------------------------------------------------------------------
    def u(self) -> np.ndarray:
        """Present string displacements u [m] (reeled in) through the spool mapping."""
        return np.array([m.angle_to_u(a) for m, a in zip(self.motors, self.position)], float)

    def mapping(self) -> dict:
        """Per joint: ID, model, spool radius, sign, zero offset, limits (published once, latched)."""
        return {m.name: {"id": m.id, "model": m.model.name, "model_number": m.model.number,
                         "spool_radius": m.spool_radius, "sign": m.sign, "zero_offset": m.zero_offset,
                         "min_angle": m.min_angle, "max_angle": m.max_angle,
                         "u_formula": "u = sign * spool_radius * angle  [m reeled in]"} for m in self.motors}
