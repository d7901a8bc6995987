"""Sphinx configuration of the algos documentation site.

Build (from the repository root; no network needed)::

    python -m pip install -c constraints.txt -e ".[docs]"
    python -m sphinx -W --keep-going -b html docs docs/_build/html

The gallery runs ``examples/**/plot_*.py`` in quick mode (``ALGOS_EXAMPLES_QUICK=1``); set
``ALGOS_DOCS_FULL=1`` for the full-size examples, or ``ALGOS_DOCS_PLOT_GALLERY=0`` to skip running
them (the pages are then built from the scripts' text only).

Intersphinx links to numpy, scipy, scikit-learn and networkx are resolved from the inventories
shipped in ``docs/_intersphinx/`` (regenerate them with ``python docs/_intersphinx/make_inventories.py``);
``ALGOS_DOCS_INTERSPHINX=online`` tries the projects' published inventories first and falls back to
the shipped ones.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS))

os.environ.setdefault("MPLBACKEND", "Agg")
if os.environ.get("ALGOS_DOCS_FULL", "0") in ("", "0"):
    os.environ["ALGOS_EXAMPLES_QUICK"] = "1"
os.environ.setdefault("ALGOS_SHARED_DATA", str(ROOT.parent / "shared" / "data"))

import _apigen  # noqa: E402  (docs/_apigen.py: writes the API reference pages)

import algos  # noqa: E402

# -- project -------------------------------------------------------------------------------------
project = "algos"
author = "the algos developers"
copyright = "2026, the algos developers"
release = getattr(algos, "__version__", "0")
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "_algos_ext",  # docs/_algos_ext.py: the bound-kind directive
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "_intersphinx", "**.ipynb_checkpoints", "auto_examples/**/*.ipynb",
                    "auto_examples/**/*.py", "auto_examples/**/*.zip", "auto_examples/**/*.json",
                    "auto_examples/**/*.md5"]
# module pages start below a level-1 title; the gallery conf holds functions
suppress_warnings = ["myst.header", "config.cache"]

# -- autodoc / autosummary / numpydoc --------------------------------------------------------------
_apigen.write_api_pages(DOCS / "api")
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": False}
autodoc_typehints = "none"
autodoc_inherit_docstrings = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
import conf_checks  # noqa: E402  (docs/conf_checks.py: shared with tests/test_docstrings.py)

numpydoc_validation_checks = set(conf_checks.CHECKS)  # a failing check is a warning, an error under -W
numpydoc_validation_exclude = set(conf_checks.EXCLUDE)

# -- myst ------------------------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_dmath_double_inline = True
myst_heading_anchors = 3

# -- intersphinx (offline by default) ----------------------------------------------------------------
_INV = DOCS / "_intersphinx"
_SITES = {
    "python": "https://docs.python.org/3/",
    "numpy": "https://numpy.org/doc/stable/",
    "scipy": "https://docs.scipy.org/doc/scipy/",
    "sklearn": "https://scikit-learn.org/stable/",
    "networkx": "https://networkx.org/documentation/stable/",
}
_online = os.environ.get("ALGOS_DOCS_INTERSPHINX", "offline") == "online"
intersphinx_mapping = {
    name: (url, ((None, str(_INV / f"{name}.inv")) if _online else str(_INV / f"{name}.inv")))
    for name, url in _SITES.items()
    if (_INV / f"{name}.inv").is_file()
}
intersphinx_timeout = 5

# -- sphinx-gallery ----------------------------------------------------------------------------------
import warnings  # noqa: E402

from _algos_ext import example_argv, format_warning, png_file_scraper, record_script_start  # noqa: E402

# warnings printed by the gallery's scripts name files relative to their package, not this machine
warnings.formatwarning = format_warning

sphinx_gallery_conf = {
    "examples_dirs": [str(ROOT / "examples")],
    "gallery_dirs": ["auto_examples"],
    "filename_pattern": os.environ.get("ALGOS_DOCS_GALLERY_PATTERN", r"/plot_"),
    "ignore_pattern": r"(__init__|_quick)\.py",
    "within_subsection_order": "FileNameSortKey",
    "plot_gallery": os.environ.get("ALGOS_DOCS_PLOT_GALLERY", "1") not in ("0", "false", "False"),
    "image_scrapers": (png_file_scraper,),
    "reset_modules": ("matplotlib", record_script_start),
    "reset_argv": example_argv,
    "download_all_examples": True,
    "backreferences_dir": "api/generated/backreferences",
    "doc_module": ("algos", "theory"),
    "remove_config_comments": True,
    "show_memory": False,
    "show_signature": False,
    "min_reported_time": 1,
    "only_warn_on_example_error": False,
    "abort_on_example_error": False,
    "capture_repr": ("_repr_html_",),
    "matplotlib_animations": False,
    "default_thumb_file": str(DOCS / "_static" / "thumb.png"),
}

# -- HTML --------------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"algos {release}"
html_static_path = ["_static"]
html_css_files = ["algos.css"]
html_show_sourcelink = False
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 5,
    "navbar_end": ["theme-switcher", "navbar-icon-links"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    "secondary_sidebar_items": ["page-toc"],
}
html_context = {"default_mode": "light"}
# MathJax 3 is served from the built site itself (docs/_algos_ext.py copies it from the
# sphinx-mathjax-offline package into _static/mathjax): building and reading need no network.
mathjax_path = "mathjax/tex-chtml.js"
mathjax3_config = {"tex": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]]}}
