"""Building a :class:`~tensegrity_engine.model.model.Model` from a validated spec, in time linear-ish in its size.

Everything here is sparse: the constraint elimination keeps each dependent node's expression as a small
dict, the mass matrices are ``scipy.sparse``, and the two physics checks (positive-definite reduced mass,
independent bar-length constraints) use a sparse LDLᵀ factorisation (SuperLU, fill-reducing order, no
pivoting) of a Gram matrix scaled to unit diagonal: a pivot below :data:`PIVOT_TOL` means a dependent
row. No dense n×n matrix is built here; the dense matrices the simulation kernels need are computed on
first use (:func:`~tensegrity_engine.dynamics.kernel_params.kernel_params`).
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from tensegrity_engine.errors import ModelError
from tensegrity_engine.model.model import Model, constraint_groups, read_only
from tensegrity_engine.model.marker_spec import check_world_offsets
from tensegrity_engine.model.spec import ModelSpec, guarded
from tensegrity_engine.model.supports import SupportArrays, clamped_nodes, pin_constraints, support_arrays

PIVOT_TOL = 1e-10       # relative pivot (sin² of the angle to the span of the rows before) counted as zero


def _pivots(A) -> np.ndarray | None:
    """Pivots of the LDLᵀ factorisation of the symmetric PSD sparse matrix A scaled to unit diagonal
    (fill-reducing order); None if SuperLU finds it exactly singular. ``A``'s diagonal must be > 0."""
    A = sp.csc_matrix(A)
    if A.shape[0] == 0:
        return np.ones(0)
    d = 1.0 / np.sqrt(A.diagonal())
    A = sp.csc_matrix(A.multiply(d[:, None]).multiply(d[None, :]))
    try:
        lu = splu(A, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                  options={"SymmetricMode": True})
    except RuntimeError:                     # "Factor is exactly singular"
        return None
    return lu.U.diagonal()


def _singular(A) -> bool:
    p = _pivots(A)
    return p is None or p.size > 0 and float(np.min(p)) < PIVOT_TOL


def _first_dependent(A) -> int:
    """Smallest k (1-based) such that the leading k×k block of A is singular (binary search)."""
    lo, hi = 1, A.shape[0]
    A = sp.csr_matrix(A)
    while lo < hi:
        mid = (lo + hi) // 2
        if _singular(A[:mid, :mid]):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _eliminate(source, n, constraints, positions, names):
    """Gaussian elimination of node-level linear constraints, sparse.

    ``constraints`` is a list of (name, [(node, coef), ...], value(3,)). A dependent node d is written as
    x_d = sum_f Q[d, f] x_f + X0[d] over free nodes f. Returns (Q csr (n, r), X0 (n, 3), free, warnings).
    The pivot is the first-listed term that can be solved for (else the largest coefficient, lowest index).
    """
    expr: dict = {}                     # dependent node -> ({free node: coef}, const (3,))
    users = defaultdict(set)            # free node -> dependent nodes whose expression uses it
    warnings = []
    for cname, terms, value in constraints:
        row: dict = {}
        for node, coef in terms:
            row[node] = row.get(node, 0.0) + coef
        coeff: dict = {}
        rhs = np.asarray(value, float).copy()
        for node, a in row.items():
            if node in expr:
                e, c0 = expr[node]
                for f, v in e.items():
                    coeff[f] = coeff.get(f, 0.0) + a * v
                rhs -= a * c0
            else:
                coeff[node] = coeff.get(node, 0.0) + a
        scale = max(abs(v) for v in row.values())
        coeff = {f: v for f, v in coeff.items() if abs(v) >= 1e-12 * scale}
        if not coeff:
            if np.abs(rhs).max() > 1e-9 * max(1.0, np.abs(value).max()):
                raise ModelError(source, f"constraint '{cname}'",
                                 "is inconsistent with the constraints before it (they already fix these nodes "
                                 f"differently, mismatch {np.abs(rhs).max():.3g} m)",
                                 "remove it or correct its value/coefficients")
            warnings.append(f"constraint '{cname}' is implied by earlier constraints and was ignored")
            continue
        big = max(abs(v) for v in coeff.values())
        pivot = next((node for node, _ in terms if node not in expr and abs(coeff.get(node, 0.0)) >= 0.1 * big),
                     None)
        if pivot is None:
            pivot = max(coeff, key=lambda f: (abs(coeff[f]), -f))
        cp = coeff[pivot]
        e = {f: -v / cp for f, v in coeff.items() if f != pivot}
        const = rhs / cp
        for d in users.pop(pivot, ()):              # substitute x_pivot into the expressions that use it
            ed, cd = expr[d]
            a = ed.pop(pivot)
            for f, v in e.items():
                ed[f] = ed.get(f, 0.0) + a * v
                users[f].add(d)
            expr[d] = (ed, cd + a * const)
        expr[pivot] = (e, const)
        for f in e:
            users[f].add(pivot)
    dependent = np.zeros(n, bool)
    dependent[list(expr)] = True
    free = np.flatnonzero(~dependent)
    col = np.full(n, -1, np.int64)
    col[free] = np.arange(len(free))
    rows, cols, vals = list(free), list(range(len(free))), [1.0] * len(free)
    X0 = np.zeros((n, 3))
    for d, (e, const) in expr.items():
        X0[d] = const
        for f, v in e.items():
            if v != 0.0:
                rows.append(d)
                cols.append(col[f])
                vals.append(v)
    Q = sp.csr_matrix((vals, (rows, cols)), shape=(n, len(free)))
    Q.sum_duplicates()
    Q.sort_indices()
    X = X0 + Q @ positions[free]                    # the file positions must satisfy the constraints
    err = np.linalg.norm(X - positions, axis=1)
    bad = int(np.argmax(err)) if n else 0
    if n and err[bad] > 1e-6:
        raise ModelError(source, f"node '{names[bad]}'",
                         f"its position violates the node constraints by {err[bad]:.3g} m",
                         "move the node to where the constraints put it "
                         f"({', '.join(f'{v:.6g}' for v in X[bad])})")
    return Q, X0, free, warnings


