"""The kernels keep only the diagonal blocks of Mr⁻¹, H and G (one block per mass-coupled component):
storage and work grow with the bars, and separate structures move exactly as if simulated alone."""
import sys
from pathlib import Path

import numpy as np

from tensegrity_engine.dynamics.inputs import paper_sinusoid
from tensegrity_engine.dynamics.kernel_params import components, kernel_params
from tensegrity_engine.model.build import build_model
from tensegrity_engine.model.load import load_model
from tensegrity_engine.model.spec import spec_from_dict
from tensegrity_engine.model.write import spec_to_dict
from tensegrity_engine.dynamics.simulator import Simulator

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from bench_scaling import tower_doc  # noqa: E402


def test_a_class_1_tower_has_one_block_per_bar():
    m = build_model(spec_from_dict(tower_doc(40), "tower.yaml"))      # 200 bars, 400 nodes
    p = kernel_params(m)
    nb = len(m.bar_names)
    assert nb == 200 and len(p.bb_ptr) - 1 == nb
    assert p.H.shape == (nb,) and p.Minv.shape == (4 * nb,) and p.G.shape == (2 * nb,)   # O(bars), not O(bars²)
    sim = Simulator(m, integrator="rk4", dt=1e-3, damping=False)
    sim.advance(0.2)
    assert m.bar_length_error(sim.positions).max() < 1e-12


def test_two_separate_structures_move_as_if_alone():
    """prism3 twice, side by side (no string between): each copy's motion equals prism3's own, to rounding."""
    base = spec_to_dict(load_model("prism3"))
    doc = dict(base, name="two")
    rename = lambda nm, k: f"{nm}_{k}"  # noqa: E731
    doc["nodes"] = [dict(nd, name=rename(nd["name"], k), position=[nd["position"][0] + 2.0 * k,
                                                                   *nd["position"][1:]])
                    for k in range(2) for nd in base["nodes"]]
    doc["bars"] = [dict(b, name=rename(b["name"], k), nodes=[rename(x, k) for x in b["nodes"]])
                   for k in range(2) for b in base["bars"]]
    doc["strings"] = [dict(s, name=rename(s["name"], k), path=[rename(x, k) for x in s["path"]])
                      for k in range(2) for s in base["strings"]]
    two = build_model(spec_from_dict(doc, "two.yaml"))
    one = load_model("prism3")
    rng = np.random.default_rng(3)
    V1 = rng.normal(0, 0.2, (one.n_nodes, 3))
    a = Simulator(one, rtol=1e-10, atol=1e-12)
    a.reset(velocities=V1)
    b = Simulator(two, rtol=1e-10, atol=1e-12)
    b.reset(velocities=np.vstack([V1, V1]))
    ta, tb = a.run(2.0, rate=50), b.run(2.0, rate=50)
    n = one.n_nodes
    shift = np.array([2.0, 0, 0])
    # the copies are independent blocks; the adaptive step is shared, so agreement is to the tolerance
    assert np.abs(tb.nodes[:, :n] - ta.nodes).max() < 1e-8
    assert np.abs(tb.nodes[:, n:] - shift - ta.nodes).max() < 1e-8
    ra, rb = Simulator(one, integrator="rk4", dt=1e-3), Simulator(two, integrator="rk4", dt=1e-3)
    ra.reset(velocities=V1)
    rb.reset(velocities=np.vstack([V1, V1]))
    ra.advance(1.0)
    rb.advance(1.0)
    assert np.abs(rb.positions[:n] - ra.positions).max() < 1e-12    # fixed steps: the same arithmetic


def test_manipulator_components_and_unchanged_run():
    m = load_model("stacked_manipulator")
    sizes = sorted((len(c), len(b)) for c, b in components(m))
    assert sizes == [(1, 1), (1, 1), (1, 1), (6, 6), (9, 9)]
    tr = Simulator(m).run(2.0, inputs=paper_sinusoid(m), rate=50)
    assert m.bar_length_error(tr.nodes).max() < 1e-12


def _class2_tower(stages, monkeypatch=None, sparse=True):
    """bench's class-2 tower (n chains of bars on ball joints) with gravity, both dampings, a fixed bottom
    ring; ``sparse=False`` builds it with the dense per-component blocks instead of the sparse KKT."""
    import tensegrity_engine.dynamics.kkt_structure as ks
    from bench_scaling import class2_tower_doc
    doc = class2_tower_doc(stages)
    doc["gravity"] = [0.0, 0.0, -9.81]
    doc["structural_damping"] = 0.4
    for k, s in enumerate(doc["strings"]):
        s["damping"] = 2.0 + 0.1 * (k % 5)
        if k % 7 == 0:                                     # near slack: goes slack and taut on the way
            s["rest_length"] *= 1.1
    for nd in doc["nodes"][:5]:
        nd["fixed"] = True
    if not sparse:
        monkeypatch.setattr(ks, "SPARSE_MIN_BARS", 10 ** 9)
    m = build_model(spec_from_dict(doc, "class2.yaml"))
    kernel_params(m)
    if not sparse:
        monkeypatch.undo()
    return m


def test_class_2_chains_take_the_sparse_kkt_path_and_move_as_with_dense_blocks(monkeypatch):
    """A class-2 tower of 5 chains of 24 bars: each chain is one component, solved through the sparse LDLᵀ
    of its KKT matrix; the same model with dense 24-bar blocks moves the same to rounding (1e-11 m over
    0.3 s: two exact eliminations of one linear system, differing only in the order of operations), bar
    forces included, with gravity, string and structural damping, a fixed ring and slack strings."""
    sp_model = _class2_tower(24)
    dn_model = _class2_tower(24, monkeypatch, sparse=False)
    ps, pd = kernel_params(sp_model), kernel_params(dn_model)
    assert ps.bar_sp.sum() == 120 and len(ps.bb_ptr) == 1 and ps.H.shape == (0,)      # no dense block at all
    assert pd.bar_sp.sum() == 0 and len(pd.bb_ptr) - 1 == 5
    assert ps.kl_row.shape[0] < 6 * ps.kv_c.shape[0]                  # L stays O(bars): a few entries per row
    rng = np.random.default_rng(5)
    V0 = rng.normal(0, 0.3, (sp_model.n_nodes, 3))
    for integrator in ("rk4", "dopri5"):
        runs = []
        for m in (sp_model, dn_model):
            sim = Simulator(m, integrator=integrator, dt=1e-3, rtol=1e-9, atol=1e-12)
            sim.reset(velocities=V0)
            runs.append(sim.run(0.3, rate=100))
        a, b = runs
        assert np.abs(a.nodes - b.nodes).max() < 1e-11
        assert np.abs(a.bar_forces - b.bar_forces).max() < 1e-7 * (1 + np.abs(b.bar_forces).max())
        assert (a.tensions == 0).any()                                # some strings went slack on the way
        assert sp_model.bar_length_error(a.nodes).max() < 1e-12
