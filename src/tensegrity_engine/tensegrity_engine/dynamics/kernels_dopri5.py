"""Adaptive Dormand-Prince 5(4) integrator with projection and switching events (compiled; re-exported by
:mod:`.kernels`).

Switching events (the string modes are described in :mod:`.kernels_rk4`): a damped string's force jumps by
``ζ ė`` when it becomes taut, so a step across the switch is only first-order accurate and its error
estimate is meaningless there (step rejection alone shrinks the steps around the kink until it passes).
So after every trial step the damped strings' modes at its end are compared with those at its start
(reusing the RK4 helpers); if one started or stopped pulling, the first switch is located
(:func:`_locate_dp`):

* the root of that string's event function on the trial step's continuous extension (the order-4 dense
  output, no evaluations) estimates the switch time; a trial step is taken to a little before it;
* a trial step whose every stage state is still in the old mode is *clean*: its dense output, extrapolated
  a little past its end, gives the switch time of the old-mode motion to ``EVENT_TOL`` of the step; once
  a clean step ends within ``CROSS`` steps of the switch it is the step taken (through the usual error
  test: its estimate is meaningful), and the switch is then crossed by a second-order Taylor step with the
  acceleration before it (error ~ d³, d <= CROSS h), ending ``EVENT_TOL`` past the root;
* the next step starts in the new mode with a freshly evaluated first stage (no FSAL across the jump) and
  the step size proposed before the switch.

A trial step ending past the switch only improves the estimate; one ending before it with a stage past it
widens the margin, and once the margin outgrows ``CROSS`` the next clean step is taken without crossing
(the next, shorter step locates the switch with less room). If no clean step is found within
``EVENT_ITERATIONS`` trial steps, the best clean step (or the original step) is taken without crossing. Only the first switch of a step is located (another
string switching inside the same step is crossed as before). A step without a switch is computed exactly
as before (the mode check reads the state only), and so is every step of a model without damped strings.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from tensegrity_engine.dynamics.kernels_kkt import flag
from tensegrity_engine.dynamics.kernels import (BUDGET, OK, REST, SLIVER, UNDERFLOW, accel,  # noqa: F401
                                                fill_stats, post_step, record_sample, stage_state)
from tensegrity_engine.dynamics.kernels_rk4 import (CROSS, EVENT_ITERATIONS, EVENT_TOL, element_event, event_value,
                                                    first_switch, string_mode, switch_functions, taylor_cross,
                                                    tracks_switches)


# Dormand–Prince 5(4) tableau
_C = np.array([0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0])
_A = np.array([
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [1 / 5, 0.0, 0.0, 0.0, 0.0, 0.0],
    [3 / 40, 9 / 40, 0.0, 0.0, 0.0, 0.0],
    [44 / 45, -56 / 15, 32 / 9, 0.0, 0.0, 0.0],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0.0, 0.0],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0.0],
    [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84],
])
_E = np.array([71 / 57600, 0.0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40])
# continuous extension of order 4 (Hairer, Nørsett & Wanner, Solving ODEs I, II.6): with Δ = y1 - y0,
# b = h k0 - Δ, c = Δ - h k6 - b and d = h Σ D_s k_s, y(θ) = y0 + θ (Δ + (1-θ) (b + θ (c + (1-θ) d)))
_D = np.array([-12715105075 / 11282082432, 0.0, 87487479700 / 32700410799, -10690763975 / 1880347072,
               701980252875 / 199316789632, -1453857185 / 822651844, 69997945 / 29380423])
DENSE_ITERATIONS = 60      # Illinois iterations on the dense output per estimate (no evaluations)
H_MIN = 1e-12              # smallest step [s]: below it the run stops (UNDERFLOW)


@njit(cache=True, _nrt=False)
def _dense_state(theta, hh, Y, V, w):
    """(w.Y1, w.V1) = the step's continuous extension at t + θ hh (stages KY/KV, end state Ys/Vs)."""
    KY, KV, Ys, Vs, D = w.KY, w.KV, w.Ys, w.Vs, _D
    th1 = 1.0 - theta
    for i in range(Y.shape[0]):
        for d in range(3):
            for which in range(2):
                if which == 0:
                    y0, y1, K = Y[i, d], Ys[i, d], KY
                else:
                    y0, y1, K = V[i, d], Vs[i, d], KV
                dy = y1 - y0
                bb = hh * K[0, i, d] - dy
                cc = dy - hh * K[6, i, d] - bb
                dd = 0.0
                for s in range(7):
                    dd += D[s] * K[s, i, d]
                dd *= hh
                val = y0 + theta * (dy + th1 * (bb + theta * (cc + th1 * dd)))
                if which == 0:
                    w.Y1[i, d] = val
                else:
                    w.V1[i, d] = val


