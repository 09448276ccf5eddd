"""Self-collision geometry: exact distances between capsules (:mod:`.capsules`) and clearance reports over
trajectories and raw segments (:mod:`.clearance_report`)."""
from tensegrity_engine.collision.capsules import check, model_elements, segment_distance

__all__ = ["check", "model_elements", "segment_distance"]
