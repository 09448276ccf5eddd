"""How finely fixed-step RK4 must step a model to stay faithful: the stiffest mode and the substeps it needs.

A tensegrity with stiff strings (EA 2000 N on 0.1 kg bars) has modes near 1000-2000 rad/s. Classic RK4 on
a harmonic mode ``ẍ = -ω² x`` multiplies the mode's energy by ``|R(iωh)|²`` per step, where
``R(z) = 1 + z + z²/2 + z³/6 + z⁴/24``:

    |R(iy)|² = 1 - y⁶/72 + y⁸/576          (y = ωh; the phase error does not change the energy)

so every step removes about ``(ωh)⁶/72`` of the mode's energy (above ``ωh = 2√2`` it grows instead:
unstable). At the real-time simulator's 1 kHz, ``ωh`` is 1-2 for such models and their stiffest modes lose
1-50 % of their energy per step: most of the energy of a knock is gone within seconds.

The accuracy goal (:func:`step_for_accuracy`): a relative energy error of at most ``ε`` (``accuracy``) of the
largest kinetic energy over ``T`` (``horizon``) simulated seconds. Each mode loses energy at its own rate,
which grows with ω, so the worst case is all the energy in the stiffest mode; a mode's energy is its peak
kinetic energy, so that energy is at most the largest kinetic energy. Over ``N = T / h`` steps the loss is
``N (ωh)⁶/72`` of it, and the goal ``T ω⁶ h⁵ / 72 <= ε`` gives the largest step

    h = (72 ε / (T ω⁶))^(1/5),   i.e. ωh = (72 ε / (ω T))^(1/5)

(ωh ≈ 0.094 at ω = 1000 rad/s, ε = 1e-3, T = 10 s; ≈ 0.082 at 2000 rad/s). Dropping the ``+y⁸/576`` term
overstates the loss, so this step is on the safe side. A physics step ``dt`` is then split into
``n = ceil(dt / h)`` equal RK4 substeps (:func:`plan_substeps`; the simulator's ``dt`` is ``dt / n``).

The stiffest mode comes from the tangent stiffness about the given state (:func:`stiffest_mode`, the same
analysis as ``tensegrity modes``): exact (dense, on the bar-length tangent space) up to
:data:`DENSE_MAX_DOF` free coordinates, above that an upper bound (the largest generalised eigenvalue of the
stiffness and mass without the bar constraints, which can only raise it; sparse Lanczos). A tensegrity's
stiffness changes with its tension and shape; the axial string stiffness EA/ξ dominates the stiff modes and
changes little, and the plan multiplies ω by ``safety`` (default 1.1, stiffness 21 % above the start state)
to cover the rest.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

DENSE_MAX_DOF = 1500       # free coordinates up to which the stiffest mode is exact (dense eigensolver)
DAMPED_MAX_DOF = 400       # tangent-space dimension up to which the damped eigenvalues are checked too
SAFETY = 1.1               # ω is multiplied by this before the step is chosen
HORIZON = 10.0             # s: the energy goal is per this much simulated time
ACCURACY = 1e-3            # relative energy error (of the largest kinetic energy) per HORIZON


@dataclass(frozen=True)
class StiffestMode:
    omega: float           # rad/s (damped spectral radius if larger, see stiffest_mode)
    number: int            # elastic mode number, 1 = lowest (as ``tensegrity modes``); 0 if only bounded
    count: int             # elastic modes
    string: str            # the string with the largest share of the mode's strain energy ("" if none)
    exact: bool            # False: an upper bound (large model, constraints left out)

    @property
    def name(self) -> str:
        """'mode 18 of 18 (157 Hz, mostly string s3)' or 'highest mode (bound, ...)'."""
        what = f"mode {self.number} of {self.count}" if self.exact else "highest mode (upper bound)"
        detail = f"{self.omega / (2 * math.pi):.4g} Hz" + (f", mostly string {self.string}" if self.string else "")
        return f"{what} ({detail})"


@dataclass(frozen=True)
class StepPlan:
    """RK4 substeps for a physics step ``dt``; see the module docstring."""
    dt: float              # s, physics step
    substeps: int          # RK4 substeps per physics step, used
    needed: int            # substeps the accuracy goal needs (substeps < needed: capped by max_substeps)
    step_needed: float     # s, largest RK4 step meeting the goal (with the safety factor)
    mode: StiffestMode
    accuracy: float        # the goal: relative energy error per horizon
    horizon: float         # s
    safety: float

    @property
    def effective_step(self) -> float:
        """The RK4 step actually taken [s]."""
        return self.dt / self.substeps

    @property
    def omega_h(self) -> float:
        return self.mode.omega * self.effective_step

    @property
    def expected_error(self) -> float:
        """Worst-case relative energy error per ``horizon`` at the effective step (all the energy in the
        stiffest mode, no safety factor); ``inf`` if RK4 is unstable there."""
        return expected_energy_error(self.mode.omega, self.effective_step, self.horizon)

    @property
    def capped(self) -> bool:
        return self.substeps < self.needed

    def describe(self) -> str:
        s = (f"stiffest {self.mode.name}, {self.mode.omega:.4g} rad/s: {self.substeps} RK4 substep(s) of "
             f"{self.effective_step:.3g} s per {self.dt:.3g} s step (ωh {self.omega_h:.3g}), energy drift at "
             f"most {self.expected_error:.2g} of the largest kinetic energy per {self.horizon:g} s")
        if self.capped:
            s += (f"; the goal {self.accuracy:g} needs a step of {self.step_needed:.3g} s ({self.needed} "
                  f"substeps), capped at {self.substeps}")
        return s


def rk4_energy_loss(omega_h) -> np.ndarray:
    """``1 - |R(iωh)|² = (ωh)⁶/72 - (ωh)⁸/576`` (exactly): the fraction of a harmonic mode's energy one RK4
    step removes (negative above ωh = 2√2: the mode grows)."""
    y2 = np.asarray(omega_h, float) ** 2
    return y2 ** 3 * (8.0 - y2) / 576.0


def rk4_energy_factor(omega_h) -> np.ndarray:
    """``|R(iωh)|²``: the factor by which one RK4 step multiplies a harmonic mode's energy."""
    return 1.0 - rk4_energy_loss(omega_h)


