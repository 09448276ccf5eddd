"""Compiled (numba) kernels: forces, constrained accelerations, projection and the two integrators.

Formulation (derived here; it is the manipulator paper's ``N̈M + NK = W + Fc`` with the linear
constraints eliminated exactly and the bar forces obtained from the acceleration-level constraints):

* free-node coordinates ``Y`` (r×3), node positions ``X = X0 + Q Y``, reduced mass ``Mr = Qᵀ M Q``;
* nodal forces ``F`` = composite-string tensions along each segment + gravity + external forces;
* unconstrained acceleration ``A0 = Mr⁻¹ Qᵀ F − c V`` (``c``: optional artificial node damping);
* bar force densities λ from ``b·b̈ = −|ḃ|²`` for every bar:
  ``S λ = −|ḃ|² − b·b̈0`` with ``S_bc = H_bc (b_b·b_c)``, ``H = Ab Mr⁻¹ Abᵀ``, ``Ab = Cb Q``;
* acceleration ``Ÿ = A0 + Σ_b G_b λ_b b_bᵀ`` with ``G = Mr⁻¹ Abᵀ``.

Composite string c with total length ``L_c`` and rest length ``ξ0_c = ξ00_c − Σ u_a`` (actuators reel in
``u``) carries one tension along its whole path:
``T_c = max(0, κ_c e_c + ζ_c ė_c)`` if ``e_c = L_c − ξ0_c > 0`` else 0, with ``κ_c = EA_c/ξ0_c`` (or a
given spring stiffness). So damping only acts while taut and never makes a string push. Optional
``pulley_damping`` (sliding friction where a path passes through a node: viscous, saturating smoothly at the
capstan limit e^(μθ) of the string's tension, :func:`_pulley_friction`) changes the tension segment by
segment; an actuator's ``delay`` makes its rest length follow u(t - delay).

After every step the state is projected back onto the bar-length manifold (mass-weighted Newton steps on
positions, then the exact velocity projection), so bar lengths hold to rounding error.
Status codes returned by the integrators: 0 ok, 1 non-finite state, 2 bar drift beyond tolerance,
3 step size underflow (adaptive), 4 non-positive rest length, 5 singular bar system,
6 step budget exhausted (adaptive).
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

from tensegrity_engine.dynamics.contact import contact_forces, update_anchors
from tensegrity_engine.dynamics.kernels_kkt import flag, kkt_factor, kkt_scatter, kkt_solve

Work = namedtuple("Work", ["X", "Xd", "F", "Fr", "A0", "u", "ud", "L", "Ld", "rest", "restd", "T",
                           "seglen", "B", "Bd", "bdd", "S", "Lc", "rhs", "lam", "KY", "KV", "Ys", "Vs",
                           "Y1", "V1", "err", "segd", "Tseg", "ev", "kx", "kL", "kD",
                           "cg", "cf", "cforce", "cpt", "cn", "anc", "anc_on"])

InputParams = namedtuple("InputParams", ["mode", "sin_par", "omega", "ramp", "start", "tab_t", "tab_u"])

OK, NONFINITE, DRIFT, UNDERFLOW, REST, SINGULAR, BUDGET = 0, 1, 2, 3, 4, 5, 6
SLIVER = 1e-6     # adaptive steps stretch by up to this fraction rather than leave a tiny rest of an interval


def make_work(p, n_act: int, stages: int = 7) -> Work:
    """Allocate the work buffers for a model's kernel parameters ``p``."""
    n, r = p.n, p.r
    nb, ns, nc = p.bar_len.shape[0], p.seg_j.shape[0], p.str_rest.shape[0]
    nh = p.H.shape[0]                  # the diagonal blocks of S, flat (Σ bars_k²)
    ncs = p.cs_ob.shape[0]             # contact slots (dynamics/contact.py)
    z = np.zeros
    return Work(z((n, 3)), z((n, 3)), z((n, 3)), z((r, 3)), z((r, 3)), z(n_act), z(n_act), z(nc), z(nc), z(nc),
                z(nc), z(nc), z(ns), z((nb, 3)), z((nb, 3)), z((nb, 3)), z(nh), z(nh), z(nb), z(nb),
                z((stages, r, 3)), z((stages, r, 3)), z((r, 3)), z((r, 3)), z((r, 3)), z((r, 3)), z(1), z(ns), z(ns),
                z((4, nc + ncs)), z(p.kv_c.shape[0]), z(p.kl_row.shape[0]), z(p.kv_c.shape[0]),
                z(ncs), z(ncs), z((ncs, 3)), z((ncs, 3)), z((ncs, 3)), z((ncs, 3)), z(ncs))


