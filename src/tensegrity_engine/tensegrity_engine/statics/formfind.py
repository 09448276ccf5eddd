"""Form-finding by the force-density method (FDM), with symmetry groups.

A tensegrity's *topology* (nodes, bars, simple strings) and its *force densities* ``q = t / L`` [N/m]
(tension over length; bars carry negative q) define the force density matrix

    D = Cᵀ diag(q) C          (n x n, sparse; C the member-node incidence matrix, +1 / -1 per member),

and a node configuration X (n, 3) is in self-equilibrium exactly when ``D X = 0``. Since ``D 1 = 0``,
a non-degenerate 3-D form needs ``nullity(D) >= d + 1 = 4``; any affine image ``X A + 1 tᵀ`` of such a
form is again in equilibrium with the same q.

* **Supports** (nodes with ``fixed: true``): the linear FDM of Schek (1974). With D split into free (f)
  and fixed (s) nodes, ``D_ff X_f = P_f - D_fs X_s`` (P the nodal loads [N]) gives the free nodes at once.
* **Free-standing**: the *adaptive* FDM, after the idea of Zhang & Ohsaki (2006) and Estrada, Bungartz &
  Mohrdieck (2006), written here from scratch: members of one symmetry group share one force density
  (``q = G s``, G the member-group indicator). Repeat: the eigenvectors of the 3 smallest eigenvalues of D
  (the constant vector deflated) give a geometry X; the group force densities s that best balance X are
  the right singular vector of the smallest singular value of the group equilibrium matrix
  ``A_G = [C_xᵀ diag(C x); C_yᵀ diag(C y); C_zᵀ diag(C z)] G`` (3n x g), i.e. ``min |A_G s|`` with
  ``|s|`` fixed; until the 3 smallest deflated eigenvalues are zero to ``tol`` relative to the largest.
  That fixed-point step converges linearly (slowly for many nodes), so each iteration also tries a
  Gauss-Newton step on those eigenvalues (analytic derivatives) and keeps whichever does better.
  The form is then fixed up to its affine freedom by :func:`fit_affine`.

:func:`form_find` returns positions, force densities, member forces (``q L``), rest lengths for the
engine (from the strings' EA or stiffness), and the checks of the result (:func:`verify`).
Units: m, N, N/m.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy import linalg
from scipy.sparse import linalg as spla

from tensegrity_engine.errors import ModelError

DENSE_LIMIT = 400          # nodes: dense eigen-decomposition below, sparse eigsh above


class FormFindError(ValueError):
    """Form-finding failed; the message says what is wrong and what to try."""


@dataclass(frozen=True)
class Topology:
    """Members of a model on its physical nodes. Members: bars first, then simple strings."""
    node_names: tuple
    ends: np.ndarray          # (m, 2) physical node indices
    is_bar: np.ndarray        # (m,) bool
    member_names: tuple
    group_of: np.ndarray      # (m,) group index
    group_names: tuple
    fixed: np.ndarray         # (n,) bool: supports

    @property
    def n(self) -> int:
        return len(self.node_names)

    @property
    def incidence(self) -> sp.csr_matrix:
        """C (m, n): +1 at a member's first node, -1 at its second."""
        m = len(self.ends)
        rows = np.repeat(np.arange(m), 2)
        return sp.csr_matrix((np.tile([1.0, -1.0], m), (rows, self.ends.ravel())), shape=(m, self.n))

    @property
    def grouping(self) -> sp.csr_matrix:
        """G (m, g): member -> group indicator, ``q = G s``."""
        m = len(self.ends)
        return sp.csr_matrix((np.ones(m), (np.arange(m), self.group_of)), shape=(m, len(self.group_names)))

    def group_members(self, k: int) -> list:
        return [self.member_names[i] for i in np.flatnonzero(self.group_of == k)]


