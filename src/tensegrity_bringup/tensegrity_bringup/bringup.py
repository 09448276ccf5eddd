"""tensegrity-bringup: start the suite's nodes from the same YAML files as the launch files, without
``ros2 launch`` (for pip-only installs), record the topics to MCAP and write plots.

    tensegrity-bringup --experiment --duration 15 --record runs/twin/twin.mcap --report runs/twin
    tensegrity-bringup --processes                 # each node in its own process (as ros2 launch does)
    tensegrity-bringup --param simulator:real_time_factor:=2.0 --namespace robot1
    tensegrity-bringup --nodes dynamixel_driver,simulator,collision_monitor \
        --param dynamixel_driver:port:=/dev/ttyUSB0 --remap simulator:motor_commands:=motor_goals
    tensegrity-bringup --nodes mode_viewer --param mode_viewer:model:=prism3 --param mode_viewer:mode:=2
    tensegrity-bringup --locomotion --model superball.yaml --heading 90 --duration 60 --report runs/roll
    tensegrity-bringup --policy superball_rolling --model superball.yaml --duration 30 --report runs/policy
    tensegrity-bringup --manipulation --plate-goal 0.008,0,1.352,0,1.5,-9.59 --duration 25

It is not a replacement for ``ros2 launch`` on ROS installs (launch/simulation.launch.py); it starts the
same nodes with the same parameter files and the same overrides.
"""
from __future__ import annotations

import argparse
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions
from tensegrity_engine.paths import output_path_problem
from tensegrity_ros_common.node_main import close_node, ignore_signals, startup_error
from tensegrity_ros_common.node_process import STOP_SIGNALS

from .drive import (LOCOMOTION_NODES, MANIPULATION_NODES, POLICY_NODES, Driver, check_policy, check_rollable,
                    controller_lines, parse_numbers, plate_goal_frame, policy_file)


@dataclass(frozen=True)
class NodeEntry:
    module: str           # python -m <module> runs it as a process
    cls: str              # class for in-process runs
    config: str           # parameter file in the config directory
    node_name: str


NODES = {
    "simulator": NodeEntry("tensegrity_sim.simulator_node", "TensegritySimulator", "tensegrity_simulator.yaml",
                           "tensegrity_simulator"),
    "collision_monitor": NodeEntry("tensegrity_monitor.collision_monitor_node", "CollisionMonitor",
                                   "collision_monitor.yaml", "collision_monitor"),
    "dynamixel_driver": NodeEntry("tensegrity_dynamixel.driver_node", "DynamixelDriver", "dynamixel_driver.yaml",
                                  "dynamixel_driver"),
    "mocap_bridge": NodeEntry("tensegrity_mocap.bridge.node", "MocapBridge", "mocap_bridge.yaml", "mocap_bridge"),
    "mode_viewer": NodeEntry("tensegrity_sim.mode_viewer_node", "ModeViewer", "mode_viewer.yaml", "mode_viewer"),
    "locomotion_controller": NodeEntry("tensegrity_control.locomotion_node", "LocomotionController",
                                       "locomotion_controller.yaml", "locomotion_controller"),
    "policy_controller": NodeEntry("tensegrity_control.policy_node", "PolicyController", "policy_controller.yaml",
                                   "policy_controller"),
    "pose_controller": NodeEntry("tensegrity_control.pose_node", "PoseControllerNode", "pose_controller.yaml",
                                 "pose_controller"),
    "live_view": NodeEntry("tensegrity_live.live_view_node", "LiveView", "live_view.yaml", "live_view"),
}

NODES_DEFAULT = ("simulator", "collision_monitor")
MAX_DURATION_ENV = "TENSEGRITY_MAX_DURATION"     # [s] caps every run (tests run the docs' commands shortened)
ACTUATOR_NODES = ("dynamixel_driver",)          # stopped first (torque off) when the bringup ends
ACTUATOR_NODE_NAMES = tuple(NODES[k].node_name for k in ACTUATOR_NODES)
OWN_PROCESS_NODES = ("live_view",)              # always a process: a Foxglove client never costs the others' GIL
LIVE_VIEW_PORT = 8765


