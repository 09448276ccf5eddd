"""A synthetic lab take (tensegrity_mocap.synthetic) as a NatNet marker source for the emulator (tests and
demos; ``natnet_emulator.py --six-bar SEED`` streams one)."""
from __future__ import annotations

import os
import sys

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:                    # natnet_emulator sits next to this file
    sys.path.insert(0, _HERE)
from natnet_emulator import MarkerSource, nn  # noqa: E402


def natnet_source(capture, model_ids=None, up_axis: str = "y") -> MarkerSource:
    """A :class:`MarkerSource` streaming a ``tensegrity_mocap.synthetic.SyntheticCapture`` as Motive would.

    Every marker of the capture (nodes, strays, payload) is a labeled-list entry: unlabeled ones (all
    strays; node markers unless the capture is labeled) with model id 0 and their "Unlabeled <id>" number
    as marker id (a new one after each gap), absent while occluded; labeled node markers with model id
    ``model_ids["Robot"]`` (member = node index + 1), payload markers with ``model_ids["payload"]``, both
    sent flagged occluded while hidden. The payload's pose is rigid body ``model_ids["payload"]``.
    Frame numbers jump at the capture's dropped frames. Positions in Motive's Y-up frame (``up_axis="z"``:
    as in the capture).
    """
    from tensegrity_mocap.axes import z_up_to_y_up
    mids = {"Robot": 1, "payload": 2, **(model_ids or {})}
    conv = z_up_to_y_up if up_axis == "y" else (lambda P: np.asarray(P, float))
    if up_axis not in ("y", "z"):
        raise ValueError(f"up_axis must be 'y' or 'z', got {up_axis!r}")
    node = np.asarray(capture.marker_node)
    T, K = capture.unlabeled_ids.shape
    ids = np.zeros((T, K), np.int64)
    pay = np.flatnonzero(node == -2)
    for k in range(K):
        if capture.labeled and node[k] >= 0:
            ids[:, k] = nn.make_marker_id(mids["Robot"], int(node[k]) + 1)
    for j, k in enumerate(pay):
        ids[:, k] = nn.make_marker_id(mids["payload"], j + 1)
    uid = np.asarray(capture.unlabeled_ids, np.int64)
    if uid.max(initial=0) > 0xFFFF:
        raise ValueError("unlabeled ids above 65535 do not fit a NatNet marker id")
    ids = np.where(uid > 0, uid, ids)
    rbs = rb_ids = None
    if capture.payload_pose is not None:
        from scipy.spatial.transform import Rotation
        pose = np.asarray(capture.payload_pose, float)
        R = Rotation.from_quat(pose[:, 3:]).as_matrix()
        if up_axis == "y":
            R = np.einsum("ij,njk->nik", z_up_to_y_up(np.eye(3)).T, R)
        rbs = np.column_stack([conv(pose[:, :3]), Rotation.from_matrix(R).as_quat()])[:, None, :]
        rb_ids = [mids["payload"]]
    return MarkerSource(conv(capture.markers), marker_ids=ids, rigid_bodies=rbs, rigid_body_ids=rb_ids,
                        missing="motive", frame_numbers=capture.frame_numbers)
