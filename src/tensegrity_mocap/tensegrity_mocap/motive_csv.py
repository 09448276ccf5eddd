"""OptiTrack Motive CSV exports (format versions 1.21 to 1.24): reader, writer and frame replay. No ROS.

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
(right-handed, x and z horizontal); :func:`y_up_to_z_up` gives the ROS (Z-up) view ``(x, -z, y)``.

Files may use CRLF line endings and start with a UTF-8 byte-order mark; non-UTF-8 files (names written
in a Windows code page) are read as Latin-1. Problems raise :class:`MotiveCSVError` naming the file,
the line and column (both 1-based, as a spreadsheet or editor shows them) and what is wrong.
"""
from __future__ import annotations

import csv
import io
import math
import time as _time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["MotiveCSVError", "MotiveRecording", "read_motive_csv", "write_motive_csv", "replay",
           "y_up_to_z_up", "z_up_to_y_up", "LENGTH_UNITS"]

#: metres per length unit named in the ``Length Units`` header field (lower case)
LENGTH_UNITS = {"meters": 1.0, "metres": 1.0, "meter": 1.0, "m": 1.0,
                "centimeters": 0.01, "centimetres": 0.01, "centimeter": 0.01, "cm": 0.01,
                "millimeters": 0.001, "millimetres": 0.001, "millimeter": 0.001, "mm": 0.001,
                "inches": 0.0254, "inch": 0.0254, "in": 0.0254, "feet": 0.3048, "foot": 0.3048, "ft": 0.3048}
_UNIT_NAMES = {1.0: "Meters", 0.01: "Centimeters", 0.001: "Millimeters", 0.0254: "Inches", 0.3048: "Feet"}
_EULER_ORDERS = {"XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"}
_HEADER_LABELS = {"type", "name", "id"}


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


from .axes import y_up_to_z_up, z_up_to_y_up  # noqa: E402,F401  (re-exported)


# --- the recording --------------------------------------------------------------------------------
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


# --- reading --------------------------------------------------------------------------------------
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


