"""tensegrity-bringup's controller runs: the nodes of ``--locomotion`` and ``--manipulation``, and a node that
drives the controller for the run (cmd_vel toward ``--heading``, a ``--goal`` point, a ``--plate-goal``)."""
from __future__ import annotations

import math
import time

import numpy as np

LOCOMOTION_NODES = ("simulator", "collision_monitor", "locomotion_controller")
MANIPULATION_NODES = ("simulator", "collision_monitor", "pose_controller")
POLICY_NODES = ("simulator", "collision_monitor", "policy_controller")
CMD_VEL_PERIOD = 0.2      # s: cmd_vel is repeated (the controller stops when it is older than cmd_vel_timeout)
CMD_VEL_SPEED = 0.2       # m/s: above any gait's fastest (0.07 m/s for the 1.5 m six-bar): as fast as the motors allow
MATCH_DELAY = 1.0         # s: after the publisher sees the controller, until the controller surely sees it too


def parse_numbers(option: str, text: str, count: int) -> list:
    """``count`` comma-separated finite numbers from ``text``; ValueError naming ``option`` otherwise."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) != count or not all(math.isfinite(v) for v in values):
        raise ValueError(f"{option} {text!r}: give {count} comma-separated numbers")
    return values


def check_rollable(model: str) -> None:
    """ValueError (saying why and how to fix the file) unless the locomotion controller can roll ``model`` (a
    built-in name or a model file): the bringup exits with it before starting any node, instead of running a
    controller that answers every command with its model's problem."""
    from tensegrity_engine import load_model
    from tensegrity_engine.locomotion import rollable
    try:
        rollable(load_model(model))
    except ValueError as exc:                # CannotRoll and a model file's errors are ValueErrors
        raise ValueError(f"--model {model}: the locomotion controller cannot roll it: {exc}") from None


def policy_file(text: str, cfg) -> str:
    """The policy file ``text`` names: the file itself, or the name of one in the config directory's policies/
    (``superball_rolling`` -> ``<cfg>/policies/superball_rolling.npz``, in the source checkout or installed)."""
    from pathlib import Path
    built_in = Path(cfg) / "policies" / f"{text}.npz"
    return str(built_in) if not Path(text).suffix and built_in.is_file() else text


def check_policy(policy: str, model: str) -> float:
    """The heading [deg] of the policy file ``policy`` after checking it against ``model`` (a built-in name or a
    model file); ValueError (naming the file and the fix) if it cannot run it."""
    from tensegrity_engine import load_model
    from tensegrity_engine.learn.policy import Policy
    return math.degrees(Policy.load(policy, load_model(model)).heading)


def plate_goal_frame(values) -> np.ndarray:
    """x, y, z [m], roll, pitch, yaw [deg] -> the 4x4 world pose, rotation Rz(yaw) Ry(pitch) Rx(roll)."""
    from scipy.spatial.transform import Rotation
    x, y, z, roll, pitch, yaw = values
    C = np.eye(4)
    C[:3, :3] = Rotation.from_euler("ZYX", [yaw, pitch, roll], degrees=True).as_matrix()
    C[:3, 3] = (x, y, z)
    return C


