"""pytest plugin that applies one catalogue mutant for the whole session.

Use ``python -m pytest -p tests.mutation.plugin tests/<module>`` with ``ALGOS_MUTANT=<name>``
(and optionally ``ALGOS_MUTATION_CATALOGUE=<importable module with a MUTANTS list>``). Without
``ALGOS_MUTANT`` the plugin does nothing. The mutant is applied when the plugin is configured,
before conftest files and test modules are imported; after collection, names imported by the test
modules are swept again so that ``from theory.x import f`` in a test module sees the mutant.
A mutant that cannot be applied stops the session with a usage error (exit status 4), so the
harness never reports a mutant as survived when it was not there.
"""

from __future__ import annotations

import importlib
import os

import pytest

ENV_NAME = "ALGOS_MUTANT"
ENV_CATALOGUE = "ALGOS_MUTATION_CATALOGUE"
DEFAULT_CATALOGUE = "tests.mutation.catalogue"

_applied = None


def find_mutant(name, catalogue=None):
    from tests.mutation._core import MutantError

    mod = importlib.import_module(catalogue or os.environ.get(ENV_CATALOGUE) or DEFAULT_CATALOGUE)
    for m in mod.MUTANTS:
        if m.name == name:
            return m
    raise MutantError(f"no mutant named {name!r} in {mod.__name__}")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    global _applied
    name = os.environ.get(ENV_NAME)
    if not name or _applied is not None:
        return
    from tests.mutation._core import MutantError, apply

    try:
        _applied = apply(find_mutant(name))
    except MutantError as exc:
        raise pytest.UsageError(f"mutant {name!r} not applied: {exc}") from exc
    config.stash[_KEY] = _applied
    marker = os.environ.get("ALGOS_MUTANT_APPLIED_FILE")
    if marker:  # tells the runner that the mutant is in place (a failure before this is not a kill)
        with open(marker, "w") as fh:
            fh.write(name + "\n")


def pytest_collection_finish(session):
    if _applied is not None:
        _applied.resweep()


def pytest_report_header(config):
    name = os.environ.get(ENV_NAME)
    return f"mutant: {name}" if name else None


_KEY = pytest.StashKey()
