"""k-stage towers of n-prisms: counts, class-2 shared nodes, and (for small towers) a verified prestressed,
stable equilibrium with every string taut.

Tolerances: the prestress residual bound 1e-9 N is the one the CLI enforces; the solver reaches ~1e-13 N
on these structures (tensions of 5..40 N, so 1e-9 N leaves four orders of magnitude for rounding).
"""
import numpy as np
import pytest

from tensegrity_engine.statics.equilibrium import prestress, stability, with_rest_lengths
from tensegrity_engine.generators import tower
from tensegrity_engine.generators.tower import class1_junction_ok, tower_geometry
from tensegrity_engine.model.build import build_model
from tensegrity_engine.model.spec import spec_from_dict


def built(doc):
    return build_model(spec_from_dict(doc, doc["name"] + ".yaml"))


def verified(model, t_min=5.0):
    """(prestress result, stability dict) of the model's shape prestressed to t_min [N]."""
    eq = prestress(model, min_tension=t_min)
    ms = with_rest_lengths(model, eq.rest_lengths)
    return eq, stability(ms, ms.positions)


@pytest.mark.parametrize("joints,n,k", [("class1", 3, 1), ("class1", 3, 3), ("class1", 5, 2), ("class1", 5, 5),
                                        ("class1", 8, 2), ("class1", 12, 2),
                                        ("class2", 3, 2), ("class2", 5, 5), ("class2", 8, 3)])
def test_small_towers_are_stable_all_taut_equilibria(joints, n, k):
    eq, st = verified(built(tower(k, n, joints)))
    assert eq.message == "" and eq.residual <= 1e-9                       # N
    assert eq.tensions.min() >= 5.0 - 1e-9                                  # every string taut
    assert st["stable"] and st["rigid_body_modes"] == 6


@pytest.mark.parametrize("joints", ["class1", "class2"])
def test_thousand_bar_tower_counts(joints):
    """200 stages of 5-prisms: generation and model building only (its prestress is a separate benchmark)."""
    m = built(tower(200, 5, joints))
    c = m.counts
    assert c["beta"] == 1000
    if joints == "class1":
        # 2kn nodes, 3kn prism strings + 4(k-1)n junction strings
        assert (c["mu"], c["nu"], c["sigma_s"]) == (2000, 0, 3 * 1000 + 4 * 199 * 5)
    else:
        # (k+1)n shared ring nodes, one virtual node per inner bar end, (k+1)n ring + kn diagonal strings
        assert (c["mu"], c["nu"], c["sigma_s"]) == (201 * 5, 199 * 5, 201 * 5 + 1000)
        assert c["mu"] + c["nu"] == 2 * c["beta"]


def test_class2_bars_share_nodes_by_name():
    doc = tower(3, 4, "class2")
    ends = [nd for b in doc["bars"] for nd in b["nodes"]]
    names, counts = np.unique(ends, return_counts=True)
    assert sorted(set(counts)) == [1, 2] and sum(counts == 2) == 2 * 4     # the two inner levels: 2 bars each
    assert "constraints" not in doc                                      # the engine adds the coincidences


def test_class1_stages_overlap_and_junctions_are_congruent():
    X, bars, strings = tower_geometry(4, 5, "class1")
    z = X[:, 2].reshape(4, 2, 5)
    assert np.all(z[1:, 0] < z[:-1, 1])                                  # next stage starts below this top
    saddle = np.array([[a, b] for a, b, g in strings if g == "saddle"])
    L = np.linalg.norm(X[saddle[:, 0]] - X[saddle[:, 1]], axis=1)
    assert np.ptp(L) < 1e-12                                             # m: one saddle length (screw symmetry)


def test_bad_arguments_are_clear():
    with pytest.raises(ValueError, match="stages >= 1"):
        tower(0)
    with pytest.raises(ValueError, match="n >= 3"):
        tower(2, 2)
    with pytest.raises(ValueError, match="joints"):
        tower(2, 4, "class3")
    with pytest.raises(ValueError, match="overlap"):
        tower(2, 4, overlap=0.5)
    assert not class1_junction_ok(12, overlap=0.05)                      # too much overlap for 12-prisms
    with pytest.raises(ValueError, match="no self-stress"):
        tower(2, 12, overlap=0.05)
