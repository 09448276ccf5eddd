"""NatNet packets and client: build/parse round trips for NatNet 3.0, 3.1, 4.0 and 4.1, hand-made bytes,
truncation at every length, a fuzz run (only NatNetError may escape), and the client against the emulator
over loopback UDP (unicast both ways, multicast, server discovery, dropped frames, malformed packets,
keep-alive, fallback version, the command-line demo)."""
import os
import re
import socket
import struct
import subprocess
import sys
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

try:
    from tensegrity_mocap import natnet as nn
except ImportError:
    sys.path.insert(0, os.path.dirname(HERE))
    from tensegrity_mocap import natnet as nn

from natnet_emulator import (MALFORMED_KINDS, MarkerSource, NatNetEmulator, free_udp_port, load_trajectory,  # noqa: E402
                             ros_to_motive)

VERSIONS = [(3, 0), (3, 1), (4, 0), (4, 1)]
RNG_SEED = 20240611


# --- helpers -------------------------------------------------------------------------------------------
def f32(a):
    """Round to float32 so that a round trip is exact."""
    return np.asarray(a, np.float32).astype(np.float64)


def full_frame(rng=None) -> nn.MocapFrame:
    """A frame with every section populated (NaN marker positions included)."""
    rng = rng or np.random.default_rng(1)
    k = 5
    lp = f32(rng.normal(size=(k, 3)))
    lp[2] = np.nan
    ms = f32(rng.normal(size=(3, 3)))
    ms[1] = np.nan
    rb = lambda i: nn.RigidBody(i, f32(rng.normal(size=3)), f32(rng.normal(size=4)), float(f32(0.0004 * i)),
                                bool(i % 2), None)
    return nn.MocapFrame(
        frame_number=123456, timestamp=98.76543210123, stamp_camera_mid_exposure=10_000_000_123,
        stamp_data_received=10_000_000_456, stamp_transmit=10_000_000_789, precision_timestamp=None,
        precision_timestamp_secs=1_700_000_000, precision_timestamp_frac=2 ** 31 + 5,
        recording=True, models_changed=False, suffix_params=0x0C,
        marker_sets={"plate_a": ms, "all": f32(rng.normal(size=(2, 3))), "empty": np.zeros((0, 3))},
        unlabeled=f32(rng.normal(size=(4, 3))),
        rigid_bodies=[rb(1), rb(2), rb(3)],
        labeled_ids=np.array([nn.make_marker_id(1, j + 1) for j in range(k - 1)] + [77]),
        labeled_positions=lp, labeled_sizes=f32(np.full(k, 0.0095)),
        labeled_params=np.array([0x0A, 0x0B, 0x09, 0x04, 0x32]),
        labeled_residuals=f32(rng.uniform(0, 0.001, k)),
        skeletons=[nn.Skeleton(5, [rb(7), rb(8)]), nn.Skeleton(6, [])],
        assets=[nn.Asset(9, [rb(11)], np.array([nn.make_marker_id(9, 1), nn.make_marker_id(9, 2)]),
                         f32(rng.normal(size=(2, 3))), f32([0.01, 0.02]), np.array([8, 9]), f32([0.1, 0.2])),
                nn.Asset(10)],
        force_plates=[nn.AnalogDevice(1, [f32(rng.normal(size=4)), f32(rng.normal(size=4))]),
                      nn.AnalogDevice(2, [])],
        devices=[nn.AnalogDevice(3, [f32(rng.normal(size=2))])],
        timecode=0x01020304, timecode_sub=17)


def assert_rbs_equal(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.id == y.id and x.params == y.params and x.tracking_valid == y.tracking_valid
        np.testing.assert_array_equal(x.position, y.position)
        np.testing.assert_array_equal(x.quaternion, y.quaternion)
        assert x.mean_error == pytest.approx(y.mean_error, rel=1e-6)


def assert_frames_equal(g: nn.MocapFrame, f: nn.MocapFrame, v):
    assert g.version == v
    for name in ("frame_number", "timestamp", "stamp_camera_mid_exposure", "stamp_data_received",
                 "stamp_transmit", "recording", "models_changed", "timecode", "timecode_sub"):
        assert getattr(g, name) == getattr(f, name), name
    assert g.suffix_params == (f.suffix_params & ~3) | int(f.recording) | (int(f.models_changed) << 1)
    assert list(g.marker_sets) == list(f.marker_sets)
    for name in f.marker_sets:
        np.testing.assert_array_equal(g.marker_sets[name], np.asarray(f.marker_sets[name]).reshape(-1, 3))
    np.testing.assert_array_equal(g.unlabeled, f.unlabeled)
    assert_rbs_equal(g.rigid_bodies, f.rigid_bodies)
    assert [s.id for s in g.skeletons] == [s.id for s in f.skeletons]
    for s, t in zip(g.skeletons, f.skeletons):
        assert_rbs_equal(s.rigid_bodies, t.rigid_bodies)
    np.testing.assert_array_equal(g.labeled_ids, f.labeled_ids)
    np.testing.assert_array_equal(g.labeled_positions, f.labeled_positions)
    np.testing.assert_array_equal(g.labeled_sizes, f.labeled_sizes)
    np.testing.assert_array_equal(g.labeled_params, f.labeled_params)
    np.testing.assert_array_equal(g.labeled_residuals, f.labeled_residuals)
    for gd, fd in ((g.force_plates, f.force_plates), (g.devices, f.devices)):
        assert [d.id for d in gd] == [d.id for d in fd]
        for x, y in zip(gd, fd):
            assert len(x.channels) == len(y.channels)
            for cx, cy in zip(x.channels, y.channels):
                np.testing.assert_array_equal(cx, cy)
    if v >= (4, 1):
        assert [a.id for a in g.assets] == [a.id for a in f.assets]
        for x, y in zip(g.assets, f.assets):
            assert_rbs_equal(x.rigid_bodies, y.rigid_bodies)
            for attr in ("marker_ids", "marker_positions", "marker_sizes", "marker_params", "marker_residuals"):
                np.testing.assert_array_equal(getattr(x, attr), getattr(y, attr))
        assert (g.precision_timestamp_secs, g.precision_timestamp_frac) == \
            (f.precision_timestamp_secs, f.precision_timestamp_frac)
        assert g.precision_timestamp == pytest.approx(1_700_000_000.5, abs=1e-6)
    else:
        assert g.assets == [] and g.precision_timestamp is None and g.precision_timestamp_secs is None
    assert g.trailing_bytes == 0 and g.skipped_bytes == 0 and g.end_of_data == 0


def multicast_loopback_reason(group="239.255.42.99"):
    """None if multicast works on loopback here, else why not."""
    r = s = None
    try:
        r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        r.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        r.bind(("", 0))
        r.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                     socket.inet_aton(group) + socket.inet_aton("127.0.0.1"))
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
        s.sendto(b"probe", (group, r.getsockname()[1]))
        r.settimeout(1.0)
        r.recvfrom(16)
        return None
    except OSError as exc:
        return f"no multicast on loopback (IP_MULTICAST_IF/IP_ADD_MEMBERSHIP on 127.0.0.1): {exc}"
    finally:
        for x in (r, s):
            if x is not None:
                x.close()


