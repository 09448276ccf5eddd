"""Fixed-step RK4 with switching events (compiled; re-exported by :mod:`.kernels`).

A string's force is smooth only while it stays in one *mode*: slack (``e = L - ξ <= 0``), clamped (taut but
``κ e + ζ ė <= 0``, tension held at 0) or pulling. At a slack→taut switch of a damped string the force
jumps by ``ζ ė``; at its clamp the force's derivative jumps. A fixed step that straddles such a switch is
only first-order accurate there, so each step checks the damped strings' modes at its end (undamped
strings switch with a continuous force and are left to the step); if one changed, the step is redone up
to the switch, located by the Illinois (regula falsi) method on that string's event function (``e`` or
``κ e + ζ ė``) evaluated at the end of trial RK4 steps from the step's start, then the rest of the step
follows (more switches in it are handled the same way, at most ``MAX_EVENTS`` per step; beyond that, e.g.
a chattering string, the rest is taken as one step). The outputs and the nominal step are unchanged, so the
real-time node keeps its rate; a step without a switch is computed exactly as before.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .kernels_kkt import flag
from .kernels import (OK, _fill_stats, _post_step, _record, _stage_state, accel, expand,  # noqa: F401
                      string_tensions)

_RK4_A = np.array([[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 1.0]])
_RK4_B = np.array([1 / 6, 1 / 3, 1 / 3, 1 / 6])
_RK4_C = np.array([0.0, 0.5, 0.5, 1.0])
MAX_EVENTS = 4            # located switches per nominal step
EVENT_ITERATIONS = 40     # Illinois iterations at most per switch
EVENT_TOL = 1e-10         # switch located to this fraction of the step [s/s]


@njit(cache=True, _nrt=False)
def _rk4_step(p, t, hh, Y, V, inp, Fext, zeta_scale, node_damp, w):
    """One RK4 step of size hh in place (no projection). Returns a status."""
    KY, KV, Ys, Vs = w.KY, w.KV, w.Ys, w.Vs
    A, Bw, C = _RK4_A, _RK4_B, _RK4_C
    for s in range(4):
        _stage_state(A, s, hh, Y, V, KY, KV, Ys, Vs)
        st = accel(p, t + C[s] * hh, Ys, Vs, inp, Fext, zeta_scale, node_damp, w, KV[s])
        if st != OK:
            return st
    for i in range(Y.shape[0]):
        for d in range(3):
            Y[i, d] += hh * (Bw[0] * KY[0, i, d] + Bw[1] * KY[1, i, d] + Bw[2] * KY[2, i, d] + Bw[3] * KY[3, i, d])
            V[i, d] += hh * (Bw[0] * KV[0, i, d] + Bw[1] * KV[1, i, d] + Bw[2] * KV[2, i, d] + Bw[3] * KV[3, i, d])
    return OK


@njit(cache=True, _nrt=False)
def _copy(dst, src):
    for i in range(src.shape[0]):
        for d in range(3):
            dst[i, d] = src[i, d]


@njit(cache=True, inline="always", _nrt=False)
def _string_event(p, zeta_scale, w, c):
    """(e = L - ξ, κ e + ζ ė) of string c from the lengths string_tensions left in w."""
    r0 = w.rest[c]
    e = w.L[c] - r0
    kap = p.str_ea[c] / r0 if p.str_ea_mode[c] == 1 and r0 > 0.0 else p.str_k[c]
    return e, kap * e + zeta_scale * p.str_zeta[c] * (w.Ld[c] - w.restd[c])


@njit(cache=True, _nrt=False)
def _switch_functions(p, t, Y, V, inp, zeta_scale, w, g, gd):
    """g[c] = e = L - ξ and gd[c] = κ e + ζ ė (the tension before the clamp) of every string at (t, Y, V)."""
    expand(p, Y, w.X, True)
    expand(p, V, w.Xd, False)
    string_tensions(p, t, w.X, w.Xd, inp, zeta_scale, w)
    for c in range(g.shape[0]):
        g[c], gd[c] = _string_event(p, zeta_scale, w, c)


@njit(cache=True, inline="always", _nrt=False)
def _mode(e, f):
    """0 slack, 1 taut but clamped at zero tension, 2 pulling."""
    if e <= 0.0:
        return 0
    return 2 if f > 0.0 else 1


@njit(cache=True, _nrt=False)
def _event_value(g, gd, c, taut_switch):
    return g[c] if taut_switch else gd[c]


@njit(cache=True, _nrt=False)
def _first_switch(p, zeta_scale, g0, gd0, g1, gd1):
    """(string, its event is the slack/taut one) of the switch with the earliest linear estimate, or (-1, _).
    Only switches that make the force jump are located: slack/taut of a damped string (a jump of ζ ė) and
    the clamp of such a string; an undamped string's switch is a kink in a continuous force."""
    best, kind, tbest = -1, True, 2.0
    for c in range(g0.shape[0]):
        if zeta_scale * p.str_zeta[c] <= 0.0:
            continue
        m0, m1 = _mode(g0[c], gd0[c]), _mode(g1[c], gd1[c])
        if m0 == m1:
            continue
        taut = (m0 == 0) != (m1 == 0)
        a, b = (g0[c], g1[c]) if taut else (gd0[c], gd1[c])
        frac = a / (a - b) if a != b else 0.5
        if frac < tbest:
            best, kind, tbest = c, taut, frac
    return best, kind


