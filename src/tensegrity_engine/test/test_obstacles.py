"""Capsules and points against static obstacles (half-spaces, oriented boxes): brute force on thousands of
random pairs, analytic cases, rigid-motion invariance, minimum-translation certificates, python-fcl."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from tensegrity_engine.collision.obstacles import (BOX, Obstacles, bar_contacts, box, capsule_contacts, combine,
                                                   half_space, point_contacts)

RNG_SEED = 24


def random_boxes(rng, m):
    """m random oriented boxes: centres in [-1, 1]^3, half extents 0.05-1 m, uniform random rotations."""
    R = Rotation.random(m, random_state=rng).as_matrix()
    return combine(*(box(rng.uniform(-1, 1, 3), rng.uniform(0.05, 1.0, 3), R[k], f"b{k}") for k in range(m)))


def random_capsules(rng, n, spread=2.0):
    """n capsules: ends uniform in [-spread, spread]^3, radii 0-0.05 m; a tenth are points (p1 = p0)."""
    P0 = rng.uniform(-spread, spread, (n, 3))
    P1 = rng.uniform(-spread, spread, (n, 3))
    P1[: n // 10] = P0[: n // 10]
    return P0, P1, rng.uniform(0.0, 0.05, n)


def pair_contacts(obs: Obstacles, P0, P1, r):
    """Capsule k against obstacle k (diagonal of the batched call, one obstacle per capsule)."""
    out = [capsule_contacts(Obstacles(obs.kind[k:k + 1], obs.centre[k:k + 1], obs.rot[k:k + 1], obs.half[k:k + 1]),
                            P0[k:k + 1], P1[k:k + 1], r[k]) for k in range(len(P0))]
    return (np.array([o.clearance[0, 0] for o in out]), np.array([o.normal[0, 0] for o in out]),
            np.array([o.s[0, 0] for o in out]), np.array([o.point[0, 0] for o in out]),
            np.array([o.span[0, 0] for o in out]))


def box_sd(obs: Obstacles, k, X):
    """Exact signed distance (NumPy) of points X (..., 3) to box k: negative inside."""
    x = (np.asarray(X) - obs.centre[k]) @ obs.rot[k]
    q = np.abs(x) - obs.half[k]
    return np.linalg.norm(np.maximum(q, 0.0), axis=-1) + np.minimum(q.max(axis=-1), 0.0)


def brute_min(f, levels=3, K=1001):
    """min over s in [0, 1] of a convex f (vectorised over s) by dense sampling, refined around the best
    sample: for a convex function the minimiser lies between the best sample's neighbours, so each level
    shrinks the bracket by K/2 and the result is within Lip * (2/K)^levels / 2 of the true minimum."""
    lo, hi = 0.0, 1.0
    for _ in range(levels):
        s = np.linspace(lo, hi, K)
        v = f(s)
        k = int(np.argmin(v))
        lo, hi = s[max(k - 1, 0)], s[min(k + 1, K - 1)]
    return float(v[k]), float(s[k])


# --------------------------------------------------------------------------------------------- boxes, distance
def test_box_distance_against_brute_force():
    """Separated capsule-box pairs: our distance is never above the sampled minimum (it is a true minimum)
    and at most 3e-8 m below it. Tolerance: brute_min's third level samples a bracket of the minimiser
    every 4e-9 in s, so its best sample is within 2e-9 of it; the distance is Lipschitz in s with constant
    |p1 - p0| <= 4 sqrt(3) < 7 m, so the sampled minimum exceeds the truth by at most 1.4e-8 m."""
    rng = np.random.default_rng(RNG_SEED)
    n = 3000
    obs = random_boxes(rng, n)
    P0, P1, r = random_capsules(rng, n)
    clear, normal, s, point, _ = pair_contacts(obs, P0, P1, r)
    checked = 0
    for k in range(n):
        if clear[k] + r[k] <= 0.0:
            continue
        d = P1[k] - P0[k]
        ref, _ = brute_min(lambda t: box_sd(obs, k, P0[k] + t[:, None] * d))
        assert clear[k] + r[k] <= ref + 1e-12, k
        assert clear[k] + r[k] >= ref - 3e-8, (k, clear[k] + r[k], ref)
        checked += 1
    assert checked > 1000


def test_box_outputs_are_consistent():
    """For separated pairs: the reported points realise the distance, the obstacle point is on the surface,
    the normal is the unit vector from it to the segment point. Certificate of global optimality: the
    distance is convex in s, so a local minimum (no smaller value at s +- 1e-6) is the global one."""
    rng = np.random.default_rng(RNG_SEED + 1)
    n = 2000
    obs = random_boxes(rng, n)
    P0, P1, r = random_capsules(rng, n)
    clear, normal, s, point, _ = pair_contacts(obs, P0, P1, r)
    out = clear + r > 1e-9
    assert out.sum() > 800
    Ps = P0 + s[:, None] * (P1 - P0)
    dist = np.linalg.norm(Ps - point, axis=1)
    np.testing.assert_allclose(dist[out], (clear + r)[out], rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(normal, axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose((Ps - point)[out], normal[out] * dist[out, None], atol=1e-12)
    for k in np.flatnonzero(out):
        assert abs(box_sd(obs, k, point[k])) <= 1e-12
        for t in (s[k] - 1e-6, s[k] + 1e-6):
            if 0.0 <= t <= 1.0:
                assert box_sd(obs, k, P0[k] + t * (P1[k] - P0[k])) >= clear[k] + r[k] - 1e-13


# -------------------------------------------------------------------------------------------- boxes, penetration
def fibonacci_sphere(n):
    i = np.arange(n) + 0.5
    phi = np.arccos(1 - 2 * i / n)
    th = np.pi * (1 + 5 ** 0.5) * i
    return np.column_stack([np.cos(th) * np.sin(phi), np.sin(th) * np.sin(phi), np.cos(phi)])


def test_box_penetration_is_the_minimum_translation():
    """Penetrating pairs: moving the segment by the reported depth along the normal separates it (touching:
    sampled pointwise signed distance >= -1e-12), so depth >= the true minimum translation; and no one of
    20 000 sampled directions (plus the six axes themselves) needs less, the support function of the box
    swept along the segment being exact for each direction. Direction sampling bounds the gap from above:
    the overlap is Lipschitz in u with constant <= |h|_1 + |x|_max < 10 m, the spacing ~0.025 rad."""
    rng = np.random.default_rng(RNG_SEED + 2)
    n = 1500
    obs = random_boxes(rng, n)
    P0, P1, r = random_capsules(rng, n, spread=1.0)
    clear, normal, s, point, span = pair_contacts(obs, P0, P1, r)
    U = fibonacci_sphere(20000)
    pen = np.flatnonzero(clear + r < -1e-9)
    assert len(pen) > 300
    for k in pen:
        depth = -(clear[k] + r[k])
        x = (np.array([P0[k], P1[k]]) - obs.centre[k]) @ obs.rot[k]          # local ends
        u = U
        rb = np.abs(u) @ obs.half[k]
        overlap = rb - np.minimum(u @ x[0], u @ x[1])                          # push along +u
        assert depth <= overlap.min() + 1e-12, k
        assert depth >= overlap.min() - 0.3, k
        t = np.linspace(0, 1, 2001)[:, None]
        moved = P0[k] + depth * normal[k] + t * (P1[k] - P0[k])
        assert box_sd(obs, k, moved).min() >= -1e-12, k
        pts = P0[k] + np.linspace(span[k, 0], span[k, 1], 201)[:, None] * (P1[k] - P0[k])
        assert box_sd(obs, k, pts).max() <= r[k] + 1e-9 + 1e-12


def test_box_span_is_the_touching_part():
    """The span is exactly the set of segment points within tol: inside it the pointwise clearance is
    <= tol, and just outside each end (1e-9 in s beyond, when not at 0 or 1) it is above tol."""
    rng = np.random.default_rng(RNG_SEED + 3)
    n = 1500
    obs = random_boxes(rng, n)
    P0, P1, r = random_capsules(rng, n, spread=1.5)
    clear, _, _, _, span = pair_contacts(obs, P0, P1, r)
    touching = np.flatnonzero(clear <= 1e-9)
    assert len(touching) > 300
    for k in touching:
        lo, hi = span[k]
        assert 0.0 <= lo <= hi <= 1.0
        at = lambda t: box_sd(obs, k, P0[k] + np.atleast_1d(t)[:, None] * (P1[k] - P0[k])) - r[k]  # noqa: E731
        assert at(np.linspace(lo, hi, 101)).max() <= 1e-9 + 1e-12
        for t in (lo - 1e-9, hi + 1e-9):
            if 0.0 <= t <= 1.0 and np.linalg.norm(P1[k] - P0[k]) > 1e-3:
                assert at(t)[0] > 1e-9 - 1e-12, (k, lo, hi)


def test_deepest_point_of_a_bar_lying_in_a_box_top():
    """Bars lying flat 0.1 mm inside a box's top face and entering it through a side (a bar resting on a box
    sinks in so): the deepest point is inside (signed distance −0.1 mm), never the face crossing where the
    bar enters (distance 0; the closed form once took it when the outside distance rounded to 1e-17), and
    the deepest stretch is the part inside the top, as dense sampling gives it (1e-6 m of FLAT)."""
    from tensegrity_engine.collision.obstacles import box_span, deepest_s, point_sd
    rng = np.random.default_rng(RNG_SEED + 9)
    s = np.linspace(0.0, 1.0, 20001)
    checked = 0
    for _ in range(600):
        h = np.array(rng.uniform(0.05, 1.0, 3))
        x0 = np.array([rng.uniform(-1.5, 1.5), rng.uniform(-1.5, 1.5), h[2] - 1e-4])
        d = np.array([rng.uniform(-2, 2), rng.uniform(-2, 2), 0.0])
        q = np.abs(x0 + s[:, None] * d) - h                       # exact signed distance, sampled (NumPy)
        f = np.linalg.norm(np.maximum(q, 0.0), axis=1) + np.minimum(q.max(axis=1), 0.0)
        if f.min() > -5e-5:
            continue                                            # not in the top: nothing to check
        checked += 1
        x0, d, h = tuple(x0), tuple(d), tuple(h)
        s0 = deepest_s(x0, d, h)
        assert point_sd(x0, d, h, s0) == pytest.approx(-1e-4, abs=1e-12)
        lo, hi = box_span(x0, d, h, s0, point_sd(x0, d, h, s0) + 1e-6)
        inside = s[f <= -1e-4 + 1e-6]
        assert abs(lo - inside.min()) <= 5e-5 and abs(hi - inside.max()) <= 5e-5     # one sample
    assert checked > 30


# ------------------------------------------------------------------------------------------------ half-spaces
def test_half_space_against_brute_force_and_span():
    """Random planes: clearance = sampled min of the height n.x - d along the segment, minus r (linear in s,
    so the ends are exact and the tolerance is rounding, 1e-12 m); the span is the clipped part with
    height - r <= tol, checked on 401 samples; the contact point is on the plane below the segment point."""
    rng = np.random.default_rng(RNG_SEED + 4)
    n = 3000
    P0, P1, r = random_capsules(rng, n)
    for k in range(0, n, 3):
        nrm = rng.normal(size=3)
        d = rng.uniform(-1, 1)
        c = capsule_contacts(half_space(nrm, d), P0[k], P1[k], r[k])
        u = nrm / np.linalg.norm(nrm)
        t = np.linspace(0, 1, 401)
        height = (P0[k] + t[:, None] * (P1[k] - P0[k])) @ u - d / np.linalg.norm(nrm)
        assert abs(c.clearance[0, 0] - (height.min() - r[k])) <= 1e-12
        np.testing.assert_allclose(c.normal[0, 0], u, atol=1e-15)
        lo, hi = c.span[0, 0]
        inside = (t >= lo) & (t <= hi)
        if np.all(P0[k] == P1[k]):
            assert lo == hi == 0.0
        elif c.clearance[0, 0] <= 1e-9:
            assert np.all(height[inside] - r[k] <= 1e-9 + 1e-12)
            assert np.all(height[~inside] - r[k] > 1e-9 - 1e-12)
        ps = c.segment_points(P0[k:k + 1], P1[k:k + 1])[0, 0]
        q = c.point[0, 0]
        assert abs(q @ u - d / np.linalg.norm(nrm)) <= 1e-12
        np.testing.assert_allclose(np.cross(ps - q, u), 0.0, atol=1e-12)


def test_bar_flat_on_the_ground_is_a_line_contact():
    """A bar lying flat at height r: clearance 0 along its length, the span is the whole bar (both ends)."""
    ground = half_space([0, 0, 1], 0.0)
    c = capsule_contacts(ground, [[0.2, -0.1, 0.01]], [[0.7, 0.3, 0.01]], 0.01)
    assert c.clearance[0, 0] == 0.0
    np.testing.assert_array_equal(c.span[0, 0], [0.0, 1.0])
    np.testing.assert_array_equal(c.normal[0, 0], [0.0, 0.0, 1.0])
    tilted = capsule_contacts(ground, [[0, 0, 0.0]], [[1, 0, 0.02]], 0.01)       # one end 1 cm deep
    assert tilted.clearance[0, 0] == pytest.approx(-0.01, abs=1e-15)
    assert tilted.s[0, 0] == 0.0
    np.testing.assert_allclose(tilted.span[0, 0], [0.0, 0.5], atol=1e-7)      # z <= r + tol up to x = 0.5
    above = capsule_contacts(ground, [[0, 0, 0.5]], [[1, 0, 0.3]], 0.01)
    assert above.clearance[0, 0] == pytest.approx(0.29, abs=1e-15)
    np.testing.assert_array_equal(above.span[0, 0], [1.0, 1.0])


def test_bar_flat_on_a_box_top_touches_over_the_face():
    """A bar lying on a box's top face and sticking out on one side: clearance 0, the span is the part over
    the face (the part beyond the edge rises away from the box)."""
    b = box([0, 0, 0], [0.5, 0.3, 0.2])
    c = capsule_contacts(b, [[-0.3, 0, 0.21]], [[0.9, 0, 0.21]], 0.01)
    assert abs(c.clearance[0, 0]) <= 1e-15
    np.testing.assert_allclose(c.normal[0, 0], [0, 0, 1], atol=1e-15)
    x_end = 0.5 + np.sqrt((0.01 + 1e-9) ** 2 - 0.01 ** 2)                     # distance to the edge <= r + tol
    np.testing.assert_allclose(c.span[0, 0], [0.0, (x_end + 0.3) / 1.2], rtol=0, atol=1e-12)


# ------------------------------------------------------------------------------------------------ boxes, analytic
@pytest.mark.parametrize("theta", [0.2, 0.7, 1.2])
def test_bar_hanging_over_a_box_edge(theta):
    """A bar tilted by theta over the edge x = hx, z = hz of an axis-aligned box, its axis a gap g + r from
    the edge along the bisecting normal n = (sin theta, 0, cos theta): clearance g, contact at the edge's
    interior point under the bar's middle (s = 1/2), normal n."""
    h = np.array([0.4, 0.3, 0.25])
    edge = np.array([h[0], 0.1, h[2]])
    u = np.array([np.cos(theta), 0, -np.sin(theta)])
    n = np.array([np.sin(theta), 0, np.cos(theta)])
    g, r, L = 0.003, 0.01, 0.6
    mid = edge + (g + r) * n
    for R in (np.eye(3), Rotation.from_rotvec([0.3, -0.5, 0.9]).as_matrix()):
        centre = np.array([0.2, -0.4, 1.0])
        c = capsule_contacts(box(centre, h, R), [centre + R @ (mid - L / 2 * u)], [centre + R @ (mid + L / 2 * u)], r)
        assert c.clearance[0, 0] == pytest.approx(g, abs=1e-14)
        assert c.s[0, 0] == pytest.approx(0.5, abs=1e-12)
        np.testing.assert_allclose(c.point[0, 0], centre + R @ edge, atol=1e-14)
        np.testing.assert_allclose(c.normal[0, 0], R @ n, atol=1e-12)


