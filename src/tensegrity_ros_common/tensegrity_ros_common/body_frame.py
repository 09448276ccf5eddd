"""The body frame of a robot with no fixed node (NumPy, no ROS): where a mobile tensegrity is and how it moves.

Origin at the mass centroid (lumped node masses, bars included); orientation from the weighted rigid
(Kabsch) fit of the current node positions to a reference configuration (the simulator's start state), so
the body axes are the world axes in the reference pose. The twist is the weighted least-squares rigid
motion of the node velocities: the centroid's velocity, and ω with I ω = L (inertia tensor and angular
momentum about the centroid), the time derivative of the fit for rigid motion, with no differencing.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BodyState:
    """Pose and twist of the body frame in the fixed frame (SI units)."""
    position: np.ndarray        # (3,) m, mass centroid
    rotation: np.ndarray        # (3, 3) body axes as columns
    velocity: np.ndarray        # (3,) m/s of the centroid, fixed-frame axes
    angular_velocity: np.ndarray  # (3,) rad/s, fixed-frame axes
    rms_residual: float         # m: weighted RMS distance of the nodes from the rigid fit (shape change)


def lumped_masses(model) -> np.ndarray:
    """Mass per model node [kg] (row sums of the consistent mass matrix: bars shared by their ends); equal
    weights for a massless model."""
    m = np.asarray(model.mass_sparse.sum(axis=1), float).ravel()
    return m if np.sum(m) > 0 else np.ones(model.n_nodes)


def kabsch(A, B, w) -> np.ndarray:
    """The rotation R (3, 3) minimising Σ w_i |R a_i - b_i|² for centred point sets A, B (k, 3)."""
    H = (np.asarray(A, float) * np.asarray(w, float)[:, None]).T @ np.asarray(B, float)
    U, _, Vt = np.linalg.svd(H)
    d = np.sign(np.linalg.det(Vt.T @ U.T)) or 1.0
    return Vt.T @ np.diag([1.0, 1.0, d]) @ U.T


class BodyFrame:
    """Fits the body frame to node positions (n, 3) [m] and velocities of one model."""

    def __init__(self, model, reference):
        self.w = lumped_masses(model)
        self.reference = np.asarray(reference, float)
        self._mass = float(np.sum(self.w))
        self._ref_c = self.centroid(self.reference)
        self._ref_rel = self.reference - self._ref_c

    def centroid(self, X) -> np.ndarray:
        return self.w @ np.asarray(X, float) / np.sum(self.w)

    def fit(self, X, V) -> BodyState:
        """The body frame at positions X (n, 3) [m] with node velocities V (n, 3) [m/s]."""
        X, V = np.asarray(X, float), np.asarray(V, float)
        w, W = self.w, self._mass
        c = w @ X / W
        rel = X - c
        wrel = rel * w[:, None]
        R = kabsch(self._ref_rel, rel, w)
        resid = rel - self._ref_rel @ R.T
        rms = float(np.sqrt(np.sum(resid * resid * w[:, None]) / W))
        v = w @ V / W
        M = wrel.T @ (V - v)                                     # L = Σ w rel × (V - v) from its skew part
        L = np.array([M[1, 2] - M[2, 1], M[2, 0] - M[0, 2], M[0, 1] - M[1, 0]])
        S = wrel.T @ rel
        lam, E = np.linalg.eigh(np.trace(S) * np.eye(3) - S)     # the inertia tensor about the centroid
        inv = np.where(lam > 1e-12 * max(lam[-1], 1e-300), 1.0 / np.where(lam > 0, lam, 1.0), 0.0)
        omega = E @ (inv * (E.T @ L))                             # a straight-line robot: ω along it is 0
        return BodyState(c, R, v, omega, rms)
