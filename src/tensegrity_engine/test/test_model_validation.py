"""Model-file validation: every bad model gives a ModelError that names the file, the element and a fix.

Fast: models are only loaded and built (no simulation, no numba compilation). Each error test starts from
a small valid model (``base_model``), changes one thing, writes it to a YAML file and loads it.
"""
from __future__ import annotations

import copy
import math
import textwrap
import warnings

import numpy as np
import pytest
import yaml

from tensegrity_engine import ModelError, build_model, load_model, spec_from_dict


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------
def base_model() -> dict:
    """A small valid model: two bars (one end of b1 fixed), three strings, one of them EA-based."""
    return {
        "schema": "tensegrity-model",
        "version": 1,
        "name": "mini",
        "gravity": [0.0, 0.0, -9.81],
        "nodes": [
            {"name": "n1", "position": [0.0, 0.0, 0.0], "fixed": True},
            {"name": "n2", "position": [1.0, 0.0, 0.0]},
            {"name": "n3", "position": [0.0, 1.0, 0.0]},
            {"name": "n4", "position": [1.0, 1.0, 0.5]},
        ],
        "bars": [
            {"name": "b1", "nodes": ["n1", "n2"], "mass": 1.0, "radius": 0.01},
            {"name": "b2", "nodes": ["n3", "n4"], "mass": 1.0},
        ],
        "strings": [
            {"name": "s1", "path": ["n2", "n3"], "stiffness": 100.0, "rest_length": 1.0, "damping": 1.0},
            {"name": "s2", "path": ["n1", "n3"], "stiffness": 100.0, "rest_length": 0.9},
            {"name": "s3", "path": ["n2", "n4"], "EA": 1000.0, "rest_length": 0.9},
        ],
    }


def write(tmp_path, data, filename="model.yaml"):
    """Write a model (dict -> YAML, raw YAML text, or raw bytes) and return its path."""
    path = tmp_path / filename
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return path


def load(tmp_path, data, filename="model.yaml"):
    return load_model(write(tmp_path, data, filename))


def expect_error(tmp_path, data, element, *words):
    """Load ``data`` from a file and check the ModelError: file, element, 'Fix:' and key words."""
    path = write(tmp_path, data)
    with pytest.raises(ModelError) as info:
        load_model(path)
    err = info.value
    msg = str(err)
    assert msg.startswith(f"{path}: "), msg
    assert err.source == str(path)
    assert element in err.element, msg
    assert f"{path}: {err.element}: " in msg
    assert ". Fix: " in msg and err.fix, msg
    for w in words:
        assert w.lower() in msg.lower(), f"{w!r} not in {msg!r}"
    return err


def mutated(fn):
    d = base_model()
    fn(d)
    return d


# --------------------------------------------------------------------------------------------------
# the base model itself is valid
# --------------------------------------------------------------------------------------------------
def test_base_model_is_valid(tmp_path):
    m = load(tmp_path, base_model())
    assert m.counts == {"mu": 4, "nu": 0, "beta": 2, "sigma_c": 3, "sigma_s": 3, "phi": 1, "alpha": 0}
    assert m.warnings == ()
    assert m.source == str(tmp_path / "model.yaml")
    assert list(m.fixed_nodes) == [0]


# --------------------------------------------------------------------------------------------------
# references to unknown names
# --------------------------------------------------------------------------------------------------
def test_unknown_node_in_bar(tmp_path):
    d = mutated(lambda d: d["bars"][0].update(nodes=["n1", "nX"]))
    expect_error(tmp_path, d, "bar 'b1'", "unknown node", "'nX'")


def test_unknown_node_in_string_path(tmp_path):
    d = mutated(lambda d: d["strings"][0].update(path=["n2", "ghost"]))
    expect_error(tmp_path, d, "string 's1'", "unknown node", "'ghost'")


def test_unknown_node_in_constraint(tmp_path):
    d = mutated(lambda d: d.update(constraints=[{"name": "c1", "terms": {"n2": 1, "nope": -1}}]))
    expect_error(tmp_path, d, "constraint 'c1'", "unknown node", "'nope'")


def test_unknown_node_in_frame(tmp_path):
    d = mutated(lambda d: d.update(frames=[{"name": "f1", "nodes": ["n1", "n2", "n9"]}]))
    expect_error(tmp_path, d, "frame 'f1'", "unknown node", "'n9'")


def test_unknown_frame_x_node(tmp_path):
    d = mutated(lambda d: d.update(frames=[{"name": "f1", "nodes": ["n1", "n2", "n3"], "x_node": "n4"}]))
    expect_error(tmp_path, d, "frame 'f1'", "x_node", "not one of the frame nodes")


def test_actuator_on_unknown_string(tmp_path):
    d = mutated(lambda d: d.update(actuators=[{"name": "m1", "string": "s9", "spool_radius": 0.01}]))
    expect_error(tmp_path, d, "actuator 'm1'", "unknown string", "'s9'")


