"""N robots stepped together by one compiled call: the learning environments' physics (RK4 at a fixed step).

Each robot has its own state (free-node positions and velocities), its own work buffers and its own kernel
arrays (a model variant per robot, e.g. another friction or string stiffness), and the call advances them
all with the very function :class:`~.simulator.Simulator` uses for one (:func:`~.kernels_rk4.integrate_rk4`,
switching events included): a robot's trajectory is the one its own ``Simulator(variant, "rk4", dt)`` gives,
bit for bit. The robots' kernel arrays and work buffers reach the compiled loop as the addresses of their
structs (:mod:`.kernel_data`), cast back to the struct pointer type inside it (:mod:`.kernels_batch`).

Inputs: over each call, robot i's actuators move linearly from ``u_from[i]`` to ``u_to[i]`` [m reeled in]
(the table schedule of :func:`~.inputs.table` through those two points).
"""
from __future__ import annotations

import math

import numpy as np

from tensegrity_engine.dynamics import kernels as K
from tensegrity_engine.dynamics.inputs import no_input
from tensegrity_engine.dynamics.kernel_data import work_ref
from tensegrity_engine.dynamics.kernel_params import kernel_params, kernel_ref
from tensegrity_engine.dynamics.kernels_batch import TABLE_MODE, advance_batch
from tensegrity_engine.dynamics.start_contact import check_start


