"""numba's on-disk kernel cache, keyed on every kernel source at once.

numba checks a cached function against its *own* source file only, but a compiled kernel contains the
kernels it calls from other modules: after an update of ``kernels.py`` alone, a cached ``integrate_rk4``
(``kernels_rk4.py``) would go on running the old force law. So every engine module that caches kernels
imports this module first; it hashes the sources of all modules that use numba and, when the hash differs
from the stamp left in the cache directory, removes the engine's cache entries there (they are compiled
again on first use, or ahead by ``tensegrity compile``) and writes the new stamp. Costs about a
millisecond per process.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
STAMP = "tensegrity_kernels.sha256"
CACHE_SUFFIXES = (".nbi", ".nbc")
_IMPORTS_NUMBA = re.compile(rb"^[ \t]*(?:from|import)[ \t]+numba\b", re.M)     # a statement, not a mention


def kernel_sources(package_dir: Path = PACKAGE_DIR) -> list:
    """The package's modules, in every subpackage, that use numba (their compiled code can end up inside any
    cached kernel)."""
    out = []
    for path in sorted(package_dir.rglob("*.py")):
        if _IMPORTS_NUMBA.search(path.read_bytes()):
            out.append(path)
    return out


def sources_hash(paths, package_dir: Path = PACKAGE_DIR) -> str:
    h = hashlib.sha256()
    for path in paths:
        name = path.relative_to(package_dir).as_posix() if path.is_relative_to(package_dir) else path.name
        h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def cache_places(sources, package_dir: Path = PACKAGE_DIR) -> list:
    """[(stamp file, directories holding this package's cache entries: a list, or a function giving it)]:
    the ``__pycache__`` beside each of ``sources`` (the stamp in the package's own), and with
    ``NUMBA_CACHE_DIR`` set, the directories under it named after this package (numba names them after the package's path; the stamp sits at its root, one per
    package path; the tree is only walked when the stamp is stale)."""
    pycaches = sorted({path.parent / "__pycache__" for path in sources})
    places = [(package_dir / "__pycache__" / STAMP, pycaches)]
    root = os.environ.get("NUMBA_CACHE_DIR")
    if root:
        tag = hashlib.sha256(str(package_dir).encode()).hexdigest()[:12]

        def dirs():
            return [Path(d) for d, _, files in os.walk(root)
                    if package_dir.name in d and any(f.endswith(CACHE_SUFFIXES) for f in files)]
        places.append((Path(root) / f"{package_dir.name}-{tag}.{STAMP}", dirs))
    return places


def drop_stale(sources, places) -> int:
    """For each (stamp, directories) of ``places`` whose stamp is not the hash of ``sources``: remove the
    cache entries of those modules from the directories, then write the stamp. Returns the files removed."""
    digest = sources_hash(sources)
    modules = tuple(p.stem + "." for p in sources)
    removed = 0
    for stamp, dirs in places:
        try:
            if stamp.read_text().strip() == digest:
                continue
        except OSError:
            pass
        for d in (dirs() if callable(dirs) else dirs):
            removed += _remove_entries(d, modules)
        try:
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.write_text(digest + "\n")
        except OSError:           # a read-only install: numba then falls back to its user-wide cache
            pass
    return removed


def _remove_entries(directory: Path, modules) -> int:
    removed = 0
    if directory.is_dir():
        for f in directory.iterdir():
            if f.name.startswith(modules) and f.suffix in CACHE_SUFFIXES:
                try:
                    f.unlink()
                    removed += 1
                except OSError:
                    pass
    return removed


_SOURCES = kernel_sources()
drop_stale(_SOURCES, cache_places(_SOURCES))
