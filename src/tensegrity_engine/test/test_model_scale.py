"""A 10,000-node model is validated (loaded and built) or rejected within 5 s.

Before the loader was made linear (issue #11, item 10) such a file took 108 s and 3.4 GB to reject.
The limit is on the CPU time of this process (``time.process_time``), not wall time, so other work on the
machine does not make it flaky: measured on this 2-core machine ≈1.9 s CPU for the valid model and
≈2.3 s for each invalid one (YAML reading ≈1.3 s of it), a margin of 2x; a regression to quadratic time
(minutes) still fails clearly. The wall time is printed for the record.
"""
from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest

from tensegrity_engine import ModelError, load_model

LIMIT_S = 5.0


def tower(stages: int) -> dict:
    """A class-2 tower of 3(stages+1) nodes: ring k has 3 nodes, bar k_i runs from ring k node i to ring k+1
    node i+1 (so every inner node joins two bars: one virtual node each), vertical and ring strings."""
    nodes, bars, strings = [], [], []
    for k in range(stages + 1):
        for i in range(3):
            a = 2 * math.pi * i / 3 + 0.5 * k
            nodes.append({"name": f"n{k}_{i}", "position": [0.1 * math.cos(a), 0.1 * math.sin(a), 0.2 * k],
                          **({"fixed": True} if k == 0 else {})})
    for k in range(stages):
        for i in range(3):
            bars.append({"name": f"b{k}_{i}", "nodes": [f"n{k}_{i}", f"n{k + 1}_{(i + 1) % 3}"], "mass": 0.1,
                         "radius": 0.005})
            strings.append({"name": f"v{k}_{i}", "path": [f"n{k}_{i}", f"n{k + 1}_{i}"], "stiffness": 100.0,
                            "rest_length": 0.15})
            strings.append({"name": f"r{k}_{i}", "path": [f"n{k + 1}_{i}", f"n{k + 1}_{(i + 1) % 3}"],
                            "stiffness": 100.0, "rest_length": 0.15})
    return {"schema": "tensegrity-model", "version": 1, "name": "tower", "nodes": nodes, "bars": bars,
            "strings": strings}


STAGES = 3333                                    # 10,002 nodes, 9,999 bars, 19,998 strings


@pytest.fixture(scope="module")
def big():
    return tower(STAGES)


def _write(path, d):
    """YAML text in block style with one flow-style (JSON) line per element: fast to write, normal to read."""
    head = "".join(f"{k}: {json.dumps(v)}\n" for k, v in d.items() if not isinstance(v, list))
    body = "".join(f"{k}:\n" + "".join(f"- {json.dumps(e)}\n" for e in v) for k, v in d.items()
                   if isinstance(v, list))
    path.write_text(head + body)
    return path


def _timed_load(path):
    """(model or ModelError, CPU seconds of this process)."""
    t0, w0 = time.process_time(), time.perf_counter()
    try:
        out = load_model(path)
    except ModelError as exc:
        out = exc
    cpu = time.process_time() - t0
    print(f"{path.name}: {cpu:.2f} s CPU, {time.perf_counter() - w0:.2f} s wall")
    return out, cpu


def test_valid_10k_node_model_loads_in_time(tmp_path, big):
    m, dt = _timed_load(_write(tmp_path / "tower.yaml", big))
    assert not isinstance(m, ModelError), m
    assert m.n_physical == 3 * (STAGES + 1) and len(m.bar_names) == 3 * STAGES
    assert m.n_nodes == m.n_physical + 3 * (STAGES - 1)               # one virtual node per inner joint
    assert np.allclose(m.expand(m.reduce(m.positions)), m.positions)   # sparse Q consistent
    assert dt < LIMIT_S, f"{dt:.2f} s"


def _last_element_broken(big, how):
    d = {k: (list(v) if isinstance(v, list) else v) for k, v in big.items()}
    if how == "unknown node":
        d["strings"] = d["strings"][:-1] + [dict(d["strings"][-1], path=["n0_0", "nope"])]
    elif how == "redundant bar":                # same node pair as the last bar: found by the sparse check
        d["bars"] = d["bars"] + [{"name": "dup", "nodes": list(reversed(d["bars"][-1]["nodes"])), "mass": 0.1}]
    elif how == "massless node":
        d["nodes"] = d["nodes"] + [{"name": "lonely", "position": [5.0, 5.0, 5.0]}]
        d["strings"] = d["strings"] + [{"name": "sx", "path": ["lonely", "n0_0"], "stiffness": 1.0,
                                        "rest_length": 1.0}]
    elif how == "absurd radius":
        d["bars"] = d["bars"][:-1] + [dict(d["bars"][-1], radius=1e308)]
    return d


@pytest.mark.parametrize("how, element", [("unknown node", "string 'r3332_2'"), ("redundant bar", "bar 'dup'"),
                                          ("massless node", "node 'lonely'"), ("absurd radius", "bar 'b3332_2'")])
def test_invalid_10k_node_model_is_rejected_in_time(tmp_path, big, how, element):
    err, dt = _timed_load(_write(tmp_path / "tower.yaml", _last_element_broken(big, how)))
    assert isinstance(err, ModelError), "loaded although broken"
    assert element in str(err)
    assert dt < LIMIT_S, f"{dt:.2f} s"