@njit(cache=True, inline="always", _nrt=False)
def eval_input(t, inp, a):
    """(u [m reeled in], u̇ [m/s]) of actuator ``a`` at time t [s]."""
    if inp.mode == 0:
        return 0.0, 0.0
    if inp.mode == 1:
        t = t - inp.start
        if t < 0.0:
            return inp.sin_par[a, 2], 0.0          # before start: the offset, whatever the ramp
        s, sd = 1.0, 0.0
        if inp.ramp > 0.0 and t < inp.ramp:
            if t <= 0.0:
                s = 0.0
            else:
                s = 0.5 * (1.0 - math.cos(math.pi * t / inp.ramp))
                sd = 0.5 * math.pi / inp.ramp * math.sin(math.pi * t / inp.ramp)
        amp, ph, off = inp.sin_par[a, 0], inp.sin_par[a, 1], inp.sin_par[a, 2]
        sn = math.sin(inp.omega * t + ph)
        cs = math.cos(inp.omega * t + ph)
        return off + s * amp * sn, sd * amp * sn + s * amp * inp.omega * cs
    tt = inp.tab_t
    m = tt.shape[0]
    if t <= tt[0]:
        return inp.tab_u[0, a], 0.0
    if t >= tt[m - 1]:
        return inp.tab_u[m - 1, a], 0.0
    lo, hi = 0, m - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if tt[mid] <= t:
            lo = mid
        else:
            hi = mid
    dt = tt[hi] - tt[lo]
    w = (t - tt[lo]) / dt
    return (1.0 - w) * inp.tab_u[lo, a] + w * inp.tab_u[hi, a], (inp.tab_u[hi, a] - inp.tab_u[lo, a]) / dt


@njit(cache=True, _nrt=False)
def eval_inputs(t, inp, u, ud, delay):
    """Rest-length inputs u [m reeled in] and their rates [m/s] of every actuator at t - delay[a] [s]; a
    delayed actuator holds the schedule's t = 0 value (rate 0) until its first command arrives at t = delay."""
    for a in range(u.shape[0]):
        if delay[a] > 0.0 and t < delay[a]:
            u[a] = eval_input(0.0, inp, a)[0]
            ud[a] = 0.0
        else:
            u[a], ud[a] = eval_input(t - delay[a], inp, a)


@njit(cache=True, _nrt=False)
def expand(p, Y, X, with_offset):
    """X = X0 + Q Y (positions) or Q Y (velocities, ``with_offset`` False)."""
    X0, q_ptr, q_idx, q_val = p.X0, p.q_ptr, p.q_idx, p.q_val
    for i in range(p.n):
        x0 = X0[i, 0] if with_offset else 0.0
        x1 = X0[i, 1] if with_offset else 0.0
        x2 = X0[i, 2] if with_offset else 0.0
        for kk in range(q_ptr[i], q_ptr[i + 1]):
            c = q_idx[kk]
            v = q_val[kk]
            x0 += v * Y[c, 0]
            x1 += v * Y[c, 1]
            x2 += v * Y[c, 2]
        X[i, 0] = x0
        X[i, 1] = x1
        X[i, 2] = x2


@njit(cache=True, inline="always", _nrt=False)
def _chol_factor(p, S, Lc):
    """Cholesky factors of the diagonal blocks of S (block k: the bars of component k, stored row-major
    from hb_ptr[k]) into Lc (same layout); the diagonal holds the reciprocals 1/L_ii (multiplications
    instead of divisions in the hot loops). Returns False if a block is not positive definite."""
    for blk in range(p.bb_ptr.shape[0] - 1):
        m = p.bb_ptr[blk + 1] - p.bb_ptr[blk]
        o = p.hb_ptr[blk]
        for i in range(m):
            for j in range(i + 1):
                s = S[o + i * m + j]
                for k in range(j):
                    s -= Lc[o + i * m + k] * Lc[o + j * m + k]
                if i == j:
                    if s <= 0.0:
                        return False
                    Lc[o + i * m + i] = 1.0 / math.sqrt(s)
                else:
                    Lc[o + i * m + j] = s * Lc[o + j * m + j]
    return True


