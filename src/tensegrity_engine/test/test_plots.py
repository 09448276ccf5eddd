"""PNG figures of a trajectory (tensegrity_engine.plots.figures) on a small synthetic trajectory (no simulation)."""
import matplotlib.image as mpimg
import numpy as np
import pytest
import yaml
from scipy.spatial.transform import Rotation

from tensegrity_engine import Trajectory, build_model, load_model, spec_from_dict
from tensegrity_engine.model.load import resolve_model_path
from tensegrity_engine.plots import figures as plots
from tensegrity_engine.plots.figures import (plot_all, plot_bar_error, plot_inputs, plot_plates, plot_snapshot,
                                     plot_tensions)


def framed_prism():
    """prism3 with an actuator on c0 and frames C0, C1, C2."""
    data = yaml.safe_load(resolve_model_path("prism3").read_text())
    data["actuators"] = [{"name": "m0", "string": "c0", "spool_radius": 0.01},
                         {"name": "m1", "string": "c4", "spool_radius": 0.01}]
    data["frames"] = [{"name": "C0", "nodes": ["b1", "b2", "b3"]},
                      {"name": "C1", "nodes": ["t1", "t2", "t3"], "x_node": "t2"},
                      {"name": "C2", "nodes": ["b1", "t2", "t1"]}]
    return build_model(spec_from_dict(data, "framed_prism"))


def fake_trajectory(model, n_samples=80, duration=3.0, damping=1.0):
    """A Trajectory with a smooth synthetic motion: the top plate twists, the whole body turns and drifts."""
    t = np.linspace(0.0, duration, n_samples)
    X0 = np.asarray(model.positions)
    top = np.array([nm.startswith("t") for nm in model.node_names])
    twist = Rotation.from_rotvec(np.outer(0.2 * np.sin(2 * t) * np.exp(-damping * t), [0, 0, 1]))
    body = Rotation.from_rotvec(np.outer(0.5 * t, [0.2, 0.1, 1.0]))
    X = np.repeat(X0[None], n_samples, axis=0)
    for k in range(n_samples):            # test data only
        X[k, top] = twist[k].apply(X0[top])
        X[k] = body[k].apply(X[k]) + [0.01 * t[k], 0.0, 0.002 * t[k] ** 2]
    sc, alpha, beta = len(model.string_names), len(model.actuator_names), len(model.bars)
    tensions = np.clip(2.0 + 3.0 * np.sin(np.outer(t, np.ones(sc)) + np.arange(sc)), 0.0, None)
    inputs = 0.005 * np.sin(np.outer(t, np.arange(1, alpha + 1)))
    err = model.bar_length_error(X)
    err[: n_samples // 4] = 0.0
    return Trajectory(
        t=t, nodes=X, velocities=np.gradient(X, t, axis=0), tensions=tensions,
        string_lengths=model.string_lengths(X), inputs=inputs, bar_forces=np.zeros((n_samples, beta)),
        node_names=model.node_names, n_physical=model.n_physical, bars=np.array(model.bars),
        bar_names=model.bar_names, strings=np.array(model.segments), segment_string=np.array(model.segment_string),
        string_names=model.string_names, actuator_names=model.actuator_names,
        rest_lengths=np.repeat(np.asarray(model.rest_length)[None], n_samples, axis=0),
        motor_angles=inputs / 0.01, bar_length_error=err, model_name=model.name)


@pytest.fixture(scope="module")
def framed():
    model = framed_prism()
    return model, fake_trajectory(model)


@pytest.fixture(scope="module")
def plain():
    model = load_model("prism3")            # no frames, no actuators
    return model, fake_trajectory(model, n_samples=40)


def check_png(path, min_height=300, min_bytes=10_000):
    assert path.exists() and path.stat().st_size > min_bytes
    img = mpimg.imread(path)
    assert img.ndim == 3 and img.shape[2] == 4
    assert img.shape[1] == round(plots.FIG_WIDTH * plots.DPI)
    assert img.shape[0] >= min_height
    assert img[..., :3].std() > 0.01        # not blank
    return img


def test_plot_plates(framed, tmp_path):
    model, traj = framed
    p = plot_plates(traj, model, tmp_path / "plates.png")
    img = check_png(p)
    assert img.shape[0] == round((2.5 * 3 + 0.8) * plots.DPI)      # three rows 0C1, 0C2, 1C2
    undamped = fake_trajectory(model, n_samples=120, duration=3.5, damping=0.0)
    check_png(plot_plates(traj, model, tmp_path / "cmp.png", compare=[("without damping", undamped)]))


def test_plot_frames_fallback_and_no_frames(plain, tmp_path):
    model, traj = plain
    check_png(plot_plates(traj, model, tmp_path / "frames.png"), 200, 2_000)    # "no frames" note
    data = yaml.safe_load(resolve_model_path("prism3").read_text())
    data["frames"] = [{"name": "top", "nodes": ["t1", "t2", "t3"]}]
    m1 = build_model(spec_from_dict(data, "one_frame"))
    img = check_png(plot_plates(fake_trajectory(m1), m1, tmp_path / "one.png"))
    assert img.shape[0] == round((2.5 + 0.8) * plots.DPI)


def test_plot_tensions(framed, plain, tmp_path):
    check_png(plot_tensions(*framed[::-1], tmp_path / "tensions.png"))
    check_png(plot_tensions(*plain[::-1], tmp_path / "t2.png"))


def test_plot_inputs(framed, plain, tmp_path):
    check_png(plot_inputs(*framed[::-1], tmp_path / "inputs.png"))
    check_png(plot_inputs(*plain[::-1], tmp_path / "none.png"), 200, 2_000)     # "no actuators" note


def test_plot_bar_error(framed, tmp_path):
    check_png(plot_bar_error(framed[1], tmp_path / "sub" / "bar_error.png"))


def test_plot_snapshot(framed, tmp_path):
    model, traj = framed
    check_png(plot_snapshot(traj, model, tmp_path / "snapshot.png"))
    check_png(plot_snapshot(traj, model, tmp_path / "snap2.png", times=[0.0, 1.0]))


def test_plot_all(framed, plain, tmp_path):
    paths = plot_all(framed[1], framed[0], tmp_path / "a")
    assert set(paths) == {"plates", "tensions", "inputs", "bar_error", "snapshot"}
    for name, p in paths.items():
        assert p.name == f"{name}.png"
        check_png(p, min_height=200)
    paths = plot_all(plain[1], plain[0], tmp_path / "b")
    assert set(paths) == {"frames", "tensions", "inputs", "bar_error", "snapshot"}
    for p in paths.values():
        check_png(p, 200, 2_000)


def test_model_mismatch_is_reported(framed, tmp_path):
    data = yaml.safe_load(resolve_model_path("prism3").read_text())
    data["nodes"].append({"name": "extra", "position": [0, 0, 1], "fixed": True})
    data["strings"].append({"name": "tether", "path": ["extra", "t1"], "stiffness": 1.0, "rest_length": 0.5})
    other = build_model(spec_from_dict(data, "other"))
    with pytest.raises(ValueError, match="nodes"):
        plot_snapshot(framed[1], other, tmp_path / "x.png")
