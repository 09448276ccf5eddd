"""The live view through a real Foxglove WebSocket client (foxglove_ws_client, proven against a bare SDK server in
test_foxglove_ws_client.py), with the nodes as separate processes over real DDS on a private domain (slow tier):
the scene's rate, bar endpoints decoded from /scene/robot equal to the simulator's node positions of the same
stamp, a client's cmd_vel rolling the robot (hostile values rejected and counted, the safety stop obeyed), and a
hostile client that costs the simulator no deadline and crashes nothing."""
import json
import math
import socket
import threading
import time

import numpy as np
import pytest

pytest.importorskip("foxglove")
pytest.importorskip("rclpy")
from foxglove_ws_client import SUBPROTOCOLS, FoxgloveWsClient  # noqa: E402
from live_system import System  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from tensegrity_engine import load_model  # noqa: E402
from tensegrity_engine.cli.app import main as tensegrity  # noqa: E402
from tensegrity_engine.locomotion.support import centre_of_mass  # noqa: E402

pytestmark = pytest.mark.slow
SIM = "tensegrity_sim.simulator_node"
MONITOR = "tensegrity_monitor.collision_monitor_node"
LOCOMOTION = "tensegrity_control.locomotion_node"
PHYSICS = "tensegrity_simulator: physics"          # the simulator's diagnostics status (name contains)
RATE_HZ = 30.0


@pytest.fixture
def system(tmp_path):
    s = System(tmp_path)
    yield s
    codes = s.stop()
    s.observer.close()
    assert not any("Traceback" in s.log(n) for n in codes), {n: s.log(n)[-3000:] for n in codes}


@pytest.fixture(scope="module")
def superball(tmp_path_factory):
    path = tmp_path_factory.mktemp("robot") / "superball.yaml"
    assert tensegrity(["new", "superball", "--friction", "0.8", "-o", str(path)]) == 0
    return path, load_model(str(path))


def url(port: int) -> str:
    return f"ws://127.0.0.1:{port}"


def bar_endpoints(cyl) -> np.ndarray:
    """(2, 3) ends of a CylinderPrimitive: its pose at the bar's midpoint, its z axis along the bar, size.z long."""
    p, q = cyl.pose.position, cyl.pose.orientation
    axis = np.array([2 * (q.x * q.z + q.w * q.y), 2 * (q.y * q.z - q.w * q.x), 1 - 2 * (q.x * q.x + q.y * q.y)])
    mid = np.array([p.x, p.y, p.z])
    half = 0.5 * cyl.size.z * axis / np.linalg.norm([q.x, q.y, q.z, q.w]) ** 2
    return np.array([mid - half, mid + half])


def robot_entity(update):
    return next(e for e in update.entities if e.id == "robot")


# --- (a) rate and (b) bar endpoints ---------------------------------------------------------------------------
def test_scene_rate_and_bar_endpoints_equal_the_simulators_node_positions(system):
    model = load_model("stacked_manipulator")
    system.start(SIM, "experiment.enabled:=true")              # the paper's sinusoids: the bars move
    port = system.start_live_view(f"rate_hz:={RATE_HZ}")
    with FoxgloveWsClient(url(port)) as client:
        sub = client.subscribe("/scene/robot")
        client.next_message(sub, timeout=60)
        t0, n0 = time.monotonic(), client.count(sub)
        time.sleep(10.0)
        rate = (client.count(sub) - n0) / (time.monotonic() - t0)
        msgs = [m for m in client.messages(sub) if m.received >= t0]
        live = system.observer.latest("live_view", "port")
        load = open("/proc/loadavg").read().split()[:3]
        # decimation: at most one scene per tick (+5 %: the window's edges and timer phase); at least half of the
        # ticks on a loaded 2-core machine (load 4-8: a Python timer is late when both cores are busy, and a late
        # tick sends one scene, never a queue of them)
        print(f"scene rate {rate:.1f} Hz of {RATE_HZ} (live view says {live.get('scene_rate_hz')}), load {load}")
        assert 0.5 * RATE_HZ <= rate <= 1.05 * RATE_HZ

        errors, matched = [], 0
        for m in msgs:
            entity = robot_entity(client.decode(sub, m))
            stamp = entity.timestamp.seconds * 1_000_000_000 + entity.timestamp.nanos
            with system.observer.lock:
                x = system.observer.positions.get(stamp)
            if x is None:
                continue
            matched += 1
            X = model.from_physical(x)
            assert len(entity.cylinders) == len(model.bars)
            for cyl, (a, b) in zip(entity.cylinders, model.bars):
                ends = bar_endpoints(cyl)
                errors.append(min(np.abs(ends - X[[a, b]]).max(), np.abs(ends - X[[b, a]]).max()))
        print(f"{matched} of {len(msgs)} scenes matched a node_positions stamp; max endpoint error "
              f"{max(errors):.3g} m")
        # the observer and the live view both subscribe best effort, so some stamps are missing on one side
        assert matched >= 0.25 * len(msgs) and matched >= 20
        assert max(errors) <= 1e-6          # m: float64 midpoint, quaternion and length; 1e-9 expected


