"""An independent second formulation for class-1 models: rigid rods with quaternions (the 3-prism paper,
``../shared/papers``), integrated with SciPy, to cross-check the node-based engine.

Each bar is a rigid rod: centre ``c`` and velocity ``v`` (second order), orientation quaternion ``q``
(first order, ``q̇ = ½ [0, ω] ⊗ q`` with the world-frame angular velocity ω) and ω itself (first order,
``I ω̇ = τ``). A uniform slender rod of mass m and length l has transverse inertia ``I = m l² / 12``; string
forces act at the rod's ends, so their torques are perpendicular to it and an initially non-spinning rod
never spins about its axis, whatever its axial inertia: taking it equal to ``I`` (isotropic) is exact and
removes the gyroscopic term. Node positions are ``c ± (l/2) R(q) e``. Point masses on nodes, fixed nodes,
class-k joints and linear constraints are outside this formulation (the node model's domain), as are
pulley friction and actuator delay: :func:`rigid_rod_run` refuses such models by name.
String forces are computed independently here (composite strings, EA or spring, damping, slack).
"""
from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp


def _unsupported(model) -> list:
    why = []
    if model.n_nodes != model.n_physical:
        why.append("bars share nodes (class-k joints)")
    if len(model.constraint_names):
        why.append("it has fixed nodes or linear constraints")
    if np.any(model.node_mass > 0):
        why.append("nodes carry point masses")
    if np.any(model.string_pulley_damping > 0) or np.any(model.actuator_delay > 0):
        why.append("it uses pulley friction or actuator delay")
    if len(model.supports):
        why.append("it has compliant supports")
    if len(set(model.bars.ravel().tolist())) != model.n_nodes:
        why.append("some node belongs to no bar")
    return why


