"""policy_controller: rolls a tensegrity with a learned policy file (``tensegrity_engine.learn.policy``: target
inputs from the measured node positions and the policy's clock, trained by bench/train_rolling.py --save).

Parameters: ``policy`` (the .npz file, required; checked against the model: another robot's policy stops the node
with a message naming the file and the fix), the model (parameter ``model`` or the simulator's
``model_description``), ``control_rate`` (must be the policy's: 1 / its control period, 50 Hz for the committed
policy; another rate is refused, the policy was trained at its period).
In: ``cmd_vel`` (geometry_msgs/Twist): a speed of at least ``min_speed`` runs the policy, which rolls toward the
heading it was trained for (a direction more than ``heading_tolerance`` away from it is rejected: the policy takes
no heading); slower, or older than ``cmd_vel_timeout``: it stops (the motors hold the last
command; the next run resumes the policy's clock). ``node_positions`` (PoseArray of the physical nodes, NaN =
unseen: filled with the node's last seen position; nothing moves before one measurement shows every node), checked
by ``measurement_guard`` as the locomotion controller does.
Out at the policy's period: ``displacement_commands`` (JointState: actuator names, position = target u [m]), the
topic and message of the locomotion controller; ``/diagnostics``. Safety as the other controllers
(``controller_base``): commands go out only while the collision monitor's all-clear is fresh; a stop drops the run
(cmd_vel refused until it clears).
"""
from __future__ import annotations

import tensegrity_ros_common.parent_watch  # noqa: F401,I001 - first: notes the launcher before the slow imports

import math
import time

import numpy as np
from geometry_msgs.msg import PoseArray, Twist
from sensor_msgs.msg import JointState

from tensegrity_engine.learn.policy import Policy
from tensegrity_ros_common import diagnostics as diag
from tensegrity_ros_common import topics
from tensegrity_ros_common.bounded import NODES_WITHOUT_MODEL, pose_array_bytes
from tensegrity_ros_common.params import check, warn_unknown_overrides

from .controller_base import COMMON_PARAMETERS, ControllerNode
from .measurement_guard import MeasurementGuard
from .messages import rolling_command

PARAMETERS = {
    **COMMON_PARAMETERS,
    "policy": ("", "the policy file (.npz, from bench/train_rolling.py --save)"),
    "cmd_vel_timeout": (0.5, "age [s] of the last cmd_vel beyond which the policy stops (the motors hold)"),
    "min_speed": (0.01, "cmd_vel speeds below this [m/s] mean stop"),
    "heading_tolerance": (45.0, "largest angle [deg] between cmd_vel's direction and the policy's heading"),
    "odom_frame": ("odom", "node_positions may also come in this frame (it coincides with frame_id)"),
}
RATE_MATCH = 1e-6        # relative: a control_rate this close to the policy's is its own