# --- (c) steering from the client -----------------------------------------------------------------------------
def start_rolling(system, path, *monitor_params) -> int:
    """Simulator (the rolling robot), collision monitor, locomotion controller and live view; the live port."""
    system.start(SIM, f"model:={path}")
    system.start(MONITOR, *monitor_params)
    system.start(LOCOMOTION)
    return system.start_live_view()


def com_xy(model, x) -> np.ndarray:
    return centre_of_mass(model, model.from_physical(x))[:2]


def latest_positions(observer) -> np.ndarray:
    with observer.lock:
        return observer.positions[max(observer.positions)]


def rejected(observer) -> int:
    """The live view's count of rejected client messages (its diagnostics' first integer key 'rejected...')."""
    values = observer.latest("live_view", "port")
    for key, value in values.items():
        if key.startswith("rejected") and value.strip().isdigit():
            return int(value)
    raise AssertionError(f"no rejected-messages count in the live view's diagnostics: {values}")


def twist(vx: float, vy: float = 0.0) -> dict:
    return {"linear": {"x": vx, "y": vy, "z": 0.0}, "angular": {"x": 0.0, "y": 0.0, "z": 0.0}}


HOSTILE_TWISTS = [
    b'{"linear": {"x": NaN, "y": 0.0, "z": 0.0}, "angular": {"x": 0.0, "y": 0.0, "z": 0.0}}',     # not finite
    json.dumps(twist(1e9)).encode(),                                                              # absurd speed
    json.dumps({"linear": [0.1, 0.0, 0.0], "angular": {"x": 0.0, "y": 0.0, "z": 0.0}}).encode(),  # wrong shape
    json.dumps({"linear": {"x": "fast"}}).encode(),                                               # not a number
    b"\xff\xfe not json",
]


def test_client_cmd_vel_rolls_the_robot_and_hostile_values_are_rejected(system, superball):
    path, model = superball
    port = start_rolling(system, path)
    obs = system.observer
    obs.wait(lambda: obs.safety and obs.safety[-1][1] is False, 120, "the collision monitor's all-clear")
    with FoxgloveWsClient(url(port)) as client:
        cid = client.advertise("/cmd_vel", "geometry_msgs/msg/Twist")
        before = rejected(obs)
        for payload in HOSTILE_TWISTS:
            client.publish(cid, payload)
        obs.wait(lambda: rejected(obs) >= before + len(HOSTILE_TWISTS), 15, "the live view to count the rejections")
        reason = obs.latest("live_view", "port")
        print(f"rejected {rejected(obs) - before} hostile cmd_vel; last reason: {reason}")
        time.sleep(1.0)
        with obs.lock:
            assert not obs.cmd_vel, "a hostile cmd_vel reached ROS"

        start = com_xy(model, latest_positions(obs))
        t0 = time.monotonic()
        while time.monotonic() - t0 < 90:                  # a teleop panel re-sends at 5 Hz
            client.publish(cid, twist(0.1))
            time.sleep(0.2)
            d = com_xy(model, latest_positions(obs)) - start
            if d[0] >= 0.15:
                break
        load = open("/proc/loadavg").read().split()[:3]
    with obs.lock:
        sent = [m for _, m in obs.cmd_vel]
        commands = len(obs.commands)
    heading_error = math.degrees(abs(math.atan2(d[1], d[0])))
    print(f"client cmd_vel: {len(sent)} on ROS, {commands} displacement commands, the robot rolled "
          f"{d[0]:+.3f}, {d[1]:+.3f} m in {time.monotonic() - t0:.0f} s (heading error {heading_error:.0f} deg), "
          f"load {load}")
    assert sent and all((m.linear.x, m.linear.y, m.angular.z) == (0.1, 0.0, 0.0) for m in sent)
    assert commands > 0
    # m: a face's roll moves the centre of mass ~0.2-0.4 m on this robot; within 45 deg of the heading: one tip's
    # sideways reach on the faces' lattice over 1-2 faces (test_rolling_through_ros measured up to 26 deg over 3)
    assert d[0] >= 0.15 and heading_error <= 45.0


