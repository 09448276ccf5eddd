"""Identification of model parameters from captures.

Static (:mod:`.static`: stiffness, rest lengths, masses from equilibrium takes, fitted in
:mod:`.static_fit`; :mod:`.cases`, :mod:`.boundary`, :mod:`.geometry` read and check the takes;
:mod:`.uncertainty` the standard errors) and
dynamic (:mod:`.dynamic`: output-error least squares on the simulation; :mod:`.data` the captures,
:mod:`.params` the parameters, :mod:`.signals` resampling and the regressor start, :mod:`.shooting`
simulation windows, residuals and predictions, :mod:`.parallel` many simulations at once); :mod:`.synthetic`
makes captures with known parameters.
"""
from tensegrity_engine.identify.dynamic import identify_dynamic
from tensegrity_engine.identify.static import identify_static

__all__ = ["identify_dynamic", "identify_static"]