def collect(client, n, timeout=3.0):
    frames, end = [], time.monotonic() + timeout
    while len(frames) < n and time.monotonic() < end:
        f = client.receive(timeout=0.05)
        if f is not None:
            frames.append(f)
    return frames


def drain(client, quiet=0.15, timeout=3.0):
    """Receive until nothing arrives for ``quiet`` seconds."""
    frames, end = [], time.monotonic() + timeout
    while time.monotonic() < end:
        f = client.receive(timeout=quiet)
        if f is None:
            break
        frames.append(f)
    return frames


@pytest.fixture
def traj():
    rng = np.random.default_rng(3)
    T, k = 40, 24
    base = rng.uniform(-0.3, 0.3, size=(1, k, 3))
    wobble = 0.01 * np.sin(np.linspace(0, 2 * np.pi, T))[:, None, None]
    return f32(base + wobble)


# --- round trips and hand-made bytes -------------------------------------------------------------------
@pytest.mark.parametrize("v", VERSIONS)
def test_round_trip_every_section(v):
    f = full_frame()
    pkt = nn.build_frame(f, v)
    assert struct.unpack_from("<HH", pkt) == (nn.NAT_FRAMEOFDATA, len(pkt) - 4)
    mid, g = nn.parse_packet(pkt, v)
    assert mid == nn.NAT_FRAMEOFDATA
    assert_frames_equal(g, f, v)
    # convenience views of the labeled-marker params and ids
    assert g.occluded.tolist() == [False, True, True, False, False]
    assert g.model_solved.tolist() == [False, False, False, True, False]
    assert g.active.tolist() == [False, False, False, False, True]
    assert g.model_ids.tolist() == [1, 1, 1, 1, 0] and g.marker_ids.tolist() == [1, 2, 3, 4, 77]
    assert g.rigid_body(2).id == 2 and g.rigid_body(99) is None


def test_versions_share_the_3x_layout_and_41_adds_sizes_assets_precision():
    f = full_frame()
    p30, p31, p40, p41 = (nn.frame_payload(f, v) for v in VERSIONS)
    assert p30 == p31 == p40
    # 4.1: 7 byte-size fields, the asset section (count + size + its items) and 8 precision-stamp bytes
    asset_bytes = 8 + (4 + 4 + 38 + 4 + 2 * 26) + (4 + 4 + 0 + 4 + 0)
    assert len(p41) - len(p40) == 7 * 4 + asset_bytes + 8
    # versions above 4.1 read as 4.1
    g = nn.parse_frame(p41, (4, 2))
    assert g.frame_number == f.frame_number and len(g.assets) == 2


