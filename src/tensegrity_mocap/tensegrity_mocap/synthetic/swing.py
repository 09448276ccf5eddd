"""A synthetic capture of a robot with a swinging payload, simulated by the engine (the truth is physics,
not a scripted motion): the stacked manipulator (its base fixed) with a mass hung from a top-plate node by a
stiff cable, pulled aside and released with the robot at rest under it; the capture starts ``lead`` [s]
after the release (the cable's bounce and the robot's own ringing from the release have died down) and
sees every node (the payload's marker too) with Gaussian noise.

    python -m tensegrity_mocap.synthetic.swing runs/swing      # model.yaml, swing.npz, truth.npz

``swing.npz`` is in the tracker's ``tracks.npz`` layout (``t``, ``nodes``, ``node_names``), so
``tensegrity-compare runs/swing/swing.npz --model runs/swing/model.yaml --simulate runs/swing/model.yaml
--payload payload --initial-from-experiment`` compares it (docs/bring_your_own_robot.md, Payloads that move).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

ROBOT_DAMPING = 10.0          # x the manipulator file's string damping: a robot whose ringing dies within ~1 s


@dataclass
class SwingCapture:
    """The capture (times (T,) [s], noisy node positions (T, mu, 3) [m]), the truth and the model."""
    t: np.ndarray
    nodes: np.ndarray
    truth: np.ndarray
    model: object             # the robot with its payload (node "payload", string "payload_cable")
    noise: float              # m per coordinate

    def save(self, out) -> list:
        """``model.yaml``, ``swing.npz`` (t, nodes, node_names) and ``truth.npz`` into directory ``out``."""
        from tensegrity_engine.model.write import dump_model
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        names = np.array(self.model.node_names[:self.model.n_physical])
        np.savez(out / "swing.npz", t=self.t, nodes=self.nodes, node_names=names)
        np.savez(out / "truth.npz", t=self.t, nodes=self.truth, node_names=names, noise=self.noise)
        return [dump_model(self.model, out / "model.yaml"), out / "swing.npz", out / "truth.npz"]


def swinging_model(hang: str = "n22", mass: float = 0.15, cable_length: float = 0.06, amplitude: float = 0.07):
    """(the stacked manipulator with ROBOT_DAMPING and a payload hung from ``hang``, its start: the payload
    held ``amplitude`` [m] aside (x) with the robot at rest under it, all-node positions)."""
    from tensegrity_engine import build_model, load_model
    from tensegrity_engine.model.payload import with_payload
    from tensegrity_engine.statics.equilibrium import settle
    base = load_model("stacked_manipulator")
    strings = tuple(replace(s, damping=s.damping * ROBOT_DAMPING, rest_length=float(r), tension=None)
                    for s, r in zip(base.spec.strings, base.rest_length))
    robot = build_model(replace(base.spec, name="manipulator_payload", strings=strings))
    model = with_payload(robot, hang, mass, cable_length)
    pulled = with_payload(robot, hang, mass, cable_length, offset=(amplitude, 0.0, 0.0))
    nodes = pulled.spec.nodes
    held = build_model(replace(pulled.spec, nodes=nodes[:-1] + (replace(nodes[-1], fixed=True),)))
    return model, settle(held).positions


def swinging_capture(duration: float = 4.0, rate: float = 360.0, noise: float = 4e-4, lead: float = 1.5,
                     seed: int = 0, **payload) -> SwingCapture:
    """Simulate (Dormand-Prince, rtol 1e-8) the release and ``duration`` [s] of capture at ``rate`` [Hz]
    ``lead`` [s] after it; ``payload``: :func:`swinging_model`'s keywords."""
    from tensegrity_engine.dynamics.simulator import Simulator
    model, start = swinging_model(**payload)
    sim = Simulator(model, rtol=1e-8, atol=1e-10)
    sim.reset(start)
    traj = sim.run(lead + duration, rate=rate)
    k0 = int(round(lead * rate))
    truth = traj.nodes[k0:, :model.n_physical]
    rng = np.random.default_rng(seed)
    return SwingCapture(traj.t[k0:] - traj.t[k0], truth + rng.normal(0.0, noise, truth.shape), truth, model, noise)


def swing_figures(capture: SwingCapture) -> dict:
    """The payload's swing: frequency [Hz] (zero crossings of x) and amplitude [m] (half the x range)."""
    p = capture.truth[:, capture.model.node_index("payload")]
    x = p[:, 0] - p[:, 0].mean()
    up = np.flatnonzero((x[:-1] < 0) & (x[1:] >= 0))
    freq = (len(up) - 1) / (capture.t[up[-1]] - capture.t[up[0]]) if len(up) > 1 else float("nan")
    return {"frequency_hz": float(freq), "amplitude_m": float(np.ptp(p[:, 0]) / 2)}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m tensegrity_mocap.synthetic.swing OUT_DIR", file=sys.stderr)
        return 2
    cap = swinging_capture()
    files = cap.save(argv[0])
    f = swing_figures(cap)
    print(f"payload swings at {f['frequency_hz']:.2f} Hz, {f['amplitude_m'] * 1e3:.0f} mm; noise "
          f"{cap.noise * 1e3:g} mm; wrote {', '.join(str(p) for p in files)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
