"""MuJoCo peer of a class-2 tensegrity whose bars form chains or trees through ball joints.

The class-1 peer (:mod:`mujoco_peer`) makes every bar a free body. Here, bars that share a node are one
kinematic tree: the first bar of each tree is a free body, every further bar is a child body hinged on
the shared node by a ball joint at its local ``(0, 0, -L/2)``, its local z axis pointing from the joint to
its other end. Inertia, tendons and options are as in the class-1 peer (thin uniform rods, a tiny axial
inertia, linear tension-only tendons between sites ``n<node>``, no contact, constraints or damping), so
MuJoCo integrates the same ODE as the engine's node model with shared nodes (consistent bar mass equals
the rigid-rod inertia without axial spin). Structures with a closed loop of bars need an equality
constraint and are rejected.
"""
from __future__ import annotations

import mujoco
import numpy as np

from mujoco_peer import AXIAL_INERTIA_RATIO


def _trees(bars):
    """Bars in depth-first order per tree: (bar, parent bar or -1, joint node or -1, far node)."""
    node_bars: dict = {}
    for b, (i, j) in enumerate(bars):
        for v in (i, j):
            node_bars.setdefault(v, []).append(b)
    if any(len(v) > 2 for v in node_bars.values()):
        raise ValueError("more than two bars at a node: not a class-2 structure")
    seen, out = set(), []
    for b0 in range(len(bars)):
        if b0 in seen:
            continue
        i, j = bars[b0]
        if len(node_bars[j]) == 1 and len(node_bars[i]) == 2:
            i, j = j, i                                   # start a chain at its free end
        stack = [(b0, -1, i, j)]
        while stack:
            b, parent, base, far = stack.pop()
            seen.add(b)
            out.append((b, parent, base if parent >= 0 else -1, far, base))
            for v in ((far,) if parent >= 0 else (base, far)):
                for c in node_bars[v]:
                    if c != b:
                        if c in seen:
                            raise ValueError("bars form a closed loop: the tree peer cannot model it")
                        ci, cj = bars[c]
                        stack.append((c, b, v, cj if ci == v else ci))
    return out


def _pose(P, base, far):
    d = P[far] - P[base]
    L = float(np.linalg.norm(d))
    q = np.zeros(4)
    mujoco.mju_quatZ2Vec(q, d / L)
    return 0.5 * (P[base] + P[far]), q, L


def build_chain_model(positions, bars, bar_masses, strings, stiffness, rest_lengths, timestep=1e-3,
                      integrator="RK4") -> mujoco.MjModel:
    """The tree peer (module docstring; node sites ``n<node index>``), built through ``mujoco.MjSpec``:
    MuJoCo's XML reader limits body nesting, and a chain of n bars nests n bodies. (An XML version of the
    same builder gave identical motion, 0.0 m over 0.5 s, before it was removed.)"""
    P = np.asarray(positions, float)
    bars = [tuple(int(x) for x in b) for b in np.asarray(bars, int).reshape(-1, 2)]
    masses = np.broadcast_to(np.asarray(bar_masses, float), (len(bars),))
    spec = new_spec(len(bars), timestep, integrator)
    spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    made, world = {}, {}
    for b, parent, joint, far, base in _trees(bars):
        c, q, L = _pose(P, base, far)
        world[b] = (c, q)
        if parent < 0:
            body = spec.worldbody.add_body(pos=c, quat=q)
            body.add_freejoint()
            body.add_site(name=f"n{base}", pos=[0, 0, -L / 2])
        else:
            pc, pq = world[parent]
            R = np.zeros(9)
            mujoco.mju_quat2Mat(R, pq)
            inv, rel = np.zeros(4), np.zeros(4)
            mujoco.mju_negQuat(inv, pq)
            mujoco.mju_mulQuat(rel, inv, q)
            body = made[parent].add_body(pos=R.reshape(3, 3).T @ (c - pc), quat=rel)
            body.add_joint(type=mujoco.mjtJoint.mjJNT_BALL, pos=[0, 0, -L / 2])
        rod_inertia(body, masses[b], L)
        body.add_site(name=f"n{far}", pos=[0, 0, L / 2])
        made[b] = body
    add_tendons(spec, strings, stiffness, rest_lengths)
    return spec.compile()


def new_spec(n_bars, timestep, integrator) -> mujoco.MjSpec:
    """An empty ``MjSpec`` with the peers' options: the time step, no gravity, no contact, the integrator
    (``RK4``, ``Euler``, ``implicitfast``), an arena sized for ``n_bars``."""
    spec = mujoco.MjSpec()
    spec.compiler.degree = False
    spec.option.timestep = timestep
    spec.option.gravity = [0.0, 0.0, 0.0]
    spec.option.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{integrator.upper()}")
    spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    spec.memory = max(64, n_bars // 4) << 20
    return spec


def rod_inertia(body, mass, length):
    """A thin uniform rod's inertia along the body's z axis (tiny axial moment, see :mod:`mujoco_peer`)."""
    It = mass * length * length / 12.0
    body.explicitinertial = True
    body.mass = mass
    body.inertia = [It, It, AXIAL_INERTIA_RATIO * It]
    body.ipos = [0.0, 0.0, 0.0]
    body.iquat = [1.0, 0.0, 0.0, 0.0]


def add_tendons(spec, strings, stiffness, rest_lengths):
    """Linear tension-only tendons ``s<k>`` between the node sites ``n<i>``, ``n<j>`` of every string."""
    k = np.broadcast_to(np.asarray(stiffness, float), (len(strings),))
    L0 = np.broadcast_to(np.asarray(rest_lengths, float), (len(strings),))
    for s, (i, j) in enumerate(np.asarray(strings, int).reshape(-1, 2)):
        t = spec.add_tendon(name=f"s{s}", stiffness=k[s], springlength=[0.0, L0[s]])
        t.wrap_site(f"n{i}")
        t.wrap_site(f"n{j}")


def node_positions(model, data) -> np.ndarray:
    """World positions (n, 3) of the nodes (site ``n<i>`` -> row i), after ``mj_kinematics``."""
    mujoco.mj_kinematics(model, data)
    idx = np.array([int(model.site(s).name[1:]) for s in range(model.nsite)])
    X = np.empty((idx.max() + 1, 3))
    X[idx] = data.site_xpos
    return X