def test_unhashable_references_give_model_errors(tmp_path):
    # a list where a name is expected used to raise a bare TypeError (unhashable type: 'list')
    d = mutated(lambda d: d.update(actuators=[{"name": "m1", "string": ["s1"], "spool_radius": 0.01}]))
    expect_error(tmp_path, d, "actuator 'm1'", "unknown string")
    d = mutated(lambda d: d.update(frames=[{"name": "f1", "nodes": [["n1"], "n2", "n3"]}]))
    expect_error(tmp_path, d, "frame 'f1'", "unknown node")


# --------------------------------------------------------------------------------------------------
# names
# --------------------------------------------------------------------------------------------------
def test_duplicate_node_names(tmp_path):
    d = mutated(lambda d: d["nodes"].append({"name": "n2", "position": [3.0, 3.0, 3.0]}))
    expect_error(tmp_path, d, "node 'n2'", "duplicate", "nodes[1]")


def test_node_and_bar_share_a_name(tmp_path):
    d = mutated(lambda d: d["bars"][1].update(name="n3"))
    expect_error(tmp_path, d, "bar 'n3'", "duplicate", "nodes[2]")


def test_string_and_bar_share_a_name(tmp_path):
    d = mutated(lambda d: d["strings"][0].update(name="b1"))
    expect_error(tmp_path, d, "string 'b1'", "duplicate", "bars[0]")


def test_missing_name(tmp_path):
    d = mutated(lambda d: d["bars"][1].pop("name"))
    expect_error(tmp_path, d, "bars[1]", "name")


def test_user_node_clashing_with_virtual_node_name(tmp_path):
    def f(d):
        d["nodes"].append({"name": "n2_v1", "position": [2.0, 0.0, 0.0]})
        d["bars"].append({"name": "b3", "nodes": ["n2", "n2_v1"], "mass": 1.0})
    expect_error(tmp_path, mutated(f), "node 'n2_v1'", "virtual node")


# --------------------------------------------------------------------------------------------------
# bars
# --------------------------------------------------------------------------------------------------
def test_zero_length_bar(tmp_path):
    d = mutated(lambda d: d["nodes"][3].update(position=[0.0, 1.0, 0.0]))   # n4 onto n3
    expect_error(tmp_path, d, "bar 'b2'", "zero length", "same position")


def test_bar_with_the_same_node_twice(tmp_path):
    d = mutated(lambda d: d["bars"][0].update(nodes=["n2", "n2"]))
    expect_error(tmp_path, d, "bar 'b1'", "both ends", "'n2'")


def test_bar_with_three_nodes(tmp_path):
    d = mutated(lambda d: d["bars"][0].update(nodes=["n1", "n2", "n3"]))
    expect_error(tmp_path, d, "bar 'b1'", "exactly two")


def test_declared_bar_length_inconsistent(tmp_path):
    d = mutated(lambda d: d["bars"][0].update(length=1.2))
    expect_error(tmp_path, d, "bar 'b1'", "declared length", "1.2")
    # a consistent declaration is accepted
    load(tmp_path, mutated(lambda d: d["bars"][0].update(length=1.0)))


def test_bar_with_both_ends_fixed_is_accepted_and_immobile(tmp_path):
    # a clamped bar (issue 24): its length holds by itself, it takes no bar force and never moves
    model = load(tmp_path, mutated(lambda d: d["nodes"][1].update(fixed=True)))
    assert model.bar_jacobian_sparse[0].nnz == 0


# --------------------------------------------------------------------------------------------------
# strings
# --------------------------------------------------------------------------------------------------
def test_string_path_with_one_node(tmp_path):
    d = mutated(lambda d: d["strings"][0].update(path=["n2"]))
    expect_error(tmp_path, d, "string 's1'", "at least two nodes")


def test_string_path_with_repeated_consecutive_node(tmp_path):
    d = mutated(lambda d: d["strings"][0].update(path=["n2", "n3", "n3", "n4"]))
    expect_error(tmp_path, d, "string 's1'", "twice in a row", "'n3'")


def test_string_path_revisiting_a_node_later_is_allowed(tmp_path):
    d = mutated(lambda d: d["strings"][0].update(path=["n2", "n3", "n4", "n3"], rest_length=2.0))
    m = load(tmp_path, d)
    assert m.counts["sigma_s"] == 5


def test_string_segment_of_zero_length(tmp_path):
    def f(d):
        d["nodes"].append({"name": "n5", "position": [1.0, 0.0, 0.0]})   # on top of n2
        d["strings"].append({"name": "s4", "path": ["n4", "n5", "n2"], "stiffness": 1.0, "rest_length": 1})
    expect_error(tmp_path, mutated(f), "string 's4'", "zero length", "n5-n2")


@pytest.mark.parametrize("element, where, key, value, word", [
    ("string 's1'", ("strings", 0), "stiffness", -100.0, "positive"),
    ("string 's3'", ("strings", 2), "EA", -1000.0, "positive"),
    ("string 's1'", ("strings", 0), "damping", -0.5, ">= 0"),
    ("string 's1'", ("strings", 0), "rest_length", -1.0, "positive"),
    ("string 's1'", ("strings", 0), "tension", -1.0, ">= 0"),
    ("string 's1'", ("strings", 0), "radius", -0.001, ">= 0"),
    ("bar 'b1'", ("bars", 0), "mass", -1.0, ">= 0"),
    ("bar 'b1'", ("bars", 0), "radius", -0.01, ">= 0"),
    ("node 'n2'", ("nodes", 1), "mass", -0.1, ">= 0"),
])
def test_negative_values(tmp_path, element, where, key, value, word):
    d = base_model()
    item = d[where[0]][where[1]]
    if key == "tension":
        item.pop("rest_length")
    item[key] = value
    expect_error(tmp_path, d, element, f"'{key}'", word, str(value))


