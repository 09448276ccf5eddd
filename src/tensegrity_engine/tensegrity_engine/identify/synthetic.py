"""Synthetic captures made by the engine, for testing identification against known parameters.

:func:`synthetic_capture` simulates a model (tight-tolerance Dormand-Prince) under given inputs and returns
what a motion-capture system would give: the physical nodes' marker positions (the nodes themselves unless the
model puts a ``marker`` off them) at ``rate`` [Hz] with Gaussian noise
``noise`` [m] per coordinate, a fraction ``drop`` of frames missing, and occlusion runs (a node NaN for
``occlusion_frames`` consecutive frames, ``occlusions`` of them), plus the noise-free truth.
:func:`manipulator_truth` is the acceptance case of dynamic identification: the manipulator with every
stiffness +20 %, string damping x3, structural damping 0.3 1/s and viscous pulley friction on the
actuated strings, none of which the model file knows.
:func:`payload_take` writes a take for ``payload: NODE`` (docs/identification.md, "A payload in dynamic
identification"): the manipulator driven by the paper's sinusoids with a payload hung from a top-plate node,
pulled aside and released; its truth has every stiffness +20 % and string damping x3::

    python -m tensegrity_engine.identify.synthetic runs/payload_take
"""
from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from tensegrity_engine.identify.data import DynamicCapture, capture_from_arrays
from tensegrity_engine.identify.params import model_with, parameters
from tensegrity_engine.dynamics.simulator import Simulator
from tensegrity_engine.model.markers import marker_positions


def synthetic_capture(model, inputs, duration: float, rate: float = 360.0, noise: float = 5e-4,
                      drop: float = 0.01, occlusions: int = 3, occlusion_frames: int = 20, seed: int = 0,
                      name: str = "synthetic", rtol: float = 1e-9, at_rest: bool = True) -> tuple:
    """(DynamicCapture with noise, dropped frames and occlusions; noise-free truth (T, mu, 3) at its times).
    ``at_rest``: start from the model's equilibrium (a changed model file's positions are not one)."""
    rng = np.random.default_rng(seed)
    sim = Simulator(model, rtol=rtol, atol=rtol * 1e-2)
    if at_rest and len(model.free_nodes):
        from tensegrity_engine.statics.equilibrium import settle
        sim.reset(settle(model).positions)         # a capture starts with the robot at rest
    traj = sim.run(duration, inputs=inputs, rate=rate)
    mu = model.n_physical
    truth = marker_positions(model, traj.nodes)      # a capture sees the markers (the nodes without markers off them)
    X = truth + rng.normal(0.0, noise, truth.shape)
    for _ in range(occlusions):
        i = int(rng.integers(mu))
        k = int(rng.integers(1, max(2, len(X) - occlusion_frames)))
        X[k:k + occlusion_frames, i] = np.nan
    keep = rng.random(len(X)) >= drop
    keep[[0, -1]] = True
    cap = capture_from_arrays(model, traj.t[keep], X[keep], inputs, name=name, source=f"synthetic ({model.name})")
    return cap, truth[keep]


def manipulator_truth(model, pulley: float = 20.0):
    """(truth model, {parameter name: true value}) for the acceptance case (module docstring)."""
    plist = parameters(model, ("stiffness", "string_damping", "structural_damping", "pulley_damping"), "model")
    true = {}
    for p in plist:
        if p.kind == "stiffness":
            true[p.name] = 1.2 * p.initial
        elif p.kind == "string_damping":
            true[p.name] = 3.0 * p.initial
        elif p.kind == "structural_damping":
            true[p.name] = 0.3
        else:
            true[p.name] = pulley if "actuated" in p.name else 0.0
    return model_with(model, plist, [true[p.name] for p in plist]), true


PAYLOAD_TRUTH = {"stiffness": 1.2, "string_damping": 3.0}     # the take's truth: x the model file's values


