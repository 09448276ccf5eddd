"""Figures: PNG plots of trajectories (:mod:`.figures`) and animated GIFs of mode shapes
(:mod:`.mode_animation`). matplotlib (Agg) is imported only here."""
