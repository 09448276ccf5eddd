"""The built-in stacked manipulator: counts, exact stable equilibrium, the paper's experiment."""
from __future__ import annotations

import numpy as np
import pytest

from tensegrity_engine import Simulator, paper_sinusoid
from tensegrity_engine.statics.equilibrium import prestress, stability
from tensegrity_engine.frames import euler_zyx, paper_relative_frames


def test_counts_match_the_paper(manipulator):
    assert manipulator.counts == {"mu": 24, "nu": 12, "beta": 18, "sigma_c": 14, "sigma_s": 36, "phi": 18,
                                  "alpha": 6}
    assert set(manipulator.frame_names) >= {"C0", "C1", "C2"}


def test_shipped_shape_is_exact_stable_all_taut_equilibrium(manipulator):
    ps = prestress(manipulator, min_tension=0.0)
    assert ps.residual <= 1e-9                              # static residual target [N]
    # tensions implied by the shipped rest lengths at the shipped shape
    T, _ = Simulator(manipulator).forces()
    assert T.min() > 1.0
    st = stability(manipulator, manipulator.positions)
    assert st["stable"]


def test_stands_still_without_input(manipulator):
    tr = Simulator(manipulator).run(2.0, rate=20)
    assert np.abs(tr.nodes - manipulator.positions).max() <= 1e-7


@pytest.mark.parametrize("damping", [True, False])
def test_paper_experiment_keeps_strings_taut(manipulator, damping):
    tr = Simulator(manipulator, damping=damping).run(14.0, inputs=paper_sinusoid(manipulator), rate=50)
    assert tr.tensions.min() > 0.0
    assert tr.bar_length_error.max() <= 1e-12
    # stage-2 base nodes stay exactly on plate-1 edge midpoints (linear constraints eliminated exactly)
    n = {nm: i for i, nm in enumerate(manipulator.node_names)}
    mid = 0.5 * (tr.nodes[:, n["n11"]] + tr.nodes[:, n["n12"]])
    assert np.abs(tr.nodes[:, n["n13"]] - mid).max() <= 1e-14
    # the input moves the plates visibly (centimetres, degrees)
    rel = paper_relative_frames(manipulator, tr.nodes)
    assert np.ptp(rel["0C2"][:, :3, 3], axis=0).max() > 0.01
    assert np.ptp(euler_zyx(rel["0C1"][:, :3, :3]), axis=0).max() > np.radians(0.5)
