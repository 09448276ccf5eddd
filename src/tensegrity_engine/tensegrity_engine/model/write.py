"""Writing models back to YAML (``tensegrity-model`` version 1).

``dump_model`` writes a file that loads back into the same model: physical nodes, bars, strings with
explicit rest lengths, user constraints, actuators and frames. With ``resolved=True`` it appends an
informational ``resolved`` block (ignored when loading) listing the virtual nodes, every constraint the
engine applies (fixed nodes, coincidences, user constraints) and the element counts, so a reader sees
exactly what was simulated.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from tensegrity_engine.model.spec import PULLEY_FRICTION_COEFFICIENT, SCHEMA_NAME, SCHEMA_VERSION
from tensegrity_engine.model.supports import support_to_dict
from tensegrity_engine.model.world import obstacle_to_dict


class _Flow(list):
    """A list written in YAML flow style ([a, b, c])."""


class _FlowDict(dict):
    """A mapping written in YAML flow style ({a: 1})."""


def _flow_repr(dumper, data):
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)


def _flowdict_repr(dumper, data):
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=True)


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):
    """Safe dumper with the C emitter (libyaml) where PyYAML has it: 20× faster on 1,000-bar models."""


_Dumper.add_representer(_Flow, _flow_repr)
_Dumper.add_representer(_FlowDict, _flowdict_repr)


def _num(x: float) -> float:
    """Shortest float repr that round-trips exactly."""
    return float(repr(float(x))) if np.isfinite(x) else float(x)


def _summed(terms):
    """Constraint terms ((node, coef), ...) with repeated nodes summed and zeros dropped, by node index."""
    acc: dict = {}
    for j, c in terms:
        acc[j] = acc.get(j, 0.0) + c
    return [(j, acc[j]) for j in sorted(acc) if acc[j] != 0.0]


def _node_dict(nd, position) -> dict:
    """A NodeSpec at ``position`` (3,) [m] as the file writes it (fixed, mass and marker only when set)."""
    e = _FlowDict(name=nd.name, position=_Flow(_num(v) for v in position))
    if nd.fixed:
        e["fixed"] = True
    if nd.mass:
        e["mass"] = _num(nd.mass)
    if nd.marker is not None:
        m = nd.marker
        e["marker"] = _marker_dict(m)
    return e


def _marker_dict(m) -> dict:
    """A MarkerSpec as the file writes it (``frame`` always, so the file says which frame it means)."""
    if m.along_bar is not None:
        return _FlowDict(along_bar=_num(m.along_bar), bar=m.bar)
    e = _FlowDict(offset=_Flow(_num(v) for v in m.offset), frame=m.frame)
    if m.rides:
        e.update(bar=m.bar, toward=m.toward)
    return e


def spec_to_dict(model, positions=None, rest_lengths=None, resolved: bool = False) -> dict:
    """The model as a YAML-ready dictionary, optionally with new positions (n,3) and rest lengths."""
    spec = model.spec
    X = model.positions if positions is None else np.asarray(positions, float)
    rest = model.rest_length if rest_lengths is None else np.asarray(rest_lengths, float)
    d: dict = {"schema": SCHEMA_NAME, "version": SCHEMA_VERSION, "name": spec.name}
    if spec.description:
        d["description"] = spec.description
    if spec.notes:
        d["notes"] = spec.notes
    d["gravity"] = _Flow(_num(v) for v in spec.gravity)
    if spec.structural_damping:
        d["structural_damping"] = _num(spec.structural_damping)
    d["nodes"] = [_node_dict(nd, X[i]) for i, nd in enumerate(spec.nodes)]
    d["bars"] = [_FlowDict(name=b.name, nodes=_Flow(b.nodes), mass=_num(b.mass), radius=_num(b.radius))
                 for b in spec.bars]
    strings = []
    for s, r0 in zip(spec.strings, rest):
        e = _FlowDict(name=s.name, path=_Flow(s.path))
        if s.EA is not None:
            e["EA"] = _num(s.EA)
        else:
            e["stiffness"] = _num(s.stiffness)
        e["damping"] = _num(s.damping)
        if s.pulley_damping:
            e["pulley_damping"] = _num(s.pulley_damping)
        if s.pulley_friction_coefficient != PULLEY_FRICTION_COEFFICIENT:
            e["pulley_friction_coefficient"] = _num(s.pulley_friction_coefficient)
        e["rest_length"] = _num(r0)
        e["radius"] = _num(s.radius)
        if s.group:
            e["group"] = s.group
        strings.append(e)
    d["strings"] = strings
    if spec.constraints:
        d["constraints"] = [_FlowDict(name=c.name, terms=_FlowDict((n, _num(v)) for n, v in c.terms),
                                      value=_Flow(_num(v) for v in c.value)) for c in spec.constraints]
    if spec.actuators:
        acts = []
        for a in spec.actuators:
            e = _FlowDict(name=a.name, string=a.string, spool_radius=_num(a.spool_radius), sign=_num(a.sign),
                          zero=_num(a.zero), angle_limits=_Flow(_num(v) for v in a.angle_limits))
            if a.motor:
                e["motor"] = a.motor
            if a.delay:
                e["delay"] = _num(a.delay)
            acts.append(e)
        d["actuators"] = acts
    if spec.frames:
        d["frames"] = [_FlowDict(name=f.name, nodes=_Flow(f.nodes), x_node=f.x_node) for f in spec.frames]
    if spec.obstacles:
        d["obstacles"] = [_FlowDict((k, _Flow(v) if isinstance(v, list) else v)
                                    for k, v in obstacle_to_dict(o, _num).items()) for o in spec.obstacles]
    if spec.supports:
        d["supports"] = [_FlowDict((k, _Flow(v) if isinstance(v, list) else v)
                                   for k, v in support_to_dict(su, _num).items()) for su in spec.supports]
    if resolved:
        names = model.node_names
        d["resolved"] = {
            "note": "written by the engine for reference; ignored when the file is loaded",
            "counts": _FlowDict(model.counts),
            "virtual_nodes": [_FlowDict(name=names[i], coincides_with=names[model.virtual_of[i]],
                                        position=_Flow(_num(v) for v in X[i]))
                              for i in range(model.n_physical, model.n_nodes)],
            "bar_nodes": [_FlowDict(bar=b, nodes=_Flow([names[j], names[k]]))
                          for b, (j, k) in zip(model.bar_names, model.bars)],
            "constraints": [_FlowDict(name=nm, terms=_FlowDict((names[j], _num(c)) for j, c in
                                                               _summed(model.constraint_terms[k])),
                                      value=_Flow(_num(v) for v in model.constraint_value[k]))
                            for k, nm in enumerate(model.constraint_names)],
        }
    return d


def dump_model(model, path, positions=None, rest_lengths=None, resolved: bool = True, header: str = "") -> Path:
    """Write the model to ``path`` (YAML). Returns the path."""
    path = Path(path)
    text = yaml.dump(spec_to_dict(model, positions, rest_lengths, resolved), Dumper=_Dumper, sort_keys=False,
                     width=120, allow_unicode=True)
    if header:
        text = "".join(f"# {line}\n" for line in header.splitlines()) + text
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
