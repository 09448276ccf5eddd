"""The entry point every tensegrity node uses: init, spin until Ctrl-C / SIGTERM / SIGHUP / shutdown, clean up.

Exit codes: 0 a clean stop; 1 the node stopped but could not leave its hardware safe (its ``close()``
returned the problem, e.g. torque state unknown: a launch file or script must not take that for success);
2 the node could not start."""
from __future__ import annotations

import atexit
import os
import signal
import sys
import time
import traceback

import rclpy
import rclpy.logging
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

from .node_process import STOP_SIGNALS
from .parent_watch import gone_message, watch_parent


DEBUG_ENV = "TENSEGRITY_DEBUG"      # set to 1 for full tracebacks of start-up errors


class StartupFailed(Exception):
    """Raised from a node's callback when it finds it cannot start after all (e.g. its device never
    appeared): run() ends the node as for a start-up error (one line on stderr, exit code 2)."""


class Finished(Exception):
    """Raised from a node's callback when its job is done (e.g. a replay reached the end of its file): run()
    ends the node cleanly with exit code 0, as after Ctrl-C. Only for a node run by run(), which sets its
    ``standalone`` attribute (in-process nodes of tests or tensegrity-bringup never see it raised)."""


EXIT_UNSAFE = 1                     # stopped, but close() reported hardware it could not make safe
EXIT_STARTUP = 2                    # the node could not start

# SIGINT/SIGTERM: rclpy's handlers shut the context down. SIGHUP (terminal closed, ssh lost) would kill the
# process without any clean-up (torque stays on): it ends the spin the same way instead.
HANGUP = getattr(signal, "SIGHUP", None)


def run(node_factory, args=None, exit_process: bool = True) -> int:
    """Create the node with ``node_factory()`` after ``rclpy.init(args)`` and spin it. Returns an exit code:
    0 after Ctrl-C / SIGTERM / SIGHUP / shutdown, 1 if the node's clean-up reported hardware it could not
    make safe, 2 if the node could not start (bad parameter, model file, ...: one line on stderr naming the
    node and the reason; ``TENSEGRITY_DEBUG=1`` adds the traceback).

    Before anything else the engine's numba kernels the node calls are made ready (loaded from numba's
    cache, or compiled on the first start), so they never compile inside a timer callback: the factory's
    ``ENGINE_KERNELS`` (parts of ``tensegrity_engine.warmup.PARTS``; none if it declares none). Ctrl-C /
    SIGTERM during that step ends the process within a fraction of a second with exit code 0, like a Ctrl-C
    later on.

    The node also stops as on Ctrl-C when the process that started it is gone (see :mod:`.parent_watch`).

    With ``exit_process`` (a node's main) the process then ends at once with that code (:func:`end_process`)
    instead of returning."""
    code = _run(node_factory, args)
    if exit_process:
        end_process(code)
    return code


def end_process(code: int):
    """End the process with ``code`` once the node is closed: the exit handlers run and the output is flushed,
    but the interpreter's teardown is skipped. That teardown garbage-collects every object numba, SciPy and
    rclpy made, and took 10-15 s at a load of 13-17 on 2 cores (longer than launch's 5 s SIGINT grace):
    nothing of ours needs it (the node's clean-up, torque off included, has run)."""
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):          # a closed pipe: nothing more to say
                pass
        os._exit(code)


def _run(node_factory, args) -> int:
    """run() up to the exit code."""
    watch_parent(_parent_gone)
    try:
        _prepare_kernels(node_factory)
    except KeyboardInterrupt:
        ignore_signals()                       # a repeated stop signal must not cut the exit short
        return 0
    _install_signal_handlers()
    priority = raise_priority(getattr(node_factory, "NICE", 0))     # before DDS starts its threads
    rclpy.init(args=sys.argv if args is None else args)
    if priority:
        rclpy.logging.get_logger(getattr(node_factory, "__name__", "node")).warning(priority)
    if _signalled:                             # Ctrl-C before rclpy's handlers were in place
        rclpy.shutdown()
        return 0
    return _spin_and_close(node_factory)


