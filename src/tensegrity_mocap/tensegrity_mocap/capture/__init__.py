"""A model of your own robot from a static capture, no ROS: the model document and its error
(:mod:`.document`), the model from a take with the robot frame and marker map (:mod:`.model`) and the
prestress / equilibrium check of the captured shape (:mod:`.equilibrium`). The command line:
``tensegrity-mocap model`` (:mod:`tensegrity_mocap.cli.mocap`)."""
from tensegrity_mocap.capture.document import DEFAULT_STRING_DAMPING, CaptureModelError, build_document, model_document
from tensegrity_mocap.capture.equilibrium import equilibrium_report
from tensegrity_mocap.capture.model import (MIN_BAR_LENGTH, CaptureModel, model_from_capture, parse_pairs, read_pairs,
                                            robot_frame, sidecar_paths, take_markers, write_capture_model)

__all__ = ["CaptureModelError", "CaptureModel", "model_document", "build_document", "model_from_capture",
           "write_capture_model", "equilibrium_report", "parse_pairs", "read_pairs", "take_markers", "robot_frame",
           "sidecar_paths", "DEFAULT_STRING_DAMPING", "MIN_BAR_LENGTH"]
