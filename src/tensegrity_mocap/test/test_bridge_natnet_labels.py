"""Issue #12 over NatNet (emulator, loopback UDP, real rclpy): labeled markers reach the tracker as
'<asset id>:<marker id>', so tracking.exclude '2:*' drops a payload asset's marker riding 8 mm beside a
node (reported as -2 on markers/raw) and the node stays tracked; without the exclusion the payload marker
is never taken for the node (a stray: -1); an old-style integer marker_map key names the same marker."""
import time

import numpy as np
import pytest
from geometry_msgs.msg import PoseArray
from sensor_msgs.msg import PointCloud2

from bridge_harness import MODEL, N, deep_qos, rigid_motion, ros, spin_until
from natnet_emulator import MarkerSource, NatNetEmulator, free_udp_port, ros_to_motive
from tensegrity_mocap.bridge.node import MocapBridge
from tensegrity_mocap.bridge.output import EXCLUDED, UNASSIGNED, cloud_arrays
from tensegrity_mocap.natnet import make_marker_id
from tensegrity_ros_common import topics
from tensegrity_ros_common.conversions import pose_array_to_positions


@pytest.mark.parametrize("exclude", [True, False])
def test_natnet_asset_globs_exclude_a_payload_beside_a_node(exclude):
    t, X = rigid_motion(2.0, 120.0)
    n13 = MODEL.node_index("n13")
    payload = X[:, n13] + [0.008, 0.0, 0.0]
    ids = [make_marker_id(1, j + 1) for j in range(N)] + [make_marker_id(2, 1)]
    source = MarkerSource(ros_to_motive(np.concatenate([X, payload[:, None]], axis=1)), marker_ids=ids, t=t)
    data_port = free_udp_port()
    emu = NatNetEmulator(source, version=(4, 1), rate=120.0, data_port=data_port, max_frames=len(t) - 1)
    clouds, got = [], []
    with ros(55) as (ctx, ex, listener):
        listener.create_subscription(PointCloud2, "markers/raw", clouds.append, deep_qos())
        listener.create_subscription(PoseArray, topics.NODE_POSITIONS, got.append, deep_qos())
        node = MocapBridge(context=ctx, cli_args=[
            "--ros-args", "-p", "source:=natnet", "-p", "natnet.use_multicast:=false",
            "-p", f"natnet.command_port:={emu.command_port}", "-p", f"natnet.data_port:={data_port}",
            "-p", f"marker_map:=['{make_marker_id(1, n13 + 1)}=n13']",
            "-p", f"tracking.exclude:={['2:*'] if exclude else ['']}"])
        emu.streaming = False                    # stream once the bridge has connected: under load its
        emu.start()                              # handshake can take longer than the whole take
        try:
            ex.add_node(node)
            spin_until(ex, lambda: bool(emu.clients), timeout=30)
            emu.streaming = True
            spin_until(ex, lambda: emu.index >= len(t) - 1, timeout=60, settle=0.5)
            # under load the last clouds can still be in flight: wait for every published one
            spin_until(ex, lambda: len(clouds) >= node.frames, timeout=20)
            assert node.tracker.hint_of == {f"1:{n13 + 1}": n13}
        finally:
            emu.stop()
            node.close()
            node.destroy_node()
    # UDP datagrams and the best-effort clouds may both be dropped when both cores are busy (CI once saw 117
    # of 241 frames tracked, 156 of 166 clouds): the transport's right, not the bridge's fault. What counts is
    # that enough frames arrive for the checks below to mean something, and every cloud that arrives is right.
    assert node.frames >= 20 and 10 <= len(clouds) <= node.frames, (node.frames, len(clouds))
    codes = []
    for msg in clouds:
        P, k = cloud_arrays(msg)
        near = np.linalg.norm(P[:, None] - P[None], axis=2) + np.eye(len(P))
        # the payload marker is the one 8 mm from n13's
        pay = [i for i in range(len(P)) if k[i] != n13 and np.any((near[i] < 0.0085) & (k == n13))]
        assert len(pay) == 1, (k, pay)
        codes.append(int(k[pay[0]]))
        assert sorted(k[k >= 0].tolist()) == list(range(N))          # every node marker went to its node
    assert set(codes) == {EXCLUDED if exclude else UNASSIGNED}
    tracked = np.array([np.isfinite(pose_array_to_positions(m)[:, 0]) for m in got])
    assert tracked.all()
