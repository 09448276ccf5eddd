"""Goal mode's route (any-axis rolling): the sequence of tips to the resting place nearest a goal, chosen over
every edge of every face the robot can reach, not along a fixed rolling axis nor only the edges facing the goal.

A rolling robot rests only on its faces, so the places its centre of mass can rest form a lattice (about a
tip's travel apart: 0.45-0.6 m for the six-bar) and a goal is reached only as near as the lattice allows. From
where the robot lies, a breadth-first beam search over the planner's tips (each planned once per face and edge,
:class:`.planner.GaitPlanner`; the next tip from where the one before is expected to end, ``TipStep.end``)
finds the fewest tips to a resting place within the tolerance or, where none lies within ``depth`` tips, the
resting place nearest the goal. The controller takes the first tip of that route and, on the next face, keeps
to the rest of it (:func:`follow_route`, from where the robot now lies: the predictions drift by millimetres a
tip) unless a new search finds a better one (:func:`better`); a beam search from each face alone may lose a
route that first moves away and go back and forth. Pure geometry on the planned tips; no dynamics."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tensegrity_engine.locomotion.planner import CannotRoll
from tensegrity_engine.locomotion.support import centre_of_mass, face_of

BEAM = 48           # resting places kept per depth (nearest the goal first)
SLACK = 6           # tips searched beyond the fewest the distance needs (a detour over the lattice) ...
DEPTH = 12          # ... at most: long routes' predictions drift by centimetres (searching at least 12 tips
#                     everywhere sent the robot round loops of 7-10 tips that missed and ended 'blocked')
GRID = 0.02         # m: two resting places on the same face this near count as one; a route must end this much
#                     nearer than another to be worth a tip more
MARGIN = 0.15       # of the tolerance: routes aim this much inside it (a landing predicted 0.150 m from a goal
#                     with a 0.15 m tolerance came to rest 0.153 m from it)


@dataclass(frozen=True)
class Route:
    """``first`` the tip to take (None: staying is best), ``tips`` how many to the landing, ``landing`` (2,) [m]
    the centre of mass expected there, ``distance`` [m] from it to the goal, ``faces`` the face after each tip."""
    first: object
    tips: int
    landing: np.ndarray
    distance: float
    faces: tuple = ()


def better(a: Route, b: Route | None, tolerance: float) -> bool:
    """True if route ``a`` beats ``b``: of routes ending within ``tolerance`` [m] the one with fewer tips, else
    the one ending nearer (by more than GRID)."""
    if b is None:
        return True
    ina, inb = a.distance <= tolerance, b.distance <= tolerance
    if ina != inb:
        return ina
    return a.tips < b.tips if ina else a.distance < b.distance - GRID


def fewest_tips(distance: float, travel: float) -> int:
    """The tips a straight route needs to a goal ``distance`` [m] away with tips of ``travel`` [m] (at least 1)."""
    if not (travel > 0 and math.isfinite(travel)):
        return 1
    return max(1, int(math.ceil(distance / travel)))


def route_to(planner, X, goal, tolerance: float, fewest: int, width: int = BEAM, depth: int = DEPTH) -> Route:
    """The route from the robot at X (n, 3) [m] to the resting place nearest ``goal`` (2,) [m]: the fewest tips
    to one within ``tolerance`` [m] (less MARGIN) within ``fewest`` + SLACK tips (at most DEPTH), else the
    nearest one within ``fewest`` + 1 tips (no detour for a place that is only nearer); ``width`` places kept
    per tip, nearest the goal; at most ``depth`` tips. Tips over every edge of every face (:meth:`.planner.GaitPlanner.plan_options`,
    each edge planned once); a face from which nothing tips ends its branch."""
    model = planner.model
    goal, aim = np.asarray(goal, float), (1.0 - MARGIN) * tolerance
    c = centre_of_mass(model, X)[:2]
    best = Route(None, 0, c, float(np.hypot(*(c - goal))))
    if best.distance <= aim:
        return best
    frontier, seen = [(None, np.asarray(X, float), ())], {place(face_of(model, X), c)}
    for k in range(1, min(depth, fewest + SLACK) + 1):
        found = []
        for first, Xk, faces in frontier:
            for step in options(planner, Xk, goal):
                end = centre_of_mass(model, step.end)[:2]
                key = place(step.face_to, end)
                if key not in seen:
                    seen.add(key)
                    route = Route(first or step, k, end, float(np.hypot(*(end - goal))), faces + (step.face_to,))
                    found.append((route, step.end))
        if not found:
            break
        found.sort(key=lambda f: f[0].distance)
        if found[0][0].distance <= aim or k <= fewest + 1:
            best = found[0][0] if better(found[0][0], best, aim) else best
        if best.distance <= aim:
            break
        frontier = [(r.first, Xk, r.faces) for r, Xk in found[:width]]
    return best


def follow_route(planner, X, goal, faces) -> Route | None:
    """The route from the robot at X (n, 3) [m] over the faces ``faces`` in turn (the rest of a route taken
    before), predicted afresh from X; None if a tip to the next face no longer works."""
    model = planner.model
    goal, first, Xk = np.asarray(goal, float), None, np.asarray(X, float)
    for face in faces:
        step = next((s for s in options(planner, Xk, goal) if tuple(s.face_to) == tuple(face)), None)
        if step is None:
            return None
        first, Xk = first or step, step.end
    if first is None:
        return None
    end = centre_of_mass(model, Xk)[:2]
    return Route(first, len(faces), end, float(np.hypot(*(end - goal))), tuple(faces))


def options(planner, X, goal) -> list:
    """Every workable tip from the face at X (all edges, nearest the goal's direction first); [] if none."""
    c = centre_of_mass(planner.model, X)[:2]
    try:
        return planner.plan_options(X, math.atan2(goal[1] - c[1], goal[0] - c[0]), np.pi)
    except CannotRoll:
        return []


def place(face, c) -> tuple:
    """A resting place's key: the face and the centre of mass on a GRID [m]."""
    return tuple(face), tuple(np.round(np.asarray(c) / GRID).astype(int))


def next_route(planner, X, goal, tolerance: float, fewest: int, previous: Route | None = None,
               depth: int = DEPTH, width: int = BEAM) -> Route:
    """:func:`route_to` (at most ``depth`` tips, ``width`` places kept per tip), unless the rest of ``previous`` (the route whose first tip brought the robot to the
    face it lies on at X) is as good: then that rest, so the robot keeps to a route that first moves away."""
    fresh = route_to(planner, X, goal, tolerance, fewest, width, depth)
    if previous is None or len(previous.faces) < 2 or face_of(planner.model, X) != tuple(previous.faces[0]):
        return fresh
    kept = follow_route(planner, X, goal, previous.faces[1:])
    aim = (1.0 - MARGIN) * tolerance
    if kept is None:
        return fresh
    if kept.distance <= tolerance:      # it still ends within the tolerance (its prediction may have drifted
        #                                 past the aim): kept unless a shorter route ends within the aim
        return fresh if fresh.distance <= aim and fresh.tips < kept.tips else kept
    return fresh if better(fresh, kept, aim) else kept
