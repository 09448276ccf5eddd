"""MuJoCo peer of a class-2 tensegrity written the way a MuJoCo user would: free bodies joined by
``connect`` equalities.

Every bar is a free body as in the class-1 peer (:mod:`mujoco_peer`: thin uniform rod inertia with a tiny
axial moment, end sites, linear tension-only tendons, no contact, damping or drag). A node shared by two bars
(a class-2 ball joint) gets one site per bar end; the tendons attach to the first (``n<node>``), and a
``connect`` equality ties each further site (``n<node>_<k>``) to it. The constraints are solved by MuJoCo's
Newton solver on a sparse Jacobian, so the cost grows with the bars, not with the chain length as in the
kinematic-tree peer (:mod:`mujoco_chain_peer`, whose joint-space inertia of a chain is dense).

This is softer physics than ours and than the tree peer: an equality is a stiff, damped spring
(``solref`` = time constant and damping ratio, ``solimp`` = impedance), so the joined sites drift apart
while the structure moves. :func:`joint_opening` measures that gap; the benchmark reports it as the peer's
accuracy next to its node deviation from our engine. Closed loops of bars are fine here.
"""
from __future__ import annotations

import mujoco
import numpy as np

from mujoco_chain_peer import add_tendons, new_spec, rod_inertia

# time constant 2 steps of 1 ms (MuJoCo's advice: timeconst >= 2 timesteps), critically damped; impedance
# 0.999-0.9999. Measured on the 50-bar class-2 tower over 0.5 s: the defaults (0.02 s; 0.9-0.95) open the
# joints by 6 mm, (0.002 s; 0.9-0.95) by 0.16 mm, (0.002 s; 0.99-0.999) by 15 µm, these by 1.5 µm (node
# deviation from our engine 14 mm, 0.5 mm, 45 µm, 4.4 µm), at about the same cost per step
SOLREF = (0.002, 1.0)
SOLIMP = (0.999, 0.9999, 0.001, 0.5, 2.0)


def build_connect_model(positions, bars, bar_masses, strings, stiffness, rest_lengths, timestep=1e-3,
                        integrator="RK4", solref=SOLREF, solimp=SOLIMP) -> mujoco.MjModel:
    """The connect-equality peer (module docstring), built through ``mujoco.MjSpec``."""
    P = np.asarray(positions, float)
    bars = np.asarray(bars, int).reshape(-1, 2)
    masses = np.broadcast_to(np.asarray(bar_masses, float), (len(bars),))
    spec = new_spec(len(bars), timestep, integrator)
    spec.option.solver = mujoco.mjtSolver.mjSOL_NEWTON
    spec.option.jacobian = mujoco.mjtJacobian.mjJAC_SPARSE
    seen: dict = {}
    extra = []
    for b, (i, j) in enumerate(bars):
        d = P[j] - P[i]
        L = float(np.linalg.norm(d))
        q = np.zeros(4)
        mujoco.mju_quatZ2Vec(q, d / L)
        body = spec.worldbody.add_body(pos=0.5 * (P[i] + P[j]), quat=q)
        body.add_freejoint()
        rod_inertia(body, masses[b], L)
        for v, z in ((int(i), -L / 2), (int(j), L / 2)):
            k = seen.get(v, 0)
            name = f"n{v}" if k == 0 else f"n{v}_{k}"
            body.add_site(name=name, pos=[0.0, 0.0, z])
            if k:
                extra.append((f"n{v}", name))
            seen[v] = k + 1
    for a, b in extra:
        spec.add_equality(type=mujoco.mjtEq.mjEQ_CONNECT, objtype=mujoco.mjtObj.mjOBJ_SITE, name1=a, name2=b,
                          solref=list(solref), solimp=list(solimp))
    add_tendons(spec, strings, stiffness, rest_lengths)
    return spec.compile()


def _sites(model):
    names = [model.site(s).name for s in range(model.nsite)]
    node = np.array([int(nm[1:].split("_")[0]) for nm in names])
    primary = np.array(["_" not in nm for nm in names])
    return node, primary


def node_positions(model, data) -> np.ndarray:
    """World positions (n, 3) of the nodes (each node's first site ``n<i>``), after ``mj_kinematics``."""
    mujoco.mj_kinematics(model, data)
    node, primary = _sites(model)
    X = np.empty((node.max() + 1, 3))
    X[node[primary]] = data.site_xpos[primary]
    return X


def joint_opening(model, data) -> float:
    """Largest distance [m] between a joined site and its node's first site (0 for a rigid joint)."""
    mujoco.mj_kinematics(model, data)
    node, primary = _sites(model)
    if primary.all():
        return 0.0
    first = np.empty((node.max() + 1, 3))
    first[node[primary]] = data.site_xpos[primary]
    return float(np.linalg.norm(data.site_xpos[~primary] - first[node[~primary]], axis=1).max())
