"""MuJoCo peer of a class-1 tensegrity robot on the ground: :mod:`mujoco_peer`'s scene (bars as free bodies
with the inertia of a thin uniform rod, strings as spatial tendons with the dead band ``springlength="0 L0"``)
plus a ground plane and the bars as capsules of their radius touching it, with Coulomb friction μ.

**Matching the contact law** (``tensegrity_engine.dynamics.contact``: per touching point the normal force
``max(0, k δ + c δ̇)``, ``k = m ω²``, ``c = 2 ζ m ω``, ``ω = π / contact_time``, ζ = ``damping_ratio(e)``,
m the touching node's lumped mass; stiction by a tangential spring-anchor of the same k, c capped at μ F_n).
MuJoCo's soft contact (MuJoCo documentation, "Computation > Soft constraints" and the XML reference of
``solref`` / ``solimp``) drives every violated constraint r towards the reference acceleration
``a_ref = −b ṙ − k_r r`` with ``b = 2 / (d_max · timeconst)`` and ``k_r = d(r) / (d_max² · timeconst² ·
dampratio²)``, blended with the free acceleration by the impedance d: ``r̈ = (1 − d) r̈_free + d a_ref``.
With ``solimp`` d = d_min = d_max the contact moves as ``r̈ = (1 − d) r̈_free − 2 ζ ω ṙ − ω² r`` with
``ω = 1 / (timeconst · dampratio)`` and ζ = ``dampratio`` (d·k_r = ω², d·b = 2ζω), whatever the mass behind
it: the mass-scaled spring-damper of our law. So ``solref = (1 / (ζ ω), ζ)``: the same contact frequency and
damping ratio; MuJoCo releases the contact when its force would pull (f >= 0), as our law clamps at zero, so
the restitution matches too: a bar landing flat at 1 m/s in zero gravity rebounds at 0.2038 m/s with 1.436 mm
greatest penetration in MuJoCo (RK4, 0.1 ms) against 0.2036 m/s and 1.436 mm for our law's ODE at ζ = 0.72,
e = 0.2 (``test_contact_mujoco.py``). d = 0.99, not MuJoCo's upper bound 0.9999: there the regularisation
(1 − d)/d of the frictional constraints is so small that the resting SUPERball turned about the vertical at a
steady 0.017 rad/s (energy from the solver), at 0.99 (and 0.9 … 0.98) by 2e-5 rad/s. What cannot match
exactly: (1) MuJoCo's spring acts on the constraint acceleration, so a body at rest sinks in by
(1 − d)/d · g / ω² (0.5 µm) where ours sinks by g / ω² (0.1 mm at contact_time 10 ms), and under gravity it
lets go when k δ + c δ̇ < −g instead of < 0; (2) MuJoCo scales by the true effective mass of the contact, ours
by the lumped node mass (a bar end has an effective mass between m/4 and m, the lumped value is m/2), so
contact durations differ by up to √2 either way; (3) friction: MuJoCo's friction is a soft velocity-level
constraint (no anchor) that creeps under a sustained tangential load; elliptic cones with ``impratio`` 10
make the frictional constraints ten times stiffer than the normal one, and ``noslip_iterations`` (off by
default, it adds cost) removes the creep. (4) spin: our node-based bars have no spin about their axis (contact points move with the axis); MuJoCo's
free bodies have it, and with :mod:`mujoco_peer`'s near-zero axial inertia (harmless without contact:
string forces pass through the axis) friction at the capsule surface spins a bar freely and its ends roll
like ball bearings: the three-bar prism then turned 31° on the ground after landing where ours turned 7°.
The bars here get an axial inertia equal to the transverse one. Spin is excited only by contact friction,
and by Euler's equations of an axisymmetric body the transverse rotations do not depend on the axial
inertia while the spin is zero, so this changes nothing else; rest poses then agree to 3 mm and 1°
(``bench_contact.py``; with axial/transverse 1e-6: 24 mm and 11°, 0.01: 13 mm, 0.1: 5 mm).
Bar–bar contact is off in both (contype 1 / conaffinity 0 for the
bars, 0 / 1 for the ground).

Damping: the structural damping ``−c M v`` of our nodes is, for a rigid rod, ``−c m`` on its centre velocity
and ``−c I`` on its angular velocity; it is set exactly as per-dof ``dof_damping`` of the free joints.
String damping is left out (MuJoCo's tendon damping also acts on a slack tendon, ours only while taut).
"""
from __future__ import annotations

import mujoco
import numpy as np

import mujoco_peer as mp

D_MAX = 0.99                # impedance d: the contact follows its reference (1 % of the free acceleration left)
IMPRATIO = 10.0             # frictional / normal impedance ratio (elliptic cones): stiffer stiction


