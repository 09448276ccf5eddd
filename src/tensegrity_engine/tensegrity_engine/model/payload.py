"""Payloads hung from a node by a cable: a point mass on a string (docs/model_schema.md, "Payloads").

A payload is written in a model file as a plain node with a ``mass`` and one two-node string to the node it
hangs from (``rest_length`` = the cable length, ``stiffness`` and ``damping``): the engine's strings are
tension-only, so this is a cable, and the node's position is the payload's marker. :func:`with_payload`
adds one to a model (hanging at rest along gravity); :func:`split_payload` takes it off again, for a
simulation that replaces the swinging mass by its measured force on the robot
(:func:`tensegrity_engine.dynamics.loads.payload_loads`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from tensegrity_engine.errors import ModelError
from tensegrity_engine.model.spec import NodeSpec, StringSpec

CABLE_STIFFNESS = 2.0e4      # N/m, a 1 m steel wire rope of 1 mm or a short stiff cord: default of with_payload
CABLE_DAMPING = 5.0          # N s/m, damps the cable's own (bouncing) mode within a few periods


@dataclass(frozen=True)
class Payload:
    """A hung payload of a model: its node, the node it hangs from, its mass [kg] and its cable."""
    node: str                 # the payload (its marker)
    hang: str                 # the robot node the cable hangs from
    mass: float               # kg
    cable: str                # the string's name
    cable_length: float       # m, the cable's rest length


def with_payload(model, node: str, mass: float, cable_length: float, name: str = "payload",
                 stiffness: float = CABLE_STIFFNESS, damping: float = CABLE_DAMPING, offset=(0.0, 0.0, 0.0)):
    """``model`` with a payload of ``mass`` [kg] hung from ``node`` by a cable of rest length ``cable_length``
    [m]: the node ``name`` at rest below ``node`` along gravity (cable stretched by m g / k), moved by
    ``offset`` [m] (a displaced start), and the string ``<name>_cable``. Raises ModelError naming the fix."""
    from tensegrity_engine.model.build import build_model
    spec, src = model.spec, model.source
    el = f"payload '{name}'"
    if node not in model.node_names[:model.n_physical]:
        raise ModelError(src, el, f"hangs from unknown node {node!r}", "name one of the model's nodes")
    if not (math.isfinite(mass) and mass > 0):
        raise ModelError(src, el, f"mass must be a positive number [kg], got {mass}", "give the payload's mass")
    if not (math.isfinite(cable_length) and cable_length > 0):
        raise ModelError(src, el, f"cable_length must be a positive length [m], got {cable_length}",
                         "give the cable's length from the hook to the payload's centre")
    g = np.asarray(spec.gravity, float)
    if np.linalg.norm(g) == 0:
        raise ModelError(src, el, "the model has no gravity, so a payload does not hang",
                         "give 'gravity' in the model file, or apply the load as a force table")
    down = g / np.linalg.norm(g)
    hang = np.asarray(model.positions[model.node_index(node)], float)
    at = hang + down * (cable_length + mass * np.linalg.norm(g) / stiffness) + np.asarray(offset, float)
    nodes = spec.nodes + (NodeSpec(name, tuple(float(v) for v in at), False, float(mass)),)
    cable = StringSpec(f"{name}_cable", (node, name), None, float(stiffness), float(damping), float(cable_length),
                       None, 0.001)
    return build_model(replace(spec, nodes=nodes, strings=spec.strings + (cable,)))


def find_payload(model, node: str) -> Payload:
    """The payload at ``node``: a free node with a point mass, on no bar and on exactly one two-node string
    (its cable); ModelError naming the file, the node and the fix otherwise."""
    src, el = model.source, f"payload node '{node}'"
    if node not in model.node_names[:model.n_physical]:
        raise ModelError(src, el, "is not a node of the model",
                         f"name the payload's node (one of {', '.join(model.node_names[:model.n_physical][-4:])} ...)")
    i = model.node_index(node)
    spec_node = model.spec.nodes[i]
    if spec_node.mass <= 0 or spec_node.fixed:
        raise ModelError(src, el, "has no point mass or is fixed", "give the payload node its 'mass' [kg] and "
                         "leave it free (docs/model_schema.md, Payloads)")
    if any(node in b.nodes for b in model.spec.bars):
        raise ModelError(src, el, "is the end of a bar", "a payload hangs by a string only: its node is on no bar")
    cables = [s for s in model.spec.strings if node in s.path]
    if len(cables) != 1 or len(cables[0].path) != 2:
        raise ModelError(src, el, f"is on {len(cables)} string(s); a payload hangs by exactly one two-node string",
                         "hang it by one string from one robot node (docs/model_schema.md, Payloads)")
    c = cables[0]
    hang = c.path[0] if c.path[1] == node else c.path[1]
    rest = float(model.rest_length[model.string_names.index(c.name)])
    return Payload(node, hang, float(spec_node.mass), c.name, rest)


def split_payload(model, node: str) -> tuple:
    """(the model without the payload at ``node`` and its cable, the :class:`Payload`)."""
    from tensegrity_engine.model.build import build_model
    p = find_payload(model, node)
    spec = model.spec
    strings = tuple(replace(s, rest_length=float(r), tension=None)
                    for s, r in zip(spec.strings, model.rest_length) if s.name != p.cable)
    nodes = tuple(n for n in spec.nodes if n.name != node)
    return build_model(replace(spec, nodes=nodes, strings=strings)), p
