#!/usr/bin/env python3
"""Time and peak memory of ``tensegrity equilibrium`` (prestress + stability) against size.

    .venv/bin/python bench/bench_equilibrium.py [--bars 10 50 200 1000] [--kinds class1 class2]
                                                [--settle] [--dense-upto 200]

Structures: generated towers of 5-prisms (``generators.tower(bars // 5, 5, joints=kind)``): class 1
(overlapping prisms tied by saddle and vertical strings, one all-taut self-stress per junction) and class 2
(prisms sharing ring nodes), zero gravity, free floating (6 rigid-body modes). Each size runs in a fresh
process (one core: ``OMP/OPENBLAS/MKL_NUM_THREADS=1``) so the peak resident memory (``ru_maxrss``,
interpreter and imports included, ~0.13 GB) is that run's own.

* ``cli``: the real command, ``tensegrity equilibrium MODEL.yaml --min-tension 5`` (model load, prestress,
  rebuild with the new rest lengths, stability with the 10 lowest elastic modes, printing to /dev/null);
  with ``--settle`` also ``tensegrity equilibrium SHORTER.yaml --settle``: the prestressed tower with every
  rest length 0.2 % shorter, settled from the prestressed shape (sparse Newton; where it does not converge,
  as on the 60 m class-1 tower, settle falls back to dynamic relaxation with the simulator: minutes).
* ``dense``: prestress + stability forced onto the dense paths (``method='dense'``: SVD of the equilibrium
  matrix, dense eigenproblem on a dense tangent basis: the algorithm before the sparse paths), for the
  sizes up to ``--dense-upto``, as the before/after comparison.
"""
import argparse
import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")


def _doc(bars: int, kind: str) -> dict:
    from tensegrity_engine.generators import tower
    return tower(max(2, bars // 5), 5, joints=kind)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def child_cli(bars: int, kind: str, settle: bool) -> dict:
    """Run the equilibrium command in this process; time [s] and peak RSS [MB]."""
    from tensegrity_engine.cli import main
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tower.yaml"
        path.write_text(json.dumps(_doc(bars, kind)))          # JSON is YAML
        args = ["equilibrium", str(path), "--min-tension", "5"]
        out = io.StringIO()
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(out):
            rc = main(args)
        seconds = time.perf_counter() - t0
        text = out.getvalue()
        stable = "stable: yes" in text
        res = {"seconds": seconds, "peak_mb": _peak_mb(), "rc": rc, "stable": stable,
               "line": next((ln for ln in text.splitlines() if ln.startswith("stable")), "")}
        if settle:
            from tensegrity_engine.statics.equilibrium import prestress
            from tensegrity_engine.model.load import load_model
            from tensegrity_engine.model.write import dump_model
            m = load_model(path)
            rest = prestress(m, min_tension=5.0).rest_lengths
            # every string 0.2 % shorter (bar lengths come from the file's positions, so the start is the
            # prestressed shape; the tensions grow by ~EA * 0.002 and the shape moves)
            dump_model(m, Path(tmp) / "moved.yaml", rest_lengths=0.998 * rest)   # untimed (YAML writer)
            out = io.StringIO()
            t0 = time.perf_counter()
            with contextlib.redirect_stdout(out):
                rc = main(["equilibrium", str(Path(tmp) / "moved.yaml"), "--settle"])
            res.update({"settle_seconds": time.perf_counter() - t0, "settle_rc": rc,
                        "settle_first_line": out.getvalue().splitlines()[0], "settle_peak_mb": _peak_mb()})
    return res


def child_dense(bars: int, kind: str) -> dict:
    """prestress + stability on the dense paths (the algorithm before the sparse ones)."""
    from tensegrity_engine.statics.equilibrium import prestress, stability, with_rest_lengths
    from tensegrity_engine.model.build import build_model
    from tensegrity_engine.model.spec import spec_from_dict
    m = build_model(spec_from_dict(_doc(bars, kind), "tower.yaml"))
    t0 = time.perf_counter()
    eq = prestress(m, min_tension=5.0, method="dense")
    t1 = time.perf_counter()
    final = with_rest_lengths(m, eq.rest_lengths, m.positions)
    st = stability(final, final.positions, method="dense")
    t2 = time.perf_counter()
    return {"seconds": t2 - t0, "prestress_s": t1 - t0, "stability_s": t2 - t1, "peak_mb": _peak_mb(),
            "stable": st["stable"]}


def run(mode: str, bars: int, kind: str, settle: bool) -> dict:
    cmd = [sys.executable, __file__, "--child", mode, "--bars", str(bars), "--kinds", kind]
    cmd += ["--settle"] if settle else []
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        return {"error": p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}"}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bars", type=int, nargs="+", default=[10, 50, 200, 1000])
    ap.add_argument("--kinds", nargs="+", default=["class1", "class2"])
    ap.add_argument("--settle", action="store_true", help="also time 'equilibrium --settle'")
    ap.add_argument("--dense-upto", type=int, default=200, help="largest size for the dense comparison")
    ap.add_argument("--child", choices=["cli", "dense"], help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        fn = child_cli if a.child == "cli" else child_dense
        res = fn(a.bars[0], a.kinds[0], a.settle) if a.child == "cli" else fn(a.bars[0], a.kinds[0])
        print(json.dumps(res))
        return
    print(f"{'kind':<8}{'bars':>6}  {'equilibrium [s]':>16}{'peak [GB]':>10}  {'stable':<7}"
          f"{'settle [s, GB]':>15}  {'dense [s]':>10}{'dense peak [GB]':>16}")
    for kind in a.kinds:
        for bars in a.bars:
            r = run("cli", bars, kind, a.settle)
            d = run("dense", bars, kind, False) if bars <= a.dense_upto else {}
            if "error" in r:
                print(f"{kind:<8}{bars:>6}  error: {r['error']}")
                continue
            st = (f"{r['settle_seconds']:.2f} {r['settle_peak_mb'] / 1024:.2f}" if a.settle else "-")
            dn = (f"{d['seconds']:>10.2f}{d['peak_mb'] / 1024:>16.3f}" if "seconds" in d else f"{'-':>10}{'-':>16}")
            print(f"{kind:<8}{bars:>6}  {r['seconds']:>16.2f}{r['peak_mb'] / 1024:>10.3f}  "
                  f"{'yes' if r['stable'] else 'NO':<7}{st:>15}  {dn}", flush=True)


if __name__ == "__main__":
    main()
