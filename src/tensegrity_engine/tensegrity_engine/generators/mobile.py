"""Mobile robots on the ground as model documents (:mod:`.document`): the three-bar prism of the Lagrangian
paper, a SUPERball-like six-bar with 24 actuated strings, and :func:`on_ground` for any template.

A document on the ground has gravity, a ground plane ``z = 0`` (``obstacles``, model/world.py) and its
lowest bar surface ``lift`` [m] above it; :func:`.document.verify_template` prestresses such a free robot in
zero gravity (the ground, not the strings, carries its weight).
"""
from __future__ import annotations

import fnmatch
import itertools

import numpy as np
from scipy.spatial.transform import Rotation

from tensegrity_engine.generators.document import model_document
from tensegrity_engine.generators.prism import icosahedron, n_prism

GRAVITY = 9.81                  # m/s²


def on_ground(doc: dict, lift: float = 0.0, gravity: float = GRAVITY, friction: float | None = None,
              restitution: float | None = None, contact_time: float | None = None, face_down: bool = False) -> dict:
    """The document moved up so its lowest bar surface (capsules of the bar radius) or node is ``lift`` [m]
    above a ground plane at z = 0, with gravity ``[0, 0, -gravity]`` [m/s²] and the plane's contact
    parameters (None: the schema's defaults, model/world.py). ``face_down``: first turned to lie on its first
    closed string triangle (:func:`_face_down`; a rolling robot rests on a face: the icosahedron as generated
    stands on two bar ends, balanced on an edge)."""
    out = dict(doc)
    if face_down:
        doc = _turned_face_down(doc)
    X = np.array([n["position"] for n in doc["nodes"]], float)
    names = {n["name"]: i for i, n in enumerate(doc["nodes"])}
    low = X[:, 2].min()
    for b in doc.get("bars", []):
        low = min(low, min(X[names[v], 2] for v in b["nodes"]) - b.get("radius", 0.005))
    X[:, 2] += lift - low
    out["nodes"] = [dict(n, position=[float(v) for v in X[i]]) for i, n in enumerate(doc["nodes"])]
    out["gravity"] = [0.0, 0.0, -float(gravity)]
    ground = {"name": "ground", "type": "plane"}
    for key, v in (("friction", friction), ("restitution", restitution), ("contact_time", contact_time)):
        if v is not None:
            ground[key] = float(v)
    out["obstacles"] = [ground]
    return out


def _springs(doc: dict, stiffness: float, damping: float) -> dict:
    """The document's strings as linear springs of constant ``stiffness`` [N/m] and ``damping`` [N·s/m]
    (instead of model_document's EA)."""
    strings = []
    for s in doc["strings"]:
        s = {k: v for k, v in s.items() if k != "EA"}
        s["stiffness"] = float(stiffness)
        if damping:
            s["damping"] = float(damping)
        strings.append(s)
    return dict(doc, strings=strings)


