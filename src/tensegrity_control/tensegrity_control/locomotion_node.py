"""locomotion_controller: rolls a tensegrity on the ground (``tensegrity_engine.locomotion.RollingController``).

In: ``cmd_vel`` (geometry_msgs/Twist, read in the odom frame since a rolling robot has no front: the direction
of (linear.x, linear.y) is the heading and its length the speed [m/s], met on average by resting longer between
tips, up to what the motors allow (the status says when it is capped); angular.z [rad/s] turns the heading while it is
sent; below ``min_speed``: stop after the current tip; older than ``cmd_vel_timeout``: stop). The robot holds
a line per heading and corrects its sideways drift at every face; a heading change of more than 10° starts a
new line. ``goal_pose`` (geometry_msgs/PoseStamped in ``frame_id`` or ``odom_frame``, which coincide: a point
to roll to, |x|, |y| <= ``goal_limit``; a newer cmd_vel replaces it; 'arrived' (OK) only within
``goal_tolerance``, else the status says where and why it stopped (WARN, ERROR)),
``node_positions`` (PoseArray of the physical nodes from the simulator or the mocap bridge, in ``frame_id`` or
``odom_frame``; NaN = unseen). Only the robot's own positions are acted on (``measurement_guard``): while a
second publisher is heard (two robots on one topic) or for a second after a rejected message (another frame,
an infinite value, a bar not of the model's length, a jump faster than the robot moves) the node holds (no new
command) and reports ERROR; positions that jumped and stay at a new place are taken after a second, and the
heading or goal is dropped (WARN until a new one).
Out at ``control_rate``: ``displacement_commands`` (JointState: actuator names, position = u [m]);
``odom`` (nav_msgs/Odometry, only with ``publish_odometry``: for motion capture, where no simulator
publishes it); ``/diagnostics``. Without fresh node positions it sends nothing new (the motors hold the last
command) and reports ERROR.

Safety (``controller_base``, as the pose controller and the Dynamixel driver): ``safety_stop`` (the collision
monitor's latched Bool heartbeat). Commands go out only while its all-clear is fresh (``safety.timeout``); a
stop drops the heading or goal (the robot never resumes on its own), keeps any update still being planned
from being sent, reports ERROR and refuses cmd_vel/goal_pose until it clears; a new one then ramps the inputs
from the last command sent back to zero and plans the next tip from there.
"""
from __future__ import annotations

import tensegrity_ros_common.parent_watch  # noqa: F401,I001 - first: notes the launcher before the slow imports

import time

import numpy as np
from geometry_msgs.msg import PoseArray, PoseStamped, Twist
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from std_msgs.msg import Header

from tensegrity_engine.locomotion import RollingController
from tensegrity_engine.locomotion.dynamic_gait import GAITS
from tensegrity_ros_common import diagnostics as diag
from tensegrity_ros_common import topics
from tensegrity_ros_common.bounded import NODES_WITHOUT_MODEL, pose_array_bytes
from tensegrity_ros_common.odometry import odometry_message
from tensegrity_ros_common.params import check, warn_unknown_overrides

from .controller_base import COMMON_PARAMETERS, ControllerNode
from .measured_body import MeasuredBody
from .measurement_guard import MeasurementGuard
from .messages import checked_frame, rolling_command

PARAMETERS = {
    **COMMON_PARAMETERS,
    "actuators": ([""], "actuators the gait may move ([''] or []: all); the others stay at u = 0"),
    "gait_rate": (0.0, "fastest change of an input during a tip [m/s]: the motors' speed limit times their spool "
                  "radius (0: the engine's default, a 3 rad/s motor on the smallest spool, capped at 0.1 bar "
                  "lengths per second)"),
    "measurement_noise": (0.0, "standard deviation [m] of the measured node coordinates (motion capture: ~0.002); "
                          "above 0 the robot counts as still by where its nodes stay, not by differenced speeds"),
    "gait": ("quasi_static", "the rolling gait: quasi_static (planned tips, at rest between them) or dynamic (tips "
             "optimised with the dynamics and chained, ~1.7-2.2x the faces per minute; docs/locomotion.md)"),
    "cmd_vel_timeout": (0.5, "age [s] of the last cmd_vel beyond which the robot stops (after the current tip)"),
    "min_speed": (0.01, "cmd_vel speeds below this [m/s] mean stop"),
    "goal_tolerance": (0.15, "distance [m] from a goal_pose within which the robot has arrived"),
    "goal_limit": (100.0, "largest |x| and |y| [m] of a goal_pose (farther goals are rejected as absurd)"),
    "publish_odometry": (False, "publish nav_msgs/Odometry on 'odom' from the measured node positions (for "
                         "motion capture; the simulator publishes its own)"),
    "odom_frame": ("odom", "frame of the published odometry"),
    "body_frame": ("base_link", "child frame of the published odometry"),
}


