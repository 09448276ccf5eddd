"""Private ROS domain ids on one host, claimed with file locks, for tests and the pip-only bringup.

Several test processes (pytest-xdist workers, two checkouts' test runs, a bringup) on one machine must never
share a domain, or one's simulator answers the other's monitor. :func:`claim_domain` takes the lowest free
id in 1..100 (Fast DDS maps ids up to 232 to ports; 0 is everyone's default and stays free) by locking a
file ``<TMPDIR>/tensegrity-ros-domains/<id>.lock``; the lock is held until :func:`release_domain` or until
the process ends (the kernel drops it even on SIGKILL). A process keeps its ``keep`` most recent claims and
releases older ones, so sequential tests recycle ids without bookkeeping.
"""
from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

FIRST, LAST = 1, 100
_held: list = []          # [(domain id, open lock file)], oldest first


def _lock_dir() -> Path:
    d = Path(tempfile.gettempdir()) / "tensegrity-ros-domains"
    d.mkdir(mode=0o777, exist_ok=True)
    return d


def claim_domain(keep: int = 4) -> int:
    """A ROS domain id no other process on this host holds; raises RuntimeError if all are taken."""
    d = _lock_dir()
    mine = {i for i, _ in _held}
    start = (os.getpid() * 7) % (LAST - FIRST + 1)        # spread the search start over processes
    for k in range(LAST - FIRST + 1):
        domain = FIRST + (start + k) % (LAST - FIRST + 1)
        if domain in mine:
            continue
        f = open(d / f"{domain}.lock", "a")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            continue
        _held.append((domain, f))
        while len(_held) > max(1, keep):
            release_domain(_held[0][0])
        return domain
    raise RuntimeError(f"every ROS domain id {FIRST}..{LAST} is held by another process on this host")


def release_domain(domain: int):
    """Give back a claimed id (no-op if this process does not hold it)."""
    for k, (i, f) in enumerate(_held):
        if i == domain:
            f.close()                      # closing the file drops the lock
            del _held[k]
            return