class Driver:
    """A node that sends the run's commands once the controller (the node of that name, not the recorder)
    subscribes: cmd_vel every CMD_VEL_PERIOD toward ``heading`` [deg], or one goal_pose at ``goal`` (x, y)
    [m], or one plate_goal (4x4); ``controller`` the node to wait for (default: the one the command is for)."""

    def __init__(self, namespace: str, heading=None, goal=None, plate_goal=None, frame_id: str = "world",
                 controller=None):
        import rclpy
        from geometry_msgs.msg import PoseStamped, Twist
        from tensegrity_ros_common import topics
        self.node = rclpy.create_node("bringup_driver", namespace="/" + namespace.strip("/"))
        self.frame_id = frame_id
        cq = topics.command_qos()
        self.pub, self.message, self.repeat = None, None, False
        self.controller = controller or ("pose_controller" if plate_goal is not None else "locomotion_controller")
        if heading is not None:
            self.pub = self.node.create_publisher(Twist, "cmd_vel", cq)
            self.message, self.repeat = self._twist(math.radians(heading)), True
        elif goal is not None:
            self.pub = self.node.create_publisher(PoseStamped, "goal_pose", cq)
            self.message = self._pose(np.array([[1, 0, 0, goal[0]], [0, 1, 0, goal[1]], [0, 0, 1, 0], [0, 0, 0, 1.0]]))
        elif plate_goal is not None:
            self.pub = self.node.create_publisher(PoseStamped, "plate_goal", cq)
            self.message = self._pose(plate_goal)
        self.sent = 0
        self.matched_at = None
        self.has_model = False               # the controller's diagnostics show it has its model
        if self.pub is not None:
            from diagnostic_msgs.msg import DiagnosticArray
            self.node.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, self._on_diagnostics, 10)
            self.node.create_timer(CMD_VEL_PERIOD, self._tick)

    def _twist(self, heading: float):
        from geometry_msgs.msg import Twist, Vector3
        return Twist(linear=Vector3(x=CMD_VEL_SPEED * math.cos(heading), y=CMD_VEL_SPEED * math.sin(heading), z=0.0))

    def _pose(self, C):
        from geometry_msgs.msg import PoseStamped
        from std_msgs.msg import Header
        from tensegrity_ros_common.conversions import frame_to_pose
        return PoseStamped(header=Header(frame_id=self.frame_id), pose=frame_to_pose(C))

    def _on_diagnostics(self, msg):
        """Note when the controller reports a model (its status has a 'state' or 'mode'): a command sent before
        is rejected ('no model yet': the model_description may come late on a loaded machine)."""
        for st in msg.status:
            if st.name.endswith(f"{self.controller}: controller") and any(
                    kv.key in ("state", "mode") for kv in st.values):
                self.has_model = True

    def _tick(self):
        """Send once the controller listens and has its model: every tick for cmd_vel, once for a goal.
        Discovery is not symmetric: a message sent the moment this side sees the subscriber can be lost (the
        other side has not matched yet), hence MATCH_DELAY."""
        if not self.has_model:
            return
        now = time.monotonic()
        readers = self.node.get_subscriptions_info_by_topic(self.pub.topic_name)
        if not any(r.node_name == self.controller for r in readers):      # the recorder listens too
            self.matched_at = None
            return
        self.matched_at = self.matched_at or now
        if now - self.matched_at < MATCH_DELAY or (self.sent and not self.repeat):
            return
        self.pub.publish(self.message)
        if not self.sent:
            print("controller command sent", flush=True)
        self.sent += 1


def controller_lines(summary: dict) -> list:
    """Lines for the controllers' last diagnostics in a report summary (none without a controller)."""
    out = []
    for name, v in summary.get("diagnostics", {}).items():
        if not name.endswith(": controller"):
            continue
        if "policy" in v:
            out.append(f"policy controller: {v.get('state')}, policy {v.get('policy')}, its time "
                       f"{v.get('policy_time_s')} s: {v.get('message')}")
        elif "faces_changed" in v:
            out.append(f"locomotion controller: {v.get('state')}, faces changed {v.get('faces_changed')}, on face "
                       f"{v.get('face')}: {v.get('message')}")
        else:
            out.append(f"pose controller: {v.get('mode')}, plate error {_mm(v.get('error_position_m'))} mm, "
                       f"{_deg(v.get('error_angle_rad'))} deg; reachable {v.get('reachable')}: {v.get('message')}")
    return out


def _mm(text) -> str:
    return f"{1e3 * float(text):.2f}" if text not in (None, "nan") else "-"


def _deg(text) -> str:
    return f"{math.degrees(float(text)):.3f}" if text not in (None, "nan") else "-"
