"""Synthetic motion-capture takes of a hand-built six-bar robot with their ground truth, no ROS: the robot
and the takes (:mod:`.capture`: unlabeled markers, strays, a payload, occlusions) and the motion they follow
(:mod:`.motion`). The command line: ``tensegrity-mocap synth`` (:mod:`tensegrity_mocap.cli.synth`)."""
from tensegrity_mocap.synthetic.capture import (PAYLOAD, STRAY, SyntheticCapture, SyntheticRobot, identity_errors,
                                                make_capture, six_bar_robot, static_capture, write_capture_csv)

__all__ = ["SyntheticRobot", "SyntheticCapture", "six_bar_robot", "make_capture", "static_capture",
           "identity_errors", "write_capture_csv", "STRAY", "PAYLOAD"]
