"""Issue #12: the bridge publishes every marker of each accepted frame (``markers/raw``, PointCloud2 with
the node each marker went to: index, -1 stray, -2 excluded) in the robot's world frame (axis conversion and
world_offset applied), and the same as RViz spheres with node names (``markers/rviz``, rate-limited, off
with ``raw_markers_rate: 0``). ``up_axis: auto`` takes the recording's Y-up; an explicit ``z`` wins."""
import time

import numpy as np
import pytest
from sensor_msgs.msg import PointCloud2
from visualization_msgs.msg import Marker, MarkerArray

from bridge_harness import MODEL, N, NAMES, deep_qos, rigid_motion, ros, spin_until, stamp_ns, write_take
from tensegrity_mocap.bridge.node import MocapBridge
from tensegrity_mocap.bridge.output import COLOURS, EXCLUDED, UNASSIGNED, cloud_arrays, marker_cloud
from tensegrity_mocap.motive import read_motive_csv
from tensegrity_ros_common import topics

OFFSET = np.array([0.5, -0.25, 0.1])          # m, world_offset
GAP = (60, 90)                                # frames in which n5's marker is occluded
RVIZ_RATE = 10.0                              # Hz


@pytest.fixture(scope="module")
def take(tmp_path_factory):
    """2 s of the manipulator drifting, written in the capture frame (world = capture + OFFSET), with a
    payload marker riding 40 mm beside n13 and a stray unlabeled marker 1 m above the robot."""
    t, X = rigid_motion(2.0, 120.0)
    payload = X[:, MODEL.node_index("n13")] + [0.04, 0.0, 0.0]
    stray = np.tile(X[0].mean(axis=0) + [0.0, 0.0, 1.0], (len(t), 1))
    X_cap = X - OFFSET
    X_cap[GAP[0]:GAP[1], MODEL.node_index("n5")] = np.nan
    path = write_take(tmp_path_factory.mktemp("raw") / "raw.csv", t, X_cap, extra={"payload:Marker1": payload - OFFSET},
                      unlabeled={"Unlabeled 1000": stray - OFFSET})
    return path, read_motive_csv(path).times, X, payload, stray


def _run(path, ex, ctx, listener, *params, until=None):
    clouds, arrays = [], []
    listener.create_subscription(PointCloud2, "markers/raw", clouds.append, deep_qos())
    listener.create_subscription(MarkerArray, "markers/rviz", arrays.append, topics.state_qos(depth=1000))
    time.sleep(0.3)
    made = time.monotonic()
    node = MocapBridge(context=ctx, cli_args=["--ros-args", "-p", "source:=csv", "-p", f"csv.path:={path}",
                                              "-p", f"world_offset:={OFFSET.tolist()}", *params])
    try:
        ex.add_node(node)
        spin_until(ex, until or (lambda: node.finished), timeout=60, settle=0.5)
        wall = time.monotonic() - made
        assert node.finished
        return node, clouds, arrays, wall
    finally:
        node.close()
        node.destroy_node()