@njit(cache=True, _nrt=False)
def _dense_root(p, t, hh, Y, V, inp, zeta_scale, w, c, taut, lo, flo, hi, tol, g, gd):
    """Switch time of string c (as a step size) on the continuous extension of the current trial step of
    size hh between θ = lo and hi (hi > 1 extrapolates a little past the step), to ``tol`` [s], or -1 if
    the event function has no sign change there. ``flo``: the event value at lo (NaN: evaluate it)."""
    if flo != flo:
        _dense_state(lo, hh, Y, V, w)
        switch_functions(p, t + lo * hh, w.Y1, w.V1, inp, zeta_scale, w, g, gd)
        flo = event_value(g, gd, c, taut)
    _dense_state(hi, hh, Y, V, w)
    switch_functions(p, t + hi * hh, w.Y1, w.V1, inp, zeta_scale, w, g, gd)
    fhi = event_value(g, gd, c, taut)
    if (flo > 0.0) == (fhi > 0.0):
        return -1.0
    side = 0
    for _ in range(DENSE_ITERATIONS):
        if (hi - lo) * hh <= tol:
            break
        x = hi - fhi * (hi - lo) / (fhi - flo) if fhi != flo else 0.5 * (lo + hi)
        if not (lo < x < hi):
            x = 0.5 * (lo + hi)
        _dense_state(x, hh, Y, V, w)
        switch_functions(p, t + x * hh, w.Y1, w.V1, inp, zeta_scale, w, g, gd)
        fx = event_value(g, gd, c, taut)
        if (fx > 0.0) == (fhi > 0.0):
            hi, fhi = x, fx
            if side == 1:
                flo *= 0.5
            side = 1
        else:
            lo, flo = x, fx
            if side == -1:
                fhi *= 0.5
            side = -1
    return 0.5 * (lo + hi) * hh


@njit(cache=True, _nrt=False)
def _trial(p, t, hh, Y, V, inp, Fext, zeta_scale, node_damp, w, c, m0):
    """Stages 1..6 of a trial step of size hh from (t, Y, V) (stage 0, KV[0], is known). Returns (status,
    every stage state has string c in mode m0)."""
    KY, KV, Ys, Vs = w.KY, w.KV, w.Ys, w.Vs
    for i in range(Y.shape[0]):
        for d in range(3):
            KY[0, i, d] = V[i, d]
    clean = True
    for s in range(1, 7):
        stage_state(_A, s, hh, Y, V, KY, KV, Ys, Vs)
        st = accel(p, t + _C[s] * hh, Ys, Vs, inp, Fext, zeta_scale, node_damp, w, KV[s])
        if st != OK:
            return st, False
        e, f = element_event(p, zeta_scale, w, c)     # the lengths (contact depths) of this stage's state
        if string_mode(e, f) != m0:
            clean = False
    return OK, clean