class BatchSimulator:
    """``n`` copies of ``model`` stepped together with RK4 at ``dt`` [s] (string damping on or off, bar drift
    tolerance ``bar_tol`` as in :class:`~.simulator.Simulator`). :meth:`set_model` gives a robot its own model
    variant (same structure, other parameter values); :meth:`reset` places robots; :meth:`advance` moves them."""

    def __init__(self, model, n: int, dt: float = 1e-3, damping: bool = True, bar_tol: float = 1e-3):
        if not (isinstance(n, (int, np.integer)) and n >= 1):
            raise ValueError(f"the number of robots must be a positive integer, got {n!r}")
        if not (math.isfinite(dt) and dt > 0):
            raise ValueError(f"dt must be a positive finite number [s], got {dt}")
        self.model, self.n, self.dt = model, int(n), float(dt)
        self.zeta_scale = 1.0 if damping else 0.0
        self.bar_tol = float(bar_tol)
        m = model
        nn, r, nc, na, nb = (m.n_nodes, len(m.free_nodes), len(m.string_names), len(m.actuator_names),
                             len(m.bar_names))
        self.models = [model] * self.n
        self._prefs = [kernel_ref(model)] * self.n
        ncs = kernel_params(model).cs_ob.shape[0]
        self._slot_nodes = slot_nodes(model)
        self._cg, self._cforce = np.zeros((self.n, ncs)), np.zeros((self.n, ncs, 3))   # every robot's contact
        self._works = [K.make_work(kernel_params(model), na)._replace(cg=self._cg[i], cforce=self._cforce[i])
                       for i in range(self.n)]                                   # slots, read in one go
        self._wrefs = [work_ref(w) for w in self._works]
        self._p_addr = np.array([ref.address for ref in self._prefs], np.int64)
        self._w_addr = np.array([ref.address for ref in self._wrefs], np.int64)
        self.node_damping = np.full(self.n, float(m.structural_damping))
        self.t = np.zeros(self.n)
        self.Y = np.zeros((self.n, r, 3))
        self.V = np.zeros((self.n, r, 3))
        self.external_forces = np.zeros((self.n, nn, 3))
        self._rest_input = no_input(na).params                # u = 0: the inputs a robot starts with
        self._mode = np.full(self.n, TABLE_MODE, np.int64)
        self._sin_par = np.zeros((na, 3))
        self._tab_t = np.zeros((self.n, 2))
        self._tab_u = np.zeros((self.n, 2, na))
        self._t_out = np.zeros((self.n, 1))
        self._out = (np.zeros((self.n, 1, nn, 3)), np.zeros((self.n, 1, nn, 3)), np.zeros((self.n, 1, nc)),
                     np.zeros((self.n, 1, nc)), np.zeros((self.n, 1, na)), np.zeros((self.n, 1, nb)))
        self.stats = np.zeros((self.n, 7))
        self.status = np.zeros(self.n, np.int64)
        for i in range(self.n):
            self.reset(i)

    def set_model(self, i: int, variant):
        """Robot ``i`` simulates ``variant`` (a model of the same structure as the batch's, e.g. from
        :func:`~tensegrity_engine.sweep.variants.variant_model`) from now on."""
        m = self.model
        if (variant.n_nodes, variant.bar_names, variant.string_names, variant.actuator_names) != (
                m.n_nodes, m.bar_names, m.string_names, m.actuator_names) or len(variant.obstacles) != len(m.obstacles):
            raise ValueError(f"robot {i}: model '{variant.name}' has another structure than the batch's "
                             f"'{m.name}' (nodes, bars, strings, actuators and obstacles must match)")
        self.models[i] = variant
        self._prefs[i] = kernel_ref(variant)
        self._p_addr[i] = self._prefs[i].address
        self.node_damping[i] = float(variant.structural_damping)

    def reset(self, i: int, positions=None, velocities=None, t: float = 0.0):
        """Robot ``i`` at node positions (n,3) [m] and velocities (n,3) [m/s] (default: its model's initial
        configuration at rest), projected onto the constraints as :meth:`.Simulator.reset` does, its inputs
        at u = 0 (the contact forces are evaluated there)."""
        m = self.models[i]
        X = m.positions if positions is None else np.asarray(positions, float)
        Vn = np.zeros_like(X) if velocities is None else np.asarray(velocities, float)
        if X.shape != (m.n_nodes, 3) or Vn.shape != X.shape or not (np.all(np.isfinite(X)) and np.all(np.isfinite(Vn))):
            raise ValueError(f"positions and velocities must be finite ({m.n_nodes}, 3) arrays")
        check_start(m, X)             # a start deep inside an obstacle: ModelError (dynamics/start_contact.py)
        self.Y[i] = X[m.free_nodes]
        self.V[i] = Vn[m.free_nodes]
        K.project(self._prefs[i], self.Y[i], self.V[i], self._wrefs[i], False)
        self._works[i].anc_on[:] = 0.0
        self.t[i] = float(t)
        self.status[i] = K.OK
        self._out[0][i, 0] = m.expand(self.Y[i])
        self._out[1][i, 0] = m.map_free(self.V[i])
        K.accel(self._prefs[i], self.t[i], self.Y[i], self.V[i], self._rest_input, self.external_forces[i],
                self.zeta_scale, self.node_damping[i], self._wrefs[i], self._works[i].A0)   # contacts at the start

    def advance(self, duration: float, u_from, u_to, active=None) -> np.ndarray:
        """Advance the ``active`` robots (default all) by ``duration`` [s], their inputs moving linearly from
        ``u_from`` to ``u_to`` (n, alpha) [m]. Returns the status codes (n,) (0 ok; see kernels): a robot
        that failed keeps its state at the failure and is not advanced again until reset."""
        if not (math.isfinite(duration) and duration > 0):
            raise ValueError(f"duration must be a positive finite number [s], got {duration}")
        act = np.ones(self.n, np.int64) if active is None else np.asarray(active, bool).astype(np.int64)
        act &= (self.status == K.OK)
        self._tab_t[:, 0] = self.t
        self._tab_t[:, 1] = self.t + duration
        self._tab_u[:, 0] = u_from
        self._tab_u[:, 1] = u_to
        self._t_out[:, 0] = self.t + duration
        advance_batch(self._p_addr, self._w_addr, self._prefs[0], self._wrefs[0], act, self.t, self.Y, self.V,
                      self.dt, self._t_out, self._mode, self._sin_par, self._tab_t, self._tab_u, self.external_forces,
                      self.zeta_scale, self.node_damping, self.bar_tol, *self._out, self.stats, self.status)
        return self.status

    @property
    def positions(self) -> np.ndarray:
        """Node positions (n_robots, n_nodes, 3) [m] at the end of the last advance (or reset)."""
        return self._out[0][:, 0]

    @property
    def velocities(self) -> np.ndarray:
        """Node velocities (n_robots, n_nodes, 3) [m/s]."""
        return self._out[1][:, 0]

    @property
    def tensions(self) -> np.ndarray:
        """String tensions (n_robots, strings) [N] at the end of the last advance."""
        return self._out[2][:, 0]

    def contact_forces(self) -> np.ndarray:
        """Per robot and node, the magnitude of the contact force on it [N] (n_robots, n_nodes) at the end of
        the last advance (a bar's interior touching point counts half at each end)."""
        f = np.sqrt((self._cforce * self._cforce).sum(axis=2)) * (self._cg > 0.0)
        return f @ self._slot_nodes


def slot_nodes(model) -> np.ndarray:
    """(contact slots, nodes) share of each contact slot's force a node gets: 1 for its own slots, 1/2 from a
    touching point inside one of its bars (dynamics/contact.py's slots)."""
    p = kernel_params(model)
    out = np.zeros((p.cs_ob.shape[0], model.n_nodes))
    on_node = np.flatnonzero(p.cs_node >= 0)
    out[on_node, p.cs_node[on_node]] = 1.0
    inside = np.flatnonzero(p.cs_node < 0)
    for end in (0, 1):
        out[inside, model.bars[p.cs_bar[inside], end]] += 0.5
    return out
