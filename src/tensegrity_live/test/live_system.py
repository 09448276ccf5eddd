"""Harness of the live view end-to-end tests: the nodes as separate processes on a private ROS domain (as
`tensegrity-bringup --processes` and the launch files run them), a real rclpy observer spinning in a thread, and
the live view's port read from its diagnostics (`port`, started with port:=0 = any free port)."""
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseArray, Twist
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool

from tensegrity_ros_common import topics
from tensegrity_ros_common.domains import claim_domain

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "config"
CONFIGS = {"tensegrity_sim.simulator_node": "tensegrity_simulator.yaml",
           "tensegrity_monitor.collision_monitor_node": "collision_monitor.yaml",
           "tensegrity_control.locomotion_node": "locomotion_controller.yaml",
           "tensegrity_live.live_view_node": "live_view.yaml"}
LIVE_VIEW = "tensegrity_live.live_view_node"


def stamp_ns(stamp) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


class Observer:
    """An rclpy node on `domain` recording node_positions (by stamp), diagnostics, cmd_vel, displacement commands
    and safety_stop; spun by a background thread. Read the records under `lock`."""

    def __init__(self, domain: int):
        self.context = rclpy.Context()
        rclpy.init(args=[], context=self.context, domain_id=domain)
        self.node = rclpy.create_node("live_view_test_observer", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.lock = threading.Lock()
        self.positions = {}          # stamp ns -> (n_physical, 3) array [m]
        self.diagnostics = {}        # status name -> [(monotonic s, {key: value str}, message)]
        self.cmd_vel, self.commands, self.safety = [], [], []
        n = self.node
        n.create_subscription(PoseArray, topics.NODE_POSITIONS, self._on_positions, topics.sensor_qos())
        n.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, self._on_diag, topics.state_qos(50))
        n.create_subscription(Twist, "cmd_vel", lambda m: self._add(self.cmd_vel, m), topics.command_qos())
        n.create_subscription(JointState, topics.DISPLACEMENT_COMMANDS, lambda m: self._add(self.commands, m),
                              topics.command_qos())
        n.create_subscription(Bool, topics.SAFETY_STOP, lambda m: self._add(self.safety, m.data),
                              topics.latched_qos())
        self._run = True
        self._thread = threading.Thread(target=self._spin, name="observer spin", daemon=True)
        self._thread.start()

    def _spin(self):
        while self._run:
            self.executor.spin_once(timeout_sec=0.05)

    def _add(self, where: list, item):
        with self.lock:
            where.append((time.monotonic(), item))

    def _on_positions(self, msg: PoseArray):
        x = np.array([(p.position.x, p.position.y, p.position.z) for p in msg.poses])
        with self.lock:
            self.positions[stamp_ns(msg.header.stamp)] = x
            if len(self.positions) > 3000:                  # 30 s at 100 Hz
                self.positions.pop(next(iter(self.positions)))

    def _on_diag(self, msg: DiagnosticArray):
        now = time.monotonic()
        with self.lock:
            for st in msg.status:
                self.diagnostics.setdefault(st.name, []).append(
                    (now, {kv.key: kv.value for kv in st.values}, st.message))

    def latest(self, name_part: str, key: str = None):
        """The newest values {key: str} of the status whose name contains `name_part` (and has `key`), or None."""
        with self.lock:
            for name, history in self.diagnostics.items():
                if name_part in name and (key is None or key in history[-1][1]):
                    return history[-1][1]
        return None

    def wait(self, predicate, timeout: float, what: str):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if predicate():
                return
            time.sleep(0.05)
        raise AssertionError(f"timed out after {timeout} s waiting for {what}")

    def wait_status(self, name_part: str, key: str, timeout: float = 60.0) -> dict:
        self.wait(lambda: self.latest(name_part, key) is not None, timeout, f"diagnostics {name_part}: {key}")
        return self.latest(name_part, key)

    def wait_fresh_status(self, name_part: str, key: str, timeout: float = 10.0) -> dict:
        """The first status of `name_part` published after now."""
        t0 = time.monotonic()

        def fresh():
            with self.lock:
                return any(name_part in name and h[-1][0] > t0 and key in h[-1][1]
                           for name, h in self.diagnostics.items())
        self.wait(fresh, timeout, f"a fresh diagnostics status {name_part}")
        return self.latest(name_part, key)

    def close(self):
        self._run = False
        self._thread.join(timeout=5)
        self.node.destroy_node()
        self.executor.shutdown()
        rclpy.shutdown(context=self.context)


class System:
    """Node processes on a private domain (logs in `log_dir`), an Observer on the same domain."""

    def __init__(self, log_dir: Path):
        self.domain = claim_domain()
        self.log_dir = Path(log_dir)
        self.procs = {}
        self.observer = Observer(self.domain)

    def start(self, module: str, *params: str, name: str = None):
        """Start `module` with its config file and `-p` overrides ("name:=value")."""
        env = dict(os.environ, ROS_DOMAIN_ID=str(self.domain), PYTHONUNBUFFERED="1")
        args = [sys.executable, "-m", module, "--ros-args", "--params-file", str(CONFIG / CONFIGS[module])]
        for p in params:
            args += ["-p", p]
        name = name or module.rpartition(".")[2]
        log = open(self.log_dir / f"{name}.log", "w")
        self.procs[name] = (subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, text=True), log)

    def start_live_view(self, *params: str) -> int:
        """Start the live view on any free port; its port (from its diagnostics)."""
        self.start(LIVE_VIEW, "port:=0", *params, name="live_view")
        values = self.observer.wait_status("live_view", "port", timeout=90)
        port = int(float(values["port"]))
        assert port > 0, values
        return port

    def log(self, name: str) -> str:
        return (self.log_dir / f"{name}.log").read_text()

    def alive(self) -> dict:
        return {name: p.poll() is None for name, (p, _) in self.procs.items()}

    def stop(self) -> dict:
        """SIGINT every process; {name: exit code}."""
        for p, _ in self.procs.values():
            if p.poll() is None:
                p.send_signal(2)
        codes = {}
        for name, (p, log) in self.procs.items():
            try:
                codes[name] = p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                codes[name] = p.wait(timeout=5)
            log.close()
        return codes

    def close(self):
        try:
            self.stop()
        finally:
            self.observer.close()
