"""Static identification (issue #13): recover string stiffnesses from noisy equilibrium captures made by
the engine itself, predict a held-out load, flag what the data cannot separate by name, reject bad input."""
from __future__ import annotations

import itertools
import json
from dataclasses import replace

import numpy as np
import pytest
import yaml

from tensegrity_engine import build_model, load_model, spec_from_dict
from tensegrity_engine.identify.static import (StaticCase, apply, identified_model, identify_static, load_forces,
                                               predict)

NOISE = 5e-4          # m, per coordinate


def six_bar(L=0.6, stiffness=500.0, tension=40.0, bar_mass=0.2):
    """Expanded octahedron: nodes at cyclic permutations of (0, ±a, ±b), b = L/2, a = L/4; 6 bars of length L,
    24 strings on the icosahedron edges that do not join parallel bar ends; the three lowest nodes fixed."""
    a, b = L / 4, L / 2
    base = [(0.0, s1 * a, s2 * b) for s1 in (1, -1) for s2 in (1, -1)]
    P = np.array([[p[(i - sh) % 3] for i in range(3)] for sh in range(3) for p in base])
    pairs = list(itertools.combinations(range(12), 2))
    dist = {q: np.linalg.norm(P[q[0]] - P[q[1]]) for q in pairs}
    bars = [q for q in pairs if abs(dist[q] - L) < 1e-9]
    edge = np.sqrt(a * a + b * b + (b - a) ** 2)
    strings = [q for q in pairs if abs(dist[q] - edge) < 1e-9]
    assert len(bars) == 6 and len(strings) == 24
    low = set(np.argsort(P[:, 2], kind="stable")[:3].tolist())
    d = {"schema": "tensegrity-model", "version": 1, "name": "six_bar",
         "nodes": [{"name": f"n{i}", "position": P[i].tolist(), **({"fixed": True} if i in low else {})}
                   for i in range(12)],
         "bars": [{"name": f"b{k}", "nodes": [f"n{i}", f"n{j}"], "mass": bar_mass} for k, (i, j) in enumerate(bars)],
         "strings": [{"name": f"s{k}", "path": [f"n{i}", f"n{j}"], "stiffness": stiffness, "tension": tension}
                     for k, (i, j) in enumerate(strings)]}
    return build_model(spec_from_dict(d, "<six_bar>"))


def perturbed(model, factors):
    """``model`` with each string's stiffness (or EA) times ``factors[name]`` and the same rest lengths."""
    strings = tuple(replace(s, EA=s.EA * factors[s.name] if s.EA else None, rest_length=float(r), tension=None,
                            stiffness=s.stiffness * factors[s.name] if s.stiffness else None)
                    for s, r in zip(model.spec.strings, model.rest_length))
    return build_model(replace(model.spec, strings=strings))


def true_value(model, factors, string):
    c = model.string_names.index(string)
    nominal = model.string_EA[c] if not np.isnan(model.string_EA[c]) else model.string_stiffness[c]
    return nominal * factors[string]


def rms(A, B) -> float:
    return float(np.sqrt(np.mean(np.sum((np.asarray(A) - np.asarray(B)) ** 2, axis=1))))


def synthetic(model, factors, loads, seed):
    """Truth shapes under the 4 loads (settle), noisy captures of the first 3."""
    truth = perturbed(model, factors)
    shapes = [predict(truth, load_forces(truth, ld)) for ld in loads]
    rng = np.random.default_rng(seed)
    cases = [StaticCase(s + rng.normal(0.0, NOISE, s.shape), load_forces(model, ld), f"load {k}")
             for k, (s, ld) in enumerate(zip(shapes[:3], loads[:3]))]
    return shapes, cases


