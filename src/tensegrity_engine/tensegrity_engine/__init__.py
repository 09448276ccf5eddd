"""tensegrity_engine: constrained node-based dynamics, equilibrium and geometry of tensegrity robots.

Pure Python (NumPy/SciPy/numba), no ROS import. Main entry points::

    from tensegrity_engine import load_model, Simulator, paper_sinusoid
    model = load_model("stacked_manipulator")
    traj = Simulator(model).run(14.0, inputs=paper_sinusoid(model))
"""
# first: drops numba cache entries compiled from other kernel sources
from tensegrity_engine import kernel_cache  # noqa: F401
from tensegrity_engine.errors import InputError, ModelError, SimulationDiverged
from tensegrity_engine.dynamics.inputs import from_csv, no_input, paper_sinusoid, sinusoid, table
from tensegrity_engine.model.model import Model
from tensegrity_engine.model.build import build_model
from tensegrity_engine.model.load import builtin_models, load_model, resolve_model_path
from tensegrity_engine.model.spec import load_spec, spec_from_dict
from tensegrity_engine.dynamics.simulator import Simulator
from tensegrity_engine.dynamics.trajectory import Trajectory

__version__ = "0.1.0"
__all__ = ["InputError", "ModelError", "SimulationDiverged", "Model", "Simulator", "Trajectory", "build_model",
           "builtin_models", "load_model", "resolve_model_path", "load_spec", "spec_from_dict", "no_input",
           "sinusoid", "paper_sinusoid", "table", "from_csv", "__version__"]
