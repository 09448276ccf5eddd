"""Control tables of the supported Dynamixel Protocol 2.0 servos (from the ROBOTIS e-Manual).

Three families are supported; within a family the addresses are equal and the models differ in model
number, resolution and velocity unit:

* legacy **PRO** (the manipulator paper's L54-50-S290-R and M42-10-S260-R): torque enable 562, goal
  position 596, present position 611; in position mode the goal velocity (600) and goal acceleration
  (606) limit the motion; position range +-half a revolution around 0;
* **PRO+ / P-series** (PH/PM): torque enable 512, profile acceleration 556, profile velocity 560, goal
  position 564, present velocity 576, present position 580; velocity unit 0.01 rev/min;
* **X-series** (XM/XH/XW 430/540): torque enable 64, profile acceleration 108, profile velocity 112, goal
  position 116, present velocity 128, present position 132; 4096 counts/rev, 0..4095 in position mode
  (centre 2048), velocity unit 0.229 rev/min.

Hardware error status bits (all three): 0 input voltage, 2 overheating, 3 motor encoder, 4 electrical
shock, 5 overload.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Item:
    address: int
    size: int           # bytes


@dataclass(frozen=True)
class Family:
    name: str
    model_number: Item
    firmware_version: Item
    id: Item
    operating_mode: Item
    torque_enable: Item
    hardware_error: Item
    profile_acceleration: Item  # legacy PRO: goal acceleration
    profile_velocity: Item      # legacy PRO: goal velocity (limits position moves)
    goal_position: Item
    present_velocity: Item
    present_position: Item
    table_size: int             # bytes of the control table (for emulators and range checks)

    @property
    def present_block(self) -> Item:
        """present velocity + present position as one contiguous block (one sync read)."""
        lo = min(self.present_velocity.address, self.present_position.address)
        hi = max(self.present_velocity.address + self.present_velocity.size,
                 self.present_position.address + self.present_position.size)
        return Item(lo, hi - lo)


LEGACY_PRO = Family("PRO", Item(0, 2), Item(6, 1), Item(7, 1), Item(11, 1), Item(562, 1), Item(892, 1),
                    Item(606, 4), Item(600, 4), Item(596, 4), Item(615, 4), Item(611, 4), 893)
PRO_PLUS = Family("PRO+", Item(0, 2), Item(6, 1), Item(7, 1), Item(11, 1), Item(512, 1), Item(518, 1),
                  Item(556, 4), Item(560, 4), Item(564, 4), Item(576, 4), Item(580, 4), 584)
X_SERIES = Family("X", Item(0, 2), Item(6, 1), Item(7, 1), Item(11, 1), Item(64, 1), Item(70, 1),
                  Item(108, 4), Item(112, 4), Item(116, 4), Item(128, 4), Item(132, 4), 147)

HARDWARE_ERROR_BITS = {0: "input voltage", 2: "overheating", 3: "motor encoder", 4: "electrical shock",
                       5: "overload"}
POSITION_CONTROL_MODE = 3
# bus baud rates of the Protocol 2.0 servos [bit/s] (X: up to 4.5 M; PRO / PRO+: 6 M and 10.5 M too)
BAUD_RATES = (9600, 57600, 115200, 1_000_000, 2_000_000, 3_000_000, 4_000_000, 4_500_000, 6_000_000,
              10_500_000)


@dataclass(frozen=True)
class MotorModel:
    name: str
    number: int                 # model number answered to a ping
    family: Family
    counts_per_rev: int
    min_counts: int             # position range in position control mode
    max_counts: int
    centre_counts: int          # counts at angle 0 before the joint's zero offset
    velocity_unit_rpm: float    # rev/min per velocity count
    max_speed_rpm: float        # no-load speed (emulators move at most this fast)

    def counts_to_rad(self, counts) -> float:
        return (counts - self.centre_counts) * (2.0 * math.pi / self.counts_per_rev)

    def rad_to_counts(self, angle: float) -> int:
        return int(round(angle * self.counts_per_rev / (2.0 * math.pi))) + self.centre_counts

    def velocity_to_rad_s(self, units) -> float:
        return units * self.velocity_unit_rpm * (2.0 * math.pi / 60.0)

    def rad_s_to_velocity(self, rad_s: float) -> int:
        return int(round(abs(rad_s) / (self.velocity_unit_rpm * 2.0 * math.pi / 60.0)))


def _pro(name, number, half, vel_unit, rpm):
    return MotorModel(name, number, LEGACY_PRO, 2 * half, -half, half, 0, vel_unit, rpm)


def _pplus(name, number, half, rpm):
    return MotorModel(name, number, PRO_PLUS, 2 * half, -half, half, 0, 0.01, rpm)


def _x(name, number, rpm):
    return MotorModel(name, number, X_SERIES, 4096, 0, 4095, 2048, 0.229, rpm)


MODELS = {m.name: m for m in [
    # legacy PRO (the manipulator paper: stage 1 L54-50-S290-R, stage 2 M42-10-S260-R)
    _pro("L54-50-S290-R", 38176, 103846, 0.00346667, 26.0),
    _pro("L54-50-S500-R", 38152, 180692, 0.00199234, 16.0),
    _pro("L54-30-S400-R", 37928, 144197, 0.00249657, 28.7),
    _pro("L54-30-S500-R", 37896, 180692, 0.00199234, 23.0),
    _pro("M42-10-S260-R", 43288, 131593, 0.00389076, 25.0),
    _pro("M54-40-S250-R", 46096, 125708, 0.00397746, 29.0),
    _pro("M54-60-S250-R", 46352, 125708, 0.00397746, 29.0),
    _pro("H42-20-S300-R", 51200, 151875, 0.00329218, 27.0),
    _pro("H54-100-S500-R", 53768, 250961, 0.00199234, 29.0),
    _pro("H54-200-S500-R", 54024, 250961, 0.00199234, 29.0),
    # PRO+ / P-series
    _pplus("PH42-020-S300-R", 2000, 303454, 30.0),
    _pplus("PH54-100-S500-R", 2010, 501923, 29.0),
    _pplus("PH54-200-S500-R", 2020, 501923, 29.0),
    _pplus("PM42-010-S260-R", 2100, 263187, 29.0),
    _pplus("PM54-040-S250-R", 2110, 251173, 29.0),
    _pplus("PM54-060-S250-R", 2120, 251173, 29.0),
    # X-series
    _x("XM430-W350", 1020, 46.0),
    _x("XM430-W210", 1030, 77.0),
    _x("XH430-W350", 1000, 46.0),
    _x("XH430-W210", 1010, 77.0),
    _x("XM540-W270", 1120, 30.0),
    _x("XM540-W150", 1130, 53.0),
]}
BY_NUMBER = {m.number: m for m in MODELS.values()}


def motor_model(name: str) -> MotorModel:
    """The model by name, with or without a 'Dynamixel PRO ' style prefix (e.g. from a model file)."""
    key = name.strip()
    for prefix in ("Dynamixel ", "DYNAMIXEL ", "PRO+ ", "PRO ", "Pro "):
        if key.startswith(prefix):
            key = key[len(prefix):]
    key = key.upper()
    for m in MODELS.values():
        if m.name.upper() == key:
            return m
    raise KeyError(f"unknown Dynamixel model {name!r}; supported: {', '.join(sorted(MODELS))}")


def decode_hardware_error(status: int) -> list:
    """Names of the set bits of a hardware error status byte."""
    return [text for bit, text in HARDWARE_ERROR_BITS.items() if status & (1 << bit)] + \
           [f"bit {b}" for b in range(8) if status & (1 << b) and b not in HARDWARE_ERROR_BITS]
