"""Loading a model by the name of a built-in model or by the path of a model file."""
from __future__ import annotations

from pathlib import Path

from tensegrity_engine.errors import ModelError
from tensegrity_engine.model.build import build_model
from tensegrity_engine.model.model import Model
from tensegrity_engine.model.spec import load_spec

BUILTIN_DIR = Path(__file__).resolve().parents[1] / "models"


def builtin_models() -> list[str]:
    """Names of the models shipped with the engine."""
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.yaml"))


def resolve_model_path(name_or_path) -> Path:
    """A built-in model name (e.g. ``prism3``) or a path to a YAML file."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        return p
    cand = BUILTIN_DIR / f"{name_or_path}.yaml"
    if cand.exists():
        return cand
    raise ModelError(str(name_or_path), "model", "is neither a model file nor a built-in model",
                     f"use a path to a .yaml file or one of: {', '.join(builtin_models())}")


def load_model(name_or_path) -> Model:
    """Load, validate and build a model from a built-in name or a YAML file path."""
    return build_model(load_spec(resolve_model_path(name_or_path)))


def with_obstacles(model: Model, *obstacles) -> Model:
    """The model rebuilt with ``obstacles`` (ObstacleSpec, :mod:`~tensegrity_engine.model.world`) added to its own;
    an obstacle whose name the model already uses is an error."""
    from dataclasses import replace
    return build_model(replace(model.spec, obstacles=tuple(model.spec.obstacles) + tuple(obstacles)))


def with_ground(model: Model, height: float = 0.0, **contact) -> Model:
    """The model standing on a horizontal ground plane at z = ``height`` [m] (named ``ground``; contact
    parameters as keywords: friction, restitution, contact_time). Unchanged if it already has obstacles."""
    from tensegrity_engine.model.world import plane
    if model.obstacles:
        return model
    return with_obstacles(model, plane("ground", height, **contact))