def test_zero_stiffness_and_zero_ea(tmp_path):
    expect_error(tmp_path, mutated(lambda d: d["strings"][0].update(stiffness=0)), "string 's1'",
                 "'stiffness'", "positive")
    expect_error(tmp_path, mutated(lambda d: d["strings"][2].update(EA=0.0)), "string 's3'", "'EA'", "positive")


def test_string_with_both_ea_and_stiffness(tmp_path):
    d = mutated(lambda d: d["strings"][0].update(EA=500.0))
    expect_error(tmp_path, d, "string 's1'", "exactly one", "EA", "stiffness")


def test_string_with_neither_ea_nor_stiffness(tmp_path):
    d = mutated(lambda d: d["strings"][0].pop("stiffness"))
    expect_error(tmp_path, d, "string 's1'", "exactly one", "EA", "stiffness")


def test_string_with_both_rest_length_and_tension(tmp_path):
    d = mutated(lambda d: d["strings"][0].update(tension=5.0))
    expect_error(tmp_path, d, "string 's1'", "not both", "rest_length", "tension")


def test_string_with_neither_rest_length_nor_tension(tmp_path):
    d = mutated(lambda d: d["strings"][1].pop("rest_length"))
    expect_error(tmp_path, d, "string 's2'", "neither", "rest_length", "tension")


def test_tension_too_high_for_the_spring(tmp_path):
    # L = 1, k = 100: T = 150 N would need rest length -0.5 m
    def f(d):
        d["strings"][0].pop("rest_length")
        d["strings"][0]["tension"] = 150.0
    expect_error(tmp_path, mutated(f), "string 's1'", "tension", "rest length <= 0")


def test_model_without_bars_and_strings(tmp_path):
    d = mutated(lambda d: (d.pop("bars"), d.pop("strings")))
    expect_error(tmp_path, d, "model", "neither bars nor strings")


# --------------------------------------------------------------------------------------------------
# constraints
# --------------------------------------------------------------------------------------------------
def test_constraint_with_empty_terms(tmp_path):
    d = mutated(lambda d: d.update(constraints=[{"name": "c1", "terms": {}}]))
    expect_error(tmp_path, d, "constraint 'c1'", "references no node")


def test_constraint_with_all_zero_coefficients(tmp_path):
    d = mutated(lambda d: d.update(constraints=[{"name": "c1", "terms": {"n2": 0, "n3": 0.0}}]))
    expect_error(tmp_path, d, "constraint 'c1'", "all coefficients are zero")


def test_inconsistent_constraints(tmp_path):
    # n1 is fixed at the origin; c1 wants it at z = 1
    d = mutated(lambda d: d.update(constraints=[{"name": "c1", "terms": {"n1": 1}, "value": [0, 0, 1]}]))
    expect_error(tmp_path, d, "constraint 'c1'", "inconsistent", "mismatch 1")


def test_redundant_consistent_constraint_warns(tmp_path):
    d = mutated(lambda d: d.update(constraints=[{"name": "c1", "terms": {"n1": 2.0}, "value": [0, 0, 0]}]))
    m = load(tmp_path, d)
    assert len(m.warnings) == 1
    assert "'c1'" in m.warnings[0] and "implied" in m.warnings[0]
    assert m.counts["phi"] == 2                      # fix_n1 and c1 are both kept in P
    assert list(m.free_nodes) == [1, 2, 3]


def test_constraint_value_must_be_a_vector(tmp_path):
    d = mutated(lambda d: d.update(constraints=[{"name": "c1", "terms": {"n2": 1}, "value": [1, 0]}]))
    expect_error(tmp_path, d, "constraint 'c1'", "'value'", "three numbers")


def midpoint_model(m_position=(1.0, 0.5, 0.25)) -> dict:
    """Node m is constrained to the midpoint of n2 and n4 and carries a string to n3."""
    d = base_model()
    d["nodes"].append({"name": "m", "position": list(m_position)})
    d["strings"].append({"name": "s4", "path": ["m", "n3"], "stiffness": 10.0, "rest_length": 0.3})
    d["constraints"] = [{"name": "mid", "terms": {"m": 1.0, "n2": -0.5, "n4": -0.5}, "value": [0, 0, 0]}]
    return d


def test_positions_violating_a_constraint(tmp_path):
    err = expect_error(tmp_path, midpoint_model((1.0, 0.5, 0.3)), "node 'm'", "violates", "0.05 m")
    assert "(1, 0.5, 0.25)" in err.fix                 # where the constraint puts it


