"""Per-node marker tracking, no ROS: the tracker that tells which marker is which node (:mod:`.tracker`), the rigid
registration that places a model on unlabeled markers (:mod:`.registration`), the markers that are not nodes
(:mod:`.other_markers`), marker labels and the marker map (:mod:`.labels`), frame-level plausibility checks
before the tracker (:mod:`.plausibility`) and offline tracking of a recorded take (:mod:`.takes`,
``tensegrity-mocap track``)."""
from tensegrity_mocap.tracking.labels import natnet_label, natnet_labels, parse_marker_map
from tensegrity_mocap.tracking.other_markers import OtherMarkers
from tensegrity_mocap.tracking.plausibility import FrameGuard, GuardStats, absurd_rows
from tensegrity_mocap.tracking.registration import Registration, kabsch, register
from tensegrity_mocap.tracking.takes import (plot_tracking, summary, track_frames, track_recording, track_take,
                                             write_outputs)
from tensegrity_mocap.tracking.tracker import (REASONS, NodeTracker, TrackerStats, label_matches, nearest_nodes,
                                               rigid_pairs)

__all__ = ["NodeTracker", "TrackerStats", "REASONS", "rigid_pairs", "nearest_nodes", "label_matches", "Registration",
           "register", "kabsch", "OtherMarkers", "FrameGuard", "GuardStats", "absurd_rows", "track_frames",
           "track_recording", "track_take", "summary", "write_outputs", "plot_tracking", "natnet_label",
           "natnet_labels", "parse_marker_map"]