def payload_truth(robot) -> tuple:
    """(the robot with PAYLOAD_TRUTH's factors, {parameter name: true value}) (groups as in the model file)."""
    plist = parameters(robot, tuple(PAYLOAD_TRUTH), "model")
    true = {p.name: PAYLOAD_TRUTH[p.kind] * p.initial for p in plist}
    return model_with(robot, plist, [true[p.name] for p in plist]), true


def payload_take(out, duration: float = 6.0, rate: float = 200.0, noise: float = 4e-4, held_out: float = 2.0,
                 hang: str = "n22", mass: float = 0.3, cable_length: float = 0.12, amplitude: float = 0.04,
                 period: float = 2.0, lead: float = 0.5, seed: int = 0) -> dict:
    """Write into ``out`` a take of the manipulator with a payload of ``mass`` [kg] on a ``cable_length`` [m]
    cable from ``hang`` (1.44 Hz by default, the lab's 1.4-1.6 Hz), released ``amplitude`` [m] aside (x) at rest
    as the paper's sinusoids (``period`` [s]) start, captured from ``lead`` [s] after (the cable's bounce from
    the release has died down): ``model.yaml`` (the model file's values and the payload ``payload``),
    ``take/trajectory.npz`` (``duration`` [s] at ``rate`` [Hz], markers with Gaussian ``noise`` [m], the
    commands), ``cases.yaml`` (the last ``held_out`` [s] held out) and ``truth.json`` (PAYLOAD_TRUTH's
    values). Returns the paths."""
    from tensegrity_engine.dynamics.inputs import paper_sinusoid
    from tensegrity_engine.model.build import build_model
    from tensegrity_engine.model.load import load_model
    from tensegrity_engine.model.payload import with_payload
    from tensegrity_engine.model.write import dump_model
    from tensegrity_engine.statics.equilibrium import settle
    import yaml
    robot = load_model("stacked_manipulator")
    truth_robot, true = payload_truth(robot)
    truth = with_payload(truth_robot, hang, mass, cable_length)
    pulled = with_payload(truth_robot, hang, mass, cable_length, offset=(amplitude, 0.0, 0.0)).spec
    held = replace(pulled, nodes=pulled.nodes[:-1] + (replace(pulled.nodes[-1], fixed=True),))
    sim = Simulator(truth, rtol=1e-8, atol=1e-10)
    sim.reset(settle(build_model(held)).positions)
    traj = _from(sim.run(lead + duration, inputs=paper_sinusoid(robot, period=period), rate=rate), lead)
    rng = np.random.default_rng(seed)
    X = np.array(traj.nodes)
    X[:, :truth.n_physical] += rng.normal(0.0, noise, X[:, :truth.n_physical].shape)
    out = Path(out)
    paths = {"model": dump_model(with_payload(robot, hang, mass, cable_length), out / "model.yaml")}
    replace(traj, nodes=X).save(out / "take")
    split = duration - held_out
    cases = {"params": list(PAYLOAD_TRUTH), "groups": "model", "captures": [
        {"name": "fit", "data": "take/trajectory.npz", "payload": "payload", "end": split},
        {"name": "check", "data": "take/trajectory.npz", "payload": "payload", "start": split, "held_out": True}]}
    paths["cases"] = out / "cases.yaml"
    paths["cases"].write_text(yaml.safe_dump(cases, sort_keys=False))
    paths["truth"] = out / "truth.json"
    paths["truth"].write_text(json.dumps({"noise_m": noise, "values": true}, indent=2))
    paths["take"] = out / "take" / "trajectory.npz"
    return paths


def _from(traj, t0: float):
    """``traj`` from time ``t0`` [s] on (its clock kept: the commands' clock)."""
    keep = np.asarray(traj.t) >= t0 - 1e-9
    T = len(keep)
    cut = {k: v[keep] for k, v in vars(traj).items() if isinstance(v, np.ndarray) and v.ndim and len(v) == T}
    return replace(traj, **cut)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m tensegrity_engine.identify.synthetic OUT_DIR", file=sys.stderr)
        return 2
    paths = payload_take(argv[0])
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


__all__ = ["DynamicCapture", "synthetic_capture", "manipulator_truth", "payload_take"]


if __name__ == "__main__":
    sys.exit(main())