def topology(model, symmetry: str = "labels", length_tol: float = 1e-6) -> Topology:
    """The model's members and their symmetry groups.

    ``symmetry``: ``labels`` — strings by their ``group`` label (a string without one is its own group),
    all bars one group ``bars``; ``length`` — members of one kind and equal start length (to
    ``length_tol`` relative) share a group (orbits of a symmetric start drawing); ``none`` — every member
    its own group. Composite strings and user constraints are not supported (ModelError says so).
    """
    spec = model.spec
    for s in spec.strings:
        if len(s.path) > 2:
            raise ModelError(model.source, f"string '{s.name}'", "form-finding treats simple strings only (this one "
                             f"passes through {len(s.path) - 2} node(s))", "split it into simple strings")
    if spec.constraints:
        raise ModelError(model.source, f"constraint '{spec.constraints[0].name}'", "form-finding does not support "
                         "linear node constraints", "remove them (fixed nodes are supported) or use 'tensegrity relax'")
    phys = np.where(model.virtual_of >= 0, model.virtual_of, np.arange(model.n_nodes))
    ends = np.vstack([phys[model.bars], phys[model.segments]]).astype(np.int64).reshape(-1, 2)
    nb = len(model.bars)
    is_bar = np.r_[np.ones(nb, bool), np.zeros(len(model.segments), bool)]
    names = tuple(model.bar_names) + tuple(model.string_names)
    if symmetry == "labels":
        labels = ["bars"] * nb + [s.group or s.name for s in spec.strings]
    elif symmetry == "none":
        labels = list(names)
    elif symmetry == "length":
        labels = _length_labels(model.positions, ends, is_bar, length_tol)
    else:
        raise ValueError(f"symmetry must be labels, length or none, got {symmetry!r}")
    group_names = tuple(dict.fromkeys(labels))
    index = {g: k for k, g in enumerate(group_names)}
    fixed = np.zeros(model.n_physical, bool)
    fixed[model.fixed_nodes] = True                 # 'fixed: true' and the ends of clamped bars
    return Topology(tuple(model.node_names[:model.n_physical]), ends, is_bar, names,
                    np.array([index[g] for g in labels], np.int64), group_names, fixed)


def _length_labels(X, ends, is_bar, tol) -> list:
    """Group labels by kind and start length: sorted log-lengths split where consecutive ones differ by
    more than ``tol`` (so equal lengths never straddle a rounding boundary)."""
    L = np.linalg.norm(X[ends[:, 0]] - X[ends[:, 1]], axis=1)
    key = np.log(np.maximum(L, 1e-300)) + np.where(is_bar, 1e6, 0.0)     # bars and strings never mix
    order = np.argsort(key)
    cluster = np.empty(len(L), np.int64)
    cluster[order] = np.cumsum(np.r_[0, np.diff(key[order]) > tol])
    first = {}
    for i in order:                                                    # label = kind and first length seen
        first.setdefault(cluster[i], f"{'bars' if is_bar[i] else 'strings'}_L{L[i]:.6g}")
    return [first[c] for c in cluster]


def group_values(topo: Topology, q: dict) -> np.ndarray:
    """(g,) force density per group [N/m] from ``{group or member name: q}``; every group must get one
    (a member name sets that member's group). Raises FormFindError naming missing or unknown names."""
    out = np.full(len(topo.group_names), np.nan)
    gi = {g: k for k, g in enumerate(topo.group_names)}
    mi = {m: topo.group_of[k] for k, m in enumerate(topo.member_names)}
    unknown = [k for k in q if k not in gi and k not in mi]
    if unknown:
        raise FormFindError(f"unknown group(s) {', '.join(map(repr, unknown))}; groups are: "
                            + ", ".join(repr(g) for g in topo.group_names))
    for k, v in q.items():
        out[gi[k] if k in gi else mi[k]] = float(v)
    missing = [topo.group_names[k] for k in np.flatnonzero(~np.isfinite(out))]
    if missing:
        raise FormFindError(f"no force density for group(s) {', '.join(map(repr, missing))}: give each as "
                            "--q GROUP=VALUE [N/m] (strings > 0, bars < 0)")
    return out


