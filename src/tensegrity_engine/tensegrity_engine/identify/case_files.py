"""Reading the YAML cases files of identification (``--static`` and ``--dynamic``): size and shape checks,
and unknown keys named with the nearest known one."""
from __future__ import annotations

import difflib
from pathlib import Path

from tensegrity_engine.errors import InputError


def check_keys(keys, allowed, where: str):
    """InputError for the first of ``keys`` not in ``allowed`` (with the nearest allowed key, if any)."""
    for k in keys:
        if k not in allowed:
            close = difflib.get_close_matches(str(k), allowed, n=1)
            raise InputError(f"{where}: unknown key {k!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                             + f"; the keys are {', '.join(allowed)}")


def read_cases_yaml(path, key: str, entry: str, max_bytes: int, label: str = "") -> dict:
    """The mapping of a cases YAML file whose ``key`` is a non-empty list of ``entry`` mappings; InputError
    (a ValueError) for a missing, oversized or unreadable file. ``label`` prefixes messages (e.g. '--static')."""
    import yaml
    where = f"{label} {path}".strip()
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{where}: cases file not found")
    if path.stat().st_size > max_bytes:
        raise InputError(f"{where}: larger than {max_bytes / 2 ** 20:g} MB; refer to capture files instead of "
                         "holding the data inline")
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InputError(f"{where}: not readable YAML ({type(exc).__name__}: {str(exc).splitlines()[0]})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get(key), list) or not doc[key]:
        raise InputError(f"{where}: expected a mapping with a non-empty '{key}' list (- {entry})")
    return doc