def test_hand_built_bytes_30():
    """A NatNet 3.0 frame written field by field with struct (independent of build_frame)."""
    b = struct.pack("<i", 42)                                        # frame number
    b += struct.pack("<i", 1) + b"ms\0" + struct.pack("<i", 1) + struct.pack("<3f", 1.0, 2.0, 3.0)
    b += struct.pack("<i", 1) + struct.pack("<3f", -1.0, -2.0, -3.0)  # one legacy "other" marker
    b += struct.pack("<i", 1) + struct.pack("<i3f4ffh", 7, 0.5, 0.25, 0.125, 0.0, 0.0, 0.0, 1.0, 0.001, 1)
    b += struct.pack("<i", 0)                                        # skeletons
    b += struct.pack("<i", 2)                                        # labeled markers
    b += struct.pack("<i3ffhf", (3 << 16) | 4, 0.1, 0.2, 0.3, 0.012, 0x0A, 0.0005)
    b += struct.pack("<i3ffhf", 9, float("nan"), 0.0, 0.0, 0.010, 0x31, 0.0)
    b += struct.pack("<i", 0) + struct.pack("<i", 0)                 # force plates, devices
    b += struct.pack("<IIdQQQ", 5, 6, 12.25, 1000, 2000, 3000)
    b += struct.pack("<hi", 0x3, 0)                                  # recording + models changed, eod
    pkt = struct.pack("<HH", 7, len(b)) + b
    mid, g = nn.parse_packet(pkt, (3, 0))
    assert mid == 7 and g.frame_number == 42
    np.testing.assert_array_equal(g.marker_sets["ms"], [[1, 2, 3]])
    np.testing.assert_array_equal(g.unlabeled, [[-1, -2, -3]])
    rb = g.rigid_bodies[0]
    assert rb.id == 7 and rb.tracking_valid and rb.position.tolist() == [0.5, 0.25, 0.125]
    assert rb.quaternion.tolist() == [0, 0, 0, 1] and rb.mean_error == pytest.approx(0.001)
    assert g.labeled_ids.tolist() == [(3 << 16) | 4, 9]
    assert g.model_ids.tolist() == [3, 0] and g.marker_ids.tolist() == [4, 9]
    assert np.allclose(g.labeled_positions[0], [0.1, 0.2, 0.3]) and np.isnan(g.labeled_positions[1, 0])
    assert g.labeled_sizes == pytest.approx([0.012, 0.010])
    assert g.labeled_params.tolist() == [0x0A, 0x31]
    assert g.occluded.tolist() == [False, True] and g.point_cloud_solved.tolist() == [True, False]
    assert g.has_model.tolist() == [True, False] and g.unlabeled_flag.tolist() == [False, True]
    assert g.active.tolist() == [False, True]
    assert g.labeled_residuals[0] == pytest.approx(0.0005)
    assert (g.timecode, g.timecode_sub, g.timestamp) == (5, 6, 12.25)
    assert (g.stamp_camera_mid_exposure, g.stamp_data_received, g.stamp_transmit) == (1000, 2000, 3000)
    assert g.recording and g.models_changed and g.precision_timestamp is None
    # the builder writes exactly these bytes back
    g.labeled_positions[1, 0] = np.nan
    assert nn.build_frame(g, (3, 0)) == pkt


def test_hand_built_bytes_41():
    """A NatNet 4.1 frame with the byte-size fields, an asset and the precision timestamp, by hand."""
    def sec(count, body):
        return struct.pack("<ii", count, len(body)) + body
    rb = struct.pack("<i3f4ffh", 2, 1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0)   # not tracked
    mk = struct.pack("<i3ffhf", (5 << 16) | 1, 0.5, 0.5, 0.5, 0.02, 0x08, 0.25)
    b = struct.pack("<i", 1001)
    b += sec(1, b"A\0" + struct.pack("<i", 0))                       # marker set "A", no markers
    b += sec(0, b"")                                                 # other markers
    b += sec(1, rb)
    b += sec(1, struct.pack("<ii", 4, 1) + rb)                       # skeleton 4 with one bone
    b += sec(1, struct.pack("<ii", 5, 1) + rb + struct.pack("<i", 1) + mk)   # asset 5
    b += sec(1, mk)                                                  # labeled markers
    b += sec(1, struct.pack("<iii", 8, 1, 2) + struct.pack("<2f", 1.5, -1.5))  # force plate 8
    b += sec(0, b"")                                                 # devices
    b += struct.pack("<IIdQQQ", 0, 0, 3.5, 11, 22, 33)
    b += struct.pack("<II", 100, 1 << 30)                            # precision: 100.25 s
    b += struct.pack("<hi", 0, 0)
    pkt = struct.pack("<HH", 7, len(b)) + b
    _, g = nn.parse_packet(pkt, (4, 1))
    assert g.frame_number == 1001 and g.marker_sets["A"].shape == (0, 3)
    assert g.rigid_bodies[0].id == 2 and not g.rigid_bodies[0].tracking_valid
    assert g.skeletons[0].id == 4 and g.skeletons[0].rigid_bodies[0].position.tolist() == [1, 2, 3]
    a = g.assets[0]
    assert a.id == 5 and a.rigid_bodies[0].id == 2 and a.marker_ids.tolist() == [(5 << 16) | 1]
    assert a.marker_params.tolist() == [8] and a.marker_residuals.tolist() == [0.25]
    assert g.labeled_ids.tolist() == [(5 << 16) | 1] and g.model_ids.tolist() == [5]
    assert g.force_plates[0].id == 8 and g.force_plates[0].channels[0].tolist() == [1.5, -1.5]
    assert g.precision_timestamp == 100.25 and g.precision_timestamp_secs == 100
    assert (g.stamp_camera_mid_exposure, g.stamp_transmit) == (11, 33) and g.timestamp == 3.5
    assert not g.recording and not g.models_changed
    assert nn.build_frame(g, (4, 1)) == pkt
    # the same bytes read as 4.0 (no size fields) cannot be a valid frame
    with pytest.raises(nn.NatNetError):
        nn.parse_packet(pkt, (4, 0))


def test_section_size_rules():
    f = full_frame()
    p = bytearray(nn.frame_payload(f, (4, 1)))
    # the marker-set section's size field sits after frame number and count
    size = struct.unpack_from("<i", p, 8)[0]
    bad = bytearray(p)
    struct.pack_into("<i", bad, 8, size - 1)
    with pytest.raises(nn.NatNetError) as e:
        nn.parse_frame(bytes(bad), (4, 1))
    assert e.value.reason in ("section_size", "truncated", "bad_count")
    # a larger declared size with padding: rejected for 4.1, skipped (and counted) for later versions
    padded = p[:12 + size] + b"\xAA" * 6 + p[12 + size:]
    struct.pack_into("<i", padded, 8, size + 6)
    with pytest.raises(nn.NatNetError) as e:
        nn.parse_frame(bytes(padded), (4, 1))
    assert e.value.reason == "section_size"
    g = nn.parse_frame(bytes(padded), (4, 2))
    assert g.skipped_bytes == 6 and list(g.marker_sets) == list(f.marker_sets)
    # a declared size beyond the payload
    struct.pack_into("<i", bad, 8, 1 << 20)
    with pytest.raises(nn.NatNetError) as e:
        nn.parse_frame(bytes(bad), (4, 1))
    assert e.value.reason == "section_size"