@njit(cache=True, inline="always", _nrt=False)
def chol_subst(p, Lc, b, x):
    """Solve L Lᵀ x = b block by block with the factors from _chol_factor (bars in b_idx order)."""
    bi = p.b_idx
    for blk in range(p.bb_ptr.shape[0] - 1):
        b0 = p.bb_ptr[blk]
        m = p.bb_ptr[blk + 1] - b0
        o = p.hb_ptr[blk]
        for i in range(m):
            s = b[bi[b0 + i]]
            for k in range(i):
                s -= Lc[o + i * m + k] * x[bi[b0 + k]]
            x[bi[b0 + i]] = s * Lc[o + i * m + i]
        for i in range(m - 1, -1, -1):
            s = x[bi[b0 + i]]
            for k in range(i + 1, m):
                s -= Lc[o + k * m + i] * x[bi[b0 + k]]
            x[bi[b0 + i]] = s * Lc[o + i * m + i]


@njit(cache=True, inline="always", _nrt=False)
def _chol_solve(p, S, b, x, Lc):
    """Solve S x = b for the block-diagonal SPD S (Cholesky per block). Returns False if not SPD."""
    if not _chol_factor(p, S, Lc):
        return False
    chol_subst(p, Lc, b, x)
    return True


@njit(cache=True, _nrt=False)
def bar_vectors(p, X, B):
    bj, bk = p.bar_j, p.bar_k
    for b in range(bj.shape[0]):
        j, k = bj[b], bk[b]
        for d in range(3):
            B[b, d] = X[j, d] - X[k, d]


@njit(cache=True, inline="always", _nrt=False)
def _build_S(p, B, S):
    """Diagonal blocks of S = H∘(B Bᵀ): bars of different components do not couple (H is zero there)."""
    bi = p.b_idx
    for blk in range(p.bb_ptr.shape[0] - 1):
        b0 = p.bb_ptr[blk]
        m = p.bb_ptr[blk + 1] - b0
        o = p.hb_ptr[blk]
        for i in range(m):
            b = bi[b0 + i]
            for j in range(i + 1):
                c = bi[b0 + j]
                v = p.H[o + i * m + j] * (B[b, 0] * B[c, 0] + B[b, 1] * B[c, 1] + B[b, 2] * B[c, 2])
                S[o + i * m + j] = v
                S[o + j * m + i] = v


@njit(cache=True, inline="always", _nrt=False)
def add_bar_correction(p, coef, B, Z):
    """Z += G coef B, block by block (G = Mr⁻¹ Abᵀ is zero between components; Z is r×3)."""
    bi, ci = p.b_idx, p.c_idx
    for blk in range(p.cb_ptr.shape[0] - 1):
        c0 = p.cb_ptr[blk]
        mc = p.cb_ptr[blk + 1] - c0
        b0 = p.bb_ptr[blk]
        mb = p.bb_ptr[blk + 1] - b0
        o = p.gb_ptr[blk]
        for ii in range(mc):
            z0 = 0.0
            z1 = 0.0
            z2 = 0.0
            for jj in range(mb):
                b = bi[b0 + jj]
                g = p.G[o + ii * mb + jj] * coef[b]
                z0 += g * B[b, 0]
                z1 += g * B[b, 1]
                z2 += g * B[b, 2]
            i = ci[c0 + ii]
            Z[i, 0] += z0
            Z[i, 1] += z1
            Z[i, 2] += z2


