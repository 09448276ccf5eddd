"""Sweeps: many simulations of variants of one model (grids, Monte Carlo), on local worker processes or a
Dask cluster (:mod:`.sweep`: the spec, the runs and the result; :mod:`.execute`: running the batches)."""
from tensegrity_engine.sweep.sweep import SweepError, SweepResult, SweepSpec, run_sweep

__all__ = ["SweepError", "SweepResult", "SweepSpec", "run_sweep"]