def test_trailing_bytes_are_tolerated_and_counted():
    f = full_frame()
    pkt = nn.build_frame(f, (4, 0))
    _, g = nn.parse_packet(pkt + b"\x01\x02\x03", (4, 0))         # after the declared payload
    assert g.trailing_bytes == 3 and g.frame_number == f.frame_number
    payload = nn.frame_payload(f, (4, 1)) + b"\0" * 5                # inside the declared payload
    _, g = nn.parse_packet(struct.pack("<HH", 7, len(payload)) + payload, (4, 1))
    assert g.trailing_bytes == 5


def test_server_info_and_other_messages():
    pkt = nn.build_server_info("Motive", (3, 1, 2, 0), (4, 1, 0, 0), 10_000_000, 1511, True, "239.255.42.99")
    assert len(pkt) == 4 + 279
    mid, info = nn.parse_packet(pkt)
    assert mid == nn.NAT_SERVERINFO and info.app_name == "Motive" and info.app_version == (3, 1, 2, 0)
    assert info.version == (4, 1) and info.clock_frequency == 10_000_000 and info.data_port == 1511
    assert info.is_multicast is True and info.multicast_address == "239.255.42.99"
    # by hand: the 264-byte sSender only (older servers)
    raw = b"Motive".ljust(256, b"\0") + bytes([2, 2, 0, 0, 3, 1, 0, 0])
    mid, info = nn.parse_packet(struct.pack("<HH", 1, len(raw)) + raw)
    assert info.natnet_version == (3, 1, 0, 0) and info.clock_frequency is None
    assert nn.parse_packet(nn.build_server_info(extended=False))[1].data_port is None
    with pytest.raises(nn.NatNetError):
        nn.parse_packet(struct.pack("<HH", 1, 100) + bytes(100))
    assert nn.parse_packet(nn.build_message_string("hello"))[1] == "hello"
    assert nn.parse_packet(struct.pack("<HHi", nn.NAT_RESPONSE, 4, -7))[1] == -7
    assert nn.parse_packet(struct.pack("<HH", nn.NAT_RESPONSE, 6) + b"ok,1\0\0")[1] == "ok,1"
    assert nn.parse_packet(nn.build_keepalive()) == (nn.NAT_KEEPALIVE, b"")
    assert nn.parse_packet(nn.build_connect())[0] == nn.NAT_CONNECT
    c = nn.build_connect((4, 1))
    assert len(c) == 4 + 271 and c[4:8] == b"Ping" and c[4 + 265:4 + 269] == bytes([4, 1, 0, 0])
    with pytest.raises(nn.NatNetError) as e:
        nn.parse_packet(struct.pack("<HH", 4242, 0))
    assert e.value.reason == "unknown_message"
    with pytest.raises(nn.NatNetError) as e:
        nn.parse_packet(nn.build_frame(full_frame(), (4, 1)), None)
    assert e.value.reason == "no_version"
    for bad in [(2, 9), (5, 0), "x", None, (4,)]:
        if bad == (4,):
            assert nn.normalize_version(bad) == (4, 0)
            continue
        with pytest.raises(nn.NatNetError):
            nn.normalize_version(bad)
    assert nn.normalize_version("4.1") == (4, 1) and nn.normalize_version((4, 1, 0, 0)) == (4, 1)


def test_limits_strings_and_counts():
    v = (4, 0)
    base = struct.pack("<i", 1)
    long_name = base + struct.pack("<i", 1) + b"n" * 256 + b"\0" + bytes(200)
    with pytest.raises(nn.NatNetError) as e:
        nn.parse_frame(long_name, v)
    assert e.value.reason == "bad_string"
    ok_name = base + struct.pack("<i", 1) + b"n" * 255 + b"\0" + struct.pack("<i", 0) + \
        nn.frame_payload(nn.MocapFrame(), v)[8:]
    assert list(nn.parse_frame(ok_name, v).marker_sets) == ["n" * 255]
    for count in (-1, 0x7FFFFFFF, 5000):          # cannot fit -> rejected before anything is allocated
        with pytest.raises(nn.NatNetError) as e:
            nn.parse_frame(base + struct.pack("<i", count) + bytes(64), v)
        assert e.value.reason == "bad_count"
    with pytest.raises(nn.NatNetError) as e:
        nn.parse_frame(bytes(70000), v)
    assert e.value.reason == "oversized"
    # bytes-likes are accepted without copies of the whole datagram: bytearray, memoryview, numpy
    pkt = nn.build_frame(full_frame(), v)
    for like in (bytearray(pkt), memoryview(pkt), np.frombuffer(pkt, np.uint8), pkt + bytes(1 << 20)):
        assert nn.parse_packet(like, v)[1].frame_number == 123456
    for not_bytes in (1.5, "text", None, [1, 2, 300], 10 ** 10):     # never bytes(int): no huge zero buffer
        with pytest.raises(nn.NatNetError):
            nn.parse_frame(not_bytes, v)
        with pytest.raises(nn.NatNetError):
            nn.parse_packet(not_bytes, v)
    f = nn.MocapFrame(marker_sets={"a\0b": np.zeros((0, 3))})
    with pytest.raises(nn.NatNetError):
        nn.build_frame(f, v)