def expected_energy_error(omega: float, h: float, horizon: float = HORIZON) -> float:
    """Relative energy change of a harmonic mode of ``omega`` [rad/s] after ``horizon`` [s] of RK4 steps of
    ``h`` [s] (the worst case for a structure whose stiffest mode is ``omega``); ``inf`` if unstable."""
    loss = float(rk4_energy_loss(omega * h))
    if loss < 0.0:
        return math.inf
    if loss >= 1.0:
        return 1.0
    return float(-math.expm1(horizon / h * math.log1p(-loss)))


def step_for_accuracy(omega: float, accuracy: float = ACCURACY, horizon: float = HORIZON) -> float:
    """Largest RK4 step [s] keeping the energy error of a mode of ``omega`` [rad/s] within ``accuracy`` over
    ``horizon`` [s]: ``(72 ε / (T ω⁶))^(1/5)`` (module docstring); capped at the stability limit."""
    if not (accuracy > 0 and horizon > 0):
        raise ValueError(f"accuracy and horizon must be positive, got {accuracy}, {horizon}")
    if omega <= 0:
        return math.inf
    return min((72.0 * accuracy / (horizon * omega ** 6)) ** 0.2, 2.0 / omega)


def _dominant_string(model, G, x) -> str:
    """The string with the largest strain energy κ (∇L·x)² for node displacements x (3n,)."""
    if not len(model.string_names):
        return ""
    e = G @ x
    kap = model.string_stiffness_at(model.rest_length)
    w = np.where(np.isfinite(kap), kap, 0.0) * e * e
    return str(model.string_names[int(np.argmax(w))]) if w.max() > 0 else ""


