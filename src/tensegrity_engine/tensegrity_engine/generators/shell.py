"""Skelton's tensegrity shell (n, m) as a prestressed equilibrium (topology: :mod:`.generators_shell_topology`).

Geometry. The class-2 layout on a cylinder of radius ``radius`` [m] (i around, j up, level height
``h = radius * 2 pi / n`` unless given): rod r_1ij runs from angle i*D, height j*h to angle (i+1)*D,
height (j+1)*h (D = 2 pi / n), rod r_2ij from angle (i+3/2)*D, height (j+1/2)*h to (i+1/2)*D,
(j+3/2)*h, so each joint of one rod family sits just outside the middle of a rod of the other family (the
Lemma: "nodes closed outside the rod"). Class 1 shortens every rod about its middle by the fraction
``gap`` at each end, so the joined node pairs separate.

Equilibrium (form finding with the n-fold symmetry): node i of every orbit is the orbit's representative
turned by i*D, so the unknowns are the 4m representative nodes, one force density q [N/m] per string
orbit (q >= ``q_min``) and one per rod orbit. A least-squares solve finds a shape near the layout where
strings of force densities q balance the rods (rod lengths as laid out); a second solve with q fixed makes
it exact (residual ~1e-12 N). Every node is held at least ``floor`` (0.5, else 0.25, else 0.125) times the
layout radius from the axis by a one-sided residual, zero at the solution, so the balance stays exact: all
nodes on the axis balance too, and the primal class-2 (3,3) shell slid there (radius ~1e-20 m, issue 22).
Tensions q*L > 0: every string is taut by construction. Stability is not implied:
:func:`.generators.verify_template` checks it with the engine (``equilibrium.stability``).
"""
from __future__ import annotations

import numpy as np
from scipy import optimize

from tensegrity_engine.generators.shell_topology import class2_joints, node_index, rods, tendons


def layout(n: int, m: int, radius: float = 0.15, height: float | None = None, gap: float = 0.1) -> np.ndarray:
    """(4nm, 3) node positions [m] of the cylinder layout (model order, :func:`node_index`)."""
    D = 2 * np.pi / n
    h = radius * D if height is None else height
    i, j = np.meshgrid(np.arange(n), np.arange(m))
    ends = {0: ((i * D, j * h), ((i + 1) * D, (j + 1) * h)),                        # r1: n1 -> n2
            2: (((i + 1.5) * D, (j + 0.5) * h), ((i + 0.5) * D, (j + 1.5) * h))}    # r2: n3 -> n4
    X = np.zeros((4 * n * m, 3))
    for a, ((a0, z0), (a1, z1)) in ends.items():
        for end, (aa, zz) in enumerate(((a0 + gap * (a1 - a0), z0 + gap * (z1 - z0)),
                                        (a1 - gap * (a1 - a0), z1 - gap * (z1 - z0)))):
            X[node_index(n, a + end, i, j).ravel()] = np.c_[radius * np.cos(aa).ravel(),
                                                            radius * np.sin(aa).ravel(), zz.ravel()]
    return X


