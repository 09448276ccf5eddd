"""Compile the engine's numba kernels at image build time, so the first launch starts in seconds.

numba caches the machine code next to the sources (cache=True); a container on a CPU with other
features than the build machine's recompiles once, on its first start. This runs the code paths of the
nodes: the equilibrium, fixed-step RK4 and both clearance sweeps.
"""
import time

from tensegrity_engine import Simulator, load_model
from tensegrity_engine.collision import check, model_elements
from tensegrity_engine.equilibrium import settle

t0 = time.monotonic()
model = load_model("stacked_manipulator")
X = settle(model).positions
sim = Simulator(model, integrator="rk4", dt=1e-3)
sim.reset(X)
sim.advance(0.01)
elements = model_elements(model)
check(elements, X, 0.0)
check(elements, X, 0.0, prune=True)
print(f"numba kernels compiled and cached in {time.monotonic() - t0:.1f} s")
