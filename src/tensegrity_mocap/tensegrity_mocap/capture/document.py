"""A model document in the engine's schema from node positions and bar / string pairs, checked by the engine
(no ROS), and the error every step of making a model from a capture raises. Used by
:mod:`tensegrity_mocap.capture.model` (a model from a take) and :mod:`tensegrity_mocap.capture.equilibrium`
(the prestress check)."""
from __future__ import annotations

import numpy as np

from tensegrity_engine import build_model, spec_from_dict

__all__ = ["CaptureModelError", "model_document", "build_document", "DEFAULT_STRING_DAMPING"]

#: string damping [N·s/m] of the generated models: about a fifth of critical for a 500 N/m string
#: between two 0.05 kg bar ends (2·sqrt(k·m) = 10 N·s/m)
DEFAULT_STRING_DAMPING = 2.0


class CaptureModelError(ValueError):
    """A take, bar list or parameter cannot make a model; the message names the source, the element and a fix."""

    def __init__(self, source, problem: str, fix: str = ""):
        self.source = str(source)
        self.problem = problem
        self.fix = fix
        super().__init__(f"{self.source}: {problem}" + (f". Fix: {fix}" if fix else ""))


def _pairs(name, pairs, n) -> list:
    out = []
    for k, p in enumerate(pairs or ()):
        try:
            i, j = (int(x) for x in p)
        except (TypeError, ValueError):
            raise CaptureModelError("model parameters", f"{name} {k + 1}: {p!r} is not a pair of node "
                                    "indices") from None
        if not (0 <= i < n and 0 <= j < n) or i == j:
            raise CaptureModelError("model parameters", f"{name} {k + 1}: ({i}, {j}) must be two different node "
                                    f"indices in 0..{n - 1}")
        out.append((i, j))
    return out


def model_document(node_names, positions, bars, strings=None, name: str = "robot", bar_mass: float = 0.1,
                   bar_radius: float = 0.005, string_stiffness: float = 500.0, string_radius: float = 0.001,
                   string_damping: float = DEFAULT_STRING_DAMPING, prestrain: float = 0.02,
                   gravity=(0.0, 0.0, -9.81), description: str = "", notes: str = "", markers=None) -> dict:
    """A model dictionary in the engine's schema (``tensegrity-model`` version 1), checked by the engine.

    ``positions`` (n, 3) [m] in a z-up frame; ``node_names`` n names (``None``: ``n1, n2, ...``);
    ``bars`` and ``strings`` are 0-based node index pairs, named ``b1, ...`` and ``s1, ...``. Every bar has
    ``bar_mass`` [kg] and ``bar_radius`` [m]; every string is a spring of ``string_stiffness`` [N/m],
    ``string_damping`` [N·s/m] and ``string_radius`` [m] with rest length ``length·(1 − prestrain)`` [m]
    (so the captured shape has every string taut). ``gravity`` [m/s²]. ``markers`` {node index: distance
    [m]}: that node's marker sits so far in from it along its bar (``marker: {along_bar: ...}``). Raises :class:`CaptureModelError`
    for bad shapes or pairs and the engine's ``ModelError`` (both ValueError) for values it rejects.
    """
    X = np.asarray(positions, float)
    if X.ndim != 2 or X.shape[1] != 3 or not len(X) or not np.all(np.isfinite(X)):
        raise CaptureModelError("model parameters", f"positions must be a finite (n, 3) array, got shape {X.shape}")
    names = [f"n{i + 1}" for i in range(len(X))] if node_names is None else [str(s) for s in node_names]
    if len(names) != len(X):
        raise CaptureModelError("model parameters", f"{len(names)} node names for {len(X)} positions")
    bar_ij = _pairs("bar", bars, len(X))
    string_ij = _pairs("string", strings, len(X))
    if not 0.0 <= float(prestrain) < 1.0:
        raise CaptureModelError("model parameters", f"prestrain must be in [0, 1), got {prestrain!r}")
    g = [float(v) for v in gravity]
    if len(g) != 3:
        raise CaptureModelError("model parameters", f"gravity must have 3 components, got {gravity!r}")
    doc = {"schema": "tensegrity-model", "version": 1, "name": str(name)}
    doc.update({k: str(v) for k, v in (("description", description), ("notes", notes)) if v})
    doc["gravity"] = g
    doc["nodes"] = [{"name": nm, "position": [float(v) for v in X[i]]} for i, nm in enumerate(names)]
    for i, d in (markers or {}).items():
        doc["nodes"][int(i)]["marker"] = {"along_bar": float(d)}
    doc["bars"] = [{"name": f"b{k + 1}", "nodes": [names[i], names[j]], "mass": float(bar_mass),
                    "radius": float(bar_radius), "length": float(np.linalg.norm(X[i] - X[j]))}
                   for k, (i, j) in enumerate(bar_ij)]
    if string_ij:
        doc["strings"] = [{"name": f"s{k + 1}", "path": [names[i], names[j]], "stiffness": float(string_stiffness),
                           "damping": float(string_damping), "radius": float(string_radius),
                           "rest_length": float(np.linalg.norm(X[i] - X[j]) * (1.0 - float(prestrain)))}
                          for k, (i, j) in enumerate(string_ij)]
    build_document(doc, source=f"<model '{name}'>")
    return doc


def build_document(document: dict, source: str = "<model>"):
    """Validate and build a model dictionary with the engine (raises its ``ModelError``); returns the Model."""
    return build_model(spec_from_dict(document, source))
