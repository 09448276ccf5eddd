"""``tensegrity new``: write a generated template as a prestressed, verified, stable model file.

    tensegrity new prism --n 4 [--radius R --height H] -o prism4.yaml
    tensegrity new icosahedron [--length L] -o ico.yaml
    tensegrity new cuboctahedron [--length L] -o cubo.yaml
    tensegrity new tower --stages 5 --n 5 [--joints class1|class2] [--overlap D] -o tower.yaml
    tensegrity new shell --n 6 --m 3 [--joints class1|class2] [--primal] -o shell.yaml
    tensegrity new threebar -o threebar.yaml        # the Lagrangian paper's 3-bar robot on the ground
    tensegrity new superball -o superball.yaml      # SUPERball-like six-bar, 24 actuated strings, on the ground
    tensegrity new icosahedron --ground [--lift 0.3 --friction 0.5] -o ico_on_floor.yaml
    tensegrity new icosahedron --ground --motors all [--motor-reach R --spool-radius r] -o ico_rover.yaml
    tensegrity new threebar --motors 'c4,c5,c6' -o threebar_base.yaml    # names or fnmatch patterns

``--motors`` puts a motor on the strings it names (``all``, or a comma list of string names and ``fnmatch``
patterns; an unknown name fails, listing the template's strings), reeling each in or out by ``--motor-reach``
[m] (default a fifth of the mean bar length, at most half the shortest motorised string) through a spool of
``--spool-radius`` [m]; for ``superball`` it chooses which of its 24 motors it keeps. Without the ground the
motors change its shape only; to roll, add ``--ground`` (docs/locomotion.md).

``--ground`` puts any template on a ground plane (z = 0, lowest bar surface ``--lift`` [m] above it) under
gravity 9.81 m/s²; ``threebar`` and ``superball`` always stand on it. Every template is prestressed to
``--min-tension`` [N] (default 5 N; threebar 10 N, superball 100 N; a robot on the ground in zero gravity;
:func:`.generators.verify_template`): the equilibrium residual must be <= 1e-9 N, every string at least
``--min-tension`` and the structure stable (``equilibrium.stability``), otherwise the command fails with a
message and writes nothing.
See ``docs/generators.md``.
"""
from __future__ import annotations

import argparse

from tensegrity_engine.paths import output_path_problem

TEMPLATES = ("prism", "icosahedron", "cuboctahedron", "tower", "shell", "threebar", "superball")
MIN_TENSION = {"threebar": 10.0, "superball": 100.0}    # N; 5 N for the others (too little to carry a 21 kg robot)
SPOOL_RADIUS = 0.015    # m: --motors' default spool (the superball's; 0.045 m/s at the simulator's 3 rad/s)


def template_document(args) -> dict:
    """The generator's model document for the parsed arguments (on the ground for ``--ground`` and the
    mobile robots), with the motors ``--motors`` asks for."""
    doc = _placed_document(args)
    if args.motors is None:
        if args.motor_reach is not None or args.spool_radius is not None:
            raise ValueError("--motor-reach and --spool-radius size the motors: add --motors (all, names or "
                             f"patterns), e.g. 'tensegrity new {args.template} --motors all'")
        return doc
    from tensegrity_engine.generators.mobile import default_reach, motor_strings, with_motors
    strings = motor_strings(doc, args.motors)
    reach = default_reach(doc, strings) if args.motor_reach is None else args.motor_reach
    return with_motors(doc, reach, SPOOL_RADIUS if args.spool_radius is None else args.spool_radius, strings)


def _placed_document(args) -> dict:
    """The template's document, on the ground for ``--ground`` and the mobile robots."""
    from tensegrity_engine.generators import on_ground, superball, three_bar_prism
    if args.template == "threebar":
        return three_bar_prism(lift=args.lift, friction=args.friction)
    if args.template == "superball":
        return superball(lift=args.lift, friction=args.friction)
    if not args.ground and (args.lift or args.friction is not None):
        raise ValueError(f"--lift and --friction place a template on the ground: add --ground (only threebar and "
                         f"superball stand on it without), e.g. 'tensegrity new {args.template} --ground --lift 0.3'")
    doc = _structure_document(args)
    rolling = args.motors is not None     # a robot with motors on the ground rolls: it rests on a face
    return on_ground(doc, lift=args.lift, friction=args.friction, face_down=rolling) if args.ground else doc


def _structure_document(args) -> dict:
    """The document of a free-standing structure template (no ground, zero gravity)."""
    from tensegrity_engine.generators import cuboctahedron, icosahedron, n_prism, shell, tower
    if args.template == "prism":
        return n_prism(args.n or 3, radius=args.radius, height=args.height, ea=args.ea)
    if args.template == "icosahedron":
        return icosahedron(bar_length=args.length, ea=args.ea)
    if args.template == "cuboctahedron":
        return cuboctahedron(bar_length=args.length, ea=args.ea)
    if args.template == "tower":
        return tower(args.stages, args.n or 5, args.joints, radius=args.radius, height=args.height,
                     overlap=args.overlap, ea=args.ea)
    return shell(args.n or 6, args.m, args.joints, args.primal, radius=args.radius, ea=args.ea)