def read_motive_csv(path, euler: str = "intrinsic") -> MotiveRecording:
    """Read a Motive CSV export (format 1.2x). See the module docstring for the layout.

    ``euler`` ("intrinsic" or "extrinsic") says how an Euler ``Rotation Type`` such as ``XYZ`` composes
    its elemental rotations; Motive's documentation does not state it, quaternion exports avoid the
    question (and are the default).
    """
    path = Path(path)
    if euler not in ("intrinsic", "extrinsic"):
        raise ValueError(f"euler must be 'intrinsic' or 'extrinsic', got {euler!r}")
    text = _read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""))
    rows = []
    try:
        for cells in reader:
            rows.append((reader.line_num, cells))
    except csv.Error as exc:
        raise MotiveCSVError(path, f"not valid CSV ({exc})", reader.line_num) from None
    if not rows or all(_blank(c) for _, c in rows):
        raise MotiveCSVError(path, "the file is empty")

    # 1. metadata line (optional: exports without header information start with the column rows)
    i = 0
    while i < len(rows) and _blank(rows[i][1]):
        i += 1
    meta, meta_line = {}, None
    if rows[i][1][0].strip().lower() == "format version":
        meta_line = rows[i][0]
        meta = _metadata(path, rows[i][1], meta_line)
        i += 1

    # 2. column header rows, up to the axis row "Frame,Time (Seconds),X,Y,Z,..."
    header = {}
    kind_row = None
    axis_line, axis = None, None
    while i < len(rows):
        line, cells = rows[i]
        i += 1
        if _blank(cells):
            continue
        first = cells[0].strip()
        if first.lower() == "frame":
            axis_line, axis = line, cells
            break
        if first:
            label = first
            if label.lower() not in _HEADER_LABELS:
                if label.lstrip("-").replace(".", "", 1).isdigit():
                    raise MotiveCSVError(path, f"data row (frame {label!r}) before the 'Frame,Time (Seconds),...' "
                                         "column header row", line, 1)
                raise MotiveCSVError(path, f"expected a column header row (Type, Name, ID, ...) or the "
                                     f"'Frame,Time (Seconds),...' row, found {label!r}", line, 1)
        else:
            label = cells[1].strip() if len(cells) > 1 else ""
        key = label.lower()
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

    def cell(row, j):
        return row[1][j].strip() if row is not None and j < len(row[1]) else ""

    # 3. units, rotation, frame rate
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
    is_quat = rot_type.lower() == "quaternion"
    rates = {}
    for key in ("Export Frame Rate", "Capture Frame Rate"):
        if meta.get(key):
            r = _number(path, meta[key], meta_line, list(meta).index(key) * 2 + 2, "a frame rate")
            if not (math.isfinite(r) and r > 0):
                raise MotiveCSVError(path, f"{key} {meta[key]!r} must be positive", meta_line,
                                     list(meta).index(key) * 2 + 2)
            rates[key] = r

    # 4. group the columns: (type, name, id) -> quantity -> axis -> column index
    groups = {}
    for j in range(2, ncol):
        typ, name = cell(header["type"], j), cell(header["name"], j)
        ident = cell(header.get("id"), j)
        quantity = cell(kind_row, j)
        ax = axis[j].strip().upper() if j < len(axis) else ""
        if not typ and not name:
            if quantity or ax:
                raise MotiveCSVError(path, "column has no Type and Name", header["type"][0], j + 1)
            continue
        if not name:
            raise MotiveCSVError(path, f"{typ} column has no name", header["name"][0], j + 1)
        if not quantity:
            quantity = "Position" if ax in ("X", "Y", "Z") and typ.lower() != "rigid body" else quantity
        g = groups.setdefault((typ, name, ident), {})
        slot = g.setdefault(quantity.lower(), {})
        if ax in slot:
            raise MotiveCSVError(path, f"{typ} {name!r}: {quantity or 'value'} {ax or '(scalar)'} appears "
                                 f"twice (columns {slot[ax] + 1} and {j + 1})", axis_line, j + 1)
        slot[ax] = j

    # 5. data rows
    data_rows = [(ln, c) for ln, c in rows[i:] if not _blank(c)]
    T = len(data_rows)
    values = np.full((T, ncol), np.nan)
    frames = np.zeros(T, np.int64)
    for r, (ln, cells) in enumerate(data_rows):
        if len(cells) > ncol and not _blank(cells[ncol:]):
            extra = ncol + next(k for k, c in enumerate(cells[ncol:]) if c.strip())
            raise MotiveCSVError(path, f"value beyond the last header column ({ncol} columns)", ln, extra + 1)
        fr = cells[0].strip()
        try:
            frames[r] = int(fr)
        except ValueError:
            f = _number(path, fr, ln, 1, "a frame number")
            if f != int(f):
                raise MotiveCSVError(path, f"{fr!r} is not a frame number", ln, 1) from None
            frames[r] = int(f)
        tt = cells[1].strip() if len(cells) > 1 else ""
        if not tt:
            raise MotiveCSVError(path, "the time is missing", ln, 2)
        values[r, 1] = _number(path, tt, ln, 2)
        m = min(len(cells), ncol)
        try:
            values[r, 2:m] = [float(c) if c.strip() else np.nan for c in cells[2:m]]
        except ValueError:
            for j in range(2, m):
                if cells[j].strip():
                    _number(path, cells[j].strip(), ln, j + 1)
            raise                                                # pragma: no cover (unreachable)
    times = values[:, 1].copy()
    if T and not np.all(np.isfinite(times)):
        r = int(np.argmax(~np.isfinite(times)))
        raise MotiveCSVError(path, f"time {data_rows[r][1][1].strip()!r} is not finite", data_rows[r][0], 2)
    if T > 1 and np.any(np.diff(times) < 0):
        r = int(np.argmax(np.diff(times) < 0)) + 1
        raise MotiveCSVError(path, f"time {times[r]:g} s is earlier than the previous row's {times[r - 1]:g} s",
                             data_rows[r][0], 2)
    frame_rate = rates.get("Export Frame Rate", rates.get("Capture Frame Rate"))
    if frame_rate is None:
        dt = np.diff(times)
        dt = dt[dt > 0]
        frame_rate = float(1.0 / np.median(dt)) if len(dt) else float("nan")

    def xyz(group, qname, typ, name):
        q = group.get(qname, {})
        missing = [a for a in "XYZ" if a not in q]
        if missing:
            raise MotiveCSVError(path, f"{typ} {name!r}: {qname} has no {', '.join(missing)} column(s)", axis_line)
        return values[:, [q["X"], q["Y"], q["Z"]]] * scale

    rec = MotiveRecording(path=str(path), metadata=meta, frame_rate=float(frame_rate), frames=frames, times=times,
                          markers={}, marker_ids={}, unlabeled={}, format_version=meta.get("Format Version", ""),
                          take_name=meta.get("Take Name", ""), rotation_type=rot_type,
                          length_units=_UNIT_NAMES.get(scale, unit_name), length_scale=scale,
                          coordinate_space=meta.get("Coordinate Space", "Global") or "Global")
    for (typ, name, ident), g in groups.items():
        t = typ.lower()
        if t == "marker":
            pos = xyz(g, "position", typ, name)
            if name.lower().startswith("unlabeled"):
                rec.unlabeled[name], rec.unlabeled_ids[name] = pos, ident
            else:
                if name in rec.markers:
                    raise MotiveCSVError(path, f"marker name {name!r} appears twice (IDs {rec.marker_ids[name]!r} "
                                         f"and {ident!r})", header["name"][0])
                rec.markers[name], rec.marker_ids[name] = pos, ident
            if "marker quality" in g:
                rec.marker_quality[name] = values[:, next(iter(g["marker quality"].values()))].copy()
        elif t == "rigid body marker":
            rec.rigid_body_markers[name] = xyz(g, "position", typ, name)
            if "marker quality" in g:
                rec.marker_quality[name] = values[:, next(iter(g["marker quality"].values()))].copy()
        elif t == "rigid body":
            pos = xyz(g, "position", typ, name)
            rot = g.get("rotation", {})
            want = "XYZW" if is_quat else "XYZ"
            missing = [a for a in want if a not in rot]
            if missing:
                raise MotiveCSVError(path, f"rigid body {name!r}: Rotation has no {', '.join(missing)} column(s) "
                                     f"(Rotation Type {rot_type})", axis_line)
            if is_quat:
                quat = values[:, [rot[a] for a in "XYZW"]]
            else:
                from scipy.spatial.transform import Rotation
                order = rot_type.upper()
                ang = values[:, [rot[a] for a in order]]             # angles in the order of the rotation type
                quat = np.full((T, 4), np.nan)
                ok = np.isfinite(ang).all(axis=1)
                if ok.any():
                    seq = order if euler == "intrinsic" else order.lower()
                    quat[ok] = Rotation.from_euler(seq, ang[ok], degrees=True).as_quat()
            rec.rigid_bodies[name] = np.column_stack([pos, quat])
            rec.rigid_body_ids[name] = ident
            if "mean marker error" in g:
                rec.rigid_body_errors[name] = values[:, next(iter(g["mean marker error"].values()))] * scale
        else:
            rec.skipped.append((typ, name))
    return rec


