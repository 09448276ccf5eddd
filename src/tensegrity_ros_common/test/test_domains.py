"""Host-wide ROS domain claims: two processes never get the same id; ids come back when released or when
the holder dies; a process recycles its old claims."""
import subprocess
import sys

from tensegrity_ros_common import domains

HOLD = ("import sys, time; from tensegrity_ros_common.domains import claim_domain; "
        "print(*[claim_domain(keep=10) for _ in range(int(sys.argv[1]))], flush=True); time.sleep(30)")


def test_another_process_never_gets_a_claimed_id():
    child = subprocess.Popen([sys.executable, "-c", HOLD, "5"], stdout=subprocess.PIPE, text=True)
    try:
        theirs = {int(x) for x in child.stdout.readline().split()}
        assert len(theirs) == 5
        mine = {domains.claim_domain(keep=50) for _ in range(40)}
        assert len(mine) == 40 and not mine & theirs
        assert all(1 <= d <= 100 for d in mine | theirs)
    finally:
        child.kill()
        child.wait()
        for d in list(mine):
            domains.release_domain(d)
    # the killed holder's locks are gone: its ids can be claimed again (every free id is claimed; other test
    # runs on this host may hold a few ids of their own meanwhile)
    again = set()
    try:
        while len(again) < 100:
            again.add(domains.claim_domain(keep=100))
    except RuntimeError:
        pass
    try:
        assert theirs <= again
    finally:
        for d in list(again):
            domains.release_domain(d)


def test_a_process_keeps_only_its_recent_claims():
    ids = [domains.claim_domain(keep=3) for _ in range(6)]
    held = [d for d, _ in domains._held]
    assert held == ids[-3:]
    for d in held:
        domains.release_domain(d)
    assert domains._held == []
