"""Odometry of a robot seen only through its node positions (motion capture): the body frame of
:mod:`tensegrity_ros_common.body_frame` fitted to each complete measurement, the node velocities by the
difference of the last two (no ROS)."""
from __future__ import annotations

import numpy as np

from tensegrity_ros_common.body_frame import BodyFrame


class MeasuredBody:
    """Fits the body frame to measured node positions; the first complete measurement is the reference
    (the body axes are the world axes there)."""

    def __init__(self, model):
        self.model = model
        self.frame = None
        self._last = None            # (t [s], X (n,3) [m]) of the last complete measurement

    def update(self, t: float, X):
        """The BodyState at time ``t`` [s] for node positions X (n,3) [m], or None while a node is unseen
        (NaN) or before two measurements give a velocity."""
        X = np.asarray(X, float)
        if not np.all(np.isfinite(X)):
            return None
        if self.frame is None:
            self.frame = BodyFrame(self.model, X)
        last, self._last = self._last, (float(t), X)
        if last is None or t <= last[0]:
            return None
        return self.frame.fit(X, (X - last[1]) / (t - last[0]))
