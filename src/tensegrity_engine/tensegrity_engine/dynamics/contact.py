"""Contact with static obstacles (compiled): a damped one-sided spring along the normal, Coulomb friction with
true stiction along the surface.

**Touching points ("slots").** Every physical node that can move is a sphere of the radius of its thickest
bar (0 for a node without bar) and may touch every obstacle: for a plane this is exact for bars as capsules,
since the depth of a capsule in a half-space is largest at one of its ends (a bar lying flat touches at both
ends, carrying its weight there: the two-point resolution of its line contact). A bar may also touch a box
in its interior: two more slots per bar and box, at the two ends of the bar's deepest stretch (the part of its
axis within FLAT of its deepest point), each with half the bar's contact: a bar lying across a narrow box
rests on both edges of its top, one on a table's edge with an end on the table rests on that end and the
edge, one tipping across an edge on the edge (both slots there). A slot within the bar's radius of an end is
inactive (that end's node slot is there). Contact points move with the bar axis (the node-based model has no spin of a bar about its
axis, so rolling on the bar's surface is not resolved).

**Normal law.** With penetration δ = −(clearance) > 0 of slot i and its rate δ̇::

    F_n = max(0, k δ + c δ̇),   k = m ω²,   c = 2 ζ m ω,   ω = π / contact_time

m is the mass the slot carries when a body lands flat (lumped: the node's point mass plus half of each bar
ending there; for an interior slot the bar and its end masses), so ``contact_time`` is how long an undamped
contact lasts and ``restitution`` e the ratio of rebound to impact speed of such a landing: ζ solves
e(ζ) = e for this clamped law (:func:`damping_ratio`; the clamp lets go when the spring-damper would pull,
before δ returns to 0, so e(ζ) is not the textbook exp(−πζ/√(1−ζ²))). The force is the same law as a
damped string's, and the integrators locate its onset (δ = 0) and release (k δ + c δ̇ = 0) inside a step
exactly as they locate the strings' switches.

**Friction: spring-anchor (Cundall–Strack) stiction.** A touching slot keeps an anchor point on the
surface; its tangential offset ξ from the anchor acts as a spring of the same k and c::

    F_t = −k ξ − c v_t,   capped at |F_t| <= μ F_n

The anchor is held during a step and moved only after it (:func:`update_anchors`): if k|ξ| exceeds μ F_n the
anchor is dragged so that k|ξ| = μ F_n (sliding), else it stays (sticking). So a body on a slope below
atan μ settles on its anchors and does not creep (the offset is at most μ g / ω², 0.1 mm at the defaults),
and above it slides with F_t = μ F_n against its motion. A slot that just started touching has no anchor
yet: within that first step friction is the capped viscous part alone. Energy: the normal spring is
conservative, its damper and the clamp only remove energy; the anchor drag moves ξ radially inward (the
stored ½ k |ξ|² only drops) and the capped force opposes sliding. ``contact_energy`` counts ½ k δ² + ½ k |ξ|².
"""
from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from tensegrity_engine.collision import heightfield as hf
from tensegrity_engine.collision.obstacles import (HALF_SPACE, HEIGHTFIELD, box_sd, deepest_s, model_obstacles,
                                                   point_sd, span_end)

MAX_DAMPING_RATIO = 4.0       # ζ cap: c/m = 2ζω stays within RK4's stability at contact_time >= 10 steps
FLAT = 1e-6                   # m: a bar's deepest stretch on a box: the part within this of its deepest point


def _restitution(zeta: float) -> float:
    """Rebound/impact speed of a unit mass on the clamped spring-damper ω = 1 with damping ratio ζ."""
    def rhs(t, y):
        return [y[1], -(y[0] + 2.0 * zeta * y[1])]

    def release(t, y):
        return y[0] + 2.0 * zeta * y[1] if t > 1e-9 else 1.0
    release.terminal, release.direction = True, -1
    sol = solve_ivp(rhs, (0.0, 100.0), [0.0, 1.0], events=release, rtol=1e-11, atol=1e-13)
    return float(-sol.y_events[0][0][1])


