"""A model held by fixed nodes, compared with a capture (no ROS): the fixed nodes must be where their markers
are. A capture in another frame than the model file (a lab rig clamped in a base, captured in the room's
frame) is put on the model by the fixed part's markers (``tensegrity-compare --register-fixed``), or the
comparison stops and says so, instead of comparing a different place (issue #35, item 3).

Lengths in m. The fixed nodes' measured place is their median over the experiment's samples."""
from __future__ import annotations

import numpy as np

from tensegrity_mocap.compare.core import CompareError, Experiment, simulated_positions
from tensegrity_mocap.tracking.registration import fixed_part_transform

__all__ = ["FIXED_TOL", "fixed_part_offsets", "check_fixed_part"]

#: a clamp holds its bar ends to well under a mm and markers scatter 0.1-0.5 mm: fixed nodes more than 10 mm
#: from their markers are in another frame (or the model's base is not the rig's)
FIXED_TOL = 0.010


def fixed_part_offsets(exp: Experiment, model) -> tuple:
    """(fixed node indices, measured median (n, 3) [m], distance [m] of each fixed node from where the model
    puts it (NaN: never seen)) for a model with fixed physical nodes."""
    fixed = np.asarray(model.fixed_nodes, int)
    fixed = fixed[fixed < model.n_physical]
    with np.errstate(all="ignore"):
        med = np.array([np.nanmedian(exp.nodes[:, i], axis=0) if np.isfinite(exp.nodes[:, i, 0]).any()
                        else np.full(3, np.nan) for i in range(model.n_physical)])
    where = simulated_positions(model, exp, np.asarray(model.positions, float)[None])[0][0][:model.n_physical]
    return fixed, med, where, np.linalg.norm(med[fixed] - where[fixed], axis=1)


def check_fixed_part(exp: Experiment, model, register: bool = False) -> Experiment:
    """Nothing for a model without fixed nodes, or with them within FIXED_TOL of their markers. Else with
    ``register``: the experiment mapped (in place) by the rigid transform from the fixed part's markers onto
    the model's fixed nodes (:func:`~tensegrity_mocap.tracking.registration.fixed_part_transform`), with a
    note; without: CompareError naming the nodes, the distance and the options."""
    fixed, med, where, d = fixed_part_offsets(exp, model)
    if not len(fixed) or not np.isfinite(d).any() or np.nanmax(d) <= FIXED_TOL:
        return exp
    names = ",".join(model.node_names[i] for i in fixed)
    far = f"the fixed nodes {names} are {np.nanmax(d):.3f} m from their markers"
    if not register:
        raise CompareError(f"{exp.source}: {far} (median over the samples): the capture is in another frame than "
                           "the model file (a model with fixed nodes is simulated where its file puts them); "
                           "register with --register-fixed (a rigid transform from their markers onto the model's "
                           "fixed nodes) or --capture-transform REPORT.json (the report of 'tensegrity-mocap model' "
                           "of this capture)")
    found = fixed_part_transform(where, fixed, med)
    if found is None:
        raise CompareError(f"{exp.source}: {far}, and too few of its nodes are seen to register it (need 3)")
    T, rms, how = found
    exp.nodes = exp.nodes @ T[:3, :3].T + T[:3, 3]
    exp.notes.append(f"--register-fixed: {far}; the experiment was put on the model by {how} (rotation "
                     f"{np.degrees(np.arccos(np.clip((np.trace(T[:3, :3]) - 1) / 2, -1, 1))):.1f} deg, shift "
                     f"{np.linalg.norm(T[:3, 3]):.3f} m); their median positions are then {rms * 1e3:.2f} mm RMS from "
                     "the model's fixed nodes")
    return exp