def live_view_address(overrides: list) -> str:
    """ws://HOST:PORT the live view will serve, from its overrides (--live, --param live_view:host/port:=)."""
    values = dict(o.partition(":=")[::2] for o in overrides if isinstance(o, str))
    host, port = values.get("host", "127.0.0.1"), values.get("port", str(LIVE_VIEW_PORT))
    host = "127.0.0.1" if host == "0.0.0.0" else host
    return f"ws://{host}:{port}" if port != "0" else f"ws://{host}:PORT (port 0: the live view logs the port it took)"


def recorded_topics():
    """(topic, type, QoS) subscribed from the first moment (others are discovered)."""
    from tensegrity_ros_common import topics as T
    sensor, latched, state = T.sensor_qos(), T.latched_qos(), T.state_qos()
    return [(T.MODEL_DESCRIPTION, "std_msgs/msg/String", latched),
            (T.NODE_POSITIONS, "geometry_msgs/msg/PoseArray", sensor),
            (T.STRING_STATES, "sensor_msgs/msg/JointState", sensor),
            (T.JOINT_STATES, "sensor_msgs/msg/JointState", sensor),
            (T.MIN_CLEARANCE, "std_msgs/msg/Float64", state),
            (T.SAFETY_STOP, "std_msgs/msg/Bool", latched),
            (T.MARKERS, "visualization_msgs/msg/MarkerArray", state),
            (T.DIAGNOSTICS, "diagnostic_msgs/msg/DiagnosticArray", state)]


def config_dir(explicit: str | None = None) -> Path:
    """The directory with the parameter files: --config-dir, $TENSEGRITY_CONFIG_DIR, the source checkout's
    top-level config/, or the installed share/tensegrity_bringup/config."""
    if explicit is not None:
        if not (Path(explicit) / NODES["simulator"].config).is_file():
            raise FileNotFoundError(f"--config-dir {explicit}: no {NODES['simulator'].config} there")
        return Path(explicit)
    candidates = [os.environ.get("TENSEGRITY_CONFIG_DIR")]
    here = Path(__file__).resolve()
    candidates += [str(p / "config") for p in here.parents[:4]]
    candidates.append(str(Path(sys.prefix) / "share" / "tensegrity_bringup" / "config"))
    for c in candidates:
        if c and (Path(c) / NODES["simulator"].config).is_file():
            return Path(c)
    raise FileNotFoundError("no config directory with tensegrity_simulator.yaml found; pass --config-dir")


def ros_args(entry: NodeEntry, cfg: Path, namespace: str, overrides: list) -> list:
    """--ros-args for a node; overrides are 'name:=value' parameters or ('remap', 'from:=to') pairs."""
    args = ["--ros-args", "--params-file", str(cfg / entry.config)]
    if namespace.strip("/"):
        args += ["-r", f"__ns:=/{namespace.strip('/')}"]
    for o in overrides:
        args += ["-r", o[1]] if isinstance(o, tuple) else ["-p", o]
    return args


def declared_parameters(key: str) -> tuple:
    """(names, dynamic prefixes) of the parameters node ``key`` declares."""
    import importlib
    module = importlib.import_module(NODES[key].module)
    return tuple(module.PARAMETERS), (("motors.",) if key == "dynamixel_driver" else ())


def check_parameter_names(overrides: dict):
    """SystemExit for a --param that names no parameter of its node (rclpy would silently ignore it)."""
    from tensegrity_ros_common.params import did_you_mean
    for key, items in overrides.items():
        names = [o.partition(":=")[0] for o in items if isinstance(o, str)]
        if not names:
            continue
        declared, prefixes = declared_parameters(key)
        for name in names:
            if name not in declared and not any(name.startswith(pfx) for pfx in prefixes):
                hint = did_you_mean(name, declared) or f"; its parameters: {', '.join(declared)}"
                raise SystemExit(f"error: --param {key}:{name}: {key} has no parameter '{name}'{hint}")


def parse_overrides(args) -> dict:
    """{node key: ['name:=value', ...]} from the convenience flags and --param node:name:=value."""
    out = {k: [] for k in NODES}
    if args.model:
        out["simulator"].append(f"model:={args.model}")
        out["pose_controller"].append(f"model:={args.model}")        # (the locomotion controller: from the description)
    if args.policy:
        out["policy_controller"].append(f"policy:={Path(args.policy).resolve()}")
    if getattr(args, "live", None) is not None:
        out["live_view"].append(f"port:={args.live}")
    for p in args.param:
        node, sep, rest = p.partition(":")
        if not sep or node not in NODES or ":=" not in rest:
            raise SystemExit(f"--param {p!r}: use <node>:<name>:=<value> with node one of {', '.join(NODES)}")
        out[node].append(rest)
    for r in args.remap:
        node, sep, rest = r.partition(":")
        if not sep or node not in NODES or ":=" not in rest:
            raise SystemExit(f"--remap {r!r}: use <node>:<from>:=<to> with node one of {', '.join(NODES)}")
        out[node].append(("remap", rest))
    return out