def test_raw_markers_carry_the_node_each_marker_went_to(take):
    path, times, X, payload, stray = take
    n5 = MODEL.node_index("n5")
    with ros(30) as (ctx, ex, listener):
        node, clouds, arrays, wall = _run(path, ex, ctx, listener, "-p", "tracking.exclude:=['payload:*']",
                                          "-p", f"raw_markers_rate:={RVIZ_RATE}")
    assert node.up_axis == "y"                                          # auto: the recording's (Motive: Y-up)
    assert len(clouds) == len(times)
    s0 = stamp_ns(clouds[0].header)
    stray_codes, seen_n5 = [], []
    for msg in clouds:
        assert msg.header.frame_id == "world" and not msg.is_bigendian and msg.is_dense
        assert [(f.name, f.offset, f.datatype) for f in msg.fields] == [("x", 0, 7), ("y", 4, 7), ("z", 8, 7),
                                                                           ("node", 12, 7)]
        k = int(np.argmin(np.abs(times - times[0] - (stamp_ns(msg.header) - s0) * 1e-9)))
        P, node_of = cloud_arrays(msg)
        in_gap = GAP[0] <= k < GAP[1]
        assert len(P) == N + 2 - in_gap                                  # occluded markers are not points
        # every node marker, in the world frame (float32: 1e-6 m), labeled with its node
        want = np.concatenate([np.delete(X[k], n5, axis=0) if in_gap else X[k], [payload[k], stray[k]]])
        codes = [i for i in range(N) if not (in_gap and i == n5)] + [EXCLUDED, UNASSIGNED]
        order = [int(np.argmin(np.linalg.norm(P - w, axis=1))) for w in want]
        assert np.abs(P[order] - want).max() < 2e-6
        got = node_of[order]
        # node markers: their node while tracked (n5 is re-acquired a few frames after its gap at most)
        assert got[-2] == EXCLUDED
        stray_codes.append(int(got[-1]))
        tracked = got[:-2]
        assert np.all((tracked == codes[:-2]) | (tracked == UNASSIGNED))
        if not in_gap:
            seen_n5.append(int(got[n5]))
        assert (tracked == UNASSIGNED).sum() <= 1, (k, tracked)
    assert set(stray_codes) == {UNASSIGNED}
    assert seen_n5.count(UNASSIGNED) <= 3 and seen_n5.count(n5) >= len(seen_n5) - 3
    # markers/rviz: at most raw_markers_rate (the timer's), the last frame's markers as spheres and names
    assert 1 <= len(arrays) <= RVIZ_RATE * wall + 2, (len(arrays), wall)
    last = arrays[-1].markers
    assert last[0].action == Marker.DELETEALL
    spheres = [m for m in last if m.type == Marker.SPHERE_LIST]
    texts = [m for m in last if m.type == Marker.TEXT_VIEW_FACING]
    assert len(spheres) == 1 and len(spheres[0].points) == N + 2
    rgb = [(c.r, c.g, c.b) for c in spheres[0].colors]
    close = [lambda c, k=k: np.allclose(c, COLOURS[k], atol=1e-6) for k in ("assigned", "unassigned", "excluded")]
    assert [sum(f(c) for c in rgb) for f in close] == [N, 1, 1]
    assert sorted(m.text for m in texts) == sorted(NAMES)
    for m in texts:                                                # each name just above its node's marker
        k = NAMES.index(m.text)
        p = np.array([m.pose.position.x, m.pose.position.y, m.pose.position.z])
        assert np.linalg.norm(p - X[-1, k] - [0.0, 0.0, 0.014]) < 1e-6


def test_explicit_up_axis_wins_and_rviz_markers_can_be_off(take):
    """up_axis z on a (Y-up) CSV: the coordinates are taken as they are (no conversion), plus the offset;
    raw_markers_rate 0: no markers/rviz publisher, markers/raw still every frame."""
    path, times, X, payload, stray = take
    rec = read_motive_csv(path)
    with ros(35) as (ctx, ex, listener):
        node, clouds, arrays, _ = _run(path, ex, ctx, listener, "-p", "up_axis:=z", "-p", "raw_markers_rate:=0.0",
                                       "-p", "csv.rate_scale:=0.0", "-p", "csv.stamps:=capture")
        assert node.up_axis == "z" and node.pub_rviz is None and not arrays
    assert clouds
    for msg in clouds[::10]:
        k = int(np.argmin(np.abs(times - stamp_ns(msg.header) * 1e-9)))
        P, _ = cloud_arrays(msg)
        raw = np.array([rec.markers["Robot:n1"][k], rec.markers["payload:Marker1"][k]]) + OFFSET
        for r in raw:
            assert np.min(np.linalg.norm(P - r, axis=1)) < 2e-6


def test_cloud_round_trip_and_an_empty_frame():
    from std_msgs.msg import Header
    P = np.array([[0.1, -2.0, 3.5], [1e3, 0.0, -1e-3]])
    msg = marker_cloud(Header(frame_id="world"), P, [4, -2])
    assert msg.width == 2 and msg.row_step == 32 and len(msg.data) == 32
    Q, k = cloud_arrays(msg)
    assert np.allclose(Q, P, rtol=1e-7) and k.tolist() == [4, -2]
    empty = marker_cloud(Header(frame_id="world"), np.zeros((0, 3)), [])
    Q, k = cloud_arrays(empty)
    assert empty.width == 0 and Q.shape == (0, 3) and k.shape == (0,)
