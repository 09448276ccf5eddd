"""The immutable tensegrity model, built once from a validated model file.

Construction (:func:`~.build.build_model`; :mod:`.load` finds a model by name or path) turns names into
indices and adds what the dynamics needs:

* **virtual nodes** for class-k joints: when several bars meet at one node, the first bar (file order)
  keeps the node and every further bar gets its own virtual node ``<node>_v<k>`` tied to it by a
  coincidence constraint (the class-1 form of the manipulator paper, so ``mu + nu = 2 beta``);
* **linear node constraints** ``sum_j P_jk n_j = Lambda_k`` (fixed nodes, coincidences, user constraints)
  eliminated exactly: node positions are ``X = X0 + Q Y`` with ``Y`` the positions of the free nodes
  (Q is found by Gaussian elimination choosing the first-listed term of each constraint as the dependent
  node, so free coordinates are real node positions);
* the **consistent mass matrix** of slender uniform bars (``m/3`` on the diagonal, ``m/6`` between the two
  ends; eq. (1) of the manipulator paper) plus optional point masses, and its reduced form ``Q^T M Q``;
* nodal gravity loads (half the bar weight on each end) and the composite-string incidence.

All arrays are read-only; the mutable state lives in :class:`~tensegrity_engine.dynamics.simulator.Simulator`.
Units: SI (m, kg, s, N, rad). Node order ("model order"): physical nodes in file order, then virtual nodes.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from tensegrity_engine.model.spec import ModelSpec
from tensegrity_engine.model.supports import SupportArrays, no_supports

def read_only(a) -> np.ndarray:
    """``a`` as a C-contiguous array that cannot be written to (the model's arrays are all read-only)."""
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def constraint_groups(n: int, constraint_terms) -> np.ndarray:
    """(n,) group id per node: nodes that share a linear constraint (with non-zero coefficients), directly
    or through other constraints, get the same id (union-find; ids are only meant to be compared)."""
    parent = list(range(n))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for terms in constraint_terms:          # a fixed-node constraint has one node and joins nothing
        linked = [i for i, coef in terms if coef != 0.0]
        for i in linked[1:]:
            parent[root(i)] = root(linked[0])
    return np.array([root(i) for i in range(n)], dtype=np.int64)


@dataclass(frozen=True, eq=False)
class Model:
    """A validated, built tensegrity model. Treat it as immutable (arrays are read-only)."""
    spec: ModelSpec
    source: str
    name: str
    gravity: np.ndarray                # (3,) m/s^2
    structural_damping: float          # 1/s, mass-proportional damping -c M v (Simulator default)
    node_names: tuple                  # (n,) physical then virtual
    n_physical: int                    # mu
    virtual_of: np.ndarray             # (n,) index of the physical node a virtual node coincides with, -1 otherwise
    positions: np.ndarray              # (n, 3) initial positions [m], constraints satisfied exactly
    node_mass: np.ndarray              # (n,) point masses [kg]
    bar_names: tuple
    bars: np.ndarray                   # (beta, 2) node indices (each node belongs to at most one bar)
    bar_mass: np.ndarray               # (beta,) kg
    bar_radius: np.ndarray             # (beta,) m
    bar_length: np.ndarray             # (beta,) m, from the initial positions
    string_names: tuple                # (sigma_c,) composite strings
    string_paths: tuple                # tuple of int arrays (node indices along each path)
    segments: np.ndarray               # (sigma_s, 2) simple strings (node indices, path order)
    segment_string: np.ndarray         # (sigma_s,) composite string of each simple string
    segment_names: tuple               # "<string>.<k>"
    string_EA: np.ndarray              # (sigma_c,) N, NaN where a spring stiffness is given
    string_stiffness: np.ndarray       # (sigma_c,) N/m, NaN where EA is given
    string_damping: np.ndarray         # (sigma_c,) N s/m
    string_pulley_damping: np.ndarray  # (sigma_c,) N s/m, sliding friction at each pass-through node (kernels.py)
    string_pulley_friction: np.ndarray  # (sigma_c,) μ: pulley friction stays within the capstan ratio e^(μθ)
    rest_length: np.ndarray            # (sigma_c,) m at zero input
    string_radius: np.ndarray          # (sigma_c,) m
    string_group: tuple
    constraint_names: tuple            # generated and user constraints
    constraint_terms: tuple            # (phi,) ((node index, coefficient), ...) of each constraint
    constraint_value: np.ndarray       # (phi, 3)
    fixed_nodes: np.ndarray            # indices
    actuator_names: tuple
    actuator_string: np.ndarray        # (alpha,) composite string index
    spool_radius: np.ndarray           # (alpha,) m
    actuator_sign: np.ndarray          # (alpha,) +-1
    actuator_zero: np.ndarray          # (alpha,) rad
    angle_limits: np.ndarray           # (alpha, 2) rad
    u_limits: np.ndarray               # (alpha, 2) m, reeled-in length
    actuator_motor: tuple
    actuator_delay: np.ndarray         # (alpha,) s, dead time: rest length follows u(t - delay)
    frame_names: tuple
    frame_nodes: np.ndarray            # (k, 3) node indices a, b, c (z = normal of a->b->c)
    frame_x: np.ndarray                # (k,) node index the x axis points to
    free_nodes: np.ndarray             # (r,) independent nodes
    X0: np.ndarray                     # (n, 3) m
    gravity_forces: np.ndarray         # (n, 3) N
    warnings: tuple = ()
    obstacles: tuple = ()              # ObstacleSpec (model/world.py): static obstacles the robot touches
    supports: SupportArrays = None     # compliant supports by index (model/supports.py); clamps are fixed nodes
    # sparse forms (scipy.sparse CSR); the dense properties below are built from them on first use, so
    # loading and validating a large model never builds an n x n matrix
    Q_sparse: sp.csr_matrix = None               # (n, r)  X = X0 + Q Y
    mass_sparse: sp.csr_matrix = None            # (n, n) kg
    reduced_mass_sparse: sp.csr_matrix = None    # (r, r) kg
    bar_jacobian_sparse: sp.csr_matrix = None    # (beta, r) Q[bar end 0] - Q[bar end 1]

    def __post_init__(self):
        if self.supports is None:
            object.__setattr__(self, "supports", no_supports())

    # --- dense matrices, computed on first use (cost O(n^2) memory) ------------------------------------
    @cached_property
    def Q(self) -> np.ndarray:
        """(n, r) node positions X = X0 + Q Y from free-node coordinates Y."""
        return read_only(self.Q_sparse.toarray())

    @cached_property
    def mass_matrix(self) -> np.ndarray:
        """(n, n) consistent mass matrix [kg]."""
        return read_only(self.mass_sparse.toarray())

    @cached_property
    def reduced_mass(self) -> np.ndarray:
        """(r, r) reduced mass matrix Q^T M Q [kg]."""
        return read_only(self.reduced_mass_sparse.toarray())

    @cached_property
    def constraint_P(self) -> np.ndarray:
        """(n, phi) constraint matrix: sum_j P[j, k] n_j = constraint_value[k]."""
        P = np.zeros((self.n_nodes, len(self.constraint_terms)))
        for k, terms in enumerate(self.constraint_terms):
            for i, coef in terms:
                P[i, k] += coef
        return read_only(P)

    # --- counts with the manipulator paper's names -------------------------------------------
    @property
    def n_nodes(self) -> int:
        return len(self.node_names)

    @property
    def counts(self) -> dict:
        """mu, nu, beta, sigma_c, sigma_s, phi, alpha (as in the manipulator paper)."""
        return {"mu": self.n_physical, "nu": self.n_nodes - self.n_physical, "beta": len(self.bar_names),
                "sigma_c": len(self.string_names), "sigma_s": len(self.segments),
                "phi": len(self.constraint_names), "alpha": len(self.actuator_names)}

    @property
    def physical_index(self) -> np.ndarray:
        """(n,) index of the physical node each node sits on (itself for physical nodes)."""
        return np.where(self.virtual_of >= 0, self.virtual_of, np.arange(len(self.node_names)))

    def from_physical(self, X_physical) -> np.ndarray:
        """Physical node positions (..., mu, 3) -> all nodes (..., n, 3): virtual nodes on their physical node."""
        Xp = np.asarray(X_physical, float)
        if Xp.ndim < 2 or Xp.shape[-2:] != (self.n_physical, 3):
            raise ValueError(f"expected {self.n_physical} physical node positions for model '{self.name}', "
                             f"got shape {Xp.shape}")
        return Xp[..., self.physical_index, :]

    def node_index(self, name: str) -> int:
        try:
            return self.node_names.index(name)
        except ValueError:
            raise KeyError(f"unknown node {name!r}; nodes are {', '.join(self.node_names[:self.n_physical])}") from None

    def string_index(self, name: str) -> int:
        try:
            return self.string_names.index(name)
        except ValueError:
            raise KeyError(f"unknown string {name!r}; strings are {', '.join(self.string_names)}") from None

    def total_mass(self) -> float:
        return float(self.bar_mass.sum() + self.node_mass.sum())

    def string_stiffness_at(self, rest_length) -> np.ndarray:
        """Axial stiffness kappa [N/m] of each composite string at the given rest lengths."""
        rest = np.asarray(rest_length, float)
        return np.where(np.isnan(self.string_EA), self.string_stiffness, self.string_EA / rest)

    def rest_length_for_tension(self, tension, length) -> np.ndarray:
        """Rest lengths [m] that give ``tension`` [N] at total string ``length`` [m] (per composite string)."""
        t = np.asarray(tension, float)
        L = np.asarray(length, float)
        ea_mode = ~np.isnan(self.string_EA)
        rest = np.where(ea_mode, self.string_EA * L / (np.where(ea_mode, self.string_EA, 1.0) + t),
                        L - t / np.where(ea_mode, 1.0, self.string_stiffness))
        return rest

    def segment_lengths(self, X) -> np.ndarray:
        """Length [m] of every simple string for node positions X (n,3) or (T,n,3)."""
        X = np.asarray(X, float)
        return np.linalg.norm(X[..., self.segments[:, 1], :] - X[..., self.segments[:, 0], :], axis=-1)

    def string_lengths(self, X) -> np.ndarray:
        """Total length [m] of every composite string for node positions X (n,3) or (T,n,3)."""
        seg = self.segment_lengths(X)                      # (..., sigma_s); segments grouped by string
        starts = np.searchsorted(self.segment_string, np.arange(len(self.string_names)))
        return np.add.reduceat(seg, starts, axis=-1) if len(starts) else seg[..., :0]

    def bar_length_error(self, X) -> np.ndarray:
        """Relative bar length error |(|b| - l)/l| for positions X (n,3) or (T,n,3)."""
        X = np.asarray(X, float)
        b = np.linalg.norm(X[..., self.bars[:, 0], :] - X[..., self.bars[:, 1], :], axis=-1)
        return np.abs(b - self.bar_length) / self.bar_length

    def reduce(self, X) -> np.ndarray:
        """Free-node coordinates Y (r,3) of node positions X (n,3) (no projection onto the bars)."""
        return np.asarray(X, float)[self.free_nodes].copy()

    def expand(self, Y) -> np.ndarray:
        """Node positions X (n,3) (or (T,n,3)) from free-node coordinates Y (sparse Q: no n x r matrix)."""
        return self.X0 + self.map_free(Y)

    def map_free(self, Y) -> np.ndarray:
        """Q Y for free-node arrays Y (..., r, 3) -> (..., n, 3) (e.g. velocities), with the sparse Q."""
        Y = np.asarray(Y, float)
        lead = Y.shape[:-2]
        Yt = np.moveaxis(Y, -2, 0).reshape(Y.shape[-2], 3 * int(np.prod(lead, dtype=np.int64)))   # r may be 0
        out = np.asarray(self.Q_sparse @ Yt).reshape((self.n_nodes,) + lead + (3,))
        return np.moveaxis(out, 0, -2)