class PolicyController(ControllerNode):
    PARAMETERS = PARAMETERS

    def __init__(self, **kwargs):
        self.policy = None
        super().__init__("policy_controller", **kwargs)
        p = self._p
        path = str(p("policy")).strip()
        if not path:
            raise ValueError("parameter 'policy' is required: a policy file from bench/train_rolling.py --save "
                             "(e.g. config/policies/superball_rolling.npz)")
        self.policy_path = path
        self.policy = Policy.load(path)
        self.rate = self._policy_rate(float(p("control_rate")))
        self.cmd_vel_timeout = check("cmd_vel_timeout", p("cmd_vel_timeout"), 0.0, 60.0, low_open=True)
        self.min_speed = check("min_speed", p("min_speed"), 0.0)
        self.heading_tolerance = math.radians(check("heading_tolerance", p("heading_tolerance"), 0.0, 180.0))
        self.odom_frame = str(p("odom_frame"))
        self.guard = None
        self.X = None                        # last measured node positions (n,3) [m], unseen nodes filled
        self.u = None                        # last command (alpha,) [m]
        self.running = False                 # a fresh cmd_vel asks the policy to roll
        self.t0 = None                       # the controller's time [s] of the policy's first update (its t = 0)
        self.cmd_vel_at = None               # monotonic time [s] of the last cmd_vel that ran it
        self.load_model()
        self.pub_cmd = self.create_publisher(JointState, topics.DISPLACEMENT_COMMANDS, topics.command_qos())
        self.create_subscription(Twist, "cmd_vel", self._on_cmd_vel, topics.command_qos())
        self.subscribe_bounded(PoseArray, topics.NODE_POSITIONS, self._on_nodes, topics.sensor_qos(),
                               lambda: pose_array_bytes(self.model.n_physical if self.model else NODES_WITHOUT_MODEL))
        self.start_timers()
        self.get_logger().info(f"policy {path} ({self.policy.meta['model']['name']}, heading "
                               f"{math.degrees(self.policy.heading):.0f}°, {self.rate:g} Hz)")
        warn_unknown_overrides(self)

    def _policy_rate(self, rate: float) -> float:
        own = 1.0 / self.policy.control_period
        if abs(rate - own) <= RATE_MATCH * own:
            return own
        raise ValueError(f"parameter 'control_rate' {rate:g} Hz: the policy {self.policy_path} was trained at "
                         f"{own:g} Hz (control period {self.policy.control_period:g} s): set control_rate to {own:g}")

    def _set_model(self, model):
        self.policy.check(model, self.policy_path)        # PolicyError (a ValueError) names the file and the fix
        self.guard = MeasurementGuard(model)
        self.model = model

    # --- inputs --------------------------------------------------------------------------------------
    def _on_cmd_vel(self, msg: Twist):
        try:
            heading = rolling_command(msg, self.min_speed)[0]
            if self.model is None:
                raise ValueError(self.model_problem or "no model yet (parameter model, or model_description)")
            off = None if heading is None else abs((heading - self.policy.heading + math.pi) % (2 * math.pi) - math.pi)
            if off is not None and off > self.heading_tolerance:
                raise ValueError(f"direction {math.degrees(heading):.0f}° is {math.degrees(off):.0f}° from the "
                                 f"policy's heading {math.degrees(self.policy.heading):.0f}° (heading_tolerance "
                                 f"{math.degrees(self.heading_tolerance):.0f}°): this policy rolls only that way")
        except ValueError as exc:
            self.reject("cmd_vel", str(exc))
            return
        if heading is not None and self.refused_by_stop("cmd_vel"):
            return
        with self.worker.lock:
            self.running = heading is not None
            self.held = self.held and not self.running
            self.cmd_vel_at = time.monotonic() if self.running else None

    def _on_nodes(self, msg: PoseArray, info):
        if self.model is None:
            return
        X = self.guarded_positions(msg, info, (self.frame_id, self.odom_frame))
        if X is None:
            return
        self.guard.take_relocation()          # the policy acts on where the robot is: nothing to drop
        X = np.array(X, float)
        unseen = ~np.all(np.isfinite(X), axis=1)
        if unseen.any():
            if self.X is None:
                return                        # nothing to fill them from yet
            X[unseen] = self.X[unseen]
        self.X = X
        self.measured_at = time.monotonic()

    # --- the control loop (controller_base: the worker and the safety gate) --------------------------
    def _tick(self):
        if self.cmd_vel_at is not None and time.monotonic() - self.cmd_vel_at > self.cmd_vel_timeout:
            with self.worker.lock:
                self.running, self.cmd_vel_at = False, None
            self.get_logger().warning(f"cmd_vel older than {self.cmd_vel_timeout:g} s: the policy stops")
        super()._tick()

    def _ready(self) -> bool:
        return (self.running and self.X is not None and self.measurement_fresh()
                and not self.guard.hold_reason())

    def _moving(self) -> bool:
        return self.running

    def _drop(self):
        self.running, self.cmd_vel_at = False, None
        return None

    def _compute(self):
        """The policy's targets (alpha,) [m] at the controller's time (None: it failed; reported, held)."""
        t = self.now()
        self.t0 = t if self.t0 is None else self.t0
        return self.checked_inputs(lambda: self.policy.act(self.model, self.X, t - self.t0))

    def _send(self, u) -> bool:
        return self.publish_inputs(u)

    def _status(self) -> tuple:
        values = {"state": "running" if self.running else "idle", "policy": self.policy_path,
                  "policy_heading_deg": math.degrees(self.policy.heading), "policy_time_s": self.policy_time(),
                  "cmd_vel_age_s": float("nan") if self.cmd_vel_at is None else time.monotonic() - self.cmd_vel_at,
                  "max_command_m": float(np.max(np.abs(self.u))) if self.u is not None else 0.0,
                  "safety_reason": self.gate.reason() or "-", "held_by_stop": self.held,
                  "node_positions_publishers": self.guard.publishers()}
        hold = self.holding(self.guard, "safety stop: waiting for a new cmd_vel")
        if hold:
            return (*hold, values)
        if not self.running:
            return diag.OK, "idle: waiting for cmd_vel", values
        return diag.OK, f"running the policy (t = {self.policy_time():.1f} s)", values

    def policy_time(self) -> float:
        """The policy's clock [s]: the controller's time since its first update (0 before)."""
        return 0.0 if self.t0 is None else self.now() - self.t0


def main(args=None):
    from tensegrity_ros_common.node_main import run
    return run(PolicyController, args)


if __name__ == "__main__":
    raise SystemExit(main())
