"""Compiled forward sensitivities of the fixed-step RK4 simulation with respect to the identified parameters.

:func:`rk4_sensitivities` integrates the state ``(Y, V)`` exactly as the RK4 integrator's plain step does
(equal substeps of at most ``h`` reaching each output time, projection onto the bar lengths after each
step) and, with it, ``m`` tangent directions ``(∂Y/∂θ_k, ∂V/∂θ_k)``: the RK4 stages of the tangent
(variational) equation ``δŸ = ∂Ÿ/∂(Y, V) (δY, δV) + ∂Ÿ/∂θ_k``, taken with the same stage states, so the
result is the exact derivative of the discrete simulation (not of the ODE), which is what the output-error
residuals are made of. The switch location of the integrator (a damped string starting to pull inside a
step) is not differentiated: a step is the plain RK4 step; where no string switches the primal is
bit-for-bit the integrator's.

How the pieces of ``δŸ`` are computed:

* the nodal forces' tangent ``δF`` (strings, actuators with delay, pulley friction): a *complex-step*
  compiled variant of the force law (:func:`_complex_forces`): positions ``X + iεδX``, velocities and
  parameters likewise, ``δF = Im F / ε`` with ε = 1e-30, exact to rounding (no subtraction, so no
  truncation or cancellation error); the functions (square roots, the capstan angle's ``atan2``, ``expm1``, ``tanh``)
  and the clamps are taken on the real part with their derivative carried in the imaginary one (dual-number
  arithmetic: exact, and cheaper than complex transcendental functions). Written that way because the force law (pulley friction saturating at the capstan limit)
  has many terms whose hand-derived Jacobians would be long and error-prone, while the transcription is
  line by line;
* the bar constraint (analytic): ``Ÿ = Mr⁻¹ Qᵀ F − c V + G (λ∘B)`` with ``S λ = −|Ḃ|² − B·B̈0``; its tangent is
  the same linear system with the right-hand side ``−(δB·B̈ + 2 Ḃ·δḂ + B·Ab Z)`` (Z: everything but the
  new bar forces, including ``G (λ∘δB)``), solved with the primal's Cholesky factor of S at that stage;
* the projection after each step: its derivative on the manifold, the mass-weighted projection of
  ``δY`` onto ``B·δB = 0`` and of ``δV`` onto ``δB·Ḃ + B·δḂ = 0``.

Supported: dense bar blocks, strings, actuators, pulley friction, gravity, constant external forces. Not:
contact, compliant supports, the sparse KKT components (:func:`~.sensitivity.supported` says so and the
identification falls back to finite differences).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from tensegrity_engine.dynamics.kernels import (OK, REST, SINGULAR, add_bar_correction, bar_vectors, chol_subst,
                                                factor_bars, free_accel, accel, eval_input, expand,
                                                post_step, stage_state)
from tensegrity_engine.dynamics.kernels_kkt import flag

EPS = 1e-30           # complex step: Im F / EPS is dF to rounding (second-order terms ~EPS² vanish)
_A = np.array([[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 1.0]])
_B = np.array([1 / 6, 1 / 3, 1 / 3, 1 / 6])
_C = np.array([0.0, 0.5, 0.5, 1.0])
INPUT_STEP = 1e-6     # s, central difference of a sinusoid input's rate (for d/d delay of the rest-length rate)


@njit(cache=True)
def _dual_atan2(y, x):
    """atan2 of complex-step numbers (value on the real parts, derivative in the imaginary part)."""
    r2 = x.real * x.real + y.real * y.real
    return complex(math.atan2(y.real, x.real), (x.real * y.imag - y.real * x.imag) / r2)


@njit(cache=True)
def _dual_sqrt(z):
    r = math.sqrt(z.real)
    return complex(r, 0.5 * z.imag / r) if r > 0.0 else complex(0.0, 0.0)


@njit(cache=True)
def _dual_tanh(z):
    t = math.tanh(z.real)
    return complex(t, (1.0 - t * t) * z.imag)


@njit(cache=True)
def _dual_expm1(z):
    return complex(math.expm1(z.real), math.exp(z.real) * z.imag)


@njit(cache=True)
def _input_rate_slope(t, inp, a):
    """d u̇ / dt of actuator a at t [m/s²]: central difference for sinusoids, 0 between table knots."""
    if inp.mode != 1:
        return 0.0
    return (eval_input(t + INPUT_STEP, inp, a)[1] - eval_input(t - INPUT_STEP, inp, a)[1]) / (2 * INPUT_STEP)


@njit(cache=True)
def _capstan(p, cX, ps_seg, q):
    """Complex-step angle θ [rad] the path turns at pass-through node q (as kernels._capstan_excess)."""
    s = ps_seg[q]
    j0, k0, k1 = p.seg_j[s - 1], p.seg_k[s - 1], p.seg_k[s]
    a0, a1, a2 = cX[k0, 0] - cX[j0, 0], cX[k0, 1] - cX[j0, 1], cX[k0, 2] - cX[j0, 2]
    b0, b1, b2 = cX[k1, 0] - cX[k0, 0], cX[k1, 1] - cX[k0, 1], cX[k1, 2] - cX[k0, 2]
    c0, c1, c2 = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0
    return _dual_atan2(_dual_sqrt(c0 * c0 + c1 * c1 + c2 * c2), a0 * b0 + a1 * b1 + a2 * b2)


@njit(cache=True)
def _stage_cache(p, t, inp, X, ps_seg, cX, ucache, theta, grad):
    """Per stage, what every direction shares: each actuator's (u, u̇, ü) at t − delay (a delayed actuator
    holds u(0), rates 0, before its first command) and each pass-through node's turning angle θ with its
    gradient by the positions of its three nodes (grad (np, 3, 3), complex steps)."""
    for a in range(p.act_str.shape[0]):
        d = p.act_delay[a]
        if d > 0.0 and t < d:
            ucache[a, 0], ucache[a, 1], ucache[a, 2] = eval_input(0.0, inp, a)[0], 0.0, 0.0
        else:
            ucache[a, 0], ucache[a, 1] = eval_input(t - d, inp, a)
            ucache[a, 2] = _input_rate_slope(t - d, inp, a)
    if ps_seg.shape[0] == 0:
        return
    for i in range(p.n):
        for d in range(3):
            cX[i, d] = X[i, d]
    for q in range(ps_seg.shape[0]):
        s = ps_seg[q]
        nodes = (p.seg_j[s - 1], p.seg_k[s - 1], p.seg_k[s])
        theta[q] = _capstan(p, cX, ps_seg, q).real
        for m in range(3):
            i = nodes[m]
            for d in range(3):
                cX[i, d] = complex(X[i, d], EPS)
                grad[q, m, d] = _capstan(p, cX, ps_seg, q).imag / EPS
                cX[i, d] = X[i, d]


@njit(cache=True)
def _complex_tensions(p, cX, cXd, ucache, zeta, dpar, ddelay, cstr, cseg):
    """Complex-step string tensions (kernels.string_tensions): cstr rows L, Ld, rest, restd, T; cseg rows
    seglen, segd, Tseg. dpar rows: d EA, d k, d ζ, d rest per string; ucache (na, 3): each actuator's u, u̇
    and ü at the stage (:func:`_stage_cache`). Returns False if a rest length <= 0."""
    L, Ld, rest, restd, T = cstr[0], cstr[1], cstr[2], cstr[3], cstr[4]
    seglen, segd, Tseg = cseg[0], cseg[1], cseg[2]
    for c in range(p.str_rest.shape[0]):
        L[c] = 0.0
        Ld[c] = 0.0
        rest[c] = complex(p.str_rest[c], EPS * dpar[3, c])
        restd[c] = 0.0
    for a in range(p.act_str.shape[0]):
        u, ud, udd = ucache[a, 0], ucache[a, 1], ucache[a, 2]
        c = p.act_str[a]
        rest[c] -= complex(u, -EPS * ud * ddelay[a])
        restd[c] -= complex(ud, -EPS * udd * ddelay[a])
    for s in range(p.seg_j.shape[0]):
        j, k = p.seg_j[s], p.seg_k[s]
        d0, d1, d2 = cX[k, 0] - cX[j, 0], cX[k, 1] - cX[j, 1], cX[k, 2] - cX[j, 2]
        ln = _dual_sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        seglen[s] = ln
        c = p.seg_str[s]
        L[c] += ln
        segd[s] = 0.0
        if ln.real > 0.0:
            segd[s] = (d0 * (cXd[k, 0] - cXd[j, 0]) + d1 * (cXd[k, 1] - cXd[j, 1]) + d2 * (cXd[k, 2] - cXd[j, 2])) / ln
            Ld[c] += segd[s]
    for c in range(p.str_rest.shape[0]):
        r0 = rest[c]
        if r0.real <= 0.0:
            return False
        e = L[c] - r0
        T[c] = 0.0
        if e.real > 0.0:
            if p.str_ea_mode[c] == 1:
                kap = complex(p.str_ea[c], EPS * dpar[0, c]) / r0
            else:
                kap = complex(p.str_k[c], EPS * dpar[1, c])
            tc = kap * e + zeta * complex(p.str_zeta[c], EPS * dpar[2, c]) * (Ld[c] - restd[c])
            if tc.real > 0.0:
                T[c] = tc
    for s in range(p.seg_j.shape[0]):
        Tseg[s] = T[p.seg_str[s]]
    return True


@njit(cache=True)
def _complex_pulleys(p, dX, zeta, ps_str, ps_seg, ps_c, ps_mu, dps, cstr, cseg, ex, theta, grad):
    """Complex-step pulley friction (kernels._pulley_friction) over every pass-through node ``ps_*``
    (coefficient ps_c + iε dps): adds to the segment tensions cseg[2]; ``ex`` scratch (np,) complex; the turning
    angles θ and their gradients from :func:`_stage_cache`, along the position direction dX."""
    L, Ld, rest, T = cstr[0], cstr[1], cstr[2], cstr[4]
    seglen, segd, Tseg = cseg[0], cseg[1], cseg[2]
    seg0 = p.str_seg0
    npul = ps_str.shape[0]
    q0 = 0
    while q0 < npul:
        c = ps_str[q0]
        q1 = q0 + 1
        while q1 < npul and ps_str[q1] == c:
            q1 += 1
        if T[c].real > 0.0 and L[c].real > 0.0 and zeta > 0.0:
            tot = 1.0 + 0.0j
            for q in range(q0, q1):
                sq = ps_seg[q]
                dth = 0.0
                for m, i in enumerate((p.seg_j[sq - 1], p.seg_k[sq - 1], p.seg_k[sq])):
                    dth += grad[q, m, 0] * dX[i, 0] + grad[q, m, 1] * dX[i, 1] + grad[q, m, 2] * dX[i, 2]
                ex[q] = _dual_expm1(ps_mu[q] * complex(theta[q], EPS * dth))
                tot += ex[q]
            g = rest[c] / L[c]
            for q in range(q0, q1):
                fmax = T[c] * ex[q] / tot
                if not fmax.real > 0.0:
                    continue
                S = 0.0j
                Sd = 0.0j
                for s in range(seg0[c], ps_seg[q]):
                    S += seglen[s]
                    Sd += segd[s]
                R = L[c] - S
                v = (Sd * R - S * (Ld[c] - Sd)) / L[c]
                f = fmax * _dual_tanh(zeta * complex(ps_c[q], EPS * dps[q]) * g * g * v / fmax) / L[c]
                for s in range(seg0[c], ps_seg[q]):
                    Tseg[s] += f * R
                for s in range(ps_seg[q], seg0[c + 1]):
                    Tseg[s] -= f * S
        q0 = q1
    for s in range(Tseg.shape[0]):
        if Tseg[s].real < 0.0:
            Tseg[s] = 0.0


@njit(cache=True)
def _force_tangent(p, X, Xd, dX, dXd, ucache, zeta, dpar, ddelay, pul, dps, cX, cXd, cstr, cseg, ex, theta, grad,
                   dF):
    """dF (n×3) [N per unit θ]: the nodal forces' derivative along (dX, dXd, parameter direction)."""
    ps_str, ps_seg, ps_c, ps_mu = pul
    for i in range(p.n):
        for d in range(3):
            cX[i, d] = complex(X[i, d], EPS * dX[i, d])
            cXd[i, d] = complex(Xd[i, d], EPS * dXd[i, d])
    if not _complex_tensions(p, cX, cXd, ucache, zeta, dpar, ddelay, cstr, cseg):
        return False
    if ps_str.shape[0] > 0:
        _complex_pulleys(p, dX, zeta, ps_str, ps_seg, ps_c, ps_mu, dps, cstr, cseg, ex, theta, grad)
    for i in range(p.n):
        for d in range(3):
            dF[i, d] = 0.0
    seglen, Tseg = cseg[0], cseg[2]
    for s in range(p.seg_j.shape[0]):
        j, k = p.seg_j[s], p.seg_k[s]
        if seglen[s].real > 0.0:
            f = Tseg[s] / seglen[s]
            for d in range(3):
                fd = (f * (cX[k, d] - cX[j, d])).imag / EPS
                dF[j, d] += fd
                dF[k, d] -= fd
    return True