@functools.lru_cache(maxsize=256)
def damping_ratio(restitution: float) -> float:
    """ζ of the clamped linear contact law with coefficient of restitution e (rebound/impact speed), capped at
    MAX_DAMPING_RATIO (e ≈ 0.011): e = 1 gives 0, the default 0.2 gives 0.73."""
    e = float(restitution)
    if e >= 1.0:
        return 0.0
    if e <= _restitution(MAX_DAMPING_RATIO):
        return MAX_DAMPING_RATIO
    return float(brentq(lambda z: _restitution(z) - e, 0.0, MAX_DAMPING_RATIO, xtol=1e-12))


def node_radius_and_mass(model) -> tuple:
    """(radius [m], lumped mass [kg]) per physical node: thickest bar ending there (also through the virtual
    nodes that coincide with it) and point masses plus half of each bar's mass."""
    n = model.n_nodes
    phys = np.where(model.virtual_of >= 0, model.virtual_of, np.arange(n))
    radius = np.zeros(n)
    mass = np.asarray(model.node_mass, float).copy()
    for b, (j, k) in enumerate(model.bars):
        for i in (j, k):
            radius[phys[i]] = max(radius[phys[i]], model.bar_radius[b])
            mass[i] += 0.5 * model.bar_mass[b]
    np.add.at(mass, phys[model.n_physical:], mass[model.n_physical:])
    return radius[:model.n_physical], mass[:model.n_physical]


def contact_arrays(model) -> dict:
    """The kernels' contact arrays (KernelParams fields ``ob_*`` and ``cs_*``; empty without obstacles)."""
    ob = model_obstacles(model)
    specs = model.obstacles
    movable = np.asarray(model.Q_sparse.getnnz(axis=1) > 0)[:model.n_physical]
    radius, mass = node_radius_and_mass(model)
    fallback = float(np.mean(mass[mass > 0])) if np.any(mass > 0) else 1.0
    node, bar, obst, rad, mm, side = [], [], [], [], [], []
    for o in range(len(specs)):
        for i in np.flatnonzero(movable):
            node.append(i), bar.append(-1), obst.append(o), rad.append(radius[i]), mm.append(mass[i] or fallback)
            side.append(0)
        if ob.kind[o] != HALF_SPACE:
            for b, (j, k) in enumerate(model.bars):
                for end in (0, 1):        # the two ends of its deepest stretch, each half the bar's contact
                    node.append(-1), bar.append(b), obst.append(o), rad.append(model.bar_radius[b])
                    side.append(end)
                    mm.append(0.5 * (model.bar_mass[b] + model.node_mass[j] + model.node_mass[k]) or fallback)
    obst = np.asarray(obst, np.int64)
    omega = np.array([math.pi / o.contact_time for o in specs])[obst] if len(obst) else np.zeros(0)
    zeta = np.array([damping_ratio(o.restitution) for o in specs])[obst] if len(obst) else np.zeros(0)
    mm = np.asarray(mm, float)
    return {"ob_kind": ob.kind.astype(np.int64), "ob_c": ob.centre, "ob_R": ob.rot, "ob_h": ob.half,
            "ob_grid": ob.grid, "ob_at": ob.grid_at,
            "ob_mu": np.array([o.friction for o in specs], float), "cs_node": np.asarray(node, np.int64),
            "cs_bar": np.asarray(bar, np.int64), "cs_side": np.asarray(side, np.int64), "cs_ob": obst, "cs_r": np.asarray(rad, float),
            "cs_k": mm * omega ** 2, "cs_c": 2.0 * zeta * mm * omega,
            "cs_rmax": np.array([max(rad, default=0.0)], float)}


@njit(cache=True, inline="always", _nrt=False)
def _to_world(R, c, v, with_offset):
    o0, o1, o2 = (c[0], c[1], c[2]) if with_offset else (0.0, 0.0, 0.0)
    return (o0 + R[0, 0] * v[0] + R[0, 1] * v[1] + R[0, 2] * v[2],
            o1 + R[1, 0] * v[0] + R[1, 1] * v[1] + R[1, 2] * v[2],
            o2 + R[2, 0] * v[0] + R[2, 1] * v[1] + R[2, 2] * v[2])


