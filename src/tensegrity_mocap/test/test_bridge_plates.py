"""The bridge's per-frame plate frames (bridge/plates.py, plain Python floats) are the engine's
``plate_frame`` bit for bit: the published plate poses did not change when the bridge stopped calling it."""
import numpy as np

from tensegrity_engine.frames import plate_frame
from tensegrity_mocap.bridge.plates import plate_axes


def _columns(corners):
    r, x, y, z = plate_axes(*corners)
    return np.array([x, y, z, r]).T                       # (3, 4): plate_frame's C[:3, :]


def test_plate_axes_equal_the_engines_plate_frame_bit_for_bit():
    rng = np.random.default_rng(36)
    for k in range(3000):
        scale = np.exp(rng.uniform(-8, 3))                 # 0.3 mm to 20 m triangles, anywhere
        X = rng.normal(0.0, scale, (4, 3)) + rng.normal(0.0, 5.0, 3)
        if k % 10 == 0:
            X[2] = X[0] + rng.uniform(-2, 3) * (X[1] - X[0])      # collinear: NaN axes in both
        if k % 37 == 0:
            X[1] = X[0]                                    # coincident nodes
        C = plate_frame(X, 0, 1, 2, 3)
        np.testing.assert_array_equal(_columns(X.tolist()), C[:3, :])


def test_plate_axes_of_a_known_plate():
    r, x, y, z = plate_axes((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (-1.0, -1.0, 0.0), (1.0, 0.0, 0.0))
    np.testing.assert_allclose(r, (0.0, 0.0, 0.0), atol=1e-15)
    np.testing.assert_allclose(z, (0.0, 0.0, 1.0), atol=1e-15)        # counter-clockwise a->b->c: z up
    np.testing.assert_allclose(x, (1.0, 0.0, 0.0), atol=1e-15)
    np.testing.assert_allclose(y, (0.0, 1.0, 0.0), atol=1e-15)


def test_axes_quaternion_is_matrix_to_quaternion():
    """Within 2 ulp (4e-16): the same Shepperd steps on floats; only the normalisation's sum of squares may be
    summed in another order by numpy's BLAS (equal on this machine's OpenBLAS in every case tried)."""
    from scipy.spatial.transform import Rotation
    from tensegrity_ros_common.conversions import matrix_to_quaternion
    from tensegrity_mocap.bridge.plates import axes_quaternion
    rng = np.random.default_rng(5)
    Rs = list(Rotation.random(3000, random_state=5).as_matrix())
    axes = rng.normal(size=(200, 3))
    Rs += list(Rotation.from_rotvec(np.pi * axes / np.linalg.norm(axes, axis=1)[:, None]).as_matrix())  # w ~ 0
    Rs += [np.eye(3), np.diag([1.0, -1.0, -1.0]), np.diag([-1.0, 1.0, -1.0]), np.diag([-1.0, -1.0, 1.0])]
    for R in Rs:
        q = axes_quaternion(*R.T.tolist())
        np.testing.assert_allclose(q, matrix_to_quaternion(R), rtol=0, atol=4e-16)
    assert np.isnan(axes_quaternion(*plate_axes((0, 0, 0), (1, 0, 0), (2, 0, 0), (0, 1, 0))[1:])).all()
