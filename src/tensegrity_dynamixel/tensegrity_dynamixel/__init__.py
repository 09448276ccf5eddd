"""Dynamixel actuator driver for tensegrity robots (Protocol 2.0, dynamixel-sdk)."""
