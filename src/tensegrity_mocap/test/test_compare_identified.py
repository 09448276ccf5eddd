"""tensegrity-compare of a held-out capture against a model identified from another capture (issue 13's
prediction figure): the identified model, driven by the held-out run's own commands, predicts it far
better than the model file did."""
import csv
import json
import math

import numpy as np
import pytest
import yaml

from tensegrity_engine import load_model
from tensegrity_engine.statics.equilibrium import settle
from tensegrity_engine.cli.identify import main as identify_main
from tensegrity_engine.identify.params import model_with, parameters
from tensegrity_engine.dynamics.inputs import paper_sinusoid
from tensegrity_engine.dynamics.simulator import Simulator
from tensegrity_mocap.cli.compare import main as compare_main


def _write_inputs(path, model, schedule, duration, rate=200.0):
    t = np.arange(int(duration * rate) + 1) / rate
    u, _ = schedule(t)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["t", *model.actuator_names])
        for ti, row in zip(t, u):
            w.writerow([f"{ti:.6f}", *(f"{v:.9f}" for v in row)])


@pytest.mark.slow
def test_identified_model_predicts_a_held_out_run(tmp_path):
    model = load_model("stacked_manipulator")
    plist = parameters(model, ("stiffness", "structural_damping"), "model")
    truth = model_with(model, plist, [1.15 * p.initial if p.kind == "stiffness" else 0.3 for p in plist])
    rest = settle(truth).positions
    held_in = paper_sinusoid(model, period=3.0, amplitudes=(0.03, 0.02), phases=(0.0, 2 * math.pi / 3, -2 * math.pi / 3))
    for name, inp in (("train", paper_sinusoid(model, period=3.0)), ("held", held_in)):
        sim = Simulator(truth, rtol=1e-10, atol=1e-12)
        sim.reset(rest)
        sim.run(2.0, inputs=inp, rate=100).save(tmp_path / name)
    _write_inputs(tmp_path / "held_inputs.csv", model, held_in, 2.0)
    (tmp_path / "cases.yaml").write_text(yaml.safe_dump(
        {"params": ["stiffness", "structural_damping"], "groups": "model",
         "captures": [{"name": "train", "data": "train"}]}))
    assert identify_main(["stacked_manipulator", "--dynamic", str(tmp_path / "cases.yaml"), "--out",
                          str(tmp_path / "id"), "--no-plots"]) == 0
    rms = {}
    for label, sim_model in (("before", "stacked_manipulator"), ("identified", str(tmp_path / "id" / "identified.yaml"))):
        out = tmp_path / f"cmp_{label}"
        assert compare_main([str(tmp_path / "held" / "trajectory.npz"), "--model", "stacked_manipulator",
                             "--simulate", sim_model, "--input", str(tmp_path / "held_inputs.csv"),
                             "--initial-from-experiment", "--out", str(out)]) == 0
        rms[label] = json.loads((out / "rms.json").read_text())
    before, after = rms["before"], rms["identified"]
    # the paper's table (relative frames 0C1, 0C2, 1C2): position and ZYX angle RMS; a 15 % stiffer robot
    # puts the plates mm away from the model file's prediction, the identified model within 0.1 of that
    assert set(before["frames"]) == {"0C1", "0C2", "1C2"}
    for f in ("0C1", "0C2", "1C2"):
        b, a = before["frames"][f], after["frames"][f]
        assert b["position_rms_mm"] > 1.0 and a["position_rms_mm"] < 0.1 * b["position_rms_mm"]
        assert a["orientation_rms_deg"] < 0.1 * b["orientation_rms_deg"] and set(a["euler_rms_deg"]) == {
            "psi_z", "theta_y", "phi_x"}
    assert after["overall"]["position_rms_mm"] < 0.2
