"""Pulley friction (``pulley_damping`` of a string) and actuator dead time (``delay`` of an actuator)."""
from dataclasses import replace

import numpy as np
import pytest

from tensegrity_engine.dynamics.energy import energies
from tensegrity_engine.errors import ModelError
from tensegrity_engine.dynamics.inputs import paper_sinusoid, sinusoid
from tensegrity_engine.model.build import build_model
from tensegrity_engine.model.load import load_model
from tensegrity_engine.model.spec import spec_from_dict
from tensegrity_engine.model.write import spec_to_dict
from tensegrity_engine.dynamics.simulator import Simulator


def variant(model, pulley=None, damping=None, delay=None, structural=None):
    """A copy of ``model`` with per-string pulley/string damping, per-actuator delay, structural damping."""
    spec = model.spec
    strings = tuple(replace(s, pulley_damping=(pulley[c] if pulley is not None else s.pulley_damping),
                            damping=(damping[c] if damping is not None else s.damping))
                    for c, s in enumerate(spec.strings))
    acts = tuple(replace(a, delay=(delay[i] if delay is not None else a.delay)) for i, a in enumerate(spec.actuators))
    return build_model(replace(spec, strings=strings, actuators=acts,
                               structural_damping=spec.structural_damping if structural is None else structural))


def pulley_power(model, X, Xd) -> np.ndarray:
    """Σ c σ̇² [W] per sample from positions/velocities (T, n, 3): the dissipation the friction must produce."""
    seg = model.segments
    d = X[:, seg[:, 1]] - X[:, seg[:, 0]]
    ln = np.linalg.norm(d, axis=-1)
    lnd = np.einsum("tsk,tsk->ts", d, Xd[:, seg[:, 1]] - Xd[:, seg[:, 0]]) / ln
    P = np.zeros(len(X))
    for c in np.flatnonzero(model.string_pulley_damping > 0):
        idx = np.flatnonzero(model.segment_string == c)
        L, Ld = ln[:, idx].sum(1), lnd[:, idx].sum(1)
        xi = model.rest_length[c]
        for k in range(1, len(idx)):
            S, Sd = ln[:, idx[:k]].sum(1), lnd[:, idx[:k]].sum(1)
            sig_d = xi * (Sd * (L - S) - S * (Ld - Sd)) / L ** 2
            P += model.string_pulley_damping[c] * sig_d ** 2
    return P


@pytest.fixture(scope="module")
def manip():
    return load_model("stacked_manipulator")


def _kick(model, seed=3):
    rng = np.random.default_rng(seed)
    V = np.zeros((model.n_nodes, 3))
    V[model.free_nodes] = rng.normal(0, 0.05, (len(model.free_nodes), 3))
    return V


def test_pulley_friction_dissipates_exactly_its_rayleigh_power(manip):
    nc = len(manip.string_names)
    pul = np.where([len(p) > 2 for p in manip.string_paths], 40.0, 0.0)
    m = variant(manip, pulley=pul, damping=np.zeros(nc), structural=0.0)
    sim = Simulator(m, rtol=1e-10, atol=1e-12)
    sim.reset(velocities=_kick(m))
    tr = sim.run(1.0, rate=2000)
    E = energies(m, tr.nodes, tr.velocities, tr.inputs)["total"]
    P = pulley_power(m, tr.nodes, tr.velocities)
    lost = E[0] - E[-1]
    dissipated = np.trapezoid(P, tr.t)
    assert lost > 1e-3 * np.ptp(E) and np.all(np.diff(E) < 1e-9)     # it dissipates, never adds energy
    # trapezoid at 0.5 ms on a smooth power curve: error << 1 %
    assert abs(lost - dissipated) < 0.01 * dissipated


def test_without_pulley_damping_energy_is_conserved_and_pulleys_matter(manip):
    nc = len(manip.string_names)
    free = variant(manip, damping=np.zeros(nc), structural=0.0)
    sim = Simulator(free, rtol=1e-10, atol=1e-12)
    sim.reset(velocities=_kick(free))
    tr = sim.run(1.0, rate=200)
    E = energies(free, tr.nodes, tr.velocities, tr.inputs)["total"]
    assert np.ptp(E) < 1e-6 * np.abs(E).max()     # adaptive integration at rtol 1e-10


def test_pulley_friction_leaves_an_equilibrium_alone_and_switches_with_damping(manip):
    pul = np.where([len(p) > 2 for p in manip.string_paths], 40.0, 0.0)
    m = variant(manip, pulley=pul)
    a, b = Simulator(manip), Simulator(m)
    for s in (a, b):
        s.advance(0.5)
    # at rest there is no slip, so no friction: only the file's residual (< 1e-9 N) moves nodes, by ~1e-12 m
    assert np.abs(a.positions - b.positions).max() < 1e-10
    ra, rb = Simulator(manip, damping=False), Simulator(m, damping=False)
    for s in (ra, rb):
        s.reset(velocities=_kick(manip))
        s.advance(0.3)
    assert np.abs(ra.positions - rb.positions).max() < 1e-12   # damping=False switches it off too
    ra, rb = Simulator(manip), Simulator(m)
    for s in (ra, rb):
        s.reset(velocities=_kick(manip))
        s.advance(0.3)
    assert np.abs(ra.positions - rb.positions).max() > 1e-5


def test_delay_equals_the_input_started_later(manip):
    d = 0.037
    late = variant(manip, delay=np.full(6, d))
    amp = [0.01] * 6
    ph = list(np.linspace(0, 2, 6))
    runs = []
    for model, start in ((late, 0.2), (manip, 0.2 + d)):
        sim = Simulator(model, rtol=1e-10, atol=1e-12)
        runs.append(sim.run(2.0, inputs=sinusoid(amp, ph, 3.0, start=start), rate=100))
    assert np.abs(runs[0].nodes - runs[1].nodes).max() < 1e-9
    assert np.abs(runs[0].inputs - runs[1].inputs).max() < 1e-12      # recorded u is the delayed one


def test_file_round_trip_and_errors(manip, tmp_path):
    m = variant(manip, pulley=np.r_[5.0, np.zeros(13)], delay=np.r_[0.02, np.zeros(5)])
    doc = spec_to_dict(m)
    assert doc["strings"][0]["pulley_damping"] == 5.0 and doc["actuators"][0]["delay"] == 0.02
    again = build_model(spec_from_dict(doc, "again.yaml"))
    assert again.string_pulley_damping[0] == 5.0 and again.actuator_delay[0] == 0.02
    bad = spec_to_dict(load_model("prism3"))
    bad["strings"][0]["pulley_damping"] = 1.0          # a two-node string passes through no node
    with pytest.raises(ModelError, match="pulley_damping.*passes through no node"):
        spec_from_dict(bad, "bad.yaml")
    bad = spec_to_dict(manip)
    bad["actuators"][0]["delay"] = -0.1
    with pytest.raises(ModelError, match="delay"):
        spec_from_dict(bad, "bad.yaml")


def test_paper_run_unchanged_by_zero_coefficients(manip):
    a = Simulator(manip).run(2.0, inputs=paper_sinusoid(manip), rate=50)
    b = Simulator(variant(manip, pulley=np.zeros(14), delay=np.zeros(6))).run(2.0, inputs=paper_sinusoid(manip),
                                                                             rate=50)
    assert np.array_equal(a.nodes, b.nodes)
