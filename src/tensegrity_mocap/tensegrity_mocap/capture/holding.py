"""How a captured rig is held, from the capture itself (no ROS): which nodes never move (clamped or pinned:
supports) and which rest on the capture's floor (ground), with the reason for each choice. Used by
:func:`tensegrity_mocap.capture.model.model_from_capture` (``tensegrity-mocap model --supports auto``).

Rules (lengths in m, heights along the capture's up axis, z up after Motive's Y-up is turned):

* **marker noise** sigma [m per axis]: from the second differences of each node marker over consecutive frames
  (``x[k+1] - 2 x[k] + x[k-1]`` has std ``sqrt(6) sigma`` for noise, and a smooth motion of a few mm at a few
  Hz adds only hundredths of a mm at 100+ Hz), robust (median absolute deviation), median over the nodes;
* a node is **still** when the RMS 3-D distance of its marker from its median over *all* frames of the take
  is at most ``threshold`` = STILL_FACTOR x sqrt(3) sigma (a still marker's spread is sqrt(3) sigma), or a
  given ``still_tol``; in every further take (same capture frame) its place must hold a marker (within
  ``threshold``) in at least half of the frames, and a marker must be near it but off it (threshold..
  NEAR_MISS) in at most 1 % of them (the node moved there);
* a node **rests on the capture's floor** when its height above the floor (z = 0 of the capture, or given)
  is at most ``floor_tol``;
* still nodes on the floor stand on it (friction holds them): ground, not a support. Still nodes above the
  floor are held by something: a bar with both ends still is clamped (``type: clamp`` support), a lone
  still end is pinned (``fixed: true``);
* when (nearly) every node is still the take cannot tell a clamped node from a free one: supports need at
  least MIN_MOVING_SHARE of the nodes moving; else none, and the reason says which take would tell.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tensegrity_mocap.axes import y_up_to_z_up

__all__ = ["Holding", "detect_holding", "marker_noise", "STILL_FACTOR", "FLOOR_TOL", "NEAR_MISS"]

#: a still marker's RMS spread is sqrt(3) sigma (+- a few % over 100+ frames); 3x that is far outside what
#: noise gives and still only ~1.5 mm RMS (a 2 mm sway) at 0.3 mm noise
STILL_FACTOR = 3.0
#: a bar end resting on the floor has its marker about a marker radius (6-10 mm) plus the bar's radius
#: (5-15 mm) above it, and the capture's floor calibration is good to a few mm: 30 mm. A rig held in a base
#: is tens of cm up.
FLOOR_TOL = 0.03
#: in a further take, a marker this near a still node's place but off it means the node moved [m]
NEAR_MISS = 0.05
#: smallest stillness threshold [m] (noise-free synthetic takes)
MIN_THRESHOLD = 1e-4
#: supports are told from stillness only when the take shows the free part moving: at least this share of the
#: nodes not still (under a swinging load every free node moves; a static take with one noisy or drifting
#: marker must not turn the others into clamps)
MIN_MOVING_SHARE = 1.0 / 3.0


@dataclass
class Holding:
    """What holds the rig (node names as in the model: n1, n2, ...)."""
    noise_m: float                  # marker noise sigma per axis [m]
    threshold_m: float              # still: RMS spread at most this [m]
    spread_m: dict                  # node -> RMS spread over all frames of the take [m]
    height_m: dict                  # node -> median height above the capture's floor [m]
    floor_z: float                  # the capture's floor: height along its up axis [m]
    floor_tol: float                # nodes this near the floor rest on it [m]
    still: list                     # nodes that never move (every take)
    on_floor: list                  # nodes resting on the capture's floor
    fixed: list                     # still nodes above the floor that are single ends: fixed: true
    clamped: list                   # bars with both ends still above the floor: clamp supports
    reasons: list = field(default_factory=list)
    takes: list = field(default_factory=list)   # sources used for stillness
    moved_in: dict = field(default_factory=dict)  # node -> the further take where it moved or was not seen

    def to_dict(self) -> dict:
        return {"noise_m": self.noise_m, "still_threshold_m": self.threshold_m, "floor_z_m": self.floor_z,
                "floor_tol_m": self.floor_tol, "takes": list(self.takes), "still": list(self.still),
                "on_floor": list(self.on_floor), "fixed": list(self.fixed), "clamped": list(self.clamped),
                "spread_m": dict(self.spread_m), "height_above_floor_m": dict(self.height_m),
                "moved_in": dict(self.moved_in), "reasons": list(self.reasons)}


def marker_noise(tracks) -> float:
    """Marker noise sigma [m per axis] of marker tracks [(T, 3), ...] (module docstring); 0 if unknown."""
    out = []
    for x in tracks:
        x = np.asarray(x, float)
        if len(x) < 3:
            continue
        d2 = x[2:] - 2.0 * x[1:-1] + x[:-2]
        d2 = d2[np.isfinite(d2).all(axis=1)]
        if len(d2) < 3:
            continue
        mad = np.median(np.abs(d2 - np.median(d2, axis=0)), axis=0)
        out.append(float(np.mean(1.4826 * mad / np.sqrt(6.0))))
    return float(np.median(out)) if out else 0.0


def _spread(x) -> float:
    x = np.asarray(x, float)
    x = x[np.isfinite(x).all(axis=1)]
    return float(np.sqrt(np.sum(np.var(x, axis=0)))) if len(x) else np.inf


def _moved_elsewhere(place, markers, threshold) -> str:
    """'' if the node at ``place`` (3,) stays there in a further take's markers (T, K, 3), else why not."""
    d = np.linalg.norm(markers - place, axis=2)
    d = np.where(np.isfinite(d), d, np.inf).min(axis=1, initial=np.inf)        # (T,) nearest marker
    T = max(len(d), 1)
    near, off = np.mean(d <= threshold), np.sum((d > threshold) & (d <= NEAR_MISS)) / T
    if near < 0.5:
        return f"its place holds a marker in only {near:.0%} of the frames"
    if off > 0.01:
        return f"a marker is near but off its place in {off:.1%} of the frames (it moved)"
    return ""