def _quat_to_axis(q):
    """Unit rod direction R(q) e_z for quaternions (..., 4) (w, x, y, z)."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.stack([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)], axis=-1)


def _quat_from_axis(d):
    """A quaternion turning e_z onto the unit vector d (no spin about d)."""
    d = d / np.linalg.norm(d)
    ez = np.array([0.0, 0.0, 1.0])
    c = float(ez @ d)
    if c < -1 + 1e-14:
        return np.array([0.0, 1.0, 0.0, 0.0])
    axis = np.cross(ez, d)
    q = np.r_[1.0 + c, axis]
    return q / np.linalg.norm(q)


def _string_forces(model, X, Xd, zeta_scale):
    """Nodal string forces (n, 3) [N], computed directly from the segments."""
    seg = model.segments
    dvec = X[seg[:, 1]] - X[seg[:, 0]]
    ln = np.linalg.norm(dvec, axis=1)
    u = dvec / ln[:, None]
    lnd = np.einsum("sk,sk->s", u, Xd[seg[:, 1]] - Xd[seg[:, 0]])
    nc = len(model.string_names)
    L = np.bincount(model.segment_string, ln, nc)
    Ld = np.bincount(model.segment_string, lnd, nc)
    rest = model.rest_length
    kap = model.string_stiffness_at(rest)
    e = L - rest
    t = np.where(e > 0, np.maximum(kap * e + zeta_scale * model.string_damping * Ld, 0.0), 0.0)
    f = t[model.segment_string][:, None] * u
    F = np.zeros_like(X)
    np.add.at(F, seg[:, 0], f)
    np.add.at(F, seg[:, 1], -f)
    return F


def rigid_rod_run(model, duration: float, velocities=None, rate: float = 100.0, damping: bool = True,
                  rtol: float = 1e-12, atol: float = 1e-14):
    """(t (T,), node positions (T, n, 3)) of the rigid-rod model from the model's positions and the given
    node velocities (projected onto rigid rod motions), no inputs. ValueError for unsupported models."""
    why = _unsupported(model)
    if why:
        raise ValueError(f"model '{model.name}' is not a plain class-1 structure for the rigid-rod cross-check: "
                         + "; ".join(why))
    bars = model.bars
    nb = len(bars)
    X0 = model.positions
    V0 = np.zeros_like(X0) if velocities is None else np.asarray(velocities, float)
    m = model.bar_mass
    ln = model.bar_length
    inertia = m * ln ** 2 / 12.0
    c = 0.5 * (X0[bars[:, 0]] + X0[bars[:, 1]])
    v = 0.5 * (V0[bars[:, 0]] + V0[bars[:, 1]])
    d = (X0[bars[:, 1]] - X0[bars[:, 0]]) / ln[:, None]        # from end 0 to end 1
    q = np.array([_quat_from_axis(di) for di in d])
    rel = (V0[bars[:, 1]] - V0[bars[:, 0]]) / ln[:, None]         # = ω × d
    om = np.cross(d, rel)                                          # ω ⊥ d (no spin)
    g = np.asarray(model.gravity, float)
    zeta = 1.0 if damping else 0.0

    def nodes(cc, vv, qq, ww):
        dd = _quat_to_axis(qq)
        half = 0.5 * ln[:, None] * dd
        X = np.empty_like(X0)
        Xd = np.empty_like(X0)
        X[bars[:, 0]], X[bars[:, 1]] = cc - half, cc + half
        dv = np.cross(ww, half)
        Xd[bars[:, 0]], Xd[bars[:, 1]] = vv - dv, vv + dv
        return X, Xd, half

    def rhs(_, y):
        cc, vv = y[:3 * nb].reshape(nb, 3), y[3 * nb:6 * nb].reshape(nb, 3)
        qq, ww = y[6 * nb:10 * nb].reshape(nb, 4), y[10 * nb:].reshape(nb, 3)
        X, Xd, half = nodes(cc, vv, qq, ww)
        F = _string_forces(model, X, Xd, zeta)
        F0, F1 = F[bars[:, 0]], F[bars[:, 1]]
        acc = (F0 + F1) / m[:, None] + g
        tau = np.cross(half, F1 - F0)
        wdot = tau / inertia[:, None]
        w4 = np.concatenate([np.zeros((nb, 1)), ww], axis=1)
        qdot = 0.5 * _qmul(w4, qq)
        return np.concatenate([vv.ravel(), acc.ravel(), qdot.ravel(), wdot.ravel()])

    t_eval = np.arange(int(round(duration * rate)) + 1) / rate
    y0 = np.concatenate([c.ravel(), v.ravel(), q.ravel(), om.ravel()])
    sol = solve_ivp(rhs, (0.0, t_eval[-1]), y0, method="DOP853", t_eval=t_eval, rtol=rtol, atol=atol)
    if not sol.success:
        raise ValueError(f"rigid-rod integration failed: {sol.message}")
    out = np.empty((len(t_eval), model.n_nodes, 3))
    for k in range(len(t_eval)):
        y = sol.y[:, k]
        qq = y[6 * nb:10 * nb].reshape(nb, 4)
        qq = qq / np.linalg.norm(qq, axis=1, keepdims=True)
        out[k] = nodes(y[:3 * nb].reshape(nb, 3), y[3 * nb:6 * nb].reshape(nb, 3), qq,
                       y[10 * nb:].reshape(nb, 3))[0]
    return t_eval, out


def _qmul(a, b):
    """Quaternion products a ⊗ b for (..., 4) arrays (w, x, y, z)."""
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack([aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw], axis=-1)


def crosscheck(model, duration: float = 5.0, seed: int = 0, sigma: float = 0.2, rate: float = 100.0) -> dict:
    """Node model (dopri5, rtol 1e-12) against the rigid-rod model from the same state (random node
    velocities ``sigma`` [m/s], projected by the node model onto rigid rod motions). Returns max deviation
    [m], the time series of the per-sample maximum, and the motion scale."""
    from tensegrity_engine.dynamics.simulator import Simulator
    rng = np.random.default_rng(seed)
    sim = Simulator(model, rtol=1e-12, atol=1e-14)
    sim.reset(velocities=rng.normal(0.0, sigma, (model.n_nodes, 3)))
    V0 = sim.velocities
    tr = sim.run(duration, rate=rate)
    t, X = rigid_rod_run(model, duration, velocities=V0, rate=rate)
    dev = np.abs(tr.nodes - X).max(axis=(1, 2))
    return {"max_deviation_m": float(dev.max()), "t": t, "deviation_m": dev,
            "motion_m": float(np.abs(tr.nodes - tr.nodes[0]).max())}
