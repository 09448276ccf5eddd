"""Checking output paths before long work, so a bad path fails at once and not after the run (used by
the engine's CLI, tensegrity-bringup and tensegrity-compare)."""
from __future__ import annotations

import os
from pathlib import Path


def output_path_problem(path, kind: str = "directory") -> str:
    """Why ``path`` cannot be written as an output ``"directory"`` or ``"file"``, or '' if it can.

    Missing folders are created (the directory itself, or the file's folder); a new file is probed by
    creating and removing it (some file systems refuse new files in writable-looking folders)."""
    path = Path(path)
    if kind == "file" and path.is_dir():
        return "is a directory; give a file name"
    if kind == "directory" and path.exists() and not path.is_dir():
        return "exists and is not a directory"
    folder = path.parent if kind == "file" else path
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot create the directory {folder} ({exc.strerror or exc})"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the directory {folder} is not writable"
    if kind == "file":
        existed = path.exists()
        try:
            with open(path, "ab"):
                pass
        except OSError as exc:
            return f"cannot be written: {exc.strerror or exc}"
        if not existed:
            path.unlink(missing_ok=True)
    return ""
