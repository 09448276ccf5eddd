"""Input schedules: the rest-length commands u(t) of the actuators.

``u_a`` [m] is the length of string reeled in by actuator ``a`` (positive shortens the rest length):
``rest_c(t) = rest0_c - sum of u_a over the actuators of string c``. Motor angles map to u through the
spool: ``u = sign * spool_radius * (angle - zero)``.

Schedules (all validated against the actuator limits before a run, NaN rejected):

* :func:`no_input` — u = 0;
* :func:`sinusoid` / :func:`paper_sinusoid` — ``u_a = offset_a + s(τ) A_a sin(2 pi τ / T + phase_a)``,
  ``τ = t - start``, with a smooth ramp ``s(τ) = (1 - cos(pi τ / ramp)) / 2`` over the first ``ramp``
  seconds so the rest lengths start continuous (the manipulator paper's three phase-shifted sinusoids
  per stage); ``u = offset`` (rate 0) before ``start``, whatever the ramp (also ``ramp = 0``);
* :func:`table` / :func:`from_csv` — piecewise-linear samples ``(t_k, u_k)``, held outside the range.

An actuator with a ``delay`` follows ``u(t - delay)`` and holds ``u(0)`` (rate 0) until ``t = delay``: the
schedule is never read before t = 0, so :meth:`InputSchedule.bounds` on [0, t_end] covers every value a
delayed actuator takes too.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from tensegrity_engine.errors import InputError
from tensegrity_engine.dynamics.kernels import InputParams

PAPER_PERIOD = 7.0                                  # s
PAPER_AMPLITUDES = (0.0363, 0.0168)                 # m, stage 1 and stage 2 string displacement
PAPER_PHASES = (2 * math.pi / 3, 0.0, -2 * math.pi / 3)


class InputSchedule:
    """A validated schedule for a model's actuators, evaluable in Python and in the compiled kernels."""

    def __init__(self, params: InputParams, n_actuators: int, description: str):
        self.params = params
        self.n_actuators = n_actuators
        self.description = description

    def __call__(self, t):
        """(u [m], u̇ [m/s]) at time(s) t [s]; arrays shaped (len(t), alpha) for array t."""
        from tensegrity_engine.dynamics.kernels import eval_inputs
        ts = np.atleast_1d(np.asarray(t, float))
        u = np.zeros((len(ts), self.n_actuators))
        ud = np.zeros_like(u)
        no_delay = np.zeros(self.n_actuators)
        no_delay.flags.writeable = False      # the kernels' delays are read-only: one compiled signature
        for i, ti in enumerate(ts):
            eval_inputs(float(ti), self.params, u[i], ud[i], no_delay)
        return (u[0], ud[0]) if np.ndim(t) == 0 else (u, ud)

    def bounds(self, t_end: float) -> tuple:
        """(min, max) of u [m] per actuator over [0, t_end] [s], covering every value the schedule takes
        there (delayed actuators included): for sinusoids the offset alone before ``start`` and offset ±
        amplitude from ``start`` on (the ramp only scales the oscillation; exact once a period has run, else
        an outer bound), the knots and the window's ends for tables (exact, piecewise linear)."""
        p = self.params
        na = self.n_actuators
        if p.mode == 0:
            return np.zeros(na), np.zeros(na)
        if p.mode == 1:
            amp, off = np.abs(p.sin_par[:, 0]), p.sin_par[:, 2]
            if t_end < p.start:
                return off.copy(), off.copy()
            return off - amp, off + amp
        tt, uu = p.tab_t, p.tab_u
        inside = (tt > 0.0) & (tt < t_end)
        ends, _ = self(np.array([0.0, max(t_end, 0.0)]))
        rows = np.vstack([uu[inside], ends])
        return rows.min(axis=0), rows.max(axis=0)

    def check_limits(self, model, t_end: float):
        """Raise InputError if u leaves the actuators' reel-in limits on [0, t_end] [s] (exact, see bounds)."""
        if model is None or self.n_actuators == 0:
            return
        lo, hi = model.u_limits[:, 0], model.u_limits[:, 1]
        umin, umax = self.bounds(t_end)
        for a in range(self.n_actuators):
            for value in (umin[a], umax[a]):
                if value < lo[a] - 1e-12 or value > hi[a] + 1e-12:
                    raise InputError(f"input '{self.description}' drives actuator '{model.actuator_names[a]}' to "
                                     f"u = {value:.5g} m before t = {t_end:.4g} s, outside its limits "
                                     f"[{lo[a]:.5g}, {hi[a]:.5g}] m (from angle_limits and spool_radius)")


def _empty(n):
    return np.zeros((0, max(n, 0)))


def no_input(n_actuators: int) -> InputSchedule:
    """u = 0 for all actuators."""
    return InputSchedule(InputParams(0, np.zeros((n_actuators, 3)), 0.0, 0.0, 0.0, np.zeros(1), np.zeros((1, n_actuators))),
                         n_actuators, "none")