def test_safety_stop_holds_against_client_steering(system, superball):
    path, model = superball
    # contact_margin 1 m: every pair of bars is closer than that, so the monitor stops at once (a real stop)
    port = start_rolling(system, path, "contact_margin:=1.0")
    obs = system.observer
    obs.wait(lambda: obs.safety and obs.safety[-1][1] is True, 120, "the collision monitor's safety stop")
    with FoxgloveWsClient(url(port)) as client:
        safety = client.subscribe("/safety")
        msg = client.next_message(safety, timeout=30)
        assert client.decode(safety, msg)["stopped"] is True
        cid = client.advertise("/cmd_vel", "geometry_msgs/msg/Twist")
        start = latest_positions(obs)
        for _ in range(40):                                # 8 s of a teleop at 5 Hz
            client.publish(cid, twist(0.1))
            time.sleep(0.2)
        moved = np.abs(latest_positions(obs) - start).max()
    with obs.lock:
        forwarded, commands = len(obs.cmd_vel), len(obs.commands)
    print(f"safety stop: {forwarded} client cmd_vel forwarded to ROS, {commands} displacement commands, "
          f"nodes moved {moved * 1e3:.2f} mm")
    assert forwarded > 0                   # the live view passes it on: the controller decides (no bypass, no veto)
    assert commands == 0
    assert moved < 0.005                   # m: resting on the ground (contact settling is well under a mm)


# --- (d) a hostile client -------------------------------------------------------------------------------------
BAD_FRAMES = [
    "garbage {{{", "[]", "null", json.dumps({"op": "nope"}), json.dumps({"no_op": 1}),
    json.dumps({"op": "subscribe", "subscriptions": "all"}),
    json.dumps({"op": "subscribe", "subscriptions": [{"id": -1, "channelId": 1e30}]}),
    json.dumps({"op": "unsubscribe", "subscriptionIds": [None, "x", 2 ** 70]}),
    json.dumps({"op": "advertise", "channels": [{"id": 1}]}),
    json.dumps({"op": "advertise", "channels": [{"id": 7, "topic": "/cmd_vel", "encoding": "cbor",
                                                 "schemaName": "geometry_msgs/msg/Twist"}]}),
    b"", b"\x01", b"\x01\x00\x00",                          # truncated clientMessageData
    b"\x01\xe7\x03\x00\x00{}",                              # clientMessageData on a channel never advertised
    b"\x7f\x00\x00\x00\x00", b"\x02\x00",                   # unknown and truncated opcodes
]