@njit(cache=True, _nrt=False)
def string_tensions(p, t, X, Xd, inp, zeta_scale, w):
    """Fill w.T (tension [N]), w.L, w.Ld, w.rest, w.restd, w.seglen. Returns 0 or -(string+1) if rest <= 0."""
    L, Ld, rest, restd, T, seglen, segd, u, ud = w.L, w.Ld, w.rest, w.restd, w.T, w.seglen, w.segd, w.u, w.ud
    str_rest, act_str, seg_j, seg_k, seg_str = p.str_rest, p.act_str, p.seg_j, p.seg_k, p.seg_str
    str_ea, str_k, str_zeta, ea_mode = p.str_ea, p.str_k, p.str_zeta, p.str_ea_mode
    nc = str_rest.shape[0]
    ns = seg_j.shape[0]
    eval_inputs(t, inp, u, ud, p.act_delay)
    for c in range(nc):
        L[c] = 0.0
        Ld[c] = 0.0
        rest[c] = str_rest[c]
        restd[c] = 0.0
    for a in range(u.shape[0]):
        c = act_str[a]
        rest[c] -= u[a]
        restd[c] -= ud[a]
    for s in range(ns):
        j, k = seg_j[s], seg_k[s]
        d0 = X[k, 0] - X[j, 0]
        d1 = X[k, 1] - X[j, 1]
        d2 = X[k, 2] - X[j, 2]
        ln = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        seglen[s] = ln
        c = seg_str[s]
        L[c] += ln
        segd[s] = 0.0
        if ln > 0.0:
            segd[s] = (d0 * (Xd[k, 0] - Xd[j, 0]) + d1 * (Xd[k, 1] - Xd[j, 1]) + d2 * (Xd[k, 2] - Xd[j, 2])) / ln
            Ld[c] += segd[s]
    bad = 0
    for c in range(nc):
        r0 = rest[c]
        if r0 <= 0.0:
            bad = -(c + 1)
            T[c] = 0.0
            continue
        e = L[c] - r0
        if e > 0.0:
            kap = str_ea[c] / r0 if ea_mode[c] == 1 else str_k[c]
            tc = kap * e + zeta_scale * str_zeta[c] * (Ld[c] - restd[c])
            T[c] = tc if tc > 0.0 else 0.0
        else:
            T[c] = 0.0
    for s in range(ns):
        w.Tseg[s] = T[seg_str[s]]
    if p.pul_str.shape[0] > 0:
        _pulley_friction(p, X, zeta_scale, w)
    return bad


@njit(cache=True, _nrt=False)
def _capstan_excess(p, X, q):
    """e^(μθ) − 1 at pass-through node q: θ [rad] is the angle the path turns there (0 straight through)."""
    s = p.pul_seg[q]
    j0, k0, k1 = p.seg_j[s - 1], p.seg_k[s - 1], p.seg_k[s]      # path ... j0 → k0 (the node) → k1 ...
    a0, a1, a2 = X[k0, 0] - X[j0, 0], X[k0, 1] - X[j0, 1], X[k0, 2] - X[j0, 2]
    b0, b1, b2 = X[k1, 0] - X[k0, 0], X[k1, 1] - X[k0, 1], X[k1, 2] - X[k0, 2]
    c0, c1, c2 = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0
    theta = math.atan2(math.sqrt(c0 * c0 + c1 * c1 + c2 * c2), a0 * b0 + a1 * b1 + a2 * b2)
    return math.expm1(p.pul_mu[q] * theta)


