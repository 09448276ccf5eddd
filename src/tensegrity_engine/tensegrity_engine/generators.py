"""Model generators: documents (YAML-ready dicts of the model schema) for classic tensegrity templates.

* :func:`n_prism` — the class-1 n-prism (n bars, 3n strings: two rings and n verticals) at its
  equilibrium twist;
* :func:`icosahedron` — the 6-bar "expanded octahedron" (three pairs of parallel bars on the coordinate
  axes, 24 strings), an exact equilibrium when the bars of a pair are half a bar length apart;
* :func:`tower` — k-stage towers of n-prisms, class 1 or class 2 (:mod:`.generators_tower`);
* :func:`shell` — Skelton's tensegrity shell (n, m) (:mod:`.generators_shell`);
* :func:`cuboctahedron` — the 12-bar cuboctahedron, the diamond tensegrity of the cube
  (:mod:`.generators_cuboctahedron`);
* :func:`verify_template` — prestress a document and check residual, tensions and stability.

Each returns a document for :func:`tensegrity_engine.model_file.spec_from_dict` with string ``tension: 0``
(rest length = length: no prestress yet); ``tensegrity equilibrium --min-tension T --write`` (or
:func:`tensegrity_engine.equilibrium.prestress`) gives the rest lengths of a prestressed equilibrium.
"""
from __future__ import annotations

import math

import numpy as np


def _doc(name, description, nodes, bars, strings, bar_mass, bar_radius, ea, gravity=(0.0, 0.0, 0.0)):
    return {
        "schema": "tensegrity-model", "version": 1, "name": name, "description": description,
        "gravity": list(gravity),
        "nodes": [{"name": f"n{i + 1}", "position": [float(v) for v in p]} for i, p in enumerate(nodes)],
        "bars": [{"name": f"b{k + 1}", "nodes": [f"n{a + 1}", f"n{b + 1}"], "mass": bar_mass, "radius": bar_radius}
                 for k, (a, b) in enumerate(bars)],
        "strings": [{"name": f"s{k + 1}", "path": [f"n{a + 1}", f"n{b + 1}"], "EA": ea, "tension": 0.0,
                     "group": g} for k, (a, b, g) in enumerate(strings)],
    }


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
    return _doc(f"prism{n}", f"class-1 {n}-prism (generated)", nodes, bars, strings, bar_mass, bar_radius, ea)


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
    return _doc("icosahedron", "6-bar tensegrity icosahedron / expanded octahedron (generated)", nodes, bars, strings,
                bar_mass, bar_radius, ea)


def _scaled_self_stress(model, tensions, min_tension):
    """(tensions [N] scaled to ``min_tension``, residual [N]) of a generator's own self-stress, checked with
    the engine's equilibrium matrix (bar forces by least squares)."""
    from .equilibrium import equilibrium_matrix
    t = np.asarray(tensions, float) * (min_tension / float(np.min(tensions)))
    E, W = equilibrium_matrix(model, model.positions)
    nc = len(model.string_names)
    f = np.linalg.lstsq(E[:, nc:], -(E[:, :nc] @ t + W), rcond=None)[0]
    return t, float(np.abs(E[:, :nc] @ t + E[:, nc:] @ f + W).max())


def verify_template(doc: dict, min_tension: float = 5.0, tol: float = 1e-9):
    """Prestress a generated document and check it: returns (model with the prestress rest lengths, report
    dict with ``tensions`` [N], ``residual`` [N], ``stable``, ``method``). ``equilibrium.prestress`` is tried
    first; if it finds no all-taut state (its LP start can come back a hair below ``min_tension`` and is
    then rejected) and the document carries its own self-stress (string ``tension`` > 0), that self-stress
    scaled to ``min_tension`` is used, with its residual from the engine's equilibrium matrix. Raises
    ValueError if the residual exceeds ``tol`` [N] or a string is below ``min_tension``."""
    from .equilibrium import prestress, stability, with_rest_lengths
    from .model import build_model
    from .model_file import spec_from_dict
    model = build_model(spec_from_dict(doc, f"<{doc.get('name', 'template')}>"))
    eq = prestress(model, min_tension=min_tension)
    t, residual, method = eq.tensions, eq.residual, "prestress"
    own = [s.get("tension", 0.0) for s in doc["strings"]]
    if (eq.message or residual > tol) and min(own) > 0:
        t, residual = _scaled_self_stress(model, own, min_tension)
        method = "generator self-stress"
    if residual > tol or t.min() < min_tension * (1 - 1e-9):
        raise ValueError(f"template '{doc['name']}' is not an all-taut equilibrium to {tol:g} N (residual "
                         f"{residual:.3g} N, smallest tension {t.min():.4g} N)")
    model = with_rest_lengths(model, model.rest_length_for_tension(t, model.string_lengths(model.positions)))
    st = stability(model, model.positions)
    return model, {"tensions": t, "residual": residual, "stable": bool(st["stable"]), "method": method,
                   "rigid_body_modes": st["rigid_body_modes"]}


from .generators_shell import shell  # noqa: E402,F401  (re-exported)
from .generators_tower import tower  # noqa: E402,F401  (re-exported)
from .generators_cuboctahedron import cuboctahedron  # noqa: E402,F401  (re-exported)

__all__ = ["n_prism", "icosahedron", "tower", "shell", "cuboctahedron", "verify_template"]
