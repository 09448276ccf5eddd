"""k-stage tensegrity towers of stacked n-prisms (model documents for ``tensegrity_engine.model.spec.spec_from_dict``).

Every stage is the n-prism of :func:`.generators.n_prism` (n bars, bottom ring, top ring, n diagonal
strings) at its equilibrium twist ``tw = 3 pi / 2 - pi / n``, so each stage alone has a self-stress with
every string in tension. Two ways to stack them:

* ``joints="class2"`` (ball joints, two bars per node): level ``l`` (l = 0..k) is a ring of n nodes at
  height ``l * height``, turned by ``l * tw``; stage s is the prism between levels s and s+1, so the top
  node of a stage's bar *is* the bottom node of the next stage's bar (the model file simply lets two bars
  share the node name; the engine adds the virtual node and coincidence constraint). The rings of the
  inner levels belong to two prisms and are written once. Self-stress: the sum of the k prism
  self-stresses (exact for every k).
* ``joints="class1"`` (every bar end on its own node): stage s is a complete prism raised by
  ``s * (height - overlap)`` and turned by ``s * phi`` with ``phi = tw - pi / n``, which puts every
  bottom node of stage s+1 midway (in angle) between two top nodes of stage s, ``overlap`` [m] below them.
  Consecutive stages are tied by 4n strings: *saddle* strings from top node i of stage s to bottom nodes
  i and i+1 of stage s+1 (a zig-zag ring), and *vertical* strings from bottom node i of stage s to bottom
  nodes i+1 and i+2 of stage s+1. All junctions are congruent (screw symmetry), so if the 2-stage tower
  has a self-stress with every string taut, the k-stage tower has one too (the sum of the 2-stage states
  of its k-1 junctions). :func:`class1_junction_ok` checks that 2-stage state with the engine's
  prestress solver; :func:`tower` runs it once (a few ms) and raises if it fails. Verified for
  n = 3..16 with the default overlap (:func:`default_overlap`; see ``docs/generators.md``).

Node numbering (model order): class 1: stage s has bottom nodes ``2ns + i`` and top nodes ``2ns + n + i``
(0-based, names ``n<index + 1>``); class 2: level l has nodes ``ln + i``.
Units: m, kg, N.
"""
from __future__ import annotations

import math

import numpy as np


JOINTS = ("class1", "class2")


def _ring(n: int, radius: float, z, angle) -> np.ndarray:
    """(len(z) * n, 3) nodes of rings of n nodes [m]; ring r at height z[r], node i at angle[r] + 2 pi i / n."""
    z, angle = np.atleast_1d(z).astype(float), np.atleast_1d(angle).astype(float)
    a = angle[:, None] + 2.0 * np.pi * np.arange(n)[None, :] / n
    return np.stack([radius * np.cos(a), radius * np.sin(a), np.broadcast_to(z[:, None], a.shape)], -1).reshape(-1, 3)


def _pairs(a, b, group: str) -> list:
    """[(a_k, b_k, group)] from two equal-length integer arrays."""
    return [(int(x), int(y), group) for x, y in zip(np.ravel(a), np.ravel(b))]


def prism_twist(n: int) -> float:
    """Equilibrium twist [rad] of the n-prism between its bottom and top ring (as in ``n_prism``)."""
    return 1.5 * math.pi - math.pi / n


def _class2(k: int, n: int, radius: float, height: float):
    tw = prism_twist(n)
    lev = np.arange(k + 1)
    X = _ring(n, radius, lev * height, lev * tw)
    s, i = np.meshgrid(np.arange(k), np.arange(n), indexing="ij")
    bot, top, top_next = s * n + i, (s + 1) * n + i, (s + 1) * n + (i + 1) % n
    bars = list(zip(bot.ravel().tolist(), top.ravel().tolist()))
    L, j = np.meshgrid(lev, np.arange(n), indexing="ij")
    strings = _pairs(L * n + j, L * n + (j + 1) % n, "ring") + _pairs(bot, top_next, "diagonal")
    return X, bars, strings


def _class1(k: int, n: int, radius: float, height: float, overlap: float):
    tw = prism_twist(n)
    phi = tw - math.pi / n
    st = np.arange(k)
    rise = st * (height - overlap)
    X = _ring(n, radius, np.c_[rise, rise + height].ravel(), np.c_[st * phi, st * phi + tw].ravel())
    s, i = np.meshgrid(st, np.arange(n), indexing="ij")

    def B(s_, i_):
        return 2 * n * s_ + i_ % n

    def T(s_, i_):
        return 2 * n * s_ + n + i_ % n

    bars = list(zip(B(s, i).ravel().tolist(), T(s, i).ravel().tolist()))
    strings = (_pairs(B(s, i), B(s, i + 1), "ring") + _pairs(T(s, i), T(s, i + 1), "ring")
               + _pairs(B(s, i), T(s, i + 1), "diagonal"))
    s, i = s[:-1], i[:-1]                                   # junctions between stage s and s+1
    strings += (_pairs(T(s, i), B(s + 1, i), "saddle") + _pairs(T(s, i), B(s + 1, i + 1), "saddle")
                + _pairs(B(s, i), B(s + 1, i + 1), "vertical") + _pairs(B(s, i), B(s + 1, i + 2), "vertical"))
    return X, bars, strings