class Interrupted(Exception):
    """Ctrl-C, SIGTERM or SIGHUP arrived; raised from the spin loop (never from inside rclpy)."""


class Bringup:
    def __init__(self, nodes, cfg: Path, namespace: str, overrides: dict, processes: bool, record=None):
        self.nodes, self.cfg, self.namespace, self.overrides = nodes, cfg, namespace, overrides
        self.processes = processes
        self.record = record
        self.children = []
        self.in_process = []
        self.recorder = None
        self.interrupted = False

    def _on_signal(self, signum, frame):
        self.interrupted = True

    def start(self):
        # SIGINT/SIGTERM only set a flag that the spin loop turns into Interrupted: a KeyboardInterrupt raised
        # at an arbitrary point could land inside rclpy (half-built tasks, skipped clean-up of the nodes)
        rclpy.init(args=[], signal_handler_options=SignalHandlerOptions.NO)
        for sig in STOP_SIGNALS:                # SIGHUP too: a closed terminal must not skip the torque off
            signal.signal(sig, self._on_signal)
        self.executor = SingleThreadedExecutor()
        if self.record:
            from .recorder import McapRecorder
            self.recorder = McapRecorder(self.record, recorded_topics(), self.namespace)
            self.executor.add_node(self.recorder)
        if not self.processes:
            self._prepare_kernels()
        for key in self.nodes:
            entry = NODES[key]
            args = ros_args(entry, self.cfg, self.namespace, self.overrides.get(key, []))
            if self.processes or key in OWN_PROCESS_NODES:
                # through node_process: a stop signal while the child still imports ends it cleanly too
                self.children.append((key, subprocess.Popen([sys.executable, "-m", "tensegrity_ros_common.node_process",
                                                             entry.module, *args])))
            else:
                import importlib
                cls = getattr(importlib.import_module(entry.module), entry.cls)
                try:
                    node = cls(cli_args=args)
                except Exception as exc:       # noqa: BLE001 - bad parameter, model file, port, ...
                    raise RuntimeError(startup_error(cls, exc)) from exc
                self.in_process.append(node)
                self.executor.add_node(node)

    def _prepare_kernels(self):
        """One process: the engine kernels of every node loaded (or compiled, interruptibly) before any
        node starts its timers. (Node processes do this themselves in node_main.run.)"""
        import importlib
        from tensegrity_engine.warmup import ensure_kernels
        parts = []
        for key in (k for k in self.nodes if k not in OWN_PROCESS_NODES):
            cls = getattr(importlib.import_module(NODES[key].module), NODES[key].cls)
            parts += [p for p in getattr(cls, "ENGINE_KERNELS", ()) if p not in parts]
        ensure_kernels(parts, log=lambda text: print(text, flush=True))

    def wait_ready(self, timeout: float) -> float:
        """Spin until the simulator's first node_positions arrive (when it is one of the nodes, so a run's
        duration counts from the robot's first state, not from process start-up). Returns the wait [s]."""
        if "simulator" not in self.nodes:
            return 0.0
        from geometry_msgs.msg import PoseArray
        from tensegrity_ros_common import topics as T
        probe = rclpy.create_node("bringup_probe", namespace="/" + self.namespace.strip("/"))
        got = []
        probe.create_subscription(PoseArray, T.NODE_POSITIONS, lambda m: got.append(1), T.sensor_qos())
        self.executor.add_node(probe)
        t0 = time.monotonic()
        try:
            while not got:
                if time.monotonic() - t0 > timeout:
                    raise RuntimeError(f"no node_positions from the simulator within {timeout:g} s "
                                       "(see the node output above)")
                self.spin(0.05)
        finally:
            self.executor.remove_node(probe)
            probe.destroy_node()
        return time.monotonic() - t0

    def start_experiment(self, timeout: float = 10.0):
        """Switch the simulator's experiment on through its ~/experiment service, once everything runs (so
        a recording starts with the experiment, whatever DDS discovery took)."""
        from std_srvs.srv import SetBool
        ns = "/" + self.namespace.strip("/") if self.namespace.strip("/") else ""
        node = rclpy.create_node("bringup_experiment")
        self.executor.add_node(node)
        try:
            client = node.create_client(SetBool, f"{ns}/tensegrity_simulator/experiment")
            end = time.monotonic() + timeout
            while not client.service_is_ready():
                if time.monotonic() > end:
                    raise RuntimeError("the simulator's ~/experiment service did not appear")
                self.spin(0.05)
            future = client.call_async(SetBool.Request(data=True))
            while not future.done():
                if time.monotonic() > end:
                    raise RuntimeError("no reply from the simulator's ~/experiment service")
                self.spin(0.02)
            if not future.result().success:
                raise RuntimeError(f"experiment refused: {future.result().message}")
        finally:
            self.executor.remove_node(node)
            node.destroy_node()

    def spin(self, duration: float | None):
        end = None if duration is None else time.monotonic() + duration
        while rclpy.ok() and (end is None or time.monotonic() < end):
            if self.interrupted:
                raise Interrupted()
            self.executor.spin_once(timeout_sec=0.05)
            for key, proc in self.children:
                if proc.poll() is not None:    # a required node is gone: everything stops (actuators first)
                    if self.interrupted:       # Ctrl-C reached the node too (its process group) and it was quicker
                        raise Interrupted()
                    raise RuntimeError(f"node '{key}' exited with code {proc.returncode}; stopping the others "
                                       f"({', '.join(k for k, _ in self.children if k != key) or 'none'})")

    def stop(self) -> dict:
        """Stop the nodes, actuators first: the driver (torque off) gets SIGINT and is waited for before
        the collision monitor and the rest are stopped, so nothing stops watching while something can still
        move. SIGKILL after 10 s per stage. Returns the exit codes of the processes."""
        ignore_signals()                       # a second Ctrl-C must not cut the clean-up short
        codes = {}
        for stage in self._stop_stages([key for key, _ in self.children]):
            procs = [(key, proc) for key, proc in self.children if key in stage]
            for _, proc in procs:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGINT)
            for key, proc in procs:
                try:
                    codes[key] = proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    codes[key] = proc.wait()
        errors = []
        in_process = sorted(self.in_process, key=lambda n: n.get_name() not in ACTUATOR_NODE_NAMES)
        for node in in_process + ([self.recorder] if self.recorder is not None else []):
            try:
                problem = close_node(node)     # the driver's torque off, the bridge's worker thread, ...
            except Exception as exc:           # noqa: BLE001 - the other nodes must still be closed
                problem = repr(exc)
            if problem:
                errors.append(f"{node.get_name()}: {problem}")
                codes[node.get_name()] = 1     # in process, but as its own process would have exited
        for e in errors:
            print(f"error while closing {e}", file=sys.stderr)
        if rclpy.ok():
            rclpy.shutdown()
        signal.signal(signal.SIGINT, signal.default_int_handler)     # Ctrl-C works again (e.g. the report)
        for sig in STOP_SIGNALS[1:]:
            signal.signal(sig, signal.SIG_DFL)
        return codes

    @staticmethod
    def _stop_stages(keys) -> list:
        """[actuator nodes], [everything else] (empty stages dropped)."""
        first = {k for k in keys if k in ACTUATOR_NODES}
        return [s for s in (first, set(keys) - first) if s]


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="tensegrity-bringup", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", help=f"comma-separated nodes to start (of: {', '.join(NODES)}; default: simulator,"
                    "collision_monitor, plus the controller of --locomotion or --manipulation)")
    ap.add_argument("--model", help="model for the simulator (built-in name or YAML file)")
    ap.add_argument("--namespace", default="", help="ROS namespace of all nodes and topics")
    ap.add_argument("--experiment", action="store_true",
                    help="switch the simulator's paper experiment on as soon as its first state arrives")
    ap.add_argument("--locomotion", action="store_true",
                    help="roll a robot on the ground: adds the locomotion controller (--model: the robot's file)")
    ap.add_argument("--heading", type=float, metavar="DEG",
                    help="with --locomotion: roll toward this direction [deg, 0 = +x, counter-clockwise] (cmd_vel)")
    ap.add_argument("--goal", metavar="X,Y", help="with --locomotion: roll to this point [m] (goal_pose)")
    ap.add_argument("--policy", metavar="FILE.npz|NAME", help="roll with a learned policy (a file from "
                    "bench/train_rolling.py --save, or the name of one in the config directory's policies/, e.g. "
                    "superball_rolling): adds the policy controller, run by cmd_vel toward --heading (default: the "
                    "policy's own); --model: the robot it was trained for")
    ap.add_argument("--manipulation", action="store_true", help="plate pose control: adds the pose controller")
    ap.add_argument("--plate-goal", metavar="X,Y,Z,ROLL,PITCH,YAW",
                    help="with --manipulation: move the plate here [m, deg; R = Rz(yaw) Ry(pitch) Rx(roll)]")
    ap.add_argument("--duration", type=float, help="stop after this many seconds (default: until Ctrl-C)")
    ap.add_argument("--record", help="write the topics to this MCAP file")
    ap.add_argument("--report", metavar="DIR", help="after the run, write plots and summary.json of the recording "
                    "here (without --record the run is recorded to DIR/<DIR's name>.mcap)")
    ap.add_argument("--processes", action="store_true", help="run each node in its own process")
    ap.add_argument("--live", nargs="?", type=int, const=LIVE_VIEW_PORT, metavar="PORT",
                    help=f"add the live view: watch and steer in the Foxglove app over ws://127.0.0.1:PORT "
                    f"(default {LIVE_VIEW_PORT}; 0: any free port); always its own process")
    ap.add_argument("--start-timeout", type=float, default=180.0,
                    help="seconds to wait for the simulator's first state (first runs compile kernels)")
    ap.add_argument("--config-dir", help="directory with the parameter YAML files (default: config/)")
    ap.add_argument("--param", action="append", default=[], metavar="NODE:NAME:=VALUE",
                    help="override a parameter, e.g. simulator:physics_rate:=500.0 (repeatable)")
    ap.add_argument("--remap", action="append", default=[], metavar="NODE:FROM:=TO",
                    help="remap a topic of one node, e.g. simulator:motor_commands:=motor_goals (repeatable)")
    return ap