def default_group_values(topo: Topology) -> np.ndarray:
    """+1 N/m for string groups, -1 N/m for bar groups (a start for the adaptive method)."""
    g_is_bar = np.zeros(len(topo.group_names), bool)
    g_is_bar[topo.group_of[topo.is_bar]] = True
    return np.where(g_is_bar, -1.0, 1.0)


def drawing_group_values(topo: Topology, X) -> np.ndarray:
    """Start force densities (g,) [N/m] from a drawing X (n,3): the group self-stress that best balances
    it (norm of the defaults), if its signs are right (strings > 0, bars < 0); else the defaults."""
    s0 = default_group_values(topo)
    s = _best_densities(group_equilibrium_matrix(topo, np.asarray(X, float)), s0)
    return s if np.all(s * s0 > 0) else s0


def density_matrix(topo: Topology, q) -> sp.csr_matrix:
    """D = Cᵀ diag(q) C (n, n) [N/m] for member force densities q (m,)."""
    C = topo.incidence
    return (C.T @ sp.diags(np.asarray(q, float)) @ C).tocsr()


def _scale(topo: Topology, q) -> float:
    """Gershgorin bound of |D|'s largest eigenvalue: 2 max over nodes of the summed |q| [N/m]."""
    deg = np.bincount(topo.ends.ravel(), weights=np.repeat(np.abs(q), 2), minlength=topo.n)
    return float(2.0 * deg.max())


def smallest_modes(D, k: int, scale: float):
    """(eigenvalues (k,), eigenvectors (n, k)): the k algebraically smallest eigenpairs of D with the
    constant vector deflated (shifted to the top of the spectrum). Dense below DENSE_LIMIT nodes."""
    n = D.shape[0]
    alpha = 4.0 * scale + 1.0
    if n <= DENSE_LIMIT:
        Dd = D.toarray() + alpha / n
        w, V = linalg.eigh(Dd, subset_by_index=[0, k - 1])
        return w, V
    op = spla.LinearOperator((n, n), matvec=lambda v: D @ v + alpha * v.sum(axis=0) / n, dtype=float)
    w, V = spla.eigsh(op, k=k, which="SA", tol=1e-14, maxiter=20 * n)
    o = np.argsort(w)
    return w[o], V[:, o]


def group_equilibrium_matrix(topo: Topology, X) -> np.ndarray:
    """A_G (3n, g): nodal force of unit force density in every member of a group, at positions X (n,3)."""
    C = topo.incidence
    G = topo.grouping
    blocks = [(C.T @ sp.diags(C @ X[:, a]) @ G).toarray() for a in range(3)]
    return np.vstack(blocks)


def _best_densities(A, s_prev):
    """Group force densities balancing A best: the right singular vector of the smallest singular value
    (the projection of s_prev on the numerical null space when that has more than one dimension),
    signed like s_prev and scaled to its norm."""
    _, sv, Vt = linalg.svd(A, full_matrices=False)
    tol = 1e-10 * sv[0]
    null = Vt[sv <= tol] if np.sum(sv <= tol) > 1 else Vt[-1:]
    s = null.T @ (null @ s_prev)
    if np.linalg.norm(s) < 1e-12 * np.linalg.norm(s_prev):
        s = Vt[-1]
    s = s * np.sign(s @ s_prev or 1.0)
    return s * np.linalg.norm(s_prev) / np.linalg.norm(s)


@dataclass
class AdaptiveResult:
    """Result of :func:`adaptive_fdm`: converged geometry (n,3) (orthonormal eigenvector columns),
    group force densities (g,) [N/m], the relative size of the 3 smallest deflated eigenvalues per
    iteration, and the nullity of D at the end (counting the constant vector)."""
    X: np.ndarray
    s: np.ndarray
    history: list = field(default_factory=list)
    nullity: int = 0
    eigenvalues: np.ndarray = None

    @property
    def iterations(self) -> int:
        """Updates of the force densities (0: the start values already had the nullity)."""
        return len(self.history) - 1


