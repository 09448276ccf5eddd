"""Model documents (YAML-ready dicts of the model schema) for generated templates, and their check:
:func:`verify_template` prestresses a document and checks residual, tensions and stability."""
from __future__ import annotations

import numpy as np


def model_document(name, description, nodes, bars, strings, bar_mass, bar_radius, ea, gravity=(0.0, 0.0, 0.0)):
    """A model document: nodes n1.., bars b1.. (mass [kg], radius [m]), strings s1.. (EA [N], no prestress)."""
    return {
        "schema": "tensegrity-model", "version": 1, "name": name, "description": description,
        "gravity": list(gravity),
        "nodes": [{"name": f"n{i + 1}", "position": [float(v) for v in p]} for i, p in enumerate(nodes)],
        "bars": [{"name": f"b{k + 1}", "nodes": [f"n{a + 1}", f"n{b + 1}"], "mass": bar_mass, "radius": bar_radius}
                 for k, (a, b) in enumerate(bars)],
        "strings": [{"name": f"s{k + 1}", "path": [f"n{a + 1}", f"n{b + 1}"], "EA": ea, "tension": 0.0,
                     "group": g} for k, (a, b, g) in enumerate(strings)],
    }


def _scaled_self_stress(model, tensions, min_tension):
    """(tensions [N] scaled to ``min_tension``, residual [N]) of a generator's own self-stress, checked with
    the engine's equilibrium matrix (bar forces by least squares)."""
    from tensegrity_engine.statics.balance import equilibrium_matrix
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
    ValueError if the residual exceeds ``tol`` [N] or a string is below ``min_tension``. A robot on the ground
    (``obstacles``, no fixed node) is prestressed and checked in zero gravity: its weight rests on the
    ground, not on a self-stress; the returned model keeps the document's gravity and obstacles."""
    from dataclasses import replace
    from tensegrity_engine.statics.equilibrium import prestress, stability, with_rest_lengths
    from tensegrity_engine.model.build import build_model
    from tensegrity_engine.model.spec import spec_from_dict
    loaded = build_model(spec_from_dict(doc, f"<{doc.get('name', 'template')}>"))
    free = loaded.spec.obstacles and not any(nd.fixed for nd in loaded.spec.nodes)
    model = build_model(replace(loaded.spec, gravity=(0.0, 0.0, 0.0))) if free else loaded
    eq = prestress(model, min_tension=min_tension)
    t, residual, method = eq.tensions, eq.residual, "prestress"
    own = [s.get("tension", 0.0) for s in doc["strings"]]
    if (eq.message or residual > tol) and min(own) > 0:
        t, residual = _scaled_self_stress(model, own, min_tension)
        method = "generator self-stress"
    if residual > tol or t.min() < min_tension * (1 - 1e-9):
        raise ValueError(f"template '{doc['name']}' is not an all-taut equilibrium to {tol:g} N (residual "
                         f"{residual:.3g} N, smallest tension {t.min():.4g} N)")
    rest = model.rest_length_for_tension(t, model.string_lengths(model.positions))
    st = stability(with_rest_lengths(model, rest), model.positions)
    model = with_rest_lengths(loaded, rest)
    return model, {"tensions": t, "residual": residual, "stable": bool(st["stable"]), "method": method,
                   "rigid_body_modes": st["rigid_body_modes"]}
