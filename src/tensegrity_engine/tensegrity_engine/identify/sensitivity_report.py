"""What the captures excited: per parameter, how strongly the data respond to it against their noise, and how
to excite what they do not.

For parameter θ_i (natural value ``initial + scale θ``) with Jacobian column ``J_i`` [m per unit θ] and
capture noise σ [m per coordinate]:

* ``excitation`` = ``rel_tol ‖J_i‖ / σ``: by how many noise standard deviations a change of ``rel_tol`` of
  the parameter's scale moves the captures (least squares over every sample). Below 1 the data cannot
  determine it to ``rel_tol`` even with every other parameter known: **not excited**;
* ``std_error_alone`` = ``σ / ‖J_i‖ · scale``: its standard error if it were the only unknown; the reported
  standard error is larger by what the other parameters explain alike: excited but **confounded** (the
  most correlated partner is named);
* the motion that carries it, measured on the captures (smoothed, RMS): string elongation rate for string
  and pulley damping, node speed for structural damping, command rate for the delay, string elongation for
  stiffness and offsets; and the input's dominant frequency ``f0``.

Advice: a viscous force (damping, pulley friction) and the delay's effect grow with the rate, so the
sensitivity with amplitude × frequency; stiffness and offsets with amplitude. A parameter ``k = 1 /
excitation`` times short needs k× the rate (e.g. ``k f0`` Hz at the same amplitude, within the actuators'
limits) or k× the amplitude. The factor is the linear scaling of the sensitivity, a first estimate, not a
guarantee (resonances and slack strings change it).
"""
from __future__ import annotations

import numpy as np

from tensegrity_engine.identify.signals import resample, smooth
from tensegrity_engine.model.markers import node_motion_from_markers

RATE_KINDS = ("string_damping", "pulley_damping", "structural_damping", "actuator_delay")


def capture_motion(model, captures, window: float = 0.25) -> dict:
    """RMS motion of the captures (module docstring): {'elongation_rate' (nc,) m/s, 'elongation' (nc,) m
    (about the mean), 'node_speed' m/s, 'input_rate' (na,) m/s, 'f0' Hz (dominant input frequency; of the
    node motion without inputs)}."""
    rates, elong, speed, urate, f0s = [], [], [], [], []
    seg = model.segments
    for cap in captures:
        tg, Xg, _, rate = resample(cap.t, cap.nodes)
        X, V = node_motion_from_markers(model, smooth(Xg, rate, window, 0), smooth(Xg, rate, window, 1))
        X, V = model.from_physical(X), model.from_physical(V)
        d = X[:, seg[:, 1]] - X[:, seg[:, 0]]
        ln = np.linalg.norm(d, axis=-1)
        sd = np.sum(d * (V[:, seg[:, 1]] - V[:, seg[:, 0]]), axis=-1) / np.where(ln > 0, ln, 1.0)
        nc = len(model.string_names)
        L = np.zeros((len(tg), nc))
        Ld = np.zeros((len(tg), nc))
        np.add.at(L.T, model.segment_string, ln.T)
        np.add.at(Ld.T, model.segment_string, sd.T)
        rates.append(Ld)
        elong.append(L - L.mean(axis=0))
        speed.append(np.linalg.norm(V, axis=-1).ravel())
        has = getattr(cap, "inputs", None) is not None and cap.inputs.n_actuators > 0
        u, ud = (np.asarray(a, float).reshape(len(tg), -1) for a in cap.inputs(tg)) if has else \
            (np.zeros((len(tg), 0)),) * 2
        urate.append(ud)
        sig = u if u.shape[1] and np.ptp(u) > 0 else X.reshape(len(tg), -1)
        f0s.append(_dominant_frequency(sig, rate))
    rms = lambda parts: np.sqrt(np.mean(np.concatenate(parts) ** 2, axis=0))
    return {"elongation_rate": rms(rates), "elongation": rms(elong), "node_speed": float(rms(speed)),
            "input_rate": rms(urate) if urate[0].shape[1] else np.zeros(0), "f0": float(np.median(f0s))}


