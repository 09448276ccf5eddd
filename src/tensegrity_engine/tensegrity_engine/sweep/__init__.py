"""Sweeps: many simulations of variants of one model (grids, Monte Carlo), on local worker processes or a
Dask cluster (:mod:`.variants`: the parameters and the model variants they make; :mod:`.spec`: the runs of a
sweep; :mod:`.runs`: one run and one batch in a worker; :mod:`.result`: the gathered summaries;
:mod:`.execute`: :func:`run_sweep` and running the batches)."""
from tensegrity_engine.sweep.execute import run_sweep
from tensegrity_engine.sweep.result import SweepResult
from tensegrity_engine.sweep.spec import SweepSpec
from tensegrity_engine.sweep.variants import SweepError

__all__ = ["SweepError", "SweepResult", "SweepSpec", "run_sweep"]
