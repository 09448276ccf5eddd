"""Fixed-step RK4 with switching events (compiled; re-exported by :mod:`.kernels`).

A string's force is smooth only while it stays in one *mode*: slack (``e = L - ξ <= 0``), clamped (taut but
``κ e + ζ ė <= 0``, tension held at 0) or pulling. When a damped string starts pulling from slack the
force jumps by ``ζ ė``; at its clamp the force's derivative jumps (slack <-> clamped changes nothing). A
fixed step that straddles such a switch is only first-order accurate there, so each step checks the damped
strings' modes at its end (undamped strings switch with a continuous force and are left to the step); if
one started or stopped pulling, the step is redone in pieces (:func:`_locate`):

* the switch is bracketed by the Illinois (regula falsi) method on that string's event function (``e``
  from slack, else ``κ e + ζ ė``) evaluated at the end of trial RK4 steps from the step's start, to
  ``EVENT_TOL`` of the step (if another string turns out to switch first, that one is located instead);
* the piece taken ends *before* the switch with every stage state in the old modes (*clean*): a step
  ending right at the switch may still have its last stage state, ``O(h³)`` off the end, past it, and that
  stage (weight 1/6) would add an error of ``h ζ ė / 6`` per switch. The end of the bracket is tried
  first, then steps a margin shorter (``CROSS / 2`` of the step, growing 4x);
* a clean piece within ``CROSS`` steps of the switch is followed by a second-order Taylor step with the
  acceleration at its end (the old mode's) across it, ending ``EVENT_TOL`` past it (local error ~ d² in
  the velocity, d <= CROSS h); a clean piece further off is taken alone and the next, shorter piece
  locates the switch again with less room;
* the rest of the step then follows in the new mode, with more switches handled the same way, at most
  ``MAX_EVENTS`` located pieces per step (beyond that, e.g. a chattering string, the rest is taken as one
  step).

The outputs and the nominal step are unchanged, so the real-time node keeps its rate; a step without a
switch is computed exactly as before (bit for bit).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from tensegrity_engine.dynamics.contact import contact_forces
from tensegrity_engine.dynamics.kernels_kkt import flag
from tensegrity_engine.dynamics.kernels import (OK, accel, expand, fill_stats, post_step,  # noqa: F401
                                                record_sample, stage_state, string_tensions)

_RK4_A = np.array([[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 1.0]])
_RK4_B = np.array([1 / 6, 1 / 3, 1 / 3, 1 / 6])
_RK4_C = np.array([0.0, 0.5, 0.5, 1.0])
MAX_EVENTS = 4            # located pieces per nominal step
EVENT_ITERATIONS = 40     # Illinois iterations at most per switch
EVENT_TOL = 1e-10         # switch located to this fraction of the step [s/s]
CROSS = 1e-4              # a switch is crossed by a Taylor step of at most this fraction of the step


@njit(cache=True, _nrt=False)
def _rk4_step(p, t, hh, Y, V, inp, Fext, zeta_scale, node_damp, w, g0, gd0, check):
    """One RK4 step of size hh in place (no projection). Returns (status, clean): with ``check``, clean is
    whether every stage state leaves each damped string pulling or not as at the start (g0, gd0: its event
    values there); without, the step is the plain one and clean is True."""
    KY, KV, Ys, Vs = w.KY, w.KV, w.Ys, w.Vs
    A, Bw, C = _RK4_A, _RK4_B, _RK4_C
    clean = True
    for s in range(4):
        stage_state(A, s, hh, Y, V, KY, KV, Ys, Vs)
        st = accel(p, t + C[s] * hh, Ys, Vs, inp, Fext, zeta_scale, node_damp, w, KV[s])
        if st != OK:
            return st, False
        if check and s > 0 and clean:      # the lengths (and contact depths) of this stage's state are in w
            for c in range(g0.shape[0]):
                if located(p, zeta_scale, c):
                    e, f = element_event(p, zeta_scale, w, c)
                    if (e > 0.0 and f > 0.0) != (g0[c] > 0.0 and gd0[c] > 0.0):
                        clean = False
    for i in range(Y.shape[0]):
        for d in range(3):
            Y[i, d] += hh * (Bw[0] * KY[0, i, d] + Bw[1] * KY[1, i, d] + Bw[2] * KY[2, i, d] + Bw[3] * KY[3, i, d])
            V[i, d] += hh * (Bw[0] * KV[0, i, d] + Bw[1] * KV[1, i, d] + Bw[2] * KV[2, i, d] + Bw[3] * KV[3, i, d])
    return OK, clean


@njit(cache=True, _nrt=False)
def _copy(dst, src):
    for i in range(src.shape[0]):
        for d in range(3):
            dst[i, d] = src[i, d]


@njit(cache=True, inline="always", _nrt=False)
def string_event(p, zeta_scale, w, c):
    """(e = L - ξ, κ e + ζ ė) of string c from the lengths string_tensions left in w."""
    r0 = w.rest[c]
    e = w.L[c] - r0
    kap = p.str_ea[c] / r0 if p.str_ea_mode[c] == 1 and r0 > 0.0 else p.str_k[c]
    return e, kap * e + zeta_scale * p.str_zeta[c] * (w.Ld[c] - w.restd[c])


@njit(cache=True, inline="always", _nrt=False)
def element_event(p, zeta_scale, w, c):
    """The event values of switching element c: string c (c < σ_c), else contact slot c − σ_c, whose
    (penetration δ, k δ + c δ̇) the last force evaluation left in w (the same one-sided law, contact.py)."""
    nc = p.str_rest.shape[0]
    if c < nc:
        return string_event(p, zeta_scale, w, c)
    return w.cg[c - nc], w.cf[c - nc]


@njit(cache=True, inline="always", _nrt=False)
def located(p, zeta_scale, c):
    """Whether element c's switches are located: damped strings (string damping on) and every contact (even
    an undamped one: its force's kink at onset is k δ̇ per second, large for a stiff contact)."""
    return c >= p.str_rest.shape[0] or zeta_scale * p.str_zeta[c] > 0.0