def three_bar_prism(radius: float = 0.15, height: float = 0.3, bar_mass: float = 0.2, bar_radius: float = 0.01,
                    stiffness: float = 500.0, lift: float = 0.0, friction: float | None = None) -> dict:
    """The 3-bar prism of Mirats Tur et al., "Dynamic equations of motion for a 3-bar tensegrity based
    mobile robot" (``papers/mirats-tur-3bar-lagrangian.txt``) resting on its bottom triangle on the ground.

    Topology and names from the paper: bar i runs from its down node ``p1i`` to its up node ``p2i``; nine
    linear cables f = K (‖Δp‖ − L), c1..c3 from the down node of bar i to the up node of bar i−1 (c1 =
    p11–p23, c2 = p12–p21, c3 = p13–p22), c4..c6 the bottom triangle (p11–p12, p12–p13, p11–p13), c7..c9
    the top one (p23–p21, p22–p21, p23–p22). The paper gives no numbers (its figures are lost), so the
    geometry is the class-1 prism at its equilibrium twist (:func:`.prism.n_prism`, triangles of
    circumradius ``radius`` [m], ``height`` [m]; bars 0.417 m at the defaults) and the physical values are
    ours, those of a tabletop robot: tubular aluminium bars (the paper's inertia model) 20/16 mm with end
    fittings, ``bar_mass`` 0.2 kg, ``bar_radius`` 0.01 m; cables as constant springs ``stiffness`` K =
    500 N/m (elastic cord). Gravity 9.81 m/s², ground plane z = 0 (``friction`` None: the schema default)."""
    base = n_prism(3, radius=radius, height=height)
    X = np.array([n["position"] for n in base["nodes"]])
    # paper bar k (0-based) takes our prism's bar -k mod 3: our vertical string runs from bottom i to top
    # i + 1, the paper's from the down node of bar k to the up node of bar k - 1.
    order = [(-k) % 3 for k in range(3)]
    nodes = [X[i] for i in order] + [X[3 + i] for i in order]          # p11, p12, p13, p21, p22, p23
    cables = [(0, 5), (1, 3), (2, 4), (0, 1), (1, 2), (0, 2), (5, 3), (4, 3), (5, 4)]
    groups = ["vertical"] * 3 + ["bottom"] * 3 + ["top"] * 3
    doc = model_document("three_bar_robot", "3-bar prism mobile robot of the Lagrangian paper (Mirats Tur et al.) "
                         "on the ground (generated)", nodes, [(k, 3 + k) for k in range(3)],
                         [(a, b, g) for (a, b), g in zip(cables, groups)], bar_mass, bar_radius, 1.0)
    names = [f"p1{k + 1}" for k in range(3)] + [f"p2{k + 1}" for k in range(3)]
    doc["nodes"] = [dict(n, name=names[i]) for i, n in enumerate(doc["nodes"])]
    doc["bars"] = [dict(b, nodes=[names[k], names[3 + k]]) for k, b in enumerate(doc["bars"])]
    doc["strings"] = [dict(s, name=f"c{k + 1}", path=[names[a], names[b]])
                      for k, (s, (a, b)) in enumerate(zip(doc["strings"], cables))]
    return on_ground(_springs(doc, stiffness, 0.0), lift=lift, friction=friction)


def _face_down(X: np.ndarray, strings) -> np.ndarray:
    """Node positions (n,3) turned so the first closed string triangle faces the ground (its outward normal
    along -z), centred on the z axis."""
    linked = {frozenset((a, b)) for a, b, *_ in strings}
    tri = next(t for t in itertools.combinations(range(len(X)), 3)
               if all(frozenset(p) in linked for p in itertools.combinations(t, 2)))
    c = X.mean(axis=0)
    out = X[list(tri)].mean(axis=0) - c
    R, _ = Rotation.align_vectors([[0.0, 0.0, -1.0]], [out / np.linalg.norm(out)])
    return R.apply(X - c)


def _turned_face_down(doc: dict) -> dict:
    """The document turned by :func:`_face_down` (its first closed string triangle down), unless it already
    stands on three or more nodes (a prism's base) or has no closed string triangle."""
    index = {n["name"]: i for i, n in enumerate(doc["nodes"])}
    X = np.array([n["position"] for n in doc["nodes"]], float)
    strings = [(index[s["path"][0]], index[s["path"][-1]]) for s in doc["strings"]]
    try:
        if np.count_nonzero(X[:, 2] < X[:, 2].min() + 1e-9 * np.ptp(X)) >= 3:
            return doc
        X = _face_down(X, strings)
    except StopIteration:          # no closed string triangle: no face to lie on
        return doc
    return dict(doc, nodes=[dict(n, position=[float(v) for v in X[i]]) for i, n in enumerate(doc["nodes"])])


