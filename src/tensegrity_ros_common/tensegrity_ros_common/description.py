"""The model description published once (latched) on ``model_description`` as JSON in std_msgs/String.

It carries the full model (the engine's YAML schema as a dictionary, so any node can rebuild the same
:class:`tensegrity_engine.Model`) plus the names other nodes need without the engine: physical node names
in the order of ``node_positions``, bar, string, segment, actuator and frame names::

    {"format": "tensegrity_ros/model_description", "version": 1, "name": ..., "node_names": [...],
     "bar_names": [...], "string_names": [...], "segment_names": [...], "actuator_names": [...],
     "joint_names": [...], "frame_names": [...], "model": {<model file as a dictionary>}}
"""
from __future__ import annotations

import json

from tensegrity_engine import build_model, spec_from_dict
from tensegrity_engine.model_io import spec_to_dict

FORMAT = "tensegrity_ros/model_description"
VERSION = 1


class DescriptionError(ValueError):
    """The model description message cannot be used (not JSON, wrong format, invalid model)."""


def describe(model, positions=None) -> str:
    """JSON text describing ``model`` (optionally with other node positions (n,3) [m] as its configuration)."""
    data = {
        "format": FORMAT, "version": VERSION, "name": model.name,
        "node_names": list(model.node_names[:model.n_physical]),
        "bar_names": list(model.bar_names), "string_names": list(model.string_names),
        "segment_names": list(model.segment_names), "actuator_names": list(model.actuator_names),
        "joint_names": list(model.actuator_names), "frame_names": list(model.frame_names),
        "model": spec_to_dict(model, positions=positions),
    }
    return json.dumps(data, separators=(",", ":"))


def parse(text: str) -> dict:
    """Decode and check a description; raises DescriptionError naming what is wrong."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise DescriptionError(f"model description is not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise DescriptionError(f"model description must be a JSON object with format '{FORMAT}'")
    if data.get("version") != VERSION:
        raise DescriptionError(f"model description version {data.get('version')!r} is not supported "
                               f"(this node reads version {VERSION}); update the nodes together")
    if not isinstance(data.get("model"), dict):
        raise DescriptionError("model description has no 'model' dictionary")
    return data


def model_from_description(text: str):
    """Rebuild the engine model from a description (raises DescriptionError)."""
    data = parse(text)
    try:
        return build_model(spec_from_dict(data["model"], source=f"model_description '{data.get('name', '?')}'"))
    except Exception as exc:  # ModelError and anything a hostile message could trigger
        raise DescriptionError(f"model description does not hold a valid model: {exc}") from None
