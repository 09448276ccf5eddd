"""Issue 21 #15: the NatNet emulator replays a Motive CSV take (natnet_csv.csv_source, ``natnet_emulator.py
--csv TAKE.csv``): a NatNet client receives the take's frames - frame numbers, labeled markers with their
asset ids (flagged occluded in a gap), unlabeled markers under their numbers (absent in a gap), the rigid
body - with the CSV's positions, at the take's frame rate."""
import os
import subprocess
import sys

import numpy as np
import pytest

from natnet_csv import csv_source
from natnet_emulator import NatNetEmulator, free_udp_port
from tensegrity_mocap import natnet as nn
from tensegrity_mocap.motive import read_motive_csv
from tensegrity_mocap.synthetic import make_capture, six_bar_robot, write_capture_csv
from test_natnet import HERE, collect, connect_to

ATOL = 2e-6                  # m: NatNet sends float32 (a metre is exact to 1e-7)


@pytest.fixture(scope="module")
def take(tmp_path_factory):
    """A labeled six-bar take at 60 Hz: node markers Robot:n1.. (IDs 1:1..), payload markers (2:1..) and
    rigid body (2), two unlabeled strays renamed after their gaps, occlusions, dropped frames."""
    cap = make_capture(six_bar_robot(seed=3), duration=2.0, rate=60.0, labeled=True, occlusion_lengths=(5, 12),
                       occluded_fraction=0.08, dropped_frames=0.02, seed=3)
    path = write_capture_csv(cap, tmp_path_factory.mktemp("take") / "take.csv")
    rec = read_motive_csv(path)
    assert len(rec.unlabeled) > 2 and len(rec.rigid_bodies) == 1 and np.any(np.diff(rec.frames) > 1)
    return path, rec


def expected(rec, row) -> dict:
    """{NatNet marker id: position or None (sent flagged occluded)} of the take's row."""
    out = {}
    for name, P in rec.markers.items():
        asset, member = (int(x) for x in rec.marker_ids[name].split(":"))
        out[nn.make_marker_id(asset, member)] = P[row] if np.isfinite(P[row]).all() else None
    for name, P in rec.unlabeled.items():
        if np.isfinite(P[row]).all():
            out[nn.make_marker_id(0, int(name.split()[-1]))] = P[row]
    return out


def check_frame(rec, f, rate) -> int:
    """Assert NatNet frame ``f`` is the take's row it names (looped takes continue the numbering); the row."""
    fn = rec.frames - rec.frames[0]
    rel = (f.frame_number - 1) % (int(fn[-1]) + 1)
    row = int(np.searchsorted(fn, rel))
    assert row < len(fn) and fn[row] == rel, f"frame {f.frame_number} is not a row of the take"
    want = expected(rec, row)
    got = dict(zip(np.asarray(f.labeled_ids).tolist(), np.asarray(f.labeled_positions)))
    assert set(got) == set(want), f.frame_number
    params = dict(zip(np.asarray(f.labeled_ids).tolist(), np.asarray(f.labeled_params).tolist()))
    for mid, p in want.items():
        if p is None:
            assert params[mid] & nn.MARKER_OCCLUDED and not np.isfinite(got[mid]).any()
        else:
            np.testing.assert_allclose(got[mid], p, atol=ATOL, err_msg=f"frame {f.frame_number}, marker {mid}")
    (rb,) = f.rigid_bodies
    assert rb.id == 2
    np.testing.assert_allclose(np.r_[rb.position, rb.quaternion], rec.rigid_bodies["payload"][row], atol=ATOL)
    if rate:
        assert f.timestamp == pytest.approx((f.frame_number - 1) / rate)
    return row


def test_every_row_of_a_csv_take_reaches_a_natnet_client(take):
    path, rec = take
    emu = NatNetEmulator(csv_source(path), rate=0, data_port=free_udp_port())
    emu.start()
    client = nn.NatNetClient(command_port=emu.command_port, data_port=emu.data_port, use_multicast=False)
    try:
        assert client.connect(timeout=2.0) is not None
        frames = []
        for _ in range(rec.n_frames):
            emu.send_frame()
            frames += collect(client, 1, timeout=1.0)
        assert [f.frame_number - 1 for f in frames] == (rec.frames - rec.frames[0]).tolist()   # gaps kept
        rows = [check_frame(rec, f, None) for f in frames]          # sent on demand: no frame times
        assert rows == list(range(rec.n_frames))
        seen = np.concatenate([f.model_ids for f in frames])
        assert set(seen.tolist()) == {0, 1, 2}                    # unlabeled strays, the robot, the payload
    finally:
        client.close()
        emu.close()


def test_command_line_streams_a_csv_take_at_its_frame_rate(take):
    path, rec = take
    cmd_port, data_port = free_udp_port(), free_udp_port()
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "natnet_emulator.py"), "--csv", str(path),
                             "--command-port", str(cmd_port), "--data-port", str(data_port), "--duration", "20",
                             "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    client = nn.NatNetClient(command_port=cmd_port, data_port=free_udp_port(), use_multicast=False)
    try:
        assert connect_to(client, proc) is not None
        frames = collect(client, 40, timeout=10.0)
        assert len(frames) == 40
        for f in frames:
            check_frame(rec, f, rec.frame_rate)
        # paced at the take's 60 Hz: the server's transmit stamps (10 MHz clock) are 1/60 s apart
        step = np.median(np.diff([f.stamp_transmit for f in frames])) / 1e7
        assert step == pytest.approx(1.0 / 60.0, rel=0.2)
    finally:
        client.close()
        proc.terminate()
        proc.communicate(timeout=10)


def test_command_line_names_a_bad_csv_take(tmp_path, capsys):
    import natnet_emulator
    (tmp_path / "bad.csv").write_text("not,a,take\n")
    for bad in (tmp_path / "missing.csv", tmp_path / "bad.csv"):
        with pytest.raises(SystemExit) as exc:
            natnet_emulator.main(["--csv", str(bad), "--command-port", "0", "--quiet"])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert f"error: argument --csv: {bad}" in err and "Traceback" not in err