def _checked_args(ap, argv):
    """(arguments, node names, config directory); ``ap.error`` (exit 2) on a bad combination or path."""
    args = ap.parse_args(argv)
    if args.policy:
        try:
            args.policy = policy_file(args.policy, config_dir(args.config_dir))
        except FileNotFoundError as exc:
            ap.error(str(exc))
    try:
        args.drive = _drive_arguments(args)
    except ValueError as exc:
        ap.error(str(exc))
    default = (LOCOMOTION_NODES if args.locomotion else MANIPULATION_NODES if args.manipulation else
               POLICY_NODES if args.policy else NODES_DEFAULT)
    nodes = [n.strip() for n in (args.nodes or ",".join(default)).split(",") if n.strip()]
    if args.live is not None and "live_view" not in nodes:
        nodes.append("live_view")
    if args.live is not None and not 0 <= args.live <= 65535:
        ap.error(f"--live {args.live}: a TCP port is 0-65535 (0: any free port)")
    unknown = [n for n in nodes if n not in NODES]
    if unknown:
        ap.error(f"unknown node(s) {unknown}; choose from {', '.join(NODES)}")
    if args.report and not args.record:
        args.record = str(default_recording(args.report))
    if not nodes:
        ap.error("--nodes is empty: name at least one node")
    if args.duration is not None and not args.duration > 0:
        ap.error("--duration must be positive")
    try:
        args.duration, args.duration_note = capped_duration(args.duration, os.environ.get(MAX_DURATION_ENV))
    except ValueError as exc:
        ap.error(str(exc))
    if not (args.start_timeout > 0 and math.isfinite(args.start_timeout)):
        ap.error("--start-timeout must be a positive number of seconds")
    for option, path, kind in (("--report", args.report, "directory"), ("--record", args.record, "file")):
        if path:
            problem = output_path_problem(Path(path), kind)
            if problem:
                ap.error(f"{option} {path}: {problem}")
    try:
        cfg = config_dir(args.config_dir)
    except FileNotFoundError as exc:
        ap.error(str(exc))
    return args, nodes, cfg


