"""Write the API reference pages (``docs/api/*.rst``) from the packages' ``__all__``.

Called by ``conf.py`` at every build, so the reference always lists exactly the public names of
``algos.<module>``, ``theory.<module>``, ``accel`` and ``accel.<module>``; autosummary then
generates one page per name in ``docs/api/generated/``. The written files are build products
(ignored by git), except ``docs/api/index.rst``.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

from algos import MODULES  # the seven module names, defined once


def _kind(obj):
    if inspect.isclass(obj):
        return "class"
    if inspect.ismodule(obj):
        return "module"
    if callable(obj):
        return "function"
    return "data"


_HEAD = {"class": "Classes", "function": "Functions", "data": "Constants and tables", "module": "Submodules"}
_TEMPLATE = {"class": "autosummary/class.rst", "function": "autosummary/function.rst",
             "data": "autosummary/data.rst", "module": "autosummary/module.rst"}


def _title(text):
    return f"{text}\n{'=' * len(text)}\n"


def _section(text):
    return f"{text}\n{'-' * len(text)}\n"


def _autosummary(modname, names, kind, theory=False):
    template = "autosummary/theory_function.rst" if (theory and kind == "function") else _TEMPLATE[kind]
    lines = [".. autosummary::", "   :toctree: generated/", "   :nosignatures:", f"   :template: {template}", ""]
    lines += [f"   {n}" for n in names]
    return "\n".join(lines) + "\n"


def _page(modname, intro="", theory=False):
    try:
        mod = importlib.import_module(modname)
    except ImportError as exc:  # an optional dependency (torch) missing: say so, do not fail
        return _title(modname) + f"\n``{modname}`` could not be imported here ({exc}); install the extra it needs.\n"
    names = list(getattr(mod, "__all__", []))
    groups = {}
    for n in names:
        groups.setdefault(_kind(getattr(mod, n)), []).append(n)
    out = [_title(modname), f".. automodule:: {modname}", "   :no-members:", "   :no-index:", ""]
    if intro:
        out += [intro, ""]
    out += [f".. currentmodule:: {modname}", ""]
    if theory and hasattr(mod, "BOUND_KIND"):
        out += [_section("Bound kinds"), f".. bound-kind-table:: {modname}", ""]
    for kind in ("class", "function", "data", "module"):
        if groups.get(kind):
            out += [_section(_HEAD[kind]), _autosummary(modname, groups[kind], kind, theory=theory)]
    return "\n".join(out)


def write_api_pages(api_dir):
    """Write one page per module into ``api_dir``; return the list of page names."""
    api_dir = Path(api_dir)
    api_dir.mkdir(parents=True, exist_ok=True)
    pages = {}
    for m in MODULES:
        pages[f"algos.{m}"] = _page(f"algos.{m}")
        pages[f"theory.{m}"] = _page(
            f"theory.{m}",
            intro=("Each function is one theorem or bound of the paper; its page gives the statement, "
                   "the assumptions, where it comes from and its kind (``BOUND_KIND``)."),
            theory=True,
        )
    pages["algos.datasets"] = _page("algos.datasets")
    pages["algos.experiments"] = _page(
        "algos.experiments",
        intro=("Seeded parameter sweeps and Monte-Carlo runs on local processes or a Dask / Ray cluster "
               "(see :doc:`../scaling`)."),
    )
    pages["accel"] = _page("accel", intro="Array backends: numpy, or torch on CPU/CUDA (optional extra ``gpu``).")
    for m in MODULES:
        pages[f"accel.{m}"] = _page(f"accel.{m}")
    for name, text in pages.items():
        path = api_dir / f"{name}.rst"
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    return list(pages)