@pytest.mark.parametrize("offset", [(0.0, 0.0), (0.1, 0.05), (-0.25, 0.2), (0.05, -0.28)])
def test_vertical_bar_through_a_box(offset):
    """A vertical bar through an axis-aligned box, off centre by (ox, oy): depth = the distance to the
    nearest side face, min(hx - |ox|, hy - |oy|), along that face's normal; the same in a rotated frame."""
    h = np.array([0.4, 0.3, 0.25])
    ox, oy = offset
    depth = min(h[0] - abs(ox), h[1] - abs(oy))
    axis = 0 if h[0] - abs(ox) <= h[1] - abs(oy) else 1
    nloc = np.zeros(3)
    nloc[axis] = 1.0 if (ox, oy)[axis] >= 0 else -1.0
    r = 0.02
    for R in (np.eye(3), Rotation.from_euler("xyz", [0.4, -1.1, 2.5]).as_matrix()):
        centre = np.array([1.0, 2.0, -0.5])
        p0, p1 = centre + R @ [ox, oy, -1.0], centre + R @ [ox, oy, 1.0]
        c = capsule_contacts(box(centre, h, R), [p0], [p1], r)
        assert c.clearance[0, 0] == pytest.approx(-(depth + r), abs=1e-14)
        np.testing.assert_allclose(c.normal[0, 0], R @ nloc, atol=1e-14)
        z = -1.0 + 2.0 * c.span[0, 0]                                          # the part within the box + r
        np.testing.assert_allclose(z, [-h[2] - r, h[2] + r], atol=1e-8)


