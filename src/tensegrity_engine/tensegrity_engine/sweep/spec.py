"""A sweep's specification: the model and one row of parameter values per run (a grid, Monte Carlo draws
or explicit rows), checked against the model before anything runs."""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from tensegrity_engine.model.load import load_model
from tensegrity_engine.model.model import Model
from tensegrity_engine.sweep.variants import SweepError, parse_name, variant_model


def _draw(rng, name, dist, n):
    """n draws of ``dist``: ("uniform", lo, hi) or ("normal", mean, sd[, lo, hi]) (truncated by rejection)."""
    if not isinstance(dist, (tuple, list)) or not dist or dist[0] not in ("uniform", "normal"):
        raise SweepError(f"random parameter '{name}': give ('uniform', lo, hi) or ('normal', mean, sd[, lo, hi]), "
                         f"got {dist!r}")
    kind, args = dist[0], [float(a) for a in dist[1:]]
    if not all(math.isfinite(a) for a in args):
        raise SweepError(f"random parameter '{name}': bounds must be finite numbers, got {args}")
    if kind == "uniform":
        if len(args) != 2 or not args[0] < args[1]:
            raise SweepError(f"random parameter '{name}': uniform needs lo < hi, got {args}")
        return rng.uniform(args[0], args[1], n)
    if len(args) not in (2, 4) or args[1] <= 0:
        raise SweepError(f"random parameter '{name}': normal needs mean, sd > 0 and optional lo < hi, got {args}")
    lo, hi = (args[2], args[3]) if len(args) == 4 else (-math.inf, math.inf)
    if not lo < hi:
        raise SweepError(f"random parameter '{name}': normal bounds need lo < hi, got {lo}, {hi}")
    out = np.empty(0)
    for _ in range(100):
        x = rng.normal(args[0], args[1], max(n, 64))
        out = np.r_[out, x[(x >= lo) & (x <= hi)]]
        if out.size >= n:
            return out[:n]
    raise SweepError(f"random parameter '{name}': the bounds [{lo}, {hi}] keep almost no mass of "
                     f"N({args[0]}, {args[1]}): widen them")


@dataclass(frozen=True)
class SweepSpec:
    """A model (validated model-file spec, shipped to the workers) and one row of parameter values per run."""
    model_spec: object
    names: tuple
    values: np.ndarray          # (runs, len(names))
    seed: int = 0
    description: dict = field(default_factory=dict)

    @property
    def n_runs(self) -> int:
        return int(self.values.shape[0])

    @classmethod
    def build(cls, model, grid=None, random=None, draws=None, seed=0, runs=None):
        """Runs = the cartesian product of ``grid`` {name: values} x ``draws`` Monte Carlo draws of ``random``
        {name: ("uniform", lo, hi) | ("normal", mean, sd[, lo, hi])} (seeded; one draw per grid point and draw
        index). ``runs`` ({name: values} of equal length) gives explicit rows instead. ``model``: name, path
        or Model."""
        base = model if isinstance(model, Model) else load_model(model)
        grid, random = dict(grid or {}), dict(random or {})
        if runs is not None:
            if grid or random:
                raise SweepError("give either explicit runs or grid/random parameters, not both")
            names = tuple(runs)
            cols = [np.asarray(runs[n], float).ravel() for n in names]
            if len({c.size for c in cols}) > 1:
                raise SweepError("explicit runs: every parameter needs the same number of values")
            values = np.column_stack(cols) if cols else np.zeros((0, 0))
        else:
            if random and draws is None:
                raise SweepError("random parameters need a number of Monte Carlo draws (draws=N)")
            draws = 1 if draws is None else draws
            if not isinstance(draws, (int, np.integer)) or draws < 1:
                raise SweepError(f"draws (--monte-carlo) must be a positive integer, got {draws!r}")
            axes = [np.asarray(v, float).ravel() for v in grid.values()]
            for n, a in zip(grid, axes):
                if a.size == 0:
                    raise SweepError(f"grid parameter '{n}' has no values")
            rng = np.random.default_rng(seed)
            mc = np.column_stack([_draw(rng, n, d, draws * max(1, math.prod(a.size for a in axes)))
                                  for n, d in random.items()]) if random else None
            rows = [list(p) for p in itertools.product(*axes) for _ in range(draws)]
            values = np.array(rows, float).reshape(len(rows), len(axes))
            if mc is not None:
                values = np.column_stack([values, mc[:len(rows)]])
            names = tuple(grid) + tuple(random)
        if len(set(names)) != len(names):
            raise SweepError(f"a parameter is given twice: {names}")
        if values.shape[0] == 0 or not names:
            raise SweepError("the sweep has no runs: give at least one parameter with at least one value")
        spec = cls(base.spec, names, values, int(seed), {"grid": {k: list(map(float, v)) for k, v in grid.items()},
                                                         "random": {k: list(v) for k, v in random.items()},
                                                         "draws": draws})
        spec.check(base)
        return spec

    def check(self, base):
        """Validate every run's parameters against ``base`` (raises SweepError naming the run)."""
        for name in self.names:
            parse_name(base, name)
        seen = set()
        for r, row in enumerate(self.values):
            key = row.tobytes()
            if key in seen:
                continue
            seen.add(key)
            try:
                variant_model(base, self.names, row)
            except SweepError as exc:
                raise SweepError(f"run {r} ({', '.join(f'{n}={v:g}' for n, v in zip(self.names, row))}): {exc}") from None
