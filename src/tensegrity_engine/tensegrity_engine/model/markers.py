"""Marker positions from node positions and back (the ``marker`` of a node: :mod:`.marker_spec`).

A motion-capture system sees markers, the dynamics move nodes (bar ends). Where a model declares that a
node's marker sits ``along_bar`` metres in from the node (toward the other end of its bar), at an ``offset``
that rides the node's bar (``frame: bar``: components in the frame of :func:`.marker_spec.bar_frame`) or at
a world-frame ``offset`` (a node that never moves), everything that compares a model with a capture compares marker positions:
:func:`marker_positions` (nodes -> markers, any leading time axes) and :func:`nodes_from_markers` (markers ->
nodes: an along-bar marker and its bar partner's marker give the bar's axis; riding offsets are taken back
by a fixed-point iteration). Without declared markers both are the identity on the physical nodes. Lengths
in metres.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from tensegrity_engine.model.marker_spec import bar_frame

__all__ = ["MarkerLayout", "marker_layout", "has_marker_offsets", "marker_positions", "nodes_from_markers",
           "bar_ends_from_markers", "marker_bar_lengths", "node_motion_from_markers"]

_LAYOUTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class MarkerLayout:
    """Per physical node (mu of them): ``partner`` (mu,) the node index (into all nodes) of the other end of
    the bar its marker sits on (-1: no along-bar marker), ``along`` (mu,) [m] how far in from the node,
    ``offset`` (mu, 3) [m] a world-frame offset from the node; a riding offset: ``ride_partner`` (mu,) the
    other end (index into all nodes) of its bar (-1: none), ``ride_toward`` (mu,) the reference node
    (physical index), ``local`` (mu, 3) [m] its components (along, toward, normal) in the bar's frame."""
    partner: np.ndarray
    along: np.ndarray
    offset: np.ndarray
    ride_partner: np.ndarray
    ride_toward: np.ndarray
    local: np.ndarray

    @property
    def on_bar(self) -> np.ndarray:
        """Physical nodes with an along-bar marker (indices)."""
        return np.flatnonzero(self.partner >= 0)

    @property
    def riding(self) -> np.ndarray:
        """Physical nodes with an offset riding their bar (indices)."""
        return np.flatnonzero(self.ride_partner >= 0)

    @property
    def declared(self) -> bool:
        """True if any node's marker is off the node."""
        return bool(np.any(self.along != 0.0) or np.any(self.offset != 0.0) or np.any(self.local != 0.0))


def marker_layout(model) -> MarkerLayout:
    """The model's :class:`MarkerLayout` (from its spec; cached per model)."""
    hit = _LAYOUTS.get(model)
    if hit is not None:
        return hit
    mu = model.n_physical
    partner, along, offset = np.full(mu, -1, np.int64), np.zeros(mu), np.zeros((mu, 3))
    ride_partner, ride_toward, local = np.full(mu, -1, np.int64), np.full(mu, -1, np.int64), np.zeros((mu, 3))
    bar_of = {name: k for k, name in enumerate(model.bar_names)}
    phys = model.physical_index
    for i, nd in enumerate(model.spec.nodes):
        m = nd.marker
        if m is None:
            continue
        if m.along_bar is None and not m.rides:
            offset[i] = m.offset
            continue
        a, b = (int(j) for j in model.bars[bar_of[m.bar]])
        other = b if phys[a] == i else a
        if m.rides:
            ride_partner[i], ride_toward[i], local[i] = other, model.node_index(m.toward), m.offset
            continue
        partner[i] = other
        along[i] = m.along_bar
    layout = MarkerLayout(partner, along, offset, ride_partner, ride_toward, local)
    for arr in (partner, along, offset, ride_partner, ride_toward, local):
        arr.setflags(write=False)
    _LAYOUTS[model] = layout
    return layout


def has_marker_offsets(model) -> bool:
    """True if the model declares a marker off any node."""
    return marker_layout(model).declared


def _rows(model, p: np.ndarray, rows: int) -> np.ndarray:
    """Node indices ``p`` (into all nodes) into an array of ``rows`` nodes (all nodes or physical)."""
    if rows == model.n_nodes:
        return p
    if rows == model.n_physical:
        return model.physical_index[p]
    raise ValueError(f"expected positions of {model.n_physical} physical or {model.n_nodes} nodes of model "
                     f"'{model.name}', got {rows}")


def _riding_offsets(model, layout: MarkerLayout, X) -> np.ndarray:
    """(..., k, 3) [m] world vectors from the k riding nodes to their markers, nodes at X (..., n or mu, 3)."""
    i = layout.riding
    p = _rows(model, layout.ride_partner[i], X.shape[-2])
    F = bar_frame(X[..., i, :], X[..., p, :], X[..., layout.ride_toward[i], :])
    return np.einsum("...kj,...kji->...ki", np.broadcast_to(layout.local[i], F.shape[:-1]), F)


