"""The live view's numeric streams and bookkeeping, and the server's JSON (no NaN on the wire)."""
import json
import math

import numpy as np
import pytest

from tensegrity_live import streams
from tensegrity_live.server import LiveServer, json_safe


def test_odometry_values_turn_the_body_velocity_into_the_world():
    q = (0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4))          # heading 90 deg
    v = streams.odometry_values((1.0, 2.0, 0.3), q, (0.5, 0.0, 0.0))
    assert v["yaw_rad"] == pytest.approx(math.pi / 2)
    assert v["vx"] == pytest.approx(0.0, abs=1e-12) and v["vy"] == pytest.approx(0.5)
    assert v["speed_m_s"] == pytest.approx(0.5) and v["x"] == 1.0


def test_tension_scale_forgets_old_peaks_and_rate_and_path_count():
    scale = streams.WindowMax(window=10.0, floor=1.0)
    assert scale.update([50.0, np.nan], now=0.0) == 50.0
    assert scale.update([20.0], now=5.0) == 50.0
    assert scale.update([20.0], now=12.0) == 20.0               # the 50 N peak is over 10 s old
    assert scale.update([], now=30.0) == 1.0
    meter = streams.RateMeter(window=2.0)
    for k in range(60):
        meter.tick(now=k / 30.0)
    assert meter.rate(now=2.0) == pytest.approx(30.0, abs=0.5)
    path = streams.Path(length=3, step=0.01)
    for x in (0.0, 0.001, 0.02, 0.04, 0.06, np.nan):
        path.add((x, 0.0, 0.0))
    assert path.array()[:, 0].tolist() == [0.02, 0.04, 0.06]


def test_json_has_no_nan_and_the_server_stops_twice():
    text = json.dumps(json_safe({"a": [1.0, math.nan], "b": math.inf}), allow_nan=False)
    assert text == '{"a": [1.0, null], "b": null}'
    server = LiveServer("127.0.0.1", 0, lambda *a: None, lambda r: None)
    assert server.port > 0
    server.log_json("/x", {"type": "object"}, {"v": math.nan})       # no client: nothing sent, nothing raised
    assert server.counts() == {"clients": 0, "subscriptions": 0, "client_channels": 0, "protocol_errors": 0,
                               "last_protocol_error": "none"}
    server.stop()
    server.stop()
