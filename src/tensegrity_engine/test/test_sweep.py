"""Sweeps (tensegrity_engine.sweep): results equal one-by-one Simulator runs of the same variants built from
an edited model document; local processes and a 2-worker Dask LocalCluster agree bitwise; failing runs and
dying workers are recorded while the other runs are kept and the file is written; kernels load once per
worker; bad specifications give clear errors."""
from __future__ import annotations

import copy
import threading

import numpy as np
import pytest

from tensegrity_engine import Simulator, build_model, spec_from_dict
from tensegrity_engine.model.load import resolve_model_path
from tensegrity_engine.model.yaml_text import parse_yaml
from tensegrity_engine.sweep.execute import run_sweep
from tensegrity_engine.sweep.result import DIED, ERROR, OK, SweepResult
from tensegrity_engine.sweep.spec import SweepSpec
from tensegrity_engine.sweep.variants import SweepError
from tensegrity_engine.cli.sweep import main as sweep_main

DURATION = 0.5


def _document():
    path = resolve_model_path("prism3")
    return parse_yaml(path.read_text(), str(path))


def reference(run, stiffness_side, rest_offset, velocity_sigma, seed):
    """The variant built by editing the model document, simulated with Simulator (the sweep's contract)."""
    doc = copy.deepcopy(_document())
    for s in doc["strings"]:
        if s["group"] == "side":
            s["stiffness"] = s["stiffness"] * stiffness_side
        s["rest_length"] = s["rest_length"] + rest_offset
    doc["gravity"] = [0.0, 0.0, -1.0]
    model = build_model(spec_from_dict(doc, "<edited>"))
    sim = Simulator(model, integrator="rk4", dt=1e-3)
    V0 = np.random.default_rng([seed, run]).normal(0.0, velocity_sigma, (model.n_nodes, 3))
    sim.reset(velocities=V0)
    return sim.run(DURATION, rate=100)


@pytest.fixture(scope="module")
def spec():
    return SweepSpec.build("prism3", grid={"stiffness.side": [0.8, 1.2], "rest_offset": [0.0, 0.01],
                                           "gravity.z": [-1.0]},
                           random={"velocity_sigma": ("normal", 0.05, 0.02, 0.0, 0.1)}, draws=3, seed=7)


@pytest.fixture(scope="module")
def local(spec, tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep")
    return run_sweep(spec, DURATION, workers=2, batch=2, progress=False, out=out,
                     _faults={"raise": {1}}), out


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    import dask
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):   # a killed worker fails its task at once
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=":0") as c:
            yield c


def test_spec_is_grid_times_seeded_draws(spec):
    assert spec.n_runs == 2 * 2 * 1 * 3 and spec.names[-1] == "velocity_sigma"
    sig = spec.values[:, -1]
    assert np.all((sig >= 0) & (sig <= 0.1)) and len(set(sig)) == spec.n_runs
    again = SweepSpec.build("prism3", grid={"stiffness.side": [0.8, 1.2], "rest_offset": [0.0, 0.01],
                                            "gravity.z": [-1.0]},
                            random={"velocity_sigma": ("normal", 0.05, 0.02, 0.0, 0.1)}, draws=3, seed=7)
    assert np.array_equal(again.values, spec.values)
    assert np.array_equal(spec.values[:3, 0], [0.8] * 3) and np.array_equal(spec.values[6:9, 0], [1.2] * 3)


