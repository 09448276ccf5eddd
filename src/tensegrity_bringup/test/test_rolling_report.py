"""The rolling report's numbers against a recording whose motion is known: the six-bar at rest on its base
face, then set down on two other faces of its hull at known places (a rigid turn and shift each, 0.2 s of
motion in between), written to MCAP as the simulator's topics would be. No ROS graph: the report reads the
file (tensegrity_bringup.report, .rolling_report)."""
import json
import math

import numpy as np
import pytest
from scipy.spatial import ConvexHull
from scipy.spatial.transform import Rotation

from tensegrity_engine.generators import superball, verify_template
from tensegrity_engine.locomotion.bar_clearance import BarClearance
from tensegrity_engine.locomotion.closed_loop import at_rest
from tensegrity_engine.locomotion.support import centre_of_mass, face_of, has_left

RATE = 100.0                                   # Hz: node_positions, as the simulator publishes them
HOLD, MOVE = 1.0, 0.2                          # s on each face, s from one face to the next
PLACES = [(0.0, 0.0), (0.4, 0.1), (0.7, 0.3)]  # m: centre of mass over the ground on each face


@pytest.fixture(scope="module")
def robot():
    model, _ = verify_template(superball(friction=0.8), min_tension=100.0)
    return model, at_rest(model)


def set_down(model, X0, normal, place) -> np.ndarray:
    """X0 turned so the hull face with outward ``normal`` faces down, as low as X0 lies, its centre of mass
    over ``place`` (x, y) [m]."""
    R = Rotation.align_vectors([[0.0, 0.0, -1.0]], [normal])[0].as_matrix()
    Y = (X0 - centre_of_mass(model, X0)) @ R.T
    Y[:, 2] += X0[:, 2].min() - Y[:, 2].min()
    Y[:, :2] += np.asarray(place) - centre_of_mass(model, Y)[:2]
    return Y


def three_faces(model, X0) -> list:
    """Poses on the rest face and on two other hull faces, each leaving the one before."""
    hull = ConvexHull(X0)
    poses = [set_down(model, X0, [0, 0, -1.0], PLACES[0])]       # as it lies, moved to the origin
    for normal in hull.equations[:, :3]:
        Y = set_down(model, X0, normal, PLACES[len(poses)])
        if len(face_of(model, Y)) >= 3 and has_left(face_of(model, Y), face_of(model, poses[-1])):
            poses.append(Y)
        if len(poses) == 3:
            return poses
    raise AssertionError("no three hull faces to rest on")


def samples(poses) -> tuple:
    """(t (T,) [s], X (T, n, 3) [m]): each pose held HOLD, linear motion over MOVE to the next."""
    t, X = [], []
    step = 1.0 / RATE
    for k, P in enumerate(poses):
        if k:
            for s in np.arange(1, round(MOVE * RATE)) * step:
                t.append(t[-1] + step)
                X.append(poses[k - 1] + (s / MOVE) * (P - poses[k - 1]))
        for _ in range(round(HOLD * RATE)):
            t.append(t[-1] + step if t else 0.0)
            X.append(P)
    return np.array(t), np.array(X)