def test_midpoint_constraint_moves_the_dependent_node(tmp_path):
    m = load(tmp_path, midpoint_model())
    im, i2, i4 = m.node_index("m"), m.node_index("n2"), m.node_index("n4")
    assert im not in m.free_nodes                    # first-listed term is the dependent one
    assert {i2, i4} <= set(m.free_nodes.tolist())
    rng = np.random.default_rng(0)
    Y = m.reduce(m.positions) + rng.normal(scale=0.1, size=(len(m.free_nodes), 3))
    X = m.expand(Y)
    np.testing.assert_allclose(X[im], 0.5 * (X[i2] + X[i4]), atol=1e-12)
    np.testing.assert_allclose(X[m.node_index("n1")], [0, 0, 0], atol=0)   # fixed node stays
    np.testing.assert_allclose(m.expand(m.reduce(X)), X, atol=1e-12)
    # moving n2 by d moves m by d/2
    X2 = np.array(m.positions)
    X2[i2] += [0.2, -0.1, 0.4]
    np.testing.assert_allclose(m.expand(m.reduce(X2))[im], m.positions[im] + [0.1, -0.05, 0.2], atol=1e-12)
    # a batch of configurations (T, n, 3)
    Ys = np.stack([Y, 2 * Y])
    assert m.expand(Ys).shape == (2, m.n_nodes, 3)


# --------------------------------------------------------------------------------------------------
# masses and connectivity (checked when the model is built)
# --------------------------------------------------------------------------------------------------
def test_free_node_without_mass(tmp_path):
    def f(d):
        d["nodes"].append({"name": "n5", "position": [2.0, 0.0, 0.0]})
        d["strings"].append({"name": "s4", "path": ["n2", "n5"], "stiffness": 10.0, "rest_length": 0.9})
    expect_error(tmp_path, mutated(f), "node 'n5'", "no mass")
    # with a point mass it is fine
    d = mutated(f)
    d["nodes"][-1]["mass"] = 0.1
    assert load(tmp_path, d).node_mass[4] == 0.1


@pytest.mark.parametrize("extra", [{}, {"mass": 0.5}])
def test_node_connected_to_nothing(tmp_path, extra):
    d = mutated(lambda d: d["nodes"].append({"name": "lonely", "position": [3.0, 3.0, 3.0], **extra}))
    expect_error(tmp_path, d, "node 'lonely'", "connected to no bar and no string")


def test_unconnected_fixed_node_is_accepted(tmp_path):
    d = mutated(lambda d: d["nodes"].append({"name": "anchor", "position": [3.0, 3.0, 3.0], "fixed": True}))
    assert load(tmp_path, d).counts["mu"] == 5


def test_node_tied_by_a_constraint_counts_as_connected(tmp_path):
    # a massless marker at the midpoint of bar b2, used by nothing but the constraint
    def f(d):
        d["nodes"].append({"name": "mark", "position": [0.5, 1.0, 0.25]})
        d["constraints"] = [{"name": "c1", "terms": {"mark": 2, "n3": -1, "n4": -1}}]
    m = load(tmp_path, mutated(f))
    assert m.node_index("mark") not in m.free_nodes


# --------------------------------------------------------------------------------------------------
# redundant bars
# --------------------------------------------------------------------------------------------------
def bars_model(nodes: dict, bars: list) -> dict:
    return {"schema": "tensegrity-model", "version": 1, "gravity": [0, 0, 0],
            "nodes": [{"name": k, "position": list(v)} for k, v in nodes.items()],
            "bars": [{"name": f"b{i + 1}", "nodes": list(ab), "mass": 1.0} for i, ab in enumerate(bars)]}


TRIANGLE = {"a": (0, 0, 0), "b": (1, 0, 0), "c": (0, 1, 0)}


def test_rigid_triangle_builds(tmp_path):
    m = load(tmp_path, bars_model(TRIANGLE, [("a", "b"), ("b", "c"), ("c", "a")]))
    assert m.counts == {"mu": 3, "nu": 3, "beta": 3, "sigma_c": 0, "sigma_s": 0, "phi": 3, "alpha": 0}
    assert m.counts["mu"] + m.counts["nu"] == 2 * m.counts["beta"]


def test_redundant_duplicate_bar(tmp_path):
    d = bars_model(TRIANGLE, [("a", "b"), ("b", "c"), ("c", "a"), ("b", "a")])
    expect_error(tmp_path, d, "bars", "redundant", "'b4'")


def test_redundant_coplanar_braced_quad(tmp_path):
    quad = {"a": (0, 0, 0), "b": (1, 0, 0), "c": (1, 1, 0), "d": (0, 1, 0)}
    edges = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a"), ("a", "c"), ("b", "d")]
    expect_error(tmp_path, bars_model(quad, edges), "bars", "redundant", "'b6'")
    # five of the six bars are independent
    assert load(tmp_path, bars_model(quad, edges[:5])).counts["beta"] == 5


def test_tetrahedron_is_not_redundant(tmp_path):
    tet = {"a": (0, 0, 0), "b": (1, 0, 0), "c": (0, 1, 0), "d": (0, 0, 1)}
    edges = [("a", "b"), ("b", "c"), ("c", "a"), ("a", "d"), ("b", "d"), ("c", "d")]
    m = load(tmp_path, bars_model(tet, edges))
    assert m.counts["nu"] == 8 and m.counts["beta"] == 6


