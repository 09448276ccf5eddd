"""The boundary of a static take: where the model's fixed nodes are against the take's markers, and the
model moved rigidly onto the take's measured fixed nodes (to predict a take left in its capture frame).

The engine settles a model with its fixed nodes where the model file puts them; a take captured with the
robot elsewhere in the capture volume is compared in another frame and shows the offset, not the model's
error. :func:`boundary_offset` measures it; :func:`placed_at` moves the whole model (nodes and constraint
values; gravity stays, it is the world's) by the rigid motion that best maps its fixed nodes onto the
take's, so the prediction is in the take's frame.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from tensegrity_engine.model.markers import nodes_from_markers

# Fixed nodes farther than this from the take's markers [m]: a different frame or mounting, not noise
# (marker noise ~0.5 mm and marker placement ~2 mm stay well inside); it would dominate a prediction
# whose error is otherwise ~1 mm.
BOUNDARY_TOL = 5e-3
# A node rests on an obstacle when its sphere is within this of the surface [m]: marker noise (~0.5 mm) and a
# contact's sink under load (0.1 mm at the default contact time) stay inside; a node lifted by a load is out.
RESTING_TOL = 3e-3


def boundary_offset(model, P) -> np.ndarray:
    """Distance [m] of each of the model's fixed nodes from its measured position: the node behind its marker
    in ``P`` (mu,3) [m] (model/markers.py)."""
    fixed = np.asarray(model.physical_index[model.fixed_nodes], int)
    return np.linalg.norm(nodes_from_markers(model, P)[fixed] - model.positions[model.fixed_nodes], axis=1)


def _rotation(A, B, up) -> np.ndarray:
    """Rotation R (3,3) minimising sum |R a - b|^2 over centred point sets A, B (k,3): any rotation when
    the points span a plane (Kabsch), else one about ``up`` only (the fit cannot fix the roll about a
    line of points; turning about the vertical keeps the base level)."""
    H = A.T @ B
    if np.linalg.matrix_rank(A, tol=1e-6 * max(np.abs(A).max(), 1e-12)) >= 2:
        U, _, Vt = np.linalg.svd(H)
        d = np.sign(np.linalg.det(Vt.T @ U.T)) or 1.0
        return Vt.T @ np.diag([1.0, 1.0, d]) @ U.T
    u = up / np.linalg.norm(up)
    K = np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
    # about u: R = I + sin(a) K + (1 - cos(a)) K^2; maximise trace(R H) = c0 + sin(a) s1 + (1-cos(a)) s2
    s1, s2 = np.trace(K @ H), np.trace(K @ K @ H)
    a = np.arctan2(s1, -s2) if np.hypot(s1, s2) > 1e-12 * max(np.abs(H).max(), 1e-300) else 0.0  # one point, or
    # a line along u: every turn about u fits as well, keep the model's
    return np.eye(3) + np.sin(a) * K + (1.0 - np.cos(a)) * K @ K


def rigid_fit(model, P) -> tuple:
    """(R (3,3), t (3,), residual (k,) [m]): x -> R x + t maps the model's fixed nodes nearest to their
    measured positions, the nodes behind the markers ``P`` (mu,3) [m]."""
    if not len(model.fixed_nodes):
        raise ValueError(f"model '{model.name}' has no fixed nodes, so there is no boundary to place at the "
                         "take's pose; predict in the model's frame (--held-out-boundary model; API: boundary=None)")
    A = model.positions[model.fixed_nodes]
    B = nodes_from_markers(model, P)[np.asarray(model.physical_index[model.fixed_nodes], int)]
    up = -model.gravity if np.linalg.norm(model.gravity) > 0 else np.array([0.0, 0.0, 1.0])
    R = _rotation(A - A.mean(axis=0), B - B.mean(axis=0), up)
    t = B.mean(axis=0) - R @ A.mean(axis=0)
    return R, t, np.linalg.norm(A @ R.T + t - B, axis=1)


def _turned_marker(m, R):
    """A node's marker after the rigid motion by R (a world-frame offset turns; the others ride their bar)."""
    if m is None or m.along_bar is not None or m.rides:
        return m
    return replace(m, offset=tuple((R @ np.asarray(m.offset, float)).tolist()))


def moved(model, R, t):
    """``model`` moved rigidly by x -> R x + t (node positions, world-frame marker offsets, constraint values,
    support anchors and rest directions; gravity unchanged)."""
    from tensegrity_engine.model.build import build_model
    from tensegrity_engine.model.supports import moved_support
    spec = model.spec
    nodes = tuple(replace(nd, position=tuple((R @ np.asarray(nd.position, float) + t).tolist()),
                          marker=_turned_marker(nd.marker, R)) for nd in spec.nodes)
    cons = tuple(replace(c, value=tuple((R @ np.asarray(c.value, float)
                                         + t * sum(k for _, k in c.terms)).tolist())) for c in spec.constraints)
    supports = tuple(moved_support(s, R, t) for s in spec.supports)
    return build_model(replace(spec, nodes=nodes, constraints=cons, supports=supports))


def placed_at(model, P) -> tuple:
    """(model moved onto the take's measured fixed nodes in ``P`` (mu,3) [m], residual [m] per fixed node)."""
    R, t, residual = rigid_fit(model, P)
    return moved(model, R, t), residual


def resting_supports(model, P, tol: float = RESTING_TOL) -> tuple:
    """(the model held at the nodes that rest on its obstacles in the take ``P`` (mu,3) [m] — those nodes fixed,
    the whole model placed rigidly onto them, obstacles dropped — and their names). A node rests when its
    sphere (the radius of its thickest bar) is within ``tol`` of an obstacle. ValueError if fewer than three
    do (the robot is not standing on anything the fit could use as its base)."""
    from tensegrity_engine.collision.obstacles import model_obstacles, point_contacts
    from tensegrity_engine.dynamics.contact import node_radius_and_mass
    from tensegrity_engine.model.build import build_model
    P = np.asarray(P, float)
    radius, _ = node_radius_and_mass(model)
    clearance = point_contacts(model_obstacles(model), P, radius).clearance.min(axis=1)
    resting = [model.node_names[i] for i in np.flatnonzero(clearance <= tol)]
    if len(resting) < 3:
        raise ValueError(f"model '{model.name}' has obstacles, but only {len(resting)} node(s) "
                         f"({', '.join(resting) or 'none'}) rest on them in the first take (within {tol * 1e3:g} mm): "
                         "a static fit needs the robot standing on at least three; check the obstacles' height "
                         "against the take (the capture's frame) or fix the support nodes in the model file")
    nodes = tuple(replace(nd, fixed=True) if nd.name in resting else nd for nd in model.spec.nodes)
    springs = tuple(s for s in model.spec.supports if s.node not in resting)      # a fixed node's spring is idle
    held = build_model(replace(model.spec, nodes=nodes, obstacles=(), supports=springs))
    return placed_at(held, P)[0], resting
