"""Energies of a tensegrity state: kinetic, elastic (tension-only strings and compliant supports) and
gravitational [J]."""
from __future__ import annotations

import numpy as np

from tensegrity_engine.dynamics.supports import support_energy


def rest_lengths(model, u) -> np.ndarray:
    """Rest lengths [m] (T, sigma_c) for inputs u (T, alpha) [m reeled in]."""
    u = np.atleast_2d(np.asarray(u, float))
    rest = np.repeat(model.rest_length[None, :], u.shape[0], axis=0)
    if len(model.actuator_names):
        np.subtract.at(rest, (slice(None), model.actuator_string), u)
    return rest


def energies(model, X, Xd, u) -> dict:
    """Energies for positions X (T,n,3), velocities Xd (T,n,3), inputs u (T,alpha). Returns arrays (T,).

    Kinetic ½ Ẋᵀ M Ẋ with the consistent bar mass matrix; elastic ½ κ e² for taut composite strings
    (κ = EA/ξ0 or the spring stiffness); ``supports`` the compliant supports' potential (translational
    k |x − anchor|²/2, rotational k (1 − cos θ); :mod:`.supports`), also part of ``elastic``; gravity −Σ W·x
    with the nodal weights.
    """
    X = np.asarray(X, float)
    Xd = np.asarray(Xd, float)
    kin = 0.5 * np.einsum("tid,ij,tjd->t", Xd, model.mass_matrix, Xd)
    rest = rest_lengths(model, u)
    e = model.string_lengths(X) - rest
    kap = model.string_stiffness_at(rest)
    sup = support_energy(model, X)
    el = 0.5 * np.sum(np.where(e > 0, kap * e * e, 0.0), axis=1) + sup
    grav = -np.einsum("tid,id->t", X, model.gravity_forces)
    return {"kinetic": kin, "elastic": el, "supports": sup, "gravity": grav, "total": kin + el + grav}


def linear_momentum(model, Xd) -> np.ndarray:
    """Total linear momentum (T,3) [kg m/s] = Σ_ij M_ij ẋ_j."""
    return np.einsum("ij,tjd->td", model.mass_matrix, np.asarray(Xd, float))


def centre_of_mass(model, X) -> np.ndarray:
    """Centre of mass (T,3) [m] of bars (uniform) and point masses."""
    X = np.asarray(X, float)
    m = model.mass_matrix.sum(axis=1)          # row sums: m/2 per bar end + point masses
    return np.einsum("i,tid->td", m, X) / m.sum()
