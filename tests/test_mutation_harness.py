"""Fast tests of the mutation harness itself (tests/mutation): catalogue, plugin, runner.

The catalogue is checked statically (every mutant resolves against the current code); the runner
is exercised end to end on a tiny target in a temporary folder, so these tests take seconds.
"""

from __future__ import annotations

import hashlib
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from tests.mutation import catalogue, runner
from tests.mutation._core import Mutant, MutantError, Replace, Scale, Source, apply, edited_source, resolve

REPO = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- the catalogue
def test_catalogue_has_at_least_eight_named_mutants_per_module_of_both_kinds():
    names = [m.name for m in catalogue.MUTANTS]
    assert len(names) == len(set(names)), [n for n, c in Counter(names).items() if c > 1]
    for module in runner.MODULES:
        mine = [m for m in catalogue.MUTANTS if m.module == module]
        assert len(mine) >= 8, f"{module}: only {len(mine)} mutants"
        assert {m.kind for m in mine} == {"theory", "algorithm"}, module
        for m in mine:
            assert m.name.startswith(module + "."), m.name
            assert m.intent and "\n" not in m.intent, m.name
            for t in m.tests:
                assert (REPO / t).is_file(), f"{m.name}: test file {t} not found"


def test_every_catalogue_mutant_still_applies_to_the_code():
    """A source edit whose text is gone, or a target that was renamed, must be noticed here."""
    problems = []
    for m in catalogue.MUTANTS:
        for op in m.ops:
            try:
                if isinstance(op, Source):
                    edited_source(op)
                else:
                    resolve(op.target)
            except MutantError as exc:
                problems.append(f"{m.name}: {exc}")
    assert not problems, "\n".join(problems)


def test_quick_sample_is_fixed_two_per_module_with_declared_test_files():
    sample = runner.quick_sample(catalogue.MUTANTS)
    per_module = Counter(m.module for m in sample)
    assert set(per_module) == set(runner.MODULES)
    assert all(n == runner.QUICK_PER_MODULE for n in per_module.values()), per_module
    assert all(m.tests and m.equivalent is None for m in sample)
    assert runner.quick_sample(catalogue.MUTANTS) == sample


def test_kill_rate_counts_timeouts_as_kills_and_leaves_out_equivalent_and_error():
    rows = [{"outcome": o} for o in ("killed", "timeout", "survived", "equivalent", "error")]
    assert runner.kill_rate(rows) == pytest.approx(2 / 3)
    assert runner.kill_rate([{"outcome": "equivalent"}]) is None


# ----------------------------------------------------------------------------- in-process patching
def _write(folder, name, text):
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """A tiny importable target: ``tinylib.add``, re-imported by name in ``tinyuser``."""
    _write(tmp_path, "tinylib.py", """
        LIMIT = 10

        def add(a, b):
            return a + b
        """)
    _write(tmp_path, "tinyuser.py", """
        from tinylib import add

        def twice(a):
            return add(a, a)
        """)
    _write(tmp_path, "tinyfresh.py", """
        def half(x):
            return x / 2
        """)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("ALGOS_MUTATION_TMP", str(tmp_path / "mutants"))
    yield tmp_path
    for mod in ("tinylib", "tinyuser", "tinyfresh"):
        sys.modules.pop(mod, None)


def test_scale_patches_names_already_imported_elsewhere(tiny):
    import tinylib
    import tinyuser

    handle = apply(Mutant("tiny.add_x3", "tiny", "theory", "add scaled", Scale("tinylib:add", 3.0)))
    try:
        assert tinylib.add(1, 2) == 9
        assert tinyuser.add(1, 2) == 9  # the name bound by `from tinylib import add`
        assert tinyuser.twice(1) == 6
    finally:
        handle.undo()
    assert tinyuser.add(1, 2) == 3 and tinylib.add(1, 2) == 3


def test_replace_sets_a_constant_and_undo_restores_it(tiny):
    import tinylib

    handle = apply(Mutant("tiny.limit", "tiny", "algorithm", "limit", Replace("tinylib:LIMIT", lambda v: v + 1)))
    assert tinylib.LIMIT == 11
    handle.undo()
    assert tinylib.LIMIT == 10