def default_recording(report_dir) -> Path:
    """The MCAP file of a run given only --report DIR: DIR/<DIR's name>.mcap (runs/roll -> runs/roll/roll.mcap)."""
    return Path(report_dir) / f"{Path(report_dir).resolve().name or 'run'}.mcap"


def capped_duration(duration, limit_text) -> tuple:
    """(seconds to run or None = until Ctrl-C, note or ''): --duration, at most $TENSEGRITY_MAX_DURATION [s]
    when that is set (the documentation's commands run shortened in the tests; a run without --duration
    stops then too). ValueError for a limit that is not a positive number."""
    if not limit_text:
        return duration, ""
    try:
        limit = float(limit_text)
    except ValueError:
        limit = math.nan
    if not (limit > 0 and math.isfinite(limit)):
        raise ValueError(f"{MAX_DURATION_ENV}={limit_text!r}: give a positive number of seconds")
    if duration is not None and duration <= limit:
        return duration, ""
    return limit, f"{'--duration ' + format(duration, 'g') + ' s' if duration else 'the run'} shortened to " \
                  f"{limit:g} s by {MAX_DURATION_ENV}"


def _drive_arguments(args) -> dict:
    """Driver(...) keywords from --heading / --goal / --plate-goal; ValueError for a bad combination."""
    if args.locomotion and args.manipulation:
        raise ValueError("--locomotion and --manipulation are two different robots: choose one")
    if args.policy and (args.locomotion or args.manipulation):
        raise ValueError("--policy runs its own controller: give it without --locomotion and --manipulation")
    if args.policy:
        return _policy_drive(args)
    if (args.heading is not None or args.goal) and not args.locomotion:
        raise ValueError("--heading and --goal drive the locomotion controller: add --locomotion")
    if args.plate_goal and not args.manipulation:
        raise ValueError("--plate-goal drives the pose controller: add --manipulation")
    if args.heading is not None and args.goal:
        raise ValueError("give --heading or --goal, not both")
    if args.locomotion and not args.model:
        raise ValueError("--locomotion needs --model: a robot on the ground (e.g. tensegrity new superball -o "
                         "superball.yaml, then --model superball.yaml)")
    if args.heading is not None and not math.isfinite(args.heading):
        raise ValueError("--heading must be a finite angle [deg]")
    drive = {"heading": args.heading, "goal": parse_numbers("--goal", args.goal, 2) if args.goal else None,
             "plate_goal": plate_goal_frame(parse_numbers("--plate-goal", args.plate_goal, 6)) if args.plate_goal
             else None}
    if args.locomotion:
        check_rollable(args.model)
    return drive


