"""Dynamic identification says when its optimiser stopped at the evaluation limit (issue 21 #22): the result,
report.json and the command's output carry the warning, and no parameter is listed as identified without it."""
import json

import numpy as np
import pytest
import yaml

from tensegrity_engine import load_model
from tensegrity_engine.cli.identify import main as identify_main
from tensegrity_engine.identify.dynamic import identify_dynamic
from tensegrity_engine.identify.params import model_with, parameters
from tensegrity_engine.identify.synthetic import synthetic_capture
from tensegrity_engine.dynamics.inputs import paper_sinusoid


@pytest.fixture(scope="module")
def manip():
    return load_model("stacked_manipulator")


def test_a_fit_stopped_at_its_evaluation_limit_is_not_reported_as_converged(manip):
    plist = parameters(manip, ("stiffness",), "model")
    truth = model_with(manip, plist, [1.2 * p.initial for p in plist])
    cap, _ = synthetic_capture(truth, paper_sinusoid(manip, period=1.0), 1.0, rate=100, noise=3e-4, seed=1)
    res = identify_dynamic(manip, [cap], params=("stiffness",), shooting=0, dt=2e-3, max_nfev=1, regressor=False)
    assert [st["status"] for st in res.stages if "status" in st] == [0]       # scipy: max_nfev reached
    assert not res.converged
    assert any("evaluation limit" in w and "single shooting" in w for w in res.warnings)
    rep = res.as_dict()
    assert rep["converged"] is False and rep["warnings"] == res.warnings
    assert rep["misfit_rms_m"] == res.misfit_rms and rep["noise_m"] == pytest.approx(res.noise)
    assert np.isfinite(res.noise) and res.noise < res.misfit_rms            # misfit and noise apart


def test_cli_prints_and_reports_the_unconverged_fit(manip, tmp_path, capsys):
    from tensegrity_engine.dynamics.simulator import Simulator
    plist = parameters(manip, ("stiffness",), "model")
    truth = model_with(manip, plist, [1.1 * p.initial for p in plist])
    sim = Simulator(truth, rtol=1e-8, atol=1e-10)
    sim.run(1.0, inputs=paper_sinusoid(manip, period=1.0), rate=100).save(tmp_path / "train")
    (tmp_path / "cases.yaml").write_text(yaml.safe_dump(
        {"params": ["stiffness"], "captures": [{"name": "train", "data": "train/trajectory.npz"}]}))
    out = tmp_path / "out"
    assert identify_main(["stacked_manipulator", "--dynamic", str(tmp_path / "cases.yaml"), "--out", str(out),
                          "--shooting", "0", "--max-nfev", "1", "--workers", "1", "--no-plots"]) == 0
    text = capsys.readouterr().out
    assert "evaluation limit" in text and "NOT CONVERGED" in text
    rows = [ln for ln in text.splitlines() if ln.startswith(("EA:", "stiffness:"))]
    assert rows and all("NOT CONVERGED" in ln or "NOT IDENTIFIABLE" in ln for ln in rows)
    rep = json.loads((out / "report.json").read_text())
    assert rep["converged"] is False and any("evaluation limit" in w for w in rep["warnings"])
    assert "NOT CONVERGED" in load_model(out / "identified.yaml").spec.notes
