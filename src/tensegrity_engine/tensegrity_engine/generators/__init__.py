"""Model generators: documents (YAML-ready dicts of the model schema) for classic tensegrity templates.

* :func:`n_prism` — the class-1 n-prism (n bars, 3n strings: two rings and n verticals) at its
  equilibrium twist;
* :func:`icosahedron` — the 6-bar "expanded octahedron" (three pairs of parallel bars on the coordinate
  axes, 24 strings), an exact equilibrium when the bars of a pair are half a bar length apart;
* :func:`tower` — k-stage towers of n-prisms, class 1 or class 2 (:mod:`.tower`);
* :func:`shell` — Skelton's tensegrity shell (n, m) (:mod:`.shell`);
* :func:`cuboctahedron` — the 12-bar cuboctahedron, the diamond tensegrity of the cube
  (:mod:`.cuboctahedron`);
* :func:`three_bar_prism`, :func:`superball` — mobile robots on the ground: the 3-bar prism of the
  Lagrangian paper and a SUPERball-like six-bar with 24 actuated strings; :func:`on_ground` puts any
  template on a ground plane under gravity, :func:`with_motors` a motor on every string (:mod:`.mobile`);
* :func:`verify_template` — prestress a document and check residual, tensions and stability.

Each returns a document for :func:`tensegrity_engine.model.spec.spec_from_dict` with string ``tension: 0``
(rest length = length: no prestress yet); ``tensegrity equilibrium --min-tension T --write`` (or
:func:`tensegrity_engine.statics.equilibrium.prestress`) gives the rest lengths of a prestressed equilibrium.
"""
from tensegrity_engine.generators.cuboctahedron import cuboctahedron
from tensegrity_engine.generators.document import model_document, verify_template
from tensegrity_engine.generators.mobile import on_ground, superball, three_bar_prism, with_motors
from tensegrity_engine.generators.prism import icosahedron, n_prism
from tensegrity_engine.generators.shell import shell
from tensegrity_engine.generators.tower import tower

__all__ = ["n_prism", "icosahedron", "tower", "shell", "cuboctahedron", "verify_template", "model_document",
           "three_bar_prism", "superball", "on_ground", "with_motors"]
