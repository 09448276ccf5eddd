"""The support of a robot lying on the ground: which nodes touch (its face), the support polygon (their
convex hull in the ground plane) with its edges' outward normals, and the centre of mass. Pure geometry from
node positions (n, 3) [m] in model order; rows of NaN (unseen nodes) are ignored."""
from __future__ import annotations

import numpy as np
from scipy.spatial import ConvexHull, QhullError


def ground_frame(model) -> tuple:
    """(point (3,), unit normal (3,)) of the model's first plane obstacle (the ground). Raises ValueError if
    the model has none or it is not horizontal (the support polygon is taken in the xy-plane)."""
    for ob in model.obstacles:
        if ob.type == "plane":
            n = np.asarray(ob.normal, float) / np.linalg.norm(ob.normal)
            if n[2] < 1.0 - 1e-9:
                raise ValueError(f"model '{model.name}': the ground plane '{ob.name}' has normal {list(ob.normal)}; "
                                 "rolling plans on a horizontal ground (normal [0, 0, 1]): level the plane")
            return np.asarray(ob.point, float), n
    raise ValueError(f"model '{model.name}' has no ground plane: rolling needs one (add an obstacle of type "
                     "'plane', e.g. 'tensegrity new superball' or generators.on_ground(doc))")


def node_radius(model) -> np.ndarray:
    """(n,) [m] radius of the bar capsule each node ends (0 for nodes on no bar)."""
    r = np.zeros(model.n_nodes)
    r[model.bars[:, 0]] = model.bar_radius
    r[model.bars[:, 1]] = model.bar_radius
    return r


def contact_tolerance(model) -> float:
    """[m] gap under which a node counts as touching: 2 % of the mean bar length, at least 1 cm."""
    return max(0.01, 0.02 * float(np.mean(model.bar_length))) if len(model.bar_length) else 0.01


def ground_nodes(model, X, tol: float | None = None) -> np.ndarray:
    """Indices of the nodes whose capsule surface is within ``tol`` [m] (default :func:`contact_tolerance`)
    of the ground plane."""
    p, n = ground_frame(model)
    gap = (np.asarray(X, float) - p) @ n - node_radius(model)
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


def support_edges(X, nodes) -> list:
    """Edges of the support polygon of the ground nodes ``nodes`` (indices into X): a list of
    (i, j, outward unit normal (2,) in the xy-plane, midpoint (2,) [m]), counter-clockwise. Fewer than three
    non-collinear nodes give the two sides of their segment (a robot resting on a line)."""
    P = np.asarray(X, float)[nodes, :2]
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
        e = X[b, :2] - X[a, :2]
        normal = np.array([e[1], -e[0]]) / np.linalg.norm(e)       # right of a->b: outward for a CCW loop
        out.append((a, b, normal, 0.5 * (X[a, :2] + X[b, :2])))
    if len(loop) == 2:
        a, b, normal, mid = out[0]
        out.append((b, a, -normal, mid))
    return out


def angle_between(a: float, b: float) -> float:
    """|a - b| wrapped to [0, π] [rad]."""
    return float(abs((a - b + np.pi) % (2 * np.pi) - np.pi))


def has_left(face: tuple, start: tuple) -> bool:
    """True once the robot rests on at least three ground nodes, one of the ``start`` face's has lifted and one
    beside it touches (a node touching down beside the start face, as the robot rocks, is not enough; nor is
    a corner of a four-node face lifting while the other three stand: that is still the face)."""
    return len(face) >= 3 and not set(start) <= set(face) and not set(face) <= set(start)
