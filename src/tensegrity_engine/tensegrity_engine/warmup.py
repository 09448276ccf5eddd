"""Compile (and cache) the numba kernels ahead of use, so a real-time node starts in well under a second.

numba caches machine code per function (``cache=True``): next to the sources in ``__pycache__`` when that
is writable, else in numba's user-wide cache (``~/.cache/numba`` or ``NUMBA_CACHE_DIR``). The first use in
a fresh checkout, install or image otherwise compiles for about a minute inside whichever process gets there
first (e.g. the simulator node, which then cannot keep real time). ``compile_kernels`` runs every
compiled code path the nodes take: equilibrium (settle), fixed-step RK4 and adaptive Dormand-Prince
integration with inputs, forces, input schedules evaluated from Python, and both clearance sweeps.

Nodes call :func:`ensure_kernels` before they start their timers: it loads cached kernels in-process
(about a second) or, on the first start, compiles them in a child process that Ctrl-C / SIGTERM ends at
once (numba writes each function's cache entry when that function is compiled, atomically, so an
interrupted compile keeps the functions finished before it; the next start compiles only the rest).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

# The engine's compiled parts and the kernels (numba dispatchers) each one leaves in the cache; a node
# asks for the parts it calls (the simulator: dynamics; the collision monitor: collision; the learning
# environments: batch).
PARTS = {
    "dynamics": (("tensegrity_engine.dynamics.kernels_rk4", "integrate_rk4"),
                 ("tensegrity_engine.dynamics.kernels_dopri5", "integrate_dopri5"),
                 ("tensegrity_engine.dynamics.kernels", "accel"), ("tensegrity_engine.dynamics.kernels", "project"),
                 ("tensegrity_engine.dynamics.kernels", "eval_inputs"),
                 ("tensegrity_engine.dynamics.kernels", "record_sample"),
                 ("tensegrity_engine.dynamics.contact", "contact_energy")),
    "batch": (("tensegrity_engine.dynamics.kernels_batch", "advance_batch"),),
    "identify": (("tensegrity_engine.identify.sensitivity_kernels", "rk4_sensitivities"),),
    "collision": (("tensegrity_engine.collision.capsules", "sweep_pairs"),
                  ("tensegrity_engine.collision.capsules", "sweep_pairs_pruned"),
                  ("tensegrity_engine.collision.obstacles", "capsules_vs_obstacles")),
}
WARMUP_MODEL = "stacked_manipulator"    # has actuators, so it reaches the input paths too


def compile_kernels(model_name: str = WARMUP_MODEL, parts=tuple(PARTS), progress=None) -> float:
    """Compile (or load from the cache) the kernels of ``parts`` with ``model_name``. ``progress(text)`` is
    called before each step. Returns the seconds taken."""
    from tensegrity_engine.collision.capsules import check, model_elements
    from tensegrity_engine.collision.obstacles import bar_contacts, half_space
    from tensegrity_engine.statics.equilibrium import settle
    from tensegrity_engine.dynamics.inputs import sinusoid, table
    from tensegrity_engine.model.load import load_model
    from tensegrity_engine.dynamics.simulator import Simulator

    unknown = set(parts) - set(PARTS)
    if unknown:
        raise ValueError(f"unknown kernel part(s) {sorted(unknown)}; known: {sorted(PARTS)}")
    say = progress or (lambda text: None)
    t0 = time.monotonic()
    model = load_model(model_name)
    if "dynamics" in parts:
        say("equilibrium (adaptive Dormand-Prince)")
        X = settle(model).positions
        for integrator in ("rk4", "dopri5"):
            say(f"{integrator} integration with inputs")
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
            sim.energy()
        if len(model.actuator_names):
            say("input schedules evaluated in Python")
            na = len(model.actuator_names)
            sinusoid([1e-4] * na, [0.0] * na, 7.0)(0.5)
            table([0.0, 1.0], [[0.0] * na, [1e-4] * na])(0.5)
    else:
        X = model.positions
    if "identify" in parts:
        say("sensitivities of dynamic identification")
        from tensegrity_engine.identify.sensitivity import warm_up
        warm_up(model, X)
    if "batch" in parts:
        say("batch stepping (learning environments)")
        _advance_batch(model, X)
    if "collision" in parts:
        say("clearance sweeps")
        elements = model_elements(model)
        check(elements, X, 0.0)
        check(elements, X, 0.0, prune=True)
        bar_contacts(model, X, half_space([0.0, 0.0, 1.0]))
    return time.monotonic() - t0


def _advance_batch(model, X):
    """Two robots of ``model`` advanced together for two RK4 steps (dynamics/batch.py)."""
    import numpy as np

    from tensegrity_engine.dynamics.batch import BatchSimulator
    batch = BatchSimulator(model, 2)
    for i in range(2):
        batch.reset(i, X)
    u = np.zeros((2, len(model.actuator_names)))
    batch.advance(0.002, u, u)


def _dispatchers(part: str):
    import importlib
    return [getattr(importlib.import_module(module), name) for module, name in PARTS[part]]


def kernels_cached(parts=tuple(PARTS)) -> bool | None:
    """True if numba's cache holds a usable entry (this numba, CPU and source) for every kernel of
    ``parts``, False if not, None if numba's cache cannot be inspected (another numba version)."""
    try:
        from numba.core.registry import cpu_target
        codegen = cpu_target.target_context.codegen()
        for part in parts:
            for dispatcher in _dispatchers(part):
                cache = dispatcher._cache
                index = cache._cache_file._load_index()
                if not any(cache._index_key(key[0], codegen) == key for key in index):
                    return False
        return True
    except Exception:       # noqa: BLE001 - private numba API: treat any change as "cannot tell"
        return None


