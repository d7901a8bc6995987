"""Small Sphinx extension of the algos docs.

* ``.. bound-kind:: theory.module.function`` -- a line stating the kind of a theory function's
  bound, read from the module's ``BOUND_KIND`` (used by the theory function template).
* ``.. bound-kind-table:: theory.module`` -- a table function -> kind -> summary for a module.
* :func:`png_file_scraper` -- a sphinx-gallery image scraper: the open matplotlib figures, or
  when a script closed them after saving, the PNG files it wrote during the block.
* Offline math: MathJax 3 is copied into the built site (``_static/mathjax/``) from the
  ``sphinx-mathjax-offline`` package on PyPI (MathJax 3.2.2, Apache-2.0), so that the pages render
  their formulas with no network; ``mathjax_path`` in ``conf.py`` points there.
"""

from __future__ import annotations

import importlib
import inspect
import shutil
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive
from docutils.statemachine import StringList

KIND_TEXT = {
    "exact": "holds on every instance",
    "high-probability": "holds with probability at least 1 - delta",
    "in expectation": "holds for the expected value",
    "up to constants": "holds up to an unspecified constant factor",
    "asymptotic": "holds in the limit (a rate or a limit value)",
    "calibrated": "a constant is fitted on simulations, not proved",
}


def _kind_of(fullname):
    modname, _, fname = fullname.rpartition(".")
    mod = importlib.import_module(modname)
    kinds = getattr(mod, "BOUND_KIND", {})
    return kinds.get(fname), mod, fname


class BoundKind(Directive):
    required_arguments = 1
    has_content = False

    def run(self):
        kind, _, _ = _kind_of(self.arguments[0])
        if kind is None:
            text = "**Bound kind:** not a bound (a helper or certificate; not listed in ``BOUND_KIND``)."
        else:
            expl = next((v for k, v in KIND_TEXT.items() if str(kind).startswith(k)), "")
            text = f"**Bound kind:** ``{kind}``" + (f" ({expl})." if expl else ".")
        node = nodes.note()
        self.state.nested_parse(StringList([text], source=""), self.content_offset, node)
        return [node]


class BoundKindTable(Directive):
    required_arguments = 1
    has_content = False

    def run(self):
        mod = importlib.import_module(self.arguments[0])
        kinds = getattr(mod, "BOUND_KIND", {})
        rows = [".. list-table::", "   :header-rows: 1", "   :widths: 30 20 50", "",
                "   * - function", "     - kind", "     - statement (summary)"]
        for name, kind in kinds.items():
            obj = getattr(mod, name, None)
            doc = inspect.getdoc(obj) or "" if obj is not None else ""
            summary = doc.strip().split("\n\n")[0].replace("\n", " ") if doc else ""
            ref = f":func:`~{mod.__name__}.{name}`" if obj is not None else f"``{name}``"
            rows += [f"   * - {ref}", f"     - ``{kind}``", f"     - {summary or ' '}"]
        node = nodes.container()
        self.state.nested_parse(StringList(rows, source=""), self.content_offset, node)
        return node.children


_png_state = {}  # example file name -> {png path: mtime} of the PNGs already accounted for


def _png_mtimes(folder):
    return {str(p): p.stat().st_mtime_ns for p in Path(folder).glob("*.png")}


def png_file_scraper(block, block_vars, gallery_conf, **kwargs):
    """Scrape open matplotlib figures; if there are none, the PNG files written by the block."""
    from sphinx_gallery.scrapers import figure_rst, matplotlib_scraper

    rst = matplotlib_scraper(block, block_vars, gallery_conf, **kwargs)
    src = Path(block_vars["src_file"])
    before = _png_state.get(src.name, {})
    now = _png_mtimes(src.parent)
    _png_state[src.name] = now
    if rst.strip():
        return rst
    images = []
    image_path_iterator = block_vars["image_path_iterator"]
    for png, mtime in sorted(now.items()):
        if before.get(png) != mtime:
            dest = Path(next(image_path_iterator))
            shutil.copyfile(png, dest)
            images.append(str(dest))
    return figure_rst(images, gallery_conf["src_dir"])


def example_argv(gallery_conf, script_vars):
    """A sphinx-gallery ``reset_argv`` hook: no command-line arguments (the quick mode comes from
    ``ALGOS_EXAMPLES_QUICK``), and the two module globals a script run by ``python`` has and
    sphinx-gallery leaves out: ``__file__`` (scripts find the shared data folder from it) and
    ``__doc__`` (scripts use its title as their ``argparse`` description)."""
    import ast

    src = Path(script_vars["src_file"])
    g = script_vars.get("example_globals")
    if g is not None:
        g["__file__"] = str(src)
        try:
            g["__doc__"] = ast.get_docstring(ast.parse(src.read_text(encoding="utf-8")), clean=False) or ""
        except SyntaxError:
            pass
    return []


