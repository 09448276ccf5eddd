"""Window start states estimated from the capture for given parameters (the start of a shooting window is an
unknown like the parameters: a state smoothed from noisy frames is off by ~noise in position and far more in
velocity, and a fit that holds it fixed biases the damping and the delay to make up for it).

    w = refine_start(model, plist, theta, w, dt)   # the window from its best start state for θ

A few Gauss-Newton steps on the window's first ``START_SPAN`` seconds of frames, with the derivatives of the
simulated markers by the free start positions and velocities from the forward-sensitivity kernel (the
state-transition sensitivities), and a prior that keeps the start near the smoothed one (``START_SIGMA``:
what the smoothing gets wrong; without it a start fitted under wrong parameters makes up for them, measured:
46 mm off after the first multiple-shooting windows at 2x the true damping); each new start is projected
onto the model's constraints (bar lengths) by ``Simulator.reset``; a step that does not lower the misfit is not taken.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from tensegrity_engine.dynamics.simulator import Simulator
from tensegrity_engine.identify.params import model_with, values
from tensegrity_engine.identify.sensitivity import simulate_with_sensitivities

START_SPAN = 0.5    # s of frames that fix a start state: several periods of the fast bar modes, short enough that
#                     the parameters' error (what the outer fit still has to find) builds up little in it
START_STEPS = 3     # Gauss-Newton steps (the map from start state to positions is nearly linear over ~1 mm)
START_SIGMA = (2e-3, 0.1)   # m, m/s: a smoothed start state's error (measured on a 0.5 mm noise capture at 120
#                             Hz: 0.7 mm and 28 mm/s at the first frame), with a margin of ~3x
RCOND = 1e-3        # start directions that move the markers < 1e-3 of the strongest one are left alone: with 1e-9
#                     the near-null (bar-stretching, undone by the projection) directions got 229 m/s steps, with
#                     1e-5..1e-2 the misfit fell alike (measured on the manipulator's 0.5 s head: 1.096e-3 ->
#                     0.888e-3..0.898e-3 m²)


def _misfit(model, plist, theta, w, dt, start: bool):
    """(cost [m²], residuals, their Jacobian by the free start coordinates or None) of window ``w``."""
    out = simulate_with_sensitivities(model, plist, theta, w, dt, cols=[], start=start)
    if out is None:
        return np.inf, None, None
    P, S = out
    r = np.where(w.mask[..., None], P - w.measured, 0.0).ravel()
    J = np.where(w.mask[..., None, None], S, 0.0).reshape(len(r), -1) if start else None
    return float(r @ r), r, J


def refine_start(model, plist, theta, w, dt, noise: float, steps: int = START_STEPS, span: float = START_SPAN):
    """Window ``w`` with its start (X0, V0) refined for the parameters θ (module docstring); ``noise`` [m] the
    capture's noise per coordinate (weighs the frames against the prior)."""
    mod = model_with(model, plist, values(plist, theta))
    sel = w.t <= w.t0 + span + 1e-9
    head = replace(w, duration=min(w.duration, span), t=w.t[sel], measured=w.measured[sel], mask=w.mask[sel])
    sim = Simulator(mod, integrator="rk4", dt=dt)
    sim.reset(w.X0, w.V0, t=w.t0)
    z_s = np.concatenate([sim.Y.ravel(), sim.V.ravel()])            # the smoothed start, projected
    sig = np.repeat(START_SIGMA, sim.Y.size) / max(noise, 1e-6)     # prior rows in units of the frames' noise

    def total(trial):
        c, r, J = _misfit(model, plist, theta, trial, dt, True)
        sim.reset(trial.X0, trial.V0, t=w.t0)
        p = (np.concatenate([sim.Y.ravel(), sim.V.ravel()]) - z_s) / sig
        return c + float(p @ p), r, J, p, np.concatenate([sim.Y.ravel(), sim.V.ravel()])

    cost, r, J, p, z = total(head)
    for _ in range(steps):
        if r is None:
            break
        A = np.vstack([J, np.diag(1.0 / sig)])
        dz = np.linalg.lstsq(A, -np.concatenate([r, p]), rcond=RCOND)[0]
        zn = (z + dz).reshape(2, -1, 3)
        sim.Y, sim.V = zn[0].copy(), zn[1].copy()
        X0, V0 = sim.positions, sim.velocities
        sim.reset(X0, V0, t=w.t0)                                     # back onto the bar lengths
        trial = replace(head, X0=sim.positions, V0=sim.velocities)
        out = total(trial)
        if not out[0] < cost:
            break
        head, (cost, r, J, p, z) = trial, out
    return replace(w, X0=head.X0, V0=head.V0)
