"""Replaying a Motive CSV recording frame by frame, as a live NatNet stream would give it. No ROS."""
from __future__ import annotations

import math

import numpy as np

from tensegrity_mocap.motive.recording import MotiveRecording

__all__ = ["replay"]


def replay(recording: MotiveRecording, rate: float | None = None, include_gaps: bool = False,
           named_unlabeled: bool = False):
    """Yield ``(time [s], labeled names, positions (k,3), unlabeled positions (m,3))`` frame by frame.

    Positions are metres in Motive's frame (Y-up). Only markers seen in the frame are included (like a
    live NatNet frame) unless ``include_gaps`` (then every labeled marker, NaN when occluded, and all
    unlabeled columns). ``named_unlabeled``: the unlabeled columns are yielded as labeled markers under
    their column names ("Unlabeled 1008", after the labeled ones) and the unlabeled array is empty, so a
    consumer can follow Motive's unlabeled ids. ``rate`` [Hz] thins the frames to at most that rate (a
    frame is kept when at least 1/rate has passed since the last kept one); ``None`` yields every frame.
    Nothing sleeps here: the caller paces the output with the yielded times.
    """
    T = recording.n_frames
    names = list(recording.markers)
    arrays = [recording.markers[n] for n in names]
    if named_unlabeled:
        names += list(recording.unlabeled)
        arrays += list(recording.unlabeled.values())
    L = np.stack(arrays, axis=1) if arrays else np.zeros((T, 0, 3))
    U = np.stack(list(recording.unlabeled.values()), axis=1) if recording.unlabeled and not named_unlabeled \
        else np.zeros((T, 0, 3))
    if rate is not None and not (math.isfinite(rate) and rate > 0):
        raise ValueError(f"rate must be positive, got {rate}")
    period = 0.0 if rate is None else 1.0 / rate
    last = -math.inf
    for r, t in enumerate(recording.times):
        if period and t - last < period - 1e-9:
            continue
        last = t
        if include_gaps:
            yield float(t), list(names), L[r].copy(), U[r].copy()
            continue
        seen = np.isfinite(L[r]).all(axis=1)
        useen = np.isfinite(U[r]).all(axis=1)
        yield float(t), [n for n, s in zip(names, seen) if s], L[r][seen], U[r][useen]