def _state(topo: Topology, s):
    """(relative size of the 3 smallest deflated eigenvalues, eigenvalues (5,), eigenvectors (n,5), scale)."""
    q = topo.grouping @ s
    scale = _scale(topo, q)
    w, V = smallest_modes(density_matrix(topo, q), 5, scale)
    return float(np.abs(w[:3]).max() / scale), w, V, scale


def _newton_step(topo: Topology, s, w, V):
    """Gauss-Newton step driving the 3 smallest eigenvalues of D to zero, |s| kept: their derivatives are
    ``d lambda_k / d s_j = sum over members e of group j of ((C phi_k)_e)^2``; the least-norm step with
    no component along s."""
    dphi = topo.incidence @ V[:, :3]                               # (m, 3) member elongations per mode
    J = (topo.grouping.T @ dphi ** 2).T                            # (3, g)
    ds = linalg.lstsq(np.vstack([J, s / np.linalg.norm(s)]), np.r_[-w[:3], 0.0])[0]
    s1 = s + ds
    return s1 * np.linalg.norm(s) / max(np.linalg.norm(s1), 1e-300)


def adaptive_fdm(topo: Topology, s0, tol: float = 1e-12, max_iter: int = 500) -> AdaptiveResult:
    """Adaptive force-density method on a free-standing topology (module docstring).

    s0: (g,) start force densities per group [N/m]. Converged when the 3 smallest eigenvalues of D (with
    the constant vector deflated) are below ``tol`` times D's spectral bound; the result keeps the norm of
    s0. Raises FormFindError if it does not converge in ``max_iter`` iterations.
    """
    s = np.asarray(s0, float).copy()
    rel, w, V, scale = _state(topo, s)
    hist = [rel]
    while rel > tol and len(hist) <= max_iter:
        trials = [_best_densities(group_equilibrium_matrix(topo, V[:, :3]), s), _newton_step(topo, s, w, V)]
        states = [_state(topo, t) for t in trials]
        k = 1 if states[1][0] < states[0][0] else 0          # Newton when it does better than the AFDM step
        s, (rel, w, V, scale) = trials[k], states[k]
        hist.append(rel)
    if rel <= tol:
        nullity = 1 + int(np.sum(np.abs(w) <= max(tol, 1e-10) * scale))
        return AdaptiveResult(V[:, :3].copy(), s, hist, nullity, w)
    nullity = 1 + int(np.sum(np.abs(w) <= tol * scale))
    raise FormFindError(f"D has nullity {nullity} < 4 after {max_iter} adaptive iteration(s) (its next eigenvalue is "
                        f"{hist[-1]:.2e} of the largest): the force densities admit no 3-D form within these groups; "
                        "try other start values (--q), adapting them (drop --exact-q), one force density per member "
                        "(--symmetry none) or check the topology")


def solve_supported(topo: Topology, q, X_start, loads=None) -> np.ndarray:
    """Linear FDM with supports: positions (n,3) [m] with fixed nodes at X_start and the free nodes from
    ``D_ff X_f = P_f - D_fs X_s`` (loads P (n,3) [N], default none)."""
    D = density_matrix(topo, q)
    f, s = np.flatnonzero(~topo.fixed), np.flatnonzero(topo.fixed)
    X = np.asarray(X_start, float).copy()
    P = np.zeros((topo.n, 3)) if loads is None else np.asarray(loads, float)
    Dff = D[f][:, f].tocsc()
    rhs = P[f] - D[f][:, s] @ X[s]
    lu = spla.splu(Dff)
    Xf = lu.solve(rhs)
    piv = np.abs(lu.U.diagonal())
    if not np.all(np.isfinite(Xf)) or piv.min() <= 1e-12 * max(piv.max(), 1e-300):
        raise FormFindError("D_ff (free nodes) is singular: some free nodes are not tied to a support through "
                            "members with non-zero force density; add members or supports")
    X[f] = Xf
    return X


