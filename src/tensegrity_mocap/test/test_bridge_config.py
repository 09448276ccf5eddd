"""Issue #12: the bridge's marker labels and new parameters. marker_map takes CSV column names as written
(unlabeled and asset marker names included) and NatNet labels '<asset id>:<marker id>' (an integer is the
old full id); tracking.exclude may be an empty YAML list; up_axis auto is Y for NatNet, an explicit value
wins; the tracker gets the new tracking parameters."""
import numpy as np
import pytest
import rclpy

from bridge_harness import ros
from tensegrity_mocap.bridge.node import MocapBridge
from tensegrity_mocap.natnet import MocapFrame, make_marker_id
from tensegrity_mocap.tracking.labels import natnet_label, natnet_labels, parse_marker_map

NODES = [f"n{i}" for i in range(1, 25)]


def test_csv_marker_map_keeps_names_as_written():
    m = parse_marker_map(["Unlabeled 1008=n1", "Robot:Marker3 = n2", "1008=n3", ""], NODES, "csv")
    assert m == {"Unlabeled 1008": "n1", "Robot:Marker3": "n2", "1008": "n3"}      # all strings


def test_natnet_labels_are_asset_and_marker_ids():
    assert natnet_label("65537") == "1:1"                                  # old style: the full id
    assert natnet_label(str(make_marker_id(2, 7))) == "2:7"
    big = make_marker_id(0x8001, 3)                                        # negative as NatNet's int32
    assert big < 0 and natnet_label(str(big)) == natnet_label(str(big & 0xFFFFFFFF)) == "32769:3"
    assert natnet_label(" 02:03 ") == "2:3" and natnet_label("0:1008") == "0:1008"
    with pytest.raises(ValueError, match="<asset id>:<marker id>"):
        natnet_label("Robot:Marker3")
    f = MocapFrame(labeled_ids=np.array([make_marker_id(1, 1), make_marker_id(2, 5), 1008, big]))
    assert natnet_labels(f) == ["1:1", "2:5", "0:1008", "32769:3"]
    m = parse_marker_map(["65537=n1", "2:5=n2", "1008=n3"], NODES, "natnet")
    assert m == {"1:1": "n1", "2:5": "n2", "0:1008": "n3"}
    with pytest.raises(ValueError, match="mapped twice"):
        parse_marker_map(["65537=n1", "1:1=n2"], NODES, "natnet")          # one label written two ways
    with pytest.raises(ValueError, match="marker_map entry 'payload:m1=n1'"):
        parse_marker_map(["payload:m1=n1"], NODES, "natnet")


def _node(ctx, *params):
    return MocapBridge(context=ctx, cli_args=["--ros-args", *params])


def test_natnet_up_axis_auto_is_y_and_an_explicit_axis_wins():
    with ros(45) as (ctx, ex, listener):
        for given, want in (("auto", "y"), ("z", "z"), ("y", "y")):
            node = _node(ctx, "-p", f"up_axis:='{given}'", "-p", "natnet.use_multicast:=false",
                         "-p", "marker_map:=['65537=n1', '2:3=n2']")
            try:
                assert node.up_axis == want
                assert node.tracker.hint_of == {"1:1": 0, "2:3": 1}           # labels the stream will carry
            finally:
                node.close()
                node.destroy_node()


def test_yaml_tracking_parameters_reach_the_tracker(tmp_path):
    """An empty list in a parameter file leaves rclpy's parameter unset: tracking.exclude [] = none."""
    from bridge_harness import rigid_motion, write_take
    t, X = rigid_motion(0.1)
    csv = write_take(tmp_path / "t.csv", t, X)
    for exclude, want in (("[]", ()), ('["payload:*", "2:*"]', ("payload:*", "2:*")), ('[""]', ())):
        params = tmp_path / "p.yaml"
        params.write_text("/**/mocap_bridge:\n  ros__parameters:\n    source: csv\n"
                          f"    csv:\n      path: {csv}\n      rate_scale: 0.0\n"
                          f"    tracking:\n      exclude: {exclude}\n      reacquire_gate: 0.02\n"
                          "      margin: 0.004\n      register_tol: 0.03\n")
        ctx = rclpy.Context()
        rclpy.init(args=["--ros-args", "--params-file", str(params)], context=ctx)
        try:
            node = MocapBridge(context=ctx)
            try:
                tr = node.tracker
                assert tr.exclude == want
                assert (tr.reacquire_gate, tr.margin, tr.register_tol) == (0.02, 0.004, 0.03)
            finally:
                node.close()
                node.destroy_node()
        finally:
            rclpy.shutdown(context=ctx)


@pytest.mark.parametrize("param, words", [
    ("csv.stamps:=wall", "'csv.stamps' must be one of replay_start, capture"),
    ("up_axis:=x", "up_axis must be 'auto', 'y' or 'z'"),
    ("up_axis:=y", "a bare y is a boolean to the ROS YAML parser; quote it"),
    ("raw_markers_rate:=-1.0", "'raw_markers_rate' must be in"),
    ("tracking.reacquire_gate:=0.0", "'tracking.reacquire_gate' must be in"),
    ("tracking.margin:=.nan", "'tracking.margin' must be in"),
    ("tracking.register_tol:=-0.01", "'tracking.register_tol' must be in"),
])
def test_bad_new_parameters_refuse_to_start(tmp_path, param, words):
    from bridge_harness import rigid_motion, write_take
    t, X = rigid_motion(0.1)
    csv = write_take(tmp_path / "t.csv", t, X)
    with ros(47) as (ctx, ex, listener):
        with pytest.raises(ValueError, match=words):
            _node(ctx, "-p", "source:=csv", "-p", f"csv.path:={csv}", "-p", param)


def test_capture_stamps_refuse_a_take_with_negative_times(tmp_path):
    from bridge_harness import rigid_motion, write_take
    t, X = rigid_motion(0.1, t0=-0.05)
    csv = write_take(tmp_path / "neg.csv", t, X)
    with ros(48) as (ctx, ex, listener):
        with pytest.raises(ValueError, match="a stamp cannot be negative"):
            _node(ctx, "-p", "source:=csv", "-p", f"csv.path:={csv}", "-p", "csv.stamps:=capture")