@njit(cache=True, inline="always", _nrt=False)
def _to_local(R, c, x):
    a0, a1, a2 = x[0] - c[0], x[1] - c[1], x[2] - c[2]
    return (R[0, 0] * a0 + R[1, 0] * a1 + R[2, 0] * a2, R[0, 1] * a0 + R[1, 1] * a1 + R[2, 1] * a2,
            R[0, 2] * a0 + R[1, 2] * a1 + R[2, 2] * a2)


@njit(cache=True, _nrt=False)
def _point_box(p, o, x, r):
    """A sphere at x (world), radius r, against box o: (clearance, normal, surface point), world."""
    R, c = p.ob_R[o], p.ob_c[o]
    q = _to_local(R, c, x)
    sd = box_sd(q[0], q[1], q[2], p.ob_h[o, 0], p.ob_h[o, 1], p.ob_h[o, 2])
    n = _box_normal(q, (p.ob_h[o, 0], p.ob_h[o, 1], p.ob_h[o, 2]))
    surface = (q[0] - sd * n[0], q[1] - sd * n[1], q[2] - sd * n[2])
    return sd - r, _to_world(R, c, n, False), _to_world(R, c, surface, True)


@njit(cache=True, _nrt=False)
def robot_sphere(p, X):
    """(centre (3-tuple), radius) [m] of a sphere holding every node and its thickest capsule around it."""
    lo0, lo1, lo2 = X[0, 0], X[0, 1], X[0, 2]
    hi0, hi1, hi2 = lo0, lo1, lo2
    for j in range(1, X.shape[0]):
        lo0, lo1, lo2 = min(lo0, X[j, 0]), min(lo1, X[j, 1]), min(lo2, X[j, 2])
        hi0, hi1, hi2 = max(hi0, X[j, 0]), max(hi1, X[j, 1]), max(hi2, X[j, 2])
    e0, e1, e2 = 0.5 * (hi0 - lo0), 0.5 * (hi1 - lo1), 0.5 * (hi2 - lo2)
    return (lo0 + e0, lo1 + e1, lo2 + e2), math.sqrt(e0 * e0 + e1 * e1 + e2 * e2) + p.cs_rmax[0]


@njit(cache=True, _nrt=False)
def obstacle_gap(p, o, centre, radius):
    """A lower bound [m] of the clearance of every slot on obstacle o (boxes and height fields; 0 for a plane,
    whose slots cost nothing to compute) from the robot's sphere: > 0 means none of them can touch."""
    if p.ob_kind[o] == HALF_SPACE:
        return 0.0
    if p.ob_kind[o] == HEIGHTFIELD:
        lo = (centre[0] - radius, centre[1] - radius, centre[2] - radius)
        hi = (centre[0] + radius, centre[1] + radius, centre[2] + radius)
        return hf.outside_bound(p.ob_at, p.ob_c, p.ob_h, o, lo, hi)
    q = _to_local(p.ob_R[o], p.ob_c[o], centre)
    return box_sd(q[0], q[1], q[2], p.ob_h[o, 0], p.ob_h[o, 1], p.ob_h[o, 2]) - radius