def fit_affine(X, X_start, bar_ends, bar_lengths, shape: str = "symmetric"):
    """Place the form X (n,3) (defined up to an affine map) in space. Returns (positions, note).

    ``symmetric``: keep X's shape up to uniform scale; rotate/reflect it onto X_start (Procrustes).
    ``start``: the affine image of X nearest to X_start (least squares). Then, where possible, the
    metric G = AAᵀ nearest to the current one is adjusted so every bar has its requested length
    (``bar_lengths`` [m]); if that is impossible the form is scaled uniformly and the note says so.
    """
    Xc = X - X.mean(axis=0)
    S = np.asarray(X_start, float)
    Sc = S - S.mean(axis=0)
    if shape == "start":
        A = linalg.lstsq(Xc, Sc)[0]
        sv = linalg.svdvals(A)
        if sv[-1] <= 1e-6 * sv[0]:
            shape = "symmetric"
    if shape == "symmetric":
        U, _, Vt = linalg.svd(Xc.T @ Sc)
        A = U @ Vt                                    # rotation or reflection onto the start
    elif shape != "start":
        raise ValueError(f"shape must be symmetric or start, got {shape!r}")
    u = Xc[bar_ends[:, 0]] - Xc[bar_ends[:, 1]]
    Lb = np.asarray(bar_lengths, float)
    if not len(Lb):
        c = np.sqrt(np.sum(Sc ** 2) / max(np.sum((Xc @ A) ** 2), 1e-300))
        return Xc @ (c * A) + S.mean(axis=0), "no bars: scaled to the start drawing's size"
    lens = np.linalg.norm(u @ A, axis=1)
    c = float(lens @ Lb / (lens @ lens))
    err = float(np.abs(c * lens - Lb).max() / Lb.max())
    A2 = c * A if err <= 1e-12 else _metric_fit(c * A, u, Lb)
    note = ""
    if A2 is None:
        A2 = c * A
        note = (f"bar lengths cannot all be met by an affine map of this form: scaled uniformly, bar lengths "
                f"off by up to {err:.2e} relative")
    return Xc @ A2 + S.mean(axis=0), note


def _metric_fit(A, u, Lb):
    """A' with |u_b A'| = L_b for every bar and A'A'ᵀ nearest to AAᵀ (Frobenius), or None."""
    iu = np.triu_indices(3)
    w = np.where(iu[0] == iu[1], 1.0, 2.0)                # u G uᵀ = sum_{i<=j} w_ij u_i u_j G_ij
    M = u[:, iu[0]] * u[:, iu[1]] * w
    g0 = (A @ A.T)[iu]
    g = g0 + linalg.lstsq(M, Lb ** 2 - M @ g0)[0]
    if np.abs(M @ g - Lb ** 2).max() > 1e-10 * (Lb ** 2).max():
        return None
    Gm = np.zeros((3, 3))
    Gm[iu] = g
    Gm = Gm + np.triu(Gm, 1).T
    ev, V = linalg.eigh(Gm)
    if ev.min() <= 1e-12 * ev.max():
        return None
    root = V @ np.diag(np.sqrt(ev)) @ V.T
    inv = V @ np.diag(1 / np.sqrt(ev)) @ V.T
    U, _, Wt = linalg.svd(inv @ A)                        # A' = G^1/2 R, R the orthogonal factor nearest
    return root @ (U @ Wt)


