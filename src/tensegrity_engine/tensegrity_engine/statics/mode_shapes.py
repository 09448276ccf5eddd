"""Mode shapes in node coordinates: the displacement field of each elastic mode, normalised, and the
positions of a structure oscillating in one mode (for plots, animations and RViz).

:func:`.modal.linearise` gives the modes as mass-orthonormal vectors ``v_k`` of the bar-length tangent
space; ``C v_k`` (C = Q3 T, [m] per unit q) is the node displacement field of mode k, (n, 3) for all model
nodes (virtual nodes included, fixed nodes zero). Here it is scaled so that the largest node displacement
has length 1 (dimensionless), with the sign fixed so that the largest coordinate is positive (the
eigensolver's sign is arbitrary). A structure oscillating in mode k with amplitude ``a`` [m] (the largest
node excursion) is

    X(t) = X_eq + a sin(2 pi t / T) phi_k

This is the linear mode: bar lengths change at second order in ``a`` (by about a² / (2 L) per bar), which
is why the amplitude is kept to a fraction of the shortest bar (:func:`default_amplitude`).

Modes are numbered from 1 = the lowest *elastic* mode; rigid-body modes (frequency below ``RIGID_REL`` of
the highest; a free-floating structure has six) are skipped, as ``tensegrity modes`` does.
Pure numpy; no ROS.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RIGID_REL = 1e-3          # frequencies below this fraction of the highest are rigid-body modes
AMPLITUDE_FRACTION = 0.1  # default amplitude: this fraction of the shortest bar


@dataclass(frozen=True)
class ModeShape:
    """One elastic mode in node coordinates."""
    number: int                # 1 = lowest elastic mode
    index: int                 # column in Linearisation.modes (rigid-body modes come first)
    frequency_hz: float
    displacement: np.ndarray   # (n, 3) node displacement field, largest node displacement 1 (dimensionless)


def elastic_indices(frequencies_hz) -> np.ndarray:
    """Indices of the elastic modes (ascending frequency) among ``frequencies_hz`` [Hz] (ascending)."""
    f = np.asarray(frequencies_hz, float)
    if not len(f):
        return np.zeros(0, int)
    return np.flatnonzero(f >= RIGID_REL * max(float(f.max()), 1e-12))


def rigid_body_count(frequencies_hz) -> int:
    """Number of rigid-body (near-zero frequency) modes."""
    return len(frequencies_hz) - len(elastic_indices(frequencies_hz))


def normalised(field) -> np.ndarray:
    """A displacement field (n, 3) scaled to a largest node displacement of 1, sign fixed so that the
    coordinate of largest magnitude is positive. A zero field stays zero."""
    d = np.asarray(field, float).reshape(-1, 3)
    big = float(np.linalg.norm(d, axis=1).max()) if len(d) else 0.0
    if big <= 0.0:
        return np.zeros_like(d)
    flat = d.ravel()
    sign = 1.0 if flat[np.argmax(np.abs(flat))] > 0 else -1.0
    return sign * d / big


def mode_shape(lin, number: int) -> ModeShape:
    """Elastic mode ``number`` (1 = lowest) of a :class:`.modal.Linearisation`; ValueError if out of range."""
    idx = elastic_indices(lin.frequencies_hz)
    if not 1 <= int(number) <= len(idx):
        raise ValueError(f"mode {number} does not exist: the structure has {len(idx)} elastic mode(s), "
                         f"numbered 1..{len(idx)}")
    k = int(idx[int(number) - 1])
    return ModeShape(int(number), k, float(lin.frequencies_hz[k]), normalised(lin.C @ lin.modes[:, k]))


def mode_shapes(lin, count: int | None = None) -> list:
    """The lowest ``count`` (default: all) elastic modes as :class:`ModeShape` objects."""
    n = len(elastic_indices(lin.frequencies_hz))
    return [mode_shape(lin, j) for j in range(1, (n if count is None else min(count, n)) + 1)]


def default_amplitude(model, fraction: float = AMPLITUDE_FRACTION) -> float:
    """Visual amplitude [m]: ``fraction`` of the shortest bar (of the structure's size without bars)."""
    bars = np.asarray(model.bar_length, float)
    if len(bars) and bars.min() > 0:
        return fraction * float(bars.min())
    return fraction * float(np.ptp(np.asarray(model.positions, float), axis=0).max() or 1.0)


def positions(X_eq, shape: ModeShape, amplitude: float, period: float, t) -> np.ndarray:
    """Node positions (n, 3) [m] at time ``t`` [s] of the oscillation in ``shape`` with the largest node
    excursion ``amplitude`` [m] and period ``period`` [s]; ``t`` may be an array (then (len(t), n, 3))."""
    s = np.sin(2.0 * np.pi * np.asarray(t, float) / float(period))
    X_eq = np.asarray(X_eq, float)
    return X_eq + (amplitude * s)[..., None, None] * shape.displacement


def frames(X_eq, shape: ModeShape, amplitude: float, count: int = 30) -> np.ndarray:
    """One period in ``count`` frames (count, n, 3) [m], starting at the equilibrium."""
    return positions(X_eq, shape, amplitude, 1.0, np.arange(count) / count)


def shapes_report(shapes) -> list:
    """JSON-ready entries: mode number, index, frequency [Hz] and the node displacement vectors (n, 3)
    (largest 1, node order as the model's node_names)."""
    return [{"mode": s.number, "index": s.index, "frequency_hz": s.frequency_hz,
             "node_displacements": s.displacement.tolist()} for s in shapes]


def at_equilibrium(model):
    """The model settled to its static equilibrium for its own rest lengths (as the simulator starts) and
    linearised there: (:class:`.equilibrium.Equilibrium`, :class:`.modal.Linearisation`)."""
    from tensegrity_engine.statics.equilibrium import settle
    from tensegrity_engine.statics.modal import linearise
    eq = settle(model)
    return eq, linearise(model, X=eq.positions)
