"""Dynamic relaxation with kinetic damping: the equilibrium shape for a model's own rest lengths.

The real dynamics of the node model (exact rigid bars, tension-only strings, gravity; string damping and
structural damping switched off) is integrated by the engine's :class:`~.simulator.Simulator` in short
chunks; whenever the kinetic energy has passed a peak, every velocity is set to zero (kinetic damping,
Day 1965 / Barnes 1999). Potential energy then falls at each peak and the motion dies out in the
structure's own modes, without a damping constant to tune. The shape is then polished by
:func:`.equilibrium.settle` (Newton on the equilibrium equations) to ``tol`` [N].

Failures are reported, not written: strings that go slack at the relaxed shape, bars that pass through
each other during relaxation (the sign of the volume spanned by two bars flips while their closest points
lie inside both), a simulation that diverges, or a residual above ``tol``. Units: m, s, N, J.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from tensegrity_engine.errors import SimulationDiverged


class RelaxFailed(ValueError):
    """The relaxation found no equilibrium shape (the message says why)."""


@dataclass
class RelaxResult:
    """Result of :func:`relax`. ``ok`` is False when ``problems`` lists a reason not to trust the shape."""
    positions: np.ndarray          # (n, 3) m, all nodes
    tensions: np.ndarray           # (sigma_c,) N
    residual: float                # N, after Newton polishing
    iterations: int                # simulation chunks
    resets: int                    # kinetic-energy peaks (velocities zeroed)
    simulated_time: float          # s
    elastic_energy: float          # J, strings
    gravity_energy: float          # J, -sum W.x
    kinetic_peaks: list            # J, kinetic energy at each reset
    stable: bool
    slack: list                    # names of slack strings
    crossings: list                # (bar, bar) pairs that passed through each other
    problems: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self, model) -> str:
        lines = [f"relaxed '{model.name}': residual {self.residual:.3e} N after {self.iterations} steps "
                 f"({self.resets} kinetic-energy resets, {self.simulated_time:.3g} s simulated, "
                 f"{self.seconds:.2f} s wall)",
                 f"string energy {self.elastic_energy:.6g} J, gravity energy {self.gravity_energy:.6g} J; tensions {self.tensions.min():.4g} .. "
                 f"{self.tensions.max():.4g} N; stable: {'yes' if self.stable else 'NO'}"]
        lines += [f"PROBLEM: {p}" for p in self.problems]
        return "\n".join(lines)


def _step_length(model) -> float:
    """Chunk length [s]: 1/5 of the inverse of an upper bound of the highest angular frequency
    (largest summed string stiffness at a node over its mass; without strings, a pendulum's sqrt(g/L))."""
    kap = model.string_stiffness_at(model.rest_length)
    seg = model.segments
    k_node = np.bincount(seg.ravel(), weights=np.repeat(kap[model.segment_string], 2), minlength=model.n_nodes)
    m_node = np.asarray(model.mass_sparse.sum(axis=1)).ravel() + 0.0
    free = m_node > 0
    w = math.sqrt(float(np.max(4.0 * k_node[free] / m_node[free]))) if free.any() else 0.0
    L = float(model.bar_length.min()) if len(model.bar_length) else 1.0
    w = max(w, math.sqrt(float(np.linalg.norm(model.gravity)) / L), 1e-3)     # a pendulum's rate, at least
    return 0.2 / w


class _CrossWatch:
    """Detects bars passing through each other between two configurations."""

    def __init__(self, model):
        nb = len(model.bars)
        i, j = np.triu_indices(nb, k=1)
        share = np.isin(model.bars[i], model.bars[j]).any(axis=1) if nb else np.zeros(0, bool)
        self.i, self.j, self.model = i[~share], j[~share], model
        self.sign = None

    def _volume(self, X):
        b = self.model.bars
        p0, p1, q0, q1 = X[b[self.i, 0]], X[b[self.i, 1]], X[b[self.j, 0]], X[b[self.j, 1]]
        return np.einsum("ij,ij->i", np.cross(p1 - p0, q1 - q0), q0 - p0), (p0, p1, q0, q1)

    def update(self, X) -> list:
        """(bar, bar) name pairs that crossed since the last call."""
        if not len(self.i):
            return []
        vol, (p0, p1, q0, q1) = self._volume(X)
        sign = np.sign(vol)
        flipped = np.zeros(len(sign), bool) if self.sign is None else sign * self.sign < 0
        self.sign = sign
        k = np.flatnonzero(flipped & _inside(p0, p1, q0, q1))
        return [(self.model.bar_names[self.i[a]], self.model.bar_names[self.j[a]]) for a in k]


def _inside(p0, p1, q0, q1, margin: float = 0.02) -> np.ndarray:
    """(k,) True where the closest points of the two bars' *lines* lie inside both bars (parameters in
    (margin, 1 - margin)); segments given as (k,3) end arrays."""
    d1, d2, r = p1 - p0, q1 - q0, p0 - q0
    a, b, c = (np.einsum("ij,ij->i", u, v) for u, v in ((d1, d1), (d1, d2), (d2, d2)))
    d, e = np.einsum("ij,ij->i", d1, r), np.einsum("ij,ij->i", d2, r)
    den = np.maximum(a * c - b * b, 1e-300)
    s, t = (b * e - c * d) / den, (a * e - b * d) / den
    return (s > margin) & (s < 1 - margin) & (t > margin) & (t < 1 - margin)


def _string_energy(model, X) -> float:
    """Elastic energy [J] of the taut strings at X (n,3)."""
    e = np.maximum(model.string_lengths(X) - model.rest_length, 0.0)
    return 0.5 * float(np.sum(model.string_stiffness_at(model.rest_length) * e * e))


def _kinetic(model, V) -> float:
    """Kinetic energy [J] of free-coordinate velocities V (r,3)."""
    Mr = model.reduced_mass_sparse
    return 0.5 * float(np.sum(V * (Mr @ V)))


def kinetic_damping(model, X=None, max_steps: int = 20000, energy_tol: float = 1e-16, progress=None) -> dict:
    """Kinetic-damping loop. Returns positions, counts, kinetic peaks and bar crossings.

    Stops when a kinetic-energy peak falls below ``energy_tol`` times the first peak or the start's string
    energy, whichever is larger (and at most after ``max_steps`` chunks). ``progress``: a callable(step, peak_ratio) or None.
    """
    from tensegrity_engine.dynamics.simulator import Simulator
    sim = Simulator(model, integrator="dopri5", rtol=1e-9, atol=1e-12, damping=False, node_damping=0.0)
    sim.reset(positions=X)
    h = _step_length(model)
    watch = _CrossWatch(model)
    watch.update(sim.positions)
    prev, peaks, crossings, step, loose_from, fell = 0.0, [], [], 0, None, False
    size = float(np.ptp(sim.positions, axis=0).max())
    e_ref = _string_energy(model, sim.positions)
    for step in range(1, max_steps + 1):
        sim.advance(h)
        crossings += watch.update(sim.positions)
        ke = _kinetic(model, sim.V)
        if ke == 0.0:                                    # nothing moved: no string pulls, no load
            break
        if ke < prev:                                     # the kinetic energy passed a peak
            peaks.append(prev)
            sim.V[:] = 0.0
            ke = 0.0
            if progress is not None:
                progress(step, prev / peaks[0] if peaks[0] > 0 else 0.0)
            if prev <= energy_tol * max(peaks[0], e_ref):
                break
        Xs = sim.positions
        if not np.all(model.string_lengths(Xs) <= model.rest_length):
            loose_from = None
        elif loose_from is None:
            loose_from = Xs
        elif np.abs(Xs - loose_from).max() > size:     # no string holds and it moved by its own size
            fell = True
            break
        prev = ke
    return {"positions": sim.positions, "steps": step, "peaks": peaks, "crossings": crossings, "time": sim.t,
            "fell_apart": fell}


def relax(model, X=None, tol: float = 1e-9, max_steps: int = 20000, progress: bool = False) -> RelaxResult:
    """Equilibrium shape of ``model`` for its own rest lengths from X (default its positions): kinetic
    damping, then Newton polishing (:func:`.equilibrium.settle`), then the checks (module docstring)."""
    from tensegrity_engine.statics.equilibrium import settle, stability
    from tensegrity_engine.dynamics.energy import energies
    if np.any(model.gravity) and not len(model.fixed_nodes) and not len(model.spec.constraints):
        raise RelaxFailed(f"'{model.name}' has gravity and no fixed node: it falls and has no equilibrium; fix "
                          "nodes ('fixed: true') or set 'gravity: [0, 0, 0]'")
    t0 = time.perf_counter()
    bar, report = _progress(progress, max_steps)
    problems = []
    try:
        kd = kinetic_damping(model, X, max_steps, progress=report)
    except SimulationDiverged as exc:
        raise SimulationDiverged(exc.time, f"relaxation failed: {exc.reason}", exc.element,
                                 "the start is too far from any equilibrium or a string is far too short")
    finally:
        if bar is not None:
            bar.close()
    if kd["fell_apart"]:
        raise RelaxFailed(f"'{model.name}' fell apart: every string went slack and the structure moved freely by "
                          f"more than its own size (t = {kd['time']:.3g} s); the rest lengths are too long (or a load "
                          "is unsupported)")
    eq = settle(model, X=kd["positions"], tol=tol, relax_time=5.0)
    for _ in range(2):                                   # a second Newton start gains the last digits
        if eq.residual <= tol:
            break
        eq = min(eq, settle(model, X=eq.positions, tol=tol, relax_time=0.5), key=lambda e: e.residual)
    Xr = eq.positions
    slack = [model.string_names[i] for i in np.flatnonzero(eq.tensions <= 0.0)]
    if kd["crossings"]:
        a, b = kd["crossings"][0]
        problems.append(f"the structure collapsed: bars '{a}' and '{b}' passed through each other "
                        f"({len(kd['crossings'])} crossing(s) in all)")
    if slack:
        problems.append(f"{len(slack)} string(s) slack at the relaxed shape ({', '.join(slack[:6])}"
                        f"{', ...' if len(slack) > 6 else ''}): the rest lengths hold no prestressed form here; "
                        "shorten them (e.g. 'tensegrity equilibrium --min-tension') or use 'tensegrity formfind'")
    if eq.residual > tol:
        problems.append(f"residual {eq.residual:.3e} N above the tolerance {tol:.1g} N")
    st = stability(model, Xr)
    if not st["stable"]:
        problems.append("the relaxed shape is not stable (a negative stiffness eigenvalue)")
    e = energies(model, Xr[None], np.zeros((1,) + Xr.shape), np.zeros((1, len(model.actuator_names))))
    return RelaxResult(Xr, eq.tensions, eq.residual, kd["steps"], len(kd["peaks"]), kd["time"],
                       float(e["elastic"][0]), float(e["gravity"][0]), kd["peaks"], st["stable"],
                       slack, kd["crossings"], problems, time.perf_counter() - t0)


def _progress(enabled: bool, total: int):
    """(tqdm bar or None, callable(step, ratio)): a bar over steps, the peak kinetic energy as postfix."""
    if not enabled:
        return None, None
    try:
        from tqdm import tqdm
    except ImportError:                      # plain progress line
        def line(step, ratio):
            print(f"\rrelaxing: step {step}, kinetic-energy peak {ratio:.1e} of the first", end="", flush=True)
        return None, line
    bar = tqdm(total=total, unit="step", desc="relaxing", leave=True)

    def update(step, ratio):
        bar.update(step - bar.n)
        bar.set_postfix_str(f"KE peak {ratio:.1e} of first", refresh=False)
    return bar, update
