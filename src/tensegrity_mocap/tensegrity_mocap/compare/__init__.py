"""Simulation vs experiment, no ROS: the comparison itself (:mod:`.core`: node and plate-frame deviations, time
alignment), experiments from MCAP recordings, Motive CSVs and tracks (:mod:`.inputs`), the simulation side
(:mod:`.simulation`: trajectories, inputs, initial state), the figures (:mod:`.plots`) and the capture readers
the engine's identification finds through entry points (:mod:`.readers`). The command line:
:mod:`tensegrity_mocap.cli.compare`.

The figures (matplotlib) and the readers are not imported here: import them from their modules."""
from tensegrity_mocap.compare.core import (CompareError, Comparison, Experiment, FrameDef, compare,
                                           experiment_from_arrays, frame_series, model_frame_defs, node_deviation,
                                           parse_frame)
from tensegrity_mocap.compare.inputs import (experiment_from_mcap, experiment_from_motive, experiment_from_npz,
                                             load_experiment, node_markers, parse_marker_map, read_transform,
                                             transform_experiment)
from tensegrity_mocap.compare.simulation import (initial_state, input_schedule, load_trajectory, recorded_angles,
                                                 recorded_schedule, simulate, simulate_paper)

__all__ = ["CompareError", "Comparison", "Experiment", "FrameDef", "compare", "experiment_from_arrays", "frame_series",
           "model_frame_defs", "node_deviation", "parse_frame", "experiment_from_mcap", "experiment_from_motive",
           "experiment_from_npz", "load_experiment", "node_markers", "parse_marker_map", "read_transform",
           "transform_experiment", "initial_state", "input_schedule", "load_trajectory", "recorded_angles",
           "recorded_schedule", "simulate", "simulate_paper"]