def cache_location(part: str = "dynamics") -> str:
    """The directory numba caches the kernels of ``part`` in (for messages)."""
    try:
        return str(_dispatchers(part)[0]._cache._cache_path)
    except Exception:       # noqa: BLE001
        return os.environ.get("NUMBA_CACHE_DIR", "numba's cache")


class _Stop(KeyboardInterrupt):
    """SIGINT or SIGTERM while preparing the kernels."""


def _raise_stop(signum, frame):
    raise _Stop(signal.Signals(signum).name)


def ensure_kernels(parts, log=print) -> float:
    """Make the kernels of ``parts`` ready in this process before a node starts its timers: load them from
    numba's cache, or first compile them in a child process (progress through ``log``). SIGINT and SIGTERM
    raise KeyboardInterrupt here within a fraction of a second (the child is killed; what it finished
    stays cached). Returns the seconds taken. Call it from the main thread."""
    parts = tuple(parts)
    if not parts:
        return 0.0
    t0 = time.monotonic()
    previous = {sig: signal.signal(sig, _raise_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        if kernels_cached(parts) is not True:
            log(f"compiling the engine's numba kernels ({', '.join(parts)}): first start only, about a minute on "
                f"an idle 2-core machine, several with the cores busy; cached in {cache_location(parts[0])} "
                "(Ctrl-C stops it; `tensegrity compile` does it ahead)")
            code = compile_in_child(parts, log)
            if code != 0:
                log(f"compiling the kernels in a child process failed (exit code {code}); "
                    "compiling in this process")
            elif kernels_cached(parts) is False:
                log(f"numba could not cache the kernels in {cache_location(parts[0])} (not writable?): "
                    "set NUMBA_CACHE_DIR to a writable directory; compiling in this process")
            log(f"kernels compiled in {time.monotonic() - t0:.0f} s")
        _load_deferring_signals(parts)      # from the cache: about a second
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return time.monotonic() - t0


def _load_deferring_signals(parts):
    """``compile_kernels(parts)`` (loads from the cache) with SIGINT/SIGTERM held until it returns: raised
    inside it, the stop can land in one of numba's ctypes callbacks, which prints a traceback and drops the
    exception (the load goes on and the stop is lost). Raises KeyboardInterrupt after the load if one came."""
    stops = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, frame: stops.append(signum))
    compile_kernels(parts=parts)
    if stops:
        raise _Stop(signal.Signals(stops[0]).name)


def compile_in_child(parts, log) -> int:
    """Run ``compile_kernels(parts)`` in a child process, relaying its progress lines; kill it on any
    exception (the KeyboardInterrupt of a signal). Returns its exit code."""
    cmd = [sys.executable, "-m", "tensegrity_engine.warmup", "--parent", str(os.getpid()), *parts]
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)      # a terminal's Ctrl-C reaches it through us only
    try:
        for line in child.stdout:
            line = line.rstrip()
            if line:
                log(f"  {line}")
        return child.wait()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()


def _child_main(argv) -> int:
    """``python -m tensegrity_engine.warmup [--parent PID] PART...``: compile, print progress; exit when
    the parent process is gone (so a SIGKILLed node does not leave a compiling child behind)."""
    if argv[:1] == ["--parent"]:
        parent, argv = int(argv[1]), argv[2:]

        def watch():
            while os.getppid() == parent:
                time.sleep(0.2)
            os._exit(1)
        threading.Thread(target=watch, daemon=True).start()
    t0 = time.monotonic()
    compile_kernels(parts=tuple(argv) or tuple(PARTS),
                    progress=lambda text: print(f"[{time.monotonic() - t0:5.1f} s] {text}", flush=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(_child_main(sys.argv[1:]))
