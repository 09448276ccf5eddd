"""Dynamics invariants that cannot be faked: energy, momentum, centre of mass, bar lengths, analytic
oscillators and pendulum, composite-string tension, slack strings, damping, divergence."""
from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import make_model, random_tangent_velocities

from tensegrity_engine import SimulationDiverged, Simulator, sinusoid
from tensegrity_engine.dynamics.energy import centre_of_mass, energies, linear_momentum
from tensegrity_engine.statics.equilibrium import settle


def test_prism3_zero_gravity_momentum_and_centre_of_mass(prism3):
    """Russian paper's check: in zero gravity the centre of mass stays put (starting at rest) and, with
    random initial velocities, moves uniformly; total momentum is constant."""
    sim = Simulator(prism3, integrator="rk4", dt=1e-3)
    tr = sim.run(5.0, rate=50)
    com = centre_of_mass(prism3, tr.nodes)
    # 1e-12 m: forces are internal and pairwise opposite, so only rounding moves the centre of mass
    assert np.abs(com - com[0]).max() <= 1e-12
    sim = Simulator(prism3, integrator="rk4", dt=1e-3)
    sim.reset(velocities=random_tangent_velocities(prism3, 0.05))
    tr = sim.run(5.0, rate=50)
    p = linear_momentum(prism3, tr.velocities)
    assert np.abs(p - p[0]).max() <= 1e-12 * max(1.0, np.abs(p[0]).max())
    com = centre_of_mass(prism3, tr.nodes)
    v = p[0] / prism3.total_mass()
    assert np.abs(com - (com[0] + np.outer(tr.t - tr.t[0], v))).max() <= 1e-12


def test_bar_lengths_exact_over_long_run(prism3):
    sim = Simulator(prism3, integrator="dopri5", rtol=1e-6, atol=1e-9)
    sim.reset(velocities=random_tangent_velocities(prism3, 0.1, seed=3))
    tr = sim.run(20.0, rate=20)
    # projection after each step: bar lengths hold to a few ulps (target 1e-9 relative)
    assert tr.bar_length_error.max() <= 1e-13


def test_energy_conserved_smooth_case(prism3):
    """Near the self-stressed equilibrium every cable stays taut (smooth dynamics): RK4 at 1 ms conserves
    energy to far better than the 1e-6 target (error ~ (omega h)^4 per period, omega ~ 10 rad/s)."""
    eq = settle(prism3)
    sim = Simulator(prism3, integrator="rk4", dt=1e-3, damping=False)
    sim.reset(positions=eq.positions, velocities=random_tangent_velocities(prism3, 0.01, seed=1))
    tr = sim.run(10.0, rate=100)
    assert tr.tensions.min() > 0.0          # really smooth: no cable went slack
    E = energies(prism3, tr.nodes, tr.velocities, tr.inputs)
    scale = E["kinetic"].max() + E["elastic"].max()
    assert np.abs(E["total"] - E["total"][0]).max() / scale <= 1e-8


def test_energy_conserved_with_slack_events_adaptive(prism3):
    """From the paper's start pose cables go slack and taut again (force kink). The adaptive integrator
    with tight tolerance keeps the energy drift within the 1e-6 relative target over 10 s."""
    sim = Simulator(prism3, integrator="dopri5", rtol=1e-10, atol=1e-12, damping=False)
    tr = sim.run(10.0, rate=100)
    assert tr.tensions.min() == 0.0           # slack events did happen
    E = energies(prism3, tr.nodes, tr.velocities, tr.inputs)
    assert np.abs(E["total"] - E["total"][0]).max() / E["elastic"][0] <= 1e-6


def test_energy_with_gravity_and_fixed_nodes(manipulator):
    """Manipulator without damping under gravity, knocked by an initial velocity: total energy
    (kinetic + elastic + gravity) conserved; adaptive tolerance 1e-10 -> drift << 1e-6."""
    sim = Simulator(manipulator, integrator="dopri5", rtol=1e-10, atol=1e-12, damping=False)
    sim.reset(velocities=random_tangent_velocities(manipulator, 0.02, seed=2))
    tr = sim.run(2.0, rate=100)
    E = energies(manipulator, tr.nodes, tr.velocities, tr.inputs)
    scale = E["kinetic"].max() + E["elastic"].max()
    assert np.abs(E["total"] - E["total"][0]).max() / scale <= 1e-7


