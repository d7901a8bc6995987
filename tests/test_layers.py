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