def contact_solref(omega: float, zeta: float) -> list:
    """MuJoCo ``solref`` (timeconst [s], dampratio) of a contact with frequency ``omega`` [rad/s] and damping
    ratio ``zeta`` > 0 (see the module docstring): ω = 1 / (timeconst · dampratio), ζ = dampratio."""
    if not zeta > 0:
        raise ValueError("solref's (timeconst, dampratio) form needs a damping ratio > 0")
    return [1.0 / (zeta * omega), float(zeta)]


def build_contact_model(model, friction: float, omega: float, zeta: float, timestep: float = 1e-3,
                        integrator: str = "RK4", structural_damping: float = 0.0, noslip: int = 0,
                        ground_height: float = 0.0, ground: bool = True, extra_boxes=()) -> mujoco.MjModel:
    """The MuJoCo scene of an engine ``model`` (class 1, simple strings) on a ground plane z = ``ground_height``
    [m]: capsules of the bar radii, Coulomb ``friction``, contact frequency ``omega`` [rad/s] and damping ratio
    ``zeta``, structural damping c [1/s], ``noslip`` iterations; ``ground`` False leaves the plane out,
    ``extra_boxes`` adds static boxes (name, centre (3,), half extents (3,)) [m] with the ground's contact."""
    xml = mp.build_mjcf(model.positions, model.bars, model.bar_mass, model.segments, model.string_stiffness,
                        model.rest_length, model.gravity, timestep, integrator)
    spec = mujoco.MjSpec.from_string(xml)
    spec.option.disableflags = 0                       # contacts and constraints on
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.option.impratio = IMPRATIO
    spec.option.noslip_iterations = int(noslip)
    for body in spec.bodies[1:]:                       # no free spin of a bar about its axis (module docstring)
        body.inertia = [body.inertia[0]] * 3
    solref = contact_solref(omega, zeta)
    solimp = [D_MAX, D_MAX, 1e-3, 0.5, 2.0]
    for b, g in enumerate(spec.geoms):
        g.type = mujoco.mjtGeom.mjGEOM_CAPSULE
        g.size = [float(model.bar_radius[b]), 0.0, 0.0]
        g.contype, g.conaffinity, g.condim = 1, 0, 3
        g.friction = [float(friction), 0.0, 0.0]
        g.solref, g.solimp = solref, solimp
    statics = [("ground", mujoco.mjtGeom.mjGEOM_PLANE, [0.0, 0.0, float(ground_height)], [0.0, 0.0, 1.0])] \
        if ground else []
    statics += [(name, mujoco.mjtGeom.mjGEOM_BOX, list(c), list(h)) for name, c, h in extra_boxes]
    for name, kind, pos, size in statics:
        spec.worldbody.add_geom(name=name, type=kind, size=size, pos=pos, contype=0, conaffinity=1, condim=3,
                                friction=[float(friction), 0.0, 0.0], solref=solref, solimp=solimp)
    mm = spec.compile()
    _set_structural_damping(mm, structural_damping)
    return mm


def _set_structural_damping(mm, c: float):
    """Per-dof damping of the free joints equal to the nodes' ``−c M v`` on a rigid rod: c m on the
    translations, c I on the rotations (body frame: principal axes)."""
    for b in range(1, mm.nbody):
        dof = mm.body_dofadr[b]
        mm.dof_damping[dof:dof + 3] = c * mm.body_mass[b]
        mm.dof_damping[dof + 3:dof + 6] = c * mm.body_inertia[b]


def data_at(mm, positions, bars, velocities=None) -> mujoco.MjData:
    """MjData with the bars at the node ``positions`` (n,3) [m] (rigid: bar lengths as in the model) and
    optional node ``velocities`` (n,3) [m/s]."""
    d = mujoco.MjData(mm)
    P = np.asarray(positions, float)
    for b, (i, j) in enumerate(np.asarray(bars, int)):
        axis = (P[j] - P[i]) / np.linalg.norm(P[j] - P[i])
        quat = np.zeros(4)
        mujoco.mju_quatZ2Vec(quat, axis)
        d.qpos[7 * b:7 * b + 3] = 0.5 * (P[i] + P[j])
        d.qpos[7 * b + 3:7 * b + 7] = quat
    mujoco.mj_forward(mm, d)
    if velocities is not None:
        mp.set_velocities(mm, d, velocities)
    return d


def trajectory(mm, d, duration: float, every: int = 1, bars=None) -> tuple:
    """Step ``duration`` [s] from ``d``: (times (T,), node positions (T, n, 3)) sampled every ``every`` steps,
    the first sample being the start."""
    steps = int(round(duration / mm.opt.timestep))
    t, X = [d.time], [mp.node_positions(mm, d, bars)]
    for s in range(1, steps + 1):
        mujoco.mj_step(mm, d)
        if s % every == 0:
            t.append(d.time)
            X.append(mp.node_positions(mm, d, bars))
    return np.array(t), np.array(X)
