"""Hostile model input (issue #11, item 10): wrong types, deep nesting, absurd values, odd names, sizes.

Every case must end in a ModelError naming the element and the rule, never another exception.
"""
from __future__ import annotations

import json

import pytest
import yaml

from tensegrity_engine import ModelError, build_model, load_model, spec_from_dict
from tensegrity_engine.model import checks as model_checks
from tensegrity_engine.model import yaml_text as model_yaml

from test_model_validation import base_model, expect_error, write


def _text(d) -> str:
    return yaml.safe_dump(d, sort_keys=False)


@pytest.mark.parametrize("raw", ["5", "true", ".nan", "{a: 1}", "'x'", "~5"])
def test_a_list_given_as_a_scalar(tmp_path, raw):
    # 'bars: 5' used to raise TypeError: 'int' object is not iterable
    d = base_model()
    d["bars"] = "@@"
    expect_error(tmp_path, _text(d).replace("'@@'", raw), "bars", "list of bars")


@pytest.mark.parametrize("key", ["nodes", "strings", "constraints", "actuators", "frames"])
@pytest.mark.parametrize("value", [5, True, 1.5, "text", {"a": 1}])
def test_every_list_is_type_checked(tmp_path, key, value):
    d = base_model()
    d[key] = value
    expect_error(tmp_path, d, key, "list of")


@pytest.mark.parametrize("loader", ["C", "pure Python"])
@pytest.mark.parametrize("levels", [21, 999, 1001, 5000])
def test_deeply_nested_document_is_refused_before_recursion(tmp_path, monkeypatch, loader, levels):
    # used to end in RecursionError with a 3,000-line traceback; with PyYAML 6.0.4's libyaml the C loader
    # stops at its own limit (1,000 levels, scanning ahead) with its own words: ours must come out either way
    if loader == "pure Python":
        monkeypatch.setattr(model_yaml, "_ParserLoader", yaml.SafeLoader)
    elif not hasattr(yaml, "CSafeLoader"):
        pytest.skip("PyYAML built without libyaml")
    text = _text(base_model()) + "groups: " + "[" * levels + "]" * levels + "\n"
    err = expect_error(tmp_path, text, "line ", "nested deeper than 20 levels")
    assert "not valid YAML" not in str(err)
    assert len(str(err)) < 400


def test_deeply_nested_data_is_refused_before_recursion():
    d = base_model()
    deep = []
    for _ in range(3000):
        deep = [deep]
    d["groups"] = deep
    with pytest.raises(ModelError, match="nested deeper"):
        spec_from_dict(d)


@pytest.mark.parametrize("where, key, value, word", [
    (("bars", 0), "radius", 1e308, "supported range"),
    (("strings", 0), "radius", 1e3, "supported range"),
    (("strings", 0), "rest_length", 1e308, "supported range"),
    (("strings", 0), "rest_length", 1e-300, "supported range"),
    (("strings", 0), "stiffness", 1e300, "supported range"),
    (("strings", 2), "EA", 1e300, "supported range"),
    (("strings", 0), "damping", 1e300, "supported range"),
    (("strings", 0), "tension", 1e300, "supported range"),
    (("bars", 0), "length", 1e308, "supported range"),
    (None, "gravity", [0.0, 0.0, -1e300], "supported range"),
    (None, "gravity", [80.0, 80.0, 0.0], "supported range"),
    (None, "structural_damping", 1e300, "supported range"),
])
def test_absurd_values_are_refused_with_the_range(tmp_path, where, key, value, word):
    d = base_model()
    target = d if where is None else d[where[0]][where[1]]
    target[key] = value
    if key == "tension":
        target.pop("rest_length")
    if key == "length":
        pass
    err = expect_error(tmp_path, d, key if where is None else "", f"'{key}'" if where else key, word)
    assert "internal error" not in str(err)


def _with_actuator(**kw):
    d = base_model()
    d["actuators"] = [dict({"name": "m1", "string": "s1", "spool_radius": 0.01, "angle_limits": [-1.0, 1.0]}, **kw)]
    return d


@pytest.mark.parametrize("kw, key", [
    ({"angle_limits": [-1e308, 1.0]}, "angle_limits"),
    ({"angle_limits": [-1.0, 2e4]}, "angle_limits"),
    ({"zero": 1e5, "angle_limits": [-1.0, 1.0]}, "zero"),
    ({"spool_radius": 1e300}, "spool_radius"),
    ({"spool_radius": 1e-300}, "spool_radius"),
    ({"motor": "a\nb"}, "motor"),
    ({"motor": ["x"]}, "motor"),
])
def test_absurd_actuator_values(tmp_path, kw, key):
    expect_error(tmp_path, _with_actuator(**kw), "actuator 'm1'", key)