def stiffest_mode(model, X=None, damping: bool = False, node_damping: float | None = None) -> StiffestMode:
    """The stiffest vibration mode about node positions X (n,3) (default: the model's); see the module
    docstring. With ``damping`` (string damping, and ``node_damping`` [1/s] or the model's structural
    damping) the largest |eigenvalue| of the damped linearisation is used if it is larger (heavy damping
    can make a mode faster than its frequency); exact path, up to :data:`DAMPED_MAX_DOF` only."""
    import scipy.sparse as sp
    from scipy import linalg
    from tensegrity_engine.statics.modal import bar_jacobian, string_gradients, tangent_stiffness
    X = model.expand(model.reduce(model.positions if X is None else np.asarray(X, float)))
    r3 = 3 * len(model.free_nodes)
    Q3 = sp.kron(model.Q_sparse, sp.identity(3), format="csr")
    G = string_gradients(model, X)
    if r3 == 0:
        return StiffestMode(0.0, 0, 0, "", True)
    if r3 > DENSE_MAX_DOF:
        from scipy.sparse.linalg import eigsh
        Kt = tangent_stiffness(model, X, sparse=True)
        M3 = sp.kron(model.reduced_mass_sparse, sp.identity(3), format="csc")
        w2, v = eigsh(Kt, k=1, M=M3, which="LA")
        return StiffestMode(float(np.sqrt(max(w2[0], 0.0))), 0, 0, _dominant_string(model, G, Q3 @ v[:, 0]), False)
    Kt = tangent_stiffness(model, X)
    J = bar_jacobian(model, X)
    T = linalg.null_space(J) if len(J) else np.eye(r3)
    if T.shape[1] == 0:
        return StiffestMode(0.0, 0, 0, "", True)
    M3 = np.kron(model.reduced_mass, np.eye(3))
    Ms, Ks = T.T @ M3 @ T, T.T @ Kt @ T
    w2, V = linalg.eigh(0.5 * (Ks + Ks.T), Ms)
    w = np.sqrt(np.clip(w2, 0, None))
    from tensegrity_engine.statics.mode_shapes import elastic_indices
    elastic = elastic_indices(w)
    if not len(elastic):
        return StiffestMode(0.0, 0, 0, "", True)
    k = int(elastic[-1])
    omega = float(w[k])
    c = node_damping if node_damping is not None else model.structural_damping
    if damping and (np.any(model.string_damping > 0) or c > 0) and Ms.shape[0] <= DAMPED_MAX_DOF:
        GQ = (G @ Q3).toarray()
        zeta = np.where(model.string_lengths(X[None])[0] > model.rest_length, model.string_damping, 0.0)
        Cs = T.T @ (GQ.T @ (zeta[:, None] * GQ) + c * M3) @ T
        d = Ms.shape[0]
        Minv = linalg.inv(Ms)
        A = np.block([[np.zeros((d, d)), np.eye(d)], [-Minv @ Ks, -Minv @ Cs]])
        omega = max(omega, float(np.abs(linalg.eigvals(A)).max()))
    return StiffestMode(omega, len(elastic), len(elastic),
                        _dominant_string(model, G, Q3 @ (T @ V[:, k])), True)


CONTACT_STEPS = 10     # RK4 steps per contact at least: the rebound speed is then right within 2e-4 (test_contact)


def contact_step(model) -> float:
    """The largest RK4 step [s] that resolves the model's shortest contact (``contact_time`` / CONTACT_STEPS;
    inf without obstacles)."""
    times = [o.contact_time for o in getattr(model, "obstacles", ())]
    return min(times) / CONTACT_STEPS if times else math.inf


def plan_substeps(model, dt: float, X=None, accuracy: float = ACCURACY, horizon: float = HORIZON,
                  max_substeps: int = 100, safety: float = SAFETY, damping: bool = False,
                  node_damping: float | None = None, mode: StiffestMode | None = None) -> StepPlan:
    """RK4 substeps per physics step ``dt`` [s] so that the stiffest mode about X keeps the energy error
    within ``accuracy`` per ``horizon`` [s] (module docstring) and every contact lasts CONTACT_STEPS steps, at
    most ``max_substeps``."""
    if not (math.isfinite(dt) and dt > 0):
        raise ValueError(f"dt must be a positive finite number, got {dt}")
    if int(max_substeps) < 1:
        raise ValueError(f"max_substeps must be >= 1, got {max_substeps}")
    if not (math.isfinite(safety) and safety >= 1):
        raise ValueError(f"safety must be >= 1, got {safety}")
    if mode is None:
        mode = stiffest_mode(model, X, damping=damping, node_damping=node_damping)
    h = min(step_for_accuracy(safety * mode.omega, accuracy, horizon), contact_step(model))
    needed = max(1, math.ceil(dt / h - 1e-9)) if math.isfinite(h) else 1
    return StepPlan(float(dt), min(needed, int(max_substeps)), needed, h, mode, float(accuracy), float(horizon),
                    float(safety))
