"""A bar pinned at a point along it (``type: pin``, issue 35 item 4): a linear node constraint, exact in the
statics and the dynamics; with a rotational support on the same bar it is the compliant clamp of a rig held
in a base. The clamp's rest direction as a parameter of ``identify --static``."""
from __future__ import annotations

import numpy as np
import pytest
import yaml

from tensegrity_engine import build_model, load_model, spec_from_dict
from tensegrity_engine.dynamics.simulator import Simulator
from tensegrity_engine.errors import ModelError
from tensegrity_engine.identify.static import StaticCase, identified_model, identify_static, load_forces, predict
from tensegrity_engine.model.write import dump_model
from tensegrity_engine.statics.equilibrium import settle
from test_supports import rig_document

AT = 0.452            # m from b1's first (top) node n2: the pin 148 mm above its lower end n3 (bars 0.6 m)


def pinned_document(at=AT, rest_direction=None, clamp=100.0) -> dict:
    """The clamped rig of test_supports with b1 pinned ``at`` m from its top node instead of at its lower end,
    its direction held by the rotational clamp (``rest_direction``: as written, None: the bar's)."""
    d = rig_document(clamp=clamp)
    d["nodes"][3].pop("fixed")
    d["supports"].append({"name": "pin", "type": "pin", "bar": "b1", "at": at})
    if rest_direction is not None:
        d["supports"][1]["rest_direction"] = list(rest_direction)
    return d


def pinned_document_model():
    return build_model(spec_from_dict(pinned_document(), "<pinned>"))


def pin_point(model, X) -> np.ndarray:
    """The held point of b1 in positions X (n, 3) [m]."""
    a, b = X[2], X[3]
    return a + AT / np.linalg.norm(b - a) * (b - a)


def test_a_pin_holds_its_point_exactly_in_statics_and_dynamics():
    model = pinned_document_model()
    p0 = pin_point(model, model.positions)
    F = load_forces(model, [{"node": "n2", "force": [30.0, -20.0, 0.0]}, {"node": "n7", "mass": 2.0}])
    eq = settle(model, external=F)
    assert eq.residual < 1e-9, eq.residual                    # settle's Newton tolerance [N]: rounding level
    moved = eq.positions - model.positions
    # the load turns b1 about its pin (its ends move by mm) while the pinned point stays put to rounding
    assert np.linalg.norm(moved[2]) > 1e-3 and np.linalg.norm(moved[3]) > 1e-4
    assert np.abs(pin_point(model, eq.positions) - p0).max() < 1e-12
    sim = Simulator(model, integrator="rk4", dt=1e-3)
    sim.reset(velocities=np.random.default_rng(2).normal(0.0, 0.05, (model.n_nodes, 3)))
    tr = sim.run(0.3, rate=100)
    # a constraint eliminated from the coordinates: the pin holds through the motion to rounding, while the
    # bar's ends swing (the bar length is RK4's drift, not the pin's)
    assert np.abs(np.array([pin_point(model, X) for X in tr.nodes]) - p0).max() < 1e-12
    assert np.abs(tr.nodes[:, 2] - model.positions[2]).max() > 1e-4


def test_a_pin_at_the_marker_and_its_errors(tmp_path):
    doc = pinned_document()
    doc["supports"][-1]["at"] = "marker"
    doc["nodes"][3]["marker"] = {"along_bar": 0.148}         # n3 ends only b1: the marker is 148 mm up it
    model = build_model(spec_from_dict(doc, "<marker>"))
    assert np.abs(pin_point(model, settle(model).positions) - pin_point(model, model.positions)).max() < 1e-12
    again = load_model(str(dump_model(model, tmp_path / "again.yaml")))
    assert again.spec.supports == model.spec.supports        # written back as 'at: marker'
    from tensegrity_engine.model.supports import support_summary
    assert support_summary(model.spec.supports[-1]) == "pin (pin b1 at marker)"       # tensegrity info's line
    assert support_summary(pinned_document_model().spec.supports[-1]) == "pin (pin b1 at 0.452 m)"
    for change, words in ((lambda d: d["nodes"][3].pop("marker"), "'at: marker' needs exactly one end"),
                          (lambda d: d["supports"][-1].update(at=0.7), "'at'"),
                          (lambda d: d["supports"].append({"name": "pin2", "type": "pin", "bar": "b0", "at": 0.1}),
                           "already held by support 'base'")):
        bad = pinned_document()
        bad["supports"][-1]["at"] = "marker"
        bad["nodes"][3]["marker"] = {"along_bar": 0.148}
        change(bad)
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump(bad))
        with pytest.raises(ModelError) as info:
            load_model(str(path))
        assert words in str(info.value) and "support 'pin" in str(info.value), str(info.value)


# --- the clamp's rest direction as a parameter --------------------------------------------------------------
NOISE = 4e-4                               # m per coordinate: a take's marker noise (0.3-0.5 mm on the lab's rig)
TRUE_REST = np.array([np.sin(np.radians(2.5)) * np.cos(0.7), np.sin(np.radians(2.5)) * np.sin(0.7),
                      -np.cos(np.radians(2.5))])                      # b1 points down; the truth 2.5° off
