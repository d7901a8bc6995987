"""Write the offline intersphinx inventories ``docs/_intersphinx/<project>.inv``.

The documentation build has no network, so the inventories of numpy, scipy, scikit-learn, networkx
and Python are shipped with the docs. This script writes them from the *installed* packages: it
lists the public names of their main modules and gives each the page address that the project's
own documentation uses for it (``reference/generated/numpy.linalg.solve.html`` and so on). The
files are in Sphinx's inventory format, version 2. Run from the repository root::

    python docs/_intersphinx/make_inventories.py

An inventory published by a project (``ALGOS_DOCS_INTERSPHINX=online`` at build time) is preferred
when it can be reached; these files are the fallback.
"""

from __future__ import annotations

import importlib
import inspect
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _public(modname):
    try:
        mod = importlib.import_module(modname)
    except ImportError:
        return []
    names = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
    out = []
    for n in sorted(set(names)):
        try:
            obj = getattr(mod, n)
        except (AttributeError, ImportError):
            continue
        if inspect.ismodule(obj):
            continue
        if inspect.isclass(obj):
            role = "class"
        elif callable(obj):
            role = "function"
        else:
            role = "data"
        out.append((f"{modname}.{n}", role))
    return out


def _write(project, version, entries, path):
    """entries: (name, domain:role, uri, dispname)."""
    lines = [
        "# Sphinx inventory version 2",
        f"# Project: {project}",
        f"# Version: {version}",
        "# The remainder of this file is compressed using zlib.",
    ]
    body = "".join(f"{name} {role} 1 {uri} {disp}\n" for name, role, uri, disp in sorted(set(entries)))
    path.write_bytes(("\n".join(lines) + "\n").encode() + zlib.compress(body.encode()))
    return len(set(entries))


def _generated(prefix, names):
    """Entries whose page is ``<prefix><fullname>.html#<fullname>``."""
    return [(n, f"py:{r}", f"{prefix}{n}.html#$", "-") for n, r in names]


def numpy_entries():
    mods = ["numpy", "numpy.linalg", "numpy.random", "numpy.fft", "numpy.testing"]
    names = [x for m in mods for x in _public(m)]
    names = [(n, r) for n, r in names if not n.startswith("numpy.random.") or n.count(".") == 2]
    e = _generated("reference/generated/", names)
    e += [("numpy.ndarray", "py:class", "reference/generated/numpy.ndarray.html#$", "-"),
          ("numpy.random.Generator", "py:class", "reference/random/generator.html#$", "-"),
          ("numpy.random.SeedSequence", "py:class", "reference/random/bit_generators/generated/$.html#$", "-"),
          ("numpy.typing.ArrayLike", "py:data", "reference/typing.html#$", "-"),
          ("numpy", "py:module", "reference/index.html#module-$", "-"),
          ("arrays.indexing", "std:label", "user/basics.indexing.html", "Indexing on ndarrays"),
          ("array_like", "std:term", "glossary.html#term-array_like", "array_like")]
    return e


def scipy_entries():
    mods = ["scipy.linalg", "scipy.sparse", "scipy.sparse.linalg", "scipy.sparse.csgraph", "scipy.optimize",
            "scipy.spatial", "scipy.stats", "scipy.special", "scipy.integrate", "scipy.interpolate"]
    names = [x for m in mods for x in _public(m)]
    e = _generated("reference/generated/", names)
    e += [(m, "py:module", f"reference/{m.split('.', 1)[1].replace('.', '/')}.html#module-$", "-") for m in mods]
    return e


def sklearn_entries():
    mods = ["sklearn.base", "sklearn.linear_model", "sklearn.discriminant_analysis", "sklearn.cluster",
            "sklearn.covariance", "sklearn.decomposition", "sklearn.model_selection", "sklearn.metrics",
            "sklearn.preprocessing", "sklearn.utils", "sklearn.utils.validation", "sklearn.exceptions",
            "sklearn.datasets", "sklearn.kernel_ridge", "sklearn.neighbors", "sklearn.pipeline"]
    names = [x for m in mods for x in _public(m)]
    names = [(n, r) for n, r in names if n.split(".")[-1][0].isalpha()]
    e = _generated("modules/generated/", names)
    e += [("glossary", "std:doc", "glossary.html", "Glossary"),
          ("random_state", "std:term", "glossary.html#term-random_state", "random_state")]
    return e


def networkx_entries():
    import networkx as nx

    classes = {"Graph": "graph", "DiGraph": "digraph", "MultiGraph": "multigraph", "MultiDiGraph": "multidigraph"}
    e = [(f"networkx.{c}", "py:class", f"reference/classes/{p}.html#$", "-") for c, p in classes.items()]
    e += [("networkx.Graph", "py:class", "reference/classes/graph.html#$", "-")]
    for n in sorted(dir(nx)):
        obj = getattr(nx, n)
        if n.startswith("_") or inspect.ismodule(obj) or inspect.isclass(obj) or not callable(obj):
            continue
        mod = getattr(obj, "__module__", "") or ""
        if not mod.startswith("networkx."):
            continue
        full = f"{mod}.{n}" if not mod.endswith(n) else mod
        e.append((f"networkx.{n}", "py:function", f"reference/generated/{full}.html#{full}", "-"))
        e.append((full, "py:function", f"reference/generated/{full}.html#$", "-"))
    return e


def python_entries():
    e = []
    for n in ("int", "float", "str", "bool", "list", "dict", "tuple", "object", "callable", "bytes", "set"):
        e.append((n, "py:class", f"library/functions.html#{n}", "-"))
    for n in ("ValueError", "TypeError", "RuntimeError", "FileNotFoundError", "KeyError", "IndexError",
              "UserWarning", "Warning", "NotImplementedError"):
        e.append((n, "py:exception", "library/exceptions.html#$", "-"))
    e += [("pathlib.Path", "py:class", "library/pathlib.html#$", "-"),
          ("os.PathLike", "py:class", "library/os.html#$", "-"),
          ("dataclasses.dataclass", "py:function", "library/dataclasses.html#$", "-"),
          ("None", "py:data", "library/constants.html#$", "-")]
    return e


def main():
    import networkx
    import numpy
    import scipy
    import sklearn

    out = {
        "numpy": ("NumPy", numpy.__version__, numpy_entries()),
        "scipy": ("SciPy", scipy.__version__, scipy_entries()),
        "sklearn": ("scikit-learn", sklearn.__version__, sklearn_entries()),
        "networkx": ("NetworkX", networkx.__version__, networkx_entries()),
        "python": ("Python", "3", python_entries()),
    }
    for key, (project, version, entries) in out.items():
        n = _write(project, version, entries, HERE / f"{key}.inv")
        print(f"{key}.inv: {n} objects ({project} {version})")


if __name__ == "__main__":
    main()
