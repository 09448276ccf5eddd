"""pose_controller: moves a plate of a manipulator (``tensegrity_engine.control.PoseController``).

In: ``plate_goal`` (geometry_msgs/PoseStamped in the fixed frame), ``plate_path`` (nav_msgs/Path: each
pose's stamp minus the path's header stamp is the time [s] after receipt to be there), ``joint_trajectory``
(trajectory_msgs/JointTrajectory of motor angles [rad]: interpolated and forwarded, bypassing the pose
controller), ``plate_pose/<frame>`` (the measured plate pose from the simulator or the mocap bridge; used
with ``feedback`` while fresh, else feed-forward only), ``safety_stop`` (the collision monitor's latched Bool
heartbeat). Out at ``control_rate``: ``motor_commands`` (JointState: goal motor angles [rad]) and
``/diagnostics``; latched, once per goal or path: ``plate_goal/nearest`` (PoseStamped: the nearest reachable
pose of the goal, or of the path's end, when the controller has solved it; the goal itself if reachable) and
``plate_goal/reached`` (PoseStamped: the plate's measured pose when it arrived there, filtered over the
last second so that measurement noise (a motion capture's) averages out, stamped then; ``goal_reached`` in
the diagnostics). The reachability log, the nearest pose and the arrival always belong to
the goal the engine's controller has, and only to the latest one received.

Safety (``controller_base``): commands go out only while the monitor's all-clear is fresh (``safety.timeout``,
as the driver; checked before each update and again before its result is sent; updates run on a worker
thread, so a ~1 s solve never delays the stop). Without it the node sends nothing new (the motors hold the
last command, which differs from the one before by at most ``max_step`` per actuator) and reports ERROR. A
stop from the monitor also drops the goal: the node moves again only after the stop clears and a new goal,
path or joint trajectory arrives (a late heartbeat alone only pauses it); the next goal starts from the last
command sent, so the commands on the wire keep the rate limits.
"""
from __future__ import annotations

import tensegrity_ros_common.parent_watch  # noqa: F401,I001 - first: notes the launcher before the slow imports

import math
import time

import numpy as np
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Path
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from tensegrity_engine.control import PoseController
from tensegrity_engine.control.pose import misses
from tensegrity_engine.dynamics.inputs import angles_to_u, u_to_angles
from tensegrity_ros_common import diagnostics as diag
from tensegrity_ros_common import topics
from tensegrity_ros_common.bounded import MAX_BYTES
from tensegrity_ros_common.conversions import frame_to_pose, joint_state
from tensegrity_ros_common.params import check, warn_unknown_overrides
from tensegrity_ros_common.publisher_window import PublisherWindow
from tensegrity_ros_common.safety_gate import receipt

from .angle_trajectory import from_message
from .controller_base import COMMON_PARAMETERS, ControllerNode
from .measurement_guard import WINDOW
from .messages import checked_frame, path_trajectory

PARAMETERS = {
    **COMMON_PARAMETERS,
    "model": ("stacked_manipulator", "built-in model name or path to a model YAML file (the simulator's)"),
    "frame": ("C2", "the controlled plate frame (a frame of the model)"),
    "max_rate": (0.01, "largest rate of change of an actuator input u [m/s]"),
    "max_step": (0.001, "largest change of an actuator input u per control update [m]"),
    "feedback": (True, "correct with the measured plate pose (plate_pose/<frame>) while it is fresh"),
    "integral_gain": (0.5, "how fast the feedback removes a measured pose error [1/s] (time constant ~1/gain)"),
    "filter_time": (0.5, "low-pass time constant of the feedback [s] (averages the measurement noise)"),
    "shaping": (True, "input-shape the commands so they excite none of the plate's lightly damped modes"),
}


class Target:
    """A goal or path (compared by identity: each one is new) and what was published about it: whether its
    reachability was reported, the count of the controller's solves at rest already published as the
    nearest pose, and whether its arrival was."""

    def __init__(self, what: str):
        self.what = what
        self.reported = False
        self.solves = None               # the controller's status['solves'] when it took this target
        self.arrived = False


