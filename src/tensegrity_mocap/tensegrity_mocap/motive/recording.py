"""OptiTrack Motive CSV exports (format versions 1.21 to 1.24): the file layout, the in-memory recording and
its errors. No ROS. Reading: :mod:`tensegrity_mocap.motive.read`; writing: :mod:`tensegrity_mocap.motive.write`;
frame replay: :mod:`tensegrity_mocap.motive.frame_replay`.

Layout of a Motive CSV export with "header information" enabled (what this module reads and writes)::

    Format Version,1.23,Take Name,take,Capture Frame Rate,120.000000,Export Frame Rate,120.000000,...
    <blank line>
    ,Type,Rigid Body,Rigid Body,...,Rigid Body Marker,...,Marker,Marker,Marker,...
    ,Name,Robot,Robot,...,Robot:Marker1,...,Robot:n1,Robot:n1,Robot:n1,Unlabeled 1000,...
    ,ID,1,1,...,1:1,...,2,2,2,1000,...
    ,,Rotation,Rotation,Rotation,Rotation,Position,Position,Position,Mean Marker Error,...,Position,...
    Frame,Time (Seconds),X,Y,Z,W,X,Y,Z,,X,Y,Z,...
    0,0.000000,0.001,-0.002,0.000,0.999,1.234567,0.500000,-0.250000,0.000123,...
    1,0.008333,...

* line 1: key/value pairs (``Format Version``, ``Take Name``, ``Take Notes``, ``Capture Frame Rate``,
  ``Export Frame Rate``, ``Capture Start Time``, ``Capture Start Frame``, ``Total Frames in Take``,
  ``Total Exported Frames``, ``Rotation Type``, ``Length Units``, ``Coordinate Space``), in any order;
* the column header rows carry their label in the second cell (``Type``, ``Name``, ``ID``, and an empty
  label for the row naming the quantity: ``Rotation``, ``Position``, ``Mean Marker Error``,
  ``Marker Quality``); the axis row starts with ``Frame,Time (Seconds)`` and names the component
  (``X, Y, Z, W``, empty for scalar columns);
* data rows: frame index, time [s], then the values; **an empty cell is a gap** (occluded marker,
  untracked rigid body).

Column types understood: ``Rigid Body`` (rotation: quaternion ``X Y Z W`` or Euler ``X Y Z`` in degrees
when ``Rotation Type`` is an axis order such as ``XYZ``; position; mean marker error), ``Rigid Body Marker``
(solved marker-constraint positions and quality), ``Marker`` (labeled markers such as ``Robot:n1``, and
unlabeled ones named ``Unlabeled <n>``). Other types (skeletons, bones, force plates...) are skipped and
listed in :attr:`MotiveRecording.skipped`. Lengths are converted to metres from ``Length Units`` (Meters,
Centimeters, Millimeters; also Inches and Feet). Coordinates stay in Motive's frame, which is **Y-up**
(right-handed, x and z horizontal); :func:`tensegrity_mocap.axes.y_up_to_z_up` gives the ROS (Z-up) view ``(x, -z, y)``.

Files may use CRLF line endings and start with a UTF-8 byte-order mark; non-UTF-8 files (names written
in a Windows code page) are read as Latin-1. Problems raise :class:`MotiveCSVError` naming the file,
the line and column (both 1-based, as a spreadsheet or editor shows them) and what is wrong.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["MotiveCSVError", "MotiveRecording", "LENGTH_UNITS", "UNIT_NAMES"]

#: metres per length unit named in the ``Length Units`` header field (lower case)
LENGTH_UNITS = {"meters": 1.0, "metres": 1.0, "meter": 1.0, "m": 1.0,
                "centimeters": 0.01, "centimetres": 0.01, "centimeter": 0.01, "cm": 0.01,
                "millimeters": 0.001, "millimetres": 0.001, "millimeter": 0.001, "mm": 0.001,
                "inches": 0.0254, "inch": 0.0254, "in": 0.0254, "feet": 0.3048, "foot": 0.3048, "ft": 0.3048}
#: the ``Length Units`` name written for a scale [m per unit]
UNIT_NAMES = {1.0: "Meters", 0.01: "Centimeters", 0.001: "Millimeters", 0.0254: "Inches", 0.3048: "Feet"}


class MotiveCSVError(ValueError):
    """A Motive CSV file cannot be read; the message names the file, line, column and the problem."""

    def __init__(self, path, message: str, line: int | None = None, column: int | None = None):
        self.path = str(path)
        self.line = line
        self.column = column
        self.reason = message
        where = []
        if line is not None:
            where.append(f"line {line}")
        if column is not None:
            where.append(f"column {column}")
        super().__init__(f"{self.path}: " + (", ".join(where) + ": " if where else "") + message)



@dataclass
class MotiveRecording:
    """Contents of a Motive CSV export. Positions in metres, Motive's (Y-up) frame, NaN = gap."""
    path: str
    metadata: dict                       # the first line's key/value pairs, as text
    frame_rate: float                    # Hz: Export Frame Rate (else Capture Frame Rate, else from the times)
    frames: np.ndarray                   # (T,) int frame indices
    times: np.ndarray                    # (T,) s
    markers: dict                        # labeled markers: name -> (T, 3)
    marker_ids: dict                     # name -> ID cell (text: "2", "1:2", hex ...)
    unlabeled: dict                      # unlabeled markers: name -> (T, 3)
    unlabeled_ids: dict = field(default_factory=dict)
    rigid_bodies: dict = field(default_factory=dict)        # name -> (T, 7): x y z qx qy qz qw
    rigid_body_ids: dict = field(default_factory=dict)
    rigid_body_errors: dict = field(default_factory=dict)   # name -> (T,) mean marker error [m]
    rigid_body_markers: dict = field(default_factory=dict)  # name -> (T, 3) solved marker-constraint positions
    marker_quality: dict = field(default_factory=dict)      # marker name -> (T,) quality 0..1, when exported
    format_version: str = ""
    take_name: str = ""
    rotation_type: str = "Quaternion"
    length_units: str = "Meters"
    length_scale: float = 1.0            # metres per file unit
    coordinate_space: str = "Global"
    up_axis: str = "y"                   # Motive exports are Y-up
    skipped: list = field(default_factory=list)             # (type, name) of column groups not understood

    @property
    def n_frames(self) -> int:
        return len(self.times)

    @property
    def duration(self) -> float:
        return float(self.times[-1] - self.times[0]) if len(self.times) > 1 else 0.0

    def marker_array(self, names) -> np.ndarray:
        """Labeled (or unlabeled) markers ``names`` stacked to (T, k, 3)."""
        out = np.full((self.n_frames, len(names), 3), np.nan)
        for k, n in enumerate(names):
            src = self.markers.get(n, self.unlabeled.get(n))
            if src is None:
                raise KeyError(f"no marker {n!r} in {self.path}; markers: {', '.join(self.markers) or 'none'}")
            out[:, k] = src
        return out