def test_points_are_capsules_of_length_zero():
    """Point queries: clearance = exact signed distance - radius (inside: depth to the nearest face, which
    is the minimum translation of a point), s = 0, a zero span at 0 when within tol."""
    rng = np.random.default_rng(RNG_SEED + 5)
    obs = combine(random_boxes(rng, 5), half_space([0.1, 0.2, 1.0], 0.3))
    X = rng.uniform(-1.5, 1.5, (4000, 3))
    c = point_contacts(obs, X, 0.01)
    for k in range(5):
        np.testing.assert_allclose(c.clearance[:, k], box_sd(obs, k, X) - 0.01, rtol=0, atol=1e-12)
    u = np.array([0.1, 0.2, 1.0]) / np.linalg.norm([0.1, 0.2, 1.0])
    np.testing.assert_allclose(c.clearance[:, 5], X @ u - 0.3 / np.linalg.norm([0.1, 0.2, 1.0]) - 0.01, atol=1e-12)
    assert np.all(c.s == 0.0) and np.all(c.span == 0.0)
    np.testing.assert_allclose(np.linalg.norm(X[:, None] - c.point, axis=2), np.abs(c.clearance + 0.01), atol=1e-12)


def test_rigid_motion_of_the_world_changes_nothing():
    """Rotating and translating capsules and obstacles together: clearances and s unchanged (1e-12 m, the
    rounding of coordinates of size ~3 m), normals and points move with the world."""
    rng = np.random.default_rng(RNG_SEED + 6)
    obs = combine(random_boxes(rng, 20), half_space([0, 0, 1], -0.5), half_space([1, -1, 0.2], 0.4))
    P0, P1, r = random_capsules(rng, 300)
    a = capsule_contacts(obs, P0, P1, r)
    Q = Rotation.from_rotvec([0.7, -0.2, 1.9]).as_matrix()
    t = np.array([0.3, -1.2, 0.8])
    moved = Obstacles(obs.kind, obs.centre @ Q.T + t, np.einsum("ij,mjk->mik", Q, obs.rot), obs.half, obs.names)
    b = capsule_contacts(moved, P0 @ Q.T + t, P1 @ Q.T + t, r)
    np.testing.assert_allclose(b.clearance, a.clearance, atol=1e-12)
    clean = np.abs(a.clearance) > 1e-6                                          # s is unique away from contact
    np.testing.assert_allclose(b.s[clean], a.s[clean], atol=1e-9)
    np.testing.assert_allclose(b.normal[clean], (a.normal @ Q.T)[clean], atol=1e-9)
    np.testing.assert_allclose(b.point[clean], (a.point @ Q.T + t)[clean], atol=1e-9)