class PoseControllerNode(ControllerNode):
    PARAMETERS = PARAMETERS
    ENGINE_KERNELS = ("dynamics",)     # inverse statics settle through the engine's kernels: ready before the timers

    def __init__(self, **kwargs):
        super().__init__("pose_controller", **kwargs)
        p = self._p
        self.frame = str(p("frame"))
        self.limits = {"max_rate": check("max_rate", p("max_rate"), 0.0, low_open=True),
                       "max_step": check("max_step", p("max_step"), 0.0, low_open=True)}
        self.tuning = self._tuning()
        self.feedback = bool(p("feedback"))
        self.controller = None
        self.mode = "idle"             # idle | pose (goal or path: the pose controller) | joints (trajectory)
        self.joints = None             # (AngleTrajectory, start time [s]) in mode 'joints'
        self.plate = None              # last measured plate pose (4,4)
        self.plate_sources = PublisherWindow(WINDOW)   # its publishers (two robots' on one topic: hold)
        self.angles = None             # last commanded motor angles (alpha,) [rad]
        self.commanded_by = "pose"     # the mode that sent them
        self.target = None             # the latest goal or path received (a Target)
        self.installed = None          # the one the engine's controller has (set on the worker thread)
        self.load_model()
        self.pub_cmd = self.create_publisher(JointState, topics.MOTOR_COMMANDS, topics.command_qos())
        cq = topics.command_qos()
        self.create_subscription(PoseStamped, "plate_goal", self._on_goal, cq)
        self.subscribe_bounded(Path, "plate_path", self._on_path, cq, MAX_BYTES["plate_path"])
        self.subscribe_bounded(JointTrajectory, "joint_trajectory", self._on_joint_trajectory, cq,
                               MAX_BYTES["joint_trajectory"])
        self.create_subscription(PoseStamped, topics.plate_pose_topic(self.frame), self._on_plate, topics.sensor_qos())
        self.pub_nearest = self.create_publisher(PoseStamped, topics.PLATE_GOAL_NEAREST, topics.latched_qos())
        self.pub_reached = self.create_publisher(PoseStamped, topics.PLATE_GOAL_REACHED, topics.latched_qos())
        self.start_timers()
        self.get_logger().info(f"plate {self.frame}, {self.rate:g} Hz, feedback {'on' if self.feedback else 'off'}")
        warn_unknown_overrides(self)

    def _set_model(self, model):
        if self.frame not in model.frame_names:
            raise ValueError(f"parameter 'frame': model '{model.name}' has no frame '{self.frame}'; its frames are "
                             f"{list(model.frame_names) or 'none (it needs plates with frames)'}")
        if not len(model.actuator_names):
            raise ValueError(f"model '{model.name}' has no actuators: nothing to control")
        self.controller = PoseController(model, self.frame, **self.limits, **self.tuning)
        self.model = model

    def _tuning(self) -> dict:
        return {"integral_gain": check("integral_gain", self._p("integral_gain"), 0.0, 100.0, low_open=True),
                "filter_time": check("filter_time", self._p("filter_time"), 0.0, 1e3, low_open=True),
                "shaping": bool(self._p("shaping"))}

    # --- inputs --------------------------------------------------------------------------------------
    def _accepting(self, what: str) -> bool:
        """New motion is accepted once there is a model, unless a safety stop is on (it would be dropped); one
        that comes while the all-clear is only late waits for it."""
        if self.model is None:
            self.reject(what, "no model yet (parameter model, or the simulator's model_description)")
            return False
        return not self.refused_by_stop(what)

    def _on_goal(self, msg: PoseStamped):
        if not self._accepting("plate_goal"):
            return
        try:
            goal = checked_frame(msg.pose, msg.header.frame_id, self.frame_id, "plate_goal")
        except ValueError as exc:
            self.reject("plate_goal", str(exc))
            return
        self._start("plate_goal", lambda: self.controller.set_goal(goal))

    def _on_path(self, msg: Path):
        if not self._accepting("plate_path"):
            return
        try:
            times, poses = path_trajectory(msg, self.frame_id)
        except ValueError as exc:
            self.reject("plate_path", str(exc))
            return
        self._start("plate_path", lambda: self.controller.set_trajectory(times, poses))

    def _start(self, what: str, set_target):
        """Hand a goal or path to the pose controller on the worker thread (a new controller starting from the
        last command sent, after a joint trajectory moved the motors behind its back or a stop kept an update
        from being sent). Refused if a stop is on: checked under the lock the stop callback takes (paths are
        parsed on another thread than the stop's)."""
        with self.worker.lock:
            if self.refused_by_stop(what):
                return
            restart = self.held or (self.angles is not None and self.commanded_by == "joints")
            u_start = None if self.angles is None else angles_to_u(self.model, self.angles)   # None: at rest
            target = Target(what)
            self.pending.append(self._starter(what, target, set_target, restart, u_start))
            self.mode, self.held, self.joints = "pose", False, None
            self.target = target

    def _starter(self, what: str, target: Target, set_target, restart: bool, u_start):
        """The call the worker makes to install ``target`` (``restart``: a new controller from ``u_start``)."""
        def start():
            try:
                if restart:
                    self.controller = PoseController(self.model, self.frame, **self.limits, **self.tuning,
                                                     u_start=u_start)
                target.solves = self.controller.status["solves"]      # before: a path's end is solved at once
                set_target()
                self.installed = target
            except Exception as exc:          # noqa: BLE001 - a target the controller refuses: reported
                self.reject(what, str(exc))
                with self.worker.lock:
                    if self.target is target:
                        self.mode = "idle" if self.mode == "pose" else self.mode
                        self.target = None
        return start

    def _report(self, target: Target, st: dict):
        """(``worker.lock`` held) After an update of the latest goal or path: log its reachability (once, after
        its first update: the controller solves it there), publish a new nearest reachable pose and the
        arrival event (once)."""
        if not target.reported:
            target.reported = True
            if st.get("reachable"):
                self.get_logger().info(f"{target.what}: reachable, on the way")
            else:
                self.get_logger().warning(
                    f"{target.what} unreachable: the nearest pose misses it by {1e3 * st['miss_position']:.1f} mm "
                    f"and {math.degrees(st['miss_angle']):.2f} deg; going there instead ({st['message']})")
        if st["solves"] != target.solves and st["nearest"] is not None:
            target.solves = st["solves"]
            self.pub_nearest.publish(PoseStamped(header=self.header(), pose=frame_to_pose(st["nearest"])))
        if st["arrived"] and not target.arrived:
            target.arrived = True
            self.pub_reached.publish(PoseStamped(header=self.header(), pose=frame_to_pose(st["arrived_pose"])))
            where = "the goal" if st["reachable"] else "the nearest reachable pose"
            dp, da = misses(st["arrived_pose"], st["goal"])
            measured = (f", measured (filtered) {1e3 * dp:.2f} mm and {math.degrees(da):.3f} deg from the goal"
                        if math.isfinite(st["error_position"]) else " (no measurement: by the model)")
            self.get_logger().info(f"{target.what}: arrived at {where}{measured}")

    def _on_joint_trajectory(self, msg: JointTrajectory):
        if not self._accepting("joint_trajectory"):
            return
        zero = u_to_angles(self.model, np.zeros(len(self.model.actuator_names)))
        current = self.angles if self.angles is not None else zero
        try:
            trajectory = from_message(msg, self.model, current)
        except ValueError as exc:
            self.reject("joint_trajectory", str(exc))
            return
        with self.worker.lock:
            if not self.refused_by_stop("joint_trajectory"):
                self.mode, self.held, self.joints = "joints", False, (trajectory, self.now())

    def _on_plate(self, msg: PoseStamped, info):
        self.plate_sources.heard(receipt(info)[1])
        doubt = self._plate_doubt()
        if doubt:
            self.reject("plate pose", doubt)
            return
        try:
            self.plate = checked_frame(msg.pose, msg.header.frame_id, self.frame_id,
                                       topics.plate_pose_topic(self.frame))
        except ValueError as exc:
            self.reject("plate pose", str(exc))
            return
        self.measured_at = time.monotonic()

    def _plate_doubt(self) -> str:
        """Why the measured plate pose cannot be trusted now ('' when it can): a second publisher on its topic."""
        n = self.plate_sources.count()
        if n < 2:
            return ""
        return (f"{topics.plate_pose_topic(self.frame)} comes from {n} publishers (two robots' simulators or trackers "
                "on one topic?): cannot tell which is this robot's plate; give each robot its own namespace")

    def _feedback_doubtful(self, mode: str) -> bool:
        """Pose mode with feedback while the plate pose has two sources: no update may go out."""
        return mode == "pose" and self.feedback and bool(self._plate_doubt())

    # --- the control loop (controller_base: the worker and the safety gate) ----------------------------
    def _ready(self) -> bool:
        return self.mode != "idle" and not self._feedback_doubtful(self.mode)

    def _moving(self) -> bool:
        return self.mode != "idle"

    def _drop(self):
        self.mode, self.joints = "idle", None

    def _compute(self):
        """(mode, the target the engine's controller has, motor angles (alpha,) [rad], its status) or None (idle,
        or failed and reported)."""
        with self.worker.lock:
            mode, joints = self.mode, self.joints
        target, status = self.installed, None
        try:
            if mode == "joints":
                trajectory, start = joints
                angles = trajectory(self.now() - start)
            elif mode == "pose":
                measured = self.plate if self.feedback and self.measurement_fresh() else None
                angles = u_to_angles(self.model, self.controller.update(self.now(), measured))
                status = self.controller.status
            else:
                return None
            if not np.all(np.isfinite(angles)):
                raise ValueError("non-finite motor angles")
        except Exception as exc:              # noqa: BLE001 - reported; the last command is held
            self.controller_failed(exc)
            return None
        self.failure = ""
        return mode, target, angles, status

    def _send(self, result) -> bool:
        mode, target, angles, status = result
        if mode != self.mode or self._feedback_doubtful(mode):   # a new goal came, or a second plate publisher
            return False
        self.angles, self.commanded_by = angles, mode
        self.pub_cmd.publish(joint_state(self.header(), self.model.actuator_names, angles))
        if mode == "pose":
            self.controller.sent(self.now())  # after a long solve: the rate limit counts from now
        if mode == "pose" and target is not None and target is self.target:     # not a goal replaced since
            self._report(target, status)
        return True

    def _unsent(self, result):
        """The pose controller takes back an update that was not sent (its next one moves from the last sent)."""
        super()._unsent(result)
        if result[0] == "pose":
            self.controller.not_sent()

    def _status(self) -> tuple:
        st = dict(self.controller.status) if self.mode != "joints" else {}
        reported = self.target is not None and self.target.reported
        values = {"mode": self.mode, "safety_reason": self.gate.reason() or "-", "held_by_stop": self.held,
                  "plate_pose_publishers": self.plate_sources.count(),
                  "error_position_m": float(st.get("error_position", math.nan)),
                  "error_angle_rad": float(st.get("error_angle", math.nan)),
                  "reachable": bool(st.get("reachable", True)), "miss_position_m": float(st.get("miss_position", 0.0)),
                  "miss_angle_rad": float(st.get("miss_angle", 0.0)), "controller_message": st.get("message") or "-",
                  "goal_reached": bool(self.mode == "pose" and self.target is not None and self.target.arrived)}
        if self.failure:
            return diag.ERROR, f"controller failed: {self.failure}; holding the last command", values
        if self.held or (self.mode != "idle" and not self.gate.clear()):   # stopped, or no fresh all-clear
            return diag.ERROR, f"holding: {self.gate.reason() or 'safety stop: waiting for a new goal'}", values
        if self._feedback_doubtful(self.mode):
            return diag.ERROR, f"holding the last command: {self._plate_doubt()}", values
        if self.mode == "pose" and reported and not values["reachable"]:
            return diag.WARN, (f"goal unreachable: nearest pose misses by {1e3 * values['miss_position_m']:.1f} mm, "
                               f"{math.degrees(values['miss_angle_rad']):.2f} deg"
                               + ("; arrived there" if values["goal_reached"] else "")), values
        if self.feedback and self.mode == "pose" and not self.measurement_fresh():
            return diag.WARN, f"no fresh {topics.plate_pose_topic(self.frame)}: feed-forward only", values
        return diag.OK, "pose: goal reached" if values["goal_reached"] else self.mode, values


def main(args=None):
    from tensegrity_ros_common.node_main import run
    return run(PoseControllerNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