@njit(cache=True, _nrt=False)
def _pulley_friction(p, X, zeta_scale, w):
    """Add sliding friction at pass-through nodes to the segment tensions w.Tseg [N] (positions X).

    With uniform strain, the string's material point at a pass-through node sits at unstretched arc length
    ``σ = ξ S / L`` from the path's start (``S`` the path length before the node, ``R = L - S`` after it,
    ``ξ`` the rest length); it slides over the node at ``v = σ̇ L/ξ = (Ṡ R − S Ṙ)/L`` [m/s] (σ̇ at fixed ξ).
    A friction force F at the node is the generalised force of a tension change ``+F R/L`` on every segment
    before the node and ``−F S/L`` after it: the tensions either side differ by exactly F (the other nodes
    shift both sides alike) and the friction's power is ``−F v``.

    The law is the viscous one, ``c (ξ/L)² v`` (Rayleigh dissipation ``c σ̇²/2``), saturated smoothly at the
    capstan limit::

        F = Fmax tanh(c (ξ/L)² v / Fmax),   Fmax = T (e^(μθ) − 1) / (1 + Σ_p (e^(μθ_p) − 1))

    (θ the angle the path turns at the node, μ the string's ``pulley_friction_coefficient``, the sum over the
    string's pass-through nodes, T the string's tension). Why this form:

    * bounded by the tension: every segment keeps at least ``T / (1 + Σ_p (e^(μθ_p) − 1))`` (each node shifts
      a segment by at most |F|), so across each node ``T_hi − T_lo = |F| < (e^(μθ) − 1) T_lo``: the two
      sides stay within the capstan ratio e^(μθ) whatever the string's other nodes do (for a single node this
      level is the capstan limit itself as the node nears the string's end, and a factor ≤ e^(μθ) below it
      elsewhere), segment tensions stay positive without a clamp, and a slack string (T = 0) transmits
      nothing;
    * continuous in the state: |F| <= Fmax -> 0 as T -> 0, so an undamped string's slack->taut switch stays
      force-continuous and a damped string's force jumps only by its own ζ ė (located by the integrators);
      F is Lipschitz in T and v (|∂F/∂v| <= c (ξ/L)², |∂F/∂Fmax| <= 1), so it adds no stiffness beyond the
      viscous law's and no discontinuity the adaptive integrator would have to find;
    * dissipative: F v >= 0, so the friction's power ``−Σ F v`` never adds energy;
    * where c v << Fmax (a well-taut string sliding slowly) it is the viscous law to O((c v/Fmax)²).

    ``zeta_scale`` (0 or 1) switches it with the string damping.
    """
    seglen, segd, L, Ld, rest, T, Tseg = w.seglen, w.segd, w.L, w.Ld, w.rest, w.T, w.Tseg
    seg0, pul_str, pul_seg = p.str_seg0, p.pul_str, p.pul_seg
    npul = pul_str.shape[0]
    q0 = 0
    while q0 < npul:                         # a string's pass-through nodes are consecutive
        c = pul_str[q0]
        q1 = q0 + 1
        while q1 < npul and pul_str[q1] == c:
            q1 += 1
        if T[c] > 0.0 and L[c] > 0.0 and zeta_scale > 0.0:
            tot = 1.0
            for q in range(q0, q1):
                tot += _capstan_excess(p, X, q)
            g = rest[c] / L[c]
            for q in range(q0, q1):
                fmax = T[c] * _capstan_excess(p, X, q) / tot
                if not fmax > 0.0:
                    continue
                S = 0.0
                Sd = 0.0
                for s in range(seg0[c], pul_seg[q]):
                    S += seglen[s]
                    Sd += segd[s]
                R = L[c] - S
                v = (Sd * R - S * (Ld[c] - Sd)) / L[c]
                f = fmax * math.tanh(zeta_scale * p.pul_c[q] * g * g * v / fmax) / L[c]
                for s in range(seg0[c], pul_seg[q]):
                    Tseg[s] += f * R
                for s in range(pul_seg[q], seg0[c + 1]):
                    Tseg[s] -= f * S
        q0 = q1
    for s in range(Tseg.shape[0]):           # never active (see above); guards rounding
        if Tseg[s] < 0.0:
            Tseg[s] = 0.0


@njit(cache=True, _nrt=False)
def _support_forces(p, X, Xd, zeta_scale, F):
    """Add the compliant supports' forces [N] to F at positions X, velocities Xd (laws and derivation in
    :mod:`.supports`). Translational (sup_nodes[s] = (i, -1), anchor sup_ref[s]): −k (x_i − a) − c ẋ_i.
    Rotational (sup_nodes[s] = (a, b), unit rest direction r): on b the force
    (k (r − (e·r) e) − c ė) / l, on a its opposite (a couple). ``zeta_scale`` (0 or 1) switches the damping
    with the string damping."""
    nodes, k, ref = p.sup_nodes, p.sup_k, p.sup_ref
    for s in range(k.shape[0]):
        a, b = nodes[s, 0], nodes[s, 1]
        c = zeta_scale * p.sup_c[s]
        if b < 0:
            for d in range(3):
                F[a, d] -= k[s] * (X[a, d] - ref[s, d]) + c * Xd[a, d]
            continue
        d0, d1, d2 = X[b, 0] - X[a, 0], X[b, 1] - X[a, 1], X[b, 2] - X[a, 2]
        ln = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        e0, e1, e2 = d0 / ln, d1 / ln, d2 / ln
        v0, v1, v2 = Xd[b, 0] - Xd[a, 0], Xd[b, 1] - Xd[a, 1], Xd[b, 2] - Xd[a, 2]
        er = e0 * ref[s, 0] + e1 * ref[s, 1] + e2 * ref[s, 2]
        ev = e0 * v0 + e1 * v1 + e2 * v2
        f0 = (k[s] * (ref[s, 0] - er * e0) - c * (v0 - ev * e0) / ln) / ln
        f1 = (k[s] * (ref[s, 1] - er * e1) - c * (v1 - ev * e1) / ln) / ln
        f2 = (k[s] * (ref[s, 2] - er * e2) - c * (v2 - ev * e2) / ln) / ln
        F[b, 0] += f0
        F[b, 1] += f1
        F[b, 2] += f2
        F[a, 0] -= f0
        F[a, 1] -= f1
        F[a, 2] -= f2