@njit(cache=True, _nrt=False)
def slot_geometry(p, X, i):
    """Slot i at node positions X: (clearance [m] (< 0: penetration), unit normal out of the obstacle, s on
    the bar (0 for a node), surface point (3-tuple) [m], active)."""
    o, j, b = p.cs_ob[i], p.cs_node[i], p.cs_bar[i]
    if j >= 0:
        x = (X[j, 0], X[j, 1], X[j, 2])
        if p.ob_kind[o] == HALF_SPACE:
            R, c = p.ob_R[o], p.ob_c[o]
            n = (R[0, 2], R[1, 2], R[2, 2])
            z = n[0] * (x[0] - c[0]) + n[1] * (x[1] - c[1]) + n[2] * (x[2] - c[2])
            return z - p.cs_r[i], n, 0.0, (x[0] - z * n[0], x[1] - z * n[1], x[2] - z * n[2]), True
        if p.ob_kind[o] == HEIGHTFIELD:
            clear, n, q = hf.point_contact(p.ob_grid, p.ob_at, p.ob_c, p.ob_h, o, x, p.cs_r[i], 0.0, 0.0)
            return clear, n, 0.0, q, True
        clear, n, q = _point_box(p, o, x, p.cs_r[i])
        return clear, n, 0.0, q, True
    j, k = p.bar_j[b], p.bar_k[b]
    if p.ob_kind[o] == HEIGHTFIELD:
        return _interior_heightfield(p, i, o, (X[j, 0], X[j, 1], X[j, 2]), (X[k, 0], X[k, 1], X[k, 2]))
    return _interior(p, i, o, (X[j, 0], X[j, 1], X[j, 2]), (X[k, 0], X[k, 1], X[k, 2]))


@njit(cache=True, _nrt=False)
def _interior_heightfield(p, i, o, a, e):
    """Interior slot i of the bar a–e on height field o: an end of its deepest stretch as for a box
    (:func:`.heightfield.bar_walk`: the first or last candidate point within FLAT of the deepest gap), with
    the normal of the cell on the stretch's side (a bar on a plateau is pushed up at both edges, one on a
    sharp ridge by both flanks); inactive within the bar radius of an end. Off the footprint or above the
    top: a lower bound, inactive."""
    d = (e[0] - a[0], e[1] - a[1], e[2] - a[2])
    r = p.cs_r[i]
    length = math.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    end = r / length if length > 0.0 else 1.0        # active only beyond this from both ends
    best, _, s = hf.bar_walk(p.ob_grid, p.ob_at, p.ob_c, p.ob_h, o, a, d, r, FLAT, p.cs_side[i], end)
    x = (a[0] + s * d[0], a[1] + s * d[1], a[2] + s * d[2])
    if best == math.inf:
        far = hf.outside_bound(p.ob_at, p.ob_c, p.ob_h, o, a, e) - r
        return max(far, 1e-9), (0.0, 0.0, 1.0), s, x, False
    toward = 1e-9 if p.cs_side[i] == 0 else -1e-9       # the slope of the cell the stretch lies over (at a kink)
    clear, n, q = hf.point_contact(p.ob_grid, p.ob_at, p.ob_c, p.ob_h, o, x, r, toward * d[0], toward * d[1])
    return clear, n, s, q, min(s, 1.0 - s) > end


@njit(cache=True, _nrt=False)
def _interior(p, i, o, a, e):
    """Interior slot i of the bar a–e on box o: an end of the bar's deepest stretch (the part within FLAT of
    its deepest point: a bar lying on a face is held at both ends of what it lies on, one tipping across an
    edge at the edge); inactive within the bar radius of an end (that end's node slot is there). A bar whose
    bounding sphere is clear of the box (far) gets that sphere's clearance, a lower bound of its own, and
    no search (the slot cannot touch: its force is zero either way)."""
    R, c = p.ob_R[o], p.ob_c[o]
    x0 = _to_local(R, c, a)
    d = _to_local(R, (0.0, 0.0, 0.0), (e[0] - a[0], e[1] - a[1], e[2] - a[2]))
    h = (p.ob_h[o, 0], p.ob_h[o, 1], p.ob_h[o, 2])
    length = math.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    far = point_sd(x0, d, h, 0.5) - 0.5 * length - p.cs_r[i]
    end = p.cs_r[i] / length if length > 0.0 else 1.0         # active only beyond this from both ends
    if far > 0.0:
        s = 0.5
    else:
        s = deepest_s(x0, d, h)
        thr = point_sd(x0, d, h, s) + FLAT
        out = 0.0 if p.cs_side[i] == 0 else 1.0
        # the stretch ends within `end` of the end it starts at: the slot is inactive wherever in it
        if not (abs(s - out) <= end or (abs(s - (1.0 - out)) <= end
                                        and point_sd(x0, d, h, abs(1.0 - out - end)) > thr)):
            s = span_end(x0, d, h, s, out, thr)
    q = (x0[0] + s * d[0], x0[1] + s * d[1], x0[2] + s * d[2])
    sd = point_sd(x0, d, h, s)
    n = _box_normal(q, h)
    surface = (q[0] - sd * n[0], q[1] - sd * n[1], q[2] - sd * n[2])
    if far > 0.0:
        return far, _to_world(R, c, n, False), s, _to_world(R, c, surface, True), False
    return (sd - p.cs_r[i], _to_world(R, c, n, False), s, _to_world(R, c, surface, True),
            min(s, 1.0 - s) > end)