def detect_holding(node_names, tracks, medians, bars, floor_z: float = 0.0, floor_tol: float = FLOOR_TOL,
                   still_tol: float | None = None, further=()) -> Holding:
    """What holds the rig. ``tracks``: per node its marker over all frames of the take (T, 3) [m];
    ``medians`` (n, 3) node marker positions, capture frame z up [m]; ``bars`` [(i, j)] node index pairs;
    ``floor_z`` the capture floor's height [m]; ``further`` [(label, (T, K, 3) all markers, z up)]: more
    takes of the rig in the same capture frame. Rules: module docstring."""
    names = list(node_names)
    sigma = marker_noise(tracks)
    threshold = float(still_tol) if still_tol is not None else max(STILL_FACTOR * np.sqrt(3.0) * sigma, MIN_THRESHOLD)
    spread = {nm: _spread(x) for nm, x in zip(names, tracks)}
    height = {nm: float(medians[i, 2] - floor_z) for i, nm in enumerate(names)}
    on_floor = [nm for nm in names if height[nm] <= floor_tol]
    still = [nm for nm in names if spread[nm] <= threshold]
    moved_in = {}
    for label, markers in further:
        for nm in list(still):
            why = _moved_elsewhere(medians[names.index(nm)], markers, threshold)
            if why:
                moved_in[nm] = f"{label}: {why}"
                still.remove(nm)
    reasons = [f"marker noise {sigma * 1e3:.2f} mm per axis; a node is still when its marker's RMS spread over "
               f"every frame is <= {threshold * 1e3:.2f} mm"
               + (" (--still-tol)" if still_tol is not None else f" ({STILL_FACTOR:g} x sqrt(3) x noise)")]
    if on_floor:
        reasons.append(f"on the capture's floor (z = {floor_z:g} m, within {floor_tol * 1e3:.0f} mm): "
                       + ", ".join(f"{nm} ({height[nm] * 1e3:.0f} mm)" for nm in on_floor) + ": ground plane")
    else:
        low = min(height, key=height.get)
        reasons.append(f"no node rests on the capture's floor (z = {floor_z:g} m): the lowest, {low}, is "
                       f"{height[low] * 1e3:.0f} mm above it (more than {floor_tol * 1e3:.0f} mm): no ground plane")
    fixed, clamped = [], []
    moving = [nm for nm in names if nm not in still]
    if still and len(moving) < MIN_MOVING_SHARE * len(names):
        reasons.append(("every node is still in the take" if not moving else
                        f"only {', '.join(moving)} of {len(names)} nodes move{'s' if len(moving) == 1 else ''}")
                       + ": a take whose free part stands still cannot tell a clamped node from a free one "
                       "(give a take where the rig moves, e.g. under a load, with --still-from, or name the held "
                       "nodes with --fixed): no supports from stillness")
    else:
        held = [nm for nm in still if nm not in on_floor]
        for k, (i, j) in enumerate(bars):
            if names[i] in held and names[j] in held:
                clamped.append(f"b{k + 1}")
        in_clamp = {names[i] for k, (i, j) in enumerate(bars) if f"b{k + 1}" in clamped} | \
                   {names[j] for k, (i, j) in enumerate(bars) if f"b{k + 1}" in clamped}
        fixed = [nm for nm in held if nm not in in_clamp]
        rest = [nm for nm in still if nm in on_floor]
        if clamped:
            reasons.append("clamped (both ends still, above the floor): " + ", ".join(
                f"{b} ({names[bars[int(b[1:]) - 1][0]]} {spread[names[bars[int(b[1:]) - 1][0]]] * 1e3:.2f} mm, "
                f"{names[bars[int(b[1:]) - 1][1]]} {spread[names[bars[int(b[1:]) - 1][1]]] * 1e3:.2f} mm)"
                for b in clamped))
        if fixed:
            reasons.append("pinned (still, above the floor): "
                           + ", ".join(f"{nm} ({spread[nm] * 1e3:.2f} mm)" for nm in fixed))
        if rest:
            reasons.append("still but on the floor (friction holds them, no support): " + ", ".join(rest))
        if moving:
            worst = max(moving, key=lambda nm: spread[nm])
            reasons.append(f"not still: {len(moving)} node(s), in this take up to {spread[worst] * 1e3:.1f} mm RMS "
                           f"({worst})")
    for nm, why in moved_in.items():
        reasons.append(f"{nm} is still in the take but not in {why}")
    return Holding(sigma, threshold, spread, height, float(floor_z), float(floor_tol), still, on_floor, fixed,
                   clamped, reasons, [], moved_in)


def further_take_markers(path, up_axis=None) -> tuple:
    """(label, (T, K, 3) every marker of a Motive CSV take, z up [m]) for :func:`detect_holding`."""
    from tensegrity_mocap.motive import read_motive_csv
    rec = read_motive_csv(path)
    arrays = [np.asarray(a, float) for a in list(rec.markers.values()) + list(rec.unlabeled.values())]
    M = np.stack(arrays, axis=1) if arrays else np.zeros((rec.n_frames, 0, 3))
    up = rec.up_axis if up_axis is None else up_axis
    return str(path), (y_up_to_z_up(M) if up == "y" else M)
