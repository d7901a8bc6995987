"""The teaching pages name files, tests and functions that exist.

``docs/teaching/theorems_as_code.md`` lists, for every module, each bound of ``theory.<module>.BOUND_KIND``
with the test functions that check it, as ``tests/<module>/<file>.py::<test>``; ``docs/teaching/course.md``
names each module's theorem example. These tests parse the pages and check that every named test file
defines the named test function (read with :mod:`ast`, without importing it), that every named theory
function is a public function of its module, that every bound of every module is listed, and that the
example files the course names exist.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
PAGE = REPO_ROOT / "docs" / "teaching" / "theorems_as_code.md"
COURSE = REPO_ROOT / "docs" / "teaching" / "course.md"
MODULES = ("fair_matching", "hetero_regression", "networked_learning", "pomdp", "continual", "federated",
           "point_process")
_TEST_REF = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")
_THEORY_REF = re.compile(r"`theory\.(\w+)\.(\w+)`")
# theorem examples being written alongside the course page: accepted while absent, checked once they land
PENDING_EXAMPLES = {
    "examples/networked_learning/plot_theorem_message_bounds.py",
    "examples/pomdp/plot_theorem_converse.py",
    "examples/continual/plot_theorem_ensemble_tradeoff.py",
    "examples/point_process/plot_theorem_vogcam_ascent.py",
}
_EXAMPLE_REF = re.compile(r"`(examples/\w+/plot_\w+\.py)`")


def _page(path):
    return path.read_text(encoding="utf-8")


def _test_functions(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _table_rows(text):
    """``(module, function, [(file, test), ...])`` for every row of the bound tables."""
    rows = []
    for line in text.splitlines():
        m = _THEORY_REF.match(line.lstrip("| "))
        if line.startswith("| `theory.") and m:
            rows.append((m.group(1), m.group(2), _TEST_REF.findall(line)))
    return rows


def test_every_named_test_exists():
    refs = _TEST_REF.findall(_page(PAGE))
    assert len(refs) > 50, "the bound tables of theorems_as_code.md were not found"
    missing = []
    for file, name in refs:
        path = REPO_ROOT / file
        if not path.is_file():
            missing.append(f"{file} (no such file)")
        elif name not in _test_functions(path):
            missing.append(f"{file}::{name} (no such test function)")
    assert not missing, "theorems_as_code.md names tests that do not exist:\n" + "\n".join(missing)


def test_every_named_theory_function_exists():
    missing = []
    for module, name in set(_THEORY_REF.findall(_page(PAGE))):
        mod = importlib.import_module(f"theory.{module}")
        if not callable(getattr(mod, name, None)) or name not in getattr(mod, "__all__", [name]):
            missing.append(f"theory.{module}.{name}")
    assert not missing, f"theorems_as_code.md names theory functions that do not exist: {sorted(missing)}"


@pytest.mark.parametrize("module", MODULES)
def test_every_bound_of_every_module_is_listed_with_a_test(module):
    rows = {fn: tests for mod, fn, tests in _table_rows(_page(PAGE)) if mod == module}
    bounds = set(importlib.import_module(f"theory.{module}").BOUND_KIND)
    assert bounds <= set(rows), f"{module}: bounds missing from theorems_as_code.md: {sorted(bounds - set(rows))}"
    untested = sorted(fn for fn, tests in rows.items() if not tests)
    assert not untested, f"{module}: rows without a test: {untested}"
    wrong_dir = sorted(f for fn, tests in rows.items() for f, _ in tests if not f.startswith(f"tests/{module}/"))
    assert not wrong_dir, f"{module}: tests outside tests/{module}/: {wrong_dir}"


def test_course_names_every_module_and_existing_examples():
    text = _page(COURSE)
    examples = _EXAMPLE_REF.findall(text)
    named = {Path(e).parts[1] for e in examples}
    assert named == set(MODULES), f"the course names examples of {sorted(named)}, not of every module"
    missing = sorted(e for e in set(examples) if not (REPO_ROOT / e).is_file() and e not in PENDING_EXAMPLES)
    assert not missing, f"course.md names examples that do not exist: {missing}"


def test_the_checks_catch_a_wrong_name(tmp_path):
    """A renamed test function or file is reported, not silently accepted."""
    page = tmp_path / "page.md"
    page.write_text("| `theory.federated.optimal_lambda` | exact | "
                    "`tests/federated/test_merge_theory.py::test_no_such_test`<br>"
                    "`tests/federated/test_no_such_file.py::test_x` |\n", encoding="utf-8")
    refs = _TEST_REF.findall(_page(page))
    assert len(refs) == 2
    assert "test_no_such_test" not in _test_functions(REPO_ROOT / refs[0][0])
    assert not (REPO_ROOT / refs[1][0]).exists()
    assert _table_rows(_page(page))[0][:2] == ("federated", "optimal_lambda")
