"""Adaptive Dormand-Prince 5(4) integrator with projection (compiled; re-exported by :mod:`.kernels`)."""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .kernels import (BUDGET, OK, REST, SLIVER, UNDERFLOW, _fill_stats, _post_step, _record,  # noqa: F401
                      _stage_state, accel)


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


@njit(cache=True, _nrt=False)
def integrate_dopri5(p, t, Y, V, h, t_out, inp, Fext, zeta_scale, node_damp, bar_tol, rtol, atol, h_max,
                     max_steps, w, o_X, o_Xd, o_T, o_L, o_u, o_lam, stats):
    """Adaptive Dormand–Prince 5(4) with error control on positions and velocities, projection after
    every accepted step and steps clipped to land on each output time. ``h`` is the initial step guess;
    the last accepted step size is returned in stats[6].
    """
    KY, KV, Ys, Vs = w.KY, w.KV, w.Ys, w.Vs
    C, A, E = _C, _A, _E
    r = p.r
    steps = 0
    evals = 0
    rejected = 0
    max_drift = 0.0
    h_min = 1e-12
    k0_valid = False          # KV[0] holds the acceleration at (t, Y, V) (first-same-as-last)
    for k in range(t_out.shape[0]):
        t_end = t_out[k]
        while t < t_end - 1e-14 * max(1.0, abs(t_end)):
            rem = t_end - t
            if rem < h_min:           # a rounding sliver (sums of steps): the state is at t_end already
                break
            hh = min(h, h_max, rem)
            if rem - hh < SLIVER * hh:    # never leave a sliver behind: this step takes it along
                hh = rem
            last = hh >= rem
            if steps + rejected >= max_steps:
                _fill_stats(stats, t, steps, evals, rejected, max_drift, -1)
                return BUDGET
            if hh < h_min:
                _fill_stats(stats, t, steps, evals, rejected, max_drift, -1)
                return UNDERFLOW
            st = OK
            for s in range(7):
                if s == 0 and k0_valid:
                    for i in range(r):
                        for d in range(3):
                            KY[0, i, d] = V[i, d]
                    continue
                _stage_state(A, s, hh, Y, V, KY, KV, Ys, Vs)
                st = accel(p, t + C[s] * hh, Ys, Vs, inp, Fext, zeta_scale, node_damp, w, KV[s])
                evals += 1
                if st != OK:
                    break
                if s == 0:
                    k0_valid = True
            if st == REST:
                _fill_stats(stats, t, steps, evals, rejected, max_drift, -1)
                return st
            errn = 0.0
            if st == OK:
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
            if st != OK or not math.isfinite(errn):
                errn = 1e10
            if errn <= 1.0:
                for i in range(r):
                    for d in range(3):
                        Y[i, d] = Ys[i, d]
                        V[i, d] = Vs[i, d]
                t = t_end if last else t + hh
                steps += 1
                # the last stage was evaluated at the new state: its bar factor serves the projection
                st, drift, idx = _post_step(p, t, Y, V, w, bar_tol, True)
                if drift > max_drift:
                    max_drift = drift
                if st != OK:
                    _fill_stats(stats, t, steps, evals, rejected, max_drift, idx)
                    return st
                # FSAL: the last stage is the acceleration at the new state; the projection moved the
                # state by ~1e-14 relative only, so it starts the next step (one evaluation saved)
                for i in range(r):
                    for d in range(3):
                        KV[0, i, d] = KV[6, i, d]
                fac = 5.0 if errn < 1e-10 else min(5.0, 0.9 * errn ** -0.2)
                if not last:
                    h = hh * fac
                else:
                    h = max(h, hh * fac)
            else:
                rejected += 1
                h = hh * max(0.1, 0.9 * errn ** -0.2)
        t = t_end
        _record(p, t, Y, V, inp, Fext, zeta_scale, node_damp, w, k, o_X, o_Xd, o_T, o_L, o_u, o_lam)
    _fill_stats(stats, t, steps, evals, rejected, max_drift, -1)
    stats[6] = h
    return OK