def _install_signal_handlers():
    """rclpy's own handlers shut the context down on SIGINT/SIGTERM (which ends the spin) and then call the
    Python handler: make that a no-op, so no KeyboardInterrupt is raised at an arbitrary point (inside rclpy
    it leaves half-built objects that print tracebacks when collected). SIGHUP stops the node like Ctrl-C."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _quiet)
    if HANGUP is not None:
        signal.signal(HANGUP, _hang_up)


def _spin_and_close(node_factory) -> int:
    """Build the node, spin it until stopped, close it (its hardware made safe) and shut rclpy down; the
    exit code of :func:`run`."""
    node = executor = None
    problem = startup_failure = ""
    try:
        node, code = _create_node(node_factory)
        if node is None:
            return code
        node.standalone = True                 # its own process: it may end itself (Finished)
        executor = _build_executor(node)
        if executor is not None:               # None: stopped while the node was being built
            executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException, Finished):
        pass
    except StartupFailed as exc:
        startup_failure = f"error: {startup_error(node_factory, exc)}"
    except Exception:
        if not _context_going_down():
            raise
    finally:
        # one Ctrl-C is enough: a terminal sends SIGINT to the whole process group and a launcher sends
        # its own, and a second KeyboardInterrupt must not cut the clean-up (torque off) short
        ignore_signals()
        if node is not None:
            problem = close_node(node)
        if executor is not None:           # released while the context is valid: collected later, after
            executor.shutdown(timeout_sec=1.0)   # rclpy.shutdown, its guard conditions print a traceback
        if rclpy.ok():
            rclpy.shutdown()
    if problem:
        print(f"error: {getattr(node_factory, '__name__', 'node')} stopped unsafely: {problem}", file=sys.stderr,
              flush=True)
        return EXIT_UNSAFE
    if startup_failure:
        print(startup_failure, file=sys.stderr, flush=True)
        return EXIT_STARTUP
    return 0


def _create_node(node_factory):
    """(node, None), or (None, exit code) if it could not start: 0 when a stop signal came while it was
    starting, else EXIT_STARTUP after one line on stderr (with the traceback under TENSEGRITY_DEBUG=1).
    A stop signal interrupts the factory wherever it is (KeyboardInterrupt): a model file that never
    delivers (a FIFO, a hung mount) must not make the node deaf to Ctrl-C."""
    try:
        _starting.append(True)
        try:
            return node_factory(), None
        finally:
            _starting.clear()
    except (KeyboardInterrupt, ExternalShutdownException):
        raise
    except Exception as exc:               # noqa: BLE001 - start-up errors are the user's to fix
        if not rclpy.ok():                 # stopped by a signal while starting: not an error
            return None, 0
        print(f"error: {startup_error(node_factory, exc)}", file=sys.stderr, flush=True)
        if os.environ.get(DEBUG_ENV):
            traceback.print_exc()
        return None, EXIT_STARTUP


def _context_going_down() -> bool:
    """A signal shuts the context down asynchronously; a callback or a take running at that instant fails
    ("context is invalid", pybind conversion errors). True if the context goes down within 0.2 s (that
    race: a clean shutdown); False means the error was real."""
    for _ in range(20):
        if not rclpy.ok():
            return True
        time.sleep(0.01)
    return not rclpy.ok()


def _build_executor(node):
    """The executor for ``node``, or None if a stop signal already shut the context down (building one then
    fails half-way, and the half-built executor prints a traceback when collected). Built with the stop
    signals held back, so none lands inside the constructor; one that arrives meanwhile is delivered right
    after, and the spin ends at once. Always single-threaded: rclpy's MultiThreadedExecutor spins without
    waiting (a whole core per node, ros2/rclpy#1223); work that must not delay the executor runs on threads
    of the node's own (:mod:`.input_thread`, the controllers' update worker)."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS) if hasattr(signal, "pthread_sigmask") else None
    try:
        if not rclpy.ok():
            return None
        executor = SingleThreadedExecutor()
        executor.add_node(node)
    finally:
        if held is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
    return executor