def test_rod_pendulum_period():
    """A uniform rod pinned at one end: small-oscillation period 2 pi sqrt(2L/(3g))."""
    L, g, th0 = 0.8, 9.81, 1e-3
    m = make_model([("pivot", (0, 0, 0), {"fixed": True}), ("tip", (L * math.sin(th0), 0, -L * math.cos(th0)))],
                   bars=[("rod", "pivot", "tip", 1.3)], gravity=(0, 0, -g))
    sim = Simulator(m, integrator="dopri5", rtol=1e-11, atol=1e-13)
    tr = sim.run(6.0, rate=2000)
    x = tr.nodes[:, 1, 0]
    k = np.flatnonzero((x[:-1] > 0) & (x[1:] <= 0))               # downward zero crossings
    tc = tr.t[k] - x[k] * (tr.t[k + 1] - tr.t[k]) / (x[k + 1] - x[k])
    period = np.mean(np.diff(tc))
    exact = 2 * math.pi * math.sqrt(2 * L / (3 * g)) * (1 + th0 ** 2 / 16)
    # crossing interpolation error ~ (omega dt)^2 amplitude effects; 1e-6 is far above it
    assert abs(period - exact) / exact <= 1e-6


def test_damped_spring_mass_matches_analytic_solution():
    """A point mass hanging on a spring-damper (string with damping) under gravity stays taut and follows
    the damped harmonic oscillator exactly."""
    mass, k, zeta, L0, g, A = 0.5, 200.0, 1.5, 0.3, 9.81, 0.01
    z_eq = -(L0 + mass * g / k)
    m = make_model([("top", (0, 0, 0), {"fixed": True}), ("bob", (0, 0, z_eq - A), {"mass": mass})],
                   strings=[{"name": "spring", "path": ["top", "bob"], "stiffness": k, "damping": zeta,
                             "rest_length": L0}], gravity=(0, 0, -g))
    sim = Simulator(m, integrator="dopri5", rtol=1e-11, atol=1e-13)
    tr = sim.run(2.0, rate=200)
    w0 = math.sqrt(k / mass)
    c = zeta / (2 * mass)
    wd = math.sqrt(w0 ** 2 - c ** 2)
    t = tr.t
    exact = z_eq - A * np.exp(-c * t) * (np.cos(wd * t) + c / wd * np.sin(wd * t))
    assert tr.tensions.min() > 0
    assert np.abs(tr.nodes[:, 1, 2] - exact).max() <= 1e-9


def test_composite_string_acts_like_frictionless_pulley():
    """A mass on a composite string between two fixed anchors slides to the symmetric point (equal angles,
    one tension along the path); with two separate strings it would stay asymmetric."""
    a, mass, g = 0.5, 1.0, 9.81
    m = make_model([("A", (-a, 0, 0), {"fixed": True}), ("B", (a, 0, 0), {"fixed": True}),
                    ("P", (0.2, 0, -0.3), {"mass": mass})],
                   strings=[{"name": "rope", "path": ["A", "P", "B"], "EA": 5000.0, "damping": 2.0,
                             "rest_length": 1.2}], gravity=(0, 0, -g))
    eq = settle(m, tol=1e-11)
    P = eq.positions[2]
    assert abs(P[0]) <= 1e-9 and abs(P[1]) <= 1e-12
    seg = np.linalg.norm(eq.positions[[0, 1]] - P, axis=1)
    sin_th = -P[2] / seg[0]
    # vertical balance with one tension on both sides: 2 T sin(theta) = m g
    assert abs(2 * eq.tensions[0] * sin_th - mass * g) <= 1e-9
    assert eq.residual <= 1e-9