@dataclass
class FormFindResult:
    """Result of :func:`form_find`. Positions (physical nodes, (n,3)) [m]; ``q`` (m,) member force
    densities [N/m] (bars first, then strings), ``group_q`` (g,) per group; ``tensions`` (sigma_c,) [N],
    ``bar_forces`` (beta,) [N, compression positive], ``rest_lengths`` (sigma_c,) [m]; ``model`` the model
    with these positions and rest lengths; ``residual`` [N] the largest unbalanced reduced nodal force of
    the engine's own string law at the found form; ``stable`` from :func:`equilibrium.stability`."""
    topology: Topology
    positions: np.ndarray
    q: np.ndarray
    group_q: np.ndarray
    tensions: np.ndarray
    bar_forces: np.ndarray
    rest_lengths: np.ndarray
    model: object
    residual: float
    stable: bool | None
    iterations: int
    nullity: int
    method: str
    notes: list = field(default_factory=list)
    history: list = field(default_factory=list)    # adaptive FDM: 3 smallest eigenvalues / largest, per iteration

    def summary(self) -> str:
        t = self.topology
        lines = [f"form-finding ({self.method}): {self.iterations} iteration(s), nullity of D {self.nullity}, "
                 f"residual {self.residual:.3e} N, stable: "
                 + {True: "yes", False: "NO", None: "not checked"}[self.stable]]
        lines += [f"note: {n}" for n in self.notes]
        lines.append(f"{'group':<20}{'members':>8}{'q [N/m]':>14}")
        for k, g in enumerate(t.group_names):
            lines.append(f"{g:<20}{int(np.sum(t.group_of == k)):>8}{self.group_q[k]:>14.6g}")
        lines.append(f"string tensions {self.tensions.min():.4g} .. {self.tensions.max():.4g} N, bar compressions "
                     f"{self.bar_forces.min() if len(self.bar_forces) else 0:.4g} .. "
                     f"{self.bar_forces.max() if len(self.bar_forces) else 0:.4g} N")
        return "\n".join(lines)


def _physical_loads(model) -> np.ndarray:
    """Gravity loads (n_physical, 3) [N], virtual-node loads added to their physical node."""
    phys = np.where(model.virtual_of >= 0, model.virtual_of, np.arange(model.n_nodes))
    P = np.zeros((model.n_physical, 3))
    np.add.at(P, phys, model.gravity_forces)
    return P


def _check_signs(topo: Topology, s, X):
    """FormFindError if a group's force density vanished, a string group is compressed or a bar group is
    in tension, or a member has zero length."""
    span = float(np.ptp(X, axis=0).max()) or 1.0
    L = np.linalg.norm(X[topo.ends[:, 0]] - X[topo.ends[:, 1]], axis=1)
    if L.min() <= 1e-9 * span:
        i = int(np.argmin(L))
        raise FormFindError(f"degenerate form: member '{topo.member_names[i]}' has zero length; the force densities "
                            "admit no 3-D form with distinct nodes; try other values")
    g_is_bar = np.zeros(len(s), bool)
    g_is_bar[topo.group_of[topo.is_bar]] = True
    tiny = np.abs(s) <= 1e-8 * np.abs(s).max()
    bad = np.flatnonzero(tiny | (g_is_bar & (s > 0)) | (~g_is_bar & (s < 0)))
    if len(bad):
        k = bad[0]
        what = ("went to zero (its members carry no force)" if tiny[k] else
                "is positive: the bars would pull" if g_is_bar[k] else "is negative: the strings would push")
        raise FormFindError(f"the force density of group '{topo.group_names[k]}' {what} (group q = "
                            + ", ".join(f"{g}: {v:.4g}" for g, v in zip(topo.group_names, s))
                            + "); this topology with these groups has no all-taut form near the start values: "
                            "try other start values (--q) or other groups (--symmetry)")


