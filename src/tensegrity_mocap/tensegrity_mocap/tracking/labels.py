"""Marker labels and the marker map, no ROS: how the tracker, the bridge, ``tensegrity-compare`` and
``tensegrity-mocap track`` name markers and map them to nodes.

Marker labels are strings everywhere:

* NatNet: ``"<asset id>:<marker id>"`` from the labeled marker's 32-bit id (asset id in the high 16 bits,
  asset 0 = unlabeled markers), so a glob in ``tracking.exclude`` such as ``2:*`` ignores asset 2; an
  integer in ``marker_map`` (the full id, the old style) is converted the same way;
* Motive CSV: the column name as exported (``Robot:n1``, ``Robot:Marker3``, ``Unlabeled 1008``).
"""
from __future__ import annotations

import numpy as np


def natnet_label(label: str) -> str:
    """A NatNet marker label as the bridge names it, ``"<asset id>:<marker id>"``: a full 32-bit marker id
    ``N`` (the old style) becomes ``f"{N >> 16}:{N & 0xFFFF}"`` (the asset id taken as 16 bits, so the signed
    and the unsigned form of an id are one label), ``"02:3"`` becomes ``"2:3"``; anything else is a
    ValueError."""
    text = str(label).strip()
    if text.lstrip("-").isdigit():
        n = int(text)                               # signed (as NatNet sends it) or unsigned: same label
        return f"{(n >> 16) & 0xFFFF}:{n & 0xFFFF}"
    asset, sep, marker = text.partition(":")
    if sep and asset.strip().isdigit() and marker.strip().isdigit():
        return f"{int(asset)}:{int(marker)}"
    raise ValueError(f"NatNet marker labels are '<asset id>:<marker id>' (asset 0: unlabeled markers) or the "
                     f"full marker id, got {text!r}")


def natnet_labels(frame) -> list:
    """Labels of a NatNet frame's labeled markers, ``"<asset id>:<marker id>"`` (see :func:`natnet_label`;
    the frame's ``model_ids``/``marker_ids`` with the asset id as 16 bits)."""
    ids = np.asarray(frame.labeled_ids, np.int64).ravel()
    return [f"{a}:{m}" for a, m in zip(((ids >> 16) & 0xFFFF).tolist(), (ids & 0xFFFF).tolist())]


class NatNetLabelCache:
    """:func:`natnet_labels` that reuses the last frame's labels while the frame's marker ids are the same
    (a steady stream: nearly every frame; 24 string formats saved a frame). Returns a new list each call."""

    def __init__(self):
        self._ids = None
        self._labels = []

    def __call__(self, frame) -> list:
        ids = np.asarray(frame.labeled_ids, np.int64).tobytes()
        if ids != self._ids:
            self._ids, self._labels = ids, natnet_labels(frame)
        return list(self._labels)


def parse_marker_map(entries, node_names=None, source: str = "csv", model_name: str | None = None) -> dict:
    """{label: node name} from 'label=node' entries; labels unique, nodes among ``node_names`` if given
    (of the model ``model_name``, for the message). Labels are strings: CSV column names as written
    ('Robot:n1', 'Unlabeled 1008'), NatNet labels as '<asset id>:<marker id>' (:func:`natnet_label`; an
    integer is the full marker id). Used by the bridge, tensegrity-compare and tensegrity-mocap track."""
    out = {}
    for e in entries or ():
        e = str(e).strip()
        if not e:
            continue
        label, sep, node = e.rpartition("=")
        label, node = label.strip(), node.strip()
        if not sep or not node or not label:
            raise ValueError(f"marker_map entry {e!r}: use 'label=node'")
        try:
            key = natnet_label(label) if source == "natnet" else label
        except ValueError as exc:
            raise ValueError(f"marker_map entry {e!r}: {exc}") from None
        if key in out:
            raise ValueError(f"marker_map entry {e!r}: label {label!r} is mapped twice")
        if node_names is not None and node not in node_names:
            names = list(node_names)
            whose = f"model '{model_name}'" if model_name else "the model"
            raise ValueError(f"marker_map entry {e!r}: {whose} has no node {node!r} (its nodes: "
                             f"{', '.join(names[:12])}{' ...' if len(names) > 12 else ''}); fix the map or use "
                             "the robot's model")
        out[key] = node
    return out