def _virtual_nodes(spec, index, names, positions, node_mass, virtual_of):
    """Class-k joints: the first bar at a node keeps it, every further bar gets a virtual node."""
    src = spec.source
    owner, bar_idx, coincide, count = set(), [], [], defaultdict(int)
    for bar in spec.bars:
        ends = []
        for nm in bar.nodes:
            i = index[nm]
            if i not in owner:
                owner.add(i)
                ends.append(i)
                continue
            count[i] += 1
            vname = f"{nm}_v{count[i]}"
            if vname in index:
                raise ModelError(src, f"node '{vname}'", "clashes with a generated virtual node name",
                                 "rename the node (names ending in _v<number> are reserved)")
            index[vname] = len(names)
            names.append(vname)
            positions.append(positions[i])
            node_mass.append(0.0)
            virtual_of.append(i)
            ends.append(index[vname])
            coincide.append((f"coincide_{vname}", [(index[vname], 1.0), (i, -1.0)], (0.0, 0.0, 0.0)))
        bar_idx.append(ends)
    return bar_idx, coincide


def _check_connected(src, phys, bar_idx, spec, index, constraint_terms, Q):
    """Every physical node that can move is used by a bar, a string, or a constraint tying it to one."""
    used = [int(i) for b in bar_idx for i in b]
    used += [index[nm] for s in spec.strings for nm in s.path]
    group = constraint_groups(Q.shape[0], constraint_terms)
    used_groups = set(group[used].tolist())
    moves = np.diff(Q.indptr) > 0
    for i in range(len(phys)):
        if moves[i] and group[i] not in used_groups:
            raise ModelError(src, f"node '{phys[i]}'", "is connected to no bar and no string",
                             "connect it, fix it, or remove it")


