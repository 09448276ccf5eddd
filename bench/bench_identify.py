#!/usr/bin/env python3
"""Dynamic identification acceptance run: the manipulator with unknown stiffness (+20 %), string damping (x3),
structural damping (0.3 1/s) and pulley friction on the actuated strings (``--pulley``, 80 N s/m).

    .venv/bin/python bench/bench_identify.py [--duration 14] [--rate 360] [--noise 0.5] [--out DIR] [--compare-fd]

Training: the paper's experiment (phase-shifted sinusoids, 36.3/16.8 mm, T = 7 s) for ``--duration`` s.
Held out: the same duration with other amplitudes (default 45/33 mm), period (5 s) and phases. Captures at
``--rate`` Hz with ``--noise`` mm per coordinate, 1 % dropped frames and three 20-frame occlusions.
Identified: all six parameter kinds (stiffness, string/structural/pulley damping, actuator offsets and
delay; offsets and delay are zero in the truth). Printed: the parameter table (initial, regressor
start, estimate ± standard error, truth) and the paper's table for the held-out run, before and after
identification, against the noise-free truth and against the noisy capture, and the excitation report
(parameters not excited or confounded, with advice). ``--jacobian``: finite differences (default) or
forward sensitivities; ``--compare-fd``: both, timed in the same run (the held-out table: the second). Writes report.json (and
the identified model) into --out.
"""
import argparse
import json
import os
import math
import sys
import time
from pathlib import Path

import numpy as np

from tensegrity_engine import load_model
from tensegrity_engine.identify.dynamic import identify_dynamic
from tensegrity_engine.identify.shooting import predict, prediction_errors
from tensegrity_engine.identify.params import DYNAMIC_PARAMS
from tensegrity_engine.identify.synthetic import manipulator_truth, synthetic_capture
from tensegrity_engine.dynamics.inputs import paper_sinusoid


def table(name, err):
    rows = [f"  {name}: nodes RMS {err['node_rms_m'] * 1e3:.3f} mm"]
    for f, e in err["frames"].items():
        rows.append(f"    {f}: position RMS {e['position_rms_m'] * 1e3:.3f} mm, angle RMS {e['angle_rms_deg']:.4f} deg")
    return "\n".join(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=14.0)
    ap.add_argument("--rate", type=float, default=360.0)
    ap.add_argument("--noise", type=float, default=0.5, help="mm per coordinate")
    ap.add_argument("--shooting", type=float, default=1.0)
    ap.add_argument("--max-nfev", type=int, default=20)
    ap.add_argument("--params", nargs="+", default=list(DYNAMIC_PARAMS))
    ap.add_argument("--pulley", type=float, default=80.0, help="true pulley friction of the actuated strings [N s/m]")
    ap.add_argument("--held-amplitudes", type=float, nargs=2, default=(45.0, 33.0), metavar=("MM1", "MM2"),
                    help="held-out amplitudes per stage [mm] (the actuators' limits: 50 and 37.5 mm)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--held-period", type=float, default=5.0)
    ap.add_argument("--out", default="runs/bench_identify")
    ap.add_argument("--jacobian", choices=["fd", "sensitivity"], default="fd")
    ap.add_argument("--start-states", action="store_true",
                    help="estimate the capture's start state with the parameters (identify_dynamic start_states)")
    ap.add_argument("--compare-fd", action="store_true",
                    help="fit with finite-difference Jacobians, then with forward sensitivities, and print both times")
    a = ap.parse_args(argv)
    model = load_model("stacked_manipulator")
    truth, true = manipulator_truth(model, pulley=a.pulley)
    train_in = paper_sinusoid(model)
    held_in = paper_sinusoid(model, period=a.held_period, amplitudes=np.array(a.held_amplitudes) * 1e-3,
                             phases=(0.0, 2 * math.pi / 3, -2 * math.pi / 3))
    kw = dict(rate=a.rate, noise=a.noise * 1e-3)
    train, _ = synthetic_capture(truth, train_in, a.duration, seed=1, name="paper experiment", **kw)
    held, held_truth = synthetic_capture(truth, held_in, a.duration, seed=2, name="held out", **kw)
    times = {}
    for method in (("fd", "sensitivity") if a.compare_fd else (a.jacobian,)):
        t0 = time.monotonic()
        res = identify_dynamic(model, [train], params=tuple(a.params), shooting=a.shooting, max_nfev=a.max_nfev,
                               workers=a.workers, jacobian=method, start_states=a.start_states,
                               progress=lambda s: print("  ..", s, flush=True))
        times[method] = took = time.monotonic() - t0
        stages = ", ".join(f"{s['stage']} {s.get('seconds', '-')} s" for s in res.stages)
        print(f"identification, {method} Jacobians: {took:.1f} s ({stages}); converged: {res.converged} "
              f"({'; '.join(s['stage'] + ': ' + s['stopped_by'] for s in res.stages if 'stopped_by' in s)})")
        print(f"{'parameter':<34}{'initial':>10}{'start':>10}{'estimate':>12}{'± se':>10}{'truth':>10}")
        for n, i, s, e, se, u in zip(res.names, res.initial, res.start, res.estimate, res.std_error, res.units):
            tv = true.get(n, 0.0)
            print(f"{n:<34}{i:>10.4g}{s:>10.4g}{e:>12.5g}{se:>10.2g}{tv:>10.4g} {u}")
    if a.compare_fd:
        print(f"26-parameter fit: finite differences {times['fd']:.1f} s, sensitivities {times['sensitivity']:.1f} s "
              f"(x{times['fd'] / times['sensitivity']:.1f}; load {os.getloadavg()[0]:.1f})")
    for row in res.excitation:
        if row["status"] != "excited":
            print(f"  {row['status']}: {row['advice']}")
    ident = res.model()
    out = {"seconds": times, "identification": res.as_dict(), "truth": true, "held_out": {}}
    floor = prediction_errors(model, held_truth, held.nodes)
    print("noise floor (the truth itself against the noisy held-out capture):")
    print(table("truth vs capture", floor))
    out["noise_floor"] = floor
    for label, m in (("before", model), ("identified", ident)):
        P = predict(m, held)
        vs_truth = prediction_errors(model, P, held_truth)
        vs_capture = prediction_errors(model, P, held.nodes)
        print(f"held-out run, {label} identification:")
        print(table("vs noise-free truth", vs_truth))
        print(table("vs noisy capture", vs_capture))
        out["held_out"][label] = {"vs_truth": vs_truth, "vs_capture": vs_capture}
    o = Path(a.out)
    o.mkdir(parents=True, exist_ok=True)
    (o / "report.json").write_text(json.dumps(out, indent=2, default=float))
    from tensegrity_engine.model.write import dump_model
    dump_model(ident, o / "identified.yaml", resolved=False)
    print(f"wrote {o}/report.json, identified.yaml")
    return 0


if __name__ == "__main__":
    sys.exit(main())