@njit(cache=True, inline="always", _nrt=False)
def _box_normal(q, h):
    """Unit outward normal of the box |x_i| <= h_i at the local point q: toward q from its closest surface
    point outside, along the nearest face's axis inside."""
    cx, cy, cz = min(max(q[0], -h[0]), h[0]), min(max(q[1], -h[1]), h[1]), min(max(q[2], -h[2]), h[2])
    dx, dy, dz = q[0] - cx, q[1] - cy, q[2] - cz
    dist = math.sqrt(dx * dx + dy * dy + dz * dz)
    if dist > 0.0:
        return dx / dist, dy / dist, dz / dist
    gx, gy, gz = abs(q[0]) - h[0], abs(q[1]) - h[1], abs(q[2]) - h[2]
    if gx >= gy and gx >= gz:
        return (1.0 if q[0] >= 0.0 else -1.0), 0.0, 0.0
    if gy >= gz:
        return 0.0, (1.0 if q[1] >= 0.0 else -1.0), 0.0
    return 0.0, 0.0, (1.0 if q[2] >= 0.0 else -1.0)


@njit(cache=True, inline="always", _nrt=False)
def _slot_velocity(p, Xd, i, s):
    j, b = p.cs_node[i], p.cs_bar[i]
    if j >= 0:
        return Xd[j, 0], Xd[j, 1], Xd[j, 2]
    j, k = p.bar_j[b], p.bar_k[b]
    return ((1.0 - s) * Xd[j, 0] + s * Xd[k, 0], (1.0 - s) * Xd[j, 1] + s * Xd[k, 1],
            (1.0 - s) * Xd[j, 2] + s * Xd[k, 2])


@njit(cache=True, inline="always", _nrt=False)
def _tangential_offset(w, i, q, n):
    """ξ: the tangential part of (surface point − anchor) of slot i (zero without an anchor)."""
    if w.anc_on[i] == 0.0:
        return 0.0, 0.0, 0.0
    d0, d1, d2 = q[0] - w.anc[i, 0], q[1] - w.anc[i, 1], q[2] - w.anc[i, 2]
    dn = d0 * n[0] + d1 * n[1] + d2 * n[2]
    return d0 - dn * n[0], d1 - dn * n[1], d2 - dn * n[2]


@njit(cache=True, _nrt=False)
def contact_forces(p, X, Xd, w, F):
    """Add every slot's contact force to the nodal forces F (n, 3) [N]; writes per slot the event values
    w.cg (penetration δ [m]) and w.cf (k δ + c δ̇ [N]), the force w.cforce (3) [N] and surface point
    w.cpt (3) [m] (zero force where not touching). The slots of an obstacle the robot's bounding sphere is
    clear of (:func:`obstacle_gap`) get δ = −gap and no geometry (they come in one run per obstacle)."""
    if p.cs_ob.shape[0] == 0:
        return
    centre, radius = robot_sphere(p, X)
    o, gap = -1, 0.0
    for i in range(p.cs_ob.shape[0]):
        if p.cs_ob[i] != o:
            o = p.cs_ob[i]
            gap = obstacle_gap(p, o, centre, radius)
        if gap > 0.0:
            w.cg[i] = -gap
            w.cf[i] = -p.cs_k[i] * gap
            for d in range(3):
                w.cforce[i, d] = 0.0
            continue
        _slot_force(p, X, Xd, w, F, i)