def plot_template(model, path, title=None):
    """PNG [path] of the model's bars (thick) and strings (thin) in 3-D, small (about 40-120 kB)."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    X = model.positions
    fig = Figure(figsize=(4.0, 4.0), dpi=90)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(projection="3d")
    for a, b in model.segments:
        ax.plot(*X[[a, b]].T, color="tab:blue", lw=0.6)
    for a, b in model.bars:
        ax.plot(*X[[a, b]].T, color="black", lw=2.2)
    span = np.ptp(X, axis=0).max() / 2
    c = X.min(axis=0) + np.ptp(X, axis=0) / 2
    for k, set_lim in enumerate((ax.set_xlim, ax.set_ylim, ax.set_zlim)):
        set_lim(c[k] - span, c[k] + span)
    ax.set_box_aspect((1, 1, 1))
    ax.set_axis_off()
    ax.set_title(title or model.name, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path


def cmd_new(args) -> int:
    from tensegrity_engine.generators import verify_template
    from tensegrity_engine.model.write import dump_model
    problem = output_path_problem(args.output, "file")
    if problem:
        raise ValueError(f"-o {args.output}: {problem}")
    min_tension = args.min_tension if args.min_tension is not None else MIN_TENSION.get(args.template, 5.0)
    model, rep = verify_template(template_document(args), min_tension=min_tension)
    if not rep["stable"]:
        raise ValueError(f"template '{model.name}' is a prestressed equilibrium but not stable; nothing written")
    t = rep["tensions"]
    summary = (f"prestress {t.min():.4g}..{t.max():.4g} N ({rep['method']}), residual {rep['residual']:.2e} N, "
               f"stable{'; on the ground (prestress in zero gravity)' if model.obstacles else ''}")
    dump_model(model, args.output, header=f"Generated by 'tensegrity new {args.template}': {summary}")
    if args.png:
        plot_template(model, args.png, f"{model.name}: {len(model.bar_names)} bars, {len(model.string_names)} strings")
    motors = (f", {len(model.actuator_names)} motors (±{model.u_limits[:, 1].max():.3g} m"
              f"{'' if model.obstacles else '; no ground: shape control only, --ground to roll'})"
              if len(model.actuator_names) else "")
    print(f"{model.name}: {len(model.bar_names)} bars, {len(model.string_names)} strings{motors}; {summary}; "
          f"wrote {args.output}{' and ' + args.png if args.png else ''}")
    return 0


def add_generators(sub):
    """Register ``new`` on the engine's CLI."""
    pn = sub.add_parser("new", help="write a generated template (prestressed, verified, stable) as a model file",
                        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    pn.add_argument("template", choices=TEMPLATES)
    pn.add_argument("-o", "--output", required=True, help="model file to write (.yaml)")
    pn.add_argument("--n", type=int, default=None, help="prism: bars (default 3); tower: n-prism stages "
                    "(default 5); shell: elements around (default 6)")
    pn.add_argument("--m", type=int, default=3, help="shell: elements up")
    pn.add_argument("--stages", type=int, default=3, help="tower: stages")
    pn.add_argument("--joints", choices=["class1", "class2"], default="class1",
                    help="tower/shell: separate bar ends (class1) or two bars per joint node (class2)")
    pn.add_argument("--primal", action="store_true", help="shell: the primal shell (no t9, t10 tendons)")
    pn.add_argument("--overlap", type=float, default=None, help="tower class1: stage overlap [m] "
                    "(default height/6, height/(2n) for n > 9)")
    pn.add_argument("--radius", type=float, default=0.15, help="prism/tower/shell: radius [m]")
    pn.add_argument("--height", type=float, default=0.3, help="prism: height, tower: stage height [m]")
    pn.add_argument("--length", type=float, default=0.6, help="icosahedron, cuboctahedron: bar length [m]")
    pn.add_argument("--ea", type=float, default=2000.0, help="string EA [N]")
    pn.add_argument("--min-tension", type=float, default=None, help="prestress: smallest tension [N] (default 5; "
                    "threebar 10, superball 100)")
    pn.add_argument("--ground", action="store_true", help="put the template on a ground plane z = 0 under gravity "
                    "9.81 m/s² (threebar and superball always are)")
    pn.add_argument("--lift", type=float, default=0.0, help="on the ground: height of the lowest bar surface [m]")
    pn.add_argument("--friction", type=float, default=None, help="on the ground: Coulomb friction of the ground "
                    "(default: the model schema's 0.8)")
    pn.add_argument("--motors", default=None, help="a motor on these strings: 'all', or a comma list of string "
                    "names and patterns ('s*', 'c1,c4'); superball: which of its 24 keep theirs (default all)")
    pn.add_argument("--motor-reach", type=float, default=None, help="with --motors: how far [m] each motor reels "
                    "its string in or out (default a fifth of the mean bar length, at most half the shortest "
                    "motorised string)")
    pn.add_argument("--spool-radius", type=float, default=None, help=f"with --motors: spool radius [m] (default "
                    f"{SPOOL_RADIUS})")
    pn.add_argument("--png", default=None, help="also draw the template (bars black, strings blue) to this PNG")
    pn.set_defaults(func=cmd_new)
