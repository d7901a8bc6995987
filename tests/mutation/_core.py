"""Mutants and how they are applied, in-process, without touching the work tree.

Three operations cover the catalogue:

* :class:`Scale` multiplies (or shifts) the value a function returns: the usual theory mutant, a
  bound made more optimistic than the theorem allows.
* :class:`Replace` swaps a module or class attribute for a new object built from the original
  (``make(original) -> new``): a constant, a default, a method that skips an update.
* :class:`Source` edits the text of one module (``old`` -> ``new``, each occurrence counted) and
  loads the edited copy from a folder under the system temporary directory, under the module's own
  name, before anything imports it. numba compiles and caches the edited kernels there, next to the
  copy, never in the work tree.

Function and attribute patches are applied to the defining module *and* to every module attribute
in ``sys.modules`` that is the original object, so names already imported elsewhere with
``from theory.x import f`` see the mutant too (:func:`sweep`).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.abc
import importlib.util
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

__all__ = ["Mutant", "Scale", "Replace", "Source", "apply", "sweep", "resolve", "MutantError"]


class MutantError(RuntimeError):
    """A mutant that cannot be applied (its target or its source text is not there)."""


# ----------------------------------------------------------------------------- operations
@dataclass(frozen=True)
class Scale:
    """Return ``factor * f(...) + shift`` instead of ``f(...)`` (floats and arrays).

    ``target`` is ``"package.module:function"`` or ``"package.module:Class.method"``;
    ``index`` picks one element when the function returns a tuple.
    """

    target: str
    factor: float = 1.0
    shift: float = 0.0
    index: int | None = None

    def make(self, original):
        factor, shift, index = self.factor, self.shift, self.index

        def change(value):
            if isinstance(value, dict):
                return {k: change(v) for k, v in value.items()}
            if isinstance(value, (tuple, list)) and index is None:
                items = [change(v) for v in value]
                return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
            if isinstance(value, (bool, str)) or value is None:
                return value
            return value * factor + shift

        @functools.wraps(original)
        def scaled(*args, **kwargs):
            value = original(*args, **kwargs)
            if index is None:
                return change(value)
            items = list(value)
            items[index] = change(items[index])
            return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)

        scaled.__mutant_original__ = original
        return scaled


@dataclass(frozen=True)
class Replace:
    """Set ``target`` (``"module:name"`` or ``"module:Class.attr"``) to ``make(original)``."""

    target: str
    make: Callable[[Any], Any]


@dataclass(frozen=True)
class Source:
    """Edit the source text of ``module``: each ``(old, new)`` pair must occur exactly ``count`` times.

    ``count=None`` replaces every occurrence (at least one).
    """

    module: str
    edits: tuple
    count: int | None = 1


@dataclass(frozen=True)
class Mutant:
    """One named mutant of the catalogue.

    Parameters
    ----------
    name : str
        Unique, ``<module>.<short-name>``.
    module : str
        The package module whose tests must kill it (``tests/<module>``).
    kind : {"theory", "algorithm"}
    intent : str
        One line: what the mutant breaks and why a strong test should notice.
    op : Scale, Replace, Source or a tuple of them
    tests : tuple of str, optional
        Test files (relative to the repository root) that kill it; quick mode runs only these, the
        full run runs them first and then the rest of the module's tests.
    equivalent : str, optional
        Why the mutant cannot be told apart from the original by any test (excluded from the rate).
    quick : bool
        Part of the fixed quick sample.
    """

    name: str
    module: str
    kind: str
    intent: str
    op: Any
    tests: tuple = ()
    equivalent: str | None = None
    quick: bool = False

    @property
    def ops(self):
        return self.op if isinstance(self.op, tuple) else (self.op,)


# ----------------------------------------------------------------------------- resolution
def resolve(target):
    """``"pkg.mod:Class.attr"`` -> (owner object, attribute name, current value)."""
    try:
        modname, attrpath = target.split(":")
    except ValueError:
        raise MutantError(f"target {target!r} must look like 'package.module:name'") from None
    try:
        owner = importlib.import_module(modname)
    except ImportError as exc:
        raise MutantError(f"cannot import {modname!r} for target {target!r}: {exc}") from exc
    parts = attrpath.split(".")
    for part in parts[:-1]:
        if not hasattr(owner, part):
            raise MutantError(f"target {target!r}: {owner!r} has no attribute {part!r}")
        owner = getattr(owner, part)
    name = parts[-1]
    if isinstance(owner, type):
        if name not in vars(owner):
            raise MutantError(f"target {target!r}: {name!r} is not defined on class {owner.__name__}")
        return owner, name, vars(owner)[name]
    if not hasattr(owner, name):
        raise MutantError(f"target {target!r}: module {modname} has no attribute {name!r}")
    return owner, name, getattr(owner, name)


def sweep(original, new):
    """Point every module attribute that *is* ``original`` at ``new``; returns the undo list."""
    undo = []
    for mod in list(sys.modules.values()):
        d = getattr(mod, "__dict__", None)
        if not isinstance(d, dict):
            continue
        for key, value in list(d.items()):
            if value is original:
                d[key] = new
                undo.append((d, key, original))
    return undo


# ----------------------------------------------------------------------------- source edits
def mutant_dir(name):
    """Folder holding the edited copies of one mutant (kept between runs so numba's cache is reused)."""
    root = Path(os.environ.get("ALGOS_MUTATION_TMP", Path(tempfile.gettempdir()) / "algos-mutants"))
    return root / name.replace("/", "_")


def source_path(modname):
    """The ``.py`` file of ``modname``, found without importing its parent packages."""
    top, *rest = modname.split(".")
    spec = importlib.util.find_spec(top)  # a top-level find_spec imports nothing
    if spec is None:
        raise MutantError(f"cannot find the package {top!r} of {modname!r}")
    if not rest:
        origin = spec.origin
    else:
        locations = list(spec.submodule_search_locations or [])
        candidates = [Path(loc, *rest).with_suffix(".py") for loc in locations]
        origin = next((str(c) for c in candidates if c.is_file()), None)
    if not origin or not origin.endswith(".py") or not Path(origin).is_file():
        raise MutantError(f"cannot find the source file of {modname!r}")
    return Path(origin)


def edited_source(op: Source):
    path = source_path(op.module)
    text = path.read_text()
    for old, new in op.edits:
        n = text.count(old)
        if (op.count is None and n == 0) or (op.count is not None and n != op.count):
            want = "at least once" if op.count is None else f"{op.count} time(s)"
            raise MutantError(f"{op.module}: {old!r} occurs {n} time(s), expected {want}")
        text = text.replace(old, new)
    return path, text


class _EditedFinder(importlib.abc.MetaPathFinder):
    """Serves the edited copy of one module under its own name."""

    def __init__(self, modname, path):
        self.modname, self.path, self.loaded = modname, str(path), False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.modname:
            return None
        self.loaded = True
        return importlib.util.spec_from_file_location(fullname, self.path)


def _install_source(op: Source, name):
    if op.module in sys.modules:
        raise MutantError(f"{op.module} was imported before the mutant could edit it")
    _, text = edited_source(op)
    rel = Path(*op.module.split(".")).with_suffix(".py")
    path = mutant_dir(name) / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(text.encode()).hexdigest()
    stamp = path.with_suffix(".sha256")
    # rewrite only when the text changed: an unchanged file keeps its mtime and numba's cache
    if not (path.exists() and stamp.exists() and stamp.read_text() == digest):
        path.write_text(text)
        stamp.write_text(digest)
    finder = _EditedFinder(op.module, path)
    sys.meta_path.insert(0, finder)
    # parents first (their __init__ may import the edited module), then the module itself
    importlib.import_module(op.module)
    if not finder.loaded or sys.modules[op.module].__file__ != str(path):
        raise MutantError(f"{op.module}: the edited copy was not the one imported")
    return finder


# ----------------------------------------------------------------------------- apply
@dataclass
class Applied:
    """Handle returned by :func:`apply`; ``undo()`` restores function and attribute patches."""

    mutant: Mutant
    undo_list: list = field(default_factory=list)
    finders: list = field(default_factory=list)
    pairs: list = field(default_factory=list)  # (original, new) for later sweeps

    def resweep(self):
        for original, new in self.pairs:
            self.undo_list.extend(sweep(original, new))

    def undo(self):
        for d, key, value in reversed(self.undo_list):
            if isinstance(d, dict):
                d[key] = value
            else:
                setattr(d, key, value)
        self.undo_list.clear()
        for f in self.finders:
            if f in sys.meta_path:
                sys.meta_path.remove(f)


def apply(mutant: Mutant):
    """Apply every operation of ``mutant`` in this process; returns an :class:`Applied` handle."""
    applied = Applied(mutant)
    for op in mutant.ops:
        if isinstance(op, Source):
            applied.finders.append(_install_source(op, mutant.name))
            continue
        if not isinstance(op, (Scale, Replace)):
            raise MutantError(f"{mutant.name}: unknown operation {op!r}")
        owner, attr, original = resolve(op.target)
        new = op.make(original)
        if isinstance(owner, type):
            setattr(owner, attr, new)
            applied.undo_list.append((owner, attr, original))
        if not isinstance(original, (int, float, str, bool, type(None))):
            # objects: every module attribute that is the original (re-imported names too)
            applied.pairs.append((original, new))
            applied.undo_list.extend(sweep(original, new))
        elif not isinstance(owner, type):
            d = vars(owner)
            applied.undo_list.append((d, attr, original))
            d[attr] = new
    return applied
