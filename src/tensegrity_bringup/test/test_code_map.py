"""The code stays a readable map (issue 23): no import circle anywhere in ``src/``, imports run one way
between packages and between the engine's layers as ``docs/architecture.md`` lists them, the engine imports
no ROS or mocap package, every subpackage says what it is for, and no function is over 80 lines.

Imports are read with ``ast`` from the sources (nothing is imported), including imports inside functions: a
lazy import still ties two modules together, so it counts for circles and layers alike.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]      # the checkout: src/tensegrity_bringup/test/ -> ../../..
SRC = ROOT / "src"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
MAX_FUNCTION_LINES = 80     # the limit: a function a reader takes in at once (docstring included)
LONG_FUNCTIONS_ALLOWED: dict = {}   # "package/module.py::name" -> why it must stay long (none today)


def _package_dirs() -> list:
    return sorted(p.parent for p in SRC.glob("*/*/__init__.py") if p.parent.name == p.parent.parent.name)


def _modules() -> dict:
    """{dotted module name: source path} for every module of every package under src/ (tests excluded)."""
    out = {}
    for pkg_dir in _package_dirs():
        for path in sorted(pkg_dir.rglob("*.py")):
            parts = path.relative_to(pkg_dir.parent).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()
PACKAGES = {d.name for d in _package_dirs()}


def _target(name: str) -> str | None:
    """The module of ours an imported dotted name lives in (None: not ours)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> set:
    """Our modules that ``module`` imports (at top level or inside functions)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
    return {t for t in map(_target, found) if t and t != module}


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


def _circles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return out


def _table(heading: str, column: int) -> list:
    """[(row label, [names in backticks in ``column``])] of the first table under ``heading`` in
    docs/architecture.md, in the order written (top layer first)."""
    text = ARCHITECTURE.read_text()
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")][2:]     # skip header and rule
    out = []
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        out.append((cells[0], re.findall(r"`([\w.]+)`", cells[column])))
    return out


def _rank(table: list) -> dict:
    """{name: layer number, 0 = bottom} from a table written top layer first."""
    return {name: len(table) - 1 - i for i, (_, names) in enumerate(table) for name in names}


def _part(module: str) -> str:
    """The part of its package a module belongs to: its subpackage, or the top-level module (``__init__`` for
    the package itself)."""
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def test_no_import_circles_anywhere_in_src():
    circles = _circles(GRAPH)
    assert not circles, "import circles (each list imports itself round): " + "; ".join(map(str, circles))


def test_the_circle_finder_finds_circles():
    """The check above can fail: a made-up graph with a lazy three-module circle is caught."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(graph) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_packages_import_one_way_and_the_engine_imports_no_ros_or_mocap_package():
    rank = _rank(_table("Packages", column=0))
    assert set(rank) == {d.name for d in _package_dirs()}, "docs/architecture.md must list every package"
    upward = [f"{a} -> {b}" for a, targets in GRAPH.items() for b in targets
              if rank[a.split(".")[0]] < rank[b.split(".")[0]]
              or (rank[a.split(".")[0]] == rank[b.split(".")[0]] and a.split(".")[0] != b.split(".")[0])]
    assert not upward, "imports against the package layers of docs/architecture.md: " + ", ".join(upward)
    engine_out = sorted({b.split(".")[0] for a, t in GRAPH.items() if a.startswith("tensegrity_engine")
                         for b in t} - {"tensegrity_engine"})
    assert engine_out == [], f"the engine imports {engine_out}: it must stand on nothing of ours"


@pytest.mark.parametrize("package, heading", [("tensegrity_engine", "Engine layers"),
                                              ("tensegrity_mocap", "Mocap layers")])
def test_package_layers_match_the_architecture_doc_and_imports_only_go_down(package, heading):
    rank = _rank(_table(heading, column=1))
    top = SRC / package / package
    parts = {p.name for p in top.iterdir() if (p / "__init__.py").exists()} | {p.stem for p in top.glob("*.py")}
    assert set(rank) == parts, f"docs/architecture.md '{heading}' lists {sorted(rank)}, {package} has {sorted(parts)}"
    upward = _upward_imports(GRAPH, rank, package)
    assert not upward, f"{package} imports going up a layer: " + ", ".join(upward)


def _upward_imports(graph: dict, rank: dict, package: str = "tensegrity_engine") -> list:
    """Imports inside ``package`` from a part (subpackage or top-level module) to a higher-ranked one."""
    return [f"{a} -> {b}" for a, targets in graph.items() if a.split(".")[0] == package
            for b in targets if b.split(".")[0] == package and rank[_part(a)] < rank[_part(b)]]


def test_the_layer_check_finds_an_upward_import():
    """The check above can fail: the model importing the simulator, or statics importing the CLI, is caught;
    dynamics importing the model is not."""
    rank = _rank(_table("Engine layers", column=1))
    graph = {"tensegrity_engine.model.build": {"tensegrity_engine.dynamics.simulator"},
             "tensegrity_engine.statics.relax": {"tensegrity_engine.cli.app"},
             "tensegrity_engine.dynamics.simulator": {"tensegrity_engine.model.model"}}
    assert _upward_imports(graph, rank) == [
        "tensegrity_engine.model.build -> tensegrity_engine.dynamics.simulator",
        "tensegrity_engine.statics.relax -> tensegrity_engine.cli.app"]


def test_every_subpackage_says_what_it_is_for():
    bare = [str(p.relative_to(SRC)) for p in SRC.glob("*/*/**/__init__.py")
            if not ast.get_docstring(ast.parse(p.read_text()))]
    assert not bare, f"subpackages without a docstring stating their job: {bare}"


def _private_imports() -> list:
    """``from our.module import _name``: a private name used by another module (it should be public where it
    is defined, or the two pieces belong in one module)."""
    out = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] in PACKAGES):
                out += [f"{module}: {node.module}.{a.name}" for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__")]
    return out


def test_no_module_imports_another_modules_private_names():
    assert not _private_imports(), f"private names imported across modules: {_private_imports()}"


def _long_functions() -> list:
    out = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                key = f"{path.relative_to(SRC)}::{node.name}"
                if lines > MAX_FUNCTION_LINES and key not in LONG_FUNCTIONS_ALLOWED:
                    out.append(f"{key} ({lines} lines)")
    return out


def test_no_function_is_over_80_lines():
    assert not _long_functions(), f"functions over {MAX_FUNCTION_LINES} lines: {_long_functions()}"


def test_allowed_long_functions_still_exist():
    gone = [name for name in LONG_FUNCTIONS_ALLOWED
            if f"def {name.partition('::')[2]}(" not in (SRC / name.partition("::")[0]).read_text()]
    assert not gone, f"allowed to be long but gone (drop them from the list): {gone}"
