"""Exceptions raised by the engine. Every message says where the problem is and how to fix it."""


class ModelError(ValueError):
    """A model file (or model dictionary) is invalid.

    The message names the source file, the offending element and a fix.
    """

    def __init__(self, source: str, element: str, problem: str, fix: str):
        self.source = source
        self.element = element
        self.problem = problem
        self.fix = fix
        super().__init__(f"{source}: {element}: {problem}. Fix: {fix}")


class SimulationDiverged(RuntimeError):
    """The integration produced NaN/inf, broke a bar-length bound or could not keep its tolerance.

    Attributes: ``time`` [s] where it happened, ``reason`` (short text), ``element`` (name or ``None``).
    """

    def __init__(self, time: float, reason: str, element: str | None = None, hint: str = ""):
        self.time = time
        self.reason = reason
        self.element = element
        where = f" ({element})" if element else ""
        msg = f"simulation diverged at t = {time:.6g} s: {reason}{where}"
        if hint:
            msg += f". {hint}"
        super().__init__(msg)


class InputError(ValueError):
    """An input schedule (rest-length command) is invalid: NaN, out of limits, wrong columns."""
