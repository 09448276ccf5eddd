"""Run a launcher (``ros2 launch ...``) so that every way of stopping it ends with the nodes' clean-up:

    python3 -m tensegrity_ros_common.supervise [--grace S] -- ros2 launch tensegrity_bringup hardware.launch.py

The container images run their command this way (docker/entrypoint.sh); on a host it is optional.

- SIGINT, SIGTERM and SIGHUP reach the launcher as one SIGINT: ``ros2 launch`` handles SIGINT (it stops
  its nodes, the driver turning torque off) but not SIGTERM (ros2/launch#666), which ``docker stop`` and
  process managers send.
- Nodes the launcher leaves behind (it crashed or was killed) become this process's children (it is a child
  subreaper, or PID 1 in a container), notice their parent is gone (:mod:`.parent_watch`) and stop as on
  Ctrl-C. This process waits for them, so a container is not torn down (SIGKILL to everything left) while
  the driver is still turning torque off. Whatever still runs ``--grace`` s after the launcher ended gets
  SIGINT, and SIGKILL after as long again.

Exit code: the launcher's (128 + N if signal N ended it), or 1 if it was 0 but a left-behind node failed."""
from __future__ import annotations

import argparse
import ctypes
import os
import signal
import subprocess
import sys
import time

from .node_process import STOP_SIGNALS

PR_SET_CHILD_SUBREAPER = 36      # linux/prctl.h
# s the nodes left behind by a dead launcher get to stop by themselves: their parent watch notices within
# 0.05 s and the driver's torque off takes well under a second; 10 s leaves room for a loaded machine
DEFAULT_GRACE = 10.0


def become_subreaper() -> bool:
    """Orphaned descendants are re-parented to this process instead of init (Linux >= 3.4)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def own_children() -> list:
    """PIDs of this process's live (not zombie) children, from /proc."""
    me, out = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] != "Z":
            out.append(int(entry))
    return out


def exit_code(status: int) -> int:
    """A shell-style exit code from a waitpid status (128 + N for a signal N)."""
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


class Supervisor:
    def __init__(self, command, grace: float = DEFAULT_GRACE):
        self.command, self.grace = command, grace
        self.forwarded = False
        self.launcher = None

    def _forward(self, signum, frame):
        """The first stop signal goes to the launcher as SIGINT; repeats are dropped (launch escalates a
        second SIGINT to SIGTERM/SIGKILL of its nodes, which would cut the torque off short)."""
        if not self.forwarded and self.launcher is not None:
            self.forwarded = True
            try:
                os.kill(self.launcher, signal.SIGINT)
            except ProcessLookupError:
                pass

    def run(self) -> int:
        become_subreaper()
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._forward)
        self.launcher = subprocess.Popen(self.command).pid
        code, failed = None, []
        while code is None:
            pid, status = os.waitpid(-1, 0)
            if pid == self.launcher:
                code = exit_code(status)
            elif exit_code(status) != 0:
                failed.append(pid)
        failed += self._wait_left_behind()
        if failed and code == 0:
            print(f"supervise: {len(failed)} node process(es) left behind by the launcher failed", file=sys.stderr)
            return 1
        return code

    def _wait_left_behind(self) -> list:
        """Reap the launcher's orphans until none is left; SIGINT after the grace period, SIGKILL after
        twice it. Returns the PIDs that exited non-zero."""
        start, failed, signalled = time.monotonic(), [], set()
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return failed
            if pid:
                failed += [pid] if exit_code(status) != 0 else []
                continue
            waited = time.monotonic() - start
            for stage, sig in ((1, signal.SIGINT), (2, signal.SIGKILL)):
                if waited > stage * self.grace and stage not in signalled:
                    signalled.add(stage)
                    left = own_children()
                    print(f"supervise: {len(left)} process(es) still running {waited:.0f} s after the launcher "
                          f"ended: sending {sig.name}", file=sys.stderr, flush=True)
                    for child in left:
                        os.kill(child, sig)
            time.sleep(0.02)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tensegrity_ros_common.supervise",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--grace", type=float, default=DEFAULT_GRACE,
                    help=f"s the launcher's left-behind nodes get to stop by themselves (default {DEFAULT_GRACE:g})")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="the launcher and its arguments (after --)")
    args = ap.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("give the command to run, e.g. -- ros2 launch tensegrity_bringup hardware.launch.py")
    try:
        return Supervisor(command, args.grace).run()
    except FileNotFoundError as exc:
        print(f"supervise: cannot run {command[0]!r}: {exc.strerror}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    raise SystemExit(main())
