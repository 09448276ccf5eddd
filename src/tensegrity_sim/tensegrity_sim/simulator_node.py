"""tensegrity_simulator: the engine in real time as a ROS 2 node (a drop-in digital twin of the robot).

Physics runs at ``physics_rate`` (fixed-step RK4) paced against the wall clock by a timer at
``publish_rate``; markers go out at ``marker_rate``. Each physics step is split into the RK4 substeps the
model's stiffest mode needs for ``accuracy`` (:mod:`tensegrity_engine.statics.step_accuracy`), at most
``max_substeps``; diagnostics report the effective step and the expected energy error, and WARN (naming the
mode and the step it needs) when the substeps are capped or cannot be computed in real time. See the
README's "ROS 2 interfaces" for topics, services and parameters. The node only converts messages,
parameters and timers into engine calls.
"""
from __future__ import annotations

import tensegrity_ros_common.parent_watch  # noqa: F401,I001 - first: notes the launcher before the slow imports

import time

import numpy as np
from geometry_msgs.msg import PoseArray, PoseStamped, WrenchStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Header, String
from std_srvs.srv import SetBool, Trigger
from visualization_msgs.msg import MarkerArray

from tensegrity_engine import Simulator, SimulationDiverged, load_model
from tensegrity_engine.statics.equilibrium import settle
from tensegrity_engine.frames import model_frames
from tensegrity_engine.dynamics.inputs import u_to_angles
from tensegrity_engine.statics.step_accuracy import plan_substeps
from tensegrity_ros_common import diagnostics as diag
from tensegrity_ros_common import topics
from tensegrity_ros_common.bounded import MAX_BYTES, bounded_subscription
from tensegrity_ros_common.live_params import LiveParameters
from tensegrity_ros_common.params import check, check_rate, declare, warn_unknown_overrides
from tensegrity_ros_common.conversions import (frame_to_pose, joint_positions_by_name, joint_state,
                                               PoseArrayBuilder, transform_stamped)
from tensegrity_ros_common.description import describe
from diagnostic_msgs.msg import DiagnosticArray

from .actuation import Actuation, CommandRejected
from .markers import MarkerBuilder
from .pacer import RealTimePacer
from .realtime_status import RealTimeStatus
from .world_publisher import WorldPublisher

try:  # TF only where tf2_ros exists (ROS installs); the PyPI wheels have no tf2_ros
    from tf2_ros import StaticTransformBroadcaster, TransformBroadcaster
except ImportError:  # pragma: no cover - depends on the installation
    StaticTransformBroadcaster = TransformBroadcaster = None