@njit(cache=True, inline="always", _nrt=False)
def _reduced_forces(p, X, Fext, zeta_scale, w):
    """Nodal forces w.F = gravity + external forces + supports + segment tensions (positions X, tensions
    w.Tseg) + contact forces (velocities w.Xd), and their reduction onto the free coordinates w.Fr = Qᵀ F."""
    F, Fr, seglen = w.F, w.Fr, w.seglen
    Wg, seg_j, seg_k, q_ptr, q_idx, q_val = p.Wg, p.seg_j, p.seg_k, p.q_ptr, p.q_idx, p.q_val
    n = p.n
    for i in range(n):
        for d in range(3):
            F[i, d] = Wg[i, d] + Fext[i, d]
    if p.sup_k.shape[0] > 0:
        _support_forces(p, X, w.Xd, zeta_scale, F)
    for s in range(seg_j.shape[0]):
        j, k = seg_j[s], seg_k[s]
        ln = seglen[s]
        if ln > 0.0:
            f = w.Tseg[s] / ln
            for d in range(3):
                fd = f * (X[k, d] - X[j, d])
                F[j, d] += fd
                F[k, d] -= fd
    if p.cs_ob.shape[0] > 0:
        contact_forces(p, X, w.Xd, w, F)
    # Fr = Q^T F
    for c in range(p.r):
        for d in range(3):
            Fr[c, d] = 0.0
    for i in range(n):
        for kk in range(q_ptr[i], q_ptr[i + 1]):
            c = q_idx[kk]
            v = q_val[kk]
            for d in range(3):
                Fr[c, d] += v * F[i, d]


@njit(cache=True, inline="always", _nrt=False)
def free_accel(p, Fr, V, node_damp, out):
    """Unconstrained accelerations out = Mr⁻¹ Fr − c V, block by block (Mr⁻¹ is zero between components)."""
    Minv, ci = p.Minv, p.c_idx
    for blk in range(p.cb_ptr.shape[0] - 1):
        c0 = p.cb_ptr[blk]
        mc = p.cb_ptr[blk + 1] - c0
        o = p.mb_ptr[blk]
        for ii in range(mc):
            a0 = 0.0
            a1 = 0.0
            a2 = 0.0
            for jj in range(mc):
                m = Minv[o + ii * mc + jj]
                c = ci[c0 + jj]
                a0 += m * Fr[c, 0]
                a1 += m * Fr[c, 1]
                a2 += m * Fr[c, 2]
            i = ci[c0 + ii]
            out[i, 0] = a0 - node_damp * V[i, 0]
            out[i, 1] = a1 - node_damp * V[i, 1]
            out[i, 2] = a2 - node_damp * V[i, 2]


@njit(cache=True, inline="always", _nrt=False)
def _dense_bar_rhs(p, A0, B, Bd, rhs):
    """rhs_b = −|ḃ|² − b·b̈0 for the bars of the dense blocks, b̈0 = (Q[j] − Q[k]) A0 the bar's acceleration
    without bar forces (the sparse KKT bars are skipped)."""
    bar_j, bar_k, q_ptr, q_idx, q_val = p.bar_j, p.bar_k, p.q_ptr, p.q_idx, p.q_val
    for b in range(bar_j.shape[0]):
        if p.bar_sp[b]:             # solved with the sparse KKT system
            continue
        j, k = bar_j[b], bar_k[b]
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        for kk in range(q_ptr[j], q_ptr[j + 1]):
            c = q_idx[kk]
            v = q_val[kk]
            s0 += v * A0[c, 0]
            s1 += v * A0[c, 1]
            s2 += v * A0[c, 2]
        for kk in range(q_ptr[k], q_ptr[k + 1]):
            c = q_idx[kk]
            v = q_val[kk]
            s0 -= v * A0[c, 0]
            s1 -= v * A0[c, 1]
            s2 -= v * A0[c, 2]
        rhs[b] = -(Bd[b, 0] * Bd[b, 0] + Bd[b, 1] * Bd[b, 1] + Bd[b, 2] * Bd[b, 2]) \
            - (B[b, 0] * s0 + B[b, 1] * s1 + B[b, 2] * s2)