def superball(bar_length: float = 1.5, bar_mass: float = 3.5, bar_radius: float = 0.031, stiffness: float = 3000.0,
              damping: float = 200.0, spool_radius: float = 0.015, lift: float = 0.0,
              friction: float | None = None) -> dict:
    """A SUPERball-like six-bar robot (the expanded octahedron of :func:`.prism.icosahedron`) lying on a closed
    string triangle on the ground, every one of its 24 strings reeled by its own motor ``m1``..``m24``.

    Defaults from NASA's SUPERball model in NTRT (NASA-Tensegrity-Robotics-Toolkit/NTRTsim,
    ``SuperBallModel.cpp``: rods 1.5 m, 3.1 cm radius, pairs 0.75 m apart, "SUPERball v1.5, mass = 3.5 kg
    per strut", cable stiffness 3000 N/m and damping 200 N·s/m); the later SUPERball v2 model there
    (``SUPERballV2Model.cpp``) has 1.55-1.65 m rods of about 6 kg with motors and end caps and 1600 N/m,
    and Rible.jl's ``examples/robots/superball.jl`` uses 1.7 m, 5 kg, 4000 N/m. Strings are constant
    springs (the robot's cables run through springs); ``spool_radius`` [m], motor angle limits that reel a
    string in or out by up to a fifth of a bar length (±20 rad, 0.3 m at the defaults; strings 0.92 m). Gravity
    9.81 m/s², ground plane z = 0 (``friction`` None: the schema default)."""
    doc = _springs(icosahedron(bar_length, bar_mass, bar_radius, 1.0), stiffness, damping)
    doc = dict(doc, name="superball", description="SUPERball-like six-bar robot, 24 actuated strings, on the "
               "ground (generated)")
    return on_ground(with_motors(doc, 0.2 * bar_length, spool_radius), lift=lift, friction=friction, face_down=True)


def with_motors(doc: dict, reach: float, spool_radius: float = 0.015, strings: list | None = None) -> dict:
    """The document with a motor on every string (or on each of ``strings``), ``mK`` on the document's K-th
    string, reeling it in or out by up to ``reach`` [m] through a spool of ``spool_radius`` [m] (angle limits
    ±reach / spool_radius [rad]); any actuators it had are replaced."""
    if not (np.isfinite(reach) and reach > 0 and np.isfinite(spool_radius) and spool_radius > 0):
        raise ValueError(f"motor reach and spool radius must be positive lengths [m], got {reach}, {spool_radius}")
    chosen = [s["name"] for s in doc["strings"]] if strings is None else list(strings)
    unknown = sorted(set(chosen) - {s["name"] for s in doc["strings"]})
    if unknown:
        raise ValueError(f"no string {', '.join(unknown)} in '{doc['name']}' (its strings: {string_list(doc)})")
    limit = round(reach / spool_radius, 9)
    return dict(doc, actuators=[{"name": f"m{k + 1}", "string": s["name"], "spool_radius": float(spool_radius),
                                 "angle_limits": [-limit, limit]}
                                for k, s in enumerate(doc["strings"]) if s["name"] in set(chosen)])


def motor_strings(doc: dict, spec: str) -> list:
    """The names of the document's strings that ``spec`` selects: ``all``, or a comma list of string names and
    shell patterns (``fnmatch``: ``s*``, ``c[1-3]``), each of which must name at least one string (ValueError
    naming the document's strings otherwise)."""
    names = [s["name"] for s in doc["strings"]]
    words = [w.strip() for w in str(spec).split(",") if w.strip()]
    if not words:
        raise ValueError(f"--motors needs 'all', string names or patterns; '{doc['name']}' has {string_list(doc)}")
    if words == ["all"]:
        return names
    chosen = set()
    for w in words:
        hit = fnmatch.filter(names, w)
        if not hit:
            raise ValueError(f"--motors '{w}' names no string of '{doc['name']}' (its strings: {string_list(doc)})")
        chosen.update(hit)
    return [n for n in names if n in chosen]


def string_list(doc: dict, most: int = 40) -> str:
    """The document's string names, abbreviated after ``most`` (a shell has hundreds)."""
    names = [s["name"] for s in doc["strings"]]
    text = ", ".join(names[:most])
    return text + (f", ... ({len(names)} in all)" if len(names) > most else "")


def default_reach(doc: dict, strings: list) -> float:
    """A motor's default reach [m]: a fifth of the mean bar length (the superball's), at most half the shortest
    of ``strings`` (a motor may not reel in a whole string)."""
    X = {n["name"]: np.array(n["position"], float) for n in doc["nodes"]}
    bars = [np.linalg.norm(X[b["nodes"][0]] - X[b["nodes"][1]]) for b in doc["bars"]]
    lengths = [sum(np.linalg.norm(X[a] - X[b]) for a, b in zip(s["path"], s["path"][1:]))
               for s in doc["strings"] if s["name"] in set(strings)]
    return float(min(0.2 * np.mean(bars), 0.5 * min(lengths)))
