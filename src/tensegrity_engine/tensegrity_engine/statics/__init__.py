"""Statics: equilibrium, prestress, stability, modes, form-finding and relaxation.

:mod:`.equilibrium` (dense) and :mod:`.equilibrium_sparse` (large models) give prestress and settled
shapes; :mod:`.modal` the tangent stiffness and linearisation, :mod:`.stability_sparse` the lowest modes of
large models, :mod:`.mode_shapes` the modes in node coordinates; :mod:`.formfind` is force-density
form-finding, :mod:`.relax` dynamic relaxation, :mod:`.step_accuracy` the RK4 substeps the stiffest mode
needs.
"""
from tensegrity_engine.statics.equilibrium import prestress, settle, stability, with_rest_lengths
from tensegrity_engine.statics.formfind import form_find
from tensegrity_engine.statics.modal import linearise
from tensegrity_engine.statics.relax import relax

__all__ = ["prestress", "settle", "stability", "with_rest_lengths", "form_find", "linearise", "relax"]
