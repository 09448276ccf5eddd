"""Input shaping of the actuator commands: the lightly damped modes a plate shows are not excited.

The manipulator's lowest mode (1.5 Hz) has a damping ratio of 0.002: a ramp of the inputs that starts or
stops leaves the plate ringing for a minute. A ZVD shaper (zero vibration and derivative) for a mode of
natural frequency ω and damping ratio ζ replaces each command by three delayed copies,

    A = [1, 2K, K²] / (1 + K)²  at  t = [0, T/2, T],   K = exp(-ζπ / √(1 - ζ²)),  T = 2π / (ω √(1 - ζ²)),

whose responses in that mode cancel (and whose residual grows only quadratically with the frequency
error: 0.6 % of the unshaped ringing at 5 % off, 2.4 % at 10 %). Several modes are shaped by convolving their
shapers. The weights are positive and sum to 1, so the shaped command is an average of past commands:
within the actuator limits and no faster than they were.

Which modes: :func:`plate_modes` linearises the dynamics at an equilibrium (:func:`.statics.modal.linearise`)
and gives, per elastic mode k, how far the plate rings after a ramp of the inputs at unit rate stops (or
starts): ``|J_k| Σ_a |b_ka| / ω_k³`` (a modal coordinate driven by b_k·u̇ lags the ramp and swings with
amplitude b_k·u̇ / ω³ when it ends; ``J_k`` the plate pose per unit modal coordinate). :func:`shaper_for`
shapes the modes whose ringing after a start and a stop at the controller's ``max_rate`` would exceed
:data:`SHAPE_FRACTION` of the pose tolerances.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tensegrity_engine.control.pose import pose_jacobian
from tensegrity_engine.control.static_map import rest_lengths
from tensegrity_engine.statics.modal import linearise
from tensegrity_engine.statics.mode_shapes import elastic_indices

SHAPE_FRACTION = 0.25   # shape a mode ringing by more than this fraction of the pose tolerances
MERGE = 0.03            # modes closer than this relative frequency share one shaper (ZVD: 2.4 % left at 10 % off)
MAX_SHAPED = 3          # at most this many shapers (each adds one period of delay)


@dataclass(frozen=True)
class PlateMode:
    """An elastic mode: ``frequency_hz``, ``damping_ratio``, and the plate's ringing after a unit-rate ramp
    of the inputs stops: ``ringing_position`` [m per m/s], ``ringing_angle`` [rad per m/s]."""
    frequency_hz: float
    damping_ratio: float
    ringing_position: float
    ringing_angle: float


def plate_modes(model, frame: str, state) -> list:
    """The elastic modes of ``model`` at the equilibrium ``state`` (:class:`.static_map.StaticState`) with the
    ringing of ``frame`` they carry (:class:`PlateMode`), ascending frequency."""
    lin = linearise(model, state.X, rest_lengths(model, state.u))
    d = lin.modes.shape[0]
    mass = np.kron(model.reduced_mass, np.eye(3))
    Ms = lin.T.T @ mass @ lin.T
    Cs = -Ms @ lin.A[d:, d:]                               # A's lower right block is -Ms⁻¹ Cs
    modal_input = lin.modes.T @ (Ms @ lin.B[d:])           # (d, alpha) modal force per metre of u
    shapes = (lin.C @ lin.modes).reshape(model.n_nodes, 3, d)
    J = pose_jacobian(model, frame, state.X, shapes)       # (6, d) plate pose per unit modal coordinate
    out = []
    for k in elastic_indices(lin.frequencies_hz):
        w = 2 * np.pi * lin.frequencies_hz[k]
        drive = np.abs(modal_input[k]).sum() / w ** 3
        zeta = float(lin.modes[:, k] @ Cs @ lin.modes[:, k]) / (2 * w)
        out.append(PlateMode(float(lin.frequencies_hz[k]), zeta, float(np.linalg.norm(J[:3, k]) * drive),
                             float(np.linalg.norm(J[3:, k]) * drive)))
    return out


def zvd(frequency_hz: float, damping_ratio: float) -> tuple:
    """(times [s], weights) of the ZVD shaper of one mode (module docstring)."""
    z = float(np.clip(damping_ratio, 0.0, 0.99))
    root = np.sqrt(1.0 - z * z)
    K = np.exp(-z * np.pi / root)
    half = 0.5 / (frequency_hz * root)
    return np.array([0.0, half, 2 * half]), np.array([1.0, 2 * K, K * K]) / (1 + K) ** 2


def convolve(a: tuple, b: tuple) -> tuple:
    """The shaper that applies shapers a and b one after the other (times [s], weights)."""
    times = (a[0][:, None] + b[0][None, :]).ravel()
    weights = (a[1][:, None] * b[1][None, :]).ravel()
    order = np.argsort(times, kind="stable")
    return times[order], weights[order]


def shaper_for(modes, max_rate: float, position_tol: float, angle_tol: float) -> tuple:
    """(times [s], weights) shaping every mode whose ringing after a ramp at ``max_rate`` [m/s] starts and
    stops (2x one stop's) exceeds SHAPE_FRACTION of ``position_tol`` [m] or ``angle_tol`` [rad]; modes within
    MERGE in frequency share one shaper, and the MAX_SHAPED lowest are kept. No mode: the identity."""
    strong = [m for m in modes if 2 * max_rate * m.ringing_position > SHAPE_FRACTION * position_tol
              or 2 * max_rate * m.ringing_angle > SHAPE_FRACTION * angle_tol]
    shaper = (np.zeros(1), np.ones(1))
    last = None
    count = 0
    for m in sorted(strong, key=lambda m: m.frequency_hz):
        if last is not None and m.frequency_hz <= last * (1 + MERGE):
            continue
        if count == MAX_SHAPED:
            break
        shaper, last, count = convolve(shaper, zvd(m.frequency_hz, m.damping_ratio)), m.frequency_hz, count + 1
    return shaper


class InputShaper:
    """Shapes a stream of commands u (alpha,) [m] given at increasing times t [s]: the output at t is
    ``Σ_i w_i u(t - t_i)`` with u linear between the commands given (held before the first)."""

    def __init__(self, shaper: tuple = (np.zeros(1), np.ones(1))):
        self.times, self.weights = (np.asarray(a, float) for a in shaper)
        self._t = np.zeros(0)
        self._u = None

    @property
    def history(self) -> tuple:
        """The commands given (times, commands): :meth:`restore` takes the shaper back to them."""
        return self._t, self._u

    def restore(self, history: tuple):
        self._t, self._u = history

    def set_shaper(self, shaper: tuple):
        """Use another shaper from now on (the commands already given are kept)."""
        self.times, self.weights = (np.asarray(a, float) for a in shaper)

    @property
    def duration(self) -> float:
        """Delay [s] of the last impulse: a command is fully applied this long after it is given."""
        return float(self.times[-1])

    @property
    def delay(self) -> float:
        """Mean delay [s] (Σ w_i t_i): a smooth command comes out shifted by this much (to first order)."""
        return float(self.weights @ self.times)

    def __call__(self, t: float, u) -> np.ndarray:
        """Add the command u at time t and return the shaped command at t."""
        u = np.asarray(u, float)
        if self._u is None or t < self._t[-1]:
            self._t, self._u = np.array([t]), u[None].copy()
        else:
            keep = self._t >= t - self.duration - 1.0          # 1 s more than needed: a longer next shaper
            keep[-1] = True
            self._t, self._u = np.r_[self._t[keep], t], np.vstack([self._u[keep], u])
        return self.weights @ self._history(t - self.times)

    def _history(self, times) -> np.ndarray:
        """The commands (k, alpha) at ``times`` (linear between those given)."""
        k = np.clip(np.searchsorted(self._t, times, side="right") - 1, 0, len(self._t) - 1)
        k1 = np.minimum(k + 1, len(self._t) - 1)
        span = self._t[k1] - self._t[k]
        s = np.where(span > 0, (times - self._t[k]) / np.where(span > 0, span, 1.0), 0.0)
        s = np.clip(s, 0.0, 1.0)[:, None]
        return (1 - s) * self._u[k] + s * self._u[k1]

    def settled(self) -> bool:
        """True when the commands over the last ``duration`` are all equal: the shaped output is the last."""
        recent = self._u[self._t >= self._t[-1] - self.duration] if self._u is not None else None
        return recent is not None and bool(np.all(recent == recent[-1]))
