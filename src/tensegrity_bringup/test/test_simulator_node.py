"""The simulator node with real rclpy and DDS: topics and their contents, rates, commands, services."""
import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseArray, PoseStamped, WrenchStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Header, String
from std_srvs.srv import SetBool, Trigger
from visualization_msgs.msg import MarkerArray

from ros_harness import ros  # noqa: F401  (fixture)
from tensegrity_engine import load_model
from tensegrity_engine.statics.equilibrium import settle
from tensegrity_engine.statics.balance import static_forces
from tensegrity_engine.frames import model_frames
from tensegrity_ros_common import topics
from tensegrity_ros_common.conversions import pose_array_to_positions, pose_to_frame
from tensegrity_ros_common.description import parse
from tensegrity_sim.simulator_node import TensegritySimulator

MODEL = load_model("stacked_manipulator")


class Listener:
    """Collects everything the simulator publishes (last message and arrival times per topic)."""

    def __init__(self, ros):
        import time
        self.clock = time.monotonic
        self.node = ros.plain("listener")
        self.last, self.times, self.all = {}, {}, {}
        sq = topics.sensor_qos()
        for name, typ, qos in [(topics.NODE_POSITIONS, PoseArray, sq), (topics.STRING_STATES, JointState, sq),
                               (topics.JOINT_STATES, JointState, sq), (topics.MARKERS, MarkerArray, 10),
                               (topics.MODEL_DESCRIPTION, String, topics.latched_qos()),
                               (topics.DIAGNOSTICS, DiagnosticArray, 10)] + \
                              [(topics.plate_pose_topic(f), PoseStamped, sq) for f in MODEL.frame_names]:
            self.node.create_subscription(typ, name, lambda m, n=name: self._got(n, m), qos)
        self.cmd = self.node.create_publisher(JointState, topics.MOTOR_COMMANDS, topics.command_qos())
        self.disp = self.node.create_publisher(JointState, topics.DISPLACEMENT_COMMANDS, topics.command_qos())
        self.force = self.node.create_publisher(WrenchStamped, topics.EXTERNAL_FORCE, topics.command_qos())

    def _got(self, name, msg):
        self.last[name] = msg
        self.times.setdefault(name, []).append(self.clock())
        if name == topics.DIAGNOSTICS:
            for st in msg.status:
                self.all.setdefault("diag", []).append(st)

    def diag_values(self):
        st = [s for s in self.all.get("diag", []) if s.name.endswith(": physics")][-1]
        return st, {kv.key: kv.value for kv in st.values}

    def positions(self):
        return pose_array_to_positions(self.last[topics.NODE_POSITIONS])

    def angles(self):
        js = self.last[topics.JOINT_STATES]
        return dict(zip(js.name, js.position))


def start(ros, *params):
    args = []
    for p in params:
        args += ["-p", p]
    sim = ros.node(TensegritySimulator, *args)
    lis = Listener(ros)
    ros.spin_until(lambda: all(k in lis.last for k in (topics.NODE_POSITIONS, topics.STRING_STATES,
                                                        topics.JOINT_STATES, topics.MARKERS,
                                                        topics.MODEL_DESCRIPTION)), 20, "first messages")
    return sim, lis


