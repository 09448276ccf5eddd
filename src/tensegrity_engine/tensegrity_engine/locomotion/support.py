"""The support of a robot lying on its obstacles under gravity: which nodes touch any obstacle surface (its
face: on a level floor, an inclined plane, boxes, rough ground), the support polygon (the convex hull of those
nodes projected along gravity onto the horizontal plane) with its edges' outward normals, and the centre of
mass. Pure geometry from node positions (n, 3) [m] in model order; rows of NaN (unseen nodes) are ignored.

Horizontal coordinates (2,) [m] are taken in the plane perpendicular to gravity, on the basis of
:func:`horizontal_basis` (for gravity along -z: the world x and y, exactly)."""
from __future__ import annotations

import numpy as np
from scipy.spatial import ConvexHull, QhullError

from tensegrity_engine.collision.obstacles import model_obstacles, point_contacts


def up_of(model) -> np.ndarray:
    """(3,) unit vector against the model's gravity. Raises ValueError without gravity (nothing to roll on)."""
    g = np.asarray(model.gravity, float)
    norm = float(np.linalg.norm(g))
    if not norm > 0.0:
        raise ValueError(f"model '{model.name}' has no gravity: rolling tips the robot by its weight (give "
                         "gravity in the model file, e.g. gravity: [0, 0, -9.81])")
    return -g / norm


