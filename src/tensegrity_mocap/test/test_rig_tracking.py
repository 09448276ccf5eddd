"""A clamped model in tracking and comparison (issue #35, item 3): the rig's model (fixed nodes, in the robot's
own frame) tracks a capture in the room's frame, and tensegrity-compare registers the fixed part on its
markers (--register-fixed) or says where the fixed nodes are and what to do.

The synthetic rig (tensegrity_mocap.synthetic.rig): bars b2, b4 clamped 0.27 m above the floor, the others
swaying 4 mm, 0.3 mm marker noise, the take turned 0.6 rad and shifted (0.8, -0.3) m."""
import json
import re

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from tensegrity_engine import load_model
from tensegrity_mocap.capture import model_from_capture, write_capture_model
from tensegrity_mocap.synthetic import six_bar_robot
from tensegrity_mocap.synthetic.rig import clamped_rig_take, write_rig_take
from tensegrity_mocap.tracking.registration import fixed_part_transform
from tensegrity_mocap.tracking.takes import summary, track_take

#: tracked nodes are their markers: 0.3 mm noise per axis, 0.5 mm in 3-D, < 2.5 mm at 5 sigma
TRACK_TOL = 0.0025


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    d = tmp_path_factory.mktemp("rig")
    take = clamped_rig_take(six_bar_robot(seed=4), height=0.27, duration=0.5)
    csv, bars, strings = write_rig_take(take, d / "rig.csv")
    res = model_from_capture(csv, bars, strings)
    model_path, _ = write_capture_model(res, d / "rig.yaml")
    return {"dir": d, "take": take, "csv": csv, "model": model_path, "res": res}


def test_a_clamped_model_tracks_a_capture_in_another_frame(rig):
    model = load_model(rig["model"])
    assert len(model.fixed_nodes) == 4
    result = track_take(rig["csv"], model)
    s = summary(result)
    assert s["tracked_share"] == 1.0, s["registration_note"]
    order = [int(m.split()[1]) - 1001 for m in rig["res"].marker_map]         # model node -> rig node
    assert np.abs(result["nodes"] - rig["take"].nodes[:, order]).max() < TRACK_TOL
    assert "the fixed nodes n3,n4,n7,n8 are 1.46 m from where the model file puts them" in s["registration_note"]
    assert "--register-fixed" in s["registration_note"]


@pytest.mark.parametrize("sag", [0.03, 0.06])
def test_a_loaded_rig_is_placed_by_its_fixed_part(rig, sag):
    """A hung weight moved the free part (here: down by ``sag`` m, as the issue's 34-61 mm) away from the model's
    shape: no whole-shape placement fits clearly (30 mm: 'ambiguous', 0 % tracked; 60 mm: only the 4 clamped
    nodes); the fixed part's markers place the model and the free part is matched from there."""
    take = rig["take"]
    free = [i for i in range(12) if i not in (2, 3, 6, 7)]
    markers = {nm: x + ([0.0, 0.0, -sag] if int(nm.split()[1]) - 1001 in free else 0.0)
               for nm, x in take.markers.items()}
    truth = take.nodes.copy()
    truth[:, free] -= [0.0, 0.0, sag]
    loaded = write_rig_take(type(take)(take.t, truth, markers, take.bars, take.strings, take.clamped, take.height),
                            rig["dir"] / f"loaded{sag}.csv")[0]
    result = track_take(loaded, load_model(rig["model"]))
    assert summary(result)["tracked_share"] == 1.0, summary(result)["registration_note"]
    assert np.abs(result["nodes"] - truth).max() < TRACK_TOL


def _compare(rig, *extra):
    from tensegrity_mocap.cli.compare import main
    out = rig["dir"] / ("cmp" + "".join(e.strip("-")[:3] for e in extra))
    code = main([str(rig["csv"]), "--simulate", str(rig["model"]), "--input", "none", "--out", str(out), *extra])
    return code, out


def test_compare_names_the_fixed_nodes_far_from_their_markers(rig, capsys):
    code, _ = _compare(rig)
    err = capsys.readouterr().err
    assert code == 2
    assert re.search(r"the fixed nodes n3,n4,n7,n8 are 1\.46\d m from their markers", err), err
    assert "--register-fixed" in err and "another frame" in err


@pytest.mark.parametrize("how", [["--register-fixed"],       # the model's report: slow tier (default-tier budget)
                                 pytest.param(["--capture-transform", "REPORT"], marks=pytest.mark.slow)])
def test_compare_on_the_fixed_part(rig, how):
    """Registered on the fixed part's markers (or mapped by the model's report), the clamped nodes agree with
    the simulation at the noise level; the free ones differ by the 4 mm sway the static model does not make."""
    how = [str(rig["model"].with_name("rig.report.json")) if a == "REPORT" else a for a in how]
    code, out = _compare(rig, *how)
    assert code == 0
    nodes = json.loads((out / "rms.json").read_text())["nodes"]["per_node"]
    for n in ("n3", "n4", "n7", "n8"):
        assert nodes[n]["rms_mm"] < 1.0, nodes[n]        # 0.5 mm: the markers' 3-D noise
    assert 2.0 < nodes["n9"]["rms_mm"] < 12.0


def test_fixed_part_transform_recovers_a_rigid_motion():
    rng = np.random.default_rng(5)
    M = rng.uniform(-0.3, 0.3, (12, 3))
    R = Rotation.from_rotvec([0.2, -0.4, 1.1]).as_matrix()
    Q = (M - [0.5, 0.1, -0.27]) @ R                     # measured = R^T (M - t): the model is R Q + t
    T, rms, how = fixed_part_transform(M, [2, 3, 6, 7], Q)
    assert np.allclose(T[:3, :3], R) and np.allclose(T[:3, 3], [0.5, 0.1, -0.27]) and rms < 1e-12
    assert how == "the 4 fixed nodes' markers"
    Q[[0, 1, 4, 5]] = np.nan                          # free nodes unseen: the clamped bar fixes it alone
    M2 = M.copy()
    M2[3] = M2[2] + [0.6, 0, 0]                       # one clamped bar: its two ends are on a line
    T, rms, how = fixed_part_transform(M2, [2, 3], (M2 - [0.5, 0.1, -0.27]) @ R)
    assert np.allclose(T[:3, :3], R) and "on a line" in how
    assert fixed_part_transform(M2, [2, 3], np.where(np.arange(12)[:, None] < 10, np.nan, Q)) is None
