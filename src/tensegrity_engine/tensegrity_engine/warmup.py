"""Compile (and cache) the numba kernels ahead of use, so a real-time node starts in well under a second.

numba caches machine code next to the sources (``cache=True``); the first use in a fresh checkout or
image otherwise compiles for 20-60 s inside whichever process gets there first (e.g. the simulator node,
which then cannot keep real time). This runs every compiled code path: equilibrium (settle), fixed-step
RK4 and adaptive Dormand-Prince integration with inputs, and both clearance sweeps.
"""
from __future__ import annotations

import time


def compile_kernels(model_name: str = "prism3") -> float:
    """Compile all kernels with ``model_name`` (any model reaches every path). Returns seconds taken."""
    from .collision import check, model_elements
    from .equilibrium import settle
    from .inputs import sinusoid, table
    from .model import load_model
    from .simulator import Simulator

    t0 = time.monotonic()
    model = load_model(model_name)
    X = settle(model).positions
    for integrator in ("rk4", "dopri5"):
        sim = Simulator(model, integrator=integrator, dt=1e-3)
        sim.reset(X)
        na = len(model.actuator_names)
        if na:
            sim.set_inputs(sinusoid([1e-4] * na, [0.0] * na, 7.0), horizon=1.0)
        sim.advance(0.002)
        if na:
            sim.set_inputs(table([0.0, 1.0], [[0.0] * na, [1e-4] * na]), horizon=1.0)
        sim.advance(0.002)
        sim.run(0.01, rate=500)
        sim.forces()
    elements = model_elements(model)
    check(elements, X, 0.0)
    check(elements, X, 0.0, prune=True)
    return time.monotonic() - t0