@njit(cache=True, inline="always", _nrt=False)
def _sparse_bar_accel(p, V, node_damp, w, out):
    """The bars of the large components with shared joints: the sparse KKT system
    M Ÿ' + Jᵀ y = Qᵀ F, J Ÿ' = −|ḃ|² + c b·ḃ, its accelerations into ``out``. Returns False if singular."""
    B, Bd, rhs = w.B, w.Bd, w.rhs
    for b in range(p.bar_j.shape[0]):
        if p.bar_sp[b]:
            rhs[b] = -(Bd[b, 0] * Bd[b, 0] + Bd[b, 1] * Bd[b, 1] + Bd[b, 2] * Bd[b, 2]) \
                + node_damp * (B[b, 0] * Bd[b, 0] + B[b, 1] * Bd[b, 1] + B[b, 2] * Bd[b, 2])
    if not kkt_factor(p, B, w):
        return False
    kkt_solve(p, w, w.Fr, flag(True), rhs)
    kkt_scatter(p, w, w.lam, out, flag(False), node_damp, V)
    return True


@njit(cache=True, _nrt=False)
def accel(p, t, Y, V, inp, Fext, zeta_scale, node_damp, w, out):
    """Constrained accelerations Ÿ (r×3) into ``out``; bar force densities into w.lam. Returns a status.

    Steps: node states and string tensions, forces reduced to the free coordinates, their accelerations
    without bar forces, then the bar forces: dense blocks (Cholesky of S) and the sparse KKT part."""
    X, Xd, B, Bd = w.X, w.Xd, w.B, w.Bd
    expand(p, Y, X, True)
    expand(p, V, Xd, False)
    bad = string_tensions(p, t, X, Xd, inp, zeta_scale, w)
    if bad < 0:
        return REST
    _reduced_forces(p, X, Fext, zeta_scale, w)
    free_accel(p, w.Fr, V, node_damp, out)
    if p.bar_j.shape[0] == 0:
        return OK
    bar_vectors(p, X, B)
    bar_vectors(p, Xd, Bd)
    _dense_bar_rhs(p, out, B, Bd, w.rhs)
    _build_S(p, B, w.S)
    if not _chol_solve(p, w.S, w.rhs, w.lam, w.Lc):
        return SINGULAR
    add_bar_correction(p, w.lam, B, out)
    if p.kv_c.shape[0] == 0:
        return OK
    if not _sparse_bar_accel(p, V, node_damp, w, out):
        return SINGULAR
    return OK


@njit(cache=True, _nrt=False)
def factor_bars(p, B, w):
    """Factor the bar system at bar vectors B: dense blocks (Cholesky of S) and the sparse KKT part."""
    _build_S(p, B, w.S)
    if not _chol_factor(p, w.S, w.Lc):
        return False
    return p.kv_c.shape[0] == 0 or kkt_factor(p, B, w)


@njit(cache=True, _nrt=False)
def _solve_bars(p, B, w, Z):
    """Z += Mr⁻¹ Jᵀ λ with J Mr⁻¹ Jᵀ λ = w.rhs (the factor from factor_bars); λ into w.lam."""
    chol_subst(p, w.Lc, w.rhs, w.lam)
    add_bar_correction(p, w.lam, B, Z)
    if p.kv_c.shape[0] > 0:
        kkt_solve(p, w, Z, flag(False), w.rhs)
        kkt_scatter(p, w, w.lam, Z, flag(True), 0.0, Z)