def marker_positions(model, X) -> np.ndarray:
    """Marker positions (..., mu, 3) [m] of node positions X (..., n or mu, 3) [m] (NaN stays NaN)."""
    X = np.asarray(X, float)
    layout = marker_layout(model)
    mu = model.n_physical
    p = _rows(model, layout.partner[layout.on_bar], X.shape[-2])
    M = X[..., :mu, :] + layout.offset
    if not layout.declared:
        return M
    i = layout.on_bar
    u = X[..., p, :] - X[..., i, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        u = u / np.linalg.norm(u, axis=-1, keepdims=True)
    M[..., i, :] += layout.along[i][:, None] * u
    if len(layout.riding):
        M[..., layout.riding, :] += _riding_offsets(model, layout, X)
    return M


def bar_ends_from_markers(ma, mb, da, db) -> tuple:
    """(node a, node b) positions (..., 3) [m] of a bar whose markers ``ma``, ``mb`` (..., 3) sit ``da`` and
    ``db`` [m] in from its ends a and b: each end lies on the markers' line, that far beyond its marker."""
    ma, mb = np.asarray(ma, float), np.asarray(mb, float)
    u = mb - ma
    with np.errstate(invalid="ignore", divide="ignore"):
        u = u / np.linalg.norm(u, axis=-1, keepdims=True)
    da, db = np.asarray(da, float)[..., None], np.asarray(db, float)[..., None]
    return ma - da * u, mb + db * u


RIDE_TOL = 1e-14     # m: the fixed-point iteration of nodes_from_markers stops when no node moves more (it
RIDE_ITERATIONS = 60  # contracts by ~|offset| / bar length per step: 0.04 for 12 mm on a 0.3 m bar, 9 steps)


def nodes_from_markers(model, M) -> np.ndarray:
    """Physical node positions (..., mu, 3) [m] from marker positions (..., mu, 3) [m]: the offset taken
    back; an along-bar node from its marker and its bar partner's marker (NaN where either is unknown); a
    riding offset by iterating N = markers - offsets(N) (NaN where it does not settle within RIDE_TOL)."""
    M = np.asarray(M, float)
    layout = marker_layout(model)
    if M.shape[-2] != model.n_physical:
        raise ValueError(f"expected marker positions of the {model.n_physical} physical nodes of model "
                         f"'{model.name}', got {M.shape[-2]}")
    N = _nodes_given_offsets(model, layout, M, layout.offset)
    if not len(layout.riding):
        return N
    offset = np.broadcast_to(layout.offset, M.shape).copy()
    step = np.full(M.shape[:-2], np.inf)
    for _ in range(RIDE_ITERATIONS):
        offset[..., layout.riding, :] = layout.offset[layout.riding] + _riding_offsets(model, layout, N)
        new = _nodes_given_offsets(model, layout, M, offset)
        with np.errstate(invalid="ignore"):
            step = np.nanmax(np.abs(new - N), axis=(-2, -1), initial=0.0)
        N = new
        if np.all(step <= RIDE_TOL):
            break
    N[step > RIDE_TOL] = np.nan
    return N


def _nodes_given_offsets(model, layout: MarkerLayout, M, offset) -> np.ndarray:
    """Physical nodes from markers M (..., mu, 3) [m] with world offsets ``offset`` ((mu, 3) or M's shape)."""
    N = M - offset
    if not layout.declared or not len(layout.on_bar):
        return N
    off = np.broadcast_to(offset, M.shape)
    i = layout.on_bar
    p = model.physical_index[layout.partner[i]]
    same_bar = layout.partner[p] >= 0
    same_bar[same_bar] = model.physical_index[layout.partner[p[same_bar]]] == i[same_bar]
    d_partner = np.where(same_bar, layout.along[p], 0.0)
    N[..., i, :] = bar_ends_from_markers(M[..., i, :] - off[..., i, :], M[..., p, :] - off[..., p, :],
                                         layout.along[i], d_partner)[0]
    return N


def marker_bar_lengths(model) -> np.ndarray:
    """(beta,) [m] distance between the two markers of each bar in the model's initial shape (its length when
    both markers sit on the bar or on the nodes)."""
    P = marker_positions(model, model.positions)
    b = model.physical_index[np.asarray(model.bars)]
    return np.linalg.norm(P[b[:, 0]] - P[b[:, 1]], axis=-1)


MOTION_STEP = 1e-3     # s, time step of the central differences in node_motion_from_markers: the map is smooth
                       # on the scale of a bar turning, so the O(h^2) error is ~(|omega| h)^2 ~ 1e-6 relative


def node_motion_from_markers(model, M, V, A=None) -> tuple:
    """(node positions, velocities[, accelerations]) (..., mu, 3) of physical nodes from their markers'
    positions M [m], velocities V [m/s] (and accelerations A [m/s^2]): the map of :func:`nodes_from_markers`
    differentiated along the motion (central differences over MOTION_STEP). The identity without markers."""
    M, V = np.asarray(M, float), np.asarray(V, float)
    if not has_marker_offsets(model):
        return (M, V) if A is None else (M, V, np.asarray(A, float))
    h = MOTION_STEP
    acc = 0.0 if A is None else 0.5 * h * h * np.asarray(A, float)
    N0 = nodes_from_markers(model, M)
    Np, Nm = nodes_from_markers(model, M + h * V + acc), nodes_from_markers(model, M - h * V + acc)
    Vn = (Np - Nm) / (2.0 * h)
    return (N0, Vn) if A is None else (N0, Vn, (Np - 2.0 * N0 + Nm) / (h * h))
