"""A client flooding the live view's server with malformed frames is counted, and the log gets one line per
period, not one per frame (the SDK alone printed a line for every bad frame: 1,600 lines a second)."""
import subprocess
import sys
import textwrap

FLOOD = textwrap.dedent("""
    import time
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect
    from tensegrity_live.server import LiveServer
    server = LiveServer("127.0.0.1", 0, lambda *a: None, lambda reason: None)
    sent = 0
    while sent < 600:                           # the server may drop a client that floods it: connect again
        try:
            with connect(f"ws://127.0.0.1:{server.port}", subprotocols=["foxglove.sdk.v1"], close_timeout=1) as ws:
                while sent < 600:
                    ws.send("garbage{" if sent % 2 else bytes([7, 0]))   # no JSON; an unknown binary opcode
                    sent += 1
                time.sleep(0.5)
        except (ConnectionClosed, OSError):
            time.sleep(0.05)
    seen, deadline = -1, time.monotonic() + 10.0
    while server.counts()["protocol_errors"] != seen and time.monotonic() < deadline:   # until no more arrive
        seen = server.counts()["protocol_errors"]
        time.sleep(0.3)
    print("COUNTS", server.counts())
    server.stop()
""")



def test_a_flood_of_malformed_frames_is_counted_and_logged_once_per_period():
    run = subprocess.run([sys.executable, "-W", "ignore", "-c", FLOOD], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    counts = eval(run.stdout.split("COUNTS", 1)[1])          # noqa: S307 - our own printed dict
    assert counts["protocol_errors"] >= 300           # the frames before a drop are seen (600 when none is dropped)
    assert "opcode" in counts["last_protocol_error"] or "JSON" in counts["last_protocol_error"] \
        or "expected value" in counts["last_protocol_error"]
    lines = [ln for ln in run.stderr.splitlines() if "Foxglove server" in ln]
    assert 1 <= len(lines) <= 3, run.stderr[-2000:]         # 10 s period: the run lasts a few seconds at most
