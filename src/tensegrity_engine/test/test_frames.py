"""Plate frames, relative frames, Euler angles and RMS comparison (tensegrity_engine.frames)."""
import numpy as np
import pytest
import yaml
from scipy.spatial.transform import Rotation

from tensegrity_engine import load_model, spec_from_dict, build_model
from tensegrity_engine.frames import (euler_zyx, interpolate_frames, model_frames, paper_relative_frames,
                                      plate_frame, relative, rigid_inverse, rms_deviation)
from tensegrity_engine.model.load import resolve_model_path

S3 = np.sqrt(3.0) / 2
TRIANGLE = np.array([[1.0, 0.0, 0.0], [-0.5, S3, 0.0], [-0.5, -S3, 0.0]])


def rz(a):
    """Rotation matrices (..., 3, 3) about z by angles a [rad]."""
    return Rotation.from_rotvec(np.multiply.outer(a, [0.0, 0.0, 1.0])).as_matrix()


def framed_prism():
    """prism3 with frames C0 (bottom), C1 (top) and C2 (a side triangle)."""
    data = yaml.safe_load(resolve_model_path("prism3").read_text())
    data["frames"] = [{"name": "C0", "nodes": ["b1", "b2", "b3"]},
                      {"name": "C1", "nodes": ["t1", "t2", "t3"], "x_node": "t2"},
                      {"name": "C2", "nodes": ["b1", "t2", "t1"]}]
    return build_model(spec_from_dict(data, "framed_prism"))


def random_rigid(rng, shape=()):
    C = np.zeros(shape + (4, 4))
    C[..., :3, :3] = Rotation.random(int(np.prod(shape)) or 1, random_state=rng).as_matrix().reshape(shape + (3, 3))
    C[..., :3, 3] = rng.normal(size=shape + (3,))
    C[..., 3, 3] = 1.0
    return C


def test_known_triangle_is_identity():
    C = plate_frame(TRIANGLE, 0, 1, 2)
    np.testing.assert_allclose(C, np.eye(4), atol=1e-15)


def test_rotated_translated_triangle_gives_that_transform():
    rot = Rotation.from_euler("ZYX", [0.7, -0.4, 1.1])
    p = np.array([0.1, -2.0, 3.5])
    X = rot.apply(TRIANGLE) + p
    C = plate_frame(X, 0, 1, 2)
    np.testing.assert_allclose(C[:3, :3], rot.as_matrix(), atol=1e-12)
    np.testing.assert_allclose(C[:3, 3], p, atol=1e-12)
    np.testing.assert_array_equal(C[3], [0, 0, 0, 1])


def test_x_node_and_orientation_of_normal():
    # x towards node b: rotation by +120 deg about z; reversed order flips z
    np.testing.assert_allclose(plate_frame(TRIANGLE, 0, 1, 2, x_node=1)[:3, :3], rz(2 * np.pi / 3), atol=1e-12)
    C = plate_frame(TRIANGLE, 0, 2, 1)
    np.testing.assert_allclose(C[:3, 2], [0, 0, -1], atol=1e-15)
    np.testing.assert_allclose(C[:3, 0], [1, 0, 0], atol=1e-15)


def test_paper_c0_convention():
    # paper C0: x towards n2, z = (n3 - r0) x (n1 - r0), equal to the normal of n1 -> n2 -> n3
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 3))
    r0 = X.mean(axis=0)
    C = plate_frame(X, 0, 1, 2, x_node=1)
    z = np.cross(X[2] - r0, X[0] - r0)
    np.testing.assert_allclose(C[:3, 2], z / np.linalg.norm(z), atol=1e-12)
    assert C[:3, 0] @ (X[1] - r0) > 0


