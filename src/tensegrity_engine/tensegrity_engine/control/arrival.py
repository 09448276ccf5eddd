"""Whether a plate has arrived, judged from noisy measured poses over a window.

A motion-capture pose is noisy (0.5 mm per marker gives ~0.3 mm per axis and ~0.18 deg per axis of the
manipulator's plate pose, more than a 0.2 deg tolerance), so no single measurement can say the plate is
within the tolerances. :class:`ArrivalWindow` keeps the pose errors measured over the last ``window``
seconds and fits each coordinate with an offset plus a swing at the plate's ringing mode,
``e(t) = c + a cos ωt + b sin ωt`` (least squares): the offset is the filtered pose (its noise falls as
1/√N with the N samples), and the largest ``|c + a cos φ + b sin φ|`` over the phase bounds where the plate
went, so a plate swinging through the tolerance band is not taken for one at rest (a plain mean would
hide a swing of 1.5 periods to a fifth of its amplitude). Without a mode frequency: the mean alone.
"""
from __future__ import annotations

import numpy as np

# samples the fit needs at least: the window reaches back farther while it has fewer (at 50 Hz 1 s has 50;
# a loaded machine's node ran its updates at 5-10 Hz). With 30, 0.18 deg of noise per axis and sample leaves
# the fitted bound of a plate at rest within 0.2 deg (test_control_arrival.py)
MIN_SAMPLES = 30
PHASES = np.linspace(0.0, 2 * np.pi, 24, endpoint=False)   # phases at which the fitted swing is bounded


class ArrivalWindow:
    """Pose errors (6,) [m; rad] (``pose.pose_error`` of the measured pose against the one aimed at) of the
    last ``window`` seconds [s], or of the last MIN_SAMPLES if those span longer, since the plate came to
    rest (:meth:`clear` when it moves again)."""

    def __init__(self, window: float):
        self.window = float(window)
        self.clear()

    def clear(self):
        self._t, self._e, self._since = [], [], None

    @property
    def empty(self) -> bool:
        return not self._t

    def add(self, t: float, error):
        """The error (6,) measured at time t [s] (increasing)."""
        self._since = t if self._since is None else self._since
        self._t.append(float(t))
        self._e.append(np.asarray(error, float))
        while len(self._t) > MIN_SAMPLES and self._t[1] <= self._t[-1] - self.window + 1e-9:
            self._t.pop(0)
            self._e.pop(0)

    def judge(self, frequency_hz: float | None, position_tol: float, angle_tol: float):
        """(arrived, offset (6,)): at rest for ``window`` with MIN_SAMPLES measured, and the fitted pose error
        within the tolerances at every phase of the swing at ``frequency_hz`` (None: the mean alone); offset
        the filtered error, None while the window is not full."""
        if self._since is None or self._t[-1] - self._since < self.window - 1e-9 or len(self._t) < MIN_SAMPLES:
            return False, None
        E = np.array(self._e)
        if frequency_hz is None:
            offset = E.mean(axis=0)
            reach = offset[None]
        else:
            wt = 2 * np.pi * frequency_hz * (np.array(self._t) - self._t[-1])
            coef = np.linalg.lstsq(np.c_[np.ones_like(wt), np.cos(wt), np.sin(wt)], E, rcond=None)[0]
            offset = coef[0]
            reach = offset + np.cos(PHASES)[:, None] * coef[1] + np.sin(PHASES)[:, None] * coef[2]
        ok = (np.linalg.norm(reach[:, :3], axis=1).max() <= position_tol
              and np.linalg.norm(reach[:, 3:], axis=1).max() <= angle_tol)
        return bool(ok), offset