def form_find(model, q: dict | None = None, symmetry: str = "labels", shape: str = "symmetric",
              min_tension: float | None = None, tol: float = 1e-12, max_iter: int = 500,
              residual_tol: float = 1e-9, adapt: bool = True, bar_lengths=None,
              check_stability: bool = True) -> FormFindResult:
    """Find a self-stressed form of ``model``'s topology for group force densities ``q``
    ({group or member name: N/m}; default: those that best balance the model's drawing, or +1 for
    strings and -1 for bars if that has wrong signs) and return it verified.

    Supports (fixed nodes) -> linear FDM with the model's gravity loads, q taken as given. Otherwise the
    adaptive FDM (q adapted within the groups, keeping their norm; ``min_tension`` [N] rescales the
    prestress; ``adapt=False``: q must already give nullity >= 4), placed by :func:`fit_affine`
    (``shape``) with the bars at ``bar_lengths`` [m] (one value or one per bar; default the model's).
    ``check_stability=False`` skips :func:`.equilibrium.stability` (dense, O(n^3): minutes for thousands
    of nodes); ``stable`` is then None. Raises FormFindError (ValueError) when no valid form exists.
    """
    topo = topology(model, symmetry)
    s = group_values(topo, q) if q else drawing_group_values(topo, model.positions[:topo.n])
    G = topo.grouping
    n = topo.n
    start = model.positions[:n]
    notes = []
    if topo.fixed.any():
        X = solve_supported(topo, G @ s, start, _physical_loads(model))
        its, nullity, method, external, hist = 0, 0, "linear force-density method with supports", None, []
        _check_signs(topo, s, X)
    else:
        # given q (adapt=False) are typed to a few digits: nullity to 1e-8, the last step balances exactly
        res = adaptive_fdm(topo, s, tol if adapt else max(tol, 1e-8), max_iter if adapt else 0)
        _check_signs(topo, res.s, res.X)
        Lb = model.bar_length if bar_lengths is None else np.broadcast_to(np.asarray(bar_lengths, float),
                                                                            model.bar_length.shape)
        X, note = fit_affine(res.X, start, topo.ends[topo.is_bar], Lb, shape)
        notes += [note] if note else []
        s = _best_densities(group_equilibrium_matrix(topo, X), res.s)   # exact balance of the placed form
        its, nullity, method, hist = res.iterations, res.nullity, "adaptive force-density method", res.history
        external = -model.gravity_forces
        if np.any(model.gravity):
            notes.append("gravity is ignored: a free-standing form carries only its self-stress")
    qm = G @ s
    L = np.linalg.norm(X[topo.ends[:, 0]] - X[topo.ends[:, 1]], axis=1)
    force = qm * L
    nb = len(model.bar_names)
    tensions = np.zeros(len(model.string_names))
    tensions[model.segment_string] = force[nb:]
    if min_tension is not None and external is not None:
        c = min_tension / tensions.min()
        s, qm, force, tensions = s * c, qm * c, force * c, tensions * c
    return _verified(model, topo, X, s, qm, tensions, -force[:nb], external,
                     dict(iterations=its, nullity=nullity, method=method, notes=notes, history=hist), residual_tol, check_stability)


def _verified(model, topo, X, s, qm, tensions, bar_forces, external, info, residual_tol,
              check_stability=True) -> FormFindResult:
    """Rest lengths for the engine, the model with them, and the engine-side checks."""
    from tensegrity_engine.statics.equilibrium import stability, with_rest_lengths
    from tensegrity_engine.statics.balance import equilibrium_matrix, static_forces
    Ls = model.string_lengths(model.from_physical(X))
    rest = model.rest_length_for_tension(tensions, Ls)
    if np.any(~np.isfinite(rest) | (rest <= 0)):
        i = int(np.argmin(np.nan_to_num(rest, nan=-1.0)))
        raise FormFindError(f"string '{model.string_names[i]}' would need a rest length <= 0 for {tensions[i]:.4g} N: "
                            "lower the prestress (--min-tension / --q) or raise its EA or stiffness")
    new = with_rest_lengths(model, rest, X)
    Xn = new.positions
    Fr, t_eng = static_forces(new, Xn, external=external)
    E, _ = equilibrium_matrix(new, Xn)
    nc = len(model.string_names)
    residual = float(np.abs(Fr.ravel() + E[:, nc:] @ bar_forces).max())
    if residual > residual_tol:
        raise FormFindError(f"the found form is not balanced to {residual_tol:.1g} N (residual {residual:.3e} N); "
                            "try a tighter --tol or other force densities")
    stable = stability(new, Xn, external=external)["stable"] if check_stability else None
    return FormFindResult(topo, X, qm, s, t_eng, bar_forces, rest, new, residual, stable, **info)
