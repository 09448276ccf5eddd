"""The immutable tensegrity model, built once from a validated model file.

Construction (:func:`build_model`) turns names into indices and adds what the dynamics needs:

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

All arrays are read-only; the mutable state lives in :class:`~tensegrity_engine.simulator.Simulator`.
Units: SI (m, kg, s, N, rad). Node order ("model order"): physical nodes in file order, then virtual nodes.
"""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import ModelError
from .model_file import ModelSpec, load_spec

BUILTIN_DIR = Path(__file__).resolve().parent / "models"

KernelParams = namedtuple("KernelParams", [
    "n", "r", "q_ptr", "q_idx", "q_val", "X0", "Minv", "H", "G",
    "bar_j", "bar_k", "bar_len", "seg_j", "seg_k", "seg_str",
    "str_ea_mode", "str_ea", "str_k", "str_zeta", "str_rest", "act_str", "Wg"])


def builtin_models() -> list[str]:
    """Names of the models shipped with the engine."""
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.yaml"))


def resolve_model_path(name_or_path) -> Path:
    """A built-in model name (e.g. ``prism3``) or a path to a YAML file."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        return p
    cand = BUILTIN_DIR / f"{name_or_path}.yaml"
    if cand.exists():
        return cand
    raise ModelError(str(name_or_path), "model", "is neither a model file nor a built-in model",
                     f"use a path to a .yaml file or one of: {', '.join(builtin_models())}")


def load_model(name_or_path) -> "Model":
    """Load, validate and build a model from a built-in name or a YAML file path."""
    return build_model(load_spec(resolve_model_path(name_or_path)))


def _ro(a):
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


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
    rest_length: np.ndarray            # (sigma_c,) m at zero input
    string_radius: np.ndarray          # (sigma_c,) m
    string_group: tuple
    constraint_names: tuple            # generated and user constraints
    constraint_P: np.ndarray           # (n, phi)
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
    frame_names: tuple
    frame_nodes: np.ndarray            # (k, 3) node indices a, b, c (z = normal of a->b->c)
    frame_x: np.ndarray                # (k,) node index the x axis points to
    free_nodes: np.ndarray             # (r,) independent nodes
    Q: np.ndarray                      # (n, r)  X = X0 + Q Y
    X0: np.ndarray                     # (n, 3)
    mass_matrix: np.ndarray            # (n, n)
    reduced_mass: np.ndarray           # (r, r)
    gravity_forces: np.ndarray         # (n, 3) N
    kernel: KernelParams
    warnings: tuple = ()

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
        G = np.zeros((len(self.segments), len(self.string_names)))
        G[np.arange(len(self.segments)), self.segment_string] = 1.0
        return self.segment_lengths(X) @ G

    def bar_length_error(self, X) -> np.ndarray:
        """Relative bar length error |(|b| - l)/l| for positions X (n,3) or (T,n,3)."""
        X = np.asarray(X, float)
        b = np.linalg.norm(X[..., self.bars[:, 0], :] - X[..., self.bars[:, 1], :], axis=-1)
        return np.abs(b - self.bar_length) / self.bar_length

    def reduce(self, X) -> np.ndarray:
        """Free-node coordinates Y (r,3) of node positions X (n,3) (no projection onto the bars)."""
        return np.asarray(X, float)[self.free_nodes].copy()

    def expand(self, Y) -> np.ndarray:
        """Node positions X (n,3) (or (T,n,3)) from free-node coordinates Y."""
        return self.X0 + np.einsum("nr,...rc->...nc", self.Q, Y)


def _eliminate(source, n, constraints, positions, names):
    """Gaussian elimination of node-level linear constraints.

    ``constraints`` is a list of (name, [(node, coef), ...], value(3,)). Returns (Q, X0, free, warnings).
    A dependent node is written as x_d = sum_f C[d, f] x_f + D[d].
    """
    C = np.eye(n)           # row d: expression of node d in terms of all nodes (identity while free)
    D = np.zeros((n, 3))
    dependent = np.zeros(n, bool)
    warnings = []
    for cname, terms, value in constraints:
        row = np.zeros(n)
        for node, coef in terms:
            row[node] += coef
        # substitute dependent nodes: sum_j row_j x_j = sum_j row_j (C_j x + D_j)
        coeff = row @ C
        rhs = np.asarray(value, float) - row @ D
        scale = np.abs(row).max()
        coeff[np.abs(coeff) < 1e-12 * scale] = 0.0
        if not coeff.any():
            resid = rhs
            if np.abs(resid).max() > 1e-9 * max(1.0, np.abs(value).max()):
                raise ModelError(source, f"constraint '{cname}'",
                                 "is inconsistent with the constraints before it (they already fix these nodes "
                                 f"differently, mismatch {np.abs(resid).max():.3g} m)",
                                 "remove it or correct its value/coefficients")
            warnings.append(f"constraint '{cname}' is implied by earlier constraints and was ignored")
            continue
        big = np.abs(coeff).max()
        pivot = None
        for node, _ in terms:           # first-listed term that can be solved for
            if not dependent[node] and abs(coeff[node]) >= 0.1 * big:
                pivot = node
                break
        if pivot is None:
            pivot = int(np.argmax(np.abs(coeff)))
        expr = -coeff / coeff[pivot]
        expr[pivot] = 0.0
        const = rhs / coeff[pivot]
        # x_pivot = expr . x + const ; substitute into all existing expressions
        col = C[:, pivot].copy()
        C += np.outer(col, expr)
        C[:, pivot] -= col
        D += np.outer(col, const)
        C[pivot] = expr
        C[pivot, pivot] = 0.0
        D[pivot] = const
        dependent[pivot] = True
    free = np.flatnonzero(~dependent)
    Q = C[:, free]
    X0 = D.copy()
    # check that the file positions satisfy the constraints
    X = X0 + Q @ positions[free]
    err = np.linalg.norm(X - positions, axis=1)
    bad = int(np.argmax(err))
    if err[bad] > 1e-6:
        raise ModelError(source, f"node '{names[bad]}'",
                         f"its position violates the node constraints by {err[bad]:.3g} m",
                         "move the node to where the constraints put it "
                         f"({', '.join(f'{v:.6g}' for v in X[bad])})")
    return Q, X0, free, warnings


def build_model(spec: ModelSpec) -> Model:
    """Build a :class:`Model` from a validated :class:`ModelSpec` (virtual nodes, constraints, masses)."""
    src = spec.source
    phys = [nd.name for nd in spec.nodes]
    index = {nm: i for i, nm in enumerate(phys)}
    positions = [np.array(nd.position, float) for nd in spec.nodes]
    node_mass = [nd.mass for nd in spec.nodes]
    virtual_of = [-1] * len(phys)
    names = list(phys)
    constraints = []  # (name, [(idx, coef)], value)

    for nd in spec.nodes:
        if nd.fixed:
            constraints.append((f"fix_{nd.name}", [(index[nd.name], 1.0)], nd.position))

    # bars: class-k joints get virtual nodes
    owner = {}
    bar_idx = []
    coincide = []
    for bar in spec.bars:
        ends = []
        for nm in bar.nodes:
            i = index[nm]
            if i not in owner:
                owner[i] = bar.name
                ends.append(i)
            else:
                k = sum(1 for v in virtual_of if v == i) + 1
                vname = f"{nm}_v{k}"
                if vname in index:
                    raise ModelError(src, f"node '{vname}'", "clashes with a generated virtual node name",
                                     "rename the node (names ending in _v<number> are reserved)")
                index[vname] = len(names)
                names.append(vname)
                positions.append(positions[i].copy())
                node_mass.append(0.0)
                virtual_of.append(i)
                ends.append(index[vname])
                coincide.append((f"coincide_{vname}", [(index[vname], 1.0), (i, -1.0)], (0.0, 0.0, 0.0)))
        bar_idx.append(ends)
    constraints += coincide
    for cs in spec.constraints:
        constraints.append((cs.name, [(index[nm], coef) for nm, coef in cs.terms], cs.value))

    n = len(names)
    P = np.zeros((n, len(constraints)))
    Lam = np.zeros((len(constraints), 3))
    for k, (_, terms, value) in enumerate(constraints):
        for i, coef in terms:
            P[i, k] += coef
        Lam[k] = value
    pos = np.array(positions)
    Q, X0, free, warnings = _eliminate(src, n, constraints, pos, names)
    pos = X0 + Q @ pos[free]

    bars = np.array(bar_idx, dtype=np.int64).reshape(-1, 2)
    bar_mass = np.array([b.mass for b in spec.bars], float)
    bar_len = np.linalg.norm(pos[bars[:, 0]] - pos[bars[:, 1]], axis=1) if len(bars) else np.zeros(0)

    # consistent mass matrix of slender bars + point masses
    M = np.diag(np.array(node_mass, float))
    for (j, k), m in zip(bars, bar_mass):
        M[j, j] += m / 3
        M[k, k] += m / 3
        M[j, k] += m / 6
        M[k, j] += m / 6
    Mr = Q.T @ M @ Q
    massless = [i for i in range(n) if M[i, i] == 0.0 and Q[i].any()]

    # every physical node that can move must be used by something: a bar, a string, or a constraint that
    # ties it to such a node (a point mass floating on its own would just fall; a massless one would
    # make the mass matrix singular). Checked before the masses so the message says what is wrong.
    used = {int(i) for b in bar_idx for i in b}
    used |= {index[nm] for s in spec.strings for nm in s.path}
    comp = list(range(n))           # union-find over nodes that share a constraint

    def root(i):
        while comp[i] != i:
            comp[i] = comp[comp[i]]
            i = comp[i]
        return i

    for _, terms, _ in constraints:
        linked = [i for i, coef in terms if coef != 0.0]
        for i in linked[1:]:
            comp[root(i)] = root(linked[0])
    used_roots = {root(i) for i in used}
    for i in range(len(phys)):
        if Q[i].any() and root(i) not in used_roots:
            raise ModelError(src, f"node '{phys[i]}'", "is connected to no bar and no string",
                             "connect it, fix it, or remove it")
    # a node that moves (depends on free coordinates) but carries no mass and no bar
    for f_col, i in enumerate(free):
        if Mr[f_col, f_col] <= 0.0:
            raise ModelError(src, f"node '{names[i]}'",
                             "is free to move but carries no mass (no bar and no 'mass')",
                             "attach it to a bar, give it a 'mass' [kg], or set 'fixed: true'")
    try:
        np.linalg.cholesky(Mr)                      # positive definite check only
    except np.linalg.LinAlgError:
        raise ModelError(src, "masses", "the reduced mass matrix is not positive definite "
                         f"(massless nodes: {[names[i] for i in massless]})",
                         "give every moving node a bar or a point mass") from None
    Minv = np.linalg.inv(Mr)
    Minv = 0.5 * (Minv + Minv.T)

    # bar constraint Jacobian structure in reduced coordinates
    Ab = Q[bars[:, 0]] - Q[bars[:, 1]] if len(bars) else np.zeros((0, len(free)))
    static = [i for i in range(len(bars)) if not np.any(np.abs(Ab[i]) > 1e-14)]
    if static:
        raise ModelError(src, f"bar '{spec.bars[static[0]].name}'",
                         "has both ends fixed by constraints (or tied rigidly to each other by them), "
                         "so it can never move relative to them",
                         "remove the bar, or fix only one of its ends (or drop the constraint tying them)")
    H = Ab @ Minv @ Ab.T
    G = Minv @ Ab.T
    # independence of the bar constraints at the initial configuration
    if len(bars):
        B = pos[bars[:, 0]] - pos[bars[:, 1]]
        S = H * (B @ B.T)
        d = np.sqrt(np.diag(S))                     # > 0: no bar is static (checked above)
        Sn = S / np.outer(d, d)                     # unit diagonal: independent of bar masses and lengths
        ev = np.linalg.eigvalsh(Sn)
        if ev.min() < 1e-10:
            # name the first bar (file order) whose length is already implied by the bars before it
            k = next((k for k in range(1, len(bars) + 1) if np.linalg.eigvalsh(Sn[:k, :k]).min() < 1e-10),
                     len(bars))
            raise ModelError(src, "bars", "the bar length constraints are redundant at the initial configuration "
                             f"(bar '{spec.bars[k - 1].name}' is rigidly implied by the bars before it and the "
                             "constraints)",
                             "remove the redundant bar(s) or the constraint that makes them rigid")

    # strings
    seg, seg_str, seg_names, paths = [], [], [], []
    for c, s in enumerate(spec.strings):
        p = np.array([index[nm] for nm in s.path], dtype=np.int64)
        paths.append(_ro(p))
        for k in range(len(p) - 1):
            seg.append((p[k], p[k + 1]))
            seg_str.append(c)
            seg_names.append(f"{s.name}.{k}")
    segments = np.array(seg, dtype=np.int64).reshape(-1, 2)
    seg_str = np.array(seg_str, dtype=np.int64)
    ea = np.array([np.nan if s.EA is None else s.EA for s in spec.strings], float)
    kk = np.array([np.nan if s.stiffness is None else s.stiffness for s in spec.strings], float)
    seg_len = np.linalg.norm(pos[segments[:, 1]] - pos[segments[:, 0]], axis=1) if len(segments) else np.zeros(0)
    total_len = np.bincount(seg_str, seg_len, minlength=len(spec.strings))
    rest = np.empty(len(spec.strings))
    for c, s in enumerate(spec.strings):
        if s.rest_length is not None:
            rest[c] = s.rest_length
        elif s.tension is not None:
            L = total_len[c]
            rest[c] = s.EA * L / (s.EA + s.tension) if s.EA is not None else L - s.tension / s.stiffness
            if rest[c] <= 0:
                raise ModelError(src, f"string '{s.name}'", f"tension {s.tension} N needs a rest length <= 0 "
                                 f"with stiffness {s.stiffness} N/m at length {L:.4g} m",
                                 "lower the tension or raise the stiffness")
        else:
            raise ModelError(src, f"string '{s.name}'", "has neither 'rest_length' nor 'tension'",
                             "give 'rest_length' [m], or 'tension' [N] (rest length derived from the geometry); "
                             "'tensegrity equilibrium MODEL --write OUT.yaml' computes equilibrium rest lengths")

    # actuators: u = sign * r * (theta - zero) reeled in; rest = rest0 - u
    a_str = np.array([spec.strings.index(next(s for s in spec.strings if s.name == a.string))
                      for a in spec.actuators], dtype=np.int64)
    spool = np.array([a.spool_radius for a in spec.actuators], float)
    sign = np.array([a.sign for a in spec.actuators], float)
    zero = np.array([a.zero for a in spec.actuators], float)
    alim = np.array([a.angle_limits for a in spec.actuators], float).reshape(-1, 2)
    ulim = np.sort(sign[:, None] * spool[:, None] * (alim - zero[:, None]), axis=1) if len(spool) else np.zeros((0, 2))
    for a, act in enumerate(spec.actuators):        # one actuator per string (checked in the file)
        if ulim[a, 1] >= rest[a_str[a]]:
            raise ModelError(src, f"actuator '{act.name}'",
                             f"its angle limits let it reel in {ulim[a, 1]:.4g} m, more than the rest length "
                             f"{rest[a_str[a]]:.4g} m of string '{act.string}'",
                             "narrow 'angle_limits' or check 'spool_radius'")

    frames = np.array([[index[nm] for nm in f.nodes] for f in spec.frames], dtype=np.int64).reshape(-1, 3)
    for f, (a, b, c) in zip(spec.frames, frames):
        u, v = pos[b] - pos[a], pos[c] - pos[a]
        if np.linalg.norm(np.cross(u, v)) <= 1e-9 * np.linalg.norm(u) * np.linalg.norm(v):
            raise ModelError(src, f"frame '{f.name}'", f"its nodes {', '.join(repr(nm) for nm in f.nodes)} lie on "
                             "one line, so they define no plane (the z axis is undefined)",
                             "pick three nodes that form a triangle")
    frame_x = np.array([index[f.x_node] for f in spec.frames], dtype=np.int64)

    g = np.array(spec.gravity, float)
    nodal_mass = np.array(node_mass, float).copy()
    np.add.at(nodal_mass, bars[:, 0], bar_mass / 2)
    np.add.at(nodal_mass, bars[:, 1], bar_mass / 2)
    Wg = nodal_mass[:, None] * g[None, :]

    # CSR of Q rows for the kernels
    q_ptr = np.zeros(n + 1, np.int64)
    q_idx, q_val = [], []
    for i in range(n):
        nz = np.flatnonzero(np.abs(Q[i]) > 0)
        q_idx += nz.tolist()
        q_val += Q[i, nz].tolist()
        q_ptr[i + 1] = len(q_idx)
    kp = KernelParams(
        n, len(free), _ro(q_ptr), _ro(np.array(q_idx, np.int64)), _ro(np.array(q_val, float)), _ro(X0),
        _ro(Minv), _ro(H), _ro(G), _ro(bars[:, 0].copy()), _ro(bars[:, 1].copy()), _ro(bar_len),
        _ro(segments[:, 0].copy()), _ro(segments[:, 1].copy()), _ro(seg_str),
        _ro((~np.isnan(ea)).astype(np.int64)), _ro(np.nan_to_num(ea)), _ro(np.nan_to_num(kk)),
        _ro(np.array([s.damping for s in spec.strings], float)), _ro(rest), _ro(a_str), _ro(Wg))

    return Model(
        spec=spec, source=src, name=spec.name, gravity=_ro(g), structural_damping=float(spec.structural_damping),
        node_names=tuple(names), n_physical=len(phys),
        virtual_of=_ro(np.array(virtual_of, np.int64)), positions=_ro(pos), node_mass=_ro(np.array(node_mass, float)),
        bar_names=tuple(b.name for b in spec.bars), bars=_ro(bars), bar_mass=_ro(bar_mass),
        bar_radius=_ro(np.array([b.radius for b in spec.bars], float)), bar_length=_ro(bar_len),
        string_names=tuple(s.name for s in spec.strings), string_paths=tuple(paths), segments=_ro(segments),
        segment_string=_ro(seg_str), segment_names=tuple(seg_names), string_EA=_ro(ea), string_stiffness=_ro(kk),
        string_damping=_ro(kp.str_zeta), rest_length=_ro(rest),
        string_radius=_ro(np.array([s.radius for s in spec.strings], float)),
        string_group=tuple(s.group for s in spec.strings),
        constraint_names=tuple(c[0] for c in constraints), constraint_P=_ro(P), constraint_value=_ro(Lam),
        fixed_nodes=_ro(np.array([index[nd.name] for nd in spec.nodes if nd.fixed], np.int64)),
        actuator_names=tuple(a.name for a in spec.actuators), actuator_string=_ro(a_str), spool_radius=_ro(spool),
        actuator_sign=_ro(sign), actuator_zero=_ro(zero), angle_limits=_ro(alim), u_limits=_ro(ulim),
        actuator_motor=tuple(a.motor for a in spec.actuators),
        frame_names=tuple(f.name for f in spec.frames), frame_nodes=_ro(frames), frame_x=_ro(frame_x),
        free_nodes=_ro(free), Q=_ro(Q), X0=_ro(X0), mass_matrix=_ro(M), reduced_mass=_ro(Mr),
        gravity_forces=_ro(Wg), kernel=kp, warnings=tuple(warnings))