# --------------------------------------------------------------------------------------------------
# file-level structure
# --------------------------------------------------------------------------------------------------
def test_wrong_schema_name(tmp_path):
    expect_error(tmp_path, mutated(lambda d: d.update(schema="tensegrity")), "schema", "tensegrity-model")


def test_wrong_version(tmp_path):
    expect_error(tmp_path, mutated(lambda d: d.update(version=2)), "version", "unsupported", "2")


def test_unknown_top_level_key(tmp_path):
    expect_error(tmp_path, mutated(lambda d: d.update(cables=[])), "top level", "unknown key", "cables")


def test_unknown_key_in_bar(tmp_path):
    err = expect_error(tmp_path, mutated(lambda d: d["bars"][1].update(colour="red")), "bar 'b2'",
                       "unknown key", "colour")
    assert "bars[1]" in str(err)


def test_missing_required_key_in_bar(tmp_path):
    expect_error(tmp_path, mutated(lambda d: d["bars"][0].pop("mass")), "bar 'b1'", "missing 'mass'")


def test_empty_file(tmp_path):
    expect_error(tmp_path, "", "file", "mapping")


def test_file_that_is_not_utf8(tmp_path):
    # used to surface as a bare UnicodeDecodeError ("'utf-8' codec can't decode byte 0xff ...")
    text = yaml.safe_dump(base_model(), sort_keys=False).replace("name: mini", "name: mini\ndescription: caf#")
    raw = text.encode().replace(b"caf#", b"caf\xff")
    line = raw[:raw.index(b"\xff")].count(b"\n") + 1
    err = expect_error(tmp_path, raw, f"line {line}", "not UTF-8", "0xff")
    assert err.element == f"line {line}" and "UTF-8" in err.fix
    # a UTF-8 byte-order mark is fine
    assert load(tmp_path, b"\xef\xbb\xbf" + text.replace("caf#", "cafe").encode()).name == "mini"


def test_duplicate_keys_are_rejected(tmp_path):
    # a second 'bars:' block used to replace the first silently
    text = yaml.safe_dump(base_model(), sort_keys=False) + "bars:\n- {name: b9, nodes: [n1, n4], mass: 1.0}\n"
    lines = text.splitlines()
    first = lines.index("bars:") + 1
    second = lines.index("bars:", first) + 1
    err = expect_error(tmp_path, text, f"line {second}, column 1", "duplicate key 'bars'", f"line {first}")
    assert "'bars'" in err.fix
    # also inside a flow mapping: the line and column of the second key
    text = "schema: tensegrity-model\nversion: 1\nnodes:\n- {name: a, position: [0, 0, 0], name: b}\n"
    column = text.splitlines()[3].rindex("name:") + 1
    expect_error(tmp_path, text, f"line 4, column {column}", "duplicate key 'name'")


@pytest.mark.parametrize("value", [["x"], "", "   ", 5, None])
def test_model_name_must_be_non_empty_text(tmp_path, value):
    # name: ['x'] used to become the model name "['x']"
    expect_error(tmp_path, mutated(lambda d: d.update(name=value)), "name", "non-empty text", repr(value))


def test_missing_file(tmp_path):
    with pytest.raises(ModelError) as info:
        load_model(tmp_path / "nope.yaml")
    assert "nope.yaml" in str(info.value) and "cannot be read" in str(info.value) and "Fix:" in str(info.value)


def test_invalid_yaml_syntax_gives_line_and_column(tmp_path):
    text = textwrap.dedent("""\
        schema: tensegrity-model
        version: 1
        nodes:
          - {name: n1, position: [0, 0, 0]
          - {name: n2, position: [1, 0, 0]}
        """)
    err = expect_error(tmp_path, text, "line ", "not valid YAML", "column")
    assert err.element.startswith("line 5,"), err.element


def test_invalid_yaml_indentation(tmp_path):
    text = "schema: tensegrity-model\nversion: 1\n  nodes: []\n"
    err = expect_error(tmp_path, text, "line ", "not valid YAML")
    assert err.element.startswith("line 3,"), err.element


def test_non_numeric_value(tmp_path):
    expect_error(tmp_path, mutated(lambda d: d["bars"][0].update(mass="heavy")), "bar 'b1'",
                 "'mass'", "must be a number", "heavy")
    expect_error(tmp_path, mutated(lambda d: d["nodes"][1].update(position=[1, "x", 0])), "node 'n2'",
                 "'position'", "must be a number")
    expect_error(tmp_path, mutated(lambda d: d["bars"][0].update(mass=True)), "bar 'b1'", "must be a number")


