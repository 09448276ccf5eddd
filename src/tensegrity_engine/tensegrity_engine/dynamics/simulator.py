"""The simulator: a model plus its mutable state (t, free-node positions Y and velocities V) and an integrator.

    sim = Simulator(model, integrator="dopri5", rtol=1e-6)
    traj = sim.run(14.0, inputs=paper_sinusoid(model), rate=100, progress=True)

``step``/``advance`` move the state in place (the ROS node uses them at a fixed physics rate);
``run`` records a :class:`~tensegrity_engine.dynamics.trajectory.Trajectory`.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from tensegrity_engine.dynamics import kernels as K
from tensegrity_engine.dynamics.contact import contact_energy
from tensegrity_engine.dynamics.contact_report import Contacts, contacts_of
from tensegrity_engine.dynamics.kernels_dopri5 import integrate_dopri5
from tensegrity_engine.dynamics.kernels_rk4 import integrate_rk4
from tensegrity_engine.dynamics.kernel_data import work_ref
from tensegrity_engine.dynamics.kernel_params import kernel_params, kernel_ref
from tensegrity_engine.dynamics.start_contact import check_start
from tensegrity_engine.errors import InputError, SimulationDiverged
from tensegrity_engine.dynamics.inputs import InputSchedule, no_input
from tensegrity_engine.dynamics.trajectory import Trajectory

INTEGRATORS = ("rk4", "dopri5")
_REASONS = {
    K.NONFINITE: ("the state became NaN or infinite", "reduce the step size or check for huge forces"),
    K.DRIFT: ("a bar length drifted beyond the tolerance within one step",
              "reduce the step size (fixed-step) or the tolerances (adaptive)"),
    K.UNDERFLOW: ("the adaptive step size fell below 1e-12 s",
                  "the dynamics is too stiff or discontinuous: check stiffness, damping and inputs"),
    K.REST: ("a rest length became zero or negative", "the input reels in more string than there is"),
    K.SINGULAR: ("the bar-constraint system became singular (bars aligned or degenerate)",
                 "check the geometry; bars must not become parallel in a way that locks constraints"),
    K.BUDGET: ("the adaptive integrator used up its step budget (max_steps per call)",
               "the dynamics is very stiff or chattering; loosen rtol/atol or raise max_steps"),
}


class Simulator:
    """Integrates a :class:`~tensegrity_engine.model.model.Model`.

    Parameters: ``integrator`` "rk4" (fixed step ``dt`` [s], real time) or "dopri5" (adaptive, ``rtol``,
    ``atol``; ``dt`` is the initial/maximum step); ``damping`` switches string damping on/off;
    ``bar_tol`` is the largest relative bar-length drift accepted within one step before the run is
    declared diverged (the projection then restores the lengths to rounding error); ``node_damping``
    [1/s] is mass-proportional damping ``-c M v`` (structural/air damping, also used by ``settle``); None
    takes the model file's ``structural_damping``;
    ``max_steps`` caps the adaptive steps (accepted + rejected) per call so a pathological run stops.

    A start (the model's, or a reset's) deep inside an obstacle is refused by the first integration from it
    with a ModelError, one deeper than a robot at rest sinks in is warned of (``start_warnings``, also a
    UserWarning): dynamics/start_contact.py.
    A model without free coordinates (every node held) runs unchanged in time.
    """

    def __init__(self, model, integrator: str = "dopri5", dt: float = 1e-3, rtol: float = 1e-6, atol: float = 1e-9,
                 damping: bool = True, bar_tol: float = 1e-3, max_step: float = 0.01, node_damping: float | None = None,
                 max_steps: int = 50_000_000):
        if integrator not in INTEGRATORS:
            raise ValueError(f"integrator must be one of {INTEGRATORS}, got {integrator!r}")
        for name, v in (("dt", dt), ("rtol", rtol), ("atol", atol), ("bar_tol", bar_tol), ("max_step", max_step)):
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a positive finite number, got {v}")
        self.model = model
        self.integrator = integrator
        self.dt = float(dt)
        self.rtol = float(rtol)
        self.atol = float(atol)
        self.damping = bool(damping)
        self.bar_tol = float(bar_tol)
        self.max_step = float(max_step)
        self.node_damping = float(model.structural_damping if node_damping is None else node_damping)
        if not (math.isfinite(self.node_damping) and self.node_damping >= 0):
            raise ValueError(f"node_damping must be >= 0, got {node_damping}")
        self.max_steps = int(max_steps)
        na = len(model.actuator_names)
        self._pref = kernel_ref(model)                 # the model's arrays as the kernels take them
        self._work = K.make_work(kernel_params(model), na)     # read here; the kernels write it through _wref
        self._wref = work_ref(self._work)
        self._hint = float(dt)
        self.external_forces = np.zeros((model.n_nodes, 3))
        self.inputs = no_input(na)
        self.stats = {"steps": 0, "evals": 0, "rejected": 0, "max_drift": 0.0, "switches": 0}
        self.start_warnings = []             # the last start's depths in obstacles (dynamics/start_contact.py)
        self.reset()

    # --- state -----------------------------------------------------------------------------------
    def reset(self, positions=None, velocities=None, t: float = 0.0):
        """Set the state from node positions (n,3) [m] and velocities (n,3) [m/s] (default: the model's
        initial configuration at rest). They are projected onto the constraints (linear and bar lengths)."""
        m = self.model
        X = m.positions if positions is None else np.asarray(positions, float)
        if X.shape != (m.n_nodes, 3) or not np.all(np.isfinite(X)):
            raise ValueError(f"positions must be a finite ({m.n_nodes}, 3) array")
        self.Y = np.ascontiguousarray(X[m.free_nodes], dtype=float)
        if velocities is None:
            self.V = np.zeros_like(self.Y)
        else:
            Vn = np.asarray(velocities, float)
            if Vn.shape != (m.n_nodes, 3) or not np.all(np.isfinite(Vn)):
                raise ValueError(f"velocities must be a finite ({m.n_nodes}, 3) array")
            self.V = np.ascontiguousarray(Vn[m.free_nodes], dtype=float)
        K.project(self._pref, self.Y, self.V, self._wref, False)   # a Python bool: the compiled copy the steps use
        self._work.anc_on[:] = 0.0                   # friction anchors are set where contacts start
        self.t = float(t)
        self._start_checked = False                  # by the first integration from here

    def check_start(self) -> list:
        """The state as a start: a ModelError deep inside an obstacle; the warnings (also ``start_warnings``,
        and UserWarnings) deeper than a robot at rest sinks in (dynamics/start_contact.py). The first
        integration after each reset calls it; call it to know earlier."""
        self.start_warnings = check_start(self.model, self.positions)
        for text in self.start_warnings:
            warnings.warn(f"{self.model.source}: {text}", stacklevel=3)
        self._start_checked = True
        return self.start_warnings

    @property
    def positions(self) -> np.ndarray:
        """Node positions (n,3) [m] in model order."""
        return self.model.expand(self.Y)

    @property
    def velocities(self) -> np.ndarray:
        """Node velocities (n,3) [m/s]."""
        return self.model.map_free(self.V)

    def set_inputs(self, schedule: InputSchedule, horizon: float | None = None):
        """Use ``schedule`` from now on; checked against the actuator limits up to ``horizon`` [s]."""
        if schedule.n_actuators != len(self.model.actuator_names):
            raise InputError(f"input has {schedule.n_actuators} actuator(s), model '{self.model.name}' has "
                             f"{len(self.model.actuator_names)}")
        schedule.check_limits(self.model, self.t + (horizon if horizon is not None else 60.0))
        self.inputs = schedule

    def set_external_force(self, node, force):
        """Apply a constant force [N] (3,) at a node (name or index) until changed; zeros to remove."""
        i = self.model.node_index(node) if isinstance(node, str) else int(node)
        f = np.asarray(force, float)
        if f.shape != (3,) or not np.all(np.isfinite(f)):
            raise ValueError("force must be three finite numbers [N]")
        self.external_forces[i] = f

    def forces(self):
        """(tensions [N] per composite string, bar compressive forces [N]) at the current state."""
        m = self.model
        acc = np.zeros_like(self.Y)
        K.accel(self._pref, self.t, self.Y, self.V, self.inputs.params, self.external_forces,
                1.0 if self.damping else 0.0, self.node_damping, self._wref, acc)
        return self._work.T.copy(), self._work.lam * m.bar_length

    def energy(self) -> dict:
        """Kinetic, elastic (strings), gravitational and contact (:func:`~.contact.contact_energy`) energy [J]
        at the current state (inputs at t); "total" is their sum."""
        from tensegrity_engine.dynamics.energy import energies
        u, _ = self.inputs(self.t)
        out = {k: float(v[0]) for k, v in energies(self.model, self.positions[None], self.velocities[None],
                                                     u[None]).items()}
        out["contact"] = float(contact_energy(self._pref, np.ascontiguousarray(self.positions), self._wref))
        out["total"] += out["contact"]
        return out

    def contacts(self) -> Contacts:
        """The touching points at the current state: surface points, normals, forces on the robot."""
        self.forces()                      # one force evaluation leaves the contact slots' values in the work
        return contacts_of(self.model, kernel_params(self.model), self._work)

    # --- integration ----------------------------------------------------------------------------
    def _outputs(self, T: int) -> tuple:
        """Recording buffers for T samples: nodes, velocities, tensions, string lengths, inputs, bar forces."""
        m = self.model
        n, nc, na, nb = m.n_nodes, len(m.string_names), len(m.actuator_names), len(m.bar_names)
        return (np.zeros((T, n, 3)), np.zeros((T, n, 3)), np.zeros((T, nc)), np.zeros((T, nc)), np.zeros((T, na)),
                np.zeros((T, nb)))

    def _integrate(self, t_out: np.ndarray):
        if not self._start_checked:
            self.check_start()
        m = self.model
        out = self._outputs(len(t_out))
        nb = len(m.bar_names)
        stats = np.zeros(7)
        zeta = 1.0 if self.damping else 0.0
        if self.integrator == "rk4":
            st = integrate_rk4(self._pref, self.t, self.Y, self.V, self.dt, t_out, self.inputs.params,
                                 self.external_forces, zeta, self.node_damping, self.bar_tol, self._wref, *out, stats)
            self.stats["switches"] += int(stats[6])
        else:
            st = integrate_dopri5(self._pref, self.t, self.Y, self.V, self._hint, t_out, self.inputs.params,
                                    self.external_forces, zeta, self.node_damping, self.bar_tol, self.rtol,
                                    self.atol, self.max_step, self.max_steps, self._wref, *out, stats)
            if stats[6] > 0:
                self._hint = float(stats[6])
        self.stats["steps"] += int(stats[1])
        self.stats["evals"] += int(stats[2])
        self.stats["rejected"] += int(stats[3])
        self.stats["max_drift"] = max(self.stats["max_drift"], float(stats[4]))
        if st != K.OK:
            self.t = float(stats[0])
            reason, hint = _REASONS.get(st, ("unknown failure", ""))
            idx = int(stats[5])
            element = m.bar_names[idx] if st == K.DRIFT and 0 <= idx < nb else None
            if st == K.REST:
                u, _ = self.inputs(self.t)
                rest = m.rest_length.copy()
                np.subtract.at(rest, m.actuator_string, u)
                element = m.string_names[int(np.argmin(rest))]
            raise SimulationDiverged(self.t, reason, element, hint)
        self.t = float(t_out[-1])
        return out

    def advance(self, duration: float):
        """Advance the state by ``duration`` [s] (no recording). Raises SimulationDiverged on failure."""
        if not (math.isfinite(duration) and duration >= 0):
            raise ValueError(f"duration must be a finite number >= 0, got {duration}")
        if duration > 0:
            self._integrate(np.array([self.t + duration]))

    def run(self, duration: float, inputs: InputSchedule | None = None, rate: float = 100.0,
            progress: bool = False, chunk: float = 0.5) -> Trajectory:
        """Simulate ``duration`` [s] from the current state, sampling at ``rate`` [Hz] (first sample = now)."""
        if not (math.isfinite(duration) and duration > 0):
            raise ValueError(f"duration must be a positive number of seconds, got {duration}")
        if not (math.isfinite(rate) and rate > 0):
            raise ValueError(f"rate must be positive, got {rate}")
        if inputs is not None:
            self.set_inputs(inputs, horizon=duration)
        else:
            self.inputs.check_limits(self.model, self.t + duration)
        m = self.model
        t0 = self.t
        n_out = int(round(duration * rate))
        t_all = t0 + np.arange(n_out + 1) / rate
        first = self._sample_now()
        parts = [[a[None] for a in first]]
        bar = None
        if progress:
            from tqdm import tqdm
            bar = tqdm(total=round(duration, 6), unit="sim s", desc=f"simulating {m.name}", leave=True,
                       bar_format="{l_bar}{bar}| {n:.2f}/{total:.2f} sim s [{elapsed}<{remaining}]")
        per_chunk = max(1, int(round(chunk * rate)))
        try:
            for s in range(1, n_out + 1, per_chunk):
                ts = t_all[s:s + per_chunk]
                parts.append(self._integrate(ts))
                if bar is not None:
                    bar.update(round(ts[-1] - ts[0] + 1.0 / rate, 6))
        finally:
            if bar is not None:
                bar.close()
        cat = [np.concatenate([p[i] for p in parts]) for i in range(6)]
        return Trajectory.from_run(m, t_all, *cat, inputs_description=self.inputs.description,
                                   settings=self.settings())

    def _sample_now(self):
        out = self._outputs(1)
        K.record_sample(self._pref, self.t, self.Y, self.V, self.inputs.params, self.external_forces,
                  1.0 if self.damping else 0.0, self.node_damping, self._wref, 0, *out)
        return [o[0] for o in out]

    def settings(self) -> dict:
        return {"integrator": self.integrator, "dt": self.dt, "rtol": self.rtol, "atol": self.atol,
                "damping": self.damping, "bar_tol": self.bar_tol, "max_step": self.max_step}
