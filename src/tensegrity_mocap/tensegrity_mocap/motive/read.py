"""Reading a Motive CSV export (the layout in :mod:`tensegrity_mocap.motive.recording`). No ROS.

:func:`read_motive_csv` reads in named steps: the CSV rows, the optional metadata line, the column header
rows, units / rotation type / frame rate from the metadata, the columns grouped by asset and quantity, the
data rows, and finally the recording filled per column type.
"""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tensegrity_mocap.motive.recording import LENGTH_UNITS, UNIT_NAMES, MotiveCSVError, MotiveRecording

__all__ = ["read_motive_csv"]

_EULER_ORDERS = {"XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"}
_HEADER_LABELS = {"type", "name", "id"}


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise MotiveCSVError(path, f"cannot read the file ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")            # Windows code page names; digits and commas are ASCII anyway


def _number(path, text, line, column, what="a number") -> float:
    try:
        return float(text)
    except ValueError:
        raise MotiveCSVError(path, f"{text!r} is not {what}", line, column) from None


def _metadata(path, cells, line) -> dict:
    meta = {}
    for i in range(0, len(cells), 2):
        key = cells[i].strip()
        val = cells[i + 1].strip() if i + 1 < len(cells) else ""
        if key:
            meta[key] = val
        elif val:
            raise MotiveCSVError(path, f"header value {val!r} has no key", line, i + 2)
    return meta


def _blank(cells) -> bool:
    return not any(c.strip() for c in cells)


def _cell(row, j) -> str:
    return row[1][j].strip() if row is not None and j < len(row[1]) else ""


@dataclass
class _Header:
    """The column header rows: ``rows`` label (type, name, id) -> (line, cells), the quantity row, the axis row."""
    rows: dict
    kind_row: tuple | None
    axis_line: int
    axis: list
    ncol: int                   # columns in use (trailing empty ones dropped)
    data_start: int             # index of the first row after the axis row


@dataclass
class _Units:
    """Units, rotation type and frame rates from the metadata line."""
    unit_name: str
    scale: float                # metres per file unit
    rot_type: str
    is_quat: bool
    rates: dict                 # "Export Frame Rate" / "Capture Frame Rate" -> Hz, when given


def _csv_rows(path: Path) -> list:
    """Every row of the file as (1-based line, cells); an empty file is an error."""
    reader = csv.reader(io.StringIO(_read_text(path), newline=""))
    rows = []
    try:
        for cells in reader:
            rows.append((reader.line_num, cells))
    except csv.Error as exc:
        raise MotiveCSVError(path, f"not valid CSV ({exc})", reader.line_num) from None
    if not rows or all(_blank(c) for _, c in rows):
        raise MotiveCSVError(path, "the file is empty")
    return rows


def _metadata_line(path, rows) -> tuple:
    """(metadata, its line or None, index of the next row): the line is optional (exports without header
    information start with the column rows)."""
    i = 0
    while i < len(rows) and _blank(rows[i][1]):
        i += 1
    if rows[i][1][0].strip().lower() == "format version":
        return _metadata(path, rows[i][1], rows[i][0]), rows[i][0], i + 1
    return {}, None, i


def _header_label(path, cells, line) -> str:
    """The label of a column header row (its first cell, else its second), checked."""
    first = cells[0].strip()
    if not first:
        return cells[1].strip() if len(cells) > 1 else ""
    if first.lower() not in _HEADER_LABELS:
        if first.lstrip("-").replace(".", "", 1).isdigit():
            raise MotiveCSVError(path, f"data row (frame {first!r}) before the 'Frame,Time (Seconds),...' "
                                 "column header row", line, 1)
        raise MotiveCSVError(path, f"expected a column header row (Type, Name, ID, ...) or the "
                             f"'Frame,Time (Seconds),...' row, found {first!r}", line, 1)
    return first


