"""Supports (issue 24): clamped bars, translational and rotational springs + dampers to the world. The
schema and its errors, the forces in the compiled dynamics against the NumPy ones (energy conservation,
the dynamics' rest state against the statics' equilibrium), the tangent stiffness, and the acceptance test:
``identify --static`` recovers a compliant clamp's stiffness and predicts held-out shapes."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import yaml

from tensegrity_engine import build_model, load_model, spec_from_dict
from tensegrity_engine.cli.identify import main as identify_main
from tensegrity_engine.dynamics.energy import energies
from tensegrity_engine.dynamics.simulator import Simulator
from tensegrity_engine.dynamics.supports import support_energy, support_forces
from tensegrity_engine.errors import ModelError
from tensegrity_engine.identify.static import StaticCase, identified_model, identify_static, load_forces, predict
from tensegrity_engine.model.write import dump_model, spec_to_dict
from tensegrity_engine.statics.equilibrium import settle, stability
from tensegrity_engine.statics.modal import bar_multipliers, finite_difference_stiffness, tangent_stiffness
from test_identify_static import six_bar

NOISE = 5e-4          # m per coordinate: marker noise of a motion-capture take


def rig_document(L=0.6, stiffness=500.0, tension=40.0, bar_mass=0.2, clamp=100.0, translational=None) -> dict:
    """The six-bar of test_identify_static (expanded octahedron, bars of length L) standing in a base that clamps
    two of its vertical bars: one rigidly (``type: clamp``), the other pinned at its lower end with a compliant
    rotational clamp of ``clamp`` N m/rad; all strings in one group. ``translational``: (node, N/m) of an extra
    spring support."""
    d = json.loads(json.dumps(spec_to_dict(six_bar(L, stiffness, tension, bar_mass), resolved=False)))
    # bars b0 = (n0, n1) and b1 = (n2, n3) are vertical (x = 0): b0 clamped, b1 pinned at its lower end n3
    assert d["bars"][0]["nodes"] == ["n0", "n1"] and d["bars"][1]["nodes"] == ["n2", "n3"]
    assert d["nodes"][3]["position"][2] < d["nodes"][2]["position"][2]
    d["name"] = "clamped_rig"
    for node in d["nodes"]:
        node.pop("fixed", None)
    d["nodes"][3]["fixed"] = True
    for string in d["strings"]:
        string["group"] = "all"
    d["supports"] = [{"name": "base", "type": "clamp", "bar": "b0"},
                     {"name": "hinge", "type": "rotational", "bar": "b1", "stiffness": clamp}]
    if translational:
        d["supports"].append({"name": "pad", "type": "translational", "node": translational[0],
                              "stiffness": translational[1]})
    return d


def rig(**kw):
    return build_model(spec_from_dict(rig_document(**kw), "<clamped_rig>"))


def with_values(model, string_stiffness, clamp):
    """``model`` with every string's stiffness set (same rest lengths) and the hinge's stiffness ``clamp``."""
    strings = tuple(replace(s, stiffness=string_stiffness, rest_length=float(r), tension=None)
                    for s, r in zip(model.spec.strings, model.rest_length))
    supports = tuple(replace(s, stiffness=clamp) if s.name == "hinge" else s for s in model.spec.supports)
    return build_model(replace(model.spec, strings=strings, supports=supports))


def node_rms(A, B) -> float:
    return float(np.sqrt(np.mean(np.sum((np.asarray(A) - np.asarray(B)) ** 2, axis=1))))


# --- schema -------------------------------------------------------------------------------------------------
def _error(tmp_path, doc) -> str:
    path = tmp_path / "model.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ModelError) as info:
        load_model(str(path))
    msg = str(info.value)
    assert msg.startswith(f"{path}: ") and ". Fix: " in msg, msg
    return msg


@pytest.mark.parametrize("support, words", [
    ({"name": "x", "type": "hinge", "bar": "b1"}, ["supports[2]", "'type' must be one of", "type: rotational"]),
    ({"name": "x", "type": "rotational", "bar": "b9", "stiffness": 1.0}, ["support 'x'", "unknown bar 'b9'", "b0"]),
    ({"name": "x", "type": "rotational", "bar": "b2"}, ["missing 'stiffness'"]),
    ({"name": "x", "type": "rotational", "bar": "b2", "stiffness": -1.0}, ["support 'x'", "stiffness", "must be positive"]),
    ({"name": "x", "type": "rotational", "bar": "b2", "stiffness": 1.0, "damping": -2},
     ["support 'x'", "damping", "N m s/rad"]),
    ({"name": "x", "type": "rotational", "bar": "b2", "stiffness": 1.0, "rest_direction": [0, 0, 0]},
     ["support 'x'", "'rest_direction'", "zero length"]),
    ({"name": "x", "type": "rotational", "bar": "b1", "stiffness": 1.0}, ["support 'x'", "already held by",
                                                                          "'hinge'"]),
    ({"name": "x", "type": "clamp", "bar": "b1"}, ["support 'x'", "already held by"]),
    ({"name": "x", "type": "clamp", "bar": "b2", "stiffness": 3.0}, ["unknown key", "stiffness"]),
    ({"name": "x", "type": "translational", "node": "q", "stiffness": 1.0}, ["support 'x'", "unknown node 'q'"]),
    ({"name": "x", "type": "translational", "node": "n4", "stiffness": 1.0, "anchor": [0, 1]},
     ["support 'x'", "anchor"]),
    ({"name": "x", "type": "translational", "node": "n3", "stiffness": 1.0}, ["support 'x'", "'n3' is fixed",
                                                                             "free the node"]),
    ({"name": "x", "type": "translational", "node": "n0", "stiffness": 1.0}, ["support 'x'", "'n0' is fixed"]),
    ({"name": "n4", "type": "translational", "node": "n4", "stiffness": 1.0}, ["duplicate name"]),
])
def test_schema_errors_name_the_file_the_support_and_the_fix(tmp_path, support, words):
    doc = rig_document()
    doc["supports"].append(support)
    msg = _error(tmp_path, doc)
    for w in words:
        assert w.lower() in msg.lower(), (w, msg)


def test_a_rotational_support_on_an_immobile_bar_is_an_error(tmp_path):
    doc = rig_document()
    doc["nodes"][2]["fixed"] = True          # b1 now has both ends fixed: its spring can never act
    msg = _error(tmp_path, doc)
    assert "support 'hinge'" in msg and "cannot turn" in msg


def test_supports_are_written_back(tmp_path):
    doc = rig_document(translational=("n5", 2000.0))
    doc["supports"][1].update(damping=0.3, rest_direction=[0.0, 0.1, -1.0])
    model = build_model(spec_from_dict(doc, "<rig>"))
    again = load_model(str(dump_model(model, tmp_path / "again.yaml")))
    assert again.spec.supports == model.spec.supports
    assert np.array_equal(again.supports.reference, model.supports.reference)


# --- clamped bars -------------------------------------------------------------------------------------------
def test_a_clamp_is_both_ends_fixed_and_the_clamped_bar_is_immobile():
    model = rig()
    doc = rig_document()
    doc["supports"] = doc["supports"][1:]
    doc["nodes"][0]["fixed"] = doc["nodes"][1]["fixed"] = True          # the same rig written with fixed nodes
    fixed = build_model(spec_from_dict(doc, "<fixed>"))
    assert sorted(model.fixed_nodes.tolist()) == sorted(fixed.fixed_nodes.tolist()) == [0, 1, 3]
    rng = np.random.default_rng(4)
    V = rng.normal(0.0, 0.05, (model.n_nodes, 3))
    runs = []
    for m in (model, fixed):
        sim = Simulator(m, integrator="rk4", dt=1e-3)
        sim.reset(velocities=V)
        runs.append(sim.run(0.5, rate=100))
    assert np.array_equal(runs[0].nodes, runs[1].nodes)             # the same model, bit for bit
    assert np.array_equal(runs[0].nodes[:, :2], np.broadcast_to(model.positions[:2], runs[0].nodes[:, :2].shape))
    assert np.all(runs[0].bar_forces[:, 0] == 0.0)                  # immobile: its reaction is not a bar force


def test_a_fully_clamped_model_simulates_as_static():
    """Every node held (every bar clamped or its nodes fixed): zero free coordinates. The dynamics answers the
    statics question - nothing moves, the strings carry their tensions - where ``Simulator.positions`` used to
    raise a bare ValueError and settle (the simulator node's start) a ModelError."""
    doc = {"schema": "tensegrity-model", "version": 1, "name": "held", "gravity": [0, 0, -9.81],
           "nodes": [{"name": "a", "position": [0, 0, 0]}, {"name": "b", "position": [1, 0, 0]},
                     {"name": "c", "position": [0, 1, 0], "fixed": True}],
           "bars": [{"name": "r", "nodes": ["a", "b"], "mass": 1.0}],
           "strings": [{"name": "s", "path": ["b", "c"], "stiffness": 100.0, "rest_length": 1.0}],
           "supports": [{"name": "base", "type": "clamp", "bar": "r"}],
           "obstacles": [{"name": "ground", "type": "plane", "point": [0, 0, -1]}]}
    model = build_model(spec_from_dict(doc, "held.yaml"))
    assert len(model.free_nodes) == 0
    stretch = 100.0 * (np.sqrt(2.0) - 1.0)                           # N: k (|b - c| - rest)
    for integrator in ("rk4", "dopri5"):
        sim = Simulator(model, integrator=integrator)
        assert np.array_equal(sim.positions, model.positions) and not sim.velocities.any()
        traj = sim.run(0.5, rate=10)
        assert np.array_equal(traj.nodes, np.broadcast_to(model.positions, traj.nodes.shape)) and sim.t == 0.5
        assert sim.forces()[0] == pytest.approx([stretch], rel=1e-12)
        assert sim.energy()["kinetic"] == 0.0 and len(sim.contacts()) == 0
    eq = settle(model)                                               # the statics give the same answer
    assert np.array_equal(eq.positions, model.positions) and eq.residual == 0.0
    assert eq.tensions == pytest.approx([stretch], rel=1e-12) and "every node is held" in eq.message

# --- dynamics against statics and energy -------------------------------------------------------------------
def test_equilibrium_of_a_supported_structure_has_zero_residual_and_is_the_dynamics_rest_state():
    doc = rig_document(translational=("n5", 2000.0))
    doc["supports"][2]["anchor"] = [0.01, 0.02, 0.0]                  # pulls n5 away from its file position
    model = build_model(spec_from_dict(doc, "<rig>"))
    eq = settle(model)
    # Newton to 1e-10 N (settle's tol); the forces are ~10-100 N, so this is rounding level
    assert eq.residual < 1e-9, eq.residual
    assert stability(model, eq.positions)["stable"]
    sparse = settle(model, method="sparse")                     # the large-model path: sparse Newton steps
    assert sparse.residual < 1e-9 and np.abs(sparse.positions - eq.positions).max() < 1e-10
    assert stability(model, eq.positions, method="sparse", n_modes=3)["stable"]
    damped = build_model(replace(model.spec, structural_damping=3.0, supports=tuple(
        replace(s, damping=0.5) if s.type != "clamp" else s for s in model.spec.supports)))
    sim = Simulator(damped, integrator="dopri5", rtol=1e-10, atol=1e-12)
    tr = sim.run(30.0, rate=1)
    # damped to rest (energy ~ exp(-6 t)): the same shape to 1e-9 m (settle's tol over the stiffness ~1e3 N/m
    # gives 1e-13 m; the dopri5 tolerances leave ~1e-12 m)
    assert np.abs(tr.velocities[-1]).max() < 1e-8
    assert np.abs(tr.nodes[-1] - eq.positions).max() < 1e-9
    moved = np.abs(eq.positions - model.positions).max()
    assert moved > 1e-3                       # not the file shape: gravity, the anchor and the clamp all act


def test_tangent_stiffness_with_supports_matches_finite_differences():
    doc = rig_document(translational=("n5", 2000.0))
    doc["supports"][1]["rest_direction"] = [0.1, -0.2, -1.0]         # the clamp under load: θ ≈ 0.22 rad
    model = build_model(spec_from_dict(doc, "<rig>"))
    X = settle(model).positions
    lam = bar_multipliers(model, X, model.rest_length)
    K = tangent_stiffness(model, X, lam=lam)
    K_fd = finite_difference_stiffness(model, X, lam)
    # central differences at h = 1e-7 m: truncation ~h² K''' and rounding ~eps F / h ≈ 1e-16 * 100 / 1e-7 = 1e-7
    assert np.abs(K - K_fd).max() < 1e-5 * np.abs(K).max()


def test_undamped_supported_structure_conserves_energy():
    """RK4 at 1 ms (the real-time simulator's step) over 10 s from the equilibrium with random node velocities:
    the total energy (kinetic + strings + supports + gravity) is conserved up to RK4's own dissipation, which
    removes (ω h)⁶/72 of a mode's energy per step (``statics.step_accuracy``): the drift stays within
    steps × (ω_max h)⁶/72 of the kinetic energy put in (ω_max the stiffest mode, here the pad's spring), and
    falls by (1/2)⁶ when the step is halved. The supports' forces in the kernels are thus those of their
    NumPy potential (:func:`support_energy`); a sign or factor error would change the energy at O(1)."""
    model = rig(translational=("n5", 2000.0))
    eq = settle(model)
    w_max = 2 * np.pi * stability(model, eq.positions)["frequencies_hz"].max()
    rng = np.random.default_rng(7)
    V = rng.normal(0.0, 0.03, (model.n_nodes, 3))      # small enough that every string stays taut
    drift, bound = {}, {}
    for dt in (1e-3, 5e-4):
        sim = Simulator(model, integrator="rk4", dt=dt, damping=False)
        sim.reset(positions=eq.positions, velocities=V)
        tr = sim.run(10.0, rate=100)
        E = energies(model, tr.nodes, tr.velocities, tr.inputs)
        assert np.all(model.string_lengths(tr.nodes) > model.rest_length)      # smooth: no slack switch
        assert np.ptp(E["supports"]) > 0.1 * E["kinetic"].max()              # the supports do work
        drift[dt] = np.abs(E["total"] - E["total"][0]).max() / E["kinetic"].max()
        bound[dt] = 10.0 / dt * (w_max * dt) ** 6 / 72
    print(f"omega_max {w_max:.1f} rad/s; energy drift / max kinetic {drift}, bound {bound}")
    assert drift[1e-3] < bound[1e-3]
    assert drift[5e-4] < bound[5e-4]
    assert drift[5e-4] < drift[1e-3] / 16          # at least RK4's order (measured: 31x)


def test_support_forces_are_minus_the_gradient_of_their_energy():
    doc = rig_document(translational=("n5", 2000.0))
    doc["supports"][1]["rest_direction"] = [0.3, -0.2, -1.0]
    model = build_model(spec_from_dict(doc, "<rig>"))
    X = model.positions + np.random.default_rng(2).normal(0.0, 0.01, model.positions.shape)
    F = support_forces(model, X)
    h = 1e-6
    for i in (2, 3, 5):
        for d in range(3):
            Xp, Xm = X.copy(), X.copy()
            Xp[i, d] += h
            Xm[i, d] -= h
            g = (support_energy(model, Xp) - support_energy(model, Xm)) / (2 * h)
            assert abs(F[i, d] + g) < 1e-6 * max(1.0, abs(F[i, d])), (i, d, F[i, d], g)
    assert np.allclose(F[2] + F[3], 0.0)            # the rotational clamp is a couple: no net force


# --- acceptance: identify --static recovers a compliant clamp -------------------------------------------------
TRUE_STRING, TRUE_CLAMP = 550.0, 150.0      # N/m, N m/rad; the model file says 500 and 100
LOADS = [[], [{"node": "n2", "force": [0.0, 0.0, -30.0]}, {"node": "n5", "mass": 3.0}],
         [{"node": "n2", "force": [40.0, 0.0, 0.0]}, {"node": "n8", "mass": 2.0}],
         [{"node": "n2", "force": [0.0, -40.0, 0.0]}, {"node": "n9", "mass": 3.0}],
         [{"node": "n4", "mass": 2.0}, {"node": "n2", "force": [-10.0, 10.0, 0.0]}]]     # the last: held out


@pytest.fixture(scope="module")
def clamp_run():
    model = rig()
    truth = with_values(model, TRUE_STRING, TRUE_CLAMP)
    shapes = [predict(truth, load_forces(truth, ld)) for ld in LOADS]
    rng = np.random.default_rng(3)
    cases = [StaticCase(s + rng.normal(0.0, NOISE, s.shape), load_forces(model, ld), f"load {k}")
             for k, (s, ld) in enumerate(zip(shapes[:4], LOADS[:4]))]
    res = identify_static(model, cases, params=("stiffness", "support_stiffness"), groups="model")
    return model, shapes, cases, res


def test_identify_static_recovers_the_clamp_stiffness_and_predicts_held_out_shapes(clamp_run):
    model, shapes, cases, res = clamp_run
    est = dict(zip(res.names, res.estimate))
    se = dict(zip(res.names, res.std_error))
    assert res.units[res.names.index("support_stiffness:hinge")] == "N m/rad"
    clamp = est["support_stiffness:hinge"]
    print(f"clamp {clamp:.2f} +- {se['support_stiffness:hinge']:.2f} N m/rad (truth {TRUE_CLAMP}), strings "
          f"{est['stiffness:all']:.1f} +- {se['stiffness:all']:.1f} N/m (truth {TRUE_STRING})")
    assert abs(clamp / TRUE_CLAMP - 1) < 0.05                       # the acceptance bound
    assert abs(est["stiffness:all"] / TRUE_STRING - 1) < 0.02
    assert abs(clamp - TRUE_CLAMP) < 2 * se["support_stiffness:hinge"] < 0.05 * clamp    # its error is honest
    ident = identified_model(model, res)
    assert ident.supports.stiffness[0] == pytest.approx(clamp)
    held = predict(ident, load_forces(ident, LOADS[4]))
    before = predict(model, load_forces(model, LOADS[4]))
    err = np.linalg.norm(held - shapes[4], axis=1)
    print(f"held-out: model file {node_rms(before, shapes[4]) * 1e3:.2f} mm RMS, identified "
          f"{node_rms(held, shapes[4]) * 1e3:.3f} mm RMS, worst node {err.max() * 1e3:.3f} mm")
    assert err.max() < 5e-4                                          # every node within 0.5 mm of the truth
    # the model surgery this replaces: the hinge frozen as a rigid clamp, only the strings identified
    doc = rig_document()
    doc["supports"][1] = {"name": "hinge", "type": "clamp", "bar": "b1"}
    frozen = build_model(spec_from_dict(doc, "<frozen>"))
    stiff = identified_model(frozen, identify_static(frozen, cases, groups="model", bar_tol=None))
    held_frozen = predict(stiff, load_forces(stiff, LOADS[4]))
    print(f"held-out with the hinge frozen: {node_rms(held_frozen, shapes[4]) * 1e3:.2f} mm RMS")
    assert node_rms(held_frozen, shapes[4]) > 10 * node_rms(held, shapes[4])


def test_identify_command_fits_the_clamp_and_writes_it(clamp_run, tmp_path):
    model, shapes, cases, _ = clamp_run
    dump_model(model, tmp_path / "model.yaml")
    items = [{"name": c.name, "positions": c.positions.tolist(), "loads": ld} for c, ld in zip(cases, LOADS)]
    items.append({"name": "check", "positions": shapes[4].tolist(), "loads": LOADS[4], "held_out": True})
    (tmp_path / "cases.yaml").write_text(yaml.safe_dump({"params": ["stiffness", "support_stiffness"],
                                                         "groups": "model", "cases": items}))
    args = [str(tmp_path / "model.yaml"), "--static", str(tmp_path / "cases.yaml"), "--out", str(tmp_path / "out"),
            "--no-plots"]
    assert identify_main(args) == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    got = {p["name"]: p["estimate"] for p in report["parameters"]}
    assert abs(got["support_stiffness:hinge"] / TRUE_CLAMP - 1) < 0.05
    written = load_model(str(tmp_path / "out" / "identified.yaml"))
    assert written.supports.stiffness[0] == pytest.approx(got["support_stiffness:hinge"], rel=1e-6)


def test_a_supported_model_placed_at_a_take_moves_its_anchors_and_rest_directions():
    """``predict(..., boundary=take)`` moves the model onto the take's fixed nodes: explicit anchors and rest
    directions move with it, so the prediction is the same shape, moved."""
    doc = rig_document(translational=("n5", 2000.0))
    doc["supports"][1]["rest_direction"] = [0.1, -0.2, -1.0]
    doc["supports"][2]["anchor"] = [0.01, 0.02, 0.0]
    model = build_model(spec_from_dict(doc, "<rig>"))
    c, s = np.cos(0.5), np.sin(0.5)
    R, t = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]), np.array([0.5, -0.2, 0.0])   # about z: gravity
    F = load_forces(model, LOADS[2])
    here = predict(model, F)
    there = predict(model, F @ R.T, boundary=model.positions[:model.n_physical] @ R.T + t)
    # settle's tolerance 1e-10 N over stiffnesses ~1e2..1e3 N/m: far below 1e-9 m
    assert np.abs(there - (here @ R.T + t)).max() < 1e-9