@pytest.mark.parametrize("where, key, value, element", [
    (("bars", 0), "mass", 1e308, "bar 'b1'"),
    (("bars", 0), "mass", 1e-300, "bar 'b1'"),
    (("nodes", 1), "mass", 1e10, "node 'n2'"),
    (("nodes", 1), "mass", 1e-12, "node 'n2'"),
    (("nodes", 1), "position", [1e200, 0.0, 0.0], "node 'n2'"),
    (("nodes", 1), "position", [1.0, -2e6, 0.0], "node 'n2'"),
])
def test_values_outside_the_supported_range(tmp_path, where, key, value, element):
    # these used to end in "bar length constraints are redundant" plus numpy RuntimeWarnings
    d = base_model()
    d[where[0]][where[1]][key] = value
    err = expect_error(tmp_path, d, element, f"'{key}'", "supported range")
    assert "redundant" not in str(err)


def test_extreme_values_inside_the_range_build_cleanly(tmp_path):
    # the ends of the supported ranges: no false "redundant bars" (the check used to compare bars of very
    # different mass or length on one absolute scale), no numpy warnings
    def masses(d):
        d["bars"][0]["mass"] = 1e-9
        d["bars"][1]["mass"] = 1e9
        d["nodes"][2]["mass"] = 1e-9

    def far(d):
        d["nodes"][3]["position"] = [1e6, 1.0, 0.5]           # bar b2 is 1e6 m long, b1 1 m
        d["strings"][2]["rest_length"] = 1e6
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load(tmp_path, mutated(masses)).bar_mass.tolist() == [1e-9, 1e9]
        assert load(tmp_path, mutated(far)).bar_length[1] == pytest.approx(1e6)


def test_position_with_two_coordinates(tmp_path):
    expect_error(tmp_path, mutated(lambda d: d["nodes"][1].update(position=[1, 0])), "node 'n2'",
                 "three numbers")


def yaml_with(d, **raw) -> str:
    """Dump ``d`` to YAML, then replace each placeholder string '@key' by the raw YAML text raw[key]."""
    text = yaml.safe_dump(d, sort_keys=False)
    for key, value in raw.items():
        assert f"'@{key}'" in text
        text = text.replace(f"'@{key}'", value)
    return text


@pytest.mark.parametrize("field, yaml_value, word", [
    ("position", "[.nan, 0, 0]", "nan"),
    ("position", "[1, -.inf, 0]", "inf"),
    ("mass", ".inf", "inf"),
])
def test_nan_and_inf_in_nodes(tmp_path, field, yaml_value, word):
    d = base_model()
    d["nodes"][1][field] = "@v"
    expect_error(tmp_path, yaml_with(d, v=yaml_value), "node 'n2'", f"'{field}'", word, "finite")


@pytest.mark.parametrize("key, yaml_value, word", [("stiffness", ".nan", "nan"), ("stiffness", ".inf", "inf"),
                                                   ("damping", ".NaN", "nan"), ("rest_length", ".Inf", "inf")])
def test_nan_and_inf_in_strings(tmp_path, key, yaml_value, word):
    d = base_model()
    d["strings"][0][key] = "@v"
    expect_error(tmp_path, yaml_with(d, v=yaml_value), "string 's1'", f"'{key}'", word, "finite")


def test_scientific_notation_is_read_as_numbers(tmp_path):
    # PyYAML alone reads 1e2, 1.0e2 and 2E-3 as strings (YAML 1.1 needs a dot and a signed exponent)
    d = base_model()
    d["strings"][0]["stiffness"] = "@a"
    d["strings"][0]["damping"] = "@b"
    d["strings"][1]["stiffness"] = "@c"
    d["strings"][2]["EA"] = "@f"
    d["bars"][0]["mass"] = "@e"
    m = load(tmp_path, yaml_with(d, a="1e2", b="2E-3", c="1.0e2", f="1E3", e=".5e1"))
    np.testing.assert_allclose(m.string_stiffness[:2], [100.0, 100.0])
    assert m.string_EA[2] == 1000.0 and m.string_damping[0] == 0.002 and m.bar_mass[0] == 5.0
    # names that only look like numbers in other ways stay names
    d = base_model()
    d["nodes"][3]["name"] = "@n"
    for item in d["bars"][1:]:
        item["nodes"] = ["n3", "@n"]
    d["strings"][2]["path"] = ["n2", "@n"]
    assert load(tmp_path, yaml_with(d, n="e5")).node_names[3] == "e5"


def test_numpy_scalars_in_a_dict_are_numbers():
    d = base_model()
    d["bars"][0]["mass"] = np.int64(2)
    d["strings"][0]["stiffness"] = np.float32(50.0)
    m = build_model(spec_from_dict(d))
    assert m.bar_mass[0] == 2.0 and m.string_stiffness[0] == 50.0


def test_huge_integer_is_not_finite():
    d = mutated(lambda d: d["bars"][0].update(mass=10 ** 400))
    with pytest.raises(ModelError, match=r"<dict>: bar 'b1': 'mass' is inf\. Fix: "):
        spec_from_dict(d)


def test_fixed_must_be_boolean(tmp_path):
    expect_error(tmp_path, mutated(lambda d: d["nodes"][1].update(fixed="yes please")), "node 'n2'",
                 "'fixed'", "true or false")


# --------------------------------------------------------------------------------------------------
# actuators and frames
# --------------------------------------------------------------------------------------------------
def actuator(**kw):
    a = {"name": "m1", "string": "s1", "spool_radius": 0.01}
    a.update(kw)
    return a