def horizontal_basis(up) -> np.ndarray:
    """(3, 2) orthonormal columns spanning the plane perpendicular to ``up`` (3,): the world x-axis made
    horizontal, and ``up`` × that (for up = +z exactly the world x and y axes)."""
    up = np.asarray(up, float) / np.linalg.norm(up)
    ref = np.array([1.0, 0.0, 0.0]) if abs(up[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = ref - (ref @ up) * up
    e1 /= np.linalg.norm(e1)
    return np.column_stack([e1, np.cross(up, e1)])


def ground_frame(model) -> tuple:
    """(up (3,), horizontal basis (3, 2)) of the model's gravity (:func:`up_of`, :func:`horizontal_basis`).
    Raises ValueError if the model has no gravity or no obstacle to rest on."""
    if not getattr(model, "obstacles", ()):
        raise ValueError(f"model '{model.name}' has no ground: rolling needs an obstacle to rest on (add an "
                         "obstacle of type 'plane', e.g. 'tensegrity new superball' or generators.on_ground(doc))")
    up = up_of(model)
    return up, horizontal_basis(up)


def node_radius(model) -> np.ndarray:
    """(n,) [m] radius of the bar capsule each node ends (0 for nodes on no bar)."""
    r = np.zeros(model.n_nodes)
    r[model.bars[:, 0]] = model.bar_radius
    r[model.bars[:, 1]] = model.bar_radius
    return r


def contact_tolerance(model) -> float:
    """[m] gap under which a node counts as touching: 2 % of the mean bar length, at least 1 cm."""
    return max(0.01, 0.02 * float(np.mean(model.bar_length))) if len(model.bar_length) else 0.01


_PACKED: dict = {}      # id(model) -> (model, its packed obstacles): a model is immutable; the last few kept


def packed_obstacles(model):
    """:func:`model_obstacles` of ``model``, packed once (face_of runs at every control tick: packing took
    54 us of its 189 us for the six-bar)."""
    hit = _PACKED.get(id(model))
    if hit is None or hit[0] is not model:
        if len(_PACKED) >= 16:
            _PACKED.pop(next(iter(_PACKED)))
        hit = _PACKED[id(model)] = (model, model_obstacles(model))
    return hit[1]


def ground_gaps(model, X) -> tuple:
    """((n,) [m] gap from each node's capsule surface to the nearest obstacle surface (negative: inside),
    (n,) index of that obstacle, (n, 3) unit normal there from the obstacle to the node)."""
    X = np.asarray(X, float)
    obstacles = packed_obstacles(model)
    if not len(obstacles):
        raise ValueError(f"model '{model.name}' has no obstacles: no node can touch the ground")
    c = point_contacts(obstacles, X, node_radius(model))
    k = np.argmin(c.clearance, axis=1)
    rows = np.arange(len(X))
    return c.clearance[rows, k], k, c.normal[rows, k]


def node_gaps(model, P, obstacles=None) -> np.ndarray:
    """(..., n) [m] gap from each node's capsule surface to the nearest obstacle surface (negative: inside) for
    node positions P (..., n, 3), e.g. N candidate robots at once; ``obstacles`` the packed
    :func:`model_obstacles` (made from the model if None)."""
    P = np.asarray(P, float)
    shape = P.shape[:-1]
    radius = np.broadcast_to(node_radius(model), shape).reshape(-1)
    c = point_contacts(packed_obstacles(model) if obstacles is None else obstacles, P.reshape(-1, 3), radius)
    return c.clearance.min(axis=1).reshape(shape)


def level_ground(model) -> bool:
    """True if every obstacle of the model is a plane facing straight up (a level floor, gravity along -z)."""
    return all(o.type == "plane" and np.allclose(np.asarray(o.normal, float) / np.linalg.norm(o.normal),
                                                 [0.0, 0.0, 1.0], atol=1e-9) for o in model.obstacles)


def ground_nodes(model, X, tol: float | None = None) -> np.ndarray:
    """Indices of the nodes whose capsule surface is within ``tol`` [m] (default :func:`contact_tolerance`)
    of any obstacle surface (the ground plane, an incline, a box)."""
    gap = ground_gaps(model, X)[0]
    return np.flatnonzero(gap < (contact_tolerance(model) if tol is None else tol))


def face_of(model, X, tol: float | None = None) -> tuple:
    """The face the robot lies on: the sorted names of its ground nodes."""
    return tuple(sorted(model.node_names[i] for i in ground_nodes(model, X, tol)))


def mass_weights(model) -> np.ndarray:
    """(n,) share of the total mass at each node: its point mass plus half of its bar's (a uniform bar's
    centre of mass is its midpoint)."""
    w = np.asarray(model.node_mass, float).copy()
    np.add.at(w, model.bars[:, 0], 0.5 * model.bar_mass)
    np.add.at(w, model.bars[:, 1], 0.5 * model.bar_mass)
    return w / w.sum()


def centre_of_mass(model, X) -> np.ndarray:
    """(3,) [m] centre of mass at node positions X (unseen NaN rows: the mean over the seen nodes)."""
    X = np.asarray(X, float)
    ok = np.all(np.isfinite(X), axis=1)
    w = mass_weights(model)[ok]
    return w @ X[ok] / w.sum()


def support_edges(X, nodes, basis=None) -> list:
    """Edges of the support polygon of the ground nodes ``nodes`` (indices into X): a list of
    (i, j, outward unit normal (2,), midpoint (2,) [m]) in the horizontal coordinates of ``basis`` (3, 2)
    (:func:`horizontal_basis`; default the world xy-plane), counter-clockwise. Fewer than three
    non-collinear nodes give the two sides of their segment (a robot resting on a line)."""
    B = np.eye(3)[:, :2] if basis is None else np.asarray(basis, float)
    H = np.asarray(X, float) @ B
    P = H[nodes]
    try:
        loop = [nodes[k] for k in ConvexHull(P).vertices]          # counter-clockwise in 2-D
    except (QhullError, ValueError):
        if len(nodes) < 2:
            return []
        d = P - P.mean(axis=0)
        k = np.argsort(d @ np.linalg.svd(d)[2][0])
        loop = [nodes[k[0]], nodes[k[-1]]]
    out = []
    for a, b in zip(loop, loop[1:] + loop[:1]):
        if a == b or (len(loop) == 2 and out):
            continue
        e = H[b] - H[a]
        normal = np.array([e[1], -e[0]]) / np.linalg.norm(e)       # right of a->b: outward for a CCW loop
        out.append((a, b, normal, 0.5 * (H[a] + H[b])))
    if len(loop) == 2:
        a, b, normal, mid = out[0]
        out.append((b, a, -normal, mid))
    return out


def ground_slope(model, X, nodes) -> tuple:
    """(slope [rad], friction coefficient) of the ground under the ground nodes ``nodes``: the angle between
    the mean of their contact normals and up, and the smallest friction coefficient of the obstacles they
    touch. A robot at rest slides where tan(slope) > friction."""
    _, k, normal = ground_gaps(model, X)
    n = normal[nodes].mean(axis=0)
    slope = float(np.arccos(np.clip(n @ up_of(model) / np.linalg.norm(n), -1.0, 1.0)))
    mu = min(float(model.obstacles[j].friction) for j in k[nodes])
    return slope, mu


def angle_between(a: float, b: float) -> float:
    """|a - b| wrapped to [0, π] [rad]."""
    return float(abs((a - b + np.pi) % (2 * np.pi) - np.pi))


def start_support(model, X) -> list:
    """The support polygon's edges (:func:`support_edges`, horizontal) of the robot at rest at X (n, 3) [m]."""
    return support_edges(X, list(ground_nodes(model, X)), ground_frame(model)[1])


def beyond(model, X, edges) -> bool:
    """True if the centre of mass at X (n, 3) [m], projected along gravity, lies outside the support polygon
    ``edges`` (:func:`start_support`; none given: True): the robot has tipped over one of them (a deformed
    robot may touch down a node and lift one of its face's without: it rocks back when its inputs return to
    zero)."""
    if not len(edges):
        return True
    c = centre_of_mass(model, X) @ ground_frame(model)[1]
    return any(float(normal @ (c - mid)) > 0.0 for _, _, normal, mid in edges)


def has_left(face: tuple, start: tuple) -> bool:
    """True once the robot rests on at least three ground nodes, one of the ``start`` face's has lifted and one
    beside it touches (a node touching down beside the start face, as the robot rocks, is not enough; nor is
    a corner of a four-node face lifting while the other three stand: that is still the face)."""
    return len(face) >= 3 and not set(start) <= set(face) and not set(face) <= set(start)