PARAMETERS = {
    # name: (default, description)
    "model": ("stacked_manipulator", "built-in model name or path to a model YAML file"),
    "frame_id": ("world", "fixed frame of all published positions, poses and markers"),
    "physics_rate": (1000.0, "fixed physics step rate [Hz] (RK4)"),
    "accuracy": (1e-3, "energy-error goal of the RK4 sub-stepping: relative energy error (of the largest "
                 "kinetic energy) per 10 s if all the energy were in the stiffest mode"),
    "max_substeps": (100, "most RK4 substeps per physics step (1 = no sub-stepping); fewer than the stiffest "
                     "mode needs: WARN"),
    "publish_rate": (100.0, "rate of node positions, string and joint states, plate poses [Hz]"),
    "marker_rate": (30.0, "rate of the RViz markers [Hz] (0 = off)"),
    "diagnostic_rate": (1.0, "rate of /diagnostics [Hz]"),
    "real_time_factor": (1.0, "simulated seconds per wall second"),
    "max_lag": (0.1, "wall seconds the physics may fall behind before skipping ahead (reported as overrun)"),
    "string_damping": (True, "string damping on/off"),
    "node_damping": (-1.0, "mass-proportional structural damping [1/s]; negative: the model file's "
                     "structural_damping"),
    "start_from_equilibrium": (True, "settle the model to static equilibrium before starting"),
    "paused": (False, "freeze the simulation (also via the ~/pause service)"),
    "experiment.enabled": (False, "run the paper's phase-shifted sinusoid experiment (also via ~/experiment)"),
    "experiment.period": (7.0, "experiment period [s]"),
    "experiment.amplitudes": ([0.0363, 0.0168], "string displacement amplitude per stage [m]"),
    "experiment.ramp": (1.0, "smooth start of the experiment [s]"),
    "motor_speed_limit": (3.0, "motor speed when moving to a commanded goal [rad/s]"),
    "max_external_force": (1000.0, "largest accepted external force magnitude [N]"),
    "node_marker_radius": (0.015, "radius of the node spheres in RViz [m]"),
    "tension_colour_max": (0.0, "tension drawn fully red [N] (0 = 1.5 x the largest tension seen)"),
    "publish_tf": (True, "broadcast plate frames on TF where tf2_ros is available (fixed plates as static TF)"),
    "tf_prefix": ("", "prefix of the TF frame names: plates, odom and body frame (e.g. 'robot1/' for several "
                  "robots)"),
    "odometry": ("auto", "nav_msgs/Odometry on 'odom' and TF odom -> body frame: 'auto' (only for a robot with "
                 "no fixed node), 'always', 'never'"),
    "odom_frame": ("odom", "odometry frame (REP-105); the simulator's odometry is exact, so it coincides with "
                   "frame_id (static TF frame_id -> odom_frame)"),
    "body_frame": ("base_link", "body frame of a mobile robot: mass centroid, axes fitted (Kabsch) to the start "
                   "configuration"),
    "obstacle_plane_size": (10.0, "width of the square drawn for a plane obstacle in RViz [m]"),
    "contact_force_scale": (0.01, "length of the contact-force arrows in RViz per newton [m/N]"),
}
EXPERIMENT = ("experiment.period", "experiment.amplitudes", "experiment.ramp")   # used at the experiment's start
LIVE = ("paused", "experiment.enabled", *EXPERIMENT)      # settable at run time; the others are fixed