def test_actuator_with_sign_2(tmp_path):
    d = mutated(lambda d: d.update(actuators=[actuator(sign=2)]))
    expect_error(tmp_path, d, "actuator 'm1'", "'sign'", "1 or -1")


def test_actuator_angle_limits_reel_in_more_than_rest_length(tmp_path):
    # rest length of s1 is 1.0 m; 0.01 m spool * 150 rad = 1.5 m
    d = mutated(lambda d: d.update(actuators=[actuator(angle_limits=[-1.0, 150.0])]))
    expect_error(tmp_path, d, "actuator 'm1'", "reel in", "rest length", "'s1'")
    # with sign -1 the lower limit is the one that reels in
    d = mutated(lambda d: d.update(actuators=[actuator(sign=-1, angle_limits=[-150.0, 1.0])]))
    expect_error(tmp_path, d, "actuator 'm1'", "reel in")


def test_two_actuators_on_one_string(tmp_path):
    d = mutated(lambda d: d.update(actuators=[actuator(), actuator(name="m2")]))
    err = expect_error(tmp_path, d, "actuator 'm2'", "'s1'", "actuator 'm1'", "one actuator per string")
    assert "'m1'" in err.problem and "'s1'" in err.problem


@pytest.mark.parametrize("zero, limits", [(7.0, None), (-0.5, [0.0, 3.0]), (3.5, [0.0, 3.0])])
def test_actuator_zero_outside_its_angle_limits(tmp_path, zero, limits):
    # the initial state u = 0 (angle = zero) would already violate the limits
    a = actuator(zero=zero) if limits is None else actuator(zero=zero, angle_limits=limits)
    expect_error(tmp_path, mutated(lambda d: d.update(actuators=[a])), "actuator 'm1'", "'zero'", "outside",
                 "angle_limits")
    # on the boundary is fine
    assert load(tmp_path, mutated(lambda d: d.update(actuators=[actuator(zero=0.0, angle_limits=[0.0, 3.0])]))
                ).counts["alpha"] == 1


def test_valid_actuator(tmp_path):
    m = load(tmp_path, mutated(lambda d: d.update(actuators=[actuator(sign=-1, zero=0.5,
                                                                      angle_limits=[-3.0, 3.0])])))
    assert m.counts["alpha"] == 1
    np.testing.assert_allclose(m.u_limits[0], sorted([-0.01 * (-3.5), -0.01 * 2.5]))


def test_actuator_angle_limits_reversed(tmp_path):
    expect_error(tmp_path, mutated(lambda d: d.update(actuators=[actuator(angle_limits=[1, -1])])),
                 "actuator 'm1'", "min", "max")


def test_frame_with_two_nodes(tmp_path):
    d = mutated(lambda d: d.update(frames=[{"name": "f1", "nodes": ["n1", "n2"]}]))
    expect_error(tmp_path, d, "frame 'f1'", "three different nodes")


def test_frame_with_a_repeated_node(tmp_path):
    d = mutated(lambda d: d.update(frames=[{"name": "f1", "nodes": ["n1", "n2", "n1"]}]))
    expect_error(tmp_path, d, "frame 'f1'", "three different nodes")


def test_frame_with_collinear_nodes(tmp_path):
    def f(d):
        d["nodes"].append({"name": "n5", "position": [2.5, 0.0, 0.0], "fixed": True})   # on the line n1-n2
        d["frames"] = [{"name": "f1", "nodes": ["n1", "n2", "n5"]}]
    err = expect_error(tmp_path, mutated(f), "frame 'f1'", "one line", "'n1', 'n2', 'n5'")
    assert "triangle" in err.fix


def test_valid_frame(tmp_path):
    m = load(tmp_path, mutated(lambda d: d.update(frames=[{"name": "f1", "nodes": ["n1", "n2", "n3"],
                                                           "x_node": "n2"}])))
    assert m.frame_names == ("f1",) and m.frame_nodes.tolist() == [[0, 1, 2]] and m.frame_x.tolist() == [1]


# --------------------------------------------------------------------------------------------------
# positive construction tests
# --------------------------------------------------------------------------------------------------
def test_class2_joint_gets_one_virtual_node(tmp_path):
    d = {"schema": "tensegrity-model", "version": 1,
         "nodes": [{"name": "p", "position": [0, 0, 0]},
                   {"name": "j", "position": [1, 0, 0]},
                   {"name": "q", "position": [1, 1, 0]}],
         "bars": [{"name": "b1", "nodes": ["p", "j"], "mass": 1.0},
                  {"name": "b2", "nodes": ["j", "q"], "mass": 2.0}],
         "strings": [{"name": "s1", "path": ["p", "q"], "EA": 100.0, "rest_length": 1.2}]}
    m = load(tmp_path, d)
    assert m.node_names == ("p", "j", "q", "j_v1")            # physical then virtual
    assert m.n_physical == 3
    assert m.counts == {"mu": 3, "nu": 1, "beta": 2, "sigma_c": 1, "sigma_s": 1, "phi": 1, "alpha": 0}
    assert m.constraint_names == ("coincide_j_v1",)
    assert m.virtual_of.tolist() == [-1, -1, -1, 1]
    assert m.bars.tolist() == [[0, 1], [3, 2]]                 # first bar keeps j, second gets j_v1
    np.testing.assert_array_equal(m.positions[3], m.positions[1])
    assert m.free_nodes.tolist() == [0, 1, 2]
    np.testing.assert_allclose(m.bar_length, [1.0, 1.0])
    assert m.total_mass() == 3.0
    # the coincidence constraint is exact for any free coordinates
    X = m.expand(np.random.default_rng(1).normal(size=(3, 3)))
    np.testing.assert_array_equal(X[3], X[1])