# --- truncation and fuzz -------------------------------------------------------------------------------
@pytest.mark.parametrize("v", VERSIONS)
def test_truncated_at_every_length(v):
    pkt = nn.build_frame(full_frame(), v)
    payload = pkt[4:]
    for n in range(len(pkt)):
        with pytest.raises(nn.NatNetError):
            nn.parse_packet(pkt[:n], v)                              # header says more than arrived
    for n in range(len(payload)):
        with pytest.raises(nn.NatNetError) as e:
            nn.parse_packet(struct.pack("<HH", 7, n) + payload[:n], v)   # consistent header, short payload
        assert e.value.reason != "internal"


def _mutations(rng, valid):
    """Yield (packet, version) fuzz cases: random bytes, bit flips, truncations, hostile counts."""
    kinds = ("random", "random_frame", "bitflip", "truncate", "count", "splice")
    while True:
        kind = kinds[rng.integers(len(kinds))]
        v = VERSIONS[rng.integers(len(VERSIONS))]
        pkt = valid[v][rng.integers(len(valid[v]))]
        if kind == "random":
            yield rng.integers(0, 256, rng.integers(0, 600), dtype=np.uint8).tobytes(), v
        elif kind == "random_frame":
            body = rng.integers(0, 256, rng.integers(0, 600), dtype=np.uint8).tobytes()
            if rng.random() < 0.5:           # plausible small counts
                body = struct.pack("<i", 1) + bytes([rng.integers(0, 4), 0, 0, 0]) + body
            yield struct.pack("<HH", 7, len(body)) + body, v
        elif kind == "bitflip":
            b = bytearray(pkt)
            for _ in range(rng.integers(1, 9)):
                i = rng.integers(len(b))
                b[i] ^= 1 << rng.integers(8)
            yield bytes(b), v
        elif kind == "truncate":
            n = rng.integers(len(pkt))
            b = bytearray(pkt[:n])
            if n >= 4 and rng.random() < 0.5:
                struct.pack_into("<H", b, 2, n - 4)
            yield bytes(b), v
        elif kind == "count":
            b = bytearray(pkt)
            i = 4 + 4 * rng.integers(0, (len(b) - 8) // 4)
            val = [0x7FFFFFFF, -1, -0x80000000, 0x10000, 1000, 65535, int(rng.integers(-2 ** 31, 2 ** 31))][
                rng.integers(7)]
            struct.pack_into("<i", b, i, val)
            yield bytes(b), v
        else:                                # valid packet under the wrong version, or spliced
            other = VERSIONS[rng.integers(len(VERSIONS))]
            a = valid[other][rng.integers(len(valid[other]))]
            cut = rng.integers(4, len(a))
            yield a[:cut] + pkt[cut:], v


def test_fuzz_only_natnet_error():
    """20 000 hostile packets: every outcome is a frame or a NatNetError (never 'internal')."""
    rng = np.random.default_rng(RNG_SEED)
    valid = {v: [nn.build_frame(full_frame(np.random.default_rng(s)), v) for s in range(4)] +
             [nn.build_frame(nn.MocapFrame(frame_number=s), v) for s in range(2)] for v in VERSIONS}
    t0 = time.perf_counter()
    outcomes = {"parsed": 0}
    gen = _mutations(rng, valid)
    for _ in range(20_000):
        pkt, v = next(gen)
        try:
            mid, obj = nn.parse_packet(pkt, v)
        except nn.NatNetError as exc:
            assert exc.reason != "internal", str(exc)
            outcomes[exc.reason] = outcomes.get(exc.reason, 0) + 1
            continue
        outcomes["parsed"] += 1
        if mid == nn.NAT_FRAMEOFDATA:       # whatever parsed is bounded by the packet size
            assert len(obj.labeled_ids) * 26 <= len(pkt) and len(obj.unlabeled) * 12 <= len(pkt)
    elapsed = time.perf_counter() - t0
    print(f"fuzz: 20000 cases in {elapsed:.2f} s: {outcomes}")
    assert elapsed < 20.0
    assert outcomes["parsed"] > 0 and outcomes.get("truncated", 0) > 0 and outcomes.get("bad_count", 0) > 0


# --- client <-> emulator over loopback -----------------------------------------------------------------
@pytest.mark.parametrize("v", [(3, 1), (4, 0), (4, 1)])
@pytest.mark.parametrize("target", ["command", "data_port"])
def test_unicast_discovery_and_stream(traj, v, target):
    port = free_udp_port()
    emu = NatNetEmulator(MarkerSource(traj), version=v, rate=0, data_port=port, unicast_target=target)
    emu.start()
    client = nn.NatNetClient(command_port=emu.command_port, data_port=port, use_multicast=False)
    try:
        info = client.connect(timeout=2.0)
        assert info is not None and client.version == v and client.server_info is info
        assert info.app_name == "Motive" and info.clock_frequency == 10_000_000 and not info.is_multicast
        for _ in range(10):
            assert emu.send_frame()
        frames = collect(client, 10)
        assert [f.frame_number for f in frames] == list(range(1, 11))
        for i, f in enumerate(frames):
            np.testing.assert_array_equal(f.labeled_positions, traj[i])
            assert f.labeled_ids.tolist() == [nn.make_marker_id(1, j + 1) for j in range(24)]
            assert f.marker_ids.tolist() == list(range(1, 25)) and not f.occluded.any()
            np.testing.assert_array_equal(f.marker_sets["all"], traj[i])
            assert f.stamp_transmit - f.stamp_camera_mid_exposure == 40_000     # 4 ms at 10 MHz
            assert (f.precision_timestamp is not None) == (v >= (4, 1))
            lat_ms = (f.receive_time_ns - f.stamp_transmit * 100) / 1e6
            assert -1.0 < lat_ms < 1000.0
        assert client.stats["parsed"] == 10 and client.stats["dropped_frames"] == 0
        assert not client.stats["rejected"]
    finally:
        client.close()
        end = time.monotonic() + 5.0                 # the goodbye is a datagram: let the server read it
        while emu.counters["disconnects"] == 0 and time.monotonic() < end:
            time.sleep(0.01)
        emu.close()
    assert emu.counters["disconnects"] == 1          # close() says goodbye to a unicast server


def test_multicast_stream(traj):
    reason = multicast_loopback_reason()
    if reason:
        pytest.skip(reason)
    port = free_udp_port()
    emu = NatNetEmulator(MarkerSource(traj), version=(4, 1), rate=0, data_port=port, multicast=True)
    emu.start()
    client = nn.NatNetClient(command_port=emu.command_port, data_port=port, use_multicast=True)
    try:
        info = client.connect(timeout=2.0)
        assert info.is_multicast and info.data_port == port and client.version == (4, 1)
        for _ in range(8):
            emu.send_frame()
        frames = collect(client, 8)
        assert [f.frame_number for f in frames] == list(range(1, 9))
        np.testing.assert_array_equal(frames[-1].labeled_positions, traj[7])
        assert client.stats["keepalives_sent"] == 0
    finally:
        client.close()
        emu.close()


def test_dropped_stale_and_malformed_are_counted_and_survived(traj):
    drops = {3, 4, 10, 20, 21, 22}
    emu = NatNetEmulator(MarkerSource(traj), version=(4, 1), rate=0, data_port=free_udp_port(),
                         drop_frames=drops, malformed_every=2)
    emu.start()
    client = nn.NatNetClient(command_port=emu.command_port, data_port=emu.data_port, use_multicast=False)
    try:
        client.connect(timeout=2.0)
        for _ in range(30):
            emu.send_frame()
        frames = drain(client)
        sent = [1 + i for i in range(30) if i not in drops]
        assert [f.frame_number for f in frames] == sent
        st = client.stats
        assert st["dropped_frames"] == len(drops) and st["parsed"] == len(sent)
        assert sum(st["rejected"].values()) == emu.counters["malformed_sent"] == 15
        assert set(st["rejected"]) <= {"truncated", "bad_count", "bad_string", "unknown_message",
                                       "section_size"}
        # a repeated / late frame is stale: discarded, not counted as a drop
        emu.send_frame(27)
        emu.send_frame(30)
        frames = drain(client)
        assert [f.frame_number for f in frames] == [31] and st["stale_frames"] == 1
        # a big jump backwards (Motive looping a take) restarts the sequence
        emu.send_frame(0)
        emu.send_frame(1)
        frames = drain(client)
        assert [f.frame_number for f in frames] == [1, 2] and st["stream_resets"] == 1
    finally:
        client.close()
        emu.close()


def test_every_malformed_kind_is_rejected():
    emu = NatNetEmulator(MarkerSource(np.zeros((2, 3, 3))), version=(4, 1), rate=0)
    try:
        for v in VERSIONS:
            emu.version = v
            for kind in MALFORMED_KINDS:
                with pytest.raises(nn.NatNetError):
                    nn.parse_packet(emu.malformed_packet(kind), v)
    finally:
        emu.close()


def test_client_survives_garbage_flood():
    emu = NatNetEmulator(MarkerSource(np.zeros((2, 3, 3))), version=(4, 0), rate=0)
    emu.start()
    client = nn.NatNetClient(command_port=emu.command_port, data_port=free_udp_port(), use_multicast=False,
                             max_datagrams_per_call=50)
    try:
        client.connect(timeout=2.0)
        client.reset_stats()
        rng = np.random.default_rng(5)
        spam = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        addr = client.command_socket.getsockname()
        for _ in range(300):
            spam.sendto(rng.integers(0, 256, rng.integers(0, 300), dtype=np.uint8).tobytes(), addr)
        spam.close()
        time.sleep(0.05)
        t0 = time.perf_counter()
        assert client.receive(timeout=0.0) is None            # bounded work per call
        assert time.perf_counter() - t0 < 0.5
        assert client.stats["received"] <= 50 + 1
        for _ in range(100):
            if client.stats["received"] >= 300:
                break
            client.receive(timeout=0.01)
        st = client.stats
        assert st["received"] == 300
        assert sum(st["rejected"].values()) + st["messages"] + st["parsed"] + st["stale_frames"] == 300
        assert sum(st["rejected"].values()) >= 280
        emu.send_frame(1000)
        f = collect(client, 1)
        assert f and f[0].frame_number == 1001
    finally:
        client.close()
        emu.close()


def test_occlusion_and_relabel_through_the_emulator(traj):
    for mode in ("absent", "flagged"):
        emu = NatNetEmulator(MarkerSource(traj), version=(4, 1), rate=0, occlusions=[(2, 1, 3)],
                             occlusion_mode=mode, relabels=[(5, 2, 999)], data_port=free_udp_port())
        emu.start()
        client = nn.NatNetClient(command_port=emu.command_port, data_port=emu.data_port, use_multicast=False)
        try:
            client.connect(timeout=2.0)
            for _ in range(4):
                emu.send_frame()
            fr = collect(client, 4)
            assert len(fr) == 4
            ids2 = nn.make_marker_id(1, 3)
            for i, f in enumerate(fr):
                occluded = 1 <= i < 3
                assert np.isnan(f.marker_sets["all"][2]).all() == occluded
                if mode == "absent":
                    assert (ids2 in f.labeled_ids.tolist()) != occluded
                    assert len(f.labeled_ids) == 24 - occluded and not f.occluded.any()
                else:
                    j = f.labeled_ids.tolist().index(ids2)
                    assert f.occluded[j] == occluded and np.isnan(f.labeled_positions[j]).all() == occluded
                    assert f.occluded.sum() == occluded
                assert (999 in f.labeled_ids.tolist()) == (i >= 2)
        finally:
            client.close()
            emu.close()


def test_fallback_version_without_server_info(traj):
    emu = NatNetEmulator(MarkerSource(traj), version=(4, 0), rate=0, answer_connect=False,
                         data_port=free_udp_port())
    emu.start()
    try:
        silent = nn.NatNetClient(command_port=emu.command_port, data_port=emu.data_port, use_multicast=False)
        with pytest.raises(TimeoutError):
            silent.connect(timeout=0.3)
        silent.close()
        client = nn.NatNetClient(command_port=emu.command_port, data_port=emu.data_port, use_multicast=False,
                                 version="4.0")
        assert client.connect(timeout=0.3) is None and client.version == (4, 0)
        emu.send_frame()
        f = collect(client, 1)
        assert f and f[0].frame_number == 1 and client.server_info is None
        client.close()
    finally:
        emu.close()


def test_unicast_keepalive_keeps_the_client_subscribed(traj):
    emu = NatNetEmulator(MarkerSource(traj), version=(4, 1), rate=0, client_timeout=0.3,
                         data_port=free_udp_port())
    emu.start()
    alive = nn.NatNetClient(command_port=emu.command_port, data_port=free_udp_port(), use_multicast=False,
                            keepalive_interval=0.05)
    mute = nn.NatNetClient(command_port=emu.command_port, data_port=free_udp_port(), use_multicast=False,
                           keepalive_interval=0)
    try:
        alive.connect(timeout=2.0)
        mute.connect(timeout=2.0)
        end = time.monotonic() + 0.8
        while time.monotonic() < end:          # both poll; only one sends keep-alives
            alive.receive(timeout=0.02)
            mute.receive(timeout=0.0)
            emu.handle_commands(0.0)
        assert alive.stats["keepalives_sent"] >= 5 and emu.counters["keepalives"] >= 5
        emu.send_frame()
        assert len(collect(alive, 1)) == 1
        assert collect(mute, 1, timeout=0.3) == []    # the server forgot the silent client
    finally:
        alive.close()
        mute.close()
        emu.close()


def test_receive_latest_and_streaming_rate(traj):
    emu = NatNetEmulator(MarkerSource(traj), version=(4, 1), rate=250, data_port=free_udp_port(),
                         max_frames=60)
    emu.streaming = False                      # start streaming once the client is subscribed
    client = nn.NatNetClient(command_port=emu.command_port, data_port=emu.data_port, use_multicast=False)
    emu.start()
    try:
        client.connect(timeout=2.0)
        emu.streaming = True
        time.sleep(0.1)
        latest = client.receive_latest(timeout=0.5)
        assert latest is not None and client.stats["superseded_frames"] >= 1
        assert latest.frame_number == 1 + client.stats["superseded_frames"]
        rest = drain(client, quiet=0.3)
        numbers = [latest.frame_number] + [f.frame_number for f in rest]
        assert numbers == list(range(latest.frame_number, 61))
        assert client.stats["dropped_frames"] == 0 and client.stats["parsed"] == 60
    finally:
        client.close()
        emu.close()


def test_y_up_conversion_and_trajectory_loader(tmp_path):
    P = np.array([[[1.0, 2.0, 3.0]]])
    np.testing.assert_array_equal(ros_to_motive(P), [[[1.0, 3.0, -2.0]]])
    np.savez(tmp_path / "trajectory.npz", t=np.arange(3) / 120, nodes=np.arange(3 * 5 * 3.0).reshape(3, 5, 3),
             n_physical=np.int64(4), node_names=np.array(["a", "b", "c", "d", "v"]))
    _, Q, names = load_trajectory(tmp_path, y_up=True)
    assert Q.shape == (3, 4, 3) and names == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(Q, ros_to_motive(np.arange(45.0).reshape(3, 5, 3)[:, :4]))


def connect_to(client, proc, timeout: float = 15.0):
    """Connect ``client`` to the emulator process ``proc`` (retrying while it starts; its stderr if it dies)."""
    info = None
    end = time.monotonic() + timeout
    while info is None and time.monotonic() < end:
        try:
            info = client.connect(timeout=0.5)
        except TimeoutError:
            assert proc.poll() is None, proc.communicate()[1].decode()
    return info


def test_command_line_demo(tmp_path):
    T, n = 30, 6
    t = np.arange(T) / 120.0
    nodes = f32(np.random.default_rng(0).uniform(-1, 1, (T, n + 2, 3)))
    np.savez(tmp_path / "trajectory.npz", t=t, nodes=nodes, n_physical=np.int64(n),
             node_names=np.array([f"n{j}" for j in range(n + 2)]))
    cmd_port, data_port = free_udp_port(), free_udp_port()
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "natnet_emulator.py"), "--trajectory",
                             str(tmp_path / "trajectory.npz"), "--rate", "120", "--version", "4.1", "--y-up",
                             "--command-port", str(cmd_port), "--data-port", str(data_port),
                             "--rigid-bodies", "2", "--duration", "20", "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    client = nn.NatNetClient(command_port=cmd_port, data_port=free_udp_port(), use_multicast=False)
    try:
        info = connect_to(client, proc)
        assert info is not None and client.version == (4, 1)
        frames = collect(client, 5, timeout=5.0)
        assert len(frames) == 5
        expect = np.asarray(ros_to_motive(nodes[:, :n]), np.float32)
        for f in frames:
            assert len(f.rigid_bodies) == 2 and f.labeled_positions.shape == (n, 3)
            assert any(np.array_equal(f.labeled_positions.astype(np.float32), e) for e in expect)
    finally:
        client.close()
        proc.terminate()
        proc.communicate(timeout=10)


