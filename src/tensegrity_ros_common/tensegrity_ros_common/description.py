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

from tensegrity_engine import ModelError, build_model, spec_from_dict
from tensegrity_engine.model.checks import MAX_FILE_BYTES, show, valid_name
from tensegrity_engine.model.write import spec_to_dict

FORMAT = "tensegrity_ros/model_description"
VERSION = 1


class DescriptionError(ModelError):
    """The model description message cannot be used (not JSON, wrong format, invalid model).

    A :class:`~tensegrity_engine.errors.ModelError` (so a ValueError): the message comes from the
    unauthenticated ``model_description`` topic and every problem with it is reported this way.
    """

    def __init__(self, problem: str, fix: str = "publish the description made by "
                 "tensegrity_ros_common.description.describe (the simulator does)",
                 source: str = "model_description", element: str = "message"):
        super().__init__(source, element, problem, fix)


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
    """Decode and check a description; raises DescriptionError naming what is wrong.

    Texts longer than the model-file limit (``tensegrity_engine.model.checks.MAX_FILE_BYTES``) are refused unread.
    """
    if not isinstance(text, (str, bytes, bytearray)):
        raise DescriptionError(f"model description is not JSON text (got {type(text).__name__})")
    if len(text) > MAX_FILE_BYTES:
        raise DescriptionError(f"model description is {len(text):,} characters long, more than the supported "
                               f"{MAX_FILE_BYTES:,}")
    try:
        data = json.loads(text)
    except RecursionError:
        raise DescriptionError("model description is not JSON the node accepts (nested too deeply)") from None
    except (TypeError, ValueError) as exc:
        raise DescriptionError(f"model description is not JSON ({show(str(exc))})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise DescriptionError(f"model description must be a JSON object with format '{FORMAT}'")
    if data.get("version") != VERSION or isinstance(data.get("version"), bool):
        raise DescriptionError(f"model description version {show(data.get('version'))} is not supported "
                               f"(this node reads version {VERSION}); update the nodes together")
    if not isinstance(data.get("model"), dict):
        raise DescriptionError("model description has no 'model' dictionary")
    return data


def model_from_description(text: str):
    """Rebuild the engine model from a description. Raises DescriptionError (a ModelError), nothing else."""
    data = parse(text)
    name = data.get("name")
    source = f"model_description '{name if valid_name(name) else '?'}'"
    try:
        return build_model(spec_from_dict(data["model"], source=source))
    except Exception as exc:  # ModelError; anything else is a bug in the engine's checks (reported the same way)
        why = exc.problem if isinstance(exc, ModelError) else f"internal error ({type(exc).__name__}: {exc})"
        raise DescriptionError(f"model description does not hold a valid model: {why}",
                               getattr(exc, "fix", "please report this message"), source=source,
                               element=getattr(exc, "element", "model")) from None