class _Symmetric:
    """Force balance of the shell with n-fold symmetry, in the 4m representative nodes (i = 0)."""

    def __init__(self, n, m, elements_t, elements_r, joints=None):
        self.n, self.m = n, m
        c, s = np.cos(2 * np.pi * np.arange(n) / n), np.sin(2 * np.pi * np.arange(n) / n)
        self.rot = np.stack([np.stack([c, -s, 0 * c], -1), np.stack([s, c, 0 * c], -1),
                             np.stack([0 * c, 0 * c, 1 + 0 * c], -1)], 1)      # (n, 3, 3)
        node = np.arange(4 * n * m)
        self.orbit = (node // (4 * n)) * 4 + node % 4                           # representative 4j + a
        self.turn = (node // 4) % n
        self.merge = np.arange(4 * n * m)
        if joints is not None and len(joints):
            self.merge[joints[:, 1]] = joints[:, 0]
        self.t = np.array([(a, b) for a, b, _ in elements_t])
        self.r = np.array([(a, b) for a, b, _ in elements_r])
        self.t_orbit = np.arange(len(self.t)) // n                           # tendons come in blocks of n
        self.r_orbit = np.arange(len(self.r)) // n
        self.rep = np.flatnonzero(self.turn == 0)

    def full(self, Y):
        """(4nm, 3) positions from the (4m, 3) representatives (joined nodes share their first node)."""
        X = np.einsum("nij,nj->ni", self.rot[self.turn], Y[self.orbit])
        return X[self.merge]

    def residual(self, Y, q, lam):
        """(4m, 3) net force [N] on the representative nodes for string and rod force densities."""
        X = self.full(Y)
        F = np.zeros_like(X)
        for (pairs, dens, sign) in ((self.t, q[self.t_orbit], 1.0), (self.r, lam[self.r_orbit], -1.0)):
            f = sign * dens[:, None] * (X[pairs[:, 1]] - X[pairs[:, 0]])
            np.add.at(F, self.merge[pairs[:, 0]], f)
            np.add.at(F, self.merge[pairs[:, 1]], -f)
        return F[self.rep]

    def sparsity(self, nt, nr):
        """(12m + nr) x (12m + nt + nr) 0/1 pattern of d(balance, rod error)/d(Y, q, lam)."""
        from scipy.sparse import lil_matrix
        nY = 3 * len(self.rep)
        P = lil_matrix((nY + nr, nY + nt + nr))
        node_orbit = self.orbit[self.merge]
        for pairs, orb, off in ((self.t, self.t_orbit, nY), (self.r, self.r_orbit, nY + nt)):
            ou, ov = node_orbit[pairs[:, 0]], node_orbit[pairs[:, 1]]
            for a, b, o in zip(ou, ov, orb):
                for row in (a, b):
                    for c in (a, b):
                        P[3 * row:3 * row + 3, 3 * c:3 * c + 3] = 1
                    P[3 * row:3 * row + 3, off + o] = 1
        for a, b, o in zip(node_orbit[self.r[:, 0]], node_orbit[self.r[:, 1]], self.r_orbit):
            P[nY + o, 3 * a:3 * a + 3] = 1
            P[nY + o, 3 * b:3 * b + 3] = 1
        return P.tocsr()

    def rod_error(self, Y, length):
        X = self.full(Y)
        d = X[self.r[:, 1]] - X[self.r[:, 0]]
        return (np.einsum("ij,ij->i", d, d)[:: self.n] - length ** 2) / (2 * length)


FLOORS = (0.5, 0.25, 0.125)     # radius floors tried in turn (fractions of the layout radius), see form_find


def _sparse_fd(fun, pattern, *args):
    """Jacobian callable: finite differences grouped by the sparsity ``pattern``, returned dense (so the
    least-squares solver can use its exact trust-region steps)."""
    from scipy.optimize._numdiff import approx_derivative, group_columns
    groups = group_columns(pattern)
    return lambda z, *a: approx_derivative(lambda x: fun(x, *args), z, sparsity=(pattern, groups)).toarray()


def form_find(n, m, X0, elements_t, elements_r, joints=None, q_min=50.0, q0=200.0, vertical=0.1, floor=0.5):
    """(X (4nm, 3) [m], q per tendon [N/m], residual [N]): an equilibrium of the shell near X0 with every
    string force density >= q_min and every node at least ``floor`` times its layout distance from the axis
    (see the module docstring)."""
    S = _Symmetric(n, m, elements_t, elements_r, joints)
    Y0 = X0[S.rep]
    nt, nr = S.t_orbit.max() + 1, S.r_orbit.max() + 1
    dr = X0[S.r[:: n, 1]] - X0[S.r[:: n, 0]]
    length = np.linalg.norm(dr, axis=1)
    scale = q0 * float(np.max(length))
    vert = np.array([lab in ("t9", "t10") for _, _, lab in elements_t])[:: n]
    q0 = np.where(vert, vertical * q0, q0)             # the verticals t9, t10 carry less (else flattening)
    q_min = np.where(vert, vertical * q_min, q_min)

    def unpack(z):
        return z[:Y0.size].reshape(Y0.shape), z[Y0.size:Y0.size + nt], z[Y0.size + nt:]

    kept = S.merge[S.rep] == S.rep                     # representatives of nodes that are not joined away
    r_floor = floor * np.hypot(Y0[kept, 0], Y0[kept, 1])

    def res(z, w):
        Y, q, lam = unpack(z)
        r = [S.residual(Y, q, lam).ravel() / scale, 10 * S.rod_error(Y, length) / length.max(),
             10 * np.maximum(r_floor - np.hypot(Y[kept, 0], Y[kept, 1]), 0.0) / length.max()]
        if w:
            r += [w * (Y - Y0).ravel() / length.max(), w * (q - q0) / q0]
        return np.concatenate(r)

    z = np.r_[Y0.ravel(), q0, np.full(nr, q0.max())]
    lo = np.r_[np.full(Y0.size, -np.inf), q_min, np.full(nr, -np.inf)]
    from scipy.sparse import csr_matrix, vstack
    kk = np.flatnonzero(kept)
    Pf = csr_matrix((np.ones(2 * len(kk)), (np.repeat(np.arange(len(kk)), 2), np.c_[3 * kk, 3 * kk + 1].ravel())),
                    shape=(len(kk), Y0.size + nt + nr))
    P0 = vstack([S.sparsity(nt, nr), Pf]).tocsr()   # sparse finite differences: a few evaluations per Jacobian
    k = np.arange(Y0.size + nt)
    P1 = vstack([P0, csr_matrix((np.ones(len(k)), (k, k)), shape=(len(k), P0.shape[1]))]).tocsr()
    for w, tol, nfev in ((1e-2, 1e-8, 100), (1e-4, 1e-10, 100), (0.0, 1e-15, 300)):   # near the layout, then exact
        z = optimize.least_squares(res, z, bounds=(lo, np.inf), args=(w,), xtol=tol, ftol=tol, gtol=tol,
                                   max_nfev=nfev, jac=_sparse_fd(res, P1 if w else P0, w)).x
    Y, q, lam = unpack(z)
    return S.full(Y), q[S.t_orbit], float(np.abs(S.residual(Y, q, lam)).max())


def class2_strings(elements_t, joints):
    """Tendons with joined nodes renamed to the kept node; pairs that now join the same two nodes (the
    Lemma's t1/t4, t2/t3, t5/t6, t7/t8) are written once. Returns (strings, index of the kept tendons)."""
    merge = np.arange(1 + max(max(a, b) for a, b, _ in elements_t))
    merge[joints[:, 1]] = joints[:, 0]
    seen, out, keep = set(), [], []
    for k, (a, b, lab) in enumerate(elements_t):
        key = (min(merge[a], merge[b]), max(merge[a], merge[b]))
        if key not in seen:
            seen.add(key)
            out.append((int(merge[a]), int(merge[b]), lab))
            keep.append(k)
    return out, np.array(keep)


def shell(n: int = 6, m: int = 3, joints: str = "class1", primal: bool = False, radius: float = 0.15,
          height: float | None = None, gap: float = 0.1, bar_mass: float = 0.1, bar_radius: float = 0.006,
          ea: float = 2000.0) -> dict:
    """Model document of the (n, m) tensegrity shell (3 <= n, 1 <= m), class 1 or class 2 (Lemma joints),
    full (n(10m - 2) tendons) or ``primal`` (8nm), at a form-found equilibrium with every string taut;
    string ``tension`` [N] is set to that self-stress (q*L), so the document is already prestressed."""
    from tensegrity_engine.generators.document import model_document
    if int(n) != n or n < 3 or int(m) != m or m < 1:
        raise ValueError(f"a shell needs n >= 3 and m >= 1 (got n={n}, m={m})")
    if joints not in ("class1", "class2"):
        raise ValueError(f"joints must be class1 or class2 (got {joints!r})")
    n, m = int(n), int(m)
    T, R = tendons(n, m, primal), rods(n, m)
    J = class2_joints(n, m) if joints == "class2" else None
    X0 = layout(n, m, radius, height, gap if joints == "class1" else 0.0)
    for floor in FLOORS:       # nodes kept >= floor * radius from the axis: a line of nodes balances too
        X, q, res = form_find(n, m, X0, T, R, J, floor=floor)
        if res <= 1e-9:
            break
    if res > 1e-9:
        raise ValueError(f"shell ({n},{m}): form finding did not reach an equilibrium (residual {res:.3g} N)")
    strings = T
    if J is not None:
        strings, keep = class2_strings(T, J)
        # a merged pair carries both tendons' tension: sum the force densities of coincident tendons
        merge = np.arange(len(X))
        merge[J[:, 1]] = J[:, 0]
        key = {}
        qs = np.zeros(len(strings))
        for k, (a, b, _) in enumerate(T):
            kk = (min(merge[a], merge[b]), max(merge[a], merge[b]))
            key.setdefault(kk, len(key))
            qs[key[kk]] += q[k]
        q = qs
    L = np.linalg.norm(X[[a for a, _, _ in strings]] - X[[b for _, b, _ in strings]], axis=1)
    kind = ("primal " if primal else "") + f"{joints} tensegrity shell ({n},{m})"
    doc = model_document(f"shell{n}x{m}_{joints}{'_primal' if primal else ''}", kind + " (generated, Skelton's shell class)",
               X, [(a, b) for a, b, _ in R], strings, bar_mass, bar_radius, ea)
    if J is not None:                       # joined nodes: bars name the kept node, the other is dropped
        doc["bars"] = [{**b, "nodes": [f"n{merge[int(nd[1:]) - 1] + 1}" for nd in b["nodes"]]} for b in doc["bars"]]
        dropped = set(J[:, 1].tolist())
        doc["nodes"] = [nd for k, nd in enumerate(doc["nodes"]) if k not in dropped]
    for s, t in zip(doc["strings"], q * L):
        s["tension"] = float(t)
    return doc