def test_command_line_streams_a_synthetic_six_bar_lab_take():
    """--six-bar SEED: the synthetic lab take (unlabeled node markers, strays, a payload asset) over NatNet."""
    cmd_port, data_port = free_udp_port(), free_udp_port()
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "natnet_emulator.py"), "--six-bar", "2",
                             "--take-duration", "3", "--rate", "360", "--command-port", str(cmd_port),
                             "--data-port", str(data_port), "--duration", "20", "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    client = nn.NatNetClient(command_port=cmd_port, data_port=free_udp_port(), use_multicast=False)
    try:
        info = connect_to(client, proc)
        assert info is not None
        frames = collect(client, 40, timeout=10.0)
        assert len(frames) == 40
        models = set(np.concatenate([f.model_ids for f in frames]).tolist())
        assert models == {0, 2}                                   # unlabeled markers and the payload asset
        assert all(len(f.rigid_bodies) == 1 for f in frames)      # the payload's pose
        assert all(12 <= len(f.labeled_ids) <= 17 for f in frames)
    finally:
        client.close()
        proc.terminate()
        proc.communicate(timeout=10)


def _good_trajectory(tmp_path):
    np.savez(tmp_path / "trajectory.npz", t=np.arange(3) / 120, nodes=np.zeros((3, 5, 3)), n_physical=np.int64(4),
             node_names=np.array(["a", "b", "c", "d", "v"]))
    return tmp_path / "trajectory.npz"