@njit(cache=True)
def _reduce(p, F, Fr):
    """Fr = Qᵀ F."""
    for c in range(p.r):
        for d in range(3):
            Fr[c, d] = 0.0
    for i in range(p.n):
        for kk in range(p.q_ptr[i], p.q_ptr[i + 1]):
            for d in range(3):
                Fr[p.q_idx[kk], d] += p.q_val[kk] * F[i, d]


@njit(cache=True)
def _bar_rhs(P, R, c, P2, R2, out):
    """out_b = −(P_b·R_b + c P2_b·R2_b) for (nb, 3) arrays (the right-hand sides of the bar systems)."""
    for b in range(P.shape[0]):
        out[b] = -(P[b, 0] * R[b, 0] + P[b, 1] * R[b, 1] + P[b, 2] * R[b, 2]
                   + c * (P2[b, 0] * R2[b, 0] + P2[b, 1] * R2[b, 1] + P2[b, 2] * R2[b, 2]))


@njit(cache=True)
def _bars_of(p, Z, Xs, Bs):
    """Bar vectors Bs of the free-coordinate field Z (a velocity-like field: no X0 offset)."""
    expand(p, Z, Xs, False)
    bar_vectors(p, Xs, Bs)


@njit(cache=True)
def _accel_tangent(p, w, Vs, dY, dV, Bdd, zeta, node_damp, dnd, dpar, ddelay, pul, dps, sc, out):
    """out = δŸ (r×3) along (dY, dV, a parameter direction) at the stage whose primal accel() just ran
    (w holds its X, Ẋ, B, Ḃ, λ and the factor of S; Bdd its bar accelerations). False if a rest length <= 0."""
    cX, cXd, cstr, cseg, dX, dXd, dF, dFr, dB, dBd, Xs, AZ, dlam, rhs, ex, ucache, theta, grad = sc
    expand(p, dY, dX, False)
    expand(p, dV, dXd, False)
    if not _force_tangent(p, w.X, w.Xd, dX, dXd, ucache, zeta, dpar, ddelay, pul, dps, cX, cXd, cstr, cseg, ex, theta,
                          grad, dF):
        return False
    _reduce(p, dF, dFr)
    free_accel(p, dFr, dV, node_damp, out)
    for i in range(p.r):
        for d in range(3):
            out[i, d] -= dnd * Vs[i, d]
    if p.bar_j.shape[0] == 0:
        return True
    bar_vectors(p, dX, dB)
    bar_vectors(p, dXd, dBd)
    add_bar_correction(p, w.lam, dB, out)              # the bar forces' turn with the bars: G (λ∘δB)
    _bars_of(p, out, Xs, AZ)
    _bar_rhs(dB, Bdd, 2.0, w.Bd, dBd, rhs)
    for b in range(rhs.shape[0]):
        rhs[b] -= w.B[b, 0] * AZ[b, 0] + w.B[b, 1] * AZ[b, 1] + w.B[b, 2] * AZ[b, 2]
    chol_subst(p, w.Lc, rhs, dlam)
    add_bar_correction(p, dlam, w.B, out)
    return True