def _column_header(path, rows, i) -> _Header:
    """The column header rows from row ``i`` up to the axis row ``Frame,Time (Seconds),X,Y,Z,...``."""
    header, kind_row, axis_line, axis = {}, None, None, None
    while i < len(rows):
        line, cells = rows[i]
        i += 1
        if _blank(cells):
            continue
        if cells[0].strip().lower() == "frame":
            axis_line, axis = line, cells
            break
        key = _header_label(path, cells, line).lower()
        if key == "":
            kind_row = (line, cells)
        else:
            header[key] = (line, cells)
    if axis is None:
        raise MotiveCSVError(path, "no column header row starting with 'Frame' (is this a Motive CSV export?)",
                             rows[-1][0])
    if len(axis) < 2 or not axis[1].strip().lower().startswith("time"):
        raise MotiveCSVError(path, f"the second column must be 'Time (Seconds)', found "
                             f"{axis[1].strip() if len(axis) > 1 else ''!r}", axis_line, 2)
    if "type" not in header or "name" not in header:
        missing = " and ".join(k.capitalize() for k in ("type", "name") if k not in header)
        raise MotiveCSVError(path, f"the column header has no {missing} row", axis_line)
    ncol = max(len(axis), *(len(c) for _, c in header.values()), len(kind_row[1]) if kind_row else 0)
    while ncol > 2 and _blank([header["type"][1][ncol - 1] if ncol - 1 < len(header["type"][1]) else "",
                               axis[ncol - 1] if ncol - 1 < len(axis) else ""]):
        ncol -= 1                                           # trailing empty columns (a final comma)
    return _Header(header, kind_row, axis_line, axis, ncol, i)


def _units(path, meta, meta_line) -> _Units:
    """Length unit, rotation type and frame rates of the metadata, checked."""
    unit_name = meta.get("Length Units", "Meters") or "Meters"
    scale = LENGTH_UNITS.get(unit_name.lower())
    if scale is None:
        col = list(meta).index("Length Units") * 2 + 2 if "Length Units" in meta else None
        raise MotiveCSVError(path, f"unknown Length Units {unit_name!r} (expected Meters, Centimeters or "
                             "Millimeters)", meta_line, col)
    rot_type = meta.get("Rotation Type", "Quaternion") or "Quaternion"
    if rot_type.lower() != "quaternion" and rot_type.upper() not in _EULER_ORDERS:
        col = list(meta).index("Rotation Type") * 2 + 2
        raise MotiveCSVError(path, f"unknown Rotation Type {rot_type!r} (expected Quaternion or an axis "
                             f"order such as XYZ)", meta_line, col)
    rates = {}
    for key in ("Export Frame Rate", "Capture Frame Rate"):
        if meta.get(key):
            r = _number(path, meta[key], meta_line, list(meta).index(key) * 2 + 2, "a frame rate")
            if not (math.isfinite(r) and r > 0):
                raise MotiveCSVError(path, f"{key} {meta[key]!r} must be positive", meta_line,
                                     list(meta).index(key) * 2 + 2)
            rates[key] = r
    return _Units(unit_name, scale, rot_type, rot_type.lower() == "quaternion", rates)


def _column_groups(path, h: _Header) -> dict:
    """The columns grouped: (type, name, id) -> quantity (lower case) -> axis -> column index."""
    groups = {}
    for j in range(2, h.ncol):
        typ, name = _cell(h.rows["type"], j), _cell(h.rows["name"], j)
        ident = _cell(h.rows.get("id"), j)
        quantity = _cell(h.kind_row, j)
        ax = h.axis[j].strip().upper() if j < len(h.axis) else ""
        if not typ and not name:
            if quantity or ax:
                raise MotiveCSVError(path, "column has no Type and Name", h.rows["type"][0], j + 1)
            continue
        if not name:
            raise MotiveCSVError(path, f"{typ} column has no name", h.rows["name"][0], j + 1)
        if not quantity:
            quantity = "Position" if ax in ("X", "Y", "Z") and typ.lower() != "rigid body" else quantity
        g = groups.setdefault((typ, name, ident), {})
        slot = g.setdefault(quantity.lower(), {})
        if ax in slot:
            raise MotiveCSVError(path, f"{typ} {name!r}: {quantity or 'value'} {ax or '(scalar)'} appears "
                                 f"twice (columns {slot[ax] + 1} and {j + 1})", h.axis_line, j + 1)
        slot[ax] = j
    return groups


