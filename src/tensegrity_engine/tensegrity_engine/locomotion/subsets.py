"""Actuator subsets of robots whose strings form closed triangles (the six-bar's 24 strings are the edges of
eight closed triangles, every node on two of them)."""
from __future__ import annotations

import itertools


def closed_triangles(model) -> list:
    """Node triples (sorted indices) joined pairwise by strings of one segment each."""
    linked = {frozenset(map(int, s)) for s in model.segments}
    near = {}
    for a, b in (tuple(p) for p in linked):
        near.setdefault(a, set()).add(b)
        near.setdefault(b, set()).add(a)
    return sorted({tuple(sorted((a, b, c))) for a in near for b, c in itertools.combinations(sorted(near[a]), 2)
                   if frozenset((b, c)) in linked})


def disjoint_triangle_actuators(model) -> list:
    """Names of the actuators on the strings of the largest set of closed triangles sharing no node (for the
    six-bar: four triangles, 12 strings, two actuated strings at every node); [] if there are none."""
    tris = closed_triangles(model)
    best = []
    for k in range(len(tris), 0, -1):
        best = next((c for c in itertools.combinations(tris, k)
                     if len({i for t in c for i in t}) == 3 * k), [])
        if best:
            break
    pairs = {frozenset(p) for t in best for p in itertools.combinations(t, 2)}
    strings = {int(c) for s, c in zip(model.segments, model.segment_string) if frozenset(map(int, s)) in pairs}
    return [a for a, c in zip(model.actuator_names, model.actuator_string) if int(c) in strings]