def test_orthonormal_and_proper_for_noisy_nodes_vectorised():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 7, 3))           # arbitrary (noisy) triangles, x node off the plane
    C = plate_frame(X, 0, 1, 2, x_node=5)
    R = C[..., :3, :3]
    np.testing.assert_allclose(np.swapaxes(R, -1, -2) @ R, np.broadcast_to(np.eye(3), R.shape), atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(R), 1.0, atol=1e-12)
    np.testing.assert_allclose(C[..., :3, 3], X[:, :3].mean(axis=1), atol=1e-15)
    # several frames at once: (T, k, 4, 4)
    Ck = plate_frame(X, np.array([0, 3]), np.array([1, 4]), np.array([2, 6]))
    assert Ck.shape == (50, 2, 4, 4)
    np.testing.assert_allclose(Ck[:, 0], plate_frame(X, 0, 1, 2), atol=1e-15)


def test_relative_and_rigid_inverse():
    rng = np.random.default_rng(2)
    C = random_rigid(rng, (10,))
    np.testing.assert_allclose(relative(C, C), np.broadcast_to(np.eye(4), C.shape), atol=1e-12)
    np.testing.assert_allclose(rigid_inverse(C), np.linalg.inv(C), atol=1e-12)
    D = random_rigid(rng, (10,))
    np.testing.assert_allclose(C @ relative(C, D), D, atol=1e-12)


def test_euler_zyx():
    R = Rotation.from_rotvec([0, 0, 0.3]).as_matrix() @ Rotation.from_rotvec([0, -0.2, 0]).as_matrix() \
        @ Rotation.from_rotvec([0.1, 0, 0]).as_matrix()
    np.testing.assert_allclose(euler_zyx(R), [0.3, -0.2, 0.1], atol=1e-12)
    C = np.eye(4)
    C[:3, :3] = R
    np.testing.assert_allclose(euler_zyx(np.stack([C, C])), [[0.3, -0.2, 0.1]] * 2, atol=1e-12)


def test_euler_unwrap_over_time():
    yaw = np.linspace(0, 4 * np.pi, 200)
    R = rz(yaw)
    assert np.abs(np.diff(euler_zyx(R)[:, 0])).max() > np.pi
    np.testing.assert_allclose(euler_zyx(R, unwrap=True)[:, 0], yaw, atol=1e-9)
    R[[0, 60, 61]] = np.nan                               # missing samples stay NaN, the rest unwraps
    e = euler_zyx(R, unwrap=True)[:, 0]
    assert np.isnan(e[[0, 60, 61]]).all()
    np.testing.assert_allclose(np.delete(e, [0, 60, 61]), np.delete(yaw, [0, 60, 61]), atol=1e-9)


def test_model_frames_and_paper_relative_frames():
    model = framed_prism()
    X = model.positions
    C = model_frames(model, X)
    assert list(C) == ["C0", "C1", "C2"]
    i = model.node_index
    np.testing.assert_allclose(C["C1"], plate_frame(X, i("t1"), i("t2"), i("t3"), i("t2")), atol=1e-15)
    np.testing.assert_allclose(C["C0"][:3, 2], [0, 0, 1], atol=1e-12)     # bottom plate b1->b2->b3 is CCW
    Xt = np.stack([X, X + 0.01])
    rel = paper_relative_frames(model, Xt)
    assert set(rel) == {"0C1", "0C2", "1C2"} and rel["0C1"].shape == (2, 4, 4)
    np.testing.assert_allclose(rel["0C1"][0, :3, 3], [0, 0, 2 * 0.0820492860299313], atol=1e-12)
    np.testing.assert_allclose(rel["0C1"][0], rel["0C1"][1], atol=1e-12)   # translation invariant
    np.testing.assert_allclose(rel["0C2"], rel["0C1"] @ rel["1C2"], atol=1e-12)


def test_paper_relative_frames_needs_c0_c1_c2():
    model = load_model("prism3")
    assert model_frames(model, model.positions) == {}
    with pytest.raises(ValueError, match="C0, C1, C2"):
        paper_relative_frames(model, model.positions)


def moving_frames(t):
    """Frames (T, 2, 4, 4) with smooth motion."""
    C = np.zeros((len(t), 2, 4, 4))
    C[:, 0, :3, :3] = Rotation.from_rotvec(np.outer(np.sin(t), [0.3, 0.2, 0.9])).as_matrix()
    C[:, 1, :3, :3] = rz(0.5 * t)
    C[:, 0, :3, 3] = np.stack([np.cos(t), np.sin(t), 0.1 * t], axis=1)
    C[:, 1, :3, 3] = np.stack([t, t ** 2, -t], axis=1)
    C[..., 3, 3] = 1.0
    return C