def six_bar_loads(model) -> tuple:
    """(stiffness factors per string, 20 % around 1; the four load cases on the four highest nodes)."""
    rng = np.random.default_rng(1)
    factors = {s: 1.0 + rng.uniform(-0.2, 0.2) for s in model.string_names}
    top = [model.node_names[i] for i in np.argsort(-model.positions[:, 2], kind="stable")[:4]]
    loads = [[], [{"node": top[0], "mass": 4.0}],
             [{"node": top[1], "mass": 3.0}, {"node": top[2], "force": [10.0, 0.0, 0.0]}],
             [{"node": top[3], "mass": 2.0}]]
    return factors, loads


@pytest.fixture(scope="module")
def six_bar_run():
    model = six_bar()
    factors, loads = six_bar_loads(model)
    shapes, cases = synthetic(model, factors, loads, seed=11)
    return model, factors, loads, shapes, cases, identify_static(model, cases)


@pytest.fixture(scope="module")
def manipulator_run():
    model = load_model("stacked_manipulator")
    rng = np.random.default_rng(2)
    gf = {g: 1.0 + rng.choice([-1, 1]) * rng.uniform(0.1, 0.2) for g in sorted(set(model.string_group))}
    factors = {s: gf[g] for s, g in zip(model.string_names, model.string_group)}
    loads = [[], [{"node": "n22", "mass": 4.0}],
             [{"node": "n11", "mass": 3.0}, {"node": "n23", "force": [25.0, 0.0, 0.0]}],
             [{"node": "n24", "mass": 1.5}, {"node": "n10", "force": [0.0, 10.0, 0.0]}]]
    shapes, cases = synthetic(model, factors, loads, seed=3)
    return model, factors, loads, shapes, cases, identify_static(model, cases, groups="model")


def test_six_bar_stiffnesses_within_5_percent_or_flagged(six_bar_run):
    model, factors, _, _, _, res = six_bar_run
    fixed = set(model.fixed_nodes.tolist())
    between_fixed = {f"stiffness:{s}" for s, path in zip(model.string_names, model.string_paths)
                     if set(path.tolist()) <= fixed}
    assert len(between_fixed) == 2          # strings joining two fixed nodes: no free-node equation sees them
    assert between_fixed <= set(res.unidentifiable_names())
    assert any(d["kind"] == "null" and set(d["parameters"]) == {nm} for d in res.unidentifiable for nm in between_fixed)
    assert np.all(np.isinf(res.std_error[[res.names.index(nm) for nm in between_fixed]]))
    identified = 0
    for name, est, se, ok in zip(res.names, res.estimate, res.std_error, res.identifiable):
        err = abs(est / true_value(model, factors, name.split(":")[1]) - 1.0)
        if ok:
            identified += 1
            assert err <= 0.05, (name, err)
            assert 0 < se <= 0.05 * est
    assert identified == 22
    assert 0.5 * NOISE < res.noise_estimate < 2 * NOISE       # the misfit matches the capture noise
    errs = [abs(e / true_value(model, factors, n.split(":")[1]) - 1) for n, e, ok in
            zip(res.names, res.estimate, res.identifiable) if ok]
    print(f"\nsix-bar static: {identified}/24 identified, worst {max(errs):.2%}; flagged {sorted(between_fixed)}")


def test_six_bar_predicts_held_out_load_within_1_mm(six_bar_run):
    model, _, loads, shapes, _, res = six_bar_run
    held_out = load_forces(model, loads[3])
    before = rms(predict(model, held_out), shapes[3])
    after = rms(predict(identified_model(model, res), held_out), shapes[3])
    print(f"\nsix-bar static held-out load: {before * 1e3:.2f} mm -> {after * 1e3:.2f} mm RMS")
    assert after <= 1e-3 < before


