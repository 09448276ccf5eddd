"""Analytic tangent stiffness, modes and the linearisation, against independent references: the
finite-difference stiffness of the static balance, and the nonlinear simulator for small motions."""
import json

import numpy as np
import pytest
from scipy import linalg

from tensegrity_engine.statics.equilibrium import prestress, stability, with_rest_lengths
from tensegrity_engine.generators import icosahedron
from tensegrity_engine.model.build import build_model
from tensegrity_engine.model.load import load_model
from tensegrity_engine.model.spec import spec_from_dict
from tensegrity_engine.statics.modal import bar_multipliers, linearise, tangent_stiffness
from tensegrity_engine.dynamics.simulator import Simulator
from tensegrity_engine.dynamics.inputs import table


@pytest.fixture(scope="module")
def manip():
    return load_model("stacked_manipulator")


def fd_stiffness(m, X, lam):
    from tensegrity_engine.statics.modal import finite_difference_stiffness
    return finite_difference_stiffness(m, X, lam)


def test_analytic_tangent_stiffness_equals_finite_differences(manip):
    X = manip.positions
    lam = bar_multipliers(manip, X, manip.rest_length)
    Ka, Kf = tangent_stiffness(manip, X, lam=lam), fd_stiffness(manip, X, lam)
    # central differences at h = 1e-7 m on forces of ~100 N: ~1e-9 relative
    assert np.abs(Ka - Kf).max() <= 1e-7 * np.abs(Kf).max()


def test_modes_equal_finite_difference_modes_and_a_free_body_has_six_rigid_modes(manip):
    lin = linearise(manip)
    st = stability(manip, manip.positions)
    assert np.allclose(lin.frequencies_hz, np.sort(st["frequencies_hz"]), atol=1e-9)
    # modes from the finite-difference stiffness (independent of modal.py) on the same tangent space
    X = manip.positions
    Kf = fd_stiffness(manip, X, bar_multipliers(manip, X, manip.rest_length))
    Ks, Ms = lin.T.T @ Kf @ lin.T, lin.T.T @ np.kron(manip.reduced_mass, np.eye(3)) @ lin.T
    f_fd = np.sqrt(np.clip(linalg.eigh(Ks, Ms, eigvals_only=True), 0, None)) / (2 * np.pi)
    assert np.allclose(lin.frequencies_hz, f_fd, rtol=1e-6, atol=1e-6)
    ico = build_model(spec_from_dict(icosahedron(), "ico.yaml"))
    eq = prestress(ico, min_tension=10.0)
    lin = linearise(with_rest_lengths(ico, eq.rest_lengths))
    assert np.all(lin.frequencies_hz[:6] < 1e-4) and lin.frequencies_hz[6] > 0.1   # 6 rigid, then elastic


def _simulate_small(manip, z0=None, u=None, dur=0.3):
    sim = Simulator(manip, integrator="dopri5", rtol=1e-11, atol=1e-14)
    lin = linearise(manip)
    d = lin.T.shape[1]
    q0 = np.zeros(d) if z0 is None else z0[:d]
    Y = manip.reduce(manip.positions) + (lin.T @ q0).reshape(-1, 3)
    X = manip.positions.copy()
    X[manip.free_nodes] = Y
    sim.reset(manip.expand(Y))
    if u is not None:
        sim.set_inputs(u, horizon=dur)
    return sim.run(dur, rate=200), lin


def test_linearisation_predicts_small_free_vibration(manip):
    lin = linearise(manip)
    d = lin.T.shape[1]
    z0 = np.zeros(2 * d)
    z0[:d] = 1e-6 * lin.modes[:, 2] / np.abs(lin.C @ lin.modes[:, 2]).max()       # 1 µm along mode 3
    tr, _ = _simulate_small(manip, z0=z0)
    for k in (20, 40, 60):
        z = linalg.expm(lin.A * tr.t[k]) @ z0
        dX = (lin.C @ z[:d]).reshape(-1, 3)
        got = tr.nodes[k] - manip.positions
        # linear vs nonlinear at 1 µm: second-order terms ~1e-12 m; the model file's residual (< 1e-9 N)
        # moves the nonlinear run by ~1e-11 m in 0.3 s
        assert np.abs(got - dX).max() < 2e-3 * 1e-6 + 1e-10, np.abs(got - dX).max()