def test_published_state_matches_the_engine_at_rest(ros):
    sim, lis = start(ros, "paused:=true")
    ros.spin_for(0.3)
    eq = settle(MODEL)
    d = parse(lis.last[topics.MODEL_DESCRIPTION].data)
    assert d["node_names"] == list(MODEL.node_names[:24])
    assert sim.moving_frames == ["C1", "C2"]                 # C0 (ground) goes to TF once, as static
    X = lis.positions()
    # paused at the settled equilibrium: the published positions are the engine's, bit for bit
    assert X.shape == (24, 3) and np.array_equal(X, eq.positions[:24])
    assert lis.last[topics.NODE_POSITIONS].header.frame_id == "world"
    ss = lis.last[topics.STRING_STATES]
    assert list(ss.name) == list(MODEL.string_names)
    assert np.allclose(ss.position, MODEL.string_lengths(eq.positions), rtol=0, atol=1e-12)
    # tensions equal the static string law at rest (velocities are zero): 1e-9 N of 96-262 N is rounding
    _, t_static = static_forces(MODEL, eq.positions)
    assert np.allclose(ss.effort, t_static, rtol=0, atol=1e-9)
    assert np.allclose(ss.velocity, 0.0, atol=1e-12)
    assert lis.angles() == {a: 0.0 for a in MODEL.actuator_names}
    frames = model_frames(MODEL, eq.positions)
    for f in MODEL.frame_names:
        C = pose_to_frame(lis.last[topics.plate_pose_topic(f)].pose)
        assert np.allclose(C, frames[f], atol=1e-12)
    ids = sorted((m.ns, m.id) for m in lis.last[topics.MARKERS].markers)
    assert ids == sorted([("bars", i) for i in range(18)] + [("strings", 0), ("nodes", 0), ("plates", 0)])


def test_rates_real_time_and_tension_law_while_moving(ros):
    sim, lis = start(ros, "experiment.enabled:=true")
    ros.spin_for(0.5)
    for k in lis.times:
        lis.times[k] = []
    t0 = lis.clock()
    sim_t0, skipped0 = sim.sim.t, sim.pacer.skipped_steps
    ros.spin_for(3.0)
    wall = lis.clock() - t0
    rate = len(lis.times[topics.NODE_POSITIONS]) / wall
    mrate = len(lis.times[topics.MARKERS]) / wall
    # 100 Hz and 30 Hz timers: the upper bounds are tight (no extra messages). How far below them a loaded
    # 2-core machine pushes the timers of this test's one executor is the machine's speed, not behaviour
    # (44 Hz seen with four other test runs going): the lower bounds only catch a stalled timer.
    # bench/bench_ros_nodes.py measures the rates.
    assert 5 <= rate <= 115, rate
    assert 2 <= mrate <= 35, mrate
    # the physics follows the wall clock: simulated time plus the time it skipped when it fell more than
    # max_lag behind (counted as overruns) is the wall time, to one tick and max_lag (0.1 s)
    skipped = (sim.pacer.skipped_steps - skipped0) * sim.pacer.dt
    assert abs((sim.sim.t - sim_t0) + skipped - wall) < 0.15
    # published tensions obey the string law with the published lengths, rates and motor states of one
    # tick (same stamp; spinning may stop between the two messages of a tick, so wait for a matching pair)
    ros.spin_until(lambda: lis.last[topics.STRING_STATES].header.stamp == lis.last[topics.JOINT_STATES].header.stamp,
                   5, "string and joint states of the same tick")
    ss, js = lis.last[topics.STRING_STATES], lis.last[topics.JOINT_STATES]
    ang, angd = np.array(js.position), np.array(js.velocity)
    u = MODEL.actuator_sign * MODEL.spool_radius * (ang - MODEL.actuator_zero)
    ud = MODEL.actuator_sign * MODEL.spool_radius * angd
    rest, restd = MODEL.rest_length.copy(), np.zeros(len(MODEL.string_names))
    np.subtract.at(rest, MODEL.actuator_string, u)
    np.subtract.at(restd, MODEL.actuator_string, ud)
    L, Ld = np.array(ss.position), np.array(ss.velocity)
    law = np.maximum(MODEL.string_stiffness_at(rest) * (L - rest) + MODEL.string_damping * (Ld - restd), 0.0)
    assert np.all(L > rest)
    assert np.allclose(ss.effort, law, rtol=1e-9, atol=1e-9)
    assert np.any(np.abs(ang) > 1e-3)                     # the experiment moves the motors