def test_rms_deviation_self_offset_rotation():
    t = np.linspace(0, 2, 101)
    C = moving_frames(t)
    r = rms_deviation(t, C, t, C)
    assert r["position_rms"] < 1e-12 and r["orientation_rms"] < 1e-7 and r["euler_rms"] < 1e-12
    assert r["n_samples"] == 101

    D = C.copy()
    D[..., 0, 3] += 1e-3
    r = rms_deviation(t, C, t, D)
    assert r["position_rms"] == pytest.approx(1e-3, rel=1e-9)
    assert r["orientation_rms"] < 1e-7

    E = C.copy()
    E[..., :3, :3] = C[..., :3, :3] @ rz(0.01)                          # 0.01 rad about the body z axis
    r = rms_deviation(t, C, t, E)
    assert r["orientation_rms"] == pytest.approx(0.01, rel=1e-9)
    assert r["position_rms"] < 1e-12
    # single frame (T, 4, 4), rotated about world z: only the yaw changes
    F = C[:, 1].copy()
    F[:, :3, :3] = rz(0.01) @ F[:, :3, :3]
    r = rms_deviation(t, C[:, 1], t, F)
    assert r["orientation_rms"] == pytest.approx(0.01, rel=1e-9)
    np.testing.assert_allclose(r["euler_rms_zyx"], [0.01, 0, 0], atol=1e-12)
    assert r["euler_rms"] == pytest.approx(0.01 / np.sqrt(3), rel=1e-9)


def test_rms_deviation_interpolates_other_timestamps():
    t_a = np.linspace(0, 2, 201)
    t_b = np.sort(np.concatenate([[-0.1, 1.5], np.random.default_rng(3).uniform(-0.1, 1.5, 2000)]))
    C_a = moving_frames(t_a)
    C_b = moving_frames(t_b)
    r = rms_deviation(t_a, C_a, t_b, C_b)
    assert r["n_samples"] == int(np.sum(t_a <= 1.5 + 1e-12))
    assert r["position_rms"] < 1e-4 and r["orientation_rms"] < 1e-4
    # interpolation is exact at the samples and for motions linear in time
    t = np.linspace(0, 1, 11)
    L = np.zeros((11, 4, 4))
    L[:, :3, :3] = rz(0.4 * t)
    L[:, :3, 3] = np.outer(t, [1.0, 2.0, 3.0])
    L[:, 3, 3] = 1
    q = np.array([0.0, 0.05, 0.333, 0.99, 1.0])
    Lq = interpolate_frames(t, L, q)
    np.testing.assert_allclose(Lq[:, :3, :3], rz(0.4 * q), atol=1e-12)
    np.testing.assert_allclose(Lq[:, :3, 3], np.outer(q, [1.0, 2.0, 3.0]), atol=1e-12)


def test_rms_deviation_errors():
    t = np.linspace(0, 1, 5)
    C = moving_frames(t)
    with pytest.raises(ValueError, match="overlap"):
        rms_deviation(t, C, t + 5, C)
    with pytest.raises(ValueError, match="shapes"):
        rms_deviation(t, C, t, C[:, 0])


def test_degenerate_and_missing_samples_give_nan_and_are_skipped():
    X = np.zeros((3, 3, 3))
    X[1:] = TRIANGLE
    X[2] += 0.5
    C = plate_frame(X, 0, 1, 2)                    # sample 0: all nodes coincide
    assert np.isnan(C[0, :3, :3]).all()
    assert np.isnan(euler_zyx(C)[0]).all() and np.isfinite(euler_zyx(C)[1:]).all()
    t = np.array([0.0, 1.0, 2.0])
    r = rms_deviation(t, C, t, C)
    assert r["n_samples"] == 2 and r["position_rms"] == 0.0
    r = rms_deviation(t[1:], C[1:], t, C)           # C_b's NaN sample is skipped, not interpolated
    assert r["n_samples"] == 2 and r["position_rms"] == 0.0