def _check_masses(src, names, free, M, Q):
    """The reduced mass matrix Qᵀ M Q must be positive definite (every moving node carries mass)."""
    Mr = sp.csr_matrix(Q.T @ M @ Q)
    diag = Mr.diagonal()
    for f_col, i in enumerate(free):
        if diag[f_col] <= 0.0:
            raise ModelError(src, f"node '{names[i]}'",
                             "is free to move but carries no mass (no bar and no 'mass')",
                             "attach it to a bar, give it a 'mass' [kg], or set 'fixed: true'")
    if _singular(Mr):
        Md, moves = M.diagonal(), np.diff(Q.indptr) > 0
        massless = [names[i] for i in np.flatnonzero((Md == 0.0) & moves)]
        raise ModelError(src, "masses", "the reduced mass matrix is not positive definite "
                         f"(massless nodes: {massless[:10]})", "give every moving node a bar or a point mass")
    return Mr


def _check_bars(src, spec, bars, Q, pos):
    """Bar-length constraints that are redundant at the initial positions; returns Ab (beta, r) sparse.

    The bar constraint gradients in reduced coordinates are J_i = Ab_i ⊗ B_i (Ab = Q[a] - Q[b], B the bar
    vector); they are independent iff the Gram matrix (Ab Abᵀ) ∘ (B Bᵀ) is non-singular. A bar whose ends
    are both fixed (a clamped bar) or tied rigidly to each other by constraints has Ab_i = 0: its length
    holds by itself, it is simply rigid and immobile, and it is left out of the check (the kernels give it
    a zero bar force).
    """
    Ab = sp.csr_matrix(Q[bars[:, 0]] - Q[bars[:, 1]]) if len(bars) else sp.csr_matrix((0, Q.shape[1]))
    Ab.data[np.abs(Ab.data) <= 1e-14] = 0.0
    Ab.eliminate_zeros()
    mobile = np.flatnonzero(np.diff(Ab.indptr) > 0)
    if not len(mobile):
        return Ab
    B = pos[bars[mobile, 0]] - pos[bars[mobile, 1]]
    Am = Ab[mobile]
    S = sp.coo_matrix(Am @ Am.T)
    S = sp.csc_matrix((S.data * np.einsum("ij,ij->i", B[S.row], B[S.col]), (S.row, S.col)), shape=S.shape)
    if _singular(S):
        k = _first_dependent(S)
        raise ModelError(src, "bars", "the bar length constraints are redundant at the initial configuration "
                         f"(bar '{spec.bars[mobile[k - 1]].name}' is rigidly implied by the bars before it and the "
                         "constraints)", "remove the redundant bar(s) or the constraint that makes them rigid")
    return Ab


def _supports(src, spec, index, bars, pos, Q, Ab) -> SupportArrays:
    """The compliant supports by index; each must act on something that moves."""
    arrays = support_arrays(spec, index, bars, pos)
    moves = np.diff(Q.indptr) > 0
    bar_index = {b.name: i for i, b in enumerate(spec.bars)}
    for i in arrays.spec_index:
        s = spec.supports[i]
        if s.type == "translational" and not moves[index[s.node]]:
            raise ModelError(src, f"support '{s.name}'", f"node '{s.node}' is fixed (by 'fixed', a clamp or "
                             "constraints), so the spring can never act", "remove the support or free the node")
        if s.type == "rotational" and Ab.indptr[bar_index[s.bar] + 1] == Ab.indptr[bar_index[s.bar]]:
            raise ModelError(src, f"support '{s.name}'", f"bar '{s.bar}' cannot turn (both ends fixed, clamped or "
                             "tied rigidly by constraints), so the spring can never act",
                             "remove the support, or free the bar's end away from the pin")
    return arrays


def _strings(src, spec, index, pos):
    seg, seg_str, seg_names, paths = [], [], [], []
    for c, s in enumerate(spec.strings):
        p = np.array([index[nm] for nm in s.path], dtype=np.int64)
        paths.append(read_only(p))
        seg.extend(zip(p[:-1].tolist(), p[1:].tolist()))
        seg_str.extend([c] * (len(p) - 1))
        seg_names.extend(f"{s.name}.{k}" for k in range(len(p) - 1))
    segments = np.array(seg, dtype=np.int64).reshape(-1, 2)
    seg_str = np.array(seg_str, dtype=np.int64)
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
    return segments, seg_str, tuple(seg_names), tuple(paths), rest