def test_a_run_that_overran_is_not_reported_as_real_time_in_the_next_windows(ros):
    """Issue 36: the physics status said 'running in real time' one window after an overrun, with the
    overruns and skipped simulated time in its own values. Now an overrun keeps it WARN or worse for the
    recent history (10 s), with the figures in the message."""
    import time
    sim, lis = start(ros, "diagnostic_rate:=5.0")
    ros.spin_for(0.5)
    time.sleep(0.4)                          # the process stalls: no tick for 0.4 s > max_lag (0.1 s)
    ros.spin_until(lambda: int(lis.diag_values()[1]["overruns"]) >= 1, 10, "the overrun reported")
    n0 = len(lis.all["diag"]) - 1            # (statuses published before the stall may arrive after it)
    ros.spin_for(2.0)                        # ~10 more diagnostics windows of 0.2 s
    after = [s for s in lis.all["diag"][n0:] if s.name.endswith(": physics")]
    assert len(after) >= 4
    assert all(st.level[0] != 0 for st in after), [st.message for st in after]      # never OK
    for st in after:
        v = {kv.key: kv.value for kv in st.values}
        assert "behind real time: " in st.message and f"{v['overruns_recent']} overruns" in st.message
        assert int(v["overruns_recent"]) >= 1 and float(v["skipped_sim_time_recent_s"]) > 0
    assert float(v["skipped_sim_time_recent_s"]) > 0.2          # the stall (0.4 s) less max_lag (0.1 s)


def test_motor_commands_move_motors_and_bad_ones_are_rejected(ros):
    sim, lis = start(ros)
    h = Header()
    lis.cmd.publish(JointState(header=h, name=["m1", "m4"], position=[0.6, -0.3]))
    ros.spin_until(lambda: abs(lis.angles()["m1"] - 0.6) < 1e-12 and abs(lis.angles()["m4"] + 0.3) < 1e-12,
                   5, "motors at their goals")
    rejected_before = sim.rejected
    for bad in (JointState(name=["m1"], position=[float("nan")]), JointState(name=["m2"], position=[3.5]),
                JointState(name=["zz"], position=[0.1]), JointState(name=["m1", "m2"], position=[0.1])):
        lis.cmd.publish(bad)
    ros.spin_until(lambda: sim.rejected - rejected_before == 4, 5, "four rejections")
    ros.spin_for(0.4)
    # nothing changed: the goals are still held
    assert lis.angles()["m1"] == pytest.approx(0.6, abs=1e-12) and lis.angles()["m2"] == 0.0
    assert "non-finite" in sim.last_rejection or "names" in sim.last_rejection
    lis.disp.publish(JointState(name=["m2"], position=[0.01]))           # 10 mm reeled in
    goal = 0.01 / (MODEL.actuator_sign[1] * MODEL.spool_radius[1]) + MODEL.actuator_zero[1]
    ros.spin_until(lambda: abs(lis.angles()["m2"] - goal) < 1e-12, 5, "displacement goal")
    # diagnostics come once a second: wait for one sent after the rejections (an earlier one counts fewer)
    ros.spin_until(lambda: "diag" in lis.all and int(lis.diag_values()[1]["rejected_inputs"]) >= 4, 5,
                   "diagnostics counting the four rejections")