@njit(cache=True, inline="always", _nrt=False)
def tracks_switches(p, zeta_scale):
    """Whether any element has switches worth locating (:func:`located`)."""
    for c in range(p.str_rest.shape[0] + p.cs_ob.shape[0]):
        if located(p, zeta_scale, c):
            return True
    return False


@njit(cache=True, _nrt=False)
def switch_functions(p, t, Y, V, inp, zeta_scale, w, g, gd):
    """g[c] = e = L - ξ and gd[c] = κ e + ζ ė (the tension before the clamp) of every string at (t, Y, V),
    then g = δ and gd = k δ + c δ̇ of every contact slot (w.F is scratch here)."""
    expand(p, Y, w.X, True)
    expand(p, V, w.Xd, False)
    string_tensions(p, t, w.X, w.Xd, inp, zeta_scale, w)
    if p.cs_ob.shape[0] > 0:
        contact_forces(p, w.X, w.Xd, w, w.F)
    for c in range(g.shape[0]):
        g[c], gd[c] = element_event(p, zeta_scale, w, c)


@njit(cache=True, inline="always", _nrt=False)
def string_mode(e, f):
    """0 slack, 1 taut but clamped at zero tension, 2 pulling."""
    if e <= 0.0:
        return 0
    return 2 if f > 0.0 else 1


@njit(cache=True, _nrt=False)
def event_value(g, gd, c, taut_switch):
    return g[c] if taut_switch else gd[c]


@njit(cache=True, _nrt=False)
def first_switch(p, zeta_scale, g0, gd0, g1, gd1):
    """(string, its event is the slack/taut one) of the switch with the earliest linear estimate, or (-1, _).
    Only switches that change the force law are located: a damped string starting to pull (from slack, at
    e = 0, the tension jumps by ζ ė; from the clamp, at κ e + ζ ė = 0, its derivative jumps) or stopping
    (at the clamp, κ e + ζ ė = 0, before e reaches 0); slack <-> clamped changes nothing (no tension either
    way), and an undamped string's switch is a kink in a continuous force."""
    best, kind, tbest = -1, True, 2.0
    for c in range(g0.shape[0]):
        if not located(p, zeta_scale, c):
            continue
        m0, m1 = string_mode(g0[c], gd0[c]), string_mode(g1[c], gd1[c])
        if (m0 == 2) == (m1 == 2):
            continue
        taut = m0 == 0
        a, b = (g0[c], g1[c]) if taut else (gd0[c], gd1[c])
        frac = a / (a - b) if a != b else 0.5
        if frac < tbest:
            best, kind, tbest = c, taut, frac
    return best, kind


@njit(cache=True, inline="always", _nrt=False)
def taylor_cross(d, Y, V, A):
    """Second-order Taylor step of size d with the acceleration A at its start (across a switch that is
    at most CROSS steps ahead; A is that of the mode before it)."""
    for i in range(Y.shape[0]):
        for k in range(3):
            Y[i, k] += d * (V[i, k] + 0.5 * d * A[i, k])
            V[i, k] += d * A[i, k]


