"""The Jacobian of the shooting residuals by forward sensitivities (compiled: :mod:`.sensitivity_kernels`).

    J = residual_jacobian(model, plist, windows, dt, theta)    # (residuals, len(plist)), as shooting's residuals

Each window is simulated once with the derivative of its node positions with respect to every parameter θ_k
carried along (the exact derivative of the fixed-step RK4 simulation: no finite-difference step to choose,
no truncation error); the derivatives of the compared marker positions at the frame times are interpolated
between samples as the residuals are. :func:`unsupported` names what the kernels do not differentiate
(contact, compliant supports, large sparse bar components): the identification then uses finite
differences.
"""
from __future__ import annotations

import numpy as np

from tensegrity_engine.dynamics.kernel_params import kernel_params
from tensegrity_engine.dynamics.simulator import Simulator
from tensegrity_engine.identify.params import model_with, values
from tensegrity_engine.identify.sensitivity_kernels import rk4_sensitivities, scratch
from tensegrity_engine.model.markers import marker_layout, marker_positions


def unsupported(model) -> str | None:
    """Why the sensitivity kernels cannot differentiate ``model`` (None: they can)."""
    p = kernel_params(model)
    if p.cs_ob.shape[0]:
        return "contact with obstacles or the floor"
    if p.sup_k.shape[0]:
        return "compliant supports"
    if p.kv_c.shape[0]:
        return "large bar components solved by the sparse KKT system"
    return None


def pass_through_nodes(model) -> tuple:
    """(string, first segment after the node, pulley damping [N s/m], capstan μ) of every node a string
    passes through (all of them, so the derivative by a pulley damping that is 0 exists)."""
    seg0 = kernel_params(model).str_seg0
    rows = [(c, s) for c in range(len(model.string_names)) for s in range(seg0[c] + 1, seg0[c + 1])]
    c = np.array([r[0] for r in rows], np.int64)
    s = np.array([r[1] for r in rows], np.int64)
    return (c, s, model.string_pulley_damping[c].astype(float), model.string_pulley_friction[c].astype(float))


def directions(model, plist) -> tuple:
    """Per parameter θ_k, the derivative of the kernel arrays it sets: (dpar (m, 4, nc) rows d EA, d k, d ζ,
    d rest per string; ddelay (m, na); dnd (m,) structural damping; dps (m, np) pulley coefficients)."""
    m, nc, na = len(plist), len(model.string_names), len(model.actuator_names)
    pul_str = pass_through_nodes(model)[0]
    dpar, ddelay, dnd, dps = np.zeros((m, 4, nc)), np.zeros((m, na)), np.zeros(m), np.zeros((m, len(pul_str)))
    for j, p in enumerate(plist):
        mem = list(p.members)
        if p.kind == "stiffness":
            if p.unit == "N":
                dpar[j, 0, mem] = model.string_EA[mem] * p.scale / p.initial
            else:
                dpar[j, 1, mem] = model.string_stiffness[mem] * p.scale / p.initial
        elif p.kind == "string_damping":
            dpar[j, 2, mem] = p.scale
        elif p.kind == "pulley_damping":
            dps[j, np.isin(pul_str, mem)] = p.scale
        elif p.kind == "structural_damping":
            dnd[j] = p.scale
        elif p.kind == "actuator_offset":
            dpar[j, 3, model.actuator_string[mem[0]]] = -p.scale
        elif p.kind == "actuator_delay":
            ddelay[j, mem] = p.scale
        else:
            raise ValueError(f"no sensitivity for parameter kind {p.kind!r}")
    return dpar, ddelay, dnd, dps


def marker_tangent(model, X, dX) -> np.ndarray:
    """d marker positions (..., mu, 3) along dX (..., n, 3) at node positions X (:func:`marker_positions`)."""
    layout = marker_layout(model)
    mu = model.n_physical
    dM = np.array(dX[..., :mu, :])
    i = layout.on_bar
    if len(i):
        part = layout.partner[i]
        d = X[..., part, :] - X[..., i, :]
        ln = np.linalg.norm(d, axis=-1, keepdims=True)
        u = d / ln
        dd = dX[..., part, :] - dX[..., i, :]
        dM[..., i, :] += layout.along[i][:, None] * (dd - u * np.sum(u * dd, axis=-1, keepdims=True)) / ln
    return dM


