"""The simulator node in real time with a mobile robot on the ground (not part of the tests).

The prestressed six-bar template (as ``tensegrity new icosahedron`` writes it) under gravity on a ground
(μ 0.5): standing on it (the node's settled start, ``--drop 0``) or dropped from ``--drop`` [m], run by the
simulator node in this process for ``--seconds`` at its default 1 kHz. Prints the node's last physics
diagnostics (physics demand, overruns, tick rate), where the robot came to rest, its contact forces against
its weight, and its odometry.

    .venv/bin/python bench/bench_sim_ground.py --seconds 10 [--drop 0.05]
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import rclpy
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.executors import SingleThreadedExecutor

from tensegrity_engine.generators import icosahedron, verify_template
from tensegrity_engine.model.write import spec_to_dict
from tensegrity_ros_common import topics
from tensegrity_ros_common.domains import claim_domain
from tensegrity_sim.simulator_node import TensegritySimulator

KEYS = ("sim_time_s", "tick_rate_hz", "physics_demand", "overruns", "compute_load", "skipped_sim_time_s",
        "substeps")


def six_bar_file(folder: Path, drop: float) -> Path:
    """The six-bar template's model file with gravity and a ground, its lowest node sphere ``drop`` up."""
    doc = json.loads(json.dumps(spec_to_dict(verify_template(icosahedron())[0])))
    low = min(n["position"][2] for n in doc["nodes"])
    for n in doc["nodes"]:
        n["position"][2] += drop + 0.006 - low            # bar radius 6 mm
    doc["gravity"] = [0.0, 0.0, -9.81]
    doc["obstacles"] = [{"name": "ground", "type": "plane", "friction": 0.5}]
    path = folder / "six_bar_on_ground.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--drop", type=float, default=0.0, help="drop height [m] (0: start standing)")
    args = ap.parse_args()
    path = six_bar_file(Path(tempfile.mkdtemp()), args.drop)
    ctx = rclpy.Context()
    rclpy.init(args=[], context=ctx, domain_id=claim_domain())
    ex = SingleThreadedExecutor(context=ctx)
    sim = TensegritySimulator(context=ctx, cli_args=["--ros-args", "-p", f"model:={path}", "-p",
                                                     f"start_from_equilibrium:={str(args.drop == 0).lower()}"])
    listener = rclpy.create_node("bench_listener", context=ctx)
    diags = []
    listener.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, lambda m: diags.extend(
        s for s in m.status if s.name.endswith(": physics")), 10)
    ex.add_node(sim)
    ex.add_node(listener)
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        ex.spin_once(timeout_sec=0.01)
    for st in diags[-3:]:
        values = {kv.key: kv.value for kv in st.values}
        print(f"{st.message[:60]}: " + ", ".join(f"{k} {values[k]}" for k in KEYS))
    X, V = sim.sim.positions, sim.sim.velocities
    c = sim.sim.contacts()
    print(f"lowest node z {X[:, 2].min():.6f} m; contacts {', '.join(c.names)}; contact force z "
          f"{c.total_force[2]:.4f} N, weight {9.81 * sim.model.total_mass():.4f} N")
    state = sim.world.body.fit(X, V)
    speed = float(np.linalg.norm(state.velocity))
    print(f"odometry: centroid {state.position.round(5).tolist()} m, speed {speed:.2e} m/s")
    ex.shutdown()
    sim.destroy_node()
    listener.destroy_node()
    rclpy.shutdown(context=ctx)


if __name__ == "__main__":
    main()