class Hostile:
    """Hostile clients on threads until `stop`: malformed frames, 1,000 subscriptions, a flood of client messages
    (valid, invalid and oversized) and a client that never reads. Counts frames sent and connections lost."""

    def __init__(self, port: int):
        self.port, self.stop = port, threading.Event()
        self.sent = {"malformed": 0, "subscriptions": 0, "flood": 0}
        self.reconnects = 0
        self.threads = [threading.Thread(target=self._guard, args=(f,), daemon=True)
                        for f in (self._malformed, self._subscriptions, self._flood)]
        self.deaf = self._never_reads()

    def _guard(self, work):
        """Run `work` again after the server drops the connection (it may: these clients misbehave)."""
        while not self.stop.is_set():
            try:
                work()
            except Exception:                                # noqa: BLE001 - a closed or refused connection
                self.reconnects += 1
                time.sleep(0.05)

    def _malformed(self):
        with connect(url(self.port), subprotocols=list(SUBPROTOCOLS)) as ws:
            while not self.stop.is_set():
                for frame in BAD_FRAMES:
                    ws.send(frame)
                    self.sent["malformed"] += 1
                time.sleep(0.02)                                     # ~800 frames/s

    def _subscriptions(self):
        with FoxgloveWsClient(url(self.port), name="1000 subscriptions") as c:
            c.wait_until(lambda: len(c.channels) > 5, 10, "channels")
            ids = sorted(c.channels)
            while not self.stop.is_set():
                subs = [{"id": i, "channelId": ids[i % len(ids)]} for i in range(1000)]
                c.send_json({"op": "subscribe", "subscriptions": subs})          # one op of 1,000
                for i in range(1000, 2000):                                       # and 1,000 ops of one
                    c.send_json({"op": "subscribe", "subscriptions": [{"id": i, "channelId": ids[i % len(ids)]}]})
                c.send_json({"op": "unsubscribe", "subscriptionIds": list(range(2000))})
                self.sent["subscriptions"] += 2002
                time.sleep(0.5)

    def _flood(self):
        with FoxgloveWsClient(url(self.port), name="flood") as c:
            cid = c.advertise("/cmd_vel", "geometry_msgs/msg/Twist")
            k = 0
            while not self.stop.is_set():
                c.publish(cid, twist(0.0) if k % 3 == 0 else HOSTILE_TWISTS[k % len(HOSTILE_TWISTS)])
                if k % 500 == 0:
                    c.publish(cid, b"{" + b" " * 2_000_000 + b"}")                # 2 MB
                k += 1
                self.sent["flood"] += 1
                time.sleep(0.0005)

    def _never_reads(self):
        """Subscribes to every channel, then never reads: a small receive buffer and a queue of one message
        (websockets stops reading the socket beyond it), so the server's sends back up."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", self.port))
        ws = connect(url(self.port), sock=sock, subprotocols=list(SUBPROTOCOLS), max_queue=1).__enter__()
        ids = set()
        end = time.monotonic() + 10
        while len(ids) < 5 and time.monotonic() < end:
            msg = json.loads(ws.recv(timeout=10))
            if msg.get("op") == "advertise":
                ids |= {ch["id"] for ch in msg["channels"]}
        ws.send(json.dumps({"op": "subscribe", "subscriptions": [{"id": i, "channelId": c}
                                                                 for i, c in enumerate(sorted(ids))]}))
        return ws

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=10)
        self.deaf.socket.close()


def physics_window(obs, seconds: float) -> dict:
    """The simulator's overruns, skipped time and worst lag over `seconds` (from its 1 Hz diagnostics)."""
    first = obs.wait_fresh_status(PHYSICS, "overruns")
    t0 = time.monotonic()
    time.sleep(seconds)
    last = obs.wait_fresh_status(PHYSICS, "overruns")
    with obs.lock:
        lags = [float(v["lag_ms"]) for name, h in obs.diagnostics.items() if PHYSICS in name
                for t, v, _ in h if t >= t0 and "lag_ms" in v]
    return {"overruns": int(last["overruns"]) - int(first["overruns"]),
            "skipped_s": float(last["skipped_sim_time_s"]) - float(first["skipped_sim_time_s"]),
            "max_lag_ms": max(lags), "load": open("/proc/loadavg").read().split()[0]}


def test_hostile_client_costs_the_simulator_no_deadline_and_crashes_nothing(system):
    system.start(SIM, "experiment.enabled:=true")
    port = system.start_live_view(f"rate_hz:={RATE_HZ}")
    obs = system.observer
    with FoxgloveWsClient(url(port), name="well-behaved") as good:
        sub = good.subscribe("/scene/robot")
        good.next_message(sub, timeout=60)
        time.sleep(3.0)                                          # past the start's transients
        quiet = physics_window(obs, 20.0)
        with Hostile(port) as hostile:
            n0 = good.count(sub)
            loud = physics_window(obs, 20.0)
            scenes = good.count(sub) - n0
        after = good.count(sub)
        good.next_message(sub, timeout=10, after=after)         # still served after the attack
        assert good.is_open
    live = obs.latest("live_view", "port")
    print(f"hostile frames sent {hostile.sent}, reconnects {hostile.reconnects}; the well-behaved client got "
          f"{scenes} scenes in 20 s; simulator without {quiet} / with {loud}; live view {live}")
    assert all(system.alive().values()), system.alive()
    assert scenes >= 0.5 * RATE_HZ * 20.0          # the same floor as the rate test: the attack starves nobody
    # The live view is its own process, so the attack can cost the simulator only CPU time on a shared core:
    # deadlines the simulator misses under the attack may exceed the quiet window's by the machine's own jitter
    # between quiet windows and no more: three quiet 20 s windows of the simulator alone at load 5.5-7.2 gave
    # 0, 2, 0 overruns and 7.6, 16.1, 7.4 ms of lag (1 Hz samples); an overrun is a lag past max_lag (100 ms)
    assert loud["overruns"] <= quiet["overruns"] + 3
    assert loud["max_lag_ms"] <= max(quiet["max_lag_ms"], 20.0) + 50.0
