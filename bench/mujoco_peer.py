"""MuJoCo peer model of a class-1 tensegrity (rigid rods + tension-only linear strings).

Used as the reference/peer in the tensegrity-engine speed/accuracy benchmark.

Modelling choices (all chosen so that MuJoCo integrates *exactly* the same ODE
as a rigid-rod / linear-string tensegrity model, and nothing else):

* every bar is a free body (``<freejoint>``) located at the bar centre, its local
  z axis along the bar; the inertia is given explicitly (``inertiafromgeom=false``)
  as that of a thin uniform rod: ``m L^2/12`` about the transverse axes and a tiny
  positive value (``AXIAL_INERTIA_RATIO * m L^2/12``) about the long axis, since
  MuJoCo rejects zero principal moments.  String forces act on the rod axis, so
  they never excite the axial spin and the tiny value does not matter;
* the two bar ends are sites at local ``(0, 0, -L/2)`` / ``(0, 0, +L/2)`` named
  ``n<node index>``;
* every string is a spatial tendon between two end sites with ``stiffness=k`` and
  ``springlength="0 L0"``: a dead band ``[0, L0]`` in which the spring force is zero,
  above it the force is ``k (L - L0)`` pulling (tension only);
* contacts and the constraint solver are disabled, and damping, armature,
  frictionloss, air density/viscosity are all zero.

The bodies' ``pos``/``quat`` are the given geometry, so ``qpos0`` (and a fresh
``MjData``) is the input configuration at rest.
"""
from __future__ import annotations

import time

import mujoco
import numpy as np

AXIAL_INERTIA_RATIO = 1e-6  # I_axial / I_transverse (must be > 0 for MuJoCo)


def build_mjcf(positions, bars, bar_masses, strings, stiffness, rest_lengths,
               gravity=(0, 0, 0), timestep=1e-3, integrator="RK4", rod_radius=1e-3) -> str:
    """Return an MJCF XML string for the tensegrity (see module docstring)."""
    P = np.asarray(positions, float)
    bars = np.asarray(bars, int).reshape(-1, 2)
    strings = np.asarray(strings, int).reshape(-1, 2)
    masses = np.broadcast_to(np.asarray(bar_masses, float), (len(bars),))
    k = np.broadcast_to(np.asarray(stiffness, float), (len(strings),))
    L0 = np.broadcast_to(np.asarray(rest_lengths, float), (len(strings),))
    if sorted(bars.ravel().tolist()) != list(range(len(P))):
        raise ValueError("class-1 structure expected: every node in exactly one bar")
    f = lambda *v: " ".join(repr(float(x)) for x in v)  # noqa: E731  (full precision)
    out = [
        '<mujoco model="tensegrity">',
        '  <compiler angle="radian" inertiafromgeom="false"/>',
        f'  <size memory="{max(64, len(bars) // 4)}M"/>',      # large towers exceed the default arena
        f'  <option timestep="{f(timestep)}" gravity="{f(*gravity)}" integrator="{integrator}"'
        ' density="0" viscosity="0">',
        '    <flag contact="disable" constraint="disable"/>',
        '  </option>',
        '  <worldbody>',
    ]
    for b, (i, j) in enumerate(bars):
        d = P[j] - P[i]
        L = np.linalg.norm(d)
        quat = np.zeros(4)
        mujoco.mju_quatZ2Vec(quat, d / L)
        It = masses[b] * L * L / 12.0
        out += [
            f'    <body name="bar{b}" pos="{f(*(0.5 * (P[i] + P[j])))}" quat="{f(*quat)}">',
            f'      <freejoint name="bar{b}"/>',
            f'      <inertial pos="0 0 0" mass="{f(masses[b])}"'
            f' diaginertia="{f(It, It, AXIAL_INERTIA_RATIO * It)}"/>',
            f'      <geom type="cylinder" fromto="0 0 {f(-L / 2)} 0 0 {f(L / 2)}" size="{f(rod_radius)}"'
            ' contype="0" conaffinity="0"/>',
            f'      <site name="n{i}" pos="0 0 {f(-L / 2)}"/>',
            f'      <site name="n{j}" pos="0 0 {f(L / 2)}"/>',
            '    </body>',
        ]
    out += ['  </worldbody>', '  <tendon>']
    for s, (i, j) in enumerate(strings):
        out += [
            f'    <spatial name="s{s}" stiffness="{f(k[s])}" springlength="0 {f(L0[s])}"'
            ' damping="0" frictionloss="0" limited="false">',
            f'      <site site="n{i}"/>',
            f'      <site site="n{j}"/>',
            '    </spatial>',
        ]
    out += ['  </tendon>', '</mujoco>']
    return "\n".join(out)


def build_model(*args, **kwargs) -> mujoco.MjModel:
    """Compile :func:`build_mjcf` (same arguments) into an ``MjModel``."""
    return mujoco.MjModel.from_xml_string(build_mjcf(*args, **kwargs))