@njit(cache=True, _nrt=False)
def _step_from_start(p, t, x, Y, V, inp, Fext, zeta_scale, node_damp, w, g0, gd0, check):
    """(Y, V) = an RK4 step of size x from the start (t, w.Y1, w.V1); returns _rk4_step's (status, clean)."""
    _copy(Y, w.Y1)
    _copy(V, w.V1)
    return _rk4_step(p, t, x, Y, V, inp, Fext, zeta_scale, node_damp, w, g0, gd0, check)


@njit(cache=True, inline="always", _nrt=False)
def _bracket(p, t, hh, Y, V, inp, Fext, zeta_scale, node_damp, w, c, taut, g0, gd0, g, gd):
    """Illinois iterations on the event function of string c (switching to another string if that one
    turns out to switch first) over trial RK4 steps of size x from the start, to EVENT_TOL of the step.
    Returns (a, b, clean_a, cur, status, evaluations): the bracket [a, b] of the switch time (as step sizes),
    whether every stage of the step of size a stayed in the old modes, and the size of the step whose end
    state (Y, V) holds (-1: none; on a failed trial step, its size)."""
    tol = EVENT_TOL * hh
    fa = event_value(g0, gd0, c, taut)
    fb = event_value(g, gd, c, taut)
    a, b = 0.0, hh
    clean_a = True            # every stage of the step of size a in the old modes (a = 0: nothing to check)
    cur = -1.0                # the step size whose end state (Y, V) holds
    side = 0
    evals = 0
    for _ in range(EVENT_ITERATIONS):
        if b - a <= tol:
            break
        x = b - fb * (b - a) / (fb - fa) if fb != fa else 0.5 * (a + b)
        if not (a < x < b):
            x = 0.5 * (a + b)
        st, clean = _step_from_start(p, t, x, Y, V, inp, Fext, zeta_scale, node_damp, w, g0, gd0, True)
        evals += 4
        cur = x
        if st != OK:
            return a, b, clean_a, cur, st, evals
        switch_functions(p, t + x, Y, V, inp, zeta_scale, w, g, gd)
        fx = event_value(g, gd, c, taut)
        if (fx > 0.0) != (fb > 0.0):
            c2, taut2 = first_switch(p, zeta_scale, g0, gd0, g, gd)
            if c2 >= 0 and (c2 != c or taut2 != taut):   # another string switched first: locate that one
                c, taut = c2, taut2
                a, fa, b, fb = 0.0, event_value(g0, gd0, c, taut), x, event_value(g, gd, c, taut)
                clean_a = True
                side = 0
                continue
        if (fx > 0.0) == (fb > 0.0):
            b, fb = x, fx
            if side == 1:
                fa *= 0.5
            side = 1
        else:
            a, fa, clean_a = x, fx, clean
            if side == -1:
                fb *= 0.5
            side = -1
    return a, b, clean_a, cur, OK, evals


@njit(cache=True, inline="always", _nrt=False)
def _clean_step(p, t, hh, Y, V, inp, Fext, zeta_scale, node_damp, w, g0, gd0, a, b, clean_a, cur):
    """The last step before the switch (bracket [a, b]) whose stages all stay in the old modes: the end of a
    step right at the switch is before it, but its last stage state, O(a^3) off the end, may be past it, so
    steps a margin shorter are tried (CROSS / 2 of the step, growing 4x). ``cur``: the step size whose end
    state (Y, V) holds on entry; leaves (Y, V) at the end of the step taken. Returns (its size, status,
    evaluations)."""
    x, clean = a, clean_a
    margin = 0.5 * (CROSS * hh)
    evals = 0
    if a == 0.0:                 # not bracketed within the iterations: the step just past it, as it was
        x = b
    for _ in range(EVENT_ITERATIONS):
        if clean or x == b:
            break
        x = a - margin if a - margin > 0.5 * x else 0.5 * x
        margin *= 4.0
        st, clean = _step_from_start(p, t, x, Y, V, inp, Fext, zeta_scale, node_damp, w, g0, gd0, True)
        evals += 4
        cur = x
        if st != OK:
            return x, st, evals
    if cur != x:
        st, clean = _step_from_start(p, t, x, Y, V, inp, Fext, zeta_scale, node_damp, w, g0, gd0, False)
        evals += 4
        if st != OK:
            return x, st, evals
    return x, OK, evals


