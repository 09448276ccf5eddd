"""One run and one batch of a sweep, executed in the worker processes.

Each worker process builds the base model and loads the compiled kernels once per sweep
(:func:`worker_state`); every run is ``Simulator(variant).reset(velocities=V0)`` then ``run(duration, inputs,
rate)`` and gives a summary (final time, steps, final positions/velocities, min/max tension per string,
optionally the sampled nodes). A run that raises is recorded with its message.
"""
from __future__ import annotations

from tensegrity_engine.sweep.result import ERROR, OK
from tensegrity_engine.sweep.variants import initial_velocities, variant_model

_STATE: dict = {}            # per worker process: key -> base model, settings, kernel signatures
_INITS: dict = {}            # per worker process: key -> how many times the state was built (1 expected)


def _kernel_signatures() -> dict:
    """{kernel name: compiled signatures} of the kernels a run uses (a worker compiles each once)."""
    from tensegrity_engine.dynamics.kernels import record_sample, project
    from tensegrity_engine.dynamics.kernels_dopri5 import integrate_dopri5
    from tensegrity_engine.dynamics.kernels_rk4 import integrate_rk4
    kernels = {"integrate_rk4": integrate_rk4, "integrate_dopri5": integrate_dopri5, "record_sample": record_sample,
               "project": project}
    return {name: len(kernel.overloads) for name, kernel in kernels.items()}


def worker_state(key, payload):
    """Build the base model and load the kernels once per worker process (the first call per ``key``)."""
    st = _STATE.get(key)
    if st is None:
        import os

        from tensegrity_engine.model.build import build_model
        from tensegrity_engine.dynamics.simulator import Simulator
        model_spec, settings = payload
        base = build_model(model_spec)
        sim = Simulator(base, integrator=settings["integrator"], dt=settings["dt"], rtol=settings["rtol"],
                        atol=settings["atol"], damping=settings["damping"])
        sim.run(min(settings["duration"], 2.0 / settings["rate"]), inputs=_inputs(base, settings),
                rate=settings["rate"])                   # loads (or compiles) exactly the kernels the runs use
        _INITS[key] = _INITS.get(key, 0) + 1
        st = {"base": base, "settings": settings, "pid": os.getpid(), "signatures": _kernel_signatures()}
        _STATE[key] = st
    return st


def drop_worker_state(key):
    """Forget the state :func:`worker_state` built for ``key`` in this process (a Dask worker's teardown)."""
    _STATE.pop(key, None)


def _inputs(model, settings):
    from tensegrity_engine.dynamics.inputs import no_input, paper_sinusoid
    return paper_sinusoid(model) if settings["inputs"] == "paper" else no_input(len(model.actuator_names))


def simulate_one(base, names, values, settings, seed, run):
    """Run one variant -> dict of its summary (raises what the simulation raises)."""
    from tensegrity_engine.dynamics.simulator import Simulator
    model = variant_model(base, names, values)
    sim = Simulator(model, integrator=settings["integrator"], dt=settings["dt"], rtol=settings["rtol"],
                    atol=settings["atol"], damping=settings["damping"])
    sigma = dict(zip(names, values)).get("velocity_sigma", 0.0)
    sim.reset(velocities=initial_velocities(model, float(sigma), seed, run))
    traj = sim.run(settings["duration"], inputs=_inputs(model, settings), rate=settings["rate"])
    out = {"t_final": sim.t, "steps": sim.stats["steps"], "final_positions": traj.nodes[-1],
           "final_velocities": traj.velocities[-1], "min_tension": traj.tensions.min(0),
           "max_tension": traj.tensions.max(0)}
    if "nodes" in settings["outputs"]:
        out["nodes"] = traj.nodes
    return out


def run_batch(key, payload, runs, values, names, seed, faults=None, ledger=None):
    """Simulate runs (indices) with parameter rows ``values`` -> list of (run, status, error, summary) plus
    worker info. ``faults`` (tests): {"exit": runs whose worker calls os._exit, "raise": runs that raise}.
    ``ledger``: a file this process marks with the run in progress (local pool, see :mod:`.execute`)."""
    import os
    import time
    st = worker_state(key, payload)
    faults = faults or {}
    out = []
    for run, row in zip(runs, values):
        if ledger is not None:
            ledger(run)
        t0 = time.perf_counter()
        try:
            if run in faults.get("exit", ()):
                os._exit(17)
            if run in faults.get("raise", ()):
                raise RuntimeError(f"injected failure in run {run}")
            res, status, err = simulate_one(st["base"], names, row, st["settings"], seed, run), OK, ""
        except Exception as exc:      # noqa: BLE001 - any failure of one run is recorded, the others go on
            res, status, err = None, ERROR, f"{type(exc).__name__}: {exc}"
        out.append((int(run), status, err, res, time.perf_counter() - t0))
    if ledger is not None:
        ledger(-1)
    import socket
    info = {"host": socket.gethostname(), "pid": st["pid"], "inits": _INITS[key],
            "init_signatures": st["signatures"], "signatures": _kernel_signatures()}
    return out, info