def sinusoid(amplitudes, phases, period: float, offsets=None, ramp: float = 1.0, start: float = 0.0) -> InputSchedule:
    """u_a = offset_a + s(τ) amplitude_a sin(2 pi τ/period + phase_a), τ = t - start [s]; amplitudes and
    offsets [m], phases [rad]."""
    amp = np.asarray(amplitudes, float).ravel()
    ph = np.asarray(phases, float).ravel()
    off = np.zeros_like(amp) if offsets is None else np.asarray(offsets, float).ravel()
    if not (len(amp) == len(ph) == len(off)):
        raise InputError("sinusoid: amplitudes, phases and offsets must have one entry per actuator")
    vals = np.concatenate([amp, ph, off, [period, ramp, start]])
    if not np.all(np.isfinite(vals)):
        raise InputError("sinusoid: amplitudes, phases, offsets, period, ramp and start must be finite numbers")
    if period <= 0 or ramp < 0:
        raise InputError(f"sinusoid: period must be > 0 and ramp >= 0 (got period={period}, ramp={ramp})")
    par = np.stack([amp, ph, off], axis=1) if len(amp) else np.zeros((0, 3))
    return InputSchedule(InputParams(1, par, 2 * math.pi / period, float(ramp), float(start), np.zeros(1), np.zeros((1, len(amp)))),
                         len(amp), f"sinusoid(T={period} s)")


def paper_sinusoid(model, period: float = PAPER_PERIOD, amplitudes=PAPER_AMPLITUDES, ramp: float = 1.0,
                   phases=PAPER_PHASES, offsets=None, start: float = 0.0) -> InputSchedule:
    """The manipulator paper's experiment: per stage, three phase-shifted sinusoids (2pi/3, 0, -2pi/3).

    Actuators are taken in model order, three per stage; ``amplitudes`` gives one amplitude [m] per stage.
    ``offsets`` [m] (one per actuator) and ``start`` [s] shift the schedule (see :func:`sinusoid`).
    """
    na = len(model.actuator_names)
    amplitudes = np.atleast_1d(np.asarray(amplitudes, float))
    if na == 0 or na % len(phases) != 0 or na // len(phases) != len(amplitudes):
        raise InputError(f"the paper input needs {len(phases)} actuators per stage and one amplitude per stage; "
                         f"model '{model.name}' has {na} actuators and {len(amplitudes)} amplitude(s) were given")
    amp = np.repeat(amplitudes, len(phases))
    ph = np.tile(np.asarray(phases, float), na // len(phases))
    s = sinusoid(amp, ph, period, offsets=offsets, ramp=ramp, start=start)
    s.description = f"paper sinusoids (T={period} s, A={', '.join(f'{a * 1e3:.1f}' for a in amplitudes)} mm)"
    return s


def table(times, values, description: str = "table") -> InputSchedule:
    """Piecewise-linear schedule through samples ``values`` (k, alpha) [m] at ``times`` (k,) [s]."""
    t = np.asarray(times, float).ravel()
    u = np.asarray(values, float)
    if u.ndim == 1:
        u = u[:, None]
    if len(t) < 1 or u.shape[0] != len(t):
        raise InputError(f"{description}: need one row of values per time (got {len(t)} times, {u.shape[0]} rows)")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(u))):
        k = int(np.argwhere(~np.isfinite(np.column_stack([t, u])))[0][0])
        raise InputError(f"{description}: row {k} contains NaN or inf")
    if len(t) > 1 and np.any(np.diff(t) <= 0):
        k = int(np.argwhere(np.diff(t) <= 0)[0][0]) + 1
        raise InputError(f"{description}: times must increase strictly (row {k}: t = {t[k]})")
    if len(t) == 1:
        t = np.array([t[0], t[0] + 1.0])
        u = np.vstack([u, u])
    return InputSchedule(InputParams(2, np.zeros((u.shape[1], 3)), 0.0, 0.0, 0.0, np.ascontiguousarray(t),
                                     np.ascontiguousarray(u)), u.shape[1], description)


def from_csv(path, model) -> InputSchedule:
    """Read ``t,<actuator names...>`` (header row; t in s, u in m reeled in) into a table schedule.

    Columns may come in any order; every actuator of the model must have a column.
    """
    path = Path(path)
    try:
        with path.open(newline="") as fh:
            rows = [r for r in csv.reader(fh) if r and not r[0].lstrip().startswith("#")]
    except OSError as exc:
        raise InputError(f"{path}: cannot read input file ({exc.strerror})") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start}); save the file as UTF-8") from None
    if len(rows) < 2:
        raise InputError(f"{path}: needs a header 't,{','.join(model.actuator_names)}' and at least one data row")
    header = [h.strip() for h in rows[0]]
    if header[0] != "t":
        raise InputError(f"{path}: first column must be 't' [s], got {header[0]!r}")
    unknown = [h for h in header[1:] if h not in model.actuator_names]
    if unknown:
        raise InputError(f"{path}: unknown column(s) {unknown}; model '{model.name}' has actuators "
                         f"{list(model.actuator_names) or 'none'}")
    missing = [a for a in model.actuator_names if a not in header]
    if missing:
        raise InputError(f"{path}: missing column(s) {missing}; the header must name every actuator "
                         f"({', '.join(model.actuator_names)}) with values in metres reeled in")
    try:
        data = np.array([[float(x) for x in r] for r in rows[1:]])
    except ValueError as exc:
        raise InputError(f"{path}: non-numeric value ({exc})") from exc
    if data.shape[1] != len(header):
        raise InputError(f"{path}: rows must have {len(header)} columns like the header")
    cols = [header.index(a) for a in model.actuator_names]
    return table(data[:, 0], data[:, cols], description=str(path))


def angles_to_u(model, angles) -> np.ndarray:
    """Motor angles [rad] -> reeled-in lengths u [m] through the spool mapping."""
    a = np.asarray(angles, float)
    return model.actuator_sign * model.spool_radius * (a - model.actuator_zero)


def u_to_angles(model, u) -> np.ndarray:
    """Reeled-in lengths u [m] -> motor angles [rad]."""
    return np.asarray(u, float) / (model.actuator_sign * model.spool_radius) + model.actuator_zero
