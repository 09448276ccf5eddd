"""Self-collision assessment (unknown nodes, margins) and the safety latch, without ROS."""
import numpy as np
import pytest

from tensegrity_engine import load_model
from tensegrity_engine.collision.capsules import check, model_elements
from tensegrity_monitor.assessment import CollisionAssessor
from tensegrity_monitor.safety import SafetyLatch


@pytest.fixture(scope="module")
def model():
    return load_model("stacked_manipulator")


def touching(model, gap=0.0):
    """Physical positions with node n5 moved so bar b2 (through n5) passes `gap` from the axis of bar b1."""
    X = model.positions[:model.n_physical].copy()
    i1, j1 = model.bars[0]
    mid = 0.5 * (X[i1] + X[j1])
    k = model.node_index("n5") if "n5" in model.node_names else model.bars[1, 0]
    X[k] = mid
    return X, k


def test_rest_configuration_is_clear(model):
    a = CollisionAssessor(model, warn_margin=0.01).assess(model.positions[:model.n_physical])
    ref = check(model_elements(model), model.positions)
    assert a.min_clearance == pytest.approx(ref.min_clearance, abs=1e-15)
    assert len(a.contact_pairs) == 0 and len(a.unknown_nodes) == 0 and np.all(np.isfinite(a.clearance))


def test_contact_is_found_with_closest_points(model):
    X, k = touching(model)
    asr = CollisionAssessor(model, warn_margin=0.01)
    a = asr.assess(X)
    assert len(a.contact_pairs) >= 1 and a.min_clearance < 0
    names = [tuple(asr.pair_names[p]) for p in a.contact_pairs]
    assert any("b1" in pair for pair in names)
    assert set(a.contact_pairs) <= set(a.warn_pairs)
    assert a.points_a.shape == (len(a.warn_pairs), 3)


def test_unknown_nodes_exclude_their_pairs_only(model):
    X, k = touching(model)
    X[k] = np.nan                                   # the node that makes the contact is occluded
    asr = CollisionAssessor(model)
    a = asr.assess(X)
    assert list(a.unknown_nodes) == [k]
    e = asr.elements
    phys = np.where(model.virtual_of >= 0, model.virtual_of, np.arange(model.n_nodes))
    touches = np.any(phys[e.ends] == k, axis=1)
    nan_pairs = touches[e.pair_i] | touches[e.pair_j]
    assert np.all(np.isnan(a.clearance[nan_pairs])) and np.all(np.isfinite(a.clearance[~nan_pairs]))
    assert len(a.contact_pairs) == 0                # never guessed


def test_wrong_node_count_and_bad_margins_raise(model):
    with pytest.raises(ValueError, match="expected 24 node positions"):
        CollisionAssessor(model).assess(np.zeros((5, 3)))
    with pytest.raises(ValueError):
        CollisionAssessor(model, warn_margin=0.0, contact_margin=0.01)


def test_latch_arms_on_first_clean_check_and_holds_contact_until_cleared():
    s = SafetyLatch(stop_on_stale=True, auto_clear=False)
    assert s.stop and not s.armed
    assert s.update(stale="no data") is False and s.stop          # still unknown
    assert s.update() is True and not s.stop and s.armed          # first clean check releases it
    assert s.update(contact="b1-b2") is True and s.stop
    assert s.clear() == (False, "cannot clear: b1-b2")            # hazard still there
    assert s.update() is False and s.stop                         # latched
    ok, _ = s.clear()
    assert ok and not s.stop
    assert s.update(stale="stale 1 s") is True and s.stop          # stale input stops too


def test_latch_auto_clear_and_stale_without_stop():
    s = SafetyLatch(stop_on_stale=False, auto_clear=True)
    s.update()
    assert s.update(stale="stale") is False and not s.stop
    s.update(contact="x")
    assert s.stop
    assert s.update() is True and not s.stop


def test_latch_never_arms_on_a_check_with_unknown_nodes():
    s = SafetyLatch(stop_on_stale=True, auto_clear=True)
    assert s.update(unknown="24 node(s) unknown") is False and s.stop and not s.armed
    assert s.update(incomplete="1 node(s) unknown for 0.01 s") is False and s.stop and not s.armed
    assert s.clear()[0] is False                                   # nothing to clear into
    assert s.update() is True and not s.stop and s.armed
    assert s.update(incomplete="n3 unknown for 0.05 s") is False and not s.stop   # within its grace
    assert s.update(unknown="n3 unknown for 0.2 s") is True and s.stop
    assert s.update(incomplete="n3 unknown") is False and s.stop   # auto_clear waits for every node
    assert s.update() is True and not s.stop


def test_absurd_positions_are_unknown_not_silently_unchecked(model):
    """A corrupt message with a node at 1e300 m: its pairs would come out NaN and look 'checked'."""
    X = model.positions[:model.n_physical].copy()
    X[3], X[5] = 1e300, -1e308
    a = CollisionAssessor(model).assess(X)
    assert list(a.unknown_nodes) == [3, 5]
    assert np.all(np.isfinite(a.clearance) | np.isnan(a.clearance))


