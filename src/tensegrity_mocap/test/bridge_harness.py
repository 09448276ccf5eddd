"""Shared pieces of the bridge tests that run real rclpy: a context on a private domain with a listener,
deep best-effort subscriptions (the bridge's streams are best effort; a history as long as the take keeps
every message even when the test's executor falls behind), and Motive CSV takes of the manipulator model
moving rigidly (every frame's positions are unique, so a received message names its source frame)."""
from __future__ import annotations

import contextlib
import os
import time

import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

from tensegrity_engine import load_model
from tensegrity_mocap.axes import z_up_to_y_up
from tensegrity_mocap.motive import write_motive_csv
from tensegrity_ros_common.domains import claim_domain  # noqa: E402

MODEL = load_model("stacked_manipulator")
N = MODEL.n_physical
NAMES = list(MODEL.node_names[:N])


def deep_qos(depth: int = 20000) -> QoSProfile:
    """Best effort (matches the bridge's SensorDataQoS publishers), keep the last ``depth`` messages."""
    return QoSProfile(depth=depth, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT)


@contextlib.contextmanager
def ros(offset: int):
    """(context, executor, listener node) on a domain of its own; everything is shut down after."""
    ctx = rclpy.Context()
    rclpy.init(args=[], context=ctx, domain_id=claim_domain())
    ex = SingleThreadedExecutor(context=ctx)
    listener = rclpy.create_node("listener", context=ctx)
    ex.add_node(listener)
    try:
        yield ctx, ex, listener
    finally:
        listener.destroy_node()
        ex.shutdown()
        rclpy.shutdown(context=ctx)


def spin_until(ex, condition, timeout: float, settle: float = 0.0):
    """Spin until ``condition()`` or ``timeout`` [s] (generous: a loaded machine), then ``settle`` s more."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and not condition():
        ex.spin_once(timeout_sec=0.01)
    end = time.monotonic() + settle
    while time.monotonic() < end:
        ex.spin_once(timeout_sec=0.01)


def rigid_motion(duration: float, rate: float = 120.0, t0: float = 0.0):
    """(times (T,), node positions (T, N, 3) z-up [m]): the model as written, drifting 20 mm/s along x and
    swaying 10 mm in y (a bar never changes length; x names the frame)."""
    t = t0 + np.arange(int(round(duration * rate)) + 1) / rate
    s = t - t0
    shift = np.stack([0.02 * s, 0.01 * np.sin(2 * np.pi * 0.5 * s), np.zeros_like(s)], axis=1)
    return t, MODEL.positions[:N][None] + shift[:, None, :]


def write_take(path, t, X, extra: dict | None = None, unlabeled: dict | None = None, rate: float = 120.0,
               names=None):
    """A Motive CSV (Y-up, millimetres) of node markers ``Robot:<node>`` (or ``names``) at ``X`` (T, N, 3)
    z-up, plus ``extra`` labeled and ``unlabeled`` markers {name: (T, 3) z-up}."""
    names = [f"Robot:{n}" for n in NAMES] if names is None else names
    markers = {name: z_up_to_y_up(X[:, i]) for i, name in enumerate(names)}
    markers.update({k: z_up_to_y_up(v) for k, v in (extra or {}).items()})
    unl = {k: z_up_to_y_up(v) for k, v in (unlabeled or {}).items()}
    return write_motive_csv(path, t, markers, unlabeled=unl or None, frame_rate=rate, length_units="Millimeters")


def frame_of(P, X) -> int:
    """Index of the frame of ``X`` (T, N, 3) whose tracked nodes match ``P`` (N, 3) best."""
    ok = np.isfinite(P[:, 0])
    return int(np.argmin(np.nanmax(np.abs(X[:, ok] - P[ok]), axis=(1, 2))))


def stamp_ns(header) -> int:
    return header.stamp.sec * 1_000_000_000 + header.stamp.nanosec


def replay_to_end(ctx, ex, params, timeout: float, statuses=None):
    """A mocap bridge replaying a CSV (``params``: the '-p' values after source:=csv) to its end; with
    ``statuses`` (the listener's diagnostics) also until it reported the end. Closed and destroyed after;
    returns the node (its counters stay readable)."""
    from tensegrity_mocap.bridge.node import MocapBridge
    args = ["--ros-args", "-p", "source:=csv"]
    for p in params:
        args += ["-p", p]
    node = MocapBridge(context=ctx, cli_args=args)
    try:
        ex.add_node(node)
        spin_until(ex, lambda: node.finished, timeout=timeout)
        if statuses is not None:
            spin_until(ex, lambda: any("replay finished" in s.message for s in statuses), timeout=5, settle=0.5)
    finally:
        node.close()
        node.destroy_node()
    return node