def _frame_number(path, text, line) -> int:
    try:
        return int(text)
    except ValueError:
        f = _number(path, text, line, 1, "a frame number")
        if f != int(f):
            raise MotiveCSVError(path, f"{text!r} is not a frame number", line, 1) from None
        return int(f)


def _data_row(path, cells, line, ncol, out) -> int:
    """One data row's time and values into ``out`` (ncol,); returns its frame number."""
    if len(cells) > ncol and not _blank(cells[ncol:]):
        extra = ncol + next(k for k, c in enumerate(cells[ncol:]) if c.strip())
        raise MotiveCSVError(path, f"value beyond the last header column ({ncol} columns)", line, extra + 1)
    frame = _frame_number(path, cells[0].strip(), line)
    tt = cells[1].strip() if len(cells) > 1 else ""
    if not tt:
        raise MotiveCSVError(path, "the time is missing", line, 2)
    out[1] = _number(path, tt, line, 2)
    m = min(len(cells), ncol)
    try:
        out[2:m] = [float(c) if c.strip() else np.nan for c in cells[2:m]]
    except ValueError:
        for j in range(2, m):
            if cells[j].strip():
                _number(path, cells[j].strip(), line, j + 1)
        raise                                                # pragma: no cover (unreachable)
    return frame


def _data(path, rows, ncol) -> tuple:
    """(frames (T,), times (T,), values (T, ncol)) of the data rows (blank rows skipped); times checked."""
    data_rows = [(ln, c) for ln, c in rows if not _blank(c)]
    T = len(data_rows)
    values = np.full((T, ncol), np.nan)
    frames = np.zeros(T, np.int64)
    for r, (ln, cells) in enumerate(data_rows):
        frames[r] = _data_row(path, cells, ln, ncol, values[r])
    times = values[:, 1].copy()
    if T and not np.all(np.isfinite(times)):
        r = int(np.argmax(~np.isfinite(times)))
        raise MotiveCSVError(path, f"time {data_rows[r][1][1].strip()!r} is not finite", data_rows[r][0], 2)
    if T > 1 and np.any(np.diff(times) < 0):
        r = int(np.argmax(np.diff(times) < 0)) + 1
        raise MotiveCSVError(path, f"time {times[r]:g} s is earlier than the previous row's {times[r - 1]:g} s",
                             data_rows[r][0], 2)
    return frames, times, values


def _frame_rate(rates: dict, times) -> float:
    """Export Frame Rate, else Capture Frame Rate, else from the median time step (NaN without one)."""
    frame_rate = rates.get("Export Frame Rate", rates.get("Capture Frame Rate"))
    if frame_rate is None:
        dt = np.diff(times)
        dt = dt[dt > 0]
        frame_rate = float(1.0 / np.median(dt)) if len(dt) else float("nan")
    return float(frame_rate)


@dataclass
class _Columns:
    """The data values and what is needed to pick quantities out of them."""
    path: Path
    values: np.ndarray
    scale: float
    axis_line: int

    def xyz(self, group, qname, typ, name) -> np.ndarray:
        q = group.get(qname, {})
        missing = [a for a in "XYZ" if a not in q]
        if missing:
            raise MotiveCSVError(self.path, f"{typ} {name!r}: {qname} has no {', '.join(missing)} column(s)",
                                 self.axis_line)
        return self.values[:, [q["X"], q["Y"], q["Z"]]] * self.scale

    def scalar(self, group, qname) -> np.ndarray:
        return self.values[:, next(iter(group[qname].values()))]


def _add_marker(rec: MotiveRecording, cols: _Columns, g, typ, name, ident, name_line):
    pos = cols.xyz(g, "position", typ, name)
    if name.lower().startswith("unlabeled"):
        rec.unlabeled[name], rec.unlabeled_ids[name] = pos, ident
    else:
        if name in rec.markers:
            raise MotiveCSVError(cols.path, f"marker name {name!r} appears twice (IDs {rec.marker_ids[name]!r} "
                                 f"and {ident!r})", name_line)
        rec.markers[name], rec.marker_ids[name] = pos, ident
    if "marker quality" in g:
        rec.marker_quality[name] = cols.scalar(g, "marker quality").copy()