class LocomotionController(ControllerNode):
    PARAMETERS = PARAMETERS
    ENGINE_KERNELS = ("dynamics",)     # the gait planner confirms tips in the contact dynamics: ready before the timers

    def __init__(self, **kwargs):
        super().__init__("locomotion_controller", **kwargs)
        p = self._p
        self.actuators = [a for a in p("actuators") if a]
        self.cmd_vel_timeout = check("cmd_vel_timeout", p("cmd_vel_timeout"), 0.0, 60.0, low_open=True)
        self.min_speed = check("min_speed", p("min_speed"), 0.0)
        self.goal_tolerance = check("goal_tolerance", p("goal_tolerance"), 0.0, low_open=True)
        self.goal_limit = check("goal_limit", p("goal_limit"), 0.0, 1e6, low_open=True)
        self.odom_frame = str(p("odom_frame"))
        self.gait_rate = check("gait_rate", p("gait_rate"), 0.0, 10.0, low_open=True, off=0.0)
        self.measurement_noise = check("measurement_noise", p("measurement_noise"), 0.0, 0.1)
        self.gait = str(p("gait"))
        if self.gait not in GAITS:
            raise ValueError(f"parameter 'gait' must be one of {list(GAITS)}, got {self.gait!r}")
        self.controller = None
        self.X = None                        # last measured node positions (n,3) [m]
        self.u = None                        # last command (alpha,) [m]
        self.cmd_vel_at = None               # monotonic time [s] of the last cmd_vel that set a heading
        self.turn = 0.0                      # rad: angular.z integrated while cmd_vel moves the robot
        self.commanded = False               # a heading or goal was given since the last stop
        self.body = None
        self.guard = None                    # MeasurementGuard: which node_positions are this robot's
        self.dropped = ""                    # why the last command was dropped ('' once a new one came)
        self.load_model()
        self.pub_cmd = self.create_publisher(JointState, topics.DISPLACEMENT_COMMANDS, topics.command_qos())
        self.pub_odom = None
        if p("publish_odometry"):
            self.pub_odom = self.create_publisher(Odometry, topics.ODOMETRY, topics.state_qos())
        cq = topics.command_qos()
        self.create_subscription(Twist, "cmd_vel", self._on_cmd_vel, cq)
        self.create_subscription(PoseStamped, "goal_pose", self._on_goal, cq)
        self.subscribe_bounded(PoseArray, topics.NODE_POSITIONS, self._on_nodes, topics.sensor_qos(),
                               lambda: pose_array_bytes(self.model.n_physical if self.model else NODES_WITHOUT_MODEL))
        self.start_timers()
        self.get_logger().info(f"actuators {self.actuators or 'all'}, {self.rate:g} Hz; odometry "
                               f"{'on' if self.pub_odom else 'off'}")
        warn_unknown_overrides(self)

    def _set_model(self, model):
        unknown = [a for a in self.actuators if a not in model.actuator_names]
        if unknown:
            raise ValueError(f"parameter 'actuators': unknown actuator(s) {unknown}; model '{model.name}' "
                             f"has {list(model.actuator_names)}")
        self.controller = RollingController(model, self.actuators or None, rate=self.gait_rate or None,
                                            noise=self.measurement_noise, gait=self.gait)
        self.body = MeasuredBody(model)
        self.guard = MeasurementGuard(model)
        self.model = model

    # --- inputs --------------------------------------------------------------------------------------
    def _on_cmd_vel(self, msg: Twist):
        try:
            heading, speed, rate = rolling_command(msg, self.min_speed)
            self._need_model()
        except ValueError as exc:
            self.reject("cmd_vel", str(exc))
            return
        if heading is not None and self.refused_by_stop("cmd_vel"):
            return
        now = time.monotonic()
        if heading is None:
            self.turn = 0.0
        elif self.cmd_vel_at is not None:
            self.turn += rate * min(now - self.cmd_vel_at, self.cmd_vel_timeout)
        heading = None if heading is None else heading + self.turn
        self._command(lambda: self.controller.set_heading(heading, speed), heading is not None)
        self.cmd_vel_at = None if heading is None else now

    def _on_goal(self, msg: PoseStamped):
        try:
            goal = checked_frame(msg.pose, msg.header.frame_id, self.frame_id, "goal_pose", (self.odom_frame,))
            if np.max(np.abs(goal[:2, 3])) > self.goal_limit:
                raise ValueError(f"goal_pose ({goal[0, 3]:.4g}, {goal[1, 3]:.4g}) m lies beyond goal_limit "
                                 f"{self.goal_limit:g} m")
            self._need_model()
        except ValueError as exc:
            self.reject("goal_pose", str(exc))
            return
        if self.refused_by_stop("goal_pose"):
            return
        self._command(lambda: self.controller.set_goal(goal[:2, 3], tolerance=self.goal_tolerance), True)
        self._forget_cmd_vel()
        self.get_logger().info(f"rolling to ({goal[0, 3]:.3f}, {goal[1, 3]:.3f}) m")

    def _command(self, call, moves: bool):
        """Hand a heading or goal to the gait (on the worker). The first after a safety stop starts from the
        command the motors hold: the inputs ramp from it back to zero before the next tip is planned."""
        resume = self.held and moves
        held_u = self.u

        def command():
            call()
            if resume and held_u is not None:
                self.controller.recover_from(held_u, self.now())

        with self.worker.lock:
            self.pending.append(command)
            if moves:
                self.held, self.commanded, self.dropped = False, True, ""

    def _forget_cmd_vel(self):
        """No cmd_vel in force: its age and its accumulated turn start afresh with the next one."""
        self.cmd_vel_at, self.turn = None, 0.0

    def _need_model(self):
        if self.model is None:
            raise ValueError(self.model_problem or "no model yet (parameter model, or the simulator's "
                             "model_description)")

    def _on_nodes(self, msg: PoseArray, info):
        if self.model is None:
            return                                       # waiting for model_description: nothing to check
        X = self.guarded_positions(msg, info, (self.frame_id, self.odom_frame))
        if X is None:
            return
        if self.guard.take_relocation():
            self._drop_for("node_positions jumped to a new place and stayed there (the robot moved, or another "
                           "robot's data): the heading or goal was dropped; send a new one")
        self.X = X
        self.measured_at = time.monotonic()
        if self.pub_odom is not None:
            state = self.body.update(self.elapsed(), X)
            if state is not None:
                h = Header(stamp=self.get_clock().now().to_msg(), frame_id=str(self._p("odom_frame")))
                self.pub_odom.publish(odometry_message(state, h, str(self._p("body_frame"))))

    # --- the control loop (controller_base: the worker and the safety gate) --------------------------
    def _tick(self):
        """A stale cmd_vel stops the robot after the current tip (checked also while a plan runs)."""
        if self.cmd_vel_at is not None and time.monotonic() - self.cmd_vel_at > self.cmd_vel_timeout:
            with self.worker.lock:
                self.pending.append(lambda: self.controller.set_heading(None))
            self._forget_cmd_vel()
            self.get_logger().warning(f"cmd_vel older than {self.cmd_vel_timeout:g} s: stopping after this tip")
        super()._tick()

    def _drop_for(self, why: str):
        """Forget the heading or goal (the robot stops after the tip under way) and say why until a new one."""
        with self.worker.lock:
            self.pending.append(self._drop())
            self.dropped = why
        self.get_logger().warning(why)

    def _ready(self) -> bool:
        return self.measurement_fresh() and not self.guard.hold_reason()   # else the motors keep the last command

    def _moving(self) -> bool:
        return self.commanded or (self.u is not None and bool(np.any(self.u)))

    def _drop(self):
        self.commanded = False
        self._forget_cmd_vel()
        return lambda: (self.controller.set_heading(None), self.controller.set_goal(None))

    def _compute(self):
        """The next inputs u (alpha,) [m] (None: the controller failed; reported, the last command held)."""
        return self.checked_inputs(lambda: self.controller.update(self.now(), self.X))

    def _send(self, u) -> bool:
        return self.publish_inputs(u)

    def _status(self) -> tuple:
        st = dict(self.controller.status)
        values = {"state": st.get("state", "?"), "reason": st.get("reason") or "-",
                  "face": " ".join(st.get("face", ())) or "-",
                  "faces_changed": int(st.get("faces_changed", 0)), "detours": int(st.get("detours", 0)),
                  "speed_limit_m_s": float(st.get("speed_limit", float("nan"))),
                  "speed_capped": bool(st.get("speed_capped", False)), "turn_rad": self.turn,
                  "controller_message": st.get("message") or "-",
                  "cmd_vel_age_s": float("nan") if self.cmd_vel_at is None else time.monotonic() - self.cmd_vel_at,
                  "max_command_m": float(np.max(np.abs(self.u))) if self.u is not None else 0.0,
                  "safety_reason": self.gate.reason() or "-", "held_by_stop": self.held,
                  "node_positions_publishers": self.guard.publishers()}
        hold = self.holding(self.guard, "safety stop: waiting for a new cmd_vel or goal_pose")
        if hold:
            return (*hold, values)
        if st.get("state") == "error":
            return diag.ERROR, st.get("message") or "controller error", values
        if st.get("state") == "stopped":
            return diag.WARN, st.get("message") or "stopped short of the goal", values
        if self.dropped:
            return diag.WARN, self.dropped, values
        if not self.gate.clear():                        # idle: nothing held, but a command would wait
            return diag.WARN, f"{st.get('state', '?')}: cannot move: {self.gate.reason()}", values
        return diag.OK, f"{st.get('state', '?')}: {st.get('message') or 'ok'}", values


def main(args=None):
    from tensegrity_ros_common.node_main import run
    return run(LocomotionController, args)


if __name__ == "__main__":
    raise SystemExit(main())
