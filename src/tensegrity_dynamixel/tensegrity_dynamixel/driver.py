"""The actuator driver's logic without ROS: configuration, start-up model check, the control cycle, goals,
safety hold, fault handling and reconnection with backoff.

States: ``unconfigured`` -> ``configure()`` (open the port, ping every motor, check its model) ->
``configured`` -> ``activate()`` (hardware errors cleared by reboot, position mode, profiles, goals = present
positions, torque on) -> ``active``. ``cycle()`` runs one control cycle (one sync write of goals, one sync
read of present positions; every ``error_read_every`` cycles also a sync read of the hardware error
status). Communication errors are counted; ``max_consecutive_errors`` failed cycles in a row or a lost port
make the bus ``disconnected``: the driver retries with exponential backoff and, once every motor answers
again, holds them where they are with torque on. A hardware error on any motor is fatal: torque off on
all motors, state ``fault`` until ``deactivate()``/``activate()`` (which reboots the faulty motors).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .bus import PORT, BusError, DynamixelBus
from .control_tables import POSITION_CONTROL_MODE, MotorModel, decode_hardware_error


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
                 max_consecutive_errors: int = 5, backoff=(0.5, 5.0), clock=time.monotonic, log=print):
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
        self.state = "unconfigured"
        self.stats = Stats()
        n = len(motors)
        self.goal = np.zeros(n)                  # rad (joint angles)
        self.position = np.full(n, np.nan)       # rad
        self.velocity = np.full(n, np.nan)       # rad/s
        self.hardware_error = np.zeros(n, int)
        self.holding = False                     # safety stop: goals frozen at the present positions
        self.torque = False
        self._consecutive = 0
        self._retry_at = 0.0
        self._retry_wait = self.backoff[0]
        self._was_active = False
        self.fault_reason = ""

    # --- lifecycle -----------------------------------------------------------------------------------
    def configure(self):
        """Open the port and check every motor answers with the configured model (raises ConfigError)."""
        try:
            self.bus.open()
        except BusError as exc:
            raise ConfigError(f"{exc}; check the adapter is plugged in and the 'port' parameter") from None
        try:
            self._check_models()
        except ConfigError:
            self.bus.close()
            raise
        self.bus.setup_sync([m.id for m in self.motors], self.family)
        self.state = "configured"

    def _check_models(self):
        problems = []
        for m in self.motors:
            try:
                number = self.bus.ping(m.id)
            except BusError as exc:
                problems.append(f"motor {m.name} (ID {m.id}) does not answer a ping ({exc})")
                continue
            if number != m.model.number:
                from .control_tables import BY_NUMBER
                found = BY_NUMBER.get(number)
                problems.append(f"motor {m.name} (ID {m.id}) is a {found.name if found else 'unknown model'} "
                                f"(model number {number}), the configuration says {m.model.name} "
                                f"({m.model.number}): fix 'model' or the ID")
        if problems:
            raise ConfigError("; ".join(problems))

    def activate(self):
        """Clear hardware errors (reboot), position mode, profiles, hold the present positions, torque on."""
        if self.state not in ("configured", "fault"):
            raise ConfigError(f"cannot activate from state {self.state!r}")
        f = self.family
        try:
            for i, m in enumerate(self.motors):
                err = self.bus.read(m.id, f.hardware_error)
                if err:
                    self.log(f"motor {m.name}: hardware error {decode_hardware_error(err)}: rebooting it")
                    self.bus.reboot(m.id)
                    time.sleep(0.05)
                self.bus.write(m.id, f.torque_enable, 0)
                self.bus.write(m.id, f.operating_mode, POSITION_CONTROL_MODE)
                vel = m.model.rad_s_to_velocity(m.profile_velocity) if m.profile_velocity > 0 else 0
                self.bus.write(m.id, f.profile_velocity, vel)
                self.bus.write(m.id, f.profile_acceleration, int(m.profile_acceleration))
            present = self.bus.sync_read_present()
            self._store_present(present)
            self.goal = np.clip(self.position, [m.min_angle for m in self.motors],
                                [m.max_angle for m in self.motors])
            self.bus.sync_write_goals({m.id: m.angle_to_counts(g) for m, g in zip(self.motors, self.goal)})
            for m in self.motors:
                self.bus.write(m.id, f.torque_enable, 1)
        except BusError as exc:
            self._torque_off()
            raise ConfigError(f"activation failed: {exc}") from None
        self.torque = True
        self.hardware_error[:] = 0
        self.fault_reason = ""
        self.state = "active"
        self._was_active = True

    def deactivate(self):
        """Torque off (best effort: a lost port cannot be switched off and says so)."""
        self._torque_off()
        self._was_active = False
        if self.state in ("active", "fault", "disconnected"):
            self.state = "configured" if self.bus.is_open else "unconfigured"

    def cleanup(self):
        self.bus.close()
        self.state = "unconfigured"

    def shutdown(self):
        """Torque off and close the port (for node shutdown)."""
        self.deactivate()
        self.cleanup()

    def _torque_off(self):
        if not self.bus.is_open:
            self.torque = False
            return
        self.bus.release()
        failed = []
        for m in self.motors:
            try:
                self.bus.write(m.id, self.family.torque_enable, 0)
            except BusError as exc:
                failed.append(f"{m.name}: {exc}")
        self.torque = False
        if failed:
            self.log(f"torque off failed on {len(failed)} motor(s): {'; '.join(failed)}")

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
        """Safety stop: freeze goals at the present positions (where known)."""
        self.holding = bool(on)
        if on:
            known = np.isfinite(self.position)
            self.goal[known] = self.position[known]

    # --- the cycle -----------------------------------------------------------------------------------
    def cycle(self):
        """One control cycle. Never raises for communication problems (they are counted and handled)."""
        if self.state == "disconnected":
            self._try_reconnect()
            return
        if self.state != "active":
            return
        self.stats.cycles += 1
        try:
            self.bus.sync_write_goals({m.id: m.angle_to_counts(g) for m, g in zip(self.motors, self.goal)})
            self._store_present(self.bus.sync_read_present())
            if self.stats.cycles % self.error_read_every == 0 or self.bus.alerts:
                errors = self.bus.sync_read_hardware_errors()
                self.hardware_error[:] = [errors[m.id] for m in self.motors]
                if np.any(self.hardware_error):
                    self._fault()
                    return
            self._consecutive = 0
        except BusError as exc:
            self._comm_error(exc)

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
            self.log(f"bus lost ({exc}); torque state unknown; retrying with backoff")
            self.bus.close()
            self.state = "disconnected"
            self.position[:] = np.nan
            self.velocity[:] = np.nan
            self._retry_wait = self.backoff[0]
            self._retry_at = self.clock() + self._retry_wait

    def _fault(self):
        bad = [f"{m.name}: {', '.join(decode_hardware_error(int(e)))}"
               for m, e in zip(self.motors, self.hardware_error) if e]
        self.fault_reason = "hardware error on " + "; ".join(bad)
        self.log(f"{self.fault_reason}: torque off on all motors")
        self._torque_off()
        self.state = "fault"

    def _try_reconnect(self):
        now = self.clock()
        if now < self._retry_at:
            return
        try:
            self.bus.open()
            self._check_models()
            self.bus.setup_sync([m.id for m in self.motors], self.family)
            self.state = "configured"
            if self._was_active:
                self.activate()          # holds the present positions, torque on
            self.stats.reconnects += 1
            self._consecutive = 0
            self.log(f"bus back after {self.stats.reconnects} reconnect(s); holding the present positions")
        except (BusError, ConfigError) as exc:
            self.bus.close()
            self.state = "disconnected"
            self.stats.last_error = f"reconnect failed: {exc}"
            self._retry_wait = min(self._retry_wait * 2.0, self.backoff[1])
            self._retry_at = now + self._retry_wait

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