def build_model(spec: ModelSpec) -> Model:
    """Build a :class:`Model` from a validated :class:`ModelSpec`. Raises only ModelError."""
    return guarded(spec.source if isinstance(spec, ModelSpec) else "<spec>", lambda: _build(spec))


def _topology(spec: ModelSpec) -> tuple:
    """Names to indices: (physical node names, name -> index, all node names, positions, point masses,
    virtual_of (lists, virtual nodes appended), bar node indices, constraints [(name, terms, value)] and their
    terms as a tuple of ((node, coefficient), ...)): fixed nodes, then coincidences, then the file's, then the
    pins (model/supports.py)."""
    phys = [nd.name for nd in spec.nodes]
    index = {nm: i for i, nm in enumerate(phys)}
    positions = [nd.position for nd in spec.nodes]
    node_mass = [nd.mass for nd in spec.nodes]
    virtual_of = [-1] * len(phys)
    names = list(phys)
    held = clamped_nodes(spec)
    constraints = [(f"fix_{nd.name}", [(index[nd.name], 1.0)], nd.position) for nd in spec.nodes
                   if nd.fixed or nd.name in held]
    bar_idx, coincide = _virtual_nodes(spec, index, names, positions, node_mass, virtual_of)
    constraints += coincide
    for cs in spec.constraints:
        constraints.append((cs.name, [(index[nm], coef) for nm, coef in cs.terms], cs.value))
    constraints += pin_constraints(spec, index, positions)
    constraint_terms = tuple(tuple((int(i), float(c)) for i, c in terms) for _, terms, _ in constraints)
    return phys, index, names, positions, node_mass, virtual_of, bar_idx, constraints, constraint_terms


def _mass_matrix(n, bars, node_mass, bar_mass) -> sp.csr_matrix:
    """Consistent mass matrix of slender bars (m/3 diagonal, m/6 coupling) plus point masses, sparse."""
    j, k = bars[:, 0], bars[:, 1]
    return sp.csr_matrix((np.r_[node_mass, bar_mass / 3, bar_mass / 3, bar_mass / 6, bar_mass / 6],
                          (np.r_[np.arange(n), j, k, j, k], np.r_[np.arange(n), j, k, k, j])), shape=(n, n))


def _actuators(src, spec, rest) -> tuple:
    """(string, spool radius, sign, zero, angle limits, u limits) per actuator: u = sign * r * (theta - zero)
    reeled in, rest = rest0 - u; the limits must not reel in a whole string."""
    string_index = {s.name: c for c, s in enumerate(spec.strings)}
    a_str = np.array([string_index[a.string] for a in spec.actuators], dtype=np.int64)
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
    return a_str, spool, sign, zero, alim, ulim


def _frames(src, spec, index, pos) -> tuple:
    """(frame nodes (k, 3), x-axis node (k,)); the three nodes of a frame must span a plane."""
    frames = np.array([[index[nm] for nm in f.nodes] for f in spec.frames], dtype=np.int64).reshape(-1, 3)
    for f, (a, b, c) in zip(spec.frames, frames):
        u, v = pos[b] - pos[a], pos[c] - pos[a]
        if np.linalg.norm(np.cross(u, v)) <= 1e-9 * np.linalg.norm(u) * np.linalg.norm(v):
            raise ModelError(src, f"frame '{f.name}'", f"its nodes {', '.join(repr(nm) for nm in f.nodes)} lie on "
                             "one line, so they define no plane (the z axis is undefined)",
                             "pick three nodes that form a triangle")
    return frames, np.array([index[f.x_node] for f in spec.frames], dtype=np.int64)


def _gravity_forces(g, node_mass, bars, bar_mass) -> np.ndarray:
    """(n, 3) nodal gravity loads [N]: point masses plus half of each bar's weight on each end."""
    nodal_mass = np.array(node_mass, float).copy()
    np.add.at(nodal_mass, bars[:, 0], bar_mass / 2)
    np.add.at(nodal_mass, bars[:, 1], bar_mass / 2)
    return nodal_mass[:, None] * g[None, :]