@pytest.mark.parametrize("make, message", [
    (lambda d: d / "missing.npz", "{d}/missing.npz: no such file"),
    (lambda d: d, "{d}/trajectory.npz: no such file"),                              # a directory without one
    (lambda d: (d / "trajectory.csv").write_text("t,n1.x\n0,1\n") and d / "trajectory.csv",
     "{d}/trajectory.csv: expected an engine trajectory.npz or its directory"),
    (lambda d: (d / "junk.npz").write_bytes(b"not a zip") and d / "junk.npz",
     "{d}/junk.npz: not an engine trajectory.npz"),
    (lambda d: np.savez(d / "other.npz", a=np.zeros(3)) or d / "other.npz",
     "{d}/other.npz: not an engine trajectory.npz (n_physical is not a file in the archive)"),
    (lambda d: np.savez(d / "empty.npz", t=np.zeros(0), nodes=np.zeros((0, 4, 3)), n_physical=np.int64(4))
     or d / "empty.npz", "{d}/empty.npz: not an engine trajectory.npz (nodes (0, 4, 3)"),
])
def test_trajectory_loader_names_the_bad_file(tmp_path, make, message):
    path = make(tmp_path)
    with pytest.raises(ValueError, match=re.escape(message.format(d=tmp_path))):
        load_trajectory(str(path))