def test_class3_joint_numbers_virtual_nodes(tmp_path):
    d = bars_model({"c": (0, 0, 0), "x": (1, 0, 0), "y": (0, 1, 0), "z": (0, 0, 1)},
                   [("c", "x"), ("y", "c"), ("c", "z")])
    m = load(tmp_path, d)
    assert m.node_names == ("c", "x", "y", "z", "c_v1", "c_v2")
    assert m.constraint_names == ("coincide_c_v1", "coincide_c_v2")
    assert m.bars.tolist() == [[0, 1], [2, 4], [5, 3]]


def test_tension_gives_rest_length(tmp_path):
    def f(d):
        for s, t in zip(d["strings"], (5.0, 2.0, 50.0)):
            s.pop("rest_length")
            s["tension"] = t
        d["strings"][1]["path"] = ["n1", "n3", "n4"]           # composite: 1 + |n4 - n3|
    m = load(tmp_path, mutated(f))
    L = m.string_lengths(m.positions)
    np.testing.assert_allclose(L, [math.sqrt(2), 1 + math.sqrt(1.25), math.sqrt(1.25)])
    np.testing.assert_allclose(m.rest_length[:2], L[:2] - np.array([5.0, 2.0]) / 100.0)
    np.testing.assert_allclose(m.rest_length[2], 1000.0 * L[2] / (1000.0 + 50.0))
    np.testing.assert_allclose(m.rest_length, m.rest_length_for_tension([5.0, 2.0, 50.0], L))
    assert m.counts["sigma_s"] == 4


def test_zero_tension_gives_the_current_length(tmp_path):
    m = load(tmp_path, mutated(lambda d: (d["strings"][2].pop("rest_length"), d["strings"][2].update(tension=0))))
    np.testing.assert_allclose(m.rest_length[2], math.sqrt(1.25))


def test_spec_from_dict_reports_dict_source():
    d = mutated(lambda d: d["bars"][0].update(nodes=["n1", "zz"]))
    with pytest.raises(ModelError) as info:
        spec_from_dict(d)
    assert str(info.value).startswith("<dict>: bar 'b1': ")
    with pytest.raises(ModelError) as info:
        spec_from_dict(d, "robot.yaml")
    assert str(info.value).startswith("robot.yaml: bar 'b1': ")


def test_builtin_prism3():
    m = load_model("prism3")
    c = m.counts
    assert (c["mu"], c["nu"], c["beta"], c["sigma_c"], c["sigma_s"]) == (6, 0, 3, 9, 9)
    assert m.warnings == ()
    np.testing.assert_allclose(m.bar_length, 0.3, rtol=1e-6)


def test_model_arrays_are_read_only(tmp_path):
    m = load(tmp_path, base_model())
    with pytest.raises(ValueError):
        m.positions[0, 0] = 1.0


def test_base_model_dict_is_not_shared():
    a, b = base_model(), base_model()
    a["bars"][0]["mass"] = 5
    assert b["bars"][0]["mass"] == 1.0
    assert copy.deepcopy(a) == a


def test_bar_whose_ends_are_tied_rigidly_by_a_constraint_is_accepted(tmp_path):
    # n4 = n3 + (1, 0, 0.5): bar b2 can translate but its vector never changes, so its length holds by itself
    d = mutated(lambda d: d.update(constraints=[{"name": "c1", "terms": {"n4": 1, "n3": -1},
                                                 "value": [1.0, 0.0, 0.5]}]))
    assert load(tmp_path, d).bar_jacobian_sparse[1].nnz == 0


# --------------------------------------------------------------------------------------------------
# structural damping (top level)
# --------------------------------------------------------------------------------------------------
def test_structural_damping_is_read_and_defaults_to_zero(tmp_path):
    assert load(tmp_path, base_model()).structural_damping == 0.0
    assert load(tmp_path, mutated(lambda d: d.update(structural_damping=0.4))).structural_damping == 0.4


@pytest.mark.parametrize("value, word", [(-0.1, ">= 0"), ("fast", "must be a number"), (math.inf, "finite")])
def test_bad_structural_damping(tmp_path, value, word):
    expect_error(tmp_path, mutated(lambda d: d.update(structural_damping=value)), "structural_damping", word)


def test_structural_damping_survives_dump_and_load(tmp_path):
    from tensegrity_engine.model.write import dump_model
    m = load(tmp_path, mutated(lambda d: d.update(structural_damping=0.25)))
    dump_model(m, tmp_path / "again.yaml")
    assert load_model(tmp_path / "again.yaml").structural_damping == 0.25
