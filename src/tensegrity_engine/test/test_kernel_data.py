"""The kernels' pointer structs (kernel_data): every model gives the same numba types (one compiled
signature for all models), and the kernels read the model's arrays through them exactly."""
import numpy as np
from numba import njit, typeof

from tensegrity_engine import load_model
from tensegrity_engine.dynamics.kernel_params import kernel_params, kernel_ref
from tensegrity_engine.dynamics.simulator import Simulator


@njit(cache=False, _nrt=False)
def _read(p, w):
    return p.n, p.bar_len[p.bar_len.shape[0] - 1], p.X0[p.n - 1, 2], w.X.shape[0]


def test_every_model_gives_one_signature_and_the_fields_read_back():
    sims = [Simulator(load_model(name), integrator="rk4") for name in ("prism3", "stacked_manipulator")]
    types = {(str(typeof(kernel_ref(s.model))), str(typeof(s._wref))) for s in sims}
    assert len(types) == 1                      # same compiled kernels for both models
    for s in sims:
        m = s.model
        n, last_bar, z, rows = _read(kernel_ref(m), s._wref)
        assert (n, rows) == (m.n_nodes, m.n_nodes)
        assert last_bar == kernel_params(m).bar_len[-1] and z == kernel_params(m).X0[-1, 2]


def test_the_kernels_write_into_the_arrays_python_reads():
    sim = Simulator(load_model("prism3"), integrator="rk4")
    sim.run(0.01, rate=100)
    tensions, _ = sim.forces()
    assert np.all(np.isfinite(tensions)) and np.array_equal(tensions, sim._work.T)