def _build(spec: ModelSpec) -> Model:
    src = spec.source
    phys, index, names, positions, node_mass, virtual_of, bar_idx, constraints, constraint_terms = _topology(spec)
    n = len(names)
    pos = np.array(positions, float).reshape(-1, 3)
    Q, X0, free, warnings = _eliminate(src, n, constraints, pos, names)
    held = clamped_nodes(spec)
    pos = X0 + Q @ pos[free]

    bars = np.array(bar_idx, dtype=np.int64).reshape(-1, 2)
    bar_mass = np.array([b.mass for b in spec.bars], float)
    bar_len = np.linalg.norm(pos[bars[:, 0]] - pos[bars[:, 1]], axis=1) if len(bars) else np.zeros(0)
    M = _mass_matrix(n, bars, node_mass, bar_mass)
    _check_connected(src, phys, bar_idx, spec, index, constraint_terms, Q)
    Mr = _check_masses(src, names, free, M, Q)
    Ab = _check_bars(src, spec, bars, Q, pos)
    supports = _supports(src, spec, index, bars, pos, Q, Ab)
    check_world_offsets(src, spec, {names[i] for i in np.flatnonzero(np.diff(Q.indptr) > 0)})
    segments, seg_str, seg_names, paths, rest = _strings(src, spec, index, pos)
    ea = np.array([np.nan if s.EA is None else s.EA for s in spec.strings], float)
    kk = np.array([np.nan if s.stiffness is None else s.stiffness for s in spec.strings], float)
    a_str, spool, sign, zero, alim, ulim = _actuators(src, spec, rest)
    frames, frame_x = _frames(src, spec, index, pos)
    g = np.array(spec.gravity, float)
    Wg = _gravity_forces(g, node_mass, bars, bar_mass)

    return Model(
        spec=spec, source=src, name=spec.name, gravity=read_only(g),
        structural_damping=float(spec.structural_damping), node_names=tuple(names), n_physical=len(phys),
        virtual_of=read_only(np.array(virtual_of, np.int64)), positions=read_only(pos),
        node_mass=read_only(np.array(node_mass, float)),
        bar_names=tuple(b.name for b in spec.bars), bars=read_only(bars), bar_mass=read_only(bar_mass),
        bar_radius=read_only(np.array([b.radius for b in spec.bars], float)), bar_length=read_only(bar_len),
        string_names=tuple(s.name for s in spec.strings), string_paths=paths, segments=read_only(segments),
        segment_string=read_only(seg_str), segment_names=seg_names, string_EA=read_only(ea),
        string_stiffness=read_only(kk),
        string_damping=read_only(np.array([s.damping for s in spec.strings], float)), rest_length=read_only(rest),
        string_pulley_damping=read_only(np.array([s.pulley_damping for s in spec.strings], float)),
        string_pulley_friction=read_only(np.array([s.pulley_friction_coefficient for s in spec.strings], float)),
        string_radius=read_only(np.array([s.radius for s in spec.strings], float)),
        string_group=tuple(s.group for s in spec.strings),
        constraint_names=tuple(c[0] for c in constraints), constraint_terms=constraint_terms,
        constraint_value=read_only(np.array([c[2] for c in constraints], float).reshape(-1, 3)),
        fixed_nodes=read_only(np.array([index[nd.name] for nd in spec.nodes if nd.fixed or nd.name in held], np.int64)),
        actuator_names=tuple(a.name for a in spec.actuators), actuator_string=read_only(a_str),
        spool_radius=read_only(spool), actuator_sign=read_only(sign), actuator_zero=read_only(zero),
        angle_limits=read_only(alim), u_limits=read_only(ulim),
        actuator_motor=tuple(a.motor for a in spec.actuators),
        actuator_delay=read_only(np.array([a.delay for a in spec.actuators], float)),
        frame_names=tuple(f.name for f in spec.frames), frame_nodes=read_only(frames), frame_x=read_only(frame_x),
        free_nodes=read_only(free), X0=read_only(X0), gravity_forces=read_only(Wg), warnings=tuple(warnings),
        obstacles=tuple(spec.obstacles), supports=supports,
        Q_sparse=Q, mass_sparse=M, reduced_mass_sparse=Mr, bar_jacobian_sparse=Ab)
