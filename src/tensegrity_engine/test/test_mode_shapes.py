"""Mode shapes in node coordinates (mode_shapes.py), their GIFs (mode_animation.py) and `tensegrity modes
--animate`."""
import json

import numpy as np
import pytest

from tensegrity_engine import load_model
from tensegrity_engine.statics.mode_shapes import (at_equilibrium, default_amplitude, elastic_indices, frames, mode_shape,
                                           mode_shapes, normalised, positions, rigid_body_count)


@pytest.fixture(scope="module")
def prism():
    model = load_model("prism3")
    eq, lin = at_equilibrium(model)
    return model, eq, lin


def test_normalised_field_has_unit_largest_displacement_and_a_fixed_sign():
    d = np.array([[0.0, 3.0, 4.0], [-6.0, 0.0, 8.0]])
    n = normalised(d)
    assert np.isclose(np.linalg.norm(n, axis=1).max(), 1.0)
    assert np.allclose(n, d / 10.0)                      # largest coordinate (8) positive: sign kept
    assert np.allclose(normalised(-d), n)                # the eigensolver's sign does not matter
    assert np.array_equal(normalised(np.zeros((3, 3))), np.zeros((3, 3)))


def test_free_prism_skips_its_six_rigid_body_modes(prism):
    model, eq, lin = prism
    assert eq.residual < 1e-9
    assert rigid_body_count(lin.frequencies_hz) == 6     # free-floating: 3 translations, 3 rotations
    idx = elastic_indices(lin.frequencies_hz)
    s = mode_shape(lin, 1)
    assert s.number == 1 and s.index == idx[0] == 6 and s.frequency_hz == lin.frequencies_hz[6] > 0
    assert len(mode_shapes(lin)) == len(idx) and [m.number for m in mode_shapes(lin, 3)] == [1, 2, 3]
    with pytest.raises(ValueError, match=rf"mode {len(idx) + 1} does not exist.*numbered 1..{len(idx)}"):
        mode_shape(lin, len(idx) + 1)
    with pytest.raises(ValueError, match="mode 0 does not exist"):
        mode_shape(lin, 0)


def test_mode_shape_is_the_linearised_mode_in_node_coordinates(prism):
    model, _, lin = prism
    X = lin.positions
    for s in mode_shapes(lin):
        raw = (lin.C @ lin.modes[:, s.index]).reshape(-1, 3)
        d = s.displacement
        assert d.shape == (model.n_nodes, 3) and np.isclose(np.linalg.norm(d, axis=1).max(), 1.0)
        c = np.sum(raw * d) / np.sum(d * d)              # d is raw scaled by one number
        assert np.allclose(raw, c * d, rtol=0, atol=1e-12 * np.abs(raw).max())
        # bar lengths are constant to first order: b . (phi_p - phi_q) = 0 for every bar
        b = X[model.bars[:, 0]] - X[model.bars[:, 1]]
        db = d[model.bars[:, 0]] - d[model.bars[:, 1]]
        assert np.abs(np.sum(b * db, axis=1)).max() < 1e-12
        # an elastic mode is mass-orthogonal to the rigid translations (prism3: free coordinates = nodes)
        Mr = model.reduced_mass
        assert Mr.shape == (6, 6) and np.abs(np.ones(6) @ Mr @ d).max() < 1e-10 * Mr.sum()


def test_oscillation_positions_and_frames(prism):
    model, _, lin = prism
    s = mode_shape(lin, 2)
    a = default_amplitude(model)
    assert a == pytest.approx(0.1 * 0.3)                 # 10 % of the 0.3 m bars
    X0 = lin.positions
    assert np.allclose(positions(X0, s, a, 4.0, 1.0) - X0, a * s.displacement)   # quarter period: full excursion
    assert np.allclose(positions(X0, s, a, 4.0, 2.0), X0, atol=1e-15)
    P = frames(X0, s, a, 30)
    assert P.shape == (30, model.n_nodes, 3) and np.array_equal(P[0], X0)
    assert np.allclose(P[5] - X0, a * np.sin(2 * np.pi * 5 / 30) * s.displacement, rtol=0, atol=1e-15)
    # the linear mode changes bar lengths at second order only (relative error <= |2a|^2 / (2 L^2), the
    # two ends moving by a each, across the bar): halving a quarters the error
    err = [np.abs(model.bar_length_error(positions(X0, s, amp, 4.0, 1.0))).max() for amp in (a, a / 2)]
    assert err[0] < 2 * (a / 0.3) ** 2 and err[1] == pytest.approx(err[0] / 4, rel=0.05)


def test_cli_modes_animate_writes_small_gifs_and_mode_vectors(tmp_path, capsys):
    from PIL import Image

    from tensegrity_engine.cli import main
    assert main(["new", "prism", "--n", "3", "-o", str(tmp_path / "p3.yaml")]) == 0
    out = tmp_path / "modes"
    assert main(["modes", str(tmp_path / "p3.yaml"), "--as-is", "--no-plots", "--count", "4", "--animate",
                 "--mode", "1", "3", "--out", str(out)]) == 0
    assert "mode_1.gif, mode_3.gif" in capsys.readouterr().out
    for k in (1, 3):
        gif = out / f"mode_{k}.gif"
        assert 10_000 < gif.stat().st_size < 1_000_000
        with Image.open(gif) as im:
            assert im.is_animated and im.n_frames >= 15  # 30 frames; Pillow merges the identical pairs
    rep = json.loads((out / "modes.json").read_text())
    assert len(rep["node_names"]) == 6 and [m["mode"] for m in rep["modes"]] == [1, 2, 3, 4]
    model = load_model(tmp_path / "p3.yaml")
    from tensegrity_engine.statics.modal import linearise
    lin = linearise(model)
    for entry in rep["modes"]:
        s = mode_shape(lin, entry["mode"])
        assert entry["index"] == s.index and entry["frequency_hz"] == pytest.approx(s.frequency_hz, rel=1e-12)
        assert np.allclose(entry["node_displacements"], s.displacement, atol=1e-12)
    # bad requests: no such mode, --mode without --animate
    assert main(["modes", str(tmp_path / "p3.yaml"), "--as-is", "--no-plots", "--animate", "--mode", "99",
                 "--out", str(out)]) == 2
    assert "mode 99 does not exist" in capsys.readouterr().err
    assert main(["modes", str(tmp_path / "p3.yaml"), "--as-is", "--no-plots", "--mode", "2", "--out", str(out)]) == 2
    assert "add --animate" in capsys.readouterr().err