@njit(cache=True, _nrt=False)
def _locate(p, t, hh, Y, V, inp, Fext, zeta_scale, node_damp, w, c, taut, g0, gd0, g, gd):
    """The first switch inside the step of size hh from (t, w.Y1, w.V1), of string c (module docstring).
    (g0, gd0): the event values at the start, (g, gd) at the step's end (then scratch). Leaves (Y, V) at the
    end of the clean step, or past the switch if it was crossed (unprojected). Returns (advance, crossed,
    status, evaluations)."""
    tol = EVENT_TOL * hh
    near = CROSS * hh
    a, b, clean_a, cur, st, evals = _bracket(p, t, hh, Y, V, inp, Fext, zeta_scale, node_damp, w, c, taut, g0,
                                             gd0, g, gd)
    if st != OK:
        return cur, False, st, evals
    if a == 0.0 and b <= near:   # the switch is right at the start: cross it from there (KV[0]: the
        _copy(Y, w.Y1)           # acceleration at the start, the first stage of every trial step)
        _copy(V, w.V1)
        d = min(b + tol, hh)
        taylor_cross(d, Y, V, w.KV[0])
        return d, True, OK, evals
    x, st, ne = _clean_step(p, t, hh, Y, V, inp, Fext, zeta_scale, node_damp, w, g0, gd0, a, b, clean_a, cur)
    evals += ne
    if st != OK:
        return x, False, st, evals
    if x < b and b - x <= near:  # close enough: a Taylor step with the old mode's acceleration across it
        st = accel(p, t + x, Y, V, inp, Fext, zeta_scale, node_damp, w, w.KV[4])
        evals += 1
        if st != OK:
            return x, False, st, evals
        d = min(b + tol, hh) - x
        taylor_cross(d, Y, V, w.KV[4])
        return x + d, True, OK, evals
    return x, False, OK, evals    # further off: the next piece, shorter, locates it with less room


@njit(cache=True, _nrt=False)
def integrate_rk4(p, t, Y, V, h, t_out, inp, Fext, zeta_scale, node_damp, bar_tol, w,
                  o_X, o_Xd, o_T, o_L, o_u, o_lam, stats):
    """Classic RK4 with projection, equal substeps of at most ``h`` reaching each output time exactly, each
    split at the strings' switches (module docstring).

    ``stats`` (float64[7]) receives: t reached, steps, rhs evaluations, rejected steps (0), max drift,
    failing bar index; stats[6] the number of switches crossed. Returns a status code.
    """
    g0, gd0, g1, gd1 = w.ev[0], w.ev[1], w.ev[2], w.ev[3]
    steps = 0
    evals = 0
    events = 0
    max_drift = 0.0
    st = OK
    idx = -1
    known = False             # g0/gd0 hold the switch functions at the current state (end of the last step)
    track = tracks_switches(p, zeta_scale)     # only damped strings and contacts have switches worth locating
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
                    switch_functions(p, t, Y, V, inp, zeta_scale, w, g0, gd0)
                known = False
                st, _ = _rk4_step(p, t, rem, Y, V, inp, Fext, zeta_scale, node_damp, w, g0, gd0, False)
                evals += 4
                if st != OK:
                    break
                step = rem
                if track and n_ev < MAX_EVENTS:
                    switch_functions(p, t + rem, Y, V, inp, zeta_scale, w, g1, gd1)
                    c, taut = first_switch(p, zeta_scale, g0, gd0, g1, gd1)
                    if c >= 0:
                        step, crossed, st, ne = _locate(p, t, rem, Y, V, inp, Fext, zeta_scale, node_damp, w, c,
                                                        taut, g0, gd0, g1, gd1)
                        evals += ne
                        n_ev += 1
                        if crossed:
                            events += 1
                        if st != OK:
                            break
                    else:                # no switch: the end values start the next step (the projection
                        for c in range(g0.shape[0]):  # moves the state by ~1e-14 relative only)
                            g0[c] = g1[c]
                            gd0[c] = gd1[c]
                        known = True
                last = step >= rem
                t = t_end if last else t + step
                steps += 1
                st, drift, idx = post_step(p, t, Y, V, w, bar_tol, flag(False))
                if drift > max_drift:
                    max_drift = drift
                if st != OK or last:
                    break
            if st != OK:
                break
        if st != OK:
            break
        t = t_out[k]
        record_sample(p, t, Y, V, inp, Fext, zeta_scale, node_damp, w, k, o_X, o_Xd, o_T, o_L, o_u, o_lam)
    fill_stats(stats, t, steps, evals, 0, max_drift, idx)
    stats[6] = events
    return st