def test_results_equal_one_by_one_simulator_runs(spec, local):
    res, out = local
    assert res.status[1] == ERROR and "injected failure in run 1" in res.error[1]
    assert np.all(res.status[np.arange(spec.n_runs) != 1] == OK)
    for run in range(spec.n_runs):
        if run == 1:
            assert np.isnan(res.final_positions[1]).all()
            continue
        k, off, g, sigma = spec.values[run]
        tr = reference(run, k, off, sigma, spec.seed)
        assert np.array_equal(res.final_positions[run], tr.nodes[-1])
        assert np.array_equal(res.final_velocities[run], tr.velocities[-1])
        assert np.array_equal(res.max_tension[run], tr.tensions.max(0))
        assert np.array_equal(res.min_tension[run], tr.tensions.min(0))
        assert res.t_final[run] == pytest.approx(DURATION, abs=1e-12)
    back = SweepResult.load(out)
    assert back.names == spec.names and np.array_equal(back.values, spec.values)
    assert np.array_equal(back.final_positions, res.final_positions, equal_nan=True)
    assert back.failed() == res.failed() and back.failed()[0][0] == 1


def test_kernels_are_loaded_once_per_worker(local):
    res, _ = local
    # 6 tasks on at most 2 worker processes (how they share them depends on timing): a worker ran several
    # tasks, yet built its state once and compiled/loaded no kernel after its initialisation
    assert 1 <= len(res.workers) <= 2 and sum(w["tasks"] for w in res.workers) == 6
    for w in res.workers:
        assert w["inits"] == 1
        assert w["signatures"] == w["init_signatures"] and w["signatures"]["integrate_rk4"] == 1


@pytest.mark.slow
def test_spawned_workers_give_the_same_results(spec, local):
    """With another thread alive the workers are spawned, not forked: same results."""
    stop = threading.Event()
    waiter = threading.Thread(target=stop.wait)
    waiter.start()
    try:
        res = run_sweep(spec, DURATION, workers=2, batch=4, progress=False, _faults={"raise": {1}})
    finally:
        stop.set()
        waiter.join()
    assert res.settings["start_method"] == "spawn"
    assert np.array_equal(res.status, local[0].status)
    assert np.array_equal(res.final_positions, local[0].final_positions, equal_nan=True)


def test_a_dying_worker_loses_only_its_run(spec, tmp_path):
    res = run_sweep(spec, DURATION, workers=2, batch=3, progress=False, out=tmp_path, _faults={"exit": {4}})
    assert res.status[4] == DIED and "died while simulating this run" in res.error[4]
    assert np.all(res.status[np.arange(spec.n_runs) != 4] == OK)
    back = SweepResult.load(tmp_path)
    assert [f[0] for f in back.failed()] == [4] and np.isfinite(back.final_positions[5]).all()
    import pyarrow.parquet as pq          # one row per run with its parameters, the failed one listed
    table = pq.read_table(tmp_path / "sweep.parquet").to_pydict()
    assert table["run"] == list(range(spec.n_runs)) and table["status"][4] == DIED
    for i, name in enumerate(res.names):
        assert np.array_equal(table[name], res.values[:, i])
    assert "died while simulating" in table["error"][4] and table["error"][5] == ""


@pytest.mark.slow
def test_local_cluster_gives_the_local_results(spec, local, cluster, tmp_path):
    res = run_sweep(spec, DURATION, scheduler=cluster, batch=2, progress=False, _faults={"raise": {1}})
    ref = local[0]
    assert np.array_equal(res.status, ref.status)
    assert np.array_equal(res.final_positions, ref.final_positions, equal_nan=True)
    assert np.array_equal(res.max_tension, ref.max_tension, equal_nan=True)
    assert 1 <= len(res.workers) <= 2 and sum(w["tasks"] for w in res.workers) == 6
    for w in res.workers:
        assert w["inits"] == 1 and w["signatures"] == w["init_signatures"]
    # a worker dying mid-run: that run is listed as failed, the others kept (Dask retried/split the batch)
    res = run_sweep(spec, DURATION, scheduler=cluster, batch=4, progress=False, out=tmp_path, _faults={"exit": {5}})
    assert res.status[5] == DIED and "worker died" in res.error[5]
    keep = ~np.isin(np.arange(spec.n_runs), [1, 5])          # 1 raised in the reference run
    assert np.array_equal(res.final_positions[keep], ref.final_positions[keep], equal_nan=True)
    assert [f[0] for f in SweepResult.load(tmp_path).failed()] == [5] and res.status[1] == OK