class TensegritySimulator(Node):
    # numba kernels node_main.run() loads (or, on the first start, compiles) before the node is made, so
    # the first tick does not compile them (about a minute, deaf to Ctrl-C) and a Ctrl-C then stops at once
    ENGINE_KERNELS = ("dynamics",)

    def __init__(self, **kwargs):
        super().__init__("tensegrity_simulator", **kwargs)
        declare(self, PARAMETERS, live=LIVE)
        p = self._p
        self.model = load_model(p("model"))
        rates = self._checked_rates()
        self._start_physics(rates)
        self.live = LiveParameters(self, {
            "paused": (bool, self._set_paused), "experiment.enabled": (self._check_enable, self._set_experiment),
            **{name: (lambda v, name=name: self._check_experiment(name, v), lambda v: None) for name in EXPERIMENT}})
        self._create_publishers()
        self._start_tf()
        self._start_world()
        self._create_command_interfaces()
        self.pub_desc.publish(String(data=describe(self.model, positions=self.start_positions)))
        if p("experiment.enabled"):
            self._set_experiment(True)
        self.pacer.start(time.monotonic())
        self._start_timers(rates)
        self._log_start(rates)
        warn_unknown_overrides(self)

    def _checked_rates(self) -> dict:
        """The rates [Hz] and real-time factor, after checking every numeric parameter (ValueError names it)."""
        p = self._p
        rates = {k: check_rate(k, p(k)) for k in ("physics_rate", "publish_rate", "diagnostic_rate")}
        if rates["publish_rate"] > rates["physics_rate"]:
            raise ValueError(f"parameter 'publish_rate' ({rates['publish_rate']:g} Hz) must not exceed "
                             f"'physics_rate' ({rates['physics_rate']:g} Hz)")
        rates["real_time_factor"] = check("real_time_factor", p("real_time_factor"), 0.0, 1e4, low_open=True)
        check_rate("marker_rate", p("marker_rate"), off_ok=True)
        check("max_lag", p("max_lag"), 0.0, 10.0, low_open=True)
        check("motor_speed_limit", p("motor_speed_limit"), 0.0, low_open=True)
        check("max_external_force", p("max_external_force"), 0.0)
        check("node_marker_radius", p("node_marker_radius"), 0.0, 1.0, low_open=True)
        check("tension_colour_max", p("tension_colour_max"), 0.0)
        check("accuracy", p("accuracy"), 0.0, 1.0, low_open=True)
        check("max_substeps", p("max_substeps"), 1, 1e6)
        check("obstacle_plane_size", p("obstacle_plane_size"), 0.0, 1e4, low_open=True)
        check("contact_force_scale", p("contact_force_scale"), 0.0, 100.0)
        return rates

    def _start_physics(self, rates: dict):
        """The start state, the RK4 substep plan, the simulator, actuation, pacing and the node's counters."""
        p, m = self._p, self.model
        self.dt = 1.0 / rates["physics_rate"]
        self.start_positions = start_positions(m) if p("start_from_equilibrium") else m.positions
        node_damping = None if p("node_damping") < 0 else float(p("node_damping"))
        # the RK4 substeps the stiffest mode (about the start state) needs for the accuracy goal
        self.plan = plan_substeps(m, self.dt, self.start_positions, accuracy=float(p("accuracy")),
                                  max_substeps=int(p("max_substeps")), damping=bool(p("string_damping")),
                                  node_damping=node_damping)
        self.sim = Simulator(m, integrator="rk4", dt=self.plan.effective_step, damping=bool(p("string_damping")),
                             node_damping=node_damping)
        self.sim.reset(self.start_positions)
        for text in self.sim.check_start():     # a start deep inside an obstacle: ModelError here, at start-up
            self.get_logger().warning(text)
        self.safe_state = (self.sim.positions, self.sim.velocities, self.sim.t)
        self._last = (self.sim.positions, self.sim.forces()[0])
        self.actuation = Actuation(m, speed_limit=float(p("motor_speed_limit")))
        self.pacer = RealTimePacer(self.dt, rates["real_time_factor"], float(p("max_lag")))
        self.realtime = RealTimeStatus(self.dt, 1.0 / rates["publish_rate"], wall_start=time.monotonic())
        self.frame_id = str(p("frame_id"))
        self.markers = MarkerBuilder(m, self.frame_id, float(p("node_marker_radius")), float(p("tension_colour_max")))
        self.paused = bool(p("paused"))
        self.failure = ""                 # set when the physics diverged (paused until ~/reset)
        self.rejected = 0
        self.last_rejection = ""
        self.stats = {"ticks": 0, "compute": 0.0, "max_compute": 0.0, "steps": 0, "published": 0}
        self._window = (time.monotonic(), time.process_time(), 0.0, 0)

    def _create_publishers(self):
        m, sq = self.model, topics.sensor_qos()
        self.pub_desc = self.create_publisher(String, topics.MODEL_DESCRIPTION, topics.latched_qos())
        self.pub_nodes = self.create_publisher(PoseArray, topics.NODE_POSITIONS, sq)
        self.pose_array = PoseArrayBuilder()
        self.pub_strings = self.create_publisher(JointState, topics.STRING_STATES, sq)
        self.pub_joints = self.create_publisher(JointState, topics.JOINT_STATES, sq)
        self.pub_plates = [self.create_publisher(PoseStamped, topics.plate_pose_topic(f), sq) for f in m.frame_names]
        self.pub_markers = self.create_publisher(MarkerArray, topics.MARKERS, topics.state_qos())
        self.pub_diag = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, topics.state_qos())

    def _start_tf(self):
        """TF of the moving plates (each publish) and, once and latched, of the fixed ones (the ground C0)."""
        m = self.model
        fixed = set(m.fixed_nodes.tolist())
        self.moving_frames = [f for f, nodes in zip(m.frame_names, m.frame_nodes)
                              if not set(m.physical_index[nodes].tolist()) <= fixed]
        self.tf_prefix = str(self._p("tf_prefix"))
        self.tf = self._static_tf = None
        if TransformBroadcaster is not None and self._p("publish_tf"):
            self.tf = TransformBroadcaster(self)
            self._static_tf = StaticTransformBroadcaster(self)
            still = [f for f in m.frame_names if f not in self.moving_frames]
            if still:
                frames0 = model_frames(m, self.start_positions)
                self._static_tf.sendTransform([self._transform(self._header(), f, frames0[f]) for f in still])

    def _start_world(self):
        """Obstacle markers (latched, once), contact arrows and, for a mobile robot, odometry and its TF."""
        p = self._p
        self.world = WorldPublisher(
            self, self.model, self.frame_id, start_positions=self.start_positions, odometry=str(p("odometry")),
            odom_frame=self.tf_prefix + str(p("odom_frame")), body_frame=self.tf_prefix + str(p("body_frame")),
            plane_size=float(p("obstacle_plane_size")), force_scale=float(p("contact_force_scale")),
            tf=self.tf, static_tf=self._static_tf)

    def _create_command_interfaces(self):
        cq = topics.command_qos()
        for topic, on_command in ((topics.MOTOR_COMMANDS, self._on_motor_command),
                                  (topics.DISPLACEMENT_COMMANDS, self._on_displacement_command)):
            bounded_subscription(self, JointState, topic, on_command, cq, MAX_BYTES["commands"], self._reject)
        self.create_subscription(WrenchStamped, topics.EXTERNAL_FORCE, self._on_external_force, cq)
        self.create_service(Trigger, "~/reset", self._srv_reset)
        self.create_service(SetBool, "~/pause", self._srv_pause)
        self.create_service(SetBool, "~/experiment", self._srv_experiment)

    def _start_timers(self, rates: dict):
        self.create_timer(1.0 / rates["publish_rate"], self._tick)
        marker_rate = float(self._p("marker_rate"))
        if marker_rate > 0:
            self.create_timer(1.0 / marker_rate, self._publish_markers)
        self.create_timer(1.0 / rates["diagnostic_rate"], self._publish_diagnostics)

    def _log_start(self, rates: dict):
        m = self.model
        self.get_logger().info(
            f"model '{m.name}' ({m.n_physical} nodes, {len(m.bar_names)} bars, {len(m.string_names)} strings, "
            f"{len(m.actuator_names)} actuators); physics {rates['physics_rate']:g} Hz, publishing "
            f"{rates['publish_rate']:g} Hz in frame '{self.frame_id}'; TF {'on' if self.tf else 'off (no tf2_ros)'}")
        self.get_logger().info(f"RK4: {self.plan.describe()}; {self.world.describe()}")
        if self.plan.capped:
            self.get_logger().warning(self._capped_message())

    def _p(self, name):
        return self.get_parameter(name).value

    # --- the real-time loop --------------------------------------------------------------------------
    def _tick(self):
        c0 = time.perf_counter()
        if not self.paused and not self.failure:
            steps = self.pacer.steps_due(time.monotonic())
            self.realtime.record_lag(self.pacer.last_lag)
            if steps:
                try:
                    self.sim.advance(steps * self.dt)
                except SimulationDiverged as exc:
                    self._fail(str(exc))
                self.pacer.done(steps, time.perf_counter() - c0)
                self.stats["steps"] += steps
        X, Xd = self.sim.positions, self.sim.velocities
        if not self.failure:
            self.safe_state = (X, Xd, self.sim.t)
        self._publish_states(X, Xd)
        dt = time.perf_counter() - c0
        self.stats["ticks"] += 1
        self.stats["compute"] += dt
        self.stats["max_compute"] = max(self.stats["max_compute"], dt)

    def _fail(self, reason: str):
        X, V, t = self.safe_state
        self.sim.reset(X, V, t)
        self.failure = reason
        self.get_logger().error(f"simulation stopped: {reason}; holding the last safe state (call ~/reset)")

    def _header(self) -> Header:
        return Header(stamp=self.get_clock().now().to_msg(), frame_id=self.frame_id)

    def _publish_states(self, X, Xd):
        """Everything but the markers, for node positions X (n,3) [m] and velocities Xd (n,3) [m/s]."""
        m = self.model
        h = self._header()
        tensions, _ = self.sim.forces()
        self._last = (X, tensions)
        self.pub_nodes.publish(self.pose_array(X[:m.n_physical], h))
        seg = m.segments
        e = X[seg[:, 1]] - X[seg[:, 0]]
        seg_len = np.linalg.norm(e, axis=1)
        seg_rate = np.einsum("ij,ij->i", e, Xd[seg[:, 1]] - Xd[seg[:, 0]]) / np.maximum(seg_len, 1e-12)
        nc = len(m.string_names)
        lengths = np.bincount(m.segment_string, seg_len, minlength=nc)
        rates = np.bincount(m.segment_string, seg_rate, minlength=nc)
        self.pub_strings.publish(joint_state(h, m.string_names, lengths, rates, tensions))
        if len(m.actuator_names):
            u, ud = self.sim.inputs(self.sim.t)
            ang = u_to_angles(m, u)
            self.pub_joints.publish(joint_state(h, m.actuator_names, ang, ud / (m.actuator_sign * m.spool_radius)))
        if len(m.frame_names):
            frames = model_frames(m, X)
            for name, pub in zip(m.frame_names, self.pub_plates):
                pub.publish(PoseStamped(header=h, pose=frame_to_pose(frames[name])))
            if self.tf is not None and self.moving_frames:
                self.tf.sendTransform([self._transform(h, name, frames[name]) for name in self.moving_frames])
        self.world.publish_state(X, Xd, h.stamp)
        self.stats["published"] += 1

    def _transform(self, header, name, C):
        return transform_stamped(header, self.tf_prefix + name.lower(), frame_to_pose(C))

    def _publish_markers(self):
        X, tensions = self._last                      # the state of the last published tick
        h = self._header()
        self.pub_markers.publish(self.markers.build(X, tensions, h))
        self.world.publish_contacts(self.sim, h.stamp)

    def _mode_needs(self) -> str:
        """'mode 36 of 36 (68.17 Hz, mostly string sc14), 428 rad/s, needs RK4 steps of 0.000187 s'"""
        pl = self.plan
        return f"{pl.mode.name}, {pl.mode.omega:.4g} rad/s, needs RK4 steps of {pl.step_needed:.3g} s"

    def _capped_message(self) -> str:
        pl = self.plan
        return (f"physics inaccurate: stiffest {self._mode_needs()} ({pl.needed} substeps per "
                f"{pl.dt:.3g} s step) for an energy drift of {pl.accuracy:g} per {pl.horizon:g} s; max_substeps caps "
                f"it at {pl.substeps} (step {pl.effective_step:.3g} s): energy drift up to {pl.expected_error:.2g} "
                f"per {pl.horizon:g} s")

    def physics_demand(self) -> float:
        """Compute seconds per wall second the physics needs to keep real time (measured cost per step);
        0 until measured."""
        return self.pacer.step_cost * self.pacer.rtf / self.dt

    def _publish_diagnostics(self):
        now, cpu = time.monotonic(), time.process_time()
        w0, c0, comp0, ticks0 = self._window
        wall = max(now - w0, 1e-9)
        load = (self.stats["compute"] - comp0) / wall
        cpu_use = (cpu - c0) / wall
        self._window = (now, cpu, self.stats["compute"], self.stats["ticks"])
        tick_rate = (self.stats["ticks"] - ticks0) / wall
        lag = self.pacer.lag(now) if not self.paused else 0.0
        values = {
            "sim_time_s": self.sim.t, "paused": self.paused, "experiment": self.actuation.experiment_on,
            "tick_rate_hz": tick_rate, "compute_load": load, "real_time_margin": 1.0 - load,
            "process_cpu": cpu_use, "max_tick_compute_ms": 1e3 * self.stats["max_compute"],   # in this window
            "lag_ms": 1e3 * lag, "overruns": self.pacer.overruns,
            "skipped_sim_time_s": self.pacer.skipped_steps * self.dt,
            "rejected_inputs": self.rejected, "last_rejection": self.last_rejection or "-",
            "max_bar_length_error": float(np.max(np.abs(self.model.bar_length_error(self.sim.positions)))),
        }
        pl = self.plan
        demand = self.physics_demand()
        values.update({
            "physics_step_s": self.dt, "effective_step_s": pl.effective_step, "substeps": pl.substeps,
            "substeps_needed": pl.needed, "stiffest_mode": pl.mode.name, "stiffest_mode_rad_s": pl.mode.omega,
            "omega_h": pl.omega_h, "expected_energy_error_per_10s": pl.expected_error,    # horizon 10 s
            "physics_demand": demand,
        })
        values.update(self.world.diagnostics(self.sim))
        rt = self.realtime.assess(now, self.pacer.overruns, self.pacer.skipped_steps, self.pacer.steps, lag)
        values.update(rt.values)
        level, msg = self._physics_status(rt, demand)
        self.stats["max_compute"] = 0.0
        st = diag.status(f"{self.get_fully_qualified_name()}: physics", self.model.name, level, msg, values)
        self.pub_diag.publish(diag.array(self._header(), [st]))

    def _physics_status(self, rt, demand: float):
        """Level and message: a failure, else the worst of the real-time verdict (rt), the physics demand
        (compute seconds per wall second) and a capped substep plan; the real-time figures always shown."""
        pl = self.plan
        if self.failure:
            return diag.ERROR, f"stopped: {self.failure}"
        if demand > 1.0:
            hint = (f": {pl.substeps} RK4 substeps per step for the stiffest {self._mode_needs()}; lower "
                    f"real_time_factor, or raise accuracy or lower max_substeps (less accurate)"
                    if pl.substeps > 1 else "")
            return max(rt.level, diag.WARN), (f"cannot keep up with real time (physics needs {demand:.0%} of "
                                              f"real time; {rt.figures}){hint}")
        if rt.level != diag.OK:
            return rt.level, rt.message
        if pl.capped:
            return diag.WARN, f"{self._capped_message()}; {rt.message}"
        return diag.OK, "paused" if self.paused else rt.message

    # --- inputs --------------------------------------------------------------------------------------
    def _reject(self, what: str, reason: str):
        self.rejected += 1
        self.last_rejection = f"{what}: {reason}"
        self.get_logger().warning(f"rejected {what}: {reason}", throttle_duration_sec=1.0)

    def _on_motor_command(self, msg: JointState):
        self._command(msg, "motor command", self.actuation.goal_angles)

    def _on_displacement_command(self, msg: JointState):
        self._command(msg, "displacement command", self.actuation.goal_displacements)

    def _command(self, msg, what, apply):
        if self.failure:
            self._reject(what, "simulation stopped; call ~/reset first")
            return
        try:
            idx, values = joint_positions_by_name(msg, self.model.actuator_names)
            apply(self.sim, idx, values)
        except (ValueError, CommandRejected) as exc:
            self._reject(what, str(exc))
            return
        if self._p("experiment.enabled"):
            self.set_parameters([_param("experiment.enabled", False)])

    def _on_external_force(self, msg: WrenchStamped):
        f = np.array([msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z])
        node = msg.header.frame_id
        m = self.model
        if node not in m.node_names[:m.n_physical]:
            self._reject("external force", f"header.frame_id {node!r} is not a node; nodes are "
                                            f"{', '.join(m.node_names[:m.n_physical])}")
            return
        if not np.all(np.isfinite(f)) or np.linalg.norm(f) > float(self._p("max_external_force")):
            self._reject("external force", f"force {f.tolist()} N is not finite or exceeds max_external_force")
            return
        self.sim.set_external_force(node, f)
        self.get_logger().info(f"external force on {node}: {f.tolist()} N")

    # --- services and parameters ----------------------------------------------------------------------
    def _srv_reset(self, request, response):
        self.sim.external_forces[:] = 0.0
        self.sim.reset(self.start_positions)
        self.actuation.zero(self.sim)
        self.safe_state = (self.sim.positions, self.sim.velocities, self.sim.t)
        self.failure = ""
        self.pacer.start(time.monotonic())
        if self._p("experiment.enabled"):
            self._set_experiment(True)
        response.success, response.message = True, "reset to the equilibrium, inputs zero, external forces off"
        return response

    def _srv_pause(self, request, response):
        self.set_parameters([_param("paused", bool(request.data))])
        response.success, response.message = True, "paused" if self.paused else "running"
        return response

    def _srv_experiment(self, request, response):
        result = self.set_parameters([_param("experiment.enabled", bool(request.data))])[0]
        response.success = result.successful
        response.message = result.reason or ("experiment on" if request.data else "experiment off")
        return response

    def _check_experiment(self, name: str, value):
        """``value`` of experiment parameter ``name`` if the experiment, with the others as they will be, fits
        the actuators' limits from the current inputs (it is used at the experiment's next start); else
        ValueError naming it."""
        values = [value if k == name else self.live.value(k) for k in EXPERIMENT]
        try:
            self.actuation.experiment(self.sim, *values)
        except CommandRejected as exc:
            raise ValueError(f"parameter '{name}': {exc}") from None
        return value

    def _check_enable(self, on) -> bool:
        """``experiment.enabled``: True only if the experiment can start now."""
        if on and not self.actuation.experiment_on:
            if self.failure:
                raise ValueError("simulation stopped; call ~/reset first")
            self._check_experiment("experiment.enabled", on)
        return bool(on)

    def _set_paused(self, paused: bool):
        if paused == self.paused:
            return
        self.paused = paused
        if not paused:
            self.pacer.rebase(time.monotonic())

    def _set_experiment(self, on: bool):
        if on and self.actuation.experiment_on:      # already running: a no-op, not a restart from its
            return                                   # start (which would step the actuators)
        if on:
            if self.failure:
                raise CommandRejected("simulation stopped; call ~/reset first")
            self.actuation.start_experiment(self.sim, float(self._p("experiment.period")),
                                            list(self._p("experiment.amplitudes")), float(self._p("experiment.ramp")))
        elif self.actuation.experiment_on:
            self.actuation.stop_experiment(self.sim)
        self.get_logger().info(f"experiment {'on' if on else 'off'} at t = {self.sim.t:.3f} s")


def start_positions(model) -> np.ndarray:
    """The settled start state (n, 3) [m]: standing on its obstacles, if it has any. A robot with no fixed
    node and no obstacle under gravity has no static equilibrium (the relaxation would let it fall the whole
    time): it starts from its prestress equilibrium (its weight cancelled) where the model file puts it."""
    if len(model.fixed_nodes) == 0 and np.any(model.gravity_forces) and not model.obstacles:
        return settle(model, external=-np.asarray(model.gravity_forces)).positions
    return settle(model).positions


def _param(name, value):
    from rclpy.parameter import Parameter
    return Parameter(name, value=value)


def main(args=None):
    from tensegrity_ros_common.node_main import run
    return run(TensegritySimulator, args)


if __name__ == "__main__":
    raise SystemExit(main())