def test_actuator_inside_the_ranges_loads(tmp_path):
    m = load_model(write(tmp_path, _with_actuator(angle_limits=[-9000.0, 9000.0], spool_radius=1e-5)))
    assert m.actuator_names == ("m1",)


@pytest.mark.parametrize("bad", ["n\n2", "n\u202e2", "\u202en2", "n 2", "2n", "n" * 65, "n\x002", "név", "n\t2",
                                 "n\u200b2"])
def test_names_must_be_printable_identifiers(tmp_path, bad):
    d = base_model()
    d["nodes"][1]["name"] = bad
    err = expect_error(tmp_path, d, "nodes[1]", "not a plain identifier", model_checks.NAME_RULE)
    assert "\n" not in str(err) and "\u202e" not in str(err)       # the name is shown escaped


@pytest.mark.parametrize("field, value", [("description", "evil \u202e text"), ("notes", "a\x1bb"),
                                          ("description", ["list"]), ("notes", "x" * 20000)])
def test_free_text_is_printable_and_bounded(tmp_path, field, value):
    d = base_model()
    d[field] = value
    expect_error(tmp_path, d, field, "")


def test_names_of_the_built_in_models_and_the_generator_follow_the_rule():
    import re
    for name in ("prism3", "stacked_manipulator"):
        m = load_model(name)
        for nm in m.node_names + m.bar_names + m.string_names + m.actuator_names + m.frame_names:
            assert re.fullmatch(model_checks.NAME_RULE, nm), nm


@pytest.mark.parametrize("limit, key, count", [("MAX_NODES", "nodes", 4), ("MAX_BARS", "bars", 2),
                                               ("MAX_STRINGS", "strings", 3)])
def test_element_counts_are_limited(tmp_path, monkeypatch, limit, key, count):
    monkeypatch.setattr(model_checks, limit, count - 1)
    expect_error(tmp_path, base_model(), key, f"more than the supported {count - 1}")
    monkeypatch.setattr(model_checks, limit, count)
    load_model(write(tmp_path, base_model()))


def test_segment_and_path_limits(tmp_path, monkeypatch):
    monkeypatch.setattr(model_checks, "MAX_SEGMENTS", 2)
    expect_error(tmp_path, base_model(), "string 's3'", "segments in total")
    monkeypatch.setattr(model_checks, "MAX_PATH", 1)
    expect_error(tmp_path, base_model(), "string 's1'", "more than the supported 1")


def test_file_size_is_limited(tmp_path, monkeypatch):
    monkeypatch.setattr(model_checks, "MAX_FILE_BYTES", 100)
    expect_error(tmp_path, base_model(), "file", "more than the supported")


def test_yaml_tricks_are_refused(tmp_path):
    base = _text(base_model())
    expect_error(tmp_path, base + "---\nschema: x\n", "line ", "more than one YAML document")
    expect_error(tmp_path, base + "groups: !!python/object:os.system x\n", "line ", "unsupported YAML tag")
    expect_error(tmp_path, base + "groups: {[1]: 2}\n", "line ", "mapping key")
    expect_error(tmp_path, base.replace("version: 1", "version: 1" + "0" * 5000), "line ", "cannot read")
    # an anchor shared many times is fine as long as the result is small (aliases are not copied)
    text = base.replace("gravity:", "gravity: &g")
    d = yaml.safe_load(text)
    assert load_model(write(tmp_path, text)).gravity.tolist() == d["gravity"]


def test_spec_from_dict_and_build_model_raise_only_model_error():
    for bad in [None, 5, [], "x", {"schema": "tensegrity-model", "version": True},
                {"schema": ["tensegrity-model"], "version": 1}, {1: 2}, {(1, 2): 3}]:
        with pytest.raises(ModelError):
            build_model(spec_from_dict(bad))
    with pytest.raises(ModelError, match="internal error"):
        build_model("not a spec")                       # the last-resort conversion (a programming error)


def test_description_parse_refuses_hostile_json():
    desc = pytest.importorskip("tensegrity_ros_common.description")
    base = json.loads(desc.describe(load_model("prism3")))
    for text in ["[" * 100000 + "]" * 100000, json.dumps({**base, "model": {**base["model"], "bars": 5}}),
                 json.dumps({**base, "name": "x\u202e\ny", "model": {**base["model"], "nodes": []}}), 5, None]:
        with pytest.raises(ModelError) as info:
            desc.model_from_description(text)
        assert "\u202e" not in str(info.value)