def test_source_mutant_loads_an_edited_copy_and_leaves_the_file_alone(tiny):
    original = (tiny / "tinyfresh.py").read_bytes()
    handle = apply(Mutant("tiny.half", "tiny", "algorithm", "wrong divisor",
                          Source("tinyfresh", (("x / 2", "x / 3"),))))
    try:
        import tinyfresh

        assert tinyfresh.half(6) == 2
        assert Path(tinyfresh.__file__).is_relative_to(tiny / "mutants")
    finally:
        handle.undo()
    assert (tiny / "tinyfresh.py").read_bytes() == original


def test_a_mutant_that_does_not_apply_is_an_error(tiny):
    with pytest.raises(MutantError, match="occurs 0 time"):
        apply(Mutant("tiny.gone", "tiny", "algorithm", "-", Source("tinyfresh", (("x * 7", "x"),))))
    with pytest.raises(MutantError, match="no attribute"):
        apply(Mutant("tiny.nofn", "tiny", "theory", "-", Scale("tinylib:mul", 2.0)))


# ----------------------------------------------------------------------------- the runner, end to end
def _digest(folder):
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_runner_kills_a_killable_mutant_and_leaves_the_target_unchanged(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    _write(target, "tinylib.py", """
        def add(a, b):
            return a + b
        """)
    _write(target, "test_tiny.py", """
        from tinylib import add

        def test_add():
            assert add(2, 3) == 5
        """)
    _write(target, "tinycat.py", """
        from tests.mutation._core import Mutant, Scale, Source

        MUTANTS = [
            Mutant("tiny.off_by_one", "tiny", "algorithm", "add one too many",
                   Source("tinylib", (("return a + b", "return a + b + 1"),))),
            Mutant("tiny.identity", "tiny", "theory", "scaled by 1: no change", Scale("tinylib:add", 1.0)),
            Mutant("tiny.absent", "tiny", "theory", "target missing", Scale("tinylib:mul", 2.0)),
        ]
        """)
    _write(target, "pytest.ini", "[pytest]\n")  # the target's own root, not the repository's settings
    before = _digest(target)
    env = {"PYTHONPATH": str(target), "ALGOS_MUTATION_TMP": str(tmp_path / "mutants"),
           "HYPOTHESIS_STORAGE_DIRECTORY": str(tmp_path / "hyp")}
    outcome = {}
    for name in ("tiny.off_by_one", "tiny.identity", "tiny.absent"):
        res = runner.run_pytest(["test_tiny.py"], mutant=name, catalogue="tinycat", cwd=target, timeout=120,
                                extra_env=env)
        outcome[name] = res
    assert outcome["tiny.off_by_one"]["outcome"] == "killed", outcome["tiny.off_by_one"]["tail"]
    assert outcome["tiny.off_by_one"]["failed"] == ["test_tiny.py::test_add"], outcome["tiny.off_by_one"]["tail"]
    assert outcome["tiny.identity"]["outcome"] == "survived", outcome["tiny.identity"]["tail"]
    assert outcome["tiny.absent"]["outcome"] == "error", outcome["tiny.absent"]["tail"]
    assert _digest(target) == before  # nothing written next to the target, nothing edited
    assert (tmp_path / "mutants" / "tiny.off_by_one" / "tinylib.py").is_file()


def test_cli_lists_the_catalogue(capsys):
    assert runner.main(["--list", "--module", "pomdp"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == sum(m.module == "pomdp" for m in catalogue.MUTANTS)
    assert all(line.startswith("pomdp.") for line in out)


def test_order_from_an_earlier_report_maps_each_mutant_to_its_killing_file(tmp_path):
    import json

    report = {"modules": {"pomdp": {"mutants": [
        {"name": "pomdp.a", "killed_by": ["tests/pomdp/test_x.py::test_y[1]"]},
        {"name": "pomdp.b", "killed_by": []}]}}}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    assert runner.killers_from([path]) == {"pomdp.a": "tests/pomdp/test_x.py"}
