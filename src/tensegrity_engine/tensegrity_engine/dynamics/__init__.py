"""Dynamics: the simulator, its compiled kernels and integrators, input schedules and trajectories.

:class:`~.simulator.Simulator` holds a model's mutable state and steps it with the numba kernels
(:mod:`.kernels`: forces and constrained accelerations; :mod:`.kernels_rk4`, :mod:`.kernels_dopri5`: the
integrators with string-switching events; :mod:`.kernels_kkt` and :mod:`.kkt_structure`: the sparse
constraint solver; :mod:`.kernel_data`: the arrays behind one pointer). :mod:`.inputs` are the actuators'
rest-length commands, :mod:`.trajectory` the output files, :mod:`.energy` the energies, and
:mod:`.crosscheck` an independent rigid-rod formulation.
"""
from tensegrity_engine.dynamics.inputs import (InputSchedule, from_csv, no_input, paper_sinusoid, sinusoid,
                                               table)
from tensegrity_engine.dynamics.simulator import Simulator
from tensegrity_engine.dynamics.trajectory import Trajectory

__all__ = ["Simulator", "Trajectory", "InputSchedule", "from_csv", "no_input", "paper_sinusoid", "sinusoid",
           "table"]