@njit(cache=True, _nrt=False)
def _locate_dp(p, t, hh, Y, V, inp, Fext, zeta_scale, node_damp, w, c, taut, m0, fa, fb, g, gd):
    """The first switch, of string c, inside the current trial step of size hh (module docstring).
    Returns (a, s, status, evaluations): a clean step of size a (its stages left in w; 0: none, cross from
    the start) and the switch time s after it (-1: not found, take the step of size a without crossing;
    a = hh then means the trial step as it was)."""
    tol = EVENT_TOL * hh
    near = CROSS * hh
    a, b = 0.0, hh
    cur = 1                  # the stages in w: 1 those of the step of size b, 0 of size a, -1 neither
    margin = 0.5 * near
    evals = 0
    xs = -1.0
    for _ in range(EVENT_ITERATIONS):
        if cur == 0:         # a clean step: its dense output, extrapolated, gives the switch precisely
            xs = _dense_root(p, t, a, Y, V, inp, zeta_scale, w, c, taut, 1.0, fa, min(b / a, 2.0), 0.1 * tol,
                             g, gd)
            if xs > a and xs - a <= near:
                return a, xs, OK, evals
            if margin > 0.5 * near:  # the stages need more room than CROSS at this step size: take the
                return a, -1.0, OK, evals   # clean step, the next (shorter) one locates the switch
            step_margin = margin
        elif cur == 1:       # a step across the switch: its dense output gives a first estimate
            xs = _dense_root(p, t, b, Y, V, inp, zeta_scale, w, c, taut, a / b, fa if a == 0.0 else np.nan,
                             1.0, 0.1 * tol, g, gd)
            if a == 0.0 and 0.0 < xs <= near:
                return 0.0, xs, OK, evals
            step_margin = max(margin, 0.1 * (b - xs))
        else:
            step_margin = margin
        x = xs - step_margin
        if not (a < x < b):
            x = 0.5 * (a + b) if not (a < xs < b) else 0.5 * (a + xs)
        st, clean = _trial(p, t, x, Y, V, inp, Fext, zeta_scale, node_damp, w, c, m0)
        evals += 6
        if st != OK:
            return x, -1.0, st, evals
        switch_functions(p, t + x, w.Ys, w.Vs, inp, zeta_scale, w, g, gd)
        fx = event_value(g, gd, c, taut)
        if string_mode(g[c], gd[c]) != m0:
            b, fb, cur = x, fx, 1
        elif clean:
            a, fa, cur = x, fx, 0
        else:                # ends before the switch but a stage state is past it: keep more distance
            margin *= 4.0
            cur = -1
    # not located within the iterations: the best clean step, or the trial step as it was
    x = a if a > 0.0 else hh
    if cur != 0 or a == 0.0:
        st, clean = _trial(p, t, x, Y, V, inp, Fext, zeta_scale, node_damp, w, c, m0)
        evals += 6
        if st != OK:
            return x, -1.0, st, evals
    return x, -1.0, OK, evals


@njit(cache=True, inline="always", _nrt=False)
def _step_size(h, h_max, rem):
    """The next trial step: h, at most h_max and the rest rem of the output interval."""
    hh = min(h, h_max, rem)
    if rem - hh < SLIVER * hh:    # never leave a sliver behind: this step takes it along
        hh = rem
    return hh


@njit(cache=True, inline="always", _nrt=False)
def _stages(p, t, hh, Y, V, inp, Fext, zeta_scale, node_damp, w, k0_valid):
    """The seven stages of a trial step of size hh from (t, Y, V) into w.KY, w.KV (end state w.Ys, w.Vs);
    stage 0 is not evaluated again if ``k0_valid`` (KV[0] already holds it). Returns (status, evaluations,
    KV[0] valid)."""
    KY, KV, Ys, Vs = w.KY, w.KV, w.Ys, w.Vs
    st = OK
    evals = 0
    for s in range(7):
        if s == 0 and k0_valid:
            for i in range(p.r):
                for d in range(3):
                    KY[0, i, d] = V[i, d]
            continue
        stage_state(_A, s, hh, Y, V, KY, KV, Ys, Vs)
        st = accel(p, t + _C[s] * hh, Ys, Vs, inp, Fext, zeta_scale, node_damp, w, KV[s])
        evals += 1
        if st != OK:
            break
        if s == 0:
            k0_valid = True
    return st, evals, k0_valid


@njit(cache=True, inline="always", _nrt=False)
def _switch_in_step(p, t, hh, rem, Y, V, inp, Fext, zeta_scale, node_damp, w, known):
    """The switch functions at the trial step's end, (g1, gd1) = w.ev[2:4], compared with those at its start,
    (g0, gd0) = w.ev[0:2] (evaluated first unless ``known``); if a damped string started or stopped pulling,
    the first switch is located (:func:`_locate_dp`; rem: the rest of the output interval). Returns (found,
    a, cross, status, evaluations): the step to take is of size a (0: none, the switch is right at the
    start; else its stages are in w), followed by a Taylor step of size cross across the switch (-1: none)."""
    g0, gd0, g1, gd1 = w.ev[0], w.ev[1], w.ev[2], w.ev[3]
    if not known:
        switch_functions(p, t, Y, V, inp, zeta_scale, w, g0, gd0)
    switch_functions(p, t + hh, w.Ys, w.Vs, inp, zeta_scale, w, g1, gd1)
    c, taut = first_switch(p, zeta_scale, g0, gd0, g1, gd1)
    if c < 0:
        return False, hh, -1.0, OK, 0
    fa = g0[c] if taut else gd0[c]
    fb = g1[c] if taut else gd1[c]
    xa, xs, st, ne = _locate_dp(p, t, hh, Y, V, inp, Fext, zeta_scale, node_damp, w, c, taut,
                                string_mode(g0[c], gd0[c]), fa, fb, g1, gd1)
    cross = -1.0
    if st == OK and xs > 0.0:
        cross = min(xs + EVENT_TOL * hh, rem) - xa
    return True, xa, cross, st, ne