def _dominant_frequency(sig, rate) -> float:
    """Frequency [Hz] of the largest spectral peak (summed over channels, mean removed) of sig (T, k)."""
    sig = sig - sig.mean(axis=0)
    P = np.sum(np.abs(np.fft.rfft(sig, axis=0)) ** 2, axis=1)
    f = np.fft.rfftfreq(len(sig), 1.0 / rate)
    return float(f[1 + int(np.argmax(P[1:]))]) if len(P) > 1 else 0.0


def _carrier(p, model, motion) -> tuple:
    """(what carries parameter p, its RMS value, unit) from :func:`capture_motion`."""
    mem = list(p.members)
    if p.kind in ("string_damping", "pulley_damping"):
        return "string elongation rate", float(np.max(motion["elongation_rate"][mem])), "mm/s"
    if p.kind == "structural_damping":
        return "node speed", motion["node_speed"], "mm/s"
    if p.kind == "actuator_delay":
        ur = motion["input_rate"]
        return "command rate", float(np.max(ur)) if len(ur) else 0.0, "mm/s"
    if p.kind == "actuator_offset":
        return "string elongation", float(motion["elongation"][model.actuator_string[mem[0]]]), "mm"
    return "string elongation", float(np.max(motion["elongation"][mem])), "mm"


def excitation_report(model, plist, J, sigma, se, corr, captures, rel_tol) -> list:
    """Per parameter a dict (module docstring): name, excitation, std_error_alone, status ('excited',
    'not excited', 'confounded'), carrier, carrier_rms, partner, advice. ``J`` the data rows [m per unit θ],
    ``se`` the reported standard errors (natural units), ``corr`` their correlation matrix."""
    motion = capture_motion(model, captures)
    norms = np.linalg.norm(J, axis=0)
    out = []
    for i, p in enumerate(plist):
        exc = float(rel_tol * norms[i] / sigma) if sigma > 0 else float("inf")
        alone = float(sigma / norms[i] * p.scale) if norms[i] > 0 else float("inf")
        what, val, unit = _carrier(p, model, motion)
        row = {"name": p.name, "kind": p.kind, "excitation": exc, "std_error_alone": alone, "carrier": what,
               "carrier_rms": val * 1e3, "carrier_unit": unit, "input_frequency_hz": motion["f0"], "partner": None}
        if exc < 1.0:
            k = 1.0 / max(exc, 1e-12)
            row["status"] = "not excited"
            if p.kind in RATE_KINDS:
                row["advice"] = (f"{p.name}: the captures' {what} is {val * 1e3:.3g} {unit} RMS: not excited "
                                 f"({exc:.2g} noise sigmas per {rel_tol:.0%} change); needs ~{k:.2g}x faster "
                                 f"motion: e.g. drive at ~{k * motion['f0']:.2g} Hz at the same amplitude "
                                 f"(now {motion['f0']:.2g} Hz), or larger amplitudes at higher frequency")
            else:
                row["advice"] = (f"{p.name}: the captures' {what} is {val * 1e3:.3g} {unit} RMS: not excited "
                                 f"({exc:.2g} noise sigmas per {rel_tol:.0%} change); needs ~{k:.2g}x larger "
                                 "amplitudes or loads")
        elif np.isfinite(se[i]) and se[i] <= rel_tol * p.scale:
            row["status"] = "excited"
            row["advice"] = None
        else:
            row["status"] = "confounded"
            c = np.abs(np.asarray(corr)[i].copy())
            c[i] = 0.0
            j = int(np.argmax(c)) if len(c) > 1 else i
            row["partner"] = plist[j].name if j != i else None
            row["advice"] = (f"{p.name}: excited ({exc:.2g} noise sigmas per {rel_tol:.0%} change) but the "
                             f"captures move it like {row['partner']} (correlation {c[j]:.2f}); a motion that "
                             "drives them differently (other phases between actuators, other frequencies) "
                             "separates them")
        out.append(row)
    return out
