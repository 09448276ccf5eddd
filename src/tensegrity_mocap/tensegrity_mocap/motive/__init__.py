"""OptiTrack Motive CSV exports (format 1.21 to 1.24): the recording and its errors (:mod:`.recording`, which
also describes the file layout), reading (:mod:`.read`), writing (:mod:`.write`) and frame-by-frame replay
(:mod:`.frame_replay`). Positions stay in Motive's Y-up frame; :mod:`tensegrity_mocap.axes` converts. No ROS."""
from tensegrity_mocap.motive.frame_replay import replay
from tensegrity_mocap.motive.read import read_motive_csv
from tensegrity_mocap.motive.recording import LENGTH_UNITS, UNIT_NAMES, MotiveCSVError, MotiveRecording
from tensegrity_mocap.motive.write import write_motive_csv

__all__ = ["MotiveCSVError", "MotiveRecording", "LENGTH_UNITS", "UNIT_NAMES", "read_motive_csv", "write_motive_csv",
           "replay"]