@njit(cache=True, inline="always", _nrt=False)
def _cross_switch(p, t, d, to_end, t_end, Y, V, w, bar_tol, max_drift):
    """Across a located switch: a Taylor step of size d with the acceleration before it (KV[0]), then the
    projection. Returns (t after it (t_end if ``to_end``), status, max drift so far, failing bar index)."""
    taylor_cross(d, Y, V, w.KV[0])
    t = t_end if to_end else t + d
    st, drift, idx = post_step(p, t, Y, V, w, bar_tol, flag(False))
    if drift > max_drift:
        max_drift = drift
    return t, st, max_drift, idx


@njit(cache=True, inline="always", _nrt=False)
def _error_norm(p, hh, Y, V, w, rtol, atol):
    """RMS of the embedded error estimate of the trial step (positions and velocities, each scaled by
    atol + rtol |y|); 1e10 if not finite."""
    KY, KV, Ys, Vs, E = w.KY, w.KV, w.Ys, w.Vs, _E
    r = p.r
    errn = 0.0
    for i in range(r):
        for d in range(3):
            ey = 0.0
            ev = 0.0
            for s in range(7):
                ey += E[s] * KY[s, i, d]
                ev += E[s] * KV[s, i, d]
            ey *= hh
            ev *= hh
            sy = atol + rtol * max(abs(Y[i, d]), abs(Ys[i, d]))
            sv = atol + rtol * max(abs(V[i, d]), abs(Vs[i, d]))
            errn += (ey / sy) ** 2 + (ev / sv) ** 2
    errn = math.sqrt(errn / (6.0 * r)) if r > 0 else 0.0
    return errn if math.isfinite(errn) else 1e10


@njit(cache=True, inline="always", _nrt=False)
def _accept(p, t, t_end, rem, hh, last, located, cross, end_known, Y, V, w, bar_tol, max_drift):
    """Take the trial step: (Y, V) = its end state, projected; its last stage starts the next step (FSAL),
    and with ``end_known`` its switch functions (g1, gd1) too; a located switch ahead of it is then crossed
    (:func:`_cross_switch`). Returns (t, status, max drift so far, failing bar index, crossed)."""
    for i in range(p.r):
        for d in range(3):
            Y[i, d] = w.Ys[i, d]
            V[i, d] = w.Vs[i, d]
    t = t_end if last else t + hh
    # the last stage was evaluated at the new state: its bar factor serves the projection
    st, drift, idx = post_step(p, t, Y, V, w, bar_tol, flag(True))
    if drift > max_drift:
        max_drift = drift
    if st != OK:
        return t, st, max_drift, idx, False
    # FSAL: the last stage is the acceleration at the new state; the projection moved the state by ~1e-14
    # relative only, so it starts the next step (one evaluation saved)
    for i in range(p.r):
        for d in range(3):
            w.KV[0, i, d] = w.KV[6, i, d]
    if end_known:                # the end values start the next step
        for c in range(w.ev.shape[1]):
            w.ev[0, c] = w.ev[2, c]
            w.ev[1, c] = w.ev[3, c]
    if not (located and cross >= 0.0):
        return t, st, max_drift, idx, False
    # across the switch with the acceleration before it (the force jumps there: the caller evaluates the
    # next step's first stage afresh)
    t, st, max_drift, idx = _cross_switch(p, t, cross, hh + cross >= rem, t_end, Y, V, w, bar_tol, max_drift)
    return t, st, max_drift, idx, True


@njit(cache=True, inline="always", _nrt=False)
def _next_step(h, hh, errn, located, last):
    """The step size proposed after a trial step of size hh with error norm errn (rejected if errn > 1)."""
    if errn > 1.0:
        return hh * max(0.1, 0.9 * errn ** -0.2)
    fac = 5.0 if errn < 1e-10 else min(5.0, 0.9 * errn ** -0.2)
    if located or last:
        # at (or just before) a switch, or clipped to an output time: the step size proposed before is kept
        return max(h, hh * fac)
    return hh * fac


@njit(cache=True, inline="always", _nrt=False)
def _stopped(stats, st, t, steps, evals, rejected, max_drift, idx):
    """Fill stats for a run stopped with status st (failing bar index idx, or -1); returns st."""
    fill_stats(stats, t, steps, evals, rejected, max_drift, idx)
    return st