def write_recording(path, model, t, X, faces_changed: int):
    """An MCAP file with the topics the report reads: model_description, node_positions, string_states,
    joint_states (stamped alike), min_clearance and the locomotion controller's diagnostics."""
    from mcap_ros2.writer import Writer
    from tensegrity_ros_common.description import describe
    from tensegrity_ros_common.msgdefs import definition
    t0 = 1000.0
    with open(path, "wb") as fh:
        w = Writer(fh)
        schema = {name: w.register_msgdef(name, definition(name)) for name in (
            "std_msgs/msg/String", "geometry_msgs/msg/PoseArray", "sensor_msgs/msg/JointState",
            "std_msgs/msg/Float64", "diagnostic_msgs/msg/DiagnosticArray")}
        w.write_message("/model_description", schema["std_msgs/msg/String"], {"data": describe(model)}, log_time=1)
        bars = BarClearance(model)
        for tk, Xk in zip(t, X):
            ns = int(round((t0 + tk) * 1e9))
            header = {"stamp": {"sec": ns // 10**9, "nanosec": ns % 10**9}, "frame_id": "world"}
            w.write_message("/node_positions", schema["geometry_msgs/msg/PoseArray"], {"header": header, "poses": [
                {"position": {"x": x, "y": y, "z": z}, "orientation": {"w": 1.0}} for x, y, z in Xk]}, log_time=ns)
            w.write_message("/string_states", schema["sensor_msgs/msg/JointState"], {
                "header": header, "name": list(model.string_names), "position": [1.0] * len(model.string_names),
                "effort": [100.0] * len(model.string_names)}, log_time=ns)
            w.write_message("/joint_states", schema["sensor_msgs/msg/JointState"], {
                "header": header, "name": list(model.actuator_names),
                "position": list(np.asarray(model.actuator_zero, float))}, log_time=ns)
            w.write_message("/min_clearance", schema["std_msgs/msg/Float64"], {"data": bars.min(Xk)}, log_time=ns)
        status = {"level": 0, "name": "/locomotion_controller: controller", "message": "ok", "hardware_id": "",
                  "values": [{"key": "state", "value": "tipping"},
                             {"key": "faces_changed", "value": str(faces_changed)}, {"key": "detours", "value": "0"}]}
        w.write_message("/diagnostics", schema["diagnostic_msgs/msg/DiagnosticArray"],
                        {"header": header, "status": [status]}, log_time=ns)
        w.finish()


def test_the_report_gives_the_known_path_faces_distance_speed_and_clearance(robot, tmp_path):
    from tensegrity_bringup.report import make_report
    model, X0 = robot
    poses = three_faces(model, X0)
    t, X = samples(poses)
    write_recording(tmp_path / "roll.mcap", model, t, X, faces_changed=2)
    summary = make_report(tmp_path / "roll.mcap", tmp_path / "report", heading_deg=0.0)
    r = summary["rolling"]
    end = np.array(PLACES[-1])
    assert r["start_xy_m"] == pytest.approx(PLACES[0], abs=1e-9) and r["end_xy_m"] == pytest.approx(end, abs=1e-9)
    assert r["distance_m"] == pytest.approx(np.hypot(*end), abs=1e-9)
    legs = np.diff(np.array(PLACES), axis=0)
    assert r["path_length_m"] == pytest.approx(np.sum(np.hypot(*legs.T)), abs=1e-9)     # straight legs
    assert r["duration_s"] == pytest.approx(t[-1], abs=1e-6)
    assert r["mean_speed_m_s"] == pytest.approx(np.hypot(*end) / t[-1], rel=1e-6)
    assert r["progress_m"] == pytest.approx(end[0], abs=1e-9) and r["sideways_m"] == pytest.approx(end[1], abs=1e-9)
    assert r["heading_error_deg"] == pytest.approx(math.degrees(math.atan2(end[1], end[0])), abs=1e-6)
    # the faces, from the positions (not the controller's word), reached at the start of each move's end
    assert r["faces_changed"] == 2 and r["faces"] == [list(face_of(model, P)) for P in poses]
    arrivals = [k * (HOLD + MOVE) for k in range(3)]
    assert np.all(np.array(r["face_times_s"]) >= np.array(arrivals) - MOVE - 1e-9)
    assert np.all(np.array(r["face_times_s"]) <= np.array(arrivals) + 1e-9)
    bars = BarClearance(model)
    assert r["min_bar_clearance_m"] == pytest.approx(min(bars.min(x) for x in X), abs=1e-12)
    assert r["min_bar_clearance_m"] <= bars.min(X0) + 1e-9
    assert r["controller"]["faces_changed"] == "2"
    # plates.png is not drawn for a robot without frames; the summary says why
    out = tmp_path / "report"
    assert (out / "rolling.png").stat().st_size > 20_000 and not (out / "plates.png").exists()
    assert "no frames" in summary["skipped"]["plates.png"]
    assert json.loads((out / "summary.json").read_text())["rolling"]["faces_changed"] == 2


def test_a_goal_gives_the_distance_left_and_a_robot_at_rest_no_heading_error(robot, tmp_path):
    from tensegrity_bringup.report import make_report
    from tensegrity_bringup.rolling_report import report_lines
    model, X0 = robot
    poses = three_faces(model, X0)
    t, X = samples(poses)
    write_recording(tmp_path / "goal.mcap", model, t, X, faces_changed=2)
    r = make_report(tmp_path / "goal.mcap", tmp_path / "goal", goal=(1.0, 0.5))["rolling"]
    assert r["final_goal_distance_m"] == pytest.approx(np.hypot(0.3, 0.2), abs=1e-9)
    assert r["start_goal_distance_m"] == pytest.approx(np.hypot(1.0, 0.5), abs=1e-9)
    assert "heading_deg" not in r
    still = poses[:1]
    t, X = samples(still)
    write_recording(tmp_path / "still.mcap", model, t, X, faces_changed=0)
    summary = make_report(tmp_path / "still.mcap", tmp_path / "still", heading_deg=90.0)
    r = summary["rolling"]
    assert r["faces_changed"] == 0 and r["distance_m"] < 1e-12 and r["heading_error_deg"] is None
    assert "heading error - deg" in report_lines(summary)[0]