def test_slack_string_exerts_no_force(prism3):
    """Adding a string that stays slack (rest length far above its length) changes nothing at all,
    damping included: tension-only, and damping acts only while taut."""
    import dataclasses

    from tensegrity_engine import build_model
    from tensegrity_engine.model.spec import StringSpec
    extra = StringSpec("loose", ("b1", "t3"), None, 1000.0, 50.0, 5.0, None, 0.001)
    spec2 = dataclasses.replace(prism3.spec, strings=prism3.spec.strings + (extra,))
    m2 = build_model(spec2)
    v = random_tangent_velocities(prism3, 0.2, seed=4)
    s1, s2 = Simulator(prism3, integrator="rk4", dt=1e-3), Simulator(m2, integrator="rk4", dt=1e-3)
    s1.reset(velocities=v)
    s2.reset(velocities=v)
    t1, t2 = s1.run(2.0, rate=50), s2.run(2.0, rate=50)
    assert np.all(t2.tensions[:, -1] == 0.0)
    assert np.array_equal(t1.nodes, t2.nodes)


def test_damping_never_pushes_and_energy_decays(prism3):
    """Strong damping on every cable: tensions never negative and the total energy never increases."""
    import dataclasses

    from tensegrity_engine import build_model
    spec = dataclasses.replace(prism3.spec, strings=tuple(dataclasses.replace(s, damping=5.0)
                                                          for s in prism3.spec.strings))
    m = build_model(spec)
    sim = Simulator(m, integrator="dopri5", rtol=1e-9, atol=1e-12)
    tr = sim.run(5.0, rate=200)      # from the paper's start pose (not an equilibrium), at rest
    assert tr.tensions.min() >= 0.0
    en = energies(m, tr.nodes, tr.velocities, tr.inputs)
    E = en["total"]
    # dE/dt = -sum zeta edot^2 <= 0; 1e-9 J slack for the integration error at rtol 1e-9
    assert np.all(np.diff(E) <= 1e-9)
    # started at rest (no momentum, no spin): the vibration decays (the 0.2 Hz breathing mode barely
    # stretches the cables, so it is the slowest to die out)
    assert en["kinetic"][-1] < 0.25 * en["kinetic"].max()


def test_damped_run_settles(manipulator):
    """Kick the manipulator with an external force, release it: with damping it returns to rest at the
    same equilibrium. String damping alone barely damps this reconstruction's lowest modes (they hardly
    stretch any string, see docs/stacked_manipulator.md), so structural damping (1/s) is added here."""
    sim = Simulator(manipulator, node_damping=1.0)
    sim.set_external_force("n22", (15.0, 0.0, 0.0))
    sim.advance(0.5)
    sim.set_external_force("n22", (0.0, 0.0, 0.0))
    moved = np.abs(sim.positions - manipulator.positions).max()
    sim.advance(15.0)
    assert moved > 1e-3
    assert np.abs(sim.velocities).max() <= 1e-3
    # back to the same (stable, unique nearby) equilibrium: within 1 % of the excursion
    assert np.abs(sim.positions - manipulator.positions).max() <= 1e-2 * moved


def test_rk4_and_dopri5_agree(prism3):
    """Two independent integrators of the same equations converge to the same trajectory."""
    v = random_tangent_velocities(prism3, 0.05, seed=6)
    a = Simulator(prism3, integrator="rk4", dt=2.5e-4)
    b = Simulator(prism3, integrator="dopri5", rtol=1e-11, atol=1e-13)
    a.reset(velocities=v)
    b.reset(velocities=v)
    ta, tb = a.run(2.0, rate=20), b.run(2.0, rate=20)
    # cables go slack and taut again here (force kink): RK4 loses an order at each crossing, so 2e-8 m
    assert np.abs(ta.nodes - tb.nodes).max() <= 2e-8


def test_prism3_triples_stay_symmetric(prism3):
    """The paper's observation: by symmetry the three cables of each triple keep equal strain."""
    tr = Simulator(prism3).run(5.0, rate=50)
    for group in ("top", "bottom", "side"):
        idx = [i for i, g in enumerate(prism3.string_group) if g == group]
        T = tr.tensions[:, idx]
        assert np.abs(T - T[:, :1]).max() <= 1e-9


