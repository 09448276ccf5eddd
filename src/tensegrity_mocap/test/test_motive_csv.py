"""Motive CSV export (format 1.2x): reader, writer, replay, errors."""
from __future__ import annotations

import numpy as np
import pytest

from tensegrity_mocap.axes import y_up_to_z_up, z_up_to_y_up
from tensegrity_mocap.motive import MotiveCSVError, read_motive_csv, replay, write_motive_csv

# A small export in Motive's 1.23 layout, written by hand (not by write_motive_csv): a rigid body with its
# mean marker error, one rigid-body marker with its quality, two labeled markers of the asset "Robot", one
# unlabeled marker; millimetres; gaps as empty cells (the rigid body is lost in frame 2, n2 in frame 1).
HAND_LINES = [
    "Format Version,1.23,Take Name,Take 2024-05-06 03.04.05 PM,Take Notes,,Capture Frame Rate,240.000000,"
    "Export Frame Rate,120.000000,Capture Start Time,2024-05-06 03.04.05.123 PM,Capture Start Frame,1200,"
    "Total Frames in Take,960,Total Exported Frames,4,Rotation Type,Quaternion,Length Units,Millimeters,"
    "Coordinate Space,Global",
    "",
    ",Type,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,"
    "Rigid Body Marker,Rigid Body Marker,Rigid Body Marker,Rigid Body Marker,"
    "Marker,Marker,Marker,Marker,Marker,Marker,Marker,Marker,Marker",
    ",Name,Plate,Plate,Plate,Plate,Plate,Plate,Plate,Plate,"
    "Plate:Marker1,Plate:Marker1,Plate:Marker1,Plate:Marker1,"
    "Robot:n1,Robot:n1,Robot:n1,Robot:n2,Robot:n2,Robot:n2,Unlabeled 1001,Unlabeled 1001,Unlabeled 1001",
    ",ID,1,1,1,1,1,1,1,1,1:1,1:1,1:1,1:1,2:1,2:1,2:1,2:2,2:2,2:2,1001,1001,1001",
    ",,Rotation,Rotation,Rotation,Rotation,Position,Position,Position,Mean Marker Error,"
    "Position,Position,Position,Marker Quality,"
    "Position,Position,Position,Position,Position,Position,Position,Position,Position",
    "Frame,Time (Seconds),X,Y,Z,W,X,Y,Z,,X,Y,Z,,X,Y,Z,X,Y,Z,X,Y,Z",
    "0,0.000000,0.000000,0.000000,0.000000,1.000000,100.000000,1000.000000,-50.000000,0.250000,"
    "110.000000,1000.000000,-50.000000,0.950000,"
    "1.500000,2.500000,-3.500000,10.000000,20.000000,30.000000,,,",
    "1,0.008333,0.000000,0.707107,0.000000,0.707107,101.000000,1000.500000,-50.000000,0.260000,"
    "111.000000,1000.500000,-50.000000,0.940000,"
    "1.600000,2.600000,-3.600000,,,,400.000000,500.000000,600.000000",
    "2,0.016667,,,,,,,,,,,,,"
    "1.700000,2.700000,-3.700000,11.000000,21.000000,31.000000,401.000000,501.000000,601.000000",
    "3,0.025000,0.000000,0.000000,0.000000,1.000000,102.000000,1001.000000,-50.000000,0.270000,"
    "112.000000,1001.000000,-50.000000,0.930000,"
    "1.800000,2.800000,-3.800000,12.000000,22.000000,32.000000,,,",
]


def _write(path, lines, bom=True, eol="\r\n"):
    path.write_bytes(((b"\xef\xbb\xbf" if bom else b"") + (eol.join(lines) + eol).encode("utf-8")))
    return path


@pytest.fixture
def hand_csv(tmp_path):
    return _write(tmp_path / "take.csv", HAND_LINES)


