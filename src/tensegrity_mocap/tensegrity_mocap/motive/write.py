"""Writing a Motive-style CSV export (the layout in :mod:`tensegrity_mocap.motive.recording`). No ROS.

:func:`write_motive_csv` checks its arguments, lays out the columns (rigid bodies, labeled markers,
unlabeled markers), builds the metadata line and writes the header rows and the data rows.
"""
from __future__ import annotations

import csv
import io
import math
import time as _time
from pathlib import Path

import numpy as np

from tensegrity_mocap.motive.recording import LENGTH_UNITS, UNIT_NAMES

__all__ = ["write_motive_csv"]


class _Columns:
    """The columns of an export, in order: type, name, ID, quantity and axis cells and the values (T,)."""

    def __init__(self, T: int, scale: float, marker_ids: dict):
        self.T, self.scale, self.marker_ids = T, scale, marker_ids
        self.types, self.names, self.ids, self.quantities, self.axes, self.cols = [], [], [], [], [], []

    def add(self, typ, name, ident, quantity, axis, column):
        self.types.append(typ)
        self.names.append(name)
        self.ids.append(ident)
        self.quantities.append(quantity)
        self.axes.append(axis)
        self.cols.append(column)

    def array(self, name, a, width) -> np.ndarray:
        a = np.asarray(a, float)
        if a.shape != (self.T, width):
            raise ValueError(f"{name}: expected shape ({self.T}, {width}), got {a.shape}")
        return a

    def rigid_bodies(self, rigid_bodies: dict):
        for k, (name, a) in enumerate(rigid_bodies.items()):
            a = self.array(name, a, 7)
            gap = ~np.isfinite(a).all(axis=1)
            a = np.where(gap[:, None], np.nan, a)
            ident = str(self.marker_ids.get(name, k + 1))
            for c, ax in zip((3, 4, 5, 6), "XYZW"):
                self.add("Rigid Body", name, ident, "Rotation", ax, a[:, c])
            for c, ax in enumerate("XYZ"):
                self.add("Rigid Body", name, ident, "Position", ax, a[:, c] / self.scale)
            self.add("Rigid Body", name, ident, "Mean Marker Error", "", np.where(gap, np.nan, 0.0))

    def markers(self, markers: dict, first_id: int):
        for k, (name, a) in enumerate(markers.items()):
            a = self.array(name, a, 3)
            ident = str(self.marker_ids.get(name, first_id + k))
            for c, ax in enumerate("XYZ"):
                self.add("Marker", name, ident, "Position", ax, a[:, c] / self.scale)

    def unlabeled(self, unlabeled: dict):
        for k, (name, a) in enumerate(unlabeled.items()):
            a = self.array(name, a, 3)
            if not name.lower().startswith("unlabeled"):
                raise ValueError(f"unlabeled marker names must start with 'Unlabeled' (got {name!r})")
            digits = name.split()[-1]
            ident = str(self.marker_ids.get(name, digits if digits.isdigit() else 1000 + k))
            for c, ax in enumerate("XYZ"):
                self.add("Marker", name, ident, "Position", ax, a[:, c] / self.scale)


def _metadata(format_version, take_name, frame_rate, capture_start, T, total_frames, unit_label) -> list:
    """The first line's key/value pairs; ``capture_start`` None: now, in Motive's format."""
    if capture_start is None:
        lt = _time.localtime()
        capture_start = _time.strftime("%Y-%m-%d %I.%M.%S.000 %p", lt)
    return [("Format Version", format_version), ("Take Name", take_name),
            ("Capture Frame Rate", f"{frame_rate:.6f}"), ("Export Frame Rate", f"{frame_rate:.6f}"),
            ("Capture Start Time", capture_start),
            ("Total Frames in Take", str(T if total_frames is None else int(total_frames))),
            ("Total Exported Frames", str(T)), ("Rotation Type", "Quaternion"),
            ("Length Units", unit_label), ("Coordinate Space", "Global")]


def _text(meta: list, c: _Columns, t, frames, precision: int) -> str:
    """The file's text: metadata, blank line, the Type/Name/ID/quantity/axis rows, the data rows (CRLF)."""
    T = len(t)
    data = np.column_stack(c.cols) if c.cols else np.zeros((T, 0))
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow([x for kv in meta for x in kv])
    w.writerow([])
    w.writerow(["", "Type"] + c.types)
    w.writerow(["", "Name"] + c.names)
    w.writerow(["", "ID"] + c.ids)
    w.writerow(["", ""] + c.quantities)
    w.writerow(["Frame", "Time (Seconds)"] + c.axes)
    cells = np.full(data.shape, "", dtype=object)          # empty cell = gap; only finite values formatted
    finite = np.isfinite(data)
    cells[finite] = [f"{v:.{precision}f}" for v in data[finite].tolist()]
    buf.write("".join(",".join([str(int(frames[r])), f"{t[r]:.6f}"] + cells[r].tolist()) + "\r\n"
                      for r in range(T)))
    return buf.getvalue()


def write_motive_csv(path, times, markers: dict, unlabeled: dict | None = None, rigid_bodies: dict | None = None,
                     frame_rate: float = 120.0, take_name: str = "tensegrity", length_units: str = "Meters",
                     format_version: str = "1.23", marker_ids: dict | None = None, precision: int = 6,
                     capture_start: str | None = None, frames=None, total_frames: int | None = None) -> Path:
    """Write a Motive-style CSV export (the 1.2x layout of :mod:`tensegrity_mocap.motive.recording`, CRLF
    line endings).

    ``markers`` (labeled, e.g. ``{"Robot:n1": (T,3)}``) and ``unlabeled`` (``{"Unlabeled 1000": (T,3)}``)
    are positions in metres in Motive's Y-up frame (see :func:`tensegrity_mocap.axes.z_up_to_y_up`);
    ``rigid_bodies`` maps a name to (T, 7) ``x y z qx qy qz qw``. NaN values are written as empty cells
    (gaps); a rigid body row with any NaN is written as a gap. Values are written in ``length_units`` with
    ``precision`` decimals (Motive writes 6). ``frames`` defaults to 0..T-1 (frame numbers may jump: dropped
    frames); ``total_frames`` (the header's ``Total Frames in Take``) defaults to T. Returns the path.
    """
    path = Path(path)
    t = np.asarray(times, float).ravel()
    T = len(t)
    scale = LENGTH_UNITS.get(str(length_units).lower())
    if scale is None:
        raise ValueError(f"unknown length_units {length_units!r}; use Meters, Centimeters or Millimeters")
    if not (math.isfinite(frame_rate) and frame_rate > 0):
        raise ValueError(f"frame_rate must be positive, got {frame_rate}")
    frames = np.arange(T) if frames is None else np.asarray(frames, np.int64)
    rigid_bodies = dict(rigid_bodies or {})
    columns = _Columns(T, scale, dict(marker_ids or {}))
    columns.rigid_bodies(rigid_bodies)
    columns.markers(markers, len(rigid_bodies) + 1)
    columns.unlabeled(dict(unlabeled or {}))
    meta = _metadata(format_version, take_name, frame_rate, capture_start, T, total_frames,
                     UNIT_NAMES.get(scale, length_units))
    text = _text(meta, columns, t, frames, precision)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="")
    return path
