"""Collision geometry: exact distances between capsules (:mod:`.capsules`), clearance reports over
trajectories and raw segments (:mod:`.clearance_report`), and capsules and points against static obstacles,
half-spaces and oriented boxes (:mod:`.obstacles`)."""
from tensegrity_engine.collision.capsules import check, model_elements, segment_distance

__all__ = ["check", "model_elements", "segment_distance"]