def _prepare_kernels(node_factory):
    kernels = getattr(node_factory, "ENGINE_KERNELS", ())
    if not kernels:
        return
    from tensegrity_engine.warmup import ensure_kernels
    name = os.path.basename(sys.argv[0] or "") or getattr(node_factory, "__name__", "node")
    logger = rclpy.logging.get_logger(name.removesuffix(".py"))
    ensure_kernels(kernels, log=logger.info)


_signalled = []
_starting = []          # non-empty while the node factory runs


def _quiet(signum, frame):
    """Python-level SIGINT/SIGTERM handler under rclpy's (which has already shut the context down); before
    rclpy.init it only notes the signal, and run() stops right after init. While the node is being made it
    raises KeyboardInterrupt: the factory may be blocked in a read that Python retries after a handler
    that returns (PEP 475), e.g. opening a FIFO that no one writes."""
    _signalled.append(signum)
    if _starting:
        raise KeyboardInterrupt


PRIORITY_ENV = "TENSEGRITY_NICE"     # overrides a node's NICE (0: normal priority)


def raise_priority(nice: int) -> str:
    """A higher scheduling priority (niceness ``nice`` < 0) for this process's main thread and every thread it
    starts later (DDS's receive threads), so a loaded CPU delays its deadlines less. Not real-time
    scheduling: dynamixel-sdk busy-waits for each answer, which at a real-time priority would starve the
    rest of the machine. The environment variable TENSEGRITY_NICE overrides ``nice``. Returns '' if done or
    not asked for, else a warning saying why not and how to allow it."""
    nice = int(os.environ.get(PRIORITY_ENV, nice) or 0)
    if nice >= 0:
        return ""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, max(nice, -20))
        return ""
    except (AttributeError, OSError) as exc:
        return (f"could not raise the scheduling priority to nice {nice} ({exc.__class__.__name__}: {exc}): under "
                f"CPU load the safety deadline can be noticed late; allow it (limits.conf: '<user> - nice "
                f"{nice}', or CAP_SYS_NICE), or set {PRIORITY_ENV}=0 to silence this")


def _hang_up(signum, frame):
    """SIGHUP: handled exactly as a Ctrl-C (a SIGINT to this process, which rclpy's handler turns into a
    context shutdown), so the spin ends and the node's clean-up (torque off) runs."""
    _signalled.append(signum)
    os.kill(os.getpid(), signal.SIGINT)


def _parent_gone(pid: int, name: str):
    """The launcher is gone: a SIGINT to this process (the Ctrl-C path: clean-up, torque off), then say why.
    The signal comes first: with the launcher gone, stderr may be a broken pipe."""
    _signalled.append(signal.SIGINT)
    os.kill(os.getpid(), signal.SIGINT)
    try:
        rclpy.logging.get_logger("node_main").error(gone_message(pid, name))
    except Exception:                          # noqa: BLE001 - logging must not matter here
        pass


def startup_error(node_factory, exc) -> str:
    """One line for a node that could not start: '<node class> could not start: <reason>'."""
    what = getattr(node_factory, "__name__", "node")
    reason = str(exc) or type(exc).__name__
    if type(exc).__name__ == "InvalidParameterTypeException":
        reason += " (write the value in the declared type, e.g. 1000.0 for a float, 'text' for a string)"
    return f"{what} could not start: {reason}"


def ignore_signals():
    """Ignore further SIGINT/SIGTERM/SIGHUP (called once shutting down; the clean-up is short and bounded)."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


def close_node(node) -> str:
    """Release what the node holds (its ``close()``: torque off, sockets, threads), then destroy it. Returns
    what ``close()`` reported it could not make safe ('' if nothing)."""
    close = getattr(node, "close", None)
    try:
        problem = close() if close is not None else None
    finally:
        node.destroy_node()
    return problem if isinstance(problem, str) else ""