# --- writing --------------------------------------------------------------------------------------
def write_motive_csv(path, times, markers: dict, unlabeled: dict | None = None, rigid_bodies: dict | None = None,
                     frame_rate: float = 120.0, take_name: str = "tensegrity", length_units: str = "Meters",
                     format_version: str = "1.23", marker_ids: dict | None = None, precision: int = 6,
                     capture_start: str | None = None, frames=None, total_frames: int | None = None) -> Path:
    """Write a Motive-style CSV export (the 1.2x layout of the module docstring, CRLF line endings).

    ``markers`` (labeled, e.g. ``{"Robot:n1": (T,3)}``) and ``unlabeled`` (``{"Unlabeled 1000": (T,3)}``)
    are positions in metres in Motive's Y-up frame (see :func:`z_up_to_y_up`); ``rigid_bodies`` maps a
    name to (T, 7) ``x y z qx qy qz qw``. NaN values are written as empty cells (gaps); a rigid body row
    with any NaN is written as a gap. Values are written in ``length_units`` with ``precision`` decimals
    (Motive writes 6). ``frames`` defaults to 0..T-1 (frame numbers may jump: dropped frames);
    ``total_frames`` (the header's ``Total Frames in Take``) defaults to T. Returns the path.
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
    unlabeled = dict(unlabeled or {})
    rigid_bodies = dict(rigid_bodies or {})
    marker_ids = dict(marker_ids or {})

    def arr(name, a, width):
        a = np.asarray(a, float)
        if a.shape != (T, width):
            raise ValueError(f"{name}: expected shape ({T}, {width}), got {a.shape}")
        return a

    types, names, ids, quantities, axes, cols = [], [], [], [], [], []

    def add(typ, name, ident, quantity, axis, column):
        types.append(typ)
        names.append(name)
        ids.append(ident)
        quantities.append(quantity)
        axes.append(axis)
        cols.append(column)

    for k, (name, a) in enumerate(rigid_bodies.items()):
        a = arr(name, a, 7)
        gap = ~np.isfinite(a).all(axis=1)
        a = np.where(gap[:, None], np.nan, a)
        ident = str(marker_ids.get(name, k + 1))
        for c, ax in zip((3, 4, 5, 6), "XYZW"):
            add("Rigid Body", name, ident, "Rotation", ax, a[:, c])
        for c, ax in enumerate("XYZ"):
            add("Rigid Body", name, ident, "Position", ax, a[:, c] / scale)
        add("Rigid Body", name, ident, "Mean Marker Error", "", np.where(gap, np.nan, 0.0))
    next_id = len(rigid_bodies) + 1
    for k, (name, a) in enumerate(markers.items()):
        a = arr(name, a, 3)
        ident = str(marker_ids.get(name, next_id + k))
        for c, ax in enumerate("XYZ"):
            add("Marker", name, ident, "Position", ax, a[:, c] / scale)
    for k, (name, a) in enumerate(unlabeled.items()):
        a = arr(name, a, 3)
        if not name.lower().startswith("unlabeled"):
            raise ValueError(f"unlabeled marker names must start with 'Unlabeled' (got {name!r})")
        digits = name.split()[-1]
        ident = str(marker_ids.get(name, digits if digits.isdigit() else 1000 + k))
        for c, ax in enumerate("XYZ"):
            add("Marker", name, ident, "Position", ax, a[:, c] / scale)

    if capture_start is None:
        lt = _time.localtime()
        capture_start = _time.strftime("%Y-%m-%d %I.%M.%S.000 %p", lt)
    unit_label = _UNIT_NAMES.get(scale, length_units)
    meta = [("Format Version", format_version), ("Take Name", take_name),
            ("Capture Frame Rate", f"{frame_rate:.6f}"), ("Export Frame Rate", f"{frame_rate:.6f}"),
            ("Capture Start Time", capture_start),
            ("Total Frames in Take", str(T if total_frames is None else int(total_frames))),
            ("Total Exported Frames", str(T)), ("Rotation Type", "Quaternion"),
            ("Length Units", unit_label), ("Coordinate Space", "Global")]
    data = np.column_stack(cols) if cols else np.zeros((T, 0))
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow([x for kv in meta for x in kv])
    w.writerow([])
    w.writerow(["", "Type"] + types)
    w.writerow(["", "Name"] + names)
    w.writerow(["", "ID"] + ids)
    w.writerow(["", ""] + quantities)
    w.writerow(["Frame", "Time (Seconds)"] + axes)
    cells = np.full(data.shape, "", dtype=object)          # empty cell = gap; only finite values formatted
    finite = np.isfinite(data)
    cells[finite] = [f"{v:.{precision}f}" for v in data[finite].tolist()]
    buf.write("".join(",".join([str(int(frames[r])), f"{t[r]:.6f}"] + cells[r].tolist()) + "\r\n"
                      for r in range(T)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(buf.getvalue(), encoding="utf-8", newline="")
    return path


# --- replay ---------------------------------------------------------------------------------------
def replay(recording: MotiveRecording, rate: float | None = None, include_gaps: bool = False,
           named_unlabeled: bool = False):
    """Yield ``(time [s], labeled names, positions (k,3), unlabeled positions (m,3))`` frame by frame.

    Positions are metres in Motive's frame (Y-up). Only markers seen in the frame are included (like a
    live NatNet frame) unless ``include_gaps`` (then every labeled marker, NaN when occluded, and all
    unlabeled columns). ``named_unlabeled``: the unlabeled columns are yielded as labeled markers under
    their column names ("Unlabeled 1008", after the labeled ones) and the unlabeled array is empty, so a
    consumer can follow Motive's unlabeled ids. ``rate`` [Hz] thins the frames to at most that rate (a
    frame is kept when at least 1/rate has passed since the last kept one); ``None`` yields every frame.
    Nothing sleeps here: the caller paces the output with the yielded times.
    """
    T = recording.n_frames
    names = list(recording.markers)
    arrays = [recording.markers[n] for n in names]
    if named_unlabeled:
        names += list(recording.unlabeled)
        arrays += list(recording.unlabeled.values())
    L = np.stack(arrays, axis=1) if arrays else np.zeros((T, 0, 3))
    U = np.stack(list(recording.unlabeled.values()), axis=1) if recording.unlabeled and not named_unlabeled \
        else np.zeros((T, 0, 3))
    if rate is not None and not (math.isfinite(rate) and rate > 0):
        raise ValueError(f"rate must be positive, got {rate}")
    period = 0.0 if rate is None else 1.0 / rate
    last = -math.inf
    for r, t in enumerate(recording.times):
        if period and t - last < period - 1e-9:
            continue
        last = t
        if include_gaps:
            yield float(t), list(names), L[r].copy(), U[r].copy()
            continue
        seen = np.isfinite(L[r]).all(axis=1)
        useen = np.isfinite(U[r]).all(axis=1)
        yield float(t), [n for n, s in zip(names, seen) if s], L[r][seen], U[r][useen]