def _policy_drive(args) -> dict:
    """Driver(...) keywords of a --policy run (cmd_vel toward --heading, default the policy's); ValueError for a
    bad combination or a policy that does not fit --model."""
    if args.goal or args.plate_goal:
        raise ValueError("--policy rolls toward a heading (--heading), it takes no --goal or --plate-goal")
    if not args.model:
        raise ValueError("--policy needs --model: the robot the policy was trained for (e.g. tensegrity new superball "
                         "--friction 0.8 -o superball.yaml, then --model superball.yaml)")
    heading = check_policy(args.policy, args.model)
    if args.heading is not None and not math.isfinite(args.heading):
        raise ValueError("--heading must be a finite angle [deg]")
    return {"heading": heading if args.heading is None else args.heading, "controller": "policy_controller"}


def main(argv=None) -> int:
    args, nodes, cfg = _checked_args(_parser(), argv)
    overrides = parse_overrides(args)
    check_parameter_names(overrides)
    b = Bringup(nodes, cfg, args.namespace, overrides, args.processes, args.record)
    own = [n for n in nodes if n in OWN_PROCESS_NODES and not args.processes]
    print(f"tensegrity-bringup: {', '.join(nodes)} ({'processes' if args.processes else 'one process'}"
          f"{''.join(f', {n} its own' for n in own)}), "
          f"config {cfg}, ROS_DOMAIN_ID={os.environ.get('ROS_DOMAIN_ID', '0')}"
          + (f", {args.duration:g} s" if args.duration else ", Ctrl-C to stop")
          + (f" ({args.duration_note})" if args.duration_note else ""), flush=True)
    if "live_view" in nodes:
        print(f"live view: open Foxglove -> Open connection -> Foxglove WebSocket -> "
              f"{live_view_address(overrides['live_view'])}, then import docs/foxglove/tensegrity_layout.json",
              flush=True)
    failed, codes, elapsed = _run(b, args, nodes)
    if failed:
        print(f"error: {failed}", file=sys.stderr)
        return 1
    bad = {k: c for k, c in codes.items() if c != 0}
    if bad:
        print(f"error: node exit codes {bad}", file=sys.stderr)
        return 1
    return _finish(b, args, nodes, elapsed)