def test_a_diverging_run_is_recorded_and_the_others_kept(tmp_path):
    spec = SweepSpec.build("prism3", grid={"stiffness": [1.0, 1e7]})
    res = run_sweep(spec, 0.2, dt=1e-2, workers=1, progress=False)
    assert res.status.tolist() == [OK, ERROR]
    assert "SimulationDiverged" in res.error[1] and np.isfinite(res.final_positions[0]).all()


@pytest.mark.parametrize("kw, message", [
    ({"grid": {"stiffnes": [1.0]}}, "unknown parameter 'stiffnes'"),
    ({"grid": {"stiffness.diagonal": [1.0]}}, "neither a string group"),
    ({"grid": {"stiffness": [0.0]}}, "stiffness factor must be > 0"),
    ({"grid": {"rest_offset.top": [-0.3]}}, "rest length of string 'c0' becomes"),
    ({"grid": {"gravity": [1.0]}}, "gravity.x, gravity.y or gravity.z"),
    ({"random": {"damping": ("uniform", 1.0, 0.0)}, "draws": 3}, "uniform needs lo < hi"),
    ({"random": {"damping": ("uniform", 0.0, 1.0)}}, "need a number of Monte Carlo draws"),
    ({"random": {"damping": ("normal", 0.0, 1.0, 50.0, 60.0)}, "draws": 3}, "keep almost no mass"),
    ({"grid": {"stiffness": []}}, "has no values"),
])
def test_bad_specs_give_clear_errors(kw, message):
    with pytest.raises(SweepError, match=message):
        SweepSpec.build("prism3", **kw)


def test_bad_settings_give_clear_errors(spec):
    import dask
    import distributed  # noqa: F401 - its config defaults must be loaded before dask.config.set below
    for kw, message in (({"duration": 0}, "duration must be"), ({"integrator": "euler"}, "integrator must be"),
                        ({"outputs": ("energy",)}, "unknown output"), ({"scheduler": 3}, "scheduler must be"),
                        ({"scheduler": "tcp://127.0.0.1:9"}, "cannot reach the Dask scheduler")):
        with pytest.raises(SweepError, match=message), dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
            run_sweep(spec, **{"duration": 0.1, "progress": False, **kw})


def test_cli_writes_the_file_and_plot(tmp_path, capsys):
    code = sweep_main(["prism3", "--grid", "stiffness=0.9:1.1:3", "--uniform", "velocity_sigma=0:0.05",
                       "--monte-carlo", "2", "--seed", "1", "--duration", "0.2", "--workers", "1",
                       "--out", str(tmp_path), "--quiet"])
    assert code == 0
    res = SweepResult.load(tmp_path)
    assert res.n_runs == 6 and res.ok.all() and res.names == ("stiffness", "velocity_sigma")
    assert np.allclose(res.values[:, 0], [0.9, 0.9, 1.0, 1.0, 1.1, 1.1])
    assert (tmp_path / "sweep.png").stat().st_size > 1000
    assert "6 runs" in capsys.readouterr().out
    assert sweep_main(["prism3", "--grid", "stiffness=abc", "--out", str(tmp_path)]) == 2
    assert "stiffness=abc" in capsys.readouterr().err


def test_the_engine_command_line_runs_a_sweep(tmp_path):
    """'tensegrity sweep' is wired into the engine's command line (same files as the standalone entry)."""
    from tensegrity_engine.cli import main as tensegrity
    assert tensegrity(["sweep", "prism3", "--grid", "stiffness=0.9,1.1", "--duration", "0.1", "--workers", "1",
                       "--out", str(tmp_path), "--quiet"]) == 0
    res = SweepResult.load(tmp_path)
    assert res.n_runs == 2 and res.ok.all()
    assert tensegrity(["sweep", "prism3", "--grid", "nonsense=1,2", "--out", str(tmp_path)]) == 2