def test_manipulator_group_stiffnesses_and_held_out_prediction(manipulator_run):
    model, factors, loads, shapes, _, res = manipulator_run
    assert len(res.names) == 6 and res.groups["stage1 actuated"] == ["sc1", "sc2", "sc3"]
    for name, est, ok in zip(res.names, res.estimate, res.identifiable):
        err = abs(est / true_value(model, factors, res.groups[name.split(":")[1]][0]) - 1.0)
        assert ok or name in res.unidentifiable_names()
        if ok:
            assert err <= 0.05, (name, err)
    assert all(res.identifiable)            # 3 loads determine all six group stiffnesses here
    assert np.isfinite(res.condition_number) and res.condition_number < 1e3
    held_out = load_forces(model, loads[3])
    before = rms(predict(model, held_out), shapes[3])
    after = rms(predict(identified_model(model, res), held_out), shapes[3])
    worst = max(abs(e / true_value(model, factors, res.groups[n.split(":")[1]][0]) - 1)
                for n, e in zip(res.names, res.estimate))
    print(f"\nmanipulator static: 6 groups, worst {worst:.2%}; held-out load {before * 1e3:.2f} mm -> "
          f"{after * 1e3:.2f} mm RMS")
    assert after <= 1e-3 and before > 3e-3


def chain(k_upper=800.0, k_lower=500.0):
    """A point mass between two fixed nodes on a vertical line, hung on two springs."""
    d = {"schema": "tensegrity-model", "version": 1, "name": "chain",
         "nodes": [{"name": "top", "position": [0, 0, 1.0], "fixed": True},
                   {"name": "mid", "position": [0, 0, 0.5], "mass": 1.0},
                   {"name": "bottom", "position": [0, 0, 0.0], "fixed": True}],
         "strings": [{"name": "upper", "path": ["top", "mid"], "stiffness": k_upper, "rest_length": 0.45},
                     {"name": "lower", "path": ["mid", "bottom"], "stiffness": k_lower, "rest_length": 0.46}]}
    return build_model(spec_from_dict(d, "<chain>"))


def test_one_load_case_cannot_separate_two_springs_flagged_by_name():
    model, truth = chain(), chain(900.0, 450.0)
    loads = [[], [{"node": "mid", "mass": 2.0}]]
    shapes = [predict(truth, load_forces(truth, ld)) for ld in loads]
    one = identify_static(model, [(shapes[0], load_forces(model, loads[0]))])
    assert set(one.unidentifiable_names()) == {"stiffness:upper", "stiffness:lower"}
    assert {"stiffness:upper", "stiffness:lower"} in [set(d["parameters"]) for d in one.unidentifiable]
    two = identify_static(model, [(s, load_forces(model, ld)) for s, ld in zip(shapes, loads)])
    assert all(two.identifiable)
    assert np.allclose(two.estimate, [900.0, 450.0], rtol=1e-6)


def hanger(stiffness=(300.0, 250.0, 280.0), rest=(0.3, 0.32, 0.28)):
    """A 1 kg point mass hung from three fixed anchors by three springs."""
    anchors = [(0.4, 0.0, 1.0), (-0.2, 0.35, 1.0), (-0.2, -0.35, 1.0)]
    d = {"schema": "tensegrity-model", "version": 1, "name": "hanger",
         "nodes": [{"name": f"a{i}", "position": list(p), "fixed": True} for i, p in enumerate(anchors)]
         + [{"name": "mid", "position": [0.0, 0.0, 0.5], "mass": 1.0}],
         "strings": [{"name": f"s{i}", "path": [f"a{i}", "mid"], "stiffness": k, "rest_length": r}
                     for i, (k, r) in enumerate(zip(stiffness, rest))]}
    return build_model(spec_from_dict(d, "<hanger>"))


def test_stiffness_and_rest_length_together():
    """Noise-free: three loads separate stiffness and rest length of each spring; one load cannot.
    (Two springs in series could never be separated: a common rest-length shift changes no tension.)"""
    model, truth = hanger(), hanger((330.0, 225.0, 300.0), (0.29, 0.33, 0.27))
    loads = [[], [{"node": "mid", "mass": 2.0}], [{"node": "mid", "force": [8.0, 4.0, -5.0]}]]
    cases = [(predict(truth, load_forces(truth, ld)), load_forces(model, ld)) for ld in loads]
    res = identify_static(model, cases, params=("stiffness", "rest_length"))
    got = dict(zip(res.names, res.estimate))
    assert [got[f"stiffness:s{i}"] for i in range(3)] == pytest.approx([330.0, 225.0, 300.0], rel=1e-6)
    assert [got[f"rest_length:s{i}"] for i in range(3)] == pytest.approx([0.29, 0.33, 0.27], rel=1e-6)
    assert all(res.identifiable) and not res.warnings
    single = identify_static(model, cases[:1], params=("stiffness", "rest_length"))
    assert set(single.unidentifiable_names()) == set(res.names)


