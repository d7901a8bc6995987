"""The package's layers: :mod:`theory` and :mod:`accel` at the bottom, :mod:`algos` on top.

Every ``.py`` file of ``accel/`` and ``theory/`` is parsed with :mod:`ast` and every import in it (module
level or inside a function, absolute or relative) is resolved to a module name: none may be ``algos`` or
below it. Importing :mod:`algos` must not import torch.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOTTOM = ("accel", "theory")


def _imported_modules(path):
    """Absolute names of every module imported anywhere in ``path`` (lazy imports included)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            names.append((node.lineno, module))
            names.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names)
    return names


def _files():
    return sorted(p for layer in BOTTOM for p in (ROOT / layer).rglob("*.py"))


def test_the_walk_sees_every_file_and_lazy_imports():
    files = _files()
    assert {p.parent.name for p in files} == set(BOTTOM)
    assert len(files) >= 15
    # a lazy import inside a function is found, and relative imports resolve to absolute names
    seen = {name for _, name in _imported_modules(ROOT / "accel" / "federated.py")}
    assert "accel._federated_checks" in seen
    lazy = {name for _, name in _imported_modules(ROOT / "accel" / "backend.py")}
    assert "torch" in lazy  # imported inside the functions only


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_bottom_layers_import_nothing_from_algos(path):
    edges = [(line, name) for line, name in _imported_modules(path) if name == "algos" or name.startswith("algos.")]
    assert not edges, f"{path.relative_to(ROOT)} imports from algos: {edges}"


def test_theory_imports_nothing_from_accel():
    edges = [(p.name, name) for p in (ROOT / "theory").rglob("*.py") for _, name in _imported_modules(p)
             if name == "accel" or name.startswith("accel.")]
    assert not edges


def test_importing_algos_imports_no_torch():
    modules = ("fair_matching", "hetero_regression", "networked_learning", "pomdp", "continual", "federated",
               "point_process", "datasets")
    code = ("import importlib, sys, algos, accel, theory\n"
            f"for m in {modules!r}: importlib.import_module('algos.' + m)\n"
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def _top_level_imports(path):
    """Modules imported at module level of ``path`` (not inside functions, not under ``TYPE_CHECKING``)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    package = ".".join(parts if path.name == "__init__.py" else parts[:-1]).removesuffix(".__init__")
    names = []

    def visit(body):
        for node in body:
            if isinstance(node, ast.Import):
                names.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module
                names.append(module)
                names.extend(f"{module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Try):
                visit(node.body)
            elif isinstance(node, ast.If) and not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                visit(node.body)
                visit(node.orelse)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)).body)
    return names


def _packages():
    tops = [ROOT / "accel", ROOT / "theory", ROOT / "algos"]
    return tops + sorted(p for p in (ROOT / "algos").rglob("*") if p.is_dir() and (p / "__init__.py").is_file())


def _file_graph(package_dir):
    """``{unit: set of units of the same package it imports at module level}`` (the package itself excluded).

    A unit is a file of the package or one of its direct subpackages taken whole (all its files, at any
    depth), so that two subpackages importing each other, or a subpackage and a file of its parent that
    import each other, show as a cycle here; cycles inside a subpackage are checked on that subpackage.
    """
    name = ".".join(package_dir.relative_to(ROOT).parts)
    units = {(f"{name}.{f.stem}" if f.name != "__init__.py" else name): [f] for f in package_dir.glob("*.py")}
    for sub in sorted(package_dir.iterdir()):
        if sub.is_dir() and (sub / "__init__.py").is_file():
            units[f"{name}.{sub.name}"] = sorted(sub.rglob("*.py"))

    def unit_of(module):
        return next((u for u in units if u != name and (module == u or module.startswith(u + "."))), None)

    return {unit: {u for path in paths for imp in _top_level_imports(path)
                   if (u := unit_of(imp)) is not None and u != unit}
            for unit, paths in units.items()}


def _cycles(graph):
    """Every strongly connected component with more than one file (each is an import cycle)."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(graph)
    g.add_edges_from((a, b) for a, targets in graph.items() for b in targets)
    return [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]


def test_the_file_graph_sees_module_level_imports_only():
    graph = _file_graph(ROOT / "algos" / "continual")
    assert "algos.continual._reservoir" in graph["algos.continual._birc2d"]  # from ._reservoir import ...
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    # a subpackage is one unit of its parent's graph: the imports of all its files are its edges
    graph = _file_graph(ROOT / "algos")
    assert "algos._validation" in graph["algos.pomdp"] and "algos.pomdp._model" not in graph


@pytest.mark.parametrize("package", _packages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_files_of_one_package_import_each_other_as_a_tree(package):
    cycles = _cycles(_file_graph(package))
    assert not cycles, (f"import cycles between files of {package.relative_to(ROOT)} (module-level imports): {cycles}; "
                        "move what both need into a leaf file, and import from the defining file")
