"""What the static and the dynamic branch of ``tensegrity identify`` share: the parameters and groups chosen
on the command line or in the cases file, and writing the identified model."""
from __future__ import annotations

from pathlib import Path

import yaml


def chosen_params_and_groups(args, opts) -> tuple:
    """(params, groups): the command line's --params/--groups, else the cases file's options."""
    params = tuple(args.params) if args.params else opts["params"]
    groups = opts["groups"] if args.groups is None else (None if args.groups == "none" else "model")
    return params, groups


def write_identified(out: Path, doc: dict) -> Path:
    """Write the identified model document as ``out``/identified.yaml."""
    path = out / "identified.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=120, allow_unicode=True))
    return path