@njit(cache=True)
def _project_tangent(p, w, dY, dV, sc):
    """Mass-weighted projection of (dY, dV) onto the tangent of the bar constraints at w.B, w.Bd (the factor
    of S at w.B in w.Lc): B·δB = 0 and δB·Ḃ + B·δḂ = 0."""
    dX, dB, dBd, dlam, rhs = sc[4], sc[8], sc[9], sc[12], sc[13]
    _bars_of(p, dY, dX, dB)
    _bar_rhs(w.B, dB, 0.0, w.B, dB, rhs)
    chol_subst(p, w.Lc, rhs, dlam)
    add_bar_correction(p, dlam, w.B, dY)
    _bars_of(p, dY, dX, dB)
    _bars_of(p, dV, dX, dBd)
    _bar_rhs(dB, w.Bd, 1.0, w.B, dBd, rhs)
    chol_subst(p, w.Lc, rhs, dlam)
    add_bar_correction(p, dlam, w.B, dV)


def scratch(p, n_pass: int):
    """Work arrays of :func:`rk4_sensitivities` for kernel parameters ``p`` and ``n_pass`` pass-through nodes."""
    n, r, nb = p.n, p.r, p.bar_len.shape[0]
    nc, ns = p.str_rest.shape[0], p.seg_j.shape[0]
    z, c = np.zeros, (lambda *s: np.zeros(s, np.complex128))
    return (c(n, 3), c(n, 3), c(5, nc), c(3, ns), z((n, 3)), z((n, 3)), z((n, 3)), z((r, 3)), z((nb, 3)),
            z((nb, 3)), z((n, 3)), z((nb, 3)), z(nb), z(nb), c(n_pass), z((p.act_str.shape[0], 3)), z(n_pass),
            z((n_pass, 3, 3)))