def test_services_pause_reset_experiment(ros):
    sim, lis = start(ros)
    caller = lis.node
    res = ros.call(caller, SetBool, "/tensegrity_simulator/experiment", SetBool.Request(data=True))
    assert res.success
    ros.spin_for(1.5)
    assert max(abs(a) for a in lis.angles().values()) > 1e-3
    # issue 21 #11: 'true' again while it runs is a no-op (it failed: a restart outside the actuator limits)
    schedule = sim.sim.inputs
    res = ros.call(caller, SetBool, "/tensegrity_simulator/experiment", SetBool.Request(data=True))
    assert res.success and sim.actuation.experiment_on, res.message
    assert sim.sim.inputs is schedule                                  # the running one, not restarted
    res = ros.call(caller, SetBool, "/tensegrity_simulator/pause", SetBool.Request(data=True))
    assert res.success and sim.paused
    ros.spin_for(0.2)
    p1 = lis.positions()
    ros.spin_for(0.3)
    assert np.array_equal(lis.positions(), p1)              # frozen while paused
    ros.call(caller, SetBool, "/tensegrity_simulator/pause", SetBool.Request(data=False))
    ros.spin_for(0.3)
    assert not np.array_equal(lis.positions(), p1)
    res = ros.call(caller, SetBool, "/tensegrity_simulator/experiment", SetBool.Request(data=False))
    assert res.success and not sim.actuation.experiment_on
    res = ros.call(caller, Trigger, "/tensegrity_simulator/reset", Trigger.Request())
    assert res.success
    ros.spin_for(0.3)
    assert lis.angles() == {a: 0.0 for a in MODEL.actuator_names}
    # back at the equilibrium: after reset it stays there (to the settle tolerance)
    assert np.max(np.abs(lis.positions() - settle(MODEL).positions[:24])) < 1e-6


def test_external_force_pushes_a_node_and_bad_forces_are_rejected(ros):
    sim, lis = start(ros)
    x0 = lis.positions()[MODEL.node_index("n22")].copy()
    w = WrenchStamped(header=Header(frame_id="n22"))
    w.wrench.force.x = 40.0
    lis.force.publish(w)
    ros.spin_until(lambda: lis.positions()[MODEL.node_index("n22"), 0] - x0[0] > 0.005, 5, "n22 pushed along +x")
    bad = WrenchStamped(header=Header(frame_id="no_such_node"))
    lis.force.publish(bad)
    nan = WrenchStamped(header=Header(frame_id="n22"))
    nan.wrench.force.y = float("nan")
    lis.force.publish(nan)
    ros.spin_until(lambda: sim.rejected >= 2, 5, "rejections")
    assert np.array_equal(sim.sim.external_forces[MODEL.node_index("n22")], [40.0, 0.0, 0.0])


def test_bad_start_up_parameters_fail_loudly(ros):
    with pytest.raises(Exception, match="neither a model file nor a built-in"):
        ros.node(TensegritySimulator, "-p", "model:=no_such_model")
    # every value is checked before any work (settling, timers): rates, their order, ranges
    for bad, words in [("publish_rate:=-5.0", "'publish_rate' must be in"),
                       ("physics_rate:=0.0", "'physics_rate' must be in"),
                       ("physics_rate:=1e9", "'physics_rate' must be in"),
                       ("publish_rate:=5000.0", "must not exceed 'physics_rate'"),
                       ("diagnostic_rate:=1e-12", "'diagnostic_rate' must be in"),
                       ("marker_rate:=.inf", "'marker_rate' must be in"),
                       ("real_time_factor:=.nan", "'real_time_factor' must be in"),
                       ("max_external_force:=-1.0", "'max_external_force' must be in")]:
        with pytest.raises(ValueError, match=words):
            ros.node(TensegritySimulator, "-p", bad)


def test_unknown_parameter_overrides_are_reported(ros):
    """rclpy ignores overrides that name no declared parameter; a typo must not go unnoticed."""
    from tensegrity_ros_common.params import unknown_overrides
    sim = ros.node(TensegritySimulator, "-p", "physics_rat:=500.0", "-p", "zzz:=1")
    assert unknown_overrides(sim) == ["physics_rat (did you mean 'physics_rate'?)", "zzz"]
    assert sim.dt == 1e-3                                          # the typo changed nothing


def test_an_integer_for_a_float_parameter_is_taken_as_that_number(ros):
    """'physics_rate: 500' in a YAML file or '-p physics_rate:=500' means 500.0 (rclpy alone refuses it)."""
    sim = ros.node(TensegritySimulator, "-p", "physics_rate:=500", "-p", "publish_rate:=50")
    assert sim.dt == 1 / 500 and sim.get_parameter("physics_rate").value == 500.0