@njit(cache=True, _nrt=False)
def project(p, Y, V, w, have_factor):
    """Project (Y, V) onto the bar-length manifold. Returns (status, max relative bar error before).

    Positions: mass-weighted Newton (chord) iterations on g_b = (|b|² − l²)/2 = 0 with the factor of
    S = H∘(B Bᵀ) taken once at the pre-projection bars (the drift after a step is ~1e-10, so the
    chord iteration converges in one or two steps). Velocities: the exact mass-weighted projection
    onto b·ḃ = 0 with the same factor (S changes by O(drift), far below the velocity residual scale).
    ``have_factor``: w.Lc already holds the factor at the current positions (last Runge-Kutta stage).
    """
    X, Xd, B, Bd, rhs, lam = w.X, w.Xd, w.B, w.Bd, w.rhs, w.lam
    bar_len = p.bar_len
    nb = bar_len.shape[0]
    if nb == 0:
        return OK, 0.0
    drift = 0.0
    factored = have_factor
    for it in range(8):
        expand(p, Y, X, True)
        bar_vectors(p, X, B)
        worst = 0.0
        for b in range(nb):
            l2 = bar_len[b] * bar_len[b]
            g = 0.5 * (B[b, 0] ** 2 + B[b, 1] ** 2 + B[b, 2] ** 2 - l2)
            rhs[b] = -g
            e = abs(g) / l2
            if e > worst:
                worst = e
        if it == 0:
            drift = worst
        if worst < 1e-15:      # relative length error ~1e-15: rounding level
            break
        if not factored:
            if not factor_bars(p, B, w):
                return SINGULAR, drift
            factored = True
        _solve_bars(p, B, w, Y)
    if not factored:
        if not factor_bars(p, B, w):
            return SINGULAR, drift
    expand(p, V, Xd, False)
    bar_vectors(p, Xd, Bd)
    for b in range(nb):
        rhs[b] = -(B[b, 0] * Bd[b, 0] + B[b, 1] * Bd[b, 1] + B[b, 2] * Bd[b, 2])
    _solve_bars(p, B, w, V)
    return OK, drift


@njit(cache=True, inline="always", _nrt=False)
def _finite(Y, V):
    for i in range(Y.shape[0]):
        for d in range(3):
            if not (math.isfinite(Y[i, d]) and math.isfinite(V[i, d])):
                return False
    return True


@njit(cache=True, inline="always", _nrt=False)
def _worst_bar(p, w):
    worst, wb = -1.0, 0
    for b in range(p.bar_len.shape[0]):
        e = abs(math.sqrt(w.B[b, 0] ** 2 + w.B[b, 1] ** 2 + w.B[b, 2] ** 2) - p.bar_len[b])
        if e > worst:
            worst, wb = e, b
    return wb


@njit(cache=True, _nrt=False)
def record_sample(p, t, Y, V, inp, Fext, zeta_scale, node_damp, w, k, o_X, o_Xd, o_T, o_L, o_u, o_lam):
    st = accel(p, t, Y, V, inp, Fext, zeta_scale, node_damp, w, w.A0)
    for i in range(p.n):
        for d in range(3):
            o_X[k, i, d] = w.X[i, d]
            o_Xd[k, i, d] = w.Xd[i, d]
    for c in range(p.str_rest.shape[0]):
        o_T[k, c] = w.T[c]
        o_L[k, c] = w.L[c]
    for a in range(w.u.shape[0]):
        o_u[k, a] = w.u[a]
    for b in range(p.bar_len.shape[0]):
        o_lam[k, b] = w.lam[b] * p.bar_len[b]
    return st


@njit(cache=True, _nrt=False)
def post_step(p, t, Y, V, w, bar_tol, have_factor):
    """Finite check and projection after a step. Returns (status, drift, index)."""
    if not _finite(Y, V):
        return NONFINITE, 0.0, -1
    st, drift = project(p, Y, V, w, have_factor)
    if st != OK:
        return st, drift, -1
    if p.cs_ob.shape[0] > 0:           # friction anchors follow the accepted state (dynamics/contact.py)
        expand(p, Y, w.X, True)
        expand(p, V, w.Xd, False)
        update_anchors(p, w.X, w.Xd, w)
    if drift > bar_tol:
        expand(p, Y, w.X, True)
        bar_vectors(p, w.X, w.B)
        return DRIFT, drift, _worst_bar(p, w)
    return OK, drift, -1


@njit(cache=True, _nrt=False)
def stage_state(A, s, hh, Y, V, KY, KV, Ys, Vs):
    """Runge-Kutta stage s: Ys = Y + h Σ a_sq KY_q, Vs = V + h Σ a_sq KV_q; KY_s = Vs."""
    for i in range(Y.shape[0]):
        for d in range(3):
            ay = 0.0
            av = 0.0
            for q in range(s):
                a = A[s, q]
                if a != 0.0:
                    ay += a * KY[q, i, d]
                    av += a * KV[q, i, d]
            Ys[i, d] = Y[i, d] + hh * ay
            Vs[i, d] = V[i, d] + hh * av
            KY[s, i, d] = Vs[i, d]


@njit(cache=True, _nrt=False)
def fill_stats(stats, t, steps, evals, rejected, drift, idx):
    stats[0] = t
    stats[1] = steps
    stats[2] = evals
    stats[3] = rejected
    stats[4] = drift
    stats[5] = idx
