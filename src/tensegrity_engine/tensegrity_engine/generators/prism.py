"""The class-1 n-prism and the 6-bar icosahedron as model documents (:mod:`.document`)."""
from __future__ import annotations

import math

import numpy as np

from tensegrity_engine.generators.document import model_document



def n_prism(n: int = 3, radius: float = 0.15, height: float = 0.3, bar_mass: float = 0.1, bar_radius: float = 0.006,
            ea: float = 2000.0) -> dict:
    """Class-1 n-prism (n >= 3): bottom nodes 1..n at z = 0, top nodes n+1..2n at z = ``height`` [m], both on
    a circle of ``radius`` [m]. Bar i runs from bottom i to top i, vertical string i from bottom i to top
    i+1. Top node i sits at angle ``2 pi i / n + 3 pi / 2 - pi / n``: the only twist at which the prism has
    a self-stress with every string in tension (the classic ``pi/2 - pi/n`` between a ring node and the
    top node its vertical string reaches, counted the other way round)."""
    if n < 3:
        raise ValueError("an n-prism needs n >= 3")
    twist = 1.5 * math.pi - math.pi / n
    nodes = [(radius * math.cos(2 * math.pi * i / n), radius * math.sin(2 * math.pi * i / n), 0.0) for i in range(n)]
    nodes += [(radius * math.cos(2 * math.pi * i / n + twist), radius * math.sin(2 * math.pi * i / n + twist), height)
              for i in range(n)]
    bars = [(i, n + i) for i in range(n)]
    strings = [(i, (i + 1) % n, "bottom") for i in range(n)]
    strings += [(n + i, n + (i + 1) % n, "top") for i in range(n)]
    strings += [(i, n + (i + 1) % n, "vertical") for i in range(n)]
    return model_document(f"prism{n}", f"class-1 {n}-prism (generated)", nodes, bars, strings, bar_mass, bar_radius, ea)


def icosahedron(bar_length: float = 0.6, bar_mass: float = 0.1, bar_radius: float = 0.006, ea: float = 2000.0) -> dict:
    """The 6-bar tensegrity icosahedron ("expanded octahedron"): bar pairs parallel to x, y and z, half a bar
    length apart (its equilibrium with all 24 strings equally tense); each node is tied by strings to its 4
    nearest nodes of the other two pairs."""
    h, d = bar_length / 2, bar_length / 4
    nodes = []
    for axis in range(3):                   # pair along `axis`, offset along the next axis
        for off in (-d, d):
            for end in (-h, h):
                p = [0.0, 0.0, 0.0]
                p[axis] = end
                p[(axis + 1) % 3] = off
                nodes.append(p)
    bars = [(2 * k, 2 * k + 1) for k in range(6)]
    X = np.array(nodes)
    D = np.linalg.norm(X[:, None] - X[None], axis=2)
    pair = np.arange(12) // 4                    # nodes 4k..4k+3 are the pair along axis k
    cross = pair[:, None] != pair[None]
    edge = D[cross].min()                        # each node's 4 nearest nodes of the other pairs
    strings = [(i, j, "edge") for i in range(12) for j in range(i + 1, 12)
               if cross[i, j] and abs(D[i, j] - edge) < 1e-9 * bar_length]
    return model_document("icosahedron", "6-bar tensegrity icosahedron / expanded octahedron (generated)", nodes, bars, strings,
                bar_mass, bar_radius, ea)