@njit(cache=True, inline="always", _nrt=False)
def _final_stats(stats, t, steps, evals, rejected, max_drift, h, events, loc_evals, loc_rej):
    """stats of a finished run (integrate_dopri5's docstring)."""
    fill_stats(stats, t, steps, evals, rejected, max_drift, -1)
    stats[6] = h
    if stats.shape[0] > 7:
        stats[7] = events
    if stats.shape[0] > 9:
        stats[8] = loc_evals
        stats[9] = loc_rej


@njit(cache=True, _nrt=False)
def integrate_dopri5(p, t, Y, V, h, t_out, inp, Fext, zeta_scale, node_damp, bar_tol, rtol, atol, h_max,
                     max_steps, w, o_X, o_Xd, o_T, o_L, o_u, o_lam, stats, locate=True):
    """Adaptive Dormand–Prince 5(4) with error control on positions and velocities, projection after
    every accepted step, steps clipped to land on each output time and cut at the damped strings'
    switches (module docstring; ``locate=False`` turns that off, for comparison). ``h`` is the initial
    step guess. ``stats`` (float64[7] or longer) receives: t reached, steps, rhs evaluations, rejected
    steps, max drift, failing bar index, the last accepted step size; if it has room, stats[7] the number
    of switches crossed, stats[8] the evaluations spent locating them, stats[9] located steps rejected.
    """
    steps, evals, rejected, events, loc_evals, loc_rej, max_drift = 0, 0, 0, 0, 0, 0, 0.0
    k0_valid = False          # KV[0] holds the acceleration at (t, Y, V) (first-same-as-last)
    known = False             # g0/gd0 hold the switch functions at (t, Y, V)
    track = locate and tracks_switches(p, zeta_scale)   # damped strings and contacts
    for k in range(t_out.shape[0]):
        t_end = t_out[k]
        while t < t_end - 1e-14 * max(1.0, abs(t_end)):
            rem = t_end - t
            if rem < H_MIN:           # a rounding sliver (sums of steps): the state is at t_end already
                break
            hh = _step_size(h, h_max, rem)
            last = hh >= rem
            if steps + rejected >= max_steps or hh < H_MIN:
                return _stopped(stats, BUDGET if steps + rejected >= max_steps else UNDERFLOW, t, steps, evals,
                                rejected, max_drift, -1)
            st, ne, k0_valid = _stages(p, t, hh, Y, V, inp, Fext, zeta_scale, node_damp, w, k0_valid)
            evals += ne
            located = False       # the step ends at a located switch (or before it, not crossing)
            cross = -1.0          # then the distance to the switch, crossed after the step
            end_known = track     # g1/gd1 hold the switch functions at the step's end
            if st == OK and track:
                found, xa, cross, st, ne = _switch_in_step(p, t, hh, rem, Y, V, inp, Fext, zeta_scale, node_damp,
                                                           w, known)
                known = True
                end_known = not found
                evals += ne
                loc_evals += ne
                if st == OK and xa == 0.0:      # the switch is right at the start: cross it from here
                    t, st, max_drift, idx = _cross_switch(p, t, cross, cross >= rem, t_end, Y, V, w, bar_tol,
                                                          max_drift)
                    steps += 1
                    events += 1
                    k0_valid = False
                    known = False
                    if st != OK:
                        return _stopped(stats, st, t, steps, evals, rejected, max_drift, idx)
                    continue
                if st == OK and xa < hh:
                    hh, last, located = xa, False, True
            if st == REST:
                return _stopped(stats, st, t, steps, evals, rejected, max_drift, -1)
            errn = _error_norm(p, hh, Y, V, w, rtol, atol) if st == OK else 1e10
            if errn <= 1.0:
                t, st, max_drift, idx, crossed = _accept(p, t, t_end, rem, hh, last, located, cross, end_known, Y,
                                                         V, w, bar_tol, max_drift)
                steps += 1
                known = end_known
                if crossed:
                    events += 1
                    k0_valid = False
                if st != OK:
                    return _stopped(stats, st, t, steps, evals, rejected, max_drift, idx)
            else:
                rejected += 1
                if located:
                    loc_rej += 1
            h = _next_step(h, hh, errn, located, last)
        t = t_end
        record_sample(p, t, Y, V, inp, Fext, zeta_scale, node_damp, w, k, o_X, o_Xd, o_T, o_L, o_u, o_lam)
    _final_stats(stats, t, steps, evals, rejected, max_drift, h, events, loc_evals, loc_rej)
    return OK
