"""numpydoc validation of the public API: every public function, class and public method of
``algos.<module>``, ``theory.<module>``, ``accel`` and ``accel.<module>`` documents its parameters
(PR01, PR02), its return value (RT01), has a docstring (GL08) and a summary ending with a period (SS03).

These are the checks ``docs/conf.py`` turns on for the ``-W`` documentation build
(``numpydoc_validation_checks``); this test finds the same failures without building the site.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))

import conf_checks  # noqa: E402  (docs/conf_checks.py: the checks and exclusions shared with conf.py)

from algos import MODULES  # noqa: E402


def _public_objects():
    """Import paths of the documented API: names in ``__all__`` and the public methods of classes."""
    modnames = [f"algos.{m}" for m in MODULES] + [f"theory.{m}" for m in MODULES] + ["accel"]
    modnames += [f"accel.{m}" for m in MODULES]
    names = []
    for modname in modnames:
        try:
            mod = importlib.import_module(modname)
        except ImportError:  # an optional dependency missing: that page is not built either
            continue
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if inspect.ismodule(obj) or not callable(obj):
                continue
            names.append(f"{modname}.{name}")
            if inspect.isclass(obj):
                names += [f"{modname}.{name}.{key}" for key in _public_methods(obj)]
    return names


def _public_methods(cls):
    """Public methods and properties of ``cls``, its own and those it inherits from the project's classes
    (mixins, bases): the members its API page lists (``docs/_templates/autosummary/class.rst`` shows
    inherited members except those of scikit-learn's bases and of builtins)."""
    keys = []
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] not in ("algos", "theory", "accel"):
            continue
        for key, value in vars(klass).items():
            if key.startswith("_") or key in keys:
                continue
            if inspect.isfunction(value) or isinstance(value, (property, classmethod, staticmethod)):
                keys.append(key)
    return keys


def _excluded(name):
    return any(re.search(pattern, name) for pattern in conf_checks.EXCLUDE)


def test_the_api_is_enumerated():
    names = _public_objects()
    assert len(names) > 300
    assert "theory.pomdp.converse_depth1" in names and "algos.pomdp.PBVI.fit" in names
    # inherited from a project mixin: listed on the class's page, so checked here too
    assert "algos.continual.StreamingLDA.partial_fit" in names and "algos.pomdp.GridCodebook.simulate" in names


def test_public_docstrings_pass_the_numpydoc_checks():
    failures = []
    for name in _public_objects():
        if _excluded(name):
            continue
        result = numpydoc_validate.validate(name)
        for code, message in result["errors"]:
            if code in conf_checks.CHECKS:
                failures.append(f"{code} {name}: {message}")
    assert not failures, f"{len(failures)} numpydoc errors:\n" + "\n".join(failures)
