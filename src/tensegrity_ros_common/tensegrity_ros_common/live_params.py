"""Run-time parameter changes, one rule for every node: a parameter is either **live** or **fixed**.

A node lists its live parameters in a table ``{name: (check, apply)}``: ``check(value)`` runs the start-up
checks on a new value and returns it as used (ValueError / TypeError with the reason refuses it), and
``apply(checked)`` makes the node use it. Every other parameter the node declares is fixed at start-up
(:func:`.params.declare` with the same ``live`` names says so in its description): a change is refused,
naming it. A change is never accepted and then ignored. Safety parameters are always fixed.

A request with several parameters is all or nothing: every value is checked before any is applied, and
a check may read the other parameters' values as they will be after the request (:meth:`LiveParameters.value`).
"""
from __future__ import annotations

from rcl_interfaces.msg import SetParametersResult

# rclpy's own live parameter: its TimeSource switches the node's clock
RCLPY_OWN = ("use_sim_time",)


class LiveParameters:
    """The on-set (check) and post-set (apply) callbacks of ``node`` for its ``live`` table."""

    def __init__(self, node, live: dict, on_refused=None):
        """``on_refused(reason)``, if given, is called for every refused change (e.g. to count them)."""
        self.node = node
        self.live = dict(live)
        self.on_refused = on_refused
        self._request = {}
        node.add_on_set_parameters_callback(self._check)
        node.add_post_set_parameters_callback(self._apply)

    def value(self, name: str):
        """Parameter ``name`` as it will be once the request being checked is applied."""
        if name in self._request:
            return self._request[name]
        return self.node.get_parameter(name).value

    def _check(self, params) -> SetParametersResult:
        self._request = {p.name: p.value for p in params}
        try:
            for p in params:
                if p.name in self.live:
                    self.live[p.name][0](p.value)
                elif p.name not in RCLPY_OWN and self.node.has_parameter(p.name):
                    return self._refuse(f"'{p.name}' is read at start-up only (fixed); restart the node "
                                        "to change it")
        except (ValueError, TypeError) as exc:
            return self._refuse(str(exc))
        finally:
            self._request = {}
        return SetParametersResult(successful=True)

    def _refuse(self, reason: str) -> SetParametersResult:
        if self.on_refused is not None:
            self.on_refused(reason)
        return SetParametersResult(successful=False, reason=reason)

    def _apply(self, params):
        for p in params:
            if p.name in self.live:
                check, apply = self.live[p.name]
                apply(check(p.value))