def test_hand_written_1_23_file(hand_csv):
    rec = read_motive_csv(hand_csv)
    assert rec.format_version == "1.23" and rec.take_name == "Take 2024-05-06 03.04.05 PM"
    assert rec.frame_rate == 120.0                           # Export Frame Rate, not the capture rate
    assert rec.metadata["Capture Frame Rate"] == "240.000000" and rec.metadata["Take Notes"] == ""
    assert rec.metadata["Capture Start Frame"] == "1200"
    assert rec.length_units == "Millimeters" and rec.length_scale == 0.001
    assert rec.up_axis == "y" and rec.coordinate_space == "Global" and rec.rotation_type == "Quaternion"
    np.testing.assert_array_equal(rec.frames, [0, 1, 2, 3])
    np.testing.assert_allclose(rec.times, [0.0, 0.008333, 0.016667, 0.025])
    assert list(rec.markers) == ["Robot:n1", "Robot:n2"]
    assert rec.marker_ids == {"Robot:n1": "2:1", "Robot:n2": "2:2"}
    np.testing.assert_allclose(rec.markers["Robot:n1"], [[0.0015, 0.0025, -0.0035], [0.0016, 0.0026, -0.0036],
                                                         [0.0017, 0.0027, -0.0037], [0.0018, 0.0028, -0.0038]])
    n2 = rec.markers["Robot:n2"]
    assert np.isnan(n2[1]).all() and np.isfinite(n2[[0, 2, 3]]).all()
    np.testing.assert_allclose(n2[0], [0.01, 0.02, 0.03])
    assert list(rec.unlabeled) == ["Unlabeled 1001"] and rec.unlabeled_ids["Unlabeled 1001"] == "1001"
    u = rec.unlabeled["Unlabeled 1001"]
    assert np.isnan(u[[0, 3]]).all()
    np.testing.assert_allclose(u[1:3], [[0.4, 0.5, 0.6], [0.401, 0.501, 0.601]])
    rb = rec.rigid_bodies["Plate"]
    assert rb.shape == (4, 7) and rec.rigid_body_ids["Plate"] == "1"
    np.testing.assert_allclose(rb[1], [0.101, 1.0005, -0.05, 0.0, 0.707107, 0.0, 0.707107])
    assert np.isnan(rb[2]).all()
    np.testing.assert_allclose(rec.rigid_body_errors["Plate"], [0.00025, 0.00026, np.nan, 0.00027])
    np.testing.assert_allclose(rec.rigid_body_markers["Plate:Marker1"][0], [0.11, 1.0, -0.05])
    np.testing.assert_allclose(rec.marker_quality["Plate:Marker1"], [0.95, 0.94, np.nan, 0.93])
    assert rec.skipped == []


def test_lf_without_bom_and_trailing_comma(tmp_path):
    lines = [ln + "," if i >= 2 else ln for i, ln in enumerate(HAND_LINES)]      # a final empty column
    rec = read_motive_csv(_write(tmp_path / "lf.csv", lines, bom=False, eol="\n"))
    np.testing.assert_allclose(rec.markers["Robot:n1"][3], [0.0018, 0.0028, -0.0038])
    assert np.isnan(rec.unlabeled["Unlabeled 1001"][3]).all()


def test_euler_rotation_type_and_metres(tmp_path):
    lines = [
        "Format Version,1.21,Take Name,e,Capture Frame Rate,100.000000,Export Frame Rate,100.000000,"
        "Rotation Type,XYZ,Length Units,Meters,Coordinate Space,Global",
        "",
        ",Type,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body",
        ",Name,B,B,B,B,B,B,B",
        ",ID,7,7,7,7,7,7,7",
        ",,Rotation,Rotation,Rotation,Position,Position,Position,Mean Marker Error",
        "Frame,Time (Seconds),X,Y,Z,X,Y,Z,",
        "0,0.000000,0.000000,90.000000,0.000000,1.000000,2.000000,3.000000,0.000100",
        "1,0.010000,,,,,,,",
    ]
    rec = read_motive_csv(_write(tmp_path / "euler.csv", lines))
    s = np.sqrt(0.5)
    np.testing.assert_allclose(rec.rigid_bodies["B"][0], [1, 2, 3, 0, s, 0, s], atol=1e-12)
    assert np.isnan(rec.rigid_bodies["B"][1]).all()
    assert rec.rotation_type == "XYZ" and rec.frame_rate == 100.0