def tower_geometry(stages: int, n: int = 5, joints: str = "class1", radius: float = 0.15, height: float = 0.3,
                   overlap: float | None = None):
    """(X (nodes, 3) [m], bars [(a, b)], strings [(a, b, group)]) of the tower (0-based node indices);
    see the module docstring for the layout. ``overlap`` (class 1) defaults to :func:`default_overlap`."""
    if int(stages) != stages or stages < 1:
        raise ValueError(f"a tower needs stages >= 1 (got {stages})")
    if int(n) != n or n < 3:
        raise ValueError(f"a tower of n-prisms needs n >= 3 (got {n})")
    if joints not in JOINTS:
        raise ValueError(f"joints must be one of {', '.join(JOINTS)} (got {joints!r})")
    if not (radius > 0 and height > 0):
        raise ValueError("radius and height must be > 0 [m]")
    k, n = int(stages), int(n)
    if joints == "class2":
        return _class2(k, n, radius, height)
    overlap = default_overlap(n, height) if overlap is None else float(overlap)
    if not 0.0 < overlap < height:
        raise ValueError(f"overlap must be in (0, height) = (0, {height:g}) m (got {overlap:g})")
    return _class1(k, n, radius, height, overlap)


def default_overlap(n: int, height: float) -> float:
    """Class-1 overlap [m] between consecutive stages: ``height / 6`` for n <= 9, ``height / (2n)`` above
    (the all-taut junction needs a smaller overlap for many-sided prisms; checked for n = 3..16)."""
    return height / 6.0 if n <= 9 else height / (2.0 * n)


def class1_junction_ok(n: int, radius: float = 0.15, height: float = 0.3, overlap: float | None = None) -> bool:
    """True if the 2-stage class-1 tower has a self-stress with every string at >= 1 N (prestress residual
    <= 1e-9 N): then every k-stage tower with this junction has one (sum over its congruent junctions)."""
    from tensegrity_engine.generators.document import model_document
    from tensegrity_engine.statics.equilibrium import prestress
    from tensegrity_engine.model.build import build_model
    from tensegrity_engine.model.spec import spec_from_dict
    X, bars, strings = tower_geometry(2, n, "class1", radius, height, overlap)
    doc = model_document("junction", "2-stage check", X, bars, strings, 0.1, 0.006, 2000.0)
    eq = prestress(build_model(spec_from_dict(doc, "<tower junction>")), min_tension=1.0)
    return eq.message == "" and eq.residual <= 1e-9 and eq.tensions.min() >= 1.0 - 1e-9


def tower(stages: int, n: int = 5, joints: str = "class1", radius: float = 0.15, height: float = 0.3,
          overlap: float | None = None, bar_mass: float = 0.1, bar_radius: float = 0.006, ea: float = 2000.0,
          check: bool = True) -> dict:
    """Model document of a ``stages``-stage tower of n-prisms (ring ``radius`` [m], stage ``height`` [m],
    class-1 ``overlap`` [m], bars of ``bar_mass`` [kg] and ``bar_radius`` [m], strings of axial rigidity
    ``ea`` [N]); string tensions 0 (prestress with ``equilibrium.prestress``). Counts: class 1: kn bars,
    2kn nodes, 3kn + 4(k-1)n strings; class 2: kn bars, (k+1)n nodes, (k+1)n + kn strings. With ``check``
    (class 1) the 2-stage junction's all-taut self-stress is verified first (ValueError if it has none)."""
    from tensegrity_engine.generators.document import model_document
    X, bars, strings = tower_geometry(stages, n, joints, radius, height, overlap)
    if check and joints == "class1" and stages > 1 and not class1_junction_ok(n, radius, height, overlap):
        raise ValueError(f"class-1 tower of {n}-prisms: this overlap/height/radius has no self-stress with every "
                         "string taut; try a smaller overlap")
    name = f"tower{stages}x{n}_{joints}"
    desc = (f"{stages}-stage {joints} tower of {n}-prisms (generated): "
            + ("stages share ring nodes (two bars per node)" if joints == "class2"
               else "overlapping stages tied by saddle and vertical strings"))
    return model_document(name, desc, X, bars, strings, bar_mass, bar_radius, ea)
