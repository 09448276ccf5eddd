"""Shared helpers: small models built from dictionaries."""
from __future__ import annotations

import numpy as np
import pytest

from tensegrity_engine import build_model, load_model, spec_from_dict


def make_model(nodes, bars=(), strings=(), gravity=(0.0, 0.0, 0.0), **extra):
    """Build a model from compact lists: nodes [(name, pos, {opts})], bars [(name, a, b, mass)],
    strings [dict]."""
    d = {"schema": "tensegrity-model", "version": 1, "name": extra.pop("name", "test"), "gravity": list(gravity),
         "nodes": [dict(name=n, position=list(p), **(o[0] if o else {})) for n, p, *o in nodes],
         "bars": [{"name": n, "nodes": [a, b], "mass": m} for n, a, b, m in bars],
         "strings": list(strings)}
    d.update(extra)
    return build_model(spec_from_dict(d, "<test>"))


@pytest.fixture(scope="session")
def prism3():
    return load_model("prism3")


@pytest.fixture(scope="session")
def manipulator():
    return load_model("stacked_manipulator")


def random_tangent_velocities(model, scale, seed=0):
    """Random node velocities (n,3) [m/s] (the simulator projects them onto the constraints)."""
    rng = np.random.default_rng(seed)
    return rng.normal(scale=scale, size=(model.n_nodes, 3))