def test_slack_string_is_reported():
    """A load that slackens a string breaks the taut-string equations: the result says which and where."""
    model = hanger()
    up = [{"node": "mid", "force": [100.0, 0.0, 0.0]}]
    shape = predict(model, load_forces(model, up))
    assert model.string_lengths(model.from_physical(shape))[0] < model.rest_length[0]     # s0 is slack
    res = identify_static(model, [(shape, load_forces(model, up))])
    assert any(w.startswith("case 0: string 's0' comes out slack") for w in res.warnings)


def test_ea_strings_stiffness_and_rest_length_noise_free(manipulator_run):
    """EA strings use T = EA (L/xi0 - 1): with exact captures both EA and rest lengths come back."""
    model, factors, loads, shapes, _, _ = manipulator_run
    cases = [(s, load_forces(model, ld)) for s, ld in zip(shapes, loads)]
    res = identify_static(model, cases, params=("stiffness", "rest_length"), groups="model")
    for name, est in zip(res.names, res.estimate):
        kind, what = name.split(":")
        want = (true_value(model, factors, res.groups[what][0]) if kind == "stiffness"
                else model.rest_length[model.string_names.index(what)])
        assert est == pytest.approx(want, rel=1e-5), name


def test_bar_masses_with_stiffnesses_noise_free():
    """Known payloads fix the force scale, so bar masses (half on each end) come back with the stiffnesses."""
    model = six_bar()
    rng = np.random.default_rng(4)
    mass = {b: 0.2 * (1 + rng.uniform(-0.3, 0.3)) for b in model.bar_names}
    truth = perturbed(model, {s: 1.1 for s in model.string_names})
    truth = build_model(replace(truth.spec, bars=tuple(replace(b, mass=mass[b.name]) for b in truth.spec.bars)))
    top = [model.node_names[i] for i in np.argsort(-model.positions[:, 2], kind="stable")[:3]]
    loads = [[], [{"node": top[0], "mass": 4.0}], [{"node": top[1], "mass": 3.0}, {"node": top[2], "force": [10, 0, 0]}]]
    cases = [(predict(truth, load_forces(truth, ld)), load_forces(model, ld)) for ld in loads]
    res = identify_static(model, cases, params=("stiffness", "bar_mass"))
    assert res.bar_masses == pytest.approx(mass, rel=1e-6)
    assert res.string_stiffness["s0"][1] == pytest.approx(550.0, rel=1e-6)


def test_apply_writes_a_loadable_model_with_provenance(six_bar_run, tmp_path):
    model, _, _, _, _, res = six_bar_run
    doc = apply(model, res, source="synthetic")
    text = yaml.safe_dump(doc)
    back = build_model(spec_from_dict(yaml.safe_load(text), "<identified>"))
    for name, est in zip(res.names, res.estimate):
        c = back.string_names.index(name.split(":")[1])
        assert back.string_stiffness[c] == pytest.approx(est, rel=1e-12)
    assert np.allclose(back.rest_length, model.rest_length)
    assert "Identified (static)" in back.spec.notes and "stiffness:s0" in back.spec.notes
    assert json.loads(json.dumps(res.as_dict()))["unidentifiable_names"] == res.unidentifiable_names()