def _integrate(sim, plist, t_out, start: bool = False) -> tuple:
    """(node positions (T, n, 3), their derivatives (T, m, n, 3) by ``plist`` (and, with ``start``, then by each
    free start coordinate: positions then velocities, r×3 each), kernel status) of ``sim``'s model from its
    state through the times t_out (the first: now)."""
    mod = sim.model
    dpar, ddelay, dnd, dps = directions(mod, plist)
    m0, r = len(dnd), sim.Y.shape[0]
    SY, SV = np.zeros((m0, r, 3)), np.zeros((m0, r, 3))
    if start:
        eye = np.eye(3 * r).reshape(3 * r, r, 3)
        zero = np.zeros_like(eye)
        SY, SV = np.concatenate([SY, eye, zero]), np.concatenate([SV, zero, eye])
        pad = 6 * r
        dpar, ddelay = np.concatenate([dpar, np.zeros((pad,) + dpar.shape[1:])]), \
            np.concatenate([ddelay, np.zeros((pad,) + ddelay.shape[1:])])
        dnd, dps = np.concatenate([dnd, np.zeros(pad)]), np.concatenate([dps, np.zeros((pad,) + dps.shape[1:])])
    pul = pass_through_nodes(mod)
    oX = np.zeros((len(t_out), mod.n_nodes, 3))
    oS = np.zeros((len(t_out), len(dnd), mod.n_nodes, 3))
    st = rk4_sensitivities(sim._pref, sim._wref, float(sim.t), sim.Y.copy(), sim.V.copy(), float(sim.dt), t_out,
                           sim.inputs.params, sim.external_forces, 1.0 if sim.damping else 0.0, sim.node_damping,
                           sim.bar_tol, dpar, ddelay, dnd, pul, dps, scratch(kernel_params(mod), len(pul[0])), oX, oS,
                           np.ascontiguousarray(SY), np.ascontiguousarray(SV))
    return oX, oS, st


def warm_up(model, positions) -> None:
    """Compile (or load) the sensitivity kernel: two steps of ``model`` from ``positions`` (warmup.py)."""
    if unsupported(model):
        return
    from tensegrity_engine.identify.params import parameters
    sim = Simulator(model, integrator="rk4", dt=1e-3)
    sim.reset(positions)
    kinds = ("stiffness", "actuator_delay") if len(model.actuator_names) else ("stiffness",)
    _integrate(sim, parameters(model, kinds, "model"), np.array([0.0, 0.002]))


def simulate_with_sensitivities(model, plist, theta, w, dt, cols=None, start: bool = False) -> tuple | None:
    """(marker positions (F, k, 3), their derivatives (F, k, 3, m)) of window ``w``'s compared nodes at its
    frame times for the parameters θ (derivatives by the parameters ``cols``, default all, then with
    ``start`` by the free start positions and velocities, :func:`_integrate`), or None if the simulation
    failed."""
    cols = range(len(plist)) if cols is None else cols
    mod = model_with(model, plist, values(plist, theta))
    sim = Simulator(mod, integrator="rk4", dt=dt)
    sim.reset(w.X0, w.V0, t=w.t0)
    sim.set_inputs(w.capture.inputs, horizon=w.duration)
    rate = 1.0 / float(np.median(np.diff(w.t))) if len(w.t) > 1 else 100.0
    n_out = int(round(max(w.duration, 1.0 / rate) * rate))
    t_out = w.t0 + np.arange(n_out + 1) / rate
    oX, oS, st = _integrate(sim, [plist[j] for j in cols], t_out, start)
    if st != 0:
        return None
    X = marker_positions(mod, oX)[:, w.nodes]
    S = np.moveaxis(marker_tangent(mod, oX[:, None], oS)[:, :, w.nodes], 1, -1)
    s = np.clip((w.t - t_out[0]) * rate, 0, len(t_out) - 1.000001)
    k = np.floor(s).astype(int)
    f = (s - k)[:, None, None]
    k1 = np.minimum(k + 1, len(t_out) - 1)
    return (1 - f) * X[k] + f * X[k1], (1 - f[..., None]) * S[k] + f[..., None] * S[k1]


def residual_jacobian(model, plist, windows, dt, theta, cols=None) -> np.ndarray:
    """d residuals / d θ_cols (rows as :func:`~.shooting.window_residuals`: masked samples 0; a failed
    window's rows 0, its residuals being constant there)."""
    cols = list(range(len(plist)) if cols is None else cols)
    parts = []
    for w in windows:
        out = simulate_with_sensitivities(model, plist, theta, w, dt, cols)
        J = np.zeros(w.measured.shape + (len(cols),)) if out is None else out[1]
        parts.append(np.where(w.mask[..., None, None], J, 0.0).reshape(-1, len(cols)))
    return np.concatenate(parts)
