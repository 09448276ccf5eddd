"""Rolling locomotion of robots lying on the ground: :class:`GaitPlanner` plans tips from face to face toward
a heading (quasi-static sensitivity and support polygon, confirmed in the contact dynamics),
:class:`RollingController` is the state machine a ROS node wraps. See docs/locomotion.md."""
from tensegrity_engine.locomotion.controller import RollingController
from tensegrity_engine.locomotion.planner import CannotRoll, GaitPlanner, TipStep, rollable

__all__ = ["CannotRoll", "GaitPlanner", "RollingController", "TipStep", "rollable"]