def test_models_too_large_for_all_pairs_are_refused(model, monkeypatch):
    import tensegrity_monitor.assessment as A
    monkeypatch.setattr(A, "MAX_CAPSULES", 53)                 # the manipulator has 18 bars + 36 strings
    with pytest.raises(ValueError, match="54 capsules"):
        CollisionAssessor(model)


def grounded_prism(height=0.0):
    """prism3 with a ground plane and a box, its lowest bar end `height` [m] above the ground."""
    from tensegrity_engine import build_model, spec_from_dict
    from tensegrity_engine.model.write import spec_to_dict
    doc = spec_to_dict(load_model("prism3"))
    doc["obstacles"] = [{"name": "ground", "type": "plane"},
                        {"name": "crate", "type": "box", "centre": [5.0, 0.0, 0.5], "size": [1.0, 1.0, 1.0]}]
    m = build_model(spec_from_dict(doc, source="test"))
    X = m.positions[:m.n_physical].copy()
    X[:, 2] += height - X[:, 2].min()
    return m, X


def test_bars_against_obstacles_are_named_measured_and_masked_when_unknown():
    m, X = grounded_prism()
    asr = CollisionAssessor(m, obstacle_warn_margin=-0.002, obstacle_contact_margin=-0.02)
    assert asr.obstacle_pairs[:2] == [[m.bar_names[0], "ground"], [m.bar_names[0], "crate"]]
    r = m.bar_radius
    lowest = int(np.argmin(np.minimum(X[m.bars[:, 0], 2], X[m.bars[:, 1], 2]) - r))
    X[:, 2] += r[lowest] - 0.005                             # the lowest bar's surface 5 mm into the ground
    o = asr.assess(X).obstacles
    k = 2 * lowest
    assert o.clearance[k] == pytest.approx(-0.005, abs=1e-12) and o.closest_pair == k
    assert k in o.warn_pairs and not len(o.contact_pairs)
    assert asr.obstacle_text(o, k) == f"bar {m.bar_names[lowest]} vs obstacle ground: clearance -5.0 mm"
    assert np.allclose(o.points_obstacle[list(o.warn_pairs).index(k)][2], 0.0)
    X[:, 2] -= 0.03
    o = asr.assess(X).obstacles
    assert k in o.contact_pairs
    X[m.bars[lowest, 0]] = np.nan                            # an unknown end: that bar is not checked
    o = asr.assess(X).obstacles
    assert np.all(np.isnan(o.clearance[2 * lowest:2 * lowest + 2])) and k not in o.warn_pairs
    assert CollisionAssessor(load_model("prism3")).assess(grounded_prism()[1]).obstacles is None
    with pytest.raises(ValueError, match="obstacle_warn_margin >= obstacle_contact_margin"):
        CollisionAssessor(m, obstacle_warn_margin=-0.03, obstacle_contact_margin=-0.02)


def test_a_height_field_is_checked_like_the_other_obstacles():
    """prism3 over a tilted height field z = 0.1 x (an inclined plane written as a grid): the lowest bar
    surface pushed 5 mm (along the normal) into it warns, with the clearance of the equal inclined plane."""
    from tensegrity_engine import build_model, spec_from_dict
    from tensegrity_engine.model.write import spec_to_dict
    doc = spec_to_dict(load_model("prism3"))
    xs = [-2.0 + 0.25 * i for i in range(17)]
    doc["obstacles"] = [{"name": "slope", "type": "heightfield", "origin": [-2.0, -2.0, 0.0], "cell": 0.25,
                         "heights": [[0.1 * x for x in xs]] * 17},
                        {"name": "incline", "type": "plane", "normal": [-0.1, 0.0, 1.0], "point": [0, 0, -5]}]
    m = build_model(spec_from_dict(doc, source="test"))
    X = m.positions[:m.n_physical].copy()
    asr = CollisionAssessor(m, obstacle_warn_margin=-0.002, obstacle_contact_margin=-0.02)
    nz = 1.0 / np.hypot(1.0, 0.1)
    gap = (X[:, 2] - 0.1 * X[:, 0]) * nz                     # node heights above the slope, along its normal
    lowest = int(np.argmin(np.minimum(gap[m.bars[:, 0]], gap[m.bars[:, 1]]) - m.bar_radius))
    surface = min(gap[m.bars[lowest]]) - m.bar_radius[lowest]
    X[:, 2] -= (surface + 0.005) / nz
    o = asr.assess(X).obstacles
    k = 2 * lowest
    assert o.clearance[k] == pytest.approx(-0.005, abs=1e-9) and o.closest_pair == k and k in o.warn_pairs
    assert o.clearance[k] == pytest.approx(o.clearance[k + 1] - 5.0 * nz, abs=1e-9)   # the plane 5 m lower
    assert asr.obstacle_text(o, k) == f"bar {m.bar_names[lowest]} vs obstacle slope: clearance -5.0 mm"
