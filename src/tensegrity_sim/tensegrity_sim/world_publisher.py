"""The simulator's world outputs: obstacle markers (latched), contact-force arrows, and for a mobile robot
``nav_msgs/Odometry`` plus TF ``odom`` → body frame (REP-105 names by default: ``odom``, ``base_link``).

The simulator's odometry is its ground truth, so ``odom`` coincides with the fixed frame (``frame_id``): a
static identity transform ``frame_id`` → ``odom`` joins the two TF trees (when the names differ).
"""
from __future__ import annotations

import numpy as np
from geometry_msgs.msg import Pose, Quaternion
from nav_msgs.msg import Odometry
from std_msgs.msg import Header
from visualization_msgs.msg import MarkerArray

from tensegrity_ros_common import topics
from tensegrity_ros_common.body_frame import BodyFrame
from tensegrity_ros_common.conversions import transform_stamped
from tensegrity_ros_common.odometry import body_pose, odometry_message

from .world_markers import contact_arrays, contact_markers, obstacle_markers

ODOMETRY_MODES = ("auto", "always", "never")    # not on/off: YAML reads those as booleans


def odometry_wanted(mode: str, model) -> bool:
    """Whether to publish odometry: ``auto`` for a robot with no fixed node, ``always``, ``never``."""
    if mode not in ODOMETRY_MODES:
        raise ValueError(f"parameter 'odometry' must be one of {list(ODOMETRY_MODES)}, got {mode!r}")
    return mode == "always" or (mode == "auto" and len(model.fixed_nodes) == 0)


class WorldPublisher:
    """Creates the world topics on ``node`` and publishes them for the simulator's state."""

    def __init__(self, node, model, frame_id: str, *, start_positions, odometry: str, odom_frame: str,
                 body_frame: str, plane_size: float, force_scale: float, tf=None, static_tf=None):
        self.node, self.model, self.frame_id = node, model, frame_id
        self.force_scale = float(force_scale)
        self.odom_frame, self.body_frame = odom_frame, body_frame
        self.tf = tf
        self.pub_obstacles = self.pub_contacts = self.pub_odom = self.body = None
        self._contacts_shown = False
        if model.obstacles:
            self.pub_obstacles = node.create_publisher(MarkerArray, topics.OBSTACLE_MARKERS, topics.latched_qos())
            around = BodyFrame(model, start_positions).centroid(start_positions)
            self.pub_obstacles.publish(obstacle_markers(model, self._header(), around, plane_size))
            self.pub_contacts = node.create_publisher(MarkerArray, topics.CONTACT_MARKERS, topics.state_qos())
        if odometry_wanted(odometry, model):
            self.body = BodyFrame(model, start_positions)
            self.pub_odom = node.create_publisher(Odometry, topics.ODOMETRY, topics.state_qos())
            if static_tf is not None and odom_frame != frame_id:
                static_tf.sendTransform([transform_stamped(self._header(), odom_frame, Pose(
                    orientation=Quaternion(w=1.0)))])

    def _header(self) -> Header:
        return Header(stamp=self.node.get_clock().now().to_msg(), frame_id=self.frame_id)

    def describe(self) -> str:
        """'obstacles: ground, step; odometry odom -> base_link' for the start-up log."""
        obstacles = ", ".join(o.name for o in self.model.obstacles) or "none"
        odom = f"odometry {self.odom_frame} -> {self.body_frame}" if self.body else "no odometry"
        return f"obstacles: {obstacles}; {odom}"

    def diagnostics(self, sim) -> dict:
        """Diagnostic values of the world: contacts and the force they carry [N]; the body frame's position
        [m], speed [m/s] and how far the robot is from a rigid copy of its start shape (RMS [m])."""
        out = {}
        if self.model.obstacles:
            c = sim.contacts()
            out.update(contacts=len(c.names), contact_force_n=float(np.linalg.norm(c.force.sum(axis=0))))
        if self.body is not None:
            state = self.body.fit(sim.positions, sim.velocities)
            out.update(body_position_m=" ".join(f"{v:.4f}" for v in state.position),
                       body_speed_m_s=float(np.linalg.norm(state.velocity)), body_fit_rms_m=state.rms_residual)
        return out

    def publish_state(self, X, V, stamp):
        """Odometry and TF odom -> body for node positions X (n, 3) [m] and velocities V [m/s]."""
        if self.body is None:
            return None
        state = self.body.fit(X, V)
        h = Header(stamp=stamp, frame_id=self.odom_frame)
        self.pub_odom.publish(odometry_message(state, h, self.body_frame))
        if self.tf is not None:
            self.tf.sendTransform([transform_stamped(h, self.body_frame, body_pose(state))])
        return state

    def publish_contacts(self, sim, stamp):
        """Contact-force arrows of the simulator's contacts (nothing for a model without obstacles; one
        DELETEALL when the last contact ends)."""
        if self.pub_contacts is None:
            return
        point, force, names = contact_arrays(sim)
        if not len(point) and not self._contacts_shown:
            return
        self.pub_contacts.publish(contact_markers(point, force, names, Header(stamp=stamp, frame_id=self.frame_id),
                                                  self.force_scale))
        self._contacts_shown = bool(len(point))

