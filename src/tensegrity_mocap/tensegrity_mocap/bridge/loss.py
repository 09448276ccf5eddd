"""How many of the capture system's frames the bridge publishes: received vs published vs lost, in total and
over each diagnostics window (no ROS).

* ``received``: frames of the tracked stream that reached the frame guard (other senders' frames excluded);
* ``published``: frames the guard admitted and the bridge published;
* ``rejected``: received but not published (the guard's rejects of the tracked stream);
* ``lost``: frames the server sent that never arrived - gaps in the frame numbers (NatNet client's
  ``dropped_frames``: a full socket buffer under a flood, the network).

``loss_percent`` is the share of the frames the server sent in the window that were not published,
(lost + rejected) / (received + lost). A wired or loopback link loses none: LOSS_WARN_PERCENT (5 %, one
frame in 20) is far above that and below what a flood costs (a 15,654-datagram flood let 407 of 1,198 real
frames through: 66 %).
"""
from __future__ import annotations

LOSS_WARN_PERCENT = 5.0


class LossWindow:
    """Cumulative counters in, totals and the last window's rates out. A counter that goes down (the guard is
    rebuilt for each pass of a looping replay) starts again from its new value."""

    def __init__(self, now: float):
        self._t = float(now)
        self._last = {"received": 0, "published": 0, "lost": 0}
        self.total = dict(self._last)

    def update(self, now: float, received: int, published: int, lost: int) -> dict:
        """Diagnostic values (see the module docstring) for the window since the last call; ``now`` [s]."""
        counts = {"received": int(received), "published": int(published), "lost": int(lost)}
        delta = {k: v - self._last[k] if v >= self._last[k] else v for k, v in counts.items()}
        self._last = counts
        for k, v in delta.items():
            self.total[k] += v
        span, self._t = max(float(now) - self._t, 1e-9), float(now)
        rejected = max(delta["received"] - delta["published"], 0)
        sent = delta["received"] + delta["lost"]
        return {"frames_received": self.total["received"], "frames_published": self.total["published"],
                "frames_rejected": max(self.total["received"] - self.total["published"], 0),
                "frames_lost": self.total["lost"], "window_s": span,
                "received_rate_hz": delta["received"] / span, "lost_in_window": delta["lost"],
                "rejected_in_window": rejected,
                "loss_percent": 100.0 * (delta["lost"] + rejected) / sent if sent else 0.0}


def loss_warning(values: dict) -> str:
    """Text for a window that lost more than LOSS_WARN_PERCENT of the frames sent, else ""."""
    if values["loss_percent"] <= LOSS_WARN_PERCENT:
        return ""
    return (f"{values['loss_percent']:.0f} % of the frames sent in the last {values['window_s']:.1f} s not published "
            f"({values['lost_in_window']} never arrived, {values['rejected_in_window']} rejected; "
            f"{values['received_rate_hz']:.0f} Hz received)")