@njit(cache=True, inline="always", _nrt=False)
def _slot_force(p, X, Xd, w, F, i):
    clear, n, s, q, active = slot_geometry(p, X, i)
    v = _slot_velocity(p, Xd, i, s)
    vn = v[0] * n[0] + v[1] * n[1] + v[2] * n[2]
    delta = -clear if active else min(-clear, 0.0)
    k, c = p.cs_k[i], p.cs_c[i]
    w.cg[i] = delta
    w.cf[i] = k * delta - c * vn
    for d in range(3):
        w.cpt[i, d] = q[d]
        w.cn[i, d] = n[d]
        w.cforce[i, d] = 0.0
    fn = w.cf[i]
    if delta <= 0.0 or fn <= 0.0:
        return
    xi = _tangential_offset(w, i, q, n)
    t0 = -k * xi[0] - c * (v[0] - vn * n[0])
    t1 = -k * xi[1] - c * (v[1] - vn * n[1])
    t2 = -k * xi[2] - c * (v[2] - vn * n[2])
    cap = p.ob_mu[p.cs_ob[i]] * fn
    tt = math.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    scale = cap / tt if tt > cap else 1.0
    f = (fn * n[0] + scale * t0, fn * n[1] + scale * t1, fn * n[2] + scale * t2)
    _apply(p, F, i, s, f)
    for d in range(3):
        w.cforce[i, d] = f[d]


@njit(cache=True, inline="always", _nrt=False)
def _apply(p, F, i, s, f):
    j, b = p.cs_node[i], p.cs_bar[i]
    if j >= 0:
        for d in range(3):
            F[j, d] += f[d]
        return
    j, k = p.bar_j[b], p.bar_k[b]
    for d in range(3):
        F[j, d] += (1.0 - s) * f[d]
        F[k, d] += s * f[d]


@njit(cache=True, _nrt=False)
def update_anchors(p, X, Xd, w):
    """After an accepted step (positions X, velocities Xd): drop the anchors of slots that let go, set new
    ones where a slot touches for the first time, and drag sliding ones so that k |ξ| <= μ F_n."""
    if p.cs_ob.shape[0] == 0:
        return
    centre, radius = robot_sphere(p, X)
    o, gap = -1, 0.0
    for i in range(p.cs_ob.shape[0]):
        if p.cs_ob[i] != o:
            o = p.cs_ob[i]
            gap = obstacle_gap(p, o, centre, radius)
        if gap > 0.0:
            w.anc_on[i] = 0.0
            continue
        clear, n, s, q, active = slot_geometry(p, X, i)
        v = _slot_velocity(p, Xd, i, s)
        fn = p.cs_k[i] * -clear - p.cs_c[i] * (v[0] * n[0] + v[1] * n[1] + v[2] * n[2])
        if not active or clear >= 0.0 or fn <= 0.0:
            w.anc_on[i] = 0.0
            continue
        xi = _tangential_offset(w, i, q, n)
        size = math.sqrt(xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2])
        limit = p.ob_mu[p.cs_ob[i]] * fn / p.cs_k[i]
        scale = limit / size if size > limit else 1.0
        for d in range(3):
            w.anc[i, d] = q[d] - scale * xi[d]
        w.anc_on[i] = 1.0


@njit(cache=True, _nrt=False)
def contact_energy(p, X, w) -> float:
    """Stored contact energy [J]: ½ k δ² of every touching slot plus ½ k |ξ|² of its anchor spring."""
    total = 0.0
    for i in range(p.cs_ob.shape[0]):
        clear, n, s, q, active = slot_geometry(p, X, i)
        if active and clear < 0.0:
            xi = _tangential_offset(w, i, q, n)
            total += 0.5 * p.cs_k[i] * (clear * clear + xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2])
    return total