def _rotation(cols: _Columns, g, name, units: _Units, euler: str) -> np.ndarray:
    """(T, 4) quaternions x y z w of a rigid body (Euler angles converted; NaN = gap)."""
    rot = g.get("rotation", {})
    want = "XYZW" if units.is_quat else "XYZ"
    missing = [a for a in want if a not in rot]
    if missing:
        raise MotiveCSVError(cols.path, f"rigid body {name!r}: Rotation has no {', '.join(missing)} column(s) "
                             f"(Rotation Type {units.rot_type})", cols.axis_line)
    if units.is_quat:
        return cols.values[:, [rot[a] for a in "XYZW"]]
    from scipy.spatial.transform import Rotation
    order = units.rot_type.upper()
    ang = cols.values[:, [rot[a] for a in order]]             # angles in the order of the rotation type
    quat = np.full((len(cols.values), 4), np.nan)
    ok = np.isfinite(ang).all(axis=1)
    if ok.any():
        seq = order if euler == "intrinsic" else order.lower()
        quat[ok] = Rotation.from_euler(seq, ang[ok], degrees=True).as_quat()
    return quat


def _add_rigid_body(rec: MotiveRecording, cols: _Columns, g, typ, name, ident, units: _Units, euler: str):
    pos = cols.xyz(g, "position", typ, name)
    rec.rigid_bodies[name] = np.column_stack([pos, _rotation(cols, g, name, units, euler)])
    rec.rigid_body_ids[name] = ident
    if "mean marker error" in g:
        rec.rigid_body_errors[name] = cols.scalar(g, "mean marker error") * cols.scale


def _fill(rec: MotiveRecording, groups: dict, cols: _Columns, units: _Units, euler: str, name_line):
    """Every column group into the recording by its type; types not understood are listed as skipped."""
    for (typ, name, ident), g in groups.items():
        t = typ.lower()
        if t == "marker":
            _add_marker(rec, cols, g, typ, name, ident, name_line)
        elif t == "rigid body marker":
            rec.rigid_body_markers[name] = cols.xyz(g, "position", typ, name)
            if "marker quality" in g:
                rec.marker_quality[name] = cols.scalar(g, "marker quality").copy()
        elif t == "rigid body":
            _add_rigid_body(rec, cols, g, typ, name, ident, units, euler)
        else:
            rec.skipped.append((typ, name))


def read_motive_csv(path, euler: str = "intrinsic") -> MotiveRecording:
    """Read a Motive CSV export (format 1.2x). See :mod:`tensegrity_mocap.motive.recording` for the layout.

    ``euler`` ("intrinsic" or "extrinsic") says how an Euler ``Rotation Type`` such as ``XYZ`` composes
    its elemental rotations; Motive's documentation does not state it, quaternion exports avoid the
    question (and are the default).
    """
    path = Path(path)
    if euler not in ("intrinsic", "extrinsic"):
        raise ValueError(f"euler must be 'intrinsic' or 'extrinsic', got {euler!r}")
    rows = _csv_rows(path)
    meta, meta_line, i = _metadata_line(path, rows)
    header = _column_header(path, rows, i)
    units = _units(path, meta, meta_line)
    groups = _column_groups(path, header)
    frames, times, values = _data(path, rows[header.data_start:], header.ncol)
    rec = MotiveRecording(path=str(path), metadata=meta, frame_rate=_frame_rate(units.rates, times), frames=frames,
                          times=times, markers={}, marker_ids={}, unlabeled={},
                          format_version=meta.get("Format Version", ""), take_name=meta.get("Take Name", ""),
                          rotation_type=units.rot_type, length_units=UNIT_NAMES.get(units.scale, units.unit_name),
                          length_scale=units.scale,
                          coordinate_space=meta.get("Coordinate Space", "Global") or "Global")
    _fill(rec, groups, _Columns(path, values, units.scale, header.axis_line), units, euler, header.rows["name"][0])
    return rec
