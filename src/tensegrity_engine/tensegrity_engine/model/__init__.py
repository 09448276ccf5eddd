"""The model: reading, validating, building and writing tensegrity model files.

A model file (YAML, ``docs/model_schema.md``) is parsed safely (:mod:`.yaml_text`), checked and turned
into a :class:`~.spec.ModelSpec` (:mod:`.spec`, limits in :mod:`.checks`), then built once into the
immutable :class:`~.model.Model` (:mod:`.build`; :mod:`.load` finds a model by built-in name or path);
:mod:`.write` writes a model back to YAML.
"""
from tensegrity_engine.model.model import Model
from tensegrity_engine.model.build import build_model
from tensegrity_engine.model.load import builtin_models, load_model, resolve_model_path
from tensegrity_engine.model.spec import ModelSpec, load_spec, spec_from_dict
from tensegrity_engine.model.write import dump_model, spec_to_dict

__all__ = ["Model", "ModelSpec", "build_model", "builtin_models", "load_model", "resolve_model_path", "load_spec",
           "spec_from_dict", "dump_model", "spec_to_dict"]
