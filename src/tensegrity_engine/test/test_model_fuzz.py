"""Seeded model fuzzer: mutated built-in models never raise anything but ModelError.

Mutations of the parsed document (type swaps, deleted keys, duplicated elements, unknown references,
deep nesting, empty lists, huge/negative/NaN values, unicode names) and of the YAML bytes, for both
built-in models; each mutant is loaded from a file with ``load_model`` (or given to ``spec_from_dict``
+ ``build_model``). A mutant either loads or raises ModelError. Default run: 5,000+ mutants (about 10 s
on an idle machine); ``TENSEGRITY_FUZZ_N=50000`` runs more (same seeds, extended).
"""
from __future__ import annotations

import copy
import json
import math
import os
import pickle
import random

import pytest
import yaml

from tensegrity_engine import ModelError, build_model, load_model, spec_from_dict
from tensegrity_engine.model.load import resolve_model_path

N_DICT = int(os.environ.get("TENSEGRITY_FUZZ_N", "2200"))     # per model, dictionary mutants
N_BYTES = max(N_DICT // 4, 1)                                  # per model, YAML byte mutants
MODELS = ["prism3", "stacked_manipulator"]

_VALUES = [0, 1, -1, 2, 0.5, -0.5, 1e-300, 1e300, -1e300, 1e308, 10**400, -(10**30), math.nan, math.inf, -math.inf,
           True, False, None, "", "x", "n1", "b1", "sc1", "\u202en1", "a\nb", "\x00", "é" * 70, [], [1], [1, 2, 3],
           [0.0, 0.0, 0.0], ["n1", "n2"], {}, {"n1": 1}, {"a": [1]}, [[[[]]]], 3.0, 7, -7.5, 1e9, 1e-9]


def _text(path) -> str:
    return resolve_model_path(path).read_text()


def _pick(doc, rng: random.Random):
    """A random path into the document: a random walk from the top that stops at some depth."""
    path, node = (), doc
    while isinstance(node, (dict, list)) and node and (not path or rng.random() < 0.7):
        key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
        path, node = path + (key,), node[key]
    return path


def _get(doc, path):
    for p in path:
        doc = doc[p]
    return doc


def _mutate(doc, rng: random.Random):
    """Apply 1-3 random mutations to a copy of ``doc``; returns the mutant (any type)."""
    doc = pickle.loads(pickle.dumps(doc))
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.01:
            return rng.choice(_VALUES)
        path = _pick(doc, rng)
        if not path:
            continue
        parent, key = _get(doc, path[:-1]), path[-1]
        op = rng.randrange(10)
        if op <= 2:                                             # type / value swap
            parent[key] = copy.deepcopy(rng.choice(_VALUES))
        elif op == 3:                                           # delete
            del parent[key]
        elif op == 4 and isinstance(parent, list):              # duplicate an element
            parent.insert(rng.randrange(len(parent) + 1), copy.deepcopy(parent[key]))
        elif op == 5:                                           # reference to an unknown / other name
            parent[key] = rng.choice(["nope", "n1_v1", "b1", "m1", "C0", "", " ", "n\u200b1"])
        elif op == 6:                                           # deep nesting
            v = parent[key]
            for _ in range(rng.choice([2, 5, 25, 200])):
                v = [v]
            parent[key] = v
        elif op == 7:                                           # empty container
            parent[key] = [] if rng.random() < 0.5 else {}
        elif op == 8:                                           # numbers: scale, negate, out of range
            v = parent[key]
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                try:
                    parent[key] = rng.choice([-v, v * 1e6, v * 1e-12, v + 1e-7, v * 1e200, 0])
                except OverflowError:                           # v is a huge int
                    parent[key] = -v
            else:
                parent[key] = rng.choice([-1, 1e308, -2.5])
        else:                                                   # unicode / odd names and keys
            if isinstance(parent, dict):
                parent[rng.choice(["name", "nämé", "\u202e", "x" * 100, "1abc", "a b", "schema"])] = parent.pop(key)
            else:
                parent[key] = rng.choice(["\u202eevil", "名前", "a\tb", "-x", "x" * 65])
    return doc


def _check_file(tmp_path, text_or_bytes, i):
    path = tmp_path / f"m{i % 50}.yaml"
    if isinstance(text_or_bytes, bytes):
        path.write_bytes(text_or_bytes)
    else:
        path.write_text(text_or_bytes)
    try:
        load_model(path)
        return "ok"
    except ModelError as exc:
        _no_internal(exc)
        return "error"


def _no_internal(exc):
    """A ModelError from a proper check, not from the last-resort conversion of an unexpected exception."""
    assert str(exc) and exc.fix
    assert "internal error" not in str(exc), str(exc)


def _dump(doc) -> str:
    try:
        return yaml.dump(doc, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False,
                         allow_unicode=True)
    except (yaml.YAMLError, RecursionError, ValueError):
        return json.dumps(doc, allow_nan=True, default=str)   # JSON is YAML (flow style)


@pytest.mark.parametrize("name", [MODELS[0], pytest.param(MODELS[1], marks=pytest.mark.slow)])
def test_dictionary_mutants_raise_only_model_error(tmp_path, name):
    base = yaml.safe_load(_text(name))
    base.pop("resolved", None)                      # informational, ignored on load: not worth fuzzing
    rng = random.Random(f"dict-{name}")
    outcome = {"ok": 0, "error": 0}
    for i in range(N_DICT):
        mutant = _mutate(base, rng)
        if i % 3:                                   # most directly (fast), a third through a YAML file
            try:
                build_model(spec_from_dict(mutant, f"<mutant {i}>"))
                outcome["ok"] += 1
            except ModelError as exc:
                _no_internal(exc)
                outcome["error"] += 1
        else:
            try:
                text = _dump(mutant)
            except (RecursionError, ValueError):
                continue
            outcome[_check_file(tmp_path, text, i)] += 1
    assert outcome["error"] > N_DICT // 2 and outcome["ok"] > 0, outcome   # both outcomes are exercised


@pytest.mark.parametrize("name", MODELS)
def test_yaml_byte_mutants_raise_only_model_error(tmp_path, name):
    raw = _text(name).encode()
    rng = random.Random(f"bytes-{name}")
    special = [b"[", b"]", b"{", b"}", b":", b"-", b"\n", b" ", b"&a", b"*a", b"!!", b"\xff", b"\x00", b"'", b'"',
               b"<<: ", b"---\n", b"\t", b"1e999", b".nan", b"\xe2\x80\xae", b"[" * 60]
    for i in range(N_BYTES):
        data = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(len(data))
            op = rng.randrange(4)
            if op == 0:
                data[pos] = rng.randrange(256)
            elif op == 1:
                data[pos:pos] = rng.choice(special)
            elif op == 2:
                del data[pos:pos + rng.randint(1, 40)]
            else:
                data[pos] ^= 1 << rng.randrange(8)
        _check_file(tmp_path, bytes(data), i)


@pytest.mark.parametrize("name", MODELS)
def test_description_mutants_raise_only_model_error(name):
    """model_from_description (the monitor's path from the unauthenticated topic) with mutated JSON."""
    desc = pytest.importorskip("tensegrity_ros_common.description")
    model = load_model(name)
    text = desc.describe(model)
    base = json.loads(text)
    rng = random.Random(f"json-{name}")
    for i in range(max(N_DICT // 8, 1)):
        if i % 2:
            mutant = json.dumps(_mutate(base, rng))
        else:
            b = bytearray(text.encode())
            for _ in range(rng.randint(1, 3)):
                b[rng.randrange(len(b))] = rng.choice(b'[]{}:,"0-9eE.\\ x')
            mutant = b.decode("latin-1")
        try:
            desc.model_from_description(mutant)
        except ModelError as exc:
            _no_internal(exc)