def record_script_start(gallery_conf, fname, when="before"):
    """A sphinx-gallery ``reset_modules`` hook: note the PNGs present before each example runs."""
    if fname is None:
        return
    for d in gallery_conf.get("examples_dirs", []):
        d = Path(d) if Path(d).is_absolute() else Path(gallery_conf["src_dir"]) / d
        for hit in d.rglob(Path(fname).name):
            _png_state[hit.name] = _png_mtimes(hit.parent)


def _patch_autosummary_summary():
    """autosummary cuts a summary at the first ". "; when that falls inside an inline literal
    (``a. b``) the cut text is invalid reST. Keep the whole first paragraph in that case."""
    from sphinx.ext import autosummary

    if getattr(autosummary.extract_summary, "_algos", False):
        return
    original = autosummary.extract_summary

    def extract_summary(doc, document):
        summary = original(doc, document)
        if summary.count("``") % 2 == 0 and summary.count("`") % 2 == 0:
            return summary
        para = []
        for line in doc:
            if not line.strip():
                if para:
                    break
                continue
            para.append(line.strip())
        return " ".join(para)

    extract_summary._algos = True
    autosummary.extract_summary = extract_summary


def format_warning(message, category, filename, lineno, line=None):
    """``warnings.formatwarning`` for the gallery: the file named relative to its package
    (``algos/point_process/vogcam/_vogcam.py:123``), never the build machine's absolute path.

    Parameters
    ----------
    message : Warning or str
        The warning.
    category : type
        Its class.
    filename : str
        The file that issued it.
    lineno : int
        Its line.
    line : str, optional
        Ignored (the source line is not shown).

    Returns
    -------
    str
        One line ``file:line: Category: message``.
    """
    parts = Path(filename).parts
    for anchor in ("algos", "theory", "accel", "examples", "site-packages"):
        if anchor in parts:
            i = len(parts) - 1 - parts[::-1].index(anchor)
            parts = parts[i + (anchor == "site-packages"):]
            break
    else:
        parts = parts[-1:]
    return f"{'/'.join(parts)}:{lineno}: {category.__name__}: {message}\n"


#: the parts of MathJax the site loads: the TeX-to-CommonHTML component, its fonts, the TeX
#: extensions it loads on demand and the menu/accessibility parts its context menu may load
MATHJAX_PARTS = ("tex-chtml.js", "output", "input", "ui", "a11y", "adaptors", "LICENSE")


def mathjax_source():
    """The folder of MathJax 3 files shipped by the ``sphinx-mathjax-offline`` distribution.

    Returns
    -------
    pathlib.Path
        The ``static/mathjax`` folder of that distribution.

    Raises
    ------
    RuntimeError
        If the distribution is not installed (it is part of the ``docs`` extra).
    """
    import importlib.util

    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the docs serve MathJax from the site itself and need the 'sphinx-mathjax-offline' "
            "package: python -m pip install -c constraints.txt -e \".[docs]\"")
    folder = Path(list(spec.submodule_search_locations)[0]) / "static" / "mathjax"
    if not (folder / "tex-chtml.js").is_file():
        raise RuntimeError(f"no tex-chtml.js in {folder}: reinstall sphinx-mathjax-offline")
    return folder


def _copy_mathjax(app, exc):
    if exc is not None or app.builder.format != "html":
        return
    src = mathjax_source()
    dest = Path(app.outdir) / "_static" / "mathjax"
    for part in MATHJAX_PARTS:
        path = src / part
        if path.is_dir():
            shutil.copytree(path, dest / part, dirs_exist_ok=True)
        elif path.is_file():
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest / part)


def _skip_namedtuple_fields(app, what, name, obj, skip, options):
    """Leave out NamedTuple field accessors: each result type documents its fields in its own docstring,
    and autodoc would list every field again as "Alias for field number N"."""
    if type(obj).__name__ == "_tuplegetter":
        return True
    return None


def setup(app):
    _patch_autosummary_summary()
    mathjax_source()  # fail at the start of the build, not after it, when MathJax is missing
    app.connect("build-finished", _copy_mathjax)
    app.connect("autodoc-skip-member", _skip_namedtuple_fields)
    app.add_directive("bound-kind", BoundKind)
    app.add_directive("bound-kind-table", BoundKindTable)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
