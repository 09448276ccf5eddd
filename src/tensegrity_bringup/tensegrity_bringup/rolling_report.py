"""The report of a rolling run (``tensegrity-bringup --locomotion --report DIR``): what the run is judged by,
from the recorded node positions. The centre of mass's path over the ground against the commanded heading or
goal, the faces the robot rested on, the distance and mean speed, the smallest bar-bar clearance over time:
``rolling.png`` and the ``rolling`` entry of summary.json (lengths in m, times in s, angles in deg)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tensegrity_engine.locomotion.bar_clearance import BarClearance
from tensegrity_engine.locomotion.closed_loop import REST
from tensegrity_engine.locomotion.support import angle_between, centre_of_mass, face_of, ground_frame, has_left

MIN_HEADING_DISTANCE = 0.01   # m: below this net displacement the direction moved is noise (no heading error)


def is_rolling_robot(model) -> bool:
    """A robot lying free on obstacles under gravity (no fixed node): the kind the locomotion controller rolls
    (a level floor, a slope, boxes)."""
    if len(model.fixed_nodes):
        return False
    try:
        ground_frame(model)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class RollingTrack:
    """``t`` (T,) [s] from the first recorded positions; ``com`` (T, 3) [m] centre of mass; ``clearance`` (T,)
    [m] smallest bar-bar clearance; ``faces`` [(time [s], face)] the faces rested on, the start face first."""
    t: np.ndarray
    com: np.ndarray
    clearance: np.ndarray
    faces: list


def rested_faces(model, t, X, rest: float = REST) -> list:
    """[(time [s] first touched, face)] of the faces the robot rested on, in order: the start face, then each
    face of at least three ground nodes, one of the previous face's lifted, held for ``rest`` [s] (the rule of
    the engine's closed-loop runs, ``locomotion.closed_loop``)."""
    out = [(float(t[0]), face_of(model, X[0]))]
    candidate, since = out[0][1], float(t[0])
    for tk, Xk in zip(t[1:], X[1:]):
        face = face_of(model, Xk)
        if face != candidate:
            candidate, since = face, float(tk)
        elif has_left(face, out[-1][1]) and tk - since >= rest:
            out.append((since, face))
    return out


def rolling_track(rec, model) -> RollingTrack:
    """The track of the recorded ``node_positions`` (sorted by stamp); ValueError with fewer than two."""
    rows = sorted(rec["positions"], key=lambda r: r[0])
    if len(rows) < 2:
        raise ValueError("the recording has fewer than two node_positions messages: no rolling track")
    t = np.array([r[0] for r in rows]) - rows[0][0]
    X = model.from_physical(np.array([r[2] for r in rows], float))
    bars = BarClearance(model)
    com = np.array([centre_of_mass(model, x) for x in X])
    return RollingTrack(t, com, np.array([bars.min(x) for x in X]), rested_faces(model, t, X))


def rolling_summary(track: RollingTrack, heading_deg=None, goal=None, controller: dict | None = None) -> dict:
    """The run's numbers: distance (net displacement of the centre of mass over the ground), path length, mean
    speed (distance / duration), faces, smallest bar-bar clearance; toward a ``heading_deg`` the progress along
    it, the heading error and the sideways offset; to a ``goal`` (x, y) [m] the distance left."""
    xy = track.com[:, :2]
    d = xy[-1] - xy[0]
    duration = float(track.t[-1] - track.t[0])
    k = int(np.argmin(track.clearance))
    out = {"duration_s": duration, "start_xy_m": xy[0].tolist(), "end_xy_m": xy[-1].tolist(),
           "displacement_m": d.tolist(), "distance_m": float(np.hypot(*d)),
           "path_length_m": float(np.sum(np.hypot(*np.diff(xy, axis=0).T))),
           "mean_speed_m_s": float(np.hypot(*d) / duration) if duration > 0 else 0.0,
           "faces_changed": len(track.faces) - 1, "faces": [list(f) for _, f in track.faces],
           "face_times_s": [t for t, _ in track.faces],
           "min_bar_clearance_m": float(track.clearance[k]), "min_bar_clearance_time_s": float(track.t[k])}
    if heading_deg is not None:
        h = math.radians(heading_deg)
        u = np.array([math.cos(h), math.sin(h)])
        side = (xy - xy[0]) @ np.array([-u[1], u[0]])
        out.update(heading_deg=float(heading_deg), progress_m=float(d @ u), sideways_m=float(side[-1]),
                   max_sideways_m=float(np.max(np.abs(side))),
                   heading_error_deg=(math.degrees(angle_between(math.atan2(d[1], d[0]), h))
                                      if np.hypot(*d) >= MIN_HEADING_DISTANCE else None))
    if goal is not None:
        g = np.asarray(goal, float)
        out.update(goal_xy_m=g.tolist(), start_goal_distance_m=float(np.hypot(*(g - xy[0]))),
                   final_goal_distance_m=float(np.hypot(*(g - xy[-1]))))
    if controller:
        out["controller"] = {key: controller.get(key) for key in ("state", "faces_changed", "detours", "message")}
    return out


def plot_track(track: RollingTrack, summary: dict, path, monitor=None):
    """rolling.png: the path with the command, the clearances over time (``monitor``: the collision monitor's
    [(t [s] from the track's start, clearance [m])])."""
    from tensegrity_engine.plots.rolling import plot_rolling_run
    face_t = [t for t, _ in track.faces[1:]]
    title = (f"{summary['distance_m']:.2f} m in {summary['duration_s']:.0f} s (mean "
             f"{100 * summary['mean_speed_m_s']:.1f} cm/s), {summary['faces_changed']} faces changed")
    heading = summary.get("heading_deg")
    return plot_rolling_run(path, track.t, track.com, track.clearance, face_t,
                            heading=None if heading is None else math.radians(heading),
                            goal=summary.get("goal_xy_m"), monitor=monitor, title=title)


def report_lines(summary: dict) -> list:
    """The lines the bringup prints for the ``rolling`` entry of a report summary (none without one)."""
    r = summary.get("rolling")
    if not r:
        return []
    line = (f"rolling: {r['faces_changed']} faces changed (rested on, from node_positions), "
            f"{r['distance_m']:.2f} m from the start (path {r['path_length_m']:.2f} m) in {r['duration_s']:.1f} s, "
            f"mean speed {100 * r['mean_speed_m_s']:.1f} cm/s")
    if r.get("heading_deg") is not None:
        err = r["heading_error_deg"]
        line += (f"; toward {r['heading_deg']:g} deg: {r['progress_m']:.2f} m along it, {r['sideways_m']:+.2f} m "
                 f"sideways, heading error {'-' if err is None else format(err, '.1f')} deg")
    if r.get("goal_xy_m") is not None:
        line += f"; goal {r['final_goal_distance_m']:.2f} m away (was {r['start_goal_distance_m']:.2f} m)"
    return [line, f"smallest bar-bar clearance {1e3 * r['min_bar_clearance_m']:.1f} mm at "
                  f"{r['min_bar_clearance_time_s']:.1f} s"]