def _site_nodes(model):
    """Node index of every site (sites are named ``n<node>``), in site order."""
    return np.array([int(model.site(s).name[1:]) for s in range(model.nsite)])


def _nodes_from_qpos(model, qpos, order):
    """Node positions from one or many qpos vectors (``qpos[..., nq]``) -> ``[..., n, 3]``.

    Computed directly from the free-joint state, so it is valid right after
    ``mj_step`` (when ``data.site_xpos`` still refers to the pre-step state)
    and for rollout state arrays.
    """
    qpos = np.asarray(qpos)
    q = qpos.reshape(qpos.shape[:-1] + (model.nbody - 1, 7))
    quat = q[..., 3:] / np.linalg.norm(q[..., 3:], axis=-1, keepdims=True)
    pos, (w, x, y, z) = q[..., :3], np.moveaxis(quat, -1, 0)
    # body z axis = third column of the rotation matrix of the unit quaternion
    axis = np.stack([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)], -1)
    half = model.site_pos[1::2, 2]  # +L/2 of every bar
    ends = np.stack([pos - half[:, None] * axis, pos + half[:, None] * axis], -2)
    out = np.empty_like(ends.reshape(ends.shape[:-3] + (-1, 3)))
    out[..., order, :] = ends.reshape(out.shape)
    return out


def node_positions(model, data, bars=None) -> np.ndarray:
    """World positions ``(n, 3)`` of all nodes, in the original node order.

    Uses the ``bars`` passed to :func:`build_mjcf` for the node order (sites are
    created in ``bars.ravel()`` order); if omitted it is read from the site names.
    """
    order = _site_nodes(model) if bars is None else np.asarray(bars, int).ravel()
    return _nodes_from_qpos(model, data.qpos, order)


def set_velocities(model, data, node_velocities):
    """Set ``data.qvel`` from node velocities ``(n, 3)`` (rigid-rod consistent part).

    Per bar: centre velocity = mean of end velocities; angular velocity
    ``w = d x (vb - va) / |d|^2`` (no axial spin), expressed in the body frame as
    MuJoCo's free joint expects.  Any bar-stretching component is discarded.
    """
    V = np.asarray(node_velocities, float)
    order = _site_nodes(model)
    X = node_positions(model, data)
    for b in range(model.nbody - 1):
        ia, ib = order[2 * b], order[2 * b + 1]
        d = X[ib] - X[ia]
        w = np.cross(d, V[ib] - V[ia]) / d.dot(d)
        R = np.zeros(9)
        mujoco.mju_quat2Mat(R, data.qpos[7 * b + 3: 7 * b + 7])
        data.qvel[6 * b: 6 * b + 3] = 0.5 * (V[ia] + V[ib])
        data.qvel[6 * b + 3: 6 * b + 6] = R.reshape(3, 3).T @ w
    mujoco.mj_forward(model, data)


def run(model, duration, n_steps_per_call=None, data=None):
    """Integrate for ``duration`` seconds with ``mj_step`` called from Python.

    ``n_steps_per_call=None`` -> one ``mj_step`` per Python call (Python-loop cost
    included); an integer ``N`` uses ``mj_step(m, d, nstep=N)`` (loop inside C).
    Starts from ``data`` if given (else from rest at the model configuration).
    Returns ``(final node positions (n,3), wall seconds, steps)``.
    """
    data = mujoco.MjData(model) if data is None else data
    steps = int(round(duration / model.opt.timestep))
    step = mujoco.mj_step
    t0 = time.perf_counter()
    if n_steps_per_call is None:
        for _ in range(steps):
            step(model, data)
    else:
        done = 0
        while done < steps:
            n = min(n_steps_per_call, steps - done)
            step(model, data, n)
            done += n
    wall = time.perf_counter() - t0
    return node_positions(model, data), wall, steps


def run_rollout(model, duration, n_steps_per_call=None, data=None):
    """Same as :func:`run` but using ``mujoco.rollout.rollout`` (stepping in C).

    The rollout records the full state after every step; ``n_steps_per_call``
    (default 100000) bounds that buffer by chunking the run.
    """
    from mujoco import rollout

    data = mujoco.MjData(model) if data is None else data
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state = np.empty(mujoco.mj_stateSize(model, spec))
    mujoco.mj_getState(model, data, state, spec)
    steps = int(round(duration / model.opt.timestep))
    chunk = min(steps, n_steps_per_call or 100_000)
    buf = np.empty((1, chunk, state.size))
    t0 = time.perf_counter()
    done = 0
    while done < steps:
        n = min(chunk, steps - done)
        rollout.rollout(model, data, state[None], nstep=n, state=buf[:, :n])
        state = buf[0, n - 1].copy()
        done += n
    wall = time.perf_counter() - t0
    mujoco.mj_setState(model, data, state, spec)
    return node_positions(model, data), wall, steps
