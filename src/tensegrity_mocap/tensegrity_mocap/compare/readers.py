"""Capture readers for the engine's dynamic identification (:func:`tensegrity_engine.identify.data.load_capture`).

The engine imports nothing from this package: it finds these functions through the entry-point group
``tensegrity_engine.capture_readers`` (registered in this package's ``setup.py``: ``csv`` -> :func:`read_csv`,
``mcap`` -> :func:`read_mcap`) and calls them as the engine's ``CaptureReader`` interface describes::

    reader(model, path, *, recorded, namespace, asset, marker_map, exclude) -> (t, nodes, schedule | None)

``t`` (T,) [s], ``nodes`` (T, mu, 3) [m] the physical nodes' markers in model order (NaN = not seen: the
engine's captures hold markers, the nodes themselves unless the model puts a ``marker`` off them; an MCAP
recording's node positions are turned into the model's marker positions); ``schedule`` is
the recorded command schedule (an engine ``InputSchedule``) when ``recorded`` is true, else None (the
engine builds the schedule it was given). Every problem raises the engine's ``InputError`` with the text
of this package's ``CompareError`` / ``tensegrity_ros_common``'s ``RecordingError``.
"""
from __future__ import annotations

from tensegrity_engine.dynamics.inputs import no_input
from tensegrity_engine.errors import InputError
from tensegrity_engine.model.markers import marker_positions

from tensegrity_mocap.compare import inputs, simulation
from tensegrity_mocap.compare.core import CompareError

__all__ = ["read_csv", "read_mcap"]


def _engine_errors(call, *args, **kw):
    """Run ``call``; its CompareError / RecordingError become the engine's InputError (same text)."""
    from tensegrity_ros_common.recording import RecordingError
    try:
        return call(*args, **kw)
    except (CompareError, RecordingError) as exc:
        raise InputError(str(exc)) from None


def _experiment(model, path, namespace, asset, marker_map, exclude):
    return _engine_errors(inputs.load_experiment, path, model, asset=asset, namespace=namespace,
                          marker_map=marker_map, exclude=exclude)


def _recorded(model, exp, namespace):
    """The commands of an MCAP experiment: joint_states, else motor_goals (u through the spools)."""
    if not model.actuator_names:
        return no_input(0)
    try:
        return _engine_errors(simulation.recorded_schedule, exp, model, "recording", namespace)
    except InputError:
        if any(_engine_errors(simulation.recorded_angles, exp.source, topic, namespace)
               for topic in ("joint_states", "motor_goals")):
            raise
        raise InputError(f"{exp.source}: the recording has no joint_states or motor_goals commands; give "
                         "inputs: FILE.csv or paper") from None


def read_mcap(model, path, *, recorded: bool, namespace: str = "", asset=None, marker_map=None, exclude=()):
    """A suite ``.mcap`` recording: /node_positions and, with ``recorded``, its joint_states (else motor_goals)
    through the spools."""
    exp = _experiment(model, path, namespace, asset, marker_map, exclude)
    return exp.t, marker_positions(model, exp.nodes), _recorded(model, exp, namespace) if recorded else None


def read_csv(model, path, *, recorded: bool, namespace: str = "", asset=None, marker_map=None, exclude=()):
    """A Motive ``.csv`` export (marker names, a marker map or the tracker: :mod:`.inputs`); it holds no
    commands, so ``recorded`` gives no schedule (the engine asks for inputs before calling)."""
    exp = _experiment(model, path, namespace, asset, marker_map, exclude)
    return exp.t, exp.nodes, None