def test_round_trip_with_gaps_units_and_rigid_bodies(tmp_path):
    rng = np.random.default_rng(3)
    T = 50
    t = np.arange(T) / 120.0
    markers = {f"Robot:n{k}": rng.uniform(-1, 2, (T, 3)) for k in range(1, 5)}
    markers["Robot:n2"][10:14] = np.nan
    markers["Robot:n4"][0] = np.nan
    unlabeled = {"Unlabeled 1000": rng.uniform(-1, 1, (T, 3)), "Unlabeled 1003": np.full((T, 3), np.nan)}
    unlabeled["Unlabeled 1003"][20:25] = 0.25
    q = rng.normal(size=(T, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    rb = {"Robot": np.column_stack([rng.uniform(-1, 1, (T, 3)), q])}
    rb["Robot"][30:33] = np.nan
    for units, tol in (("Millimeters", 1e-9), ("Centimeters", 1e-8), ("Meters", 1e-6)):
        p = write_motive_csv(tmp_path / f"rt_{units}.csv", t, markers, unlabeled, rb, frame_rate=120.0,
                             take_name="round trip", length_units=units, capture_start="2024-01-02 10.11.12.000 AM")
        raw = p.read_bytes()
        assert raw.count(b"\r\n") == 7 + T and raw.startswith(b"Format Version,1.23,Take Name,round trip")
        rec = read_motive_csv(p)
        assert rec.length_units == units and rec.up_axis == "y" and rec.frame_rate == 120.0
        assert rec.metadata["Rotation Type"] == "Quaternion" and rec.metadata["Total Exported Frames"] == str(T)
        np.testing.assert_allclose(rec.times, t, atol=1e-6)
        assert list(rec.markers) == list(markers) and list(rec.unlabeled) == list(unlabeled)
        for d_in, d_out in ((markers, rec.markers), (unlabeled, rec.unlabeled)):
            for name, a in d_in.items():
                np.testing.assert_array_equal(np.isnan(d_out[name]), np.isnan(a))
                np.testing.assert_allclose(d_out[name], a, atol=tol, equal_nan=True)
        assert rec.unlabeled_ids == {"Unlabeled 1000": "1000", "Unlabeled 1003": "1003"}
        np.testing.assert_allclose(rec.rigid_bodies["Robot"], rb["Robot"], atol=max(tol, 1e-6), equal_nan=True)
        assert np.isnan(rec.rigid_body_errors["Robot"][30:33]).all()


def test_replay(hand_csv):
    rec = read_motive_csv(hand_csv)
    frames = list(replay(rec))
    assert [f[0] for f in frames] == pytest.approx(list(rec.times))
    _, names, P, U = frames[1]
    assert names == ["Robot:n1"] and P.shape == (1, 3) and U.shape == (1, 3)     # n2 occluded
    np.testing.assert_allclose(U[0], [0.4, 0.5, 0.6])
    assert frames[0][3].shape == (0, 3)
    _, names, P, U = next(replay(rec, include_gaps=True))
    assert names == ["Robot:n1", "Robot:n2"] and P.shape == (2, 3) and U.shape == (1, 3) and np.isnan(U).all()
    thinned = list(replay(rec, rate=60.0))                 # every second frame of 120 Hz
    assert [f[0] for f in thinned] == pytest.approx([0.0, 0.016667])
    with pytest.raises(ValueError):
        next(replay(rec, rate=0.0))


def test_replay_named_unlabeled(hand_csv):
    rec = read_motive_csv(hand_csv)
    frames = list(replay(rec, named_unlabeled=True))
    assert [len(f[3]) for f in frames] == [0, 0, 0, 0]                   # nothing left as unlabeled
    assert [f[1] for f in frames] == [["Robot:n1", "Robot:n2"], ["Robot:n1", "Unlabeled 1001"],
                                      ["Robot:n1", "Robot:n2", "Unlabeled 1001"], ["Robot:n1", "Robot:n2"]]
    np.testing.assert_allclose(frames[1][2][1], [0.4, 0.5, 0.6])
    _, names, P, U = next(replay(rec, include_gaps=True, named_unlabeled=True))
    assert names == ["Robot:n1", "Robot:n2", "Unlabeled 1001"] and np.isnan(P[2]).all() and U.shape == (0, 3)


def test_writer_frame_numbers_jump(tmp_path):
    frames = np.array([0, 1, 2, 5, 6, 9])
    t = frames / 100.0
    a = np.arange(18.0).reshape(6, 3)
    p = write_motive_csv(tmp_path / "j.csv", t, {"Robot:n1": a}, frame_rate=100.0, frames=frames, total_frames=10)
    rec = read_motive_csv(p)
    np.testing.assert_array_equal(rec.frames, frames)
    np.testing.assert_allclose(rec.times, t)
    assert rec.metadata["Total Frames in Take"] == "10" and rec.metadata["Total Exported Frames"] == "6"
    np.testing.assert_allclose(rec.markers["Robot:n1"], a)


def test_axis_conversion_is_a_proper_rotation():
    P = np.array([[1.0, 2.0, 3.0], [-0.5, 0.1, 7.0]])
    Z = y_up_to_z_up(P)
    np.testing.assert_array_equal(Z[0], [1.0, -3.0, 2.0])          # Motive (x, y, z) -> ROS (x, -z, y)
    np.testing.assert_array_equal(z_up_to_y_up(Z), P)
    M = y_up_to_z_up(np.eye(3))                                       # rows: images of the unit vectors
    assert np.linalg.det(M) == pytest.approx(1.0)
    np.testing.assert_array_equal(y_up_to_z_up([0.0, 1.0, 0.0]), [0.0, 0.0, 1.0])   # Motive up -> ROS up


def _replace(lines, line_no, col_no, value):
    out = list(lines)
    cells = out[line_no - 1].split(",")
    cells[col_no - 1] = value
    out[line_no - 1] = ",".join(cells)
    return out


@pytest.mark.parametrize("edit, line, col, text", [
    (lambda L: _replace(L, 9, 5, "abc"), 9, 5, "'abc' is not a number"),
    (lambda L: _replace(L, 10, 2, ""), 10, 2, "time is missing"),
    (lambda L: _replace(L, 8, 1, "x0"), 8, 1, "'x0' is not a frame number"),
    (lambda L: _replace(L, 11, 2, "0.001"), 11, 2, "earlier than the previous row"),
    (lambda L: L[:-1] + [L[-1] + ",1.0"], 11, 24, "beyond the last header column"),
    (lambda L: [L[0].replace("Millimeters", "Furlongs")] + L[1:], 1, None, "unknown Length Units 'Furlongs'"),
    (lambda L: [L[0].replace("Quaternion", "Spherical")] + L[1:], 1, None, "unknown Rotation Type"),
    (lambda L: L[:6] + L[7:], 7, 1, "data row (frame '0') before the 'Frame,Time (Seconds),...'"),
    (lambda L: L[:6], 6, None, "no column header row starting with 'Frame'"),
    (lambda L: L[:2] + L[3:], 6, None, "no Type row"),
    (lambda L: _replace(L, 6, 5, ""), None, None, "Rotation has no Z column"),
])
def test_malformed_files_name_line_and_column(tmp_path, edit, line, col, text):
    p = _write(tmp_path / "bad.csv", edit(HAND_LINES))
    with pytest.raises(MotiveCSVError) as ei:
        read_motive_csv(p)
    msg = str(ei.value)
    assert str(p) in msg and text in msg
    if line is not None:
        assert ei.value.line == line and f"line {line}" in msg
    if col is not None:
        assert ei.value.column == col and f"column {col}" in msg
    assert isinstance(ei.value, ValueError)


def test_empty_and_missing_files(tmp_path):
    with pytest.raises(MotiveCSVError, match="empty"):
        read_motive_csv(_write(tmp_path / "empty.csv", ["", ""], bom=True))
    with pytest.raises(MotiveCSVError, match="cannot read"):
        read_motive_csv(tmp_path / "nope.csv")
    with pytest.raises(MotiveCSVError, match="line 1, column 1: expected a column header row"):
        read_motive_csv(_write(tmp_path / "other.csv", ["a,b,c", "1,2,3"]))


def test_writer_rejects_bad_shapes(tmp_path):
    with pytest.raises(ValueError, match=r"expected shape \(3, 3\)"):
        write_motive_csv(tmp_path / "x.csv", [0.0, 0.1, 0.2], {"n1": np.zeros((2, 3))})
    with pytest.raises(ValueError, match="Unlabeled"):
        write_motive_csv(tmp_path / "x.csv", [0.0], {}, unlabeled={"n1": np.zeros((1, 3))})
    with pytest.raises(ValueError, match="length_units"):
        write_motive_csv(tmp_path / "x.csv", [0.0], {}, length_units="parsecs")
