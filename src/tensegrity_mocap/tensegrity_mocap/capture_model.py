"""A model of your own tensegrity robot from a static motion-capture take (no ROS).

A lab measures its robot standing still (a Motive CSV export, or a few frames of marker positions),
lists which marker pairs are bars (and, optionally, which are strings), and gets a model file in the
engine's schema (``docs/model_schema.md``) in the **robot's own frame**, the marker map for the bridge
and, with strings, a prestress / equilibrium check of the captured shape. Workflow and file formats:
``docs/bring_your_own_robot.md``.

Robot frame (all lengths in metres):

* z up (the capture's up axis; Motive exports are Y-up and are turned with
  :func:`~tensegrity_mocap.axes.y_up_to_z_up`, ``(x, y, z) -> (x, -z, y)``);
* origin at the horizontal centroid (mean x, y) of the nodes, with z = 0 at the lowest node (the floor
  the robot stands on);
* x axis: the horizontal direction from the centroid toward node ``n1`` (``heading="first-node"``), or the
  capture's own x axis (``heading="capture"``: then capture and robot frame differ by a translation only);
  y = z × x.

:attr:`CaptureModel.transform` is the 4×4 homogeneous transform from the capture's z-up frame to the
robot frame (``p_robot = T[:3, :3] @ p_capture + T[:3, 3]``); its inverse takes the model back into the
capture.

Node names: bar ``k`` (1-based, in the order given) is ``b<k>`` between nodes ``n<2k-1>`` (its first
marker) and ``n<2k>`` (its second); strings are ``s1, s2, ...`` in the order given.
"""
from __future__ import annotations

import math

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


def _number(name, value, lo=-math.inf, hi=math.inf, lo_open=False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise CaptureModelError("model parameters", f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v < lo or v > hi or (lo_open and v == lo):
        raise CaptureModelError("model parameters", f"{name} = {value!r} is outside "
                                f"{'(' if lo_open else '['}{lo:g}, {hi:g}]")
    return v


def _pairs(name, pairs, n) -> list:
    out = []
    for k, p in enumerate(pairs or ()):
        try:
            i, j = (int(x) for x in p)
        except (TypeError, ValueError):
            raise CaptureModelError("model parameters", f"{name} {k + 1}: {p!r} is not a pair of node indices") from None
        if not (0 <= i < n and 0 <= j < n) or i == j:
            raise CaptureModelError("model parameters", f"{name} {k + 1}: ({i}, {j}) must be two different node "
                                    f"indices in 0..{n - 1}")
        out.append((i, j))
    return out


def model_document(node_names, positions, bars, strings=None, name: str = "robot", bar_mass: float = 0.1,
                   bar_radius: float = 0.005, string_stiffness: float = 500.0, string_radius: float = 0.001,
                   string_damping: float = DEFAULT_STRING_DAMPING, prestrain: float = 0.02,
                   gravity=(0.0, 0.0, -9.81), description: str = "", notes: str = "") -> dict:
    """A model dictionary in the engine's schema (``tensegrity-model`` version 1), checked by the engine.

    ``positions`` (n, 3) [m] in a z-up frame; ``node_names`` n names (``None``: ``n1, n2, ...``);
    ``bars`` and ``strings`` are 0-based node index pairs, named ``b1, ...`` and ``s1, ...``. Every bar has
    ``bar_mass`` [kg] and ``bar_radius`` [m]; every string is a spring of ``string_stiffness`` [N/m],
    ``string_damping`` [N·s/m] and ``string_radius`` [m] with rest length ``length·(1 − prestrain)`` [m]
    (so the captured shape has every string taut). ``gravity`` [m/s²]. Raises :class:`CaptureModelError`
    for bad arguments and the engine's ``ModelError`` (both ValueError) if the engine rejects the model.
    """
    X = np.asarray(positions, float)
    if X.ndim != 2 or X.shape[1] != 3 or not len(X) or not np.all(np.isfinite(X)):
        raise CaptureModelError("model parameters", f"positions must be a finite (n, 3) array, got shape {X.shape}")
    names = [f"n{i + 1}" for i in range(len(X))] if node_names is None else [str(s) for s in node_names]
    if len(names) != len(X):
        raise CaptureModelError("model parameters", f"{len(names)} node names for {len(X)} positions")
    bar_ij = _pairs("bar", bars, len(X))
    string_ij = _pairs("string", strings, len(X))
    bar_mass = _number("bar_mass [kg]", bar_mass, 0.0, lo_open=True)
    bar_radius = _number("bar_radius [m]", bar_radius, 0.0)
    prestrain = _number("prestrain", prestrain, 0.0, 0.99)
    g = [float(v) for v in gravity]
    if len(g) != 3:
        raise CaptureModelError("model parameters", f"gravity must have 3 components, got {gravity!r}")
    doc = {"schema": "tensegrity-model", "version": 1, "name": str(name)}
    if description:
        doc["description"] = str(description)
    if notes:
        doc["notes"] = str(notes)
    doc["gravity"] = g
    doc["nodes"] = [{"name": nm, "position": [float(v) for v in X[i]]} for i, nm in enumerate(names)]
    doc["bars"] = [{"name": f"b{k + 1}", "nodes": [names[i], names[j]], "mass": bar_mass, "radius": bar_radius,
                    "length": float(np.linalg.norm(X[i] - X[j]))} for k, (i, j) in enumerate(bar_ij)]
    if string_ij:
        k_s = _number("string_stiffness [N/m]", string_stiffness, 0.0, lo_open=True)
        zeta = _number("string_damping [N·s/m]", string_damping, 0.0)
        r_s = _number("string_radius [m]", string_radius, 0.0)
        doc["strings"] = [{"name": f"s{k + 1}", "path": [names[i], names[j]], "stiffness": k_s, "damping": zeta,
                           "rest_length": float(np.linalg.norm(X[i] - X[j]) * (1.0 - prestrain)), "radius": r_s}
                          for k, (i, j) in enumerate(string_ij)]
    build_document(doc, source=f"<model '{name}'>")
    return doc


def build_document(document: dict, source: str = "<model>"):
    """Validate and build a model dictionary with the engine (raises its ``ModelError``); returns the Model."""
    return build_model(spec_from_dict(document, source))
