"""Cheap checks of the documentation sources (the full ``sphinx -W`` build runs in CI's docs step).

* the API pages written by ``docs/_apigen.py`` list every public name of ``algos.<module>``,
  ``theory.<module>`` and ``accel`` (and nothing private);
* every theory module has a ``BOUND_KIND`` whose keys are public functions of the module;
* the offline intersphinx inventories parse and hold the objects the docstrings refer to;
* every gallery folder has its header, and every ``docs/<module>.md`` page is in a toctree.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
DOCS = REPO_ROOT / "docs"
sys.path.insert(0, str(DOCS))

import _apigen  # noqa: E402

MODULES = _apigen.MODULES


def test_api_pages_list_every_public_name(tmp_path):
    pages = _apigen.write_api_pages(tmp_path)
    for pkg in ("algos", "theory", "accel"):
        for m in MODULES:
            assert f"{pkg}.{m}" in pages
    assert "accel" in pages
    for name in pages:
        try:
            mod = importlib.import_module(name)
        except ImportError:  # an optional extra missing: the page says so
            continue
        text = (tmp_path / f"{name}.rst").read_text()
        listed = re.findall(r"^   (\w+)$", text, flags=re.M)
        assert sorted(listed) == sorted(mod.__all__), f"{name}: API page and __all__ differ"
        if name.startswith("theory."):
            assert f".. bound-kind-table:: {name}" in text
            assert "autosummary/theory_function.rst" in text


@pytest.mark.parametrize("m", MODULES)
def test_bound_kind_names_public_functions(m):
    mod = importlib.import_module(f"theory.{m}")
    assert isinstance(mod.BOUND_KIND, dict) and mod.BOUND_KIND
    for fname in mod.BOUND_KIND:
        assert fname in mod.__all__ and callable(getattr(mod, fname)), f"theory.{m}.{fname}"


def test_offline_inventories_parse():
    from sphinx.util.inventory import InventoryFile

    wanted = {"numpy": "numpy.ndarray", "scipy": "scipy.linalg.cholesky",
              "sklearn": "sklearn.base.BaseEstimator", "networkx": "networkx.DiGraph"}
    for proj, obj in wanted.items():
        path = DOCS / "_intersphinx" / f"{proj}.inv"
        with open(path, "rb") as f:
            inv = InventoryFile.load(f, "https://example.org/", lambda base, uri: base + uri)
        data = inv.data if hasattr(inv, "data") else inv
        names = {n for role in data.values() for n in role}
        assert obj in names, f"{obj} missing from {path.name}"


def test_gallery_headers_and_toctrees():
    examples = REPO_ROOT / "examples"
    assert (examples / "README.rst").is_file()
    for d in sorted(p for p in examples.iterdir() if p.is_dir() and list(p.glob("plot_*.py"))):
        assert (d / "README.rst").is_file() or (d / "README.txt").is_file(), f"{d} has no gallery header"
    modules_page = (DOCS / "modules.md").read_text()
    for m in MODULES:
        assert (DOCS / f"{m}.md").is_file()
        assert re.search(rf"^{m}$", modules_page, flags=re.M), f"docs/{m}.md is not in the modules toctree"


def test_gallery_png_scraper_takes_only_the_files_of_its_example(tmp_path, monkeypatch):
    """A script that saves a PNG and closes its figure still gets it in the gallery, and never the
    PNG that the example before it wrote in the same folder."""
    import _algos_ext
    import sphinx_gallery.scrapers as scrapers

    monkeypatch.setattr(scrapers, "matplotlib_scraper", lambda *a, **k: "")
    monkeypatch.setattr(scrapers, "figure_rst", lambda images, src_dir: images)
    src = tmp_path / "examples" / "mod"
    src.mkdir(parents=True)
    (src / "plot_a.py").write_text("")
    (src / "plot_b.py").write_text("")
    conf = {"examples_dirs": [str(tmp_path / "examples")], "src_dir": str(tmp_path)}
    out = iter(str(tmp_path / f"img_{i}.png") for i in range(10))

    def block_vars(name):
        return {"src_file": str(src / name), "image_path_iterator": out}

    _algos_ext.record_script_start(conf, "plot_a.py")
    (src / "a.png").write_bytes(b"a")
    got_a = _algos_ext.png_file_scraper(None, block_vars("plot_a.py"), conf)
    _algos_ext.record_script_start(conf, "plot_b.py")
    first_block_b = _algos_ext.png_file_scraper(None, block_vars("plot_b.py"), conf)
    (src / "b.png").write_bytes(b"b")
    got_b = _algos_ext.png_file_scraper(None, block_vars("plot_b.py"), conf)
    assert [Path(p).read_bytes() for p in got_a] == [b"a"]
    assert first_block_b == []
    assert [Path(p).read_bytes() for p in got_b] == [b"b"]


def test_gallery_warnings_name_no_machine_path():
    """A warning printed by a gallery script names its file relative to the package it lives in."""
    import warnings

    import _algos_ext

    root = str(REPO_ROOT)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("shown in a gallery page", UserWarning)
    line = _algos_ext.format_warning(caught[0].message, caught[0].category, caught[0].filename,
                                     caught[0].lineno)
    assert root not in line and line.startswith("test_docs_build.py:")
    assert line.endswith("UserWarning: shown in a gallery page\n")
    inner = _algos_ext.format_warning("m", RuntimeWarning, f"{root}/algos/point_process/vogcam/_vogcam.py", 7)
    assert inner == "algos/point_process/vogcam/_vogcam.py:7: RuntimeWarning: m\n"
    lib = _algos_ext.format_warning("m", RuntimeWarning, "/x/lib/python3.11/site-packages/numpy/a.py", 2)
    assert lib == "numpy/a.py:2: RuntimeWarning: m\n"


def test_mathjax_is_served_from_the_site():
    """conf.py points MathJax at the site's own copy, and that copy (from the docs extra) exists."""
    import _algos_ext

    conf = (DOCS / "conf.py").read_text()
    assert re.search(r'^mathjax_path = "mathjax/tex-chtml\.js"$', conf, re.M)
    assert "cdn" not in conf.split("mathjax_path")[1].split("\n")[0].lower()
    pytest.importorskip("sphinx", reason="the docs extra is not installed")
    src = _algos_ext.mathjax_source()
    assert (src / "tex-chtml.js").stat().st_size > 100_000
    assert any((src / "output" / "chtml" / "fonts").rglob("*.woff"))