def test_linearisation_predicts_a_small_input_step(manip):
    lin = linearise(manip)
    d = lin.T.shape[1]
    na = len(manip.actuator_names)
    du = np.zeros(na)
    du[0] = 1e-6                                     # reel in 1 µm on m1 over 10 ms
    sched = table([0.0, 0.01, 1.0], [np.zeros(na), du, du])
    tr, _ = _simulate_small(manip, u=sched)
    # linear response to the ramp: augment with the input ramp rate as a constant input on [0, 0.01]
    Aa = np.block([[lin.A, lin.B, lin.B_rate], [np.zeros((2 * na, 2 * d + 2 * na))]])
    Aa[2 * d:2 * d + na, 2 * d + na:] = np.eye(na)   # u̇ integrates into u
    z = np.zeros(2 * d + 2 * na)
    z[2 * d + na:] = du / 0.01
    z = linalg.expm(Aa * 0.01) @ z
    z[2 * d + na:] = 0.0
    t_check = tr.t[40]
    z = linalg.expm(Aa * (t_check - 0.01)) @ z
    dX = (lin.C @ z[:d]).reshape(-1, 3)
    got = tr.nodes[40] - manip.positions
    assert np.abs(dX).max() > 1e-7                   # it moved
    assert np.abs(got - dX).max() < 1e-2 * np.abs(dX).max() + 1e-10


def test_cli_new_and_modes(tmp_path, capsys):
    from tensegrity_engine.cli import main
    assert main(["new", "prism", "--n", "6", "--min-tension", "8", "-o", str(tmp_path / "p6.yaml")]) == 0
    m = load_model(tmp_path / "p6.yaml")
    assert len(m.bar_names) == 6 and len(m.string_names) == 18 and "residual" in capsys.readouterr().out
    assert main(["modes", str(tmp_path / "p6.yaml"), "--as-is", "--check", "--out", str(tmp_path / "modes")]) == 0
    rep = json.loads((tmp_path / "modes" / "modes.json").read_text())
    assert rep["rigid_body_modes"] == 6 and rep["stable"] and rep["finite_difference_check_rel"] < 1e-6
    with np.load(tmp_path / "modes" / "linearisation.npz") as z:
        assert z["A"].shape == (rep["states"], rep["states"]) and z["B"].shape == (rep["states"], 0)
    assert (tmp_path / "modes" / "modes.png").stat().st_size > 20_000
    assert main(["new", "prism", "--n", "2", "-o", str(tmp_path / "bad.yaml")]) == 2
    assert "n >= 3" in capsys.readouterr().err


def test_cli_modes_settle_on_a_model_drawn_off_equilibrium(tmp_path, capsys):
    """prism3's drawn twist (150°) has no all-taut self-stress: the default (prestress the drawn shape)
    refuses and names --settle; --settle analyses the equilibrium shape of the file's rest lengths."""
    import json
    from tensegrity_engine.cli import main
    assert main(["modes", "prism3", "--no-plots", "--out", str(tmp_path / "a")]) == 2
    assert "--settle" in capsys.readouterr().err
    assert main(["modes", "prism3", "--settle", "--no-plots", "--out", str(tmp_path / "b")]) == 0
    rep = json.loads((tmp_path / "b" / "modes.json").read_text())
    assert rep["stable"] and rep["rigid_body_modes"] == 6
    assert rep["prestress_residual_N"] <= 1e-9                 # N: settle's Newton polish tolerance
    assert main(["modes", "prism3", "--settle", "--as-is", "--out", str(tmp_path / "c")]) == 2