TAKES = [[], [{"node": "n4", "mass": 2.0}], [{"node": "n6", "mass": 3.0}],
         [{"node": "n8", "mass": 2.0}, {"node": "n9", "mass": 1.0}], [{"node": "n10", "mass": 3.0}],
         [{"node": "n5", "mass": 1.5}, {"node": "n11", "mass": 1.0}]]


def pinned_rig(truth: bool):
    """The rig as its file says (strings 500 N/m, clamp 100 N m/rad, rest direction the bar's) or the truth
    (550 N/m, 150 N m/rad, rest direction :data:`TRUE_REST`), with the same rest lengths."""
    from dataclasses import replace
    from test_supports import with_values
    model = build_model(spec_from_dict(pinned_document(), "<pinned_rig>"))
    if not truth:
        return model
    model = with_values(model, 550.0, 150.0)
    supports = tuple(replace(s, reference=tuple(TRUE_REST)) if s.name == "hinge" else s for s in model.spec.supports)
    return build_model(replace(model.spec, supports=supports))


def pinned_takes(truth, loads, seed: int) -> list:
    """Static takes of ``truth`` under each of ``loads`` with :data:`NOISE` on every node: StaticCase list."""
    rng = np.random.default_rng(seed)
    out = []
    for k, load in enumerate(loads):
        F = load_forces(truth, load)
        P = predict(truth, F)
        out.append(StaticCase(P + rng.normal(0.0, NOISE, P.shape), F, f"take{k}", NOISE))
    return out


@pytest.mark.slow
def test_identify_static_recovers_the_clamps_rest_direction(tmp_path):
    model, truth = pinned_rig(False), pinned_rig(True)
    res = identify_static(model, pinned_takes(truth, TAKES, seed=5), groups="model",
                          params=("stiffness", "support_stiffness", "rest_direction"))
    est = dict(zip(res.names, zip(res.estimate, res.std_error, res.identifiable)))
    from tensegrity_engine.identify.static_supports import tilt_basis
    u, v = tilt_basis(model.supports.reference[0])
    r0 = model.supports.reference[0]
    for name, axis in (("rest_tilt_u:hinge", u), ("rest_tilt_v:hinge", v)):
        value, se, ok = est[name]
        true = np.arctan2(TRUE_REST @ axis, TRUE_REST @ r0)
        assert ok and se < np.radians(0.15), (name, value, se)      # determined to better than 0.15°
        assert abs(value - true) < 3 * se, (name, value, true, se)  # within 3 standard errors of the truth
    k, se, ok = est["support_stiffness:hinge"]
    assert abs(k - 150.0) < 3 * se, (k, se)
    turned = identified_model(model, res)
    path = dump_model(turned, tmp_path / "identified.yaml")
    again = load_model(str(path))
    r = again.supports.reference[0]
    assert np.degrees(np.arccos(np.clip(r @ TRUE_REST, -1, 1))) < 0.3     # 2.5° off in the file, now 0.3°


def test_a_negative_tilt_is_not_a_failed_estimate():
    """The command refuses to write a model with a stiffness or rest length ≤ 0; a rest direction's tilt
    angles take either sign (the old check refused every identified clamp tilted toward −u or −v)."""
    from types import SimpleNamespace
    from tensegrity_engine.cli.identify import failed_estimates
    res = SimpleNamespace(names=["support_stiffness:hinge", "rest_tilt_u:hinge", "rest_tilt_v:hinge"],
                          kinds=["support_stiffness", "rest_direction", "rest_direction"],
                          estimate=np.array([150.0, -0.03, 0.0]))
    assert failed_estimates(res) == []
    res.estimate = np.array([-1.0, -0.03, np.nan])
    assert failed_estimates(res) == ["support_stiffness:hinge", "rest_tilt_v:hinge"]


def test_the_rest_direction_parameters_and_their_derivatives():
    """The clamp's natural parameters (k, α, β) from θ = k r: the values, a round trip through the direction
    written back, and the analytic d(k, α, β)/dθ (behind the standard errors) against central differences."""
    from tensegrity_engine.identify import static_supports as sc
    model = pinned_document_model()
    cols = sc.support_columns(model, fit_stiffness=False, fit_direction=True)
    assert cols.index == (0,) and cols.width == (3,)
    r0 = model.supports.reference[0]
    u, v = sc.tilt_basis(r0)
    assert abs(u @ r0) < 1e-15 and abs(v @ r0) < 1e-15 and abs(u @ v) < 1e-15
    th = 150.0 * (r0 + 0.03 * u - 0.05 * v) / np.linalg.norm(r0 + 0.03 * u - 0.05 * v)
    val, D = sc.natural(model, cols, th)
    assert val == pytest.approx([150.0, np.arctan(0.03), np.arctan(-0.05)], rel=1e-12)
    k, r = sc.values(model, cols, val)
    assert k["hinge"] == pytest.approx(150.0) and np.abs(150.0 * r["hinge"] - th).max() < 1e-12
    h = 1e-4                                   # N m/rad: central differences exact to ~(h/k)² ~ 1e-12
    fd = np.stack([(sc.natural(model, cols, th + h * e)[0] - sc.natural(model, cols, th - h * e)[0]) / (2 * h)
                   for e in np.eye(3)], axis=1)
    assert np.abs(fd - D).max() < 1e-9 * np.abs(D).max()
