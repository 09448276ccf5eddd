"""Contact forces at rest for the statics: the dynamics' contact law (:mod:`~tensegrity_engine.dynamics.contact`)
at zero velocity, with friction anchors held where a settled simulation left them (or set where the nodes
touch at a given shape). A robot standing on a floor is then an ordinary static problem: normal springs
under its feet, tangential anchor springs holding it where it stands (Coulomb's cap applies as in the
dynamics)."""
from __future__ import annotations

import numpy as np

from tensegrity_engine.dynamics.contact import contact_forces, update_anchors
from tensegrity_engine.dynamics.kernel_data import work_ref
from tensegrity_engine.dynamics.kernel_params import kernel_params, kernel_ref
from tensegrity_engine.dynamics.kernels import make_work


class ContactLoads:
    """``loads(X)``: the (n, 3) contact forces [N] on the nodes at positions X (n, 3) [m], at rest, plus the
    constant ``external`` loads (n, 3) [N] (so it stands in for an external load in the statics)."""

    def __init__(self, model, external=None):
        self.model = model
        self.external = np.zeros((model.n_nodes, 3)) if external is None else np.asarray(external, float)
        self._pref = kernel_ref(model)
        self._work = make_work(kernel_params(model), len(model.actuator_names))
        self._wref = work_ref(self._work)

    def anchor_at(self, X):
        """Friction anchors where the nodes touch at positions X (zero tangential spring there)."""
        self._work.anc_on[:] = 0.0
        X = np.ascontiguousarray(X, dtype=float)
        update_anchors(self._pref, X, np.zeros_like(X), self._wref)
        return self

    def anchors_from(self, work):
        """Take over the anchors of a simulator's work buffers (``Simulator._work``)."""
        self._work.anc[:] = work.anc
        self._work.anc_on[:] = work.anc_on
        return self

    def __call__(self, X) -> np.ndarray:
        X = np.ascontiguousarray(X, dtype=float)
        F = np.zeros_like(X)
        contact_forces(self._pref, X, np.zeros_like(X), self._wref, F)
        return F + self.external