def _run(b, args, nodes):
    """Start the nodes, wait for them, switch the experiment on if asked and spin for the duration; stop them
    whatever happens. (failure message or None, node exit codes, seconds run after start)."""
    t0 = time.monotonic()
    codes = {}
    failed = None
    try:
        b.start()
        waited = b.wait_ready(args.start_timeout)
        if waited > 1.0:
            print(f"nodes ready after {waited:.1f} s", flush=True)
        if args.experiment:
            if "simulator" not in nodes:
                raise RuntimeError("--experiment switches the simulator's experiment on: add the simulator")
            b.start_experiment()
            print("experiment on", flush=True)
        if any(v is not None for k, v in args.drive.items() if k != "controller"):
            b.executor.add_node(Driver(args.namespace, **args.drive).node)
        t0 = time.monotonic()
        b.spin(args.duration)
    except (KeyboardInterrupt, ExternalShutdownException, Interrupted):
        pass
    except RuntimeError as exc:
        failed = str(exc)
    finally:
        codes = b.stop()
    return failed, codes, time.monotonic() - t0


def _finish(b, args, nodes, elapsed) -> int:
    """Say what was recorded and write the report; 1 if the recording lacks the simulator's states."""
    if args.record:
        counts = b.recorder.counts if b.recorder else {}
        print(f"recorded {sum(counts.values())} messages on {len(counts)} topics to {args.record}")
    if args.report:
        from .report import make_report
        summary = make_report(args.record, args.report, args.namespace, elapsed,
                              heading_deg=args.drive.get("heading"), goal=args.drive.get("goal"))
        _print_summary(summary, args)
        if "simulator" in nodes and not summary["messages"].get(_topic(args.namespace, "node_positions")):
            print("error: the recording has no node_positions", file=sys.stderr)
            return 1
    return 0


def _topic(namespace: str, name: str) -> str:
    ns = namespace.strip("/")
    return f"/{ns}/{name}" if ns else f"/{name}"


def _print_summary(s: dict, args):
    d = s.get("diagnostics", {})
    sim = next((v for k, v in d.items() if k.endswith(": physics")), {})
    mon = next((v for k, v in d.items() if k.endswith(": self-collision")), {})
    iv = s.get("node_positions_interval_ms", {})
    print(f"node_positions: {s.get('node_positions_rate_hz', 0):.1f} Hz received, interval p50 "
          f"{iv.get('p50', float('nan')):.2f} ms, p99 {iv.get('p99', float('nan')):.2f} ms")
    if sim:
        print(f"simulator: compute load {float(sim.get('compute_load', 'nan')):.1%} of real time, process CPU "
              f"{float(sim.get('process_cpu', 'nan')):.1%}, overruns {sim.get('overruns')}, sim time "
              f"{float(sim.get('sim_time_s', 'nan')):.2f} s")
    if mon:
        print(f"collision monitor: {float(mon.get('check_rate_hz', 'nan')):.1f} checks/s, last check "
              f"{float(mon.get('last_check_us', 'nan')):.0f} us, safety stop {mon.get('safety_stop')}")
    from .rolling_report import report_lines
    for line in controller_lines(s) + report_lines(s):
        print(line)
    if "min_clearance_m" in s:
        print(f"minimum clearance {1e3 * s['min_clearance_m']:.1f} mm; minimum tension "
              f"{s.get('min_tension_n', float('nan')):.1f} N")
    print(f"plots and summary: {args.report}/ ({', '.join(Path(f).name for f in s['files'])}, summary.json)"
          + "".join(f"; no {name}: {why}" for name, why in s.get("skipped", {}).items()))
    print(f"open the recording: Foxglove (https://app.foxglove.dev, 'Open local file' -> {args.record}); on a ROS "
          f"install 'ros2 bag info {args.record}'. Live RViz on a ROS install: "
          f"ros2 launch tensegrity_bringup simulation.launch.py")


if __name__ == "__main__":
    raise SystemExit(main())
