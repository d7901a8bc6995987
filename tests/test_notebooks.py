"""Every teaching script ``examples/**/plot_*.py`` runs as the notebook the gallery offers for download.

The gallery (sphinx-gallery) turns each script into a Jupyter notebook: the module docstring and the
comment blocks that follow ``# %%`` become markdown cells, the code between them code cells. This test
builds the same notebook (with sphinx-gallery's own converter when it is installed, otherwise with
:func:`script_to_notebook`, which splits the cells the same way), executes it with nbclient in a fresh
IPython kernel in quick mode (``ALGOS_EXAMPLES_QUICK=1``), in an empty working directory, and fails on
an error in any cell, on a notebook that shows no figure (no ``image/png`` output) or on a script that
writes no PNG into its working directory. (The scripts run once here; the docs build runs them again
as plain scripts through sphinx-gallery.) The kernel gets
no ``MPLBACKEND``, as a reader's Jupyter would not: a script that forces a headless backend, or that
never calls ``plt.show()``, shows no figure and fails here.
"""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO_ROOT / "examples").glob("**/plot_*.py"))
CELL_TIMEOUT_S = 300  # quick mode is about a minute of CPU per script; generous for loaded CI machines
STARTUP_TIMEOUT_S = 120
_CELL_SEP = re.compile(r"^# ?%%.*$")


def _ids(path):
    return path.relative_to(REPO_ROOT / "examples").as_posix()


def _text_of_comments(lines):
    """Markdown of a block of ``#`` comment lines (the comment marker and one space removed)."""
    return "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#") for line in lines).strip()


def script_to_notebook(path):
    """The notebook of a sphinx-gallery script: docstring and ``# %%`` comment blocks as markdown.

    Parameters
    ----------
    path : path-like
        A gallery script: a module docstring, then cells separated by lines that start with ``# %%``.

    Returns
    -------
    nbformat.NotebookNode
        One markdown cell for the docstring; for each ``# %%`` cell, a markdown cell for its leading
        comment lines (if any) and a code cell for the rest (if not empty).
    """
    source = Path(path).read_text(encoding="utf-8")
    tree = ast.parse(source)
    cells = []
    body_start = 0
    if tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(getattr(tree.body[0], "value", None),
                                                                     ast.Constant):
        cells.append(nbformat.v4.new_markdown_cell(ast.get_docstring(tree, clean=True)))
        body_start = tree.body[0].end_lineno
    lines = source.splitlines()[body_start:]
    blocks, current = [], []
    for line in lines:
        if _CELL_SEP.match(line):
            blocks.append(current)
            current = []
        else:
            current.append(line)
    blocks.append(current)
    for block in blocks:
        k = 0
        while k < len(block) and block[k].startswith("#"):
            k += 1
        text, code = _text_of_comments(block[:k]), "\n".join(block[k:]).strip("\n")
        if text:
            cells.append(nbformat.v4.new_markdown_cell(text))
        if code.strip():
            cells.append(nbformat.v4.new_code_cell(code))
    return nbformat.v4.new_notebook(cells=cells)


def gallery_notebook(path):
    """The notebook sphinx-gallery writes for ``path`` (its own converter), or None without sphinx-gallery."""
    try:
        from sphinx_gallery.gen_gallery import DEFAULT_GALLERY_CONF
        from sphinx_gallery.notebook import jupyter_notebook
        from sphinx_gallery.py_source_parser import split_code_and_text_blocks
    except ImportError:
        return None
    _, blocks = split_code_and_text_blocks(str(path))[:2]
    content = jupyter_notebook(blocks, dict(DEFAULT_GALLERY_CONF), Path(path).parent)
    return nbformat.reads(json.dumps(content), as_version=4)  # as the downloaded .ipynb file reads


def _code_cells(nb):
    return [c["source"].strip() for c in nb["cells"] if c["cell_type"] == "code"]


def _has_image(nb):
    return any("image/png" in out.get("data", {})
               for cell in nb["cells"] if cell["cell_type"] == "code" for out in cell.get("outputs", ()))


def _kernel_env():
    env = dict(os.environ)
    env["ALGOS_EXAMPLES_QUICK"] = "1"
    env.pop("MPLBACKEND", None)  # the kernel's own inline backend, as in a reader's Jupyter
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


@pytest.mark.skipif(not EXAMPLES, reason="no examples/**/plot_*.py found")
@pytest.mark.parametrize("script", EXAMPLES, ids=_ids)
def test_example_runs_as_notebook(script, tmp_path):
    nb = gallery_notebook(script) or script_to_notebook(script)
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, startup_timeout=STARTUP_TIMEOUT_S,
                                     kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute(env=_kernel_env())
    except nbclient.exceptions.CellExecutionError as exc:
        pytest.fail(f"{_ids(script)} fails as a notebook:\n{str(exc)[-4000:]}")
    assert _has_image(nb), (f"{_ids(script)} runs as a notebook but shows no figure (no image/png output): "
                            "does it force a backend with matplotlib.use, or never call plt.show()?")
    # what a reader who runs the script gets: its figure saved as a PNG in the working directory
    pngs = sorted(tmp_path.rglob("*.png"))
    assert pngs, f"{_ids(script)} wrote no PNG into its working directory {tmp_path}."
    assert all(p.stat().st_size > 0 for p in pngs), f"{_ids(script)} wrote an empty PNG: {pngs}."


def test_converter_matches_sphinx_gallery():
    """The fallback converter splits the code exactly as sphinx-gallery does, on every example."""
    pytest.importorskip("sphinx_gallery")
    for script in EXAMPLES:
        assert _code_cells(script_to_notebook(script)) == _code_cells(gallery_notebook(script)), _ids(script)


def test_image_check_sees_a_missing_figure(tmp_path):
    """A script that forces Agg and never shows its figure runs, but fails the figure check."""
    script = tmp_path / "plot_headless.py"
    script.write_text('"""\nHeadless\n========\n\nA figure nobody sees.\n"""\n\n# %%\n'
                      'import matplotlib\n\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt\n\n'
                      'plt.plot([0, 1])\nplt.savefig("x.png")\n', encoding="utf-8")
    nb = script_to_notebook(script)
    nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, startup_timeout=STARTUP_TIMEOUT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute(env=_kernel_env())
    assert (tmp_path / "x.png").exists()
    assert not _has_image(nb)
    script.write_text(script.read_text(encoding="utf-8").replace('matplotlib.use("Agg")\n', "")
                      + "plt.show()\n", encoding="utf-8")
    nb = script_to_notebook(script)
    nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, startup_timeout=STARTUP_TIMEOUT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute(env=_kernel_env())
    assert _has_image(nb)
