"""tensegrity-bringup's controller options without starting nodes: which nodes they add, the plate goal's
angles, and the one-line refusals of bad combinations."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from tensegrity_bringup.bringup import _checked_args, _parser
from tensegrity_bringup.drive import plate_goal_frame
from tensegrity_engine.cli.app import main as tensegrity


@pytest.fixture(scope="module")
def robots(tmp_path_factory):
    """{'superball': a rollable model file, 'threebar': one without actuators}."""
    out = {}
    for name in ("superball", "threebar"):
        out[name] = str(tmp_path_factory.mktemp("models") / f"{name}.yaml")
        assert tensegrity(["new", name, "-o", out[name]]) == 0
    return out


def test_the_controller_options_add_their_controller_and_drive_it(robots):
    args, nodes, _ = _checked_args(_parser(), ["--locomotion", "--model", robots["superball"], "--heading", "90"])
    assert nodes == ["simulator", "collision_monitor", "locomotion_controller"]
    assert args.drive["heading"] == 90.0 and args.drive["plate_goal"] is None
    args, nodes, _ = _checked_args(_parser(), ["--manipulation", "--plate-goal", "0.01,0,1.36,10,-5,30"])
    assert nodes == ["simulator", "collision_monitor", "pose_controller"]
    C = args.drive["plate_goal"]
    assert np.allclose(C[:3, 3], [0.01, 0.0, 1.36])
    # roll, pitch, yaw in degrees: R = Rz(yaw) Ry(pitch) Rx(roll), checked against rotations about fixed axes
    Rz, Ry, Rx = (Rotation.from_rotvec(np.radians(a) * np.eye(3)[k]).as_matrix()
                  for a, k in ((30, 2), (-5, 1), (10, 0)))
    assert np.allclose(C[:3, :3], Rz @ Ry @ Rx, atol=1e-12)
    assert np.allclose(plate_goal_frame([0, 0, 0, 0, 0, 0]), np.eye(4))
    args, nodes, _ = _checked_args(_parser(), ["--locomotion", "--model", robots["superball"], "--goal", "1.5,-2"])
    assert args.drive["goal"] == [1.5, -2.0]


def test_a_model_the_controller_cannot_roll_is_refused_before_any_node_starts(capsys, robots, tmp_path):
    """The bringup exits 2 naming the reason (no actuators; no file) instead of running a controller that
    answers every command with 'no model yet' and exiting 0."""
    for model, words in ((robots["threebar"], "has no actuators to move"), (str(tmp_path / "none.yaml"), "none.yaml")):
        with pytest.raises(SystemExit) as exit_:
            _checked_args(_parser(), ["--locomotion", "--model", model, "--heading", "0"])
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and "cannot roll it" in err and words in err


@pytest.mark.parametrize("argv, words", [
    (["--locomotion"], "--locomotion needs --model"),
    (["--heading", "90"], "add --locomotion"),
    (["--plate-goal", "0,0,1,0,0,0"], "add --manipulation"),
    (["--manipulation", "--plate-goal", "0,0,1"], "give 6 comma-separated numbers"),
    (["--locomotion", "--model", "r.yaml", "--goal", "1,x"], "give 2 comma-separated numbers"),
    (["--locomotion", "--manipulation", "--model", "r.yaml"], "choose one"),
    (["--locomotion", "--model", "r.yaml", "--heading", "0", "--goal", "1,1"], "not both"),
])
def test_bad_controller_options_are_refused_in_one_line(capsys, argv, words):
    with pytest.raises(SystemExit) as exit_:
        _checked_args(_parser(), argv)
    assert exit_.value.code == 2 and words in capsys.readouterr().err


def test_live_adds_the_live_view_as_its_own_process():
    from tensegrity_bringup.bringup import OWN_PROCESS_NODES, check_parameter_names, parse_overrides
    args, nodes, _ = _checked_args(_parser(), ["--live"])
    assert nodes == ["simulator", "collision_monitor", "live_view"] and "live_view" in OWN_PROCESS_NODES
    assert parse_overrides(args)["live_view"] == ["port:=8765"]
    args, nodes, _ = _checked_args(_parser(), ["--nodes", "simulator,live_view", "--live", "0",
                                               "--param", "live_view:rate_hz:=10.0"])
    assert nodes == ["simulator", "live_view"]
    overrides = parse_overrides(args)
    assert overrides["live_view"] == ["port:=0", "rate_hz:=10.0"]
    check_parameter_names(overrides)                     # the live view declares them
    with pytest.raises(SystemExit):
        _checked_args(_parser(), ["--live", "70000"])


def test_the_printed_live_view_address_follows_the_overrides():
    """The line telling where to connect names the port and host the view will take (it printed 8765 for
    --param live_view:port:=9000)."""
    from tensegrity_bringup.bringup import live_view_address, parse_overrides
    address = lambda argv: live_view_address(parse_overrides(_checked_args(_parser(), argv)[0])["live_view"])  # noqa: E731
    assert address(["--live"]) == "ws://127.0.0.1:8765"
    assert address(["--live", "--param", "live_view:port:=9000"]) == "ws://127.0.0.1:9000"
    assert address(["--nodes", "simulator,live_view", "--param", "live_view:host:=10.0.0.5"]) == "ws://10.0.0.5:8765"
    assert address(["--live", "0"]).startswith("ws://127.0.0.1:PORT")