@njit(cache=True, _nrt=False)
def _locate(p, t, hh, Y, V, inp, Fext, zeta_scale, node_damp, w, c, taut, fa, fb, g, gd):
    """Step size in (0, hh] just past the switch of string c (Illinois on its event function); leaves (Y, V)
    at that point (unprojected). Returns (step, status, evaluations)."""
    Y0, V0 = w.Y1, w.V1
    a, b = 0.0, hh
    side = 0
    evals = 0
    for _ in range(EVENT_ITERATIONS):
        if b - a <= EVENT_TOL * hh:
            break
        x = b - fb * (b - a) / (fb - fa) if fb != fa else 0.5 * (a + b)
        if not (a < x < b):
            x = 0.5 * (a + b)
        _copy(Y, Y0)
        _copy(V, V0)
        st = _rk4_step(p, t, x, Y, V, inp, Fext, zeta_scale, node_damp, w)
        evals += 4
        if st != OK:
            return x, st, evals
        _switch_functions(p, t + x, Y, V, inp, zeta_scale, w, g, gd)
        fx = _event_value(g, gd, c, taut)
        if (fx > 0.0) == (fb > 0.0):
            b, fb = x, fx
            if side == 1:
                fa *= 0.5
            side = 1
        else:
            a, fa = x, fx
            if side == -1:
                fb *= 0.5
            side = -1
    _copy(Y, Y0)
    _copy(V, V0)
    st = _rk4_step(p, t, b, Y, V, inp, Fext, zeta_scale, node_damp, w)
    return b, st, evals + 4


@njit(cache=True, _nrt=False)
def integrate_rk4(p, t, Y, V, h, t_out, inp, Fext, zeta_scale, node_damp, bar_tol, w,
                  o_X, o_Xd, o_T, o_L, o_u, o_lam, stats):
    """Classic RK4 with projection, equal substeps of at most ``h`` reaching each output time exactly, each
    split at the strings' switches (module docstring).

    ``stats`` (float64[7]) receives: t reached, steps, rhs evaluations, rejected steps (0), max drift,
    failing bar index; stats[6] the number of located switches. Returns a status code.
    """
    nc = p.str_rest.shape[0]
    g0, gd0, g1, gd1 = w.ev[0], w.ev[1], w.ev[2], w.ev[3]
    steps = 0
    evals = 0
    events = 0
    max_drift = 0.0
    st = OK
    idx = -1
    known = False             # g0/gd0 hold the switch functions at the current state (end of the last step)
    track = False             # only damped strings have switches worth locating
    if zeta_scale > 0.0:
        for c in range(nc):
            if p.str_zeta[c] > 0.0:
                track = True
    for k in range(t_out.shape[0]):
        span = t_out[k] - t
        nsub = int(math.ceil(span / h - 1e-9)) if span > 0.0 else 0
        hh = span / nsub if nsub > 0 else 0.0
        for _ in range(nsub):
            t_end = t + hh
            n_ev = 0
            while True:
                rem = t_end - t
                _copy(w.Y1, Y)
                _copy(w.V1, V)
                if track and not known:
                    _switch_functions(p, t, Y, V, inp, zeta_scale, w, g0, gd0)
                known = False
                st = _rk4_step(p, t, rem, Y, V, inp, Fext, zeta_scale, node_damp, w)
                evals += 4
                if st != OK:
                    break
                step = rem
                if track and n_ev < MAX_EVENTS:
                    _switch_functions(p, t + rem, Y, V, inp, zeta_scale, w, g1, gd1)
                    c, taut = _first_switch(p, zeta_scale, g0, gd0, g1, gd1)
                    if c >= 0:
                        fa = g0[c] if taut else gd0[c]
                        fb = g1[c] if taut else gd1[c]
                        step, st, ne = _locate(p, t, rem, Y, V, inp, Fext, zeta_scale, node_damp, w, c, taut,
                                               fa, fb, g1, gd1)
                        evals += ne
                        n_ev += 1
                        events += 1
                        if st != OK:
                            break
                    else:                # no switch: the end values start the next step (the projection
                        for c in range(nc):  # moves the state by ~1e-14 relative only)
                            g0[c] = g1[c]
                            gd0[c] = gd1[c]
                        known = True
                last = step >= rem
                t = t_end if last else t + step
                steps += 1
                st, drift, idx = _post_step(p, t, Y, V, w, bar_tol, flag(False))
                if drift > max_drift:
                    max_drift = drift
                if st != OK or last:
                    break
            if st != OK:
                break
        if st != OK:
            break
        t = t_out[k]
        _record(p, t, Y, V, inp, Fext, zeta_scale, node_damp, w, k, o_X, o_Xd, o_T, o_L, o_u, o_lam)
    _fill_stats(stats, t, steps, evals, 0, max_drift, idx)
    stats[6] = events
    return st