def test_actuated_rest_length_and_rate_enter_damping():
    """Reeling a damped string in at constant rate v on a fixed structure: tension = k e + zeta (Ldot + v)."""
    k, zeta, v = 300.0, 4.0, 0.01
    m = make_model([("A", (0, 0, 0), {"fixed": True}), ("B", (0, 0, -0.5), {"fixed": True}),
                    ("C", (1, 0, 0)), ("D", (1, 0, -1))],
                   bars=[("rod", "C", "D", 1.0)],
                   strings=[{"name": "s", "path": ["A", "B"], "stiffness": k, "damping": zeta, "rest_length": 0.45},
                            {"name": "t", "path": ["C", "A"], "stiffness": 1.0, "rest_length": 2.0}],
                   actuators=[{"name": "m", "string": "s", "spool_radius": 0.01, "angle_limits": [-10, 10]}])
    from tensegrity_engine import table
    sim = Simulator(m, integrator="rk4", dt=1e-3)
    tr = sim.run(1.0, inputs=table([0.0, 2.0], [[0.0], [2 * v]]), rate=10)
    expected = k * (0.5 - (0.45 - v * tr.t)) + zeta * v
    assert np.abs(tr.tensions[1:, 0] - expected[1:]).max() <= 1e-9


def test_divergence_raises_clear_error():
    """A stiff string integrated with a far too large fixed step blows up: SimulationDiverged, not NaN."""
    m = make_model([("A", (0, 0, 0), {"fixed": True}), ("B", (0.3, 0, 0)), ("C", (0.3, 0.0, 0.3))],
                   bars=[("rod", "B", "C", 0.01)],
                   strings=[{"name": "s", "path": ["A", "B"], "stiffness": 1e7, "rest_length": 0.2}])
    sim = Simulator(m, integrator="rk4", dt=0.01)
    with pytest.raises(SimulationDiverged) as exc:
        sim.run(1.0)
    assert "diverged at t =" in str(exc.value)
    assert np.isfinite(exc.value.time)


def test_inputs_rates_match_finite_differences():
    s = sinusoid([0.03, 0.01], [0.5, -1.0], period=2.0, ramp=0.7)
    t = np.linspace(0.01, 3.0, 50)
    u, ud = s(t)
    h = 1e-6
    fd = (s(t + h)[0] - s(t - h)[0]) / (2 * h)
    assert np.abs(ud - fd).max() <= 1e-7
    assert np.allclose(s(0.0)[0], 0.0)          # the ramp starts the sinusoid from zero


def test_structural_damping_from_the_model_file_decays_momentum_exactly(prism3):
    """Mass-proportional damping -c m v: internal forces cancel in the sum, so the total momentum obeys
    dp/dt = -c p exactly, p(t) = p0 exp(-c t), whatever the strings and bars do meanwhile. The model
    file's ``structural_damping`` is the Simulator's default; an explicit ``node_damping`` overrides it."""
    import dataclasses

    from tensegrity_engine import build_model
    c = 0.8
    m = build_model(dataclasses.replace(prism3.spec, structural_damping=c))
    assert m.structural_damping == c
    assert Simulator(m, node_damping=0.0).node_damping == 0.0
    sim = Simulator(m, integrator="dopri5", rtol=1e-11, atol=1e-13)
    assert sim.node_damping == c
    sim.reset(velocities=random_tangent_velocities(m, 0.2, seed=7))
    tr = sim.run(3.0, rate=20)
    p = linear_momentum(m, tr.velocities)
    expected = p[0] * np.exp(-c * (tr.t - tr.t[0]))[:, None]
    assert np.abs(p[0]).max() > 1e-3          # the test means something: the start has momentum
    # 1e-9 relative to |p0|: adaptive integration at rtol 1e-11 over 3 s; the law itself is exact
    assert np.abs(p - expected).max() <= 1e-9 * np.abs(p[0]).max()