@njit(cache=True)
def rk4_sensitivities(p, w, t, Y, V, h, t_out, inp, Fext, zeta, node_damp, bar_tol, dpar, ddelay, dnd, pul, dps,
                      sc, o_X, o_S, SY, SV):
    """Integrate (Y, V) from t to each t_out[k] (equal RK4 substeps of at most h, projected) with the m
    tangent directions (rows of dpar (m, 4, nc): d EA, d k, d ζ, d rest per string; ddelay (m, na); dnd (m,)
    d structural damping; dps (m, np) d pulley coefficient of the pass-through nodes ``pul``). Records node
    positions o_X[k] (n×3) and their derivatives o_S[k, j] (n×3). SY, SV (m, r, 3): the directions' tangents of
    the free positions and velocities at t (zeros for a parameter; a unit vector for a start-state direction),
    advanced in place. Returns a kernel status (0 ok)."""
    m = dnd.shape[0]
    r = p.r
    SKY, SKV = np.zeros((4, m, r, 3)), np.zeros((4, m, r, 3))
    dYs, dVs = np.zeros((r, 3)), np.zeros((r, 3))
    Xs = np.zeros((p.n, 3))
    Bdd = np.zeros((p.bar_len.shape[0], 3))
    KY, KV, Ys, Vs = w.KY, w.KV, w.Ys, w.Vs
    for k in range(t_out.shape[0]):
        span = t_out[k] - t
        nsub = int(math.ceil(span / h - 1e-9)) if span > 0.0 else 0
        hh = span / nsub if nsub > 0 else 0.0
        for _ in range(nsub):
            for s in range(4):
                stage_state(_A, s, hh, Y, V, KY, KV, Ys, Vs)
                st = accel(p, t + _C[s] * hh, Ys, Vs, inp, Fext, zeta, node_damp, w, KV[s])
                if st != OK:
                    return st
                _bars_of(p, KV[s], Xs, Bdd)
                _stage_cache(p, t + _C[s] * hh, inp, w.X, pul[1], sc[0], sc[15], sc[16], sc[17])
                for j in range(m):
                    for i in range(r):
                        for d in range(3):
                            ay = 0.0
                            av = 0.0
                            for q in range(s):
                                ay += _A[s, q] * SKY[q, j, i, d]
                                av += _A[s, q] * SKV[q, j, i, d]
                            dYs[i, d] = SY[j, i, d] + hh * ay
                            dVs[i, d] = SV[j, i, d] + hh * av
                            SKY[s, j, i, d] = dVs[i, d]
                    if not _accel_tangent(p, w, Vs, dYs, dVs, Bdd, zeta, node_damp, dnd[j], dpar[j], ddelay[j], pul,
                                          dps[j], sc, SKV[s, j]):
                        return REST
            for i in range(r):
                for d in range(3):
                    Y[i, d] += hh * (_B[0] * KY[0, i, d] + _B[1] * KY[1, i, d] + _B[2] * KY[2, i, d]
                                     + _B[3] * KY[3, i, d])
                    V[i, d] += hh * (_B[0] * KV[0, i, d] + _B[1] * KV[1, i, d] + _B[2] * KV[2, i, d]
                                     + _B[3] * KV[3, i, d])
                    for j in range(m):
                        SY[j, i, d] += hh * (_B[0] * SKY[0, j, i, d] + _B[1] * SKY[1, j, i, d]
                                             + _B[2] * SKY[2, j, i, d] + _B[3] * SKY[3, j, i, d])
                        SV[j, i, d] += hh * (_B[0] * SKV[0, j, i, d] + _B[1] * SKV[1, j, i, d]
                                             + _B[2] * SKV[2, j, i, d] + _B[3] * SKV[3, j, i, d])
            t += hh
            st, _, _ = post_step(p, t, Y, V, w, bar_tol, flag(False))
            if st != OK:
                return st
            if p.bar_j.shape[0] > 0:
                expand(p, Y, w.X, True)
                expand(p, V, w.Xd, False)
                bar_vectors(p, w.X, w.B)
                bar_vectors(p, w.Xd, w.Bd)
                if not factor_bars(p, w.B, w):
                    return SINGULAR
                for j in range(m):
                    _project_tangent(p, w, SY[j], SV[j], sc)
        t = t_out[k]
        expand(p, Y, o_X[k], True)
        for j in range(m):
            expand(p, SY[j], o_S[k, j], False)
    return OK