def test_batched_call_equals_pairwise_calls():
    """One kernel call for N capsules x M obstacles gives exactly the pair-by-pair results."""
    rng = np.random.default_rng(RNG_SEED + 7)
    obs = combine(random_boxes(rng, 7), half_space([0, 0, 1], 0.0))
    P0, P1, r = random_capsules(rng, 50)
    allc = capsule_contacts(obs, P0, P1, r)
    for j in range(len(obs)):
        one = Obstacles(obs.kind[j:j + 1], obs.centre[j:j + 1], obs.rot[j:j + 1], obs.half[j:j + 1])
        c = capsule_contacts(one, P0, P1, r)
        np.testing.assert_array_equal(c.clearance[:, 0], allc.clearance[:, j])
        np.testing.assert_array_equal(c.point[:, 0], allc.point[:, j])
    assert np.all(obs.kind[:7] == BOX)


def test_invalid_obstacles_are_refused():
    with pytest.raises(ValueError, match="rotation"):
        box([0, 0, 0], [1, 1, 1], np.diag([1.0, 1.0, -1.0]))
    with pytest.raises(ValueError, match="half extents"):
        box([0, 0, 0], [1, 0, 1])
    with pytest.raises(ValueError, match="normal"):
        half_space([0, 0, 0])


# -------------------------------------------------------------------------------------------------- python-fcl
def test_against_python_fcl():
    """python-fcl (GJK/EPA), when installed: capsule-box distances of separated pairs: fcl's is never below
    ours (ours is the exact minimum, fcl's GJK stops at a tolerance above it: mostly within 1e-4 m, up to
    1.5e-4 m seen at unit scale; bound 1e-3 m); capsule-box penetrations: fcl agrees they
    collide, and our depth is never above fcl's (its EPA depth is a valid translation but not always the
    minimal one: in about 40 % of these random cases it is larger by up to 0.4 m, while ours is certified
    minimal by test_box_penetration_is_the_minimum_translation); most agree within 1e-4 m. Capsule-half-space
    depths (closed form in fcl) within 1e-12 m.
    fcl.Capsule(radius, full length) along local z; fcl.Box(full sides); fcl.Halfspace(n, d): n.x <= d.
    (fcl's capsule-half-space *distance* crashes python-fcl 0.7, so only its collision is compared.)"""
    fcl = pytest.importorskip("fcl")
    rng = np.random.default_rng(RNG_SEED + 8)
    n = 400
    obs = random_boxes(rng, n)
    P0, P1, r = random_capsules(rng, n, spread=1.5)
    r = r + 0.005
    P1[: n // 10] += 1e-3                                  # fcl capsules need a direction
    clear, *_ = pair_contacts(obs, P0, P1, r)
    creq, dreq = fcl.CollisionRequest(num_max_contacts=1, enable_contact=True), fcl.DistanceRequest()
    compared, agree, close = [0, 0], 0, 0
    for k in range(n):
        cap = fcl_capsule(fcl, P0[k], P1[k], r[k])
        bx = fcl.CollisionObject(fcl.Box(*(2 * obs.half[k])), fcl.Transform(obs.rot[k], obs.centre[k]))
        if clear[k] > 1e-3:
            err = fcl.distance(bx, cap, dreq, fcl.DistanceResult()) - clear[k]
            assert -1e-12 <= err <= 1e-3, k
            compared[0] += 1
            close += err <= 1e-4
        elif clear[k] < -1e-3:
            res = fcl.CollisionResult()
            assert fcl.collide(bx, cap, creq, res) == 1
            assert -clear[k] <= res.contacts[0].penetration_depth + 1e-6, k
            compared[1] += 1
            agree += abs(res.contacts[0].penetration_depth + clear[k]) <= 1e-4
        nrm, d = rng.normal(size=3), rng.uniform(-0.5, 0.5)
        ours = capsule_contacts(half_space(nrm, d), P0[k], P1[k], r[k]).clearance[0, 0]
        res = fcl.CollisionResult()
        hit = fcl.collide(fcl.CollisionObject(fcl.Halfspace(nrm / np.linalg.norm(nrm), d / np.linalg.norm(nrm)),
                                              fcl.Transform()), cap, creq, res)
        assert hit == (ours < 0), k
        if hit:
            assert abs(res.contacts[0].penetration_depth + ours) <= 1e-12, k
    assert min(compared) > 50 and agree > compared[1] // 2 and close > 0.9 * compared[0]


def fcl_capsule(fcl, p0, p1, r):
    """An fcl capsule object for segment p0-p1 of radius r: centre at the midpoint, local z along it."""
    d = p1 - p0
    L = float(np.linalg.norm(d))
    R = Rotation.align_vectors([d / L], [[0.0, 0.0, 1.0]])[0].as_matrix()
    return fcl.CollisionObject(fcl.Capsule(float(r), L), fcl.Transform(R, 0.5 * (p0 + p1)))


def test_degenerate_alignments_on_a_grid():
    """Ends on a 0.25 m grid against axis-aligned boxes with grid-sized half extents: segments parallel to
    faces and edges, lying in face planes, touching exactly, ending on the surface, of length zero. The
    distance still equals the refined brute force (tolerance as in the random test), exact touches give
    exactly 0 (grid values are binary fractions, so no rounding) and nothing is NaN."""
    rng = np.random.default_rng(RNG_SEED + 9)
    n = 3000
    h = rng.integers(1, 5, (n, 3)) * 0.25
    centre = rng.integers(-2, 3, (n, 3)) * 0.25
    obs = combine(*(box(centre[k], h[k]) for k in range(n)))
    P0 = rng.integers(-8, 9, (n, 3)) * 0.25
    P1 = P0 + rng.integers(-4, 5, (n, 3)) * 0.25 * (rng.random((n, 3)) < 0.5)   # many axis-parallel
    clear, normal, s, point, span = pair_contacts(obs, P0, P1, np.zeros(n))
    assert np.all(np.isfinite(clear)) and np.all(np.isfinite(normal)) and np.all(np.isfinite(span))
    np.testing.assert_allclose(np.linalg.norm(normal, axis=1), 1.0, atol=1e-12)
    zero = 0
    for k in range(n):
        d = P1[k] - P0[k]
        ref, _ = brute_min(lambda t: box_sd(obs, k, P0[k] + t[:, None] * d))
        if ref >= 0.0:
            assert ref - 3e-8 <= clear[k] <= ref + 1e-12, k
            zero += clear[k] == 0.0
        else:
            assert clear[k] <= ref + 1e-12, k          # depth >= the deepest point's depth
    assert zero > 50


@pytest.mark.parametrize("scale", [1e-3, 1e3])
def test_scale_invariance(scale):
    """Scaling the whole world by 1e-3 or 1e3 scales clearances by the same factor (relative 1e-12)."""
    rng = np.random.default_rng(RNG_SEED + 10)
    obs = combine(random_boxes(rng, 10), half_space([0.3, 0, 1], 0.2))
    P0, P1, r = random_capsules(rng, 200)
    a = capsule_contacts(obs, P0, P1, r)
    big = Obstacles(obs.kind, obs.centre * scale, obs.rot, obs.half * scale)
    b = capsule_contacts(big, P0 * scale, P1 * scale, r * scale, tol=1e-9 * scale)
    np.testing.assert_allclose(b.clearance, a.clearance * scale, rtol=0, atol=1e-12 * scale * 4)


def test_model_bars_and_nodes_against_the_ground(manipulator):
    """A model's bars (capsules of their radius) and nodes (points) against the floor under it and a box:
    the lowest bar's clearance is its lowest end's height minus its radius; empty lists give empty results."""
    X = manipulator.positions
    floor = half_space([0, 0, 1], float(X[:, 2].min()) - 0.05)
    world = combine(floor, box(X.mean(axis=0), [0.01, 0.01, 0.01]))
    c = bar_contacts(manipulator, X, world)
    assert c.clearance.shape == (len(manipulator.bars), 2)
    low = X[manipulator.bars, 2].min(axis=1) - (X[:, 2].min() - 0.05) - manipulator.bar_radius
    np.testing.assert_allclose(c.clearance[:, 0], low, atol=1e-12)
    nodes = point_contacts(world, X)
    np.testing.assert_allclose(nodes.clearance[:, 0], X[:, 2] - X[:, 2].min() + 0.05, atol=1e-12)
    assert capsule_contacts(world, np.empty((0, 3)), np.empty((0, 3)), 0.01).clearance.shape == (0, 2)
    empty = Obstacles(np.empty(0, np.int64), np.empty((0, 3)), np.empty((0, 3, 3)), np.empty((0, 3)))
    assert point_contacts(empty, X).clearance.shape == (len(X), 0)
