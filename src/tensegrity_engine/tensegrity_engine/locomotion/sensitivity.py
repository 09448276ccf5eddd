"""Quasi-static sensitivity of a robot standing on its ground nodes: how the centre of mass and the string
tensions move per metre of actuator input, from the analytic tangent stiffness (statics/modal.py) with the
ground nodes held where they stand (friction holds them until the robot tips) and the bars rigid."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy import linalg

from tensegrity_engine.locomotion.support import mass_weights
from tensegrity_engine.statics.balance import static_forces
from tensegrity_engine.statics.contact_loads import ContactLoads
from tensegrity_engine.statics.modal import bar_jacobian, bar_multipliers, string_gradients, tangent_stiffness

DU = 1e-6        # m: step of the tension derivative by differences (tension is linear in rest length for springs)


@dataclass(frozen=True)
class Sensitivity:
    """At one shape: ``com`` (3,) [m], ``com_du`` (3, alpha) [m/m], ``tension`` (sigma,) [N], ``tension_du``
    (sigma, alpha) [N/m], ``nodes_du`` (n, 3, alpha) [m/m] (first-order changes per metre of each actuator's
    input)."""
    com: np.ndarray
    com_du: np.ndarray
    tension: np.ndarray
    tension_du: np.ndarray
    nodes_du: np.ndarray | None = None


def actuator_map(model) -> np.ndarray:
    """(sigma, alpha) 1 where actuator a reels string c."""
    S = np.zeros((len(model.string_names), len(model.actuator_names)))
    S[model.actuator_string, np.arange(len(model.actuator_names))] = 1.0
    return S


def rest_lengths(model, u) -> np.ndarray:
    """(sigma,) [m] rest lengths for actuator inputs u (alpha,) [m reeled in]."""
    rest = model.rest_length.copy()
    np.subtract.at(rest, model.actuator_string, np.asarray(u, float))
    return rest


def pinned_sensitivity(model, X, u, pinned) -> Sensitivity:
    """Linear response at positions X (n, 3) [m] and inputs u (alpha,) [m] with the nodes ``pinned`` (indices)
    fixed: ``Kt dY - Jbᵀ dλ = B du`` on the free coordinates, ``Jb dY = 0`` (bars keep their length)."""
    X = np.asarray(X, float)
    rest = rest_lengths(model, u)
    loads = ContactLoads(model).anchor_at(X)(X)
    Kt = tangent_stiffness(model, X, rest, lam=bar_multipliers(model, X, rest, loads), external=loads)
    _, t0 = static_forces(model, X, rest)
    _, t1 = static_forces(model, X, rest + DU)
    dt_drest = (t1 - t0) / DU                                       # -dt/du per string, 0 when slack
    G = string_gradients(model, X)                                  # (sigma, 3n)
    Q3 = sp.kron(model.Q_sparse, sp.identity(3), format="csr")      # (3n, 3r)
    S = actuator_map(model)
    B = np.asarray((Q3.T @ (G.T @ (dt_drest[:, None] * S))))        # reduced force per unit u: -Q3ᵀ Gᵀ dt/du
    held = np.zeros(model.n_nodes, bool)
    held[np.asarray(pinned, int)] = True
    free = np.flatnonzero(np.repeat(np.asarray(abs(model.Q_sparse[~held]).sum(axis=0)).ravel() > 0, 3)
                          & ~np.repeat(np.asarray(abs(model.Q_sparse[held]).sum(axis=0)).ravel() > 0, 3))
    Jb = bar_jacobian(model, X)[:, free]
    Jb = Jb[np.abs(Jb).sum(axis=1) > 0]
    nf, nb = len(free), Jb.shape[0]
    A = np.block([[Kt[np.ix_(free, free)], -Jb.T], [Jb, np.zeros((nb, nb))]])
    sol = linalg.lstsq(A, np.vstack([B[free], np.zeros((nb, B.shape[1]))]))[0]
    dY = np.zeros((Q3.shape[1], B.shape[1]))
    dY[free] = sol[:nf]
    dX = np.asarray(Q3 @ dY).reshape(model.n_nodes, 3, -1)           # (n, 3, alpha)
    w = mass_weights(model)
    com_du = np.einsum("n,nka->ka", w, dX)
    dL = np.asarray(G @ dX.reshape(3 * model.n_nodes, -1))
    tension_du = -dt_drest[:, None] * (dL + S)
    return Sensitivity(w @ X, com_du, t0, tension_du, dX)
