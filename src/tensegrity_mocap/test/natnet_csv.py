"""A Motive CSV take (tensegrity_mocap.motive) as a NatNet marker source for the emulator (issue 21 #15;
``natnet_emulator.py --csv TAKE.csv`` streams one at the take's frame rate)."""
from __future__ import annotations

import os
import sys

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:                    # natnet_emulator sits next to this file
    sys.path.insert(0, _HERE)
from natnet_emulator import MarkerSource, nn  # noqa: E402


def _id_pair(cell: str):
    """(asset id, member id) from a CSV ID cell "1:3"; None if it is not one."""
    text = str(cell).strip()
    if text.isdigit() and 0xFFFF < int(text) <= 0xFFFFFFFF:        # a full 32-bit marker id
        return int(text) >> 16, int(text) & 0xFFFF
    asset, sep, member = text.partition(":")
    if sep and asset.isdigit() and member.isdigit() and int(asset) <= 0xFFFF and int(member) <= 0xFFFF:
        return int(asset), int(member)
    return None


def csv_marker_ids(recording) -> tuple:
    """(names, NatNet marker ids) of a take's markers: labeled ones (``Robot:n1``) with their ID cell
    ("1:3": asset 1, member 3; a column without one gets a free asset id per name prefix and its member
    number in order), then the unlabeled ones (``Unlabeled 1008``) with asset 0 and their number."""
    names = list(recording.markers)
    pairs = {n: _id_pair(recording.marker_ids.get(n, "")) for n in names}
    used = {p[0] for p in pairs.values() if p}
    assets, members = {}, {}
    ids = []
    for n in names:
        if pairs[n] is None:
            prefix = n.rpartition(":")[0] or n
            if prefix not in assets:
                assets[prefix] = next(a for a in range(1, 0x10000) if a not in used)
                used.add(assets[prefix])
            members[prefix] = members.get(prefix, 0) + 1
            pairs[n] = (assets[prefix], members[prefix])
        ids.append(nn.make_marker_id(*pairs[n]))
    for n in recording.unlabeled:
        number = n.rpartition(" ")[2]
        ident = str(recording.unlabeled_ids.get(n, "")).strip()
        uid = int(number) if number.isdigit() else int(ident) if ident.isdigit() else 0
        if not 0 < uid <= 0xFFFF:
            raise ValueError(f"{recording.path}: unlabeled marker {n!r}: its number must be 1-65535 to be a "
                             "NatNet marker id")
        names.append(n)
        ids.append(nn.make_marker_id(0, uid))
    return names, np.asarray(ids, np.int64)


def csv_source(recording) -> MarkerSource:
    """A :class:`MarkerSource` streaming a Motive CSV take (a ``MotiveRecording`` or a path) as Motive would:
    one NatNet frame per row with the row's frame number (relative to the first; jumps where the export
    skipped frames), positions in Motive's Y-up frame in metres as the CSV gives them, labeled markers of
    an asset sent flagged occluded in a gap, unlabeled ones left out; the take's rigid bodies (IDs from the
    CSV, else 1, 2, ...) as NatNet rigid bodies. Stream it at ``recording.frame_rate``."""
    if not hasattr(recording, "markers"):
        from tensegrity_mocap.motive import read_motive_csv
        recording = read_motive_csv(recording)
    names, ids = csv_marker_ids(recording)
    arrays = [recording.markers[n] for n in recording.markers] + list(recording.unlabeled.values())
    P = np.stack(arrays, axis=1) if arrays else np.zeros((recording.n_frames, 0, 3))
    rbs = rb_ids = None
    if recording.rigid_bodies:
        rbs = np.stack(list(recording.rigid_bodies.values()), axis=1)
        rb_ids = []
        for j, n in enumerate(recording.rigid_bodies):
            cell = str(recording.rigid_body_ids.get(n, "")).strip()
            rb_ids.append(int(cell) if cell.isdigit() else j + 1)
    src = MarkerSource(P, marker_ids=ids, rigid_bodies=rbs, rigid_body_ids=rb_ids, missing="motive",
                       frame_numbers=recording.frames)
    src.names = names
    return src
