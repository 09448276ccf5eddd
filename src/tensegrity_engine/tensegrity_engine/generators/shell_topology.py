"""Topology of Skelton's tensegrity shell class (n, m) ("Dynamics of the shell class of tensegrity
structures", papers/skelton-shell-class-dynamics.txt), derived from the paper's text since its figures are
lost.

Element ij (i = 1..n around, j = 1..m up) has nodes n_1ij..n_4ij, rods r_1ij = n_1ij -> n_2ij and
r_2ij = n_3ij -> n_4ij (eq. 4.3: p_1 = rho, p_2 = rho + r_1, p_3 = rho_hat, p_4 = rho_hat + r_2) and ten
tendons. Their end nodes come from eq. (4.11) and the closure rules (2.2)-(2.12), with t_5 = p_4 - p_2
(eq. 4.2) and t_1 from eq. (4.1) (t_1ij = p_2ij - p_4i(j-1) for j > 1; t_1i1 = p_2i1 - p_1(i+1)1 at the
base, eq. 4.10). With 0-based i, j (indices i mod n):

=====  ==========================  ==================================  ===========================
tendon generic                     base (j = 1)                        top (j = m)
=====  ==========================  ==================================  ===========================
t1     n4 i,j-1  - n2 i,j          n1 i+1,1 - n2 i,1                   -
t2     n4 i,j-1  - n1 i,j          n1 i,1   - n1 i+1,1 (base ring)      -
t3     n3 i-1,j  - n1 i,j          -                                   -
t4     n3 i-1,j  - n2 i,j          -                                   -
t5     n2 i,j    - n4 i,j          -                                   -
t6     n4 i,j    - n1 i+1,j+1      -                                   n4 i,m - n4 i+1,m (top ring)
t7     n3 i,j    - n1 i+1,j+1      -                                   n3 i,m - n4 i+1,m
t8     n2 i,j    - n3 i,j          -                                   -
t9     n2 i,j    - n1 i+1,j        = t1 i,1 (rule 2.2: not repeated)   -
t10    n3 i,j    - n4 i+1,j        -                                   = t7 i,m (rule 2.7)
=====  ==========================  ==================================  ===========================

So the full shell has 10nm - 2n = n(10m - 2) distinct tendons and the primal shell (no t9, t10) 8nm
(both as in the paper). Checks against the text: the node-force sums of appendix C (e.g. node n_1i1 meets
t1_(i-1)1, t2_(i-1)1, t2_i1, t3_i1; node n_4i1 meets t5_i1, t6_i1, t6_(i-1)1, t7_(i-1)1) and the Lemma:
its constraints -t1 + t4 = 0 and t2 + t3 = 0 both say n_4i(j-1) = n_3(i-1)j, and t5 + t6 = 0, t7 + t8 = 0
both say n_2ij = n_1(i+1)(j+1), the joints the Lemma names.

Class 2 (the Lemma): those node pairs become one node (two rods meet there). The paper writes the range
as m > j > 1, which would leave shells with m <= 2 without a joint; we join every pair the equations
define: n_4i(j-1) = n_3(i-1)j for j = 2..m and n_2ij = n_1(i+1)(j+1) for j = 1..m-1 (0-based: 1..m-1 and
0..m-2), i.e. 2n(m - 1) joints. Rod r_1 chains then climb i+1 per level and r_2 chains i-1. The tendon
pairs the Lemma equates (t1/t4, t2/t3, t5/t6, t7/t8) then join the same two nodes; each pair is written
as one string, so class 2 has n(10m - 2) - 4n(m - 1) strings (primal: 8nm - 4n(m - 1)).
"""
from __future__ import annotations

import numpy as np


def node_index(n: int, a, i, j):
    """Model index of node n_{a+1, i, j} (a = 0..3, i mod n, 0-based j): 4 (j n + i) + a."""
    return 4 * (np.asarray(j) * n + np.asarray(i) % n) + np.asarray(a)


def tendons(n: int, m: int, primal: bool = False) -> list:
    """[(node_a, node_b, label)] of the class-1 shell (labels 't1'..'t10'), in the paper's order: tendon
    type, then level j, then i; 0-based model node indices (see :func:`node_index`)."""
    I = np.arange(n)
    N = lambda a, i, j: node_index(n, a, i, j)          # noqa: E731
    out = []

    def add(label, a, b):
        out.extend((int(x), int(y), label) for x, y in zip(np.ravel(a), np.ravel(b)))

    for j in range(m):
        top, base = j == m - 1, j == 0
        add("t1", N(0, I + 1, 0) if base else N(3, I, j - 1), N(1, I, j))
        add("t2", N(0, I, 0) if base else N(3, I, j - 1), N(0, I + 1, 0) if base else N(0, I, j))
        add("t3", N(2, I - 1, j), N(0, I, j))
        add("t4", N(2, I - 1, j), N(1, I, j))
        add("t5", N(1, I, j), N(3, I, j))
        add("t6", N(3, I, j), N(3, I + 1, j) if top else N(0, I + 1, j + 1))
        add("t7", N(2, I, j), N(3, I + 1, j) if top else N(0, I + 1, j + 1))
        add("t8", N(1, I, j), N(2, I, j))
        if not primal and not base:
            add("t9", N(1, I, j), N(0, I + 1, j))
        if not primal and not top:
            add("t10", N(2, I, j), N(3, I + 1, j))
    return out


def rods(n: int, m: int) -> list:
    """[(node_a, node_b, label)]: r1_ij = n1 -> n2 and r2_ij = n3 -> n4 for every element, 2nm rods
    (the paper counts its nm two-rod *elements*, 'nm rods' meaning nm rod pairs; see docs)."""
    i, j = np.meshgrid(np.arange(n), np.arange(m))
    r1 = [(int(a), int(b), "r1") for a, b in zip(node_index(n, 0, i, j).ravel(), node_index(n, 1, i, j).ravel())]
    r2 = [(int(a), int(b), "r2") for a, b in zip(node_index(n, 2, i, j).ravel(), node_index(n, 3, i, j).ravel())]
    return r1 + r2


def class2_joints(n: int, m: int) -> np.ndarray:
    """(2n(m-1), 2) node pairs the Lemma joins: (n3_(i-1)j, n4_i(j-1)) for j >= 1 and
    (n1_(i+1)(j+1), n2_ij) for j <= m-2 (0-based); the first node of each pair is kept."""
    i, j = np.meshgrid(np.arange(n), np.arange(1, m))
    a = np.c_[node_index(n, 2, i - 1, j).ravel(), node_index(n, 3, i, j - 1).ravel()]
    i, j = np.meshgrid(np.arange(n), np.arange(m - 1))
    b = np.c_[node_index(n, 0, i + 1, j + 1).ravel(), node_index(n, 1, i, j).ravel()]
    return np.vstack([a, b]).astype(np.int64).reshape(-1, 2)