def test_bad_input_names_the_case_and_the_fix(six_bar_run):
    model, _, _, shapes, cases, _ = six_bar_run
    F = load_forces(model, [])
    with pytest.raises(ValueError, match=r"top: positions have shape \(11, 3\).*12 physical nodes"):
        identify_static(model, [StaticCase(shapes[0][:11], F, "top")])
    bad = shapes[0].copy()
    bad[5, 1] = np.nan
    with pytest.raises(ValueError, match=r"case 1: positions of n5 are not finite.*fill the gap"):
        identify_static(model, [cases[0], (bad, F)])
    with pytest.raises(ValueError, match=r"heavy: load 0 names unknown node 'n99'; use one of"):
        load_forces(model, [{"node": "n99", "mass": 1.0}], where="heavy")
    with pytest.raises(ValueError, match="params must be"):
        identify_static(model, cases, params=("damping",))


def test_cli_writes_identified_model_report_and_plot(six_bar_run, tmp_path, capsys):
    from tensegrity_engine.cli.identify import main
    from tensegrity_engine.model.write import dump_model
    model, _, loads, shapes, cases, res = six_bar_run
    dump_model(model, tmp_path / "six_bar.yaml")
    names = np.array(model.node_names)
    np.savez(tmp_path / "take0.npz", nodes=np.stack([cases[0].positions] * 2), node_names=names)
    header = [f"{n}.{c}" for n in model.node_names for c in "xyz"]
    (tmp_path / "take1.csv").write_text(",".join(["t"] + header) + "\n"
                                        + "0.0," + ",".join(map(repr, cases[1].positions.ravel().tolist())) + "\n")
    doc = {"cases": [{"name": "empty", "positions": "take0.npz", "loads": loads[0]},
                     {"name": "one", "positions": "take1.csv", "loads": loads[1]},
                     {"name": "two", "positions": cases[2].positions.tolist(), "loads": loads[2]},
                     {"name": "check", "positions": shapes[3].tolist(), "loads": loads[3], "held_out": True}]}
    (tmp_path / "cases.yaml").write_text(yaml.safe_dump(doc))
    out = tmp_path / "out"
    assert main([str(tmp_path / "six_bar.yaml"), "--static", str(tmp_path / "cases.yaml"), "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    got = {p["name"]: p["estimate"] for p in report["parameters"]}
    assert got == pytest.approx(dict(zip(res.names, res.estimate)), rel=1e-9)   # same fit as the API
    assert set(report["unidentifiable_names"]) == set(res.unidentifiable_names())
    assert report["held_out"][0]["rms_identified_m"] <= 1e-3 < report["held_out"][0]["rms_before_m"]
    back = load_model(out / "identified.yaml")
    assert back.string_stiffness[0] == pytest.approx(got["stiffness:s0"], rel=1e-12)
    assert (out / "identify.png").stat().st_size > 10_000
    assert "NOT IDENTIFIABLE" in capsys.readouterr().out
    # a capture without one of the model's nodes: exit 2, naming the case, the node and the fix
    (tmp_path / "bad.csv").write_text(",".join(["t"] + header[3:]) + "\n0.0," + ",".join(["0.1"] * 33) + "\n")
    doc["cases"][1]["positions"] = "bad.csv"
    (tmp_path / "cases.yaml").write_text(yaml.safe_dump(doc))
    assert main([str(tmp_path / "six_bar.yaml"), "--static", str(tmp_path / "cases.yaml"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "case 'one'" in err and "n0.x" in err and "<node>.x" in err
    # the same through the engine's command line ('tensegrity identify')
    from tensegrity_engine.cli import main as tensegrity
    assert tensegrity(["identify", str(tmp_path / "six_bar.yaml"), "--static", str(tmp_path / "cases.yaml"),
                       "--out", str(out)]) == 2
    doc["cases"][1]["positions"] = "take1.csv"
    (tmp_path / "cases.yaml").write_text(yaml.safe_dump(doc))
    assert tensegrity(["identify", str(tmp_path / "six_bar.yaml"), "--static", str(tmp_path / "cases.yaml"),
                       "--out", str(out), "--no-plots"]) == 0
    again = json.loads((out / "report.json").read_text())
    assert {p["name"]: p["estimate"] for p in again["parameters"]} == pytest.approx(got, rel=1e-9)