@pytest.mark.parametrize("args, message", [
    (["--trajectory", "{d}/nonexist.npz"], "argument --trajectory: {d}/nonexist.npz: no such file"),
    (["--trajectory", "{d}/junk.npz"], "argument --trajectory: {d}/junk.npz: not an engine trajectory.npz"),
    (["--address", "999.1.1.1"], "argument --address: '999.1.1.1' is not an IPv4 address"),
    (["--address", "192.0.2.1"], "argument --address/--command-port: cannot serve on 192.0.2.1:0: "),  # not ours
    (["--multicast-address", "10.1.2.3"], "argument --multicast-address: '10.1.2.3' is not an IPv4 multicast"),
    (["--rate", "0"], "argument --rate: must be > 0, got '0'"),
    (["--rate", "-5"], "argument --rate: must be > 0, got '-5'"),
    (["--rate", "nan"], "argument --rate: must be > 0, got 'nan'"),
    (["--noise", "-1"], "argument --noise: must be >= 0, got '-1'"),
    (["--drop-probability", "2"], "argument --drop-probability: must be in [0, 1], got '2'"),
    (["--data-port", "99999"], "argument --data-port: must be in [1, 65535], got '99999'"),
    (["--data-port", "0"], "argument --data-port: must be in [1, 65535], got '0'"),
    (["--command-port", "-1"], "argument --command-port: must be in [0, 65535], got '-1'"),
    (["--duration", "-1"], "argument --duration: must be >= 0, got '-1'"),
    (["--model-id", "70000"], "argument --model-id: must be in [0, 65535], got '70000'"),
    (["--malformed-every", "-2"], "argument --malformed-every: must be >= 0, got '-2'"),
    (["--rigid-bodies", "5"], "argument --rigid-bodies: 5 is more than the trajectory's 4 markers"),
])
def test_command_line_rejects_bad_arguments(tmp_path, capsys, monkeypatch, args, message):
    import natnet_emulator
    monkeypatch.setattr(natnet_emulator.NatNetEmulator, "start", lambda self: pytest.fail("the emulator started"))
    good = _good_trajectory(tmp_path)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    args = [a.format(d=tmp_path) for a in args]
    argv = ([] if "--trajectory" in args else ["--trajectory", str(good)]) + ["--command-port", "0", "--quiet"] + args
    with pytest.raises(SystemExit) as exc:
        natnet_emulator.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"error: {message.format(d=tmp_path)}" in err and "Traceback" not in err
