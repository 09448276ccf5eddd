"""Plate-pose control of models with frames and actuators (pure Python, no ROS).

* :func:`inverse_statics` (:mod:`.inverse`): the actuator inputs u [m] that hold a frame at a 4x4 pose at rest,
  or the nearest reachable pose and the miss;
* :func:`workspace` (:mod:`.workspace`): the frame's reachable poses for inputs sampled within the limits;
* :class:`PoseController` (:mod:`.controller`): feed-forward from inverse statics (:mod:`.feed_forward`: exact
  solves, the linearised map along paths) plus integral feedback on the measured pose bounded by the actuator
  limits, rate- and step-limited, input-shaped (:mod:`.shaping`), arrival judged from noisy measurements
  (:mod:`.arrival`); smooth trajectories (:mod:`.pose_path`);
* :mod:`.static_map` (inputs to the settled shape and its derivative), :mod:`.pose` (pose errors, Jacobian).
"""
from tensegrity_engine.control.controller import PoseController
from tensegrity_engine.control.feed_forward import FeedForward
from tensegrity_engine.control.inverse import InverseResult, inverse_statics
from tensegrity_engine.control.pose_path import PosePath
from tensegrity_engine.control.workspace import Workspace, workspace

__all__ = ["FeedForward", "InverseResult", "PoseController", "PosePath", "Workspace", "inverse_statics", "workspace"]
