"""The demo report: ``report.md`` renders as valid GitHub-flavoured tables with working anchors,
numbers in ``%.4g``, kinds, tightness and vacuity; ``report.html`` is one self-contained page.

The Markdown tables are parsed twice: by an independent GFM row splitter written here (always), and
by ``markdown-it-py``'s GFM table rule when it is installed (the ``docs`` extra), so a cell that breaks
the table in a real renderer fails the test.
"""

from __future__ import annotations

import ast
import base64
import builtins
import datetime as dt
import json
import math
import re
import sys
import types
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import algos
from algos import _report
from algos._report import Check, DemoSection, fmt, github_anchor, md_cell, render_html, render_markdown, write_report

# a 1x1 transparent PNG
PNG_1PX = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
FIXED = dict(command="algos demo --quick", date=dt.datetime(2026, 1, 2, 3, 4, tzinfo=dt.timezone.utc),
             versions={"python": "3.11.0", "numpy": "2.0"}, total_seconds=12.5)


def _sections():
    """Sections whose names and sources contain every character that used to break the report."""
    a = DemoSection(
        module="alpha",
        title="Alpha: a test (with commas, parentheses)",
        body="Some text with `code` and a table:\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n* item one\n* item two",
        checks=[
            Check("T1 |x| <= 1, gamma=0.5", 0.5, 1.0, relation="<=", source="Thm 1 [C] | eq. (3)"),
            Check("tiny values", 1.2e-13, 3.0e-13, relation="<=", kind="sanity"),
            Check("lower bound", 0.9, 0.6, source="[R]"),
            Check("target", 0.4, 0.5, kind="target", source="docs page"),
            Check("vacuous one", 0.3, 2.0, relation="<=", trivial=1.0, source="T2 [D]"),
            Check("newline\nin name", float("nan"), 1.0),
        ],
        figures=["alpha.png"],
        seconds=1.25,
    )
    b = DemoSection(module="beta", title="Beta, the second", body="Plain.", seconds=0.5,
                    checks=[Check(r"back\slash | pipe \| escaped", 2.0, 1.0)])
    c = DemoSection(module="gamma", title="gamma (section failed)", body="",
                    error="ValueError: 'x' must be positive; got -1.")
    d = DemoSection(module="delta", title="Alpha: a test (with commas, parentheses)", body="Same title.",
                    checks=[Check("ok", 1.0, 1.0)])
    return [a, b, c, d]


def _n_checks(sections):
    return sum(len(s.checks) for s in sections)


# -------------------------------------------------------------------------------------------------
# an independent GFM table reader


def _split_gfm_row(line):
    """Cells of one GFM table row: an unescaped ``|`` separates cells; ``\\|`` is a literal pipe."""
    s = line.strip()
    assert s.startswith("|") and s.endswith("|"), f"table row must start and end with '|': {line!r}"
    cells, cur, i = [], "", 1
    while i < len(s) - 1:
        if s[i] == "\\" and s[i + 1] in "|\\":
            cur += s[i:i + 2]
            i += 2
            continue
        if s[i] == "|":
            cells.append(cur)
            cur = ""
        else:
            cur += s[i]
        i += 1
    cells.append(cur)
    # the last character is the closing pipe only if it was not escaped
    return [c.strip() for c in cells]


def _tables(md):
    """Every pipe table of a Markdown text as (header cells, list of row cells)."""
    lines = md.splitlines()
    out = []
    for i in range(len(lines) - 1):
        if lines[i].startswith("|") and re.fullmatch(r"\|(\s*:?-{3,}:?\s*\|)+", lines[i + 1].strip()):
            head = _split_gfm_row(lines[i])
            rows = []
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                rows.append(_split_gfm_row(lines[j]))
                j += 1
            out.append((head, rows))
    return out


def test_markdown_tables_have_consistent_cell_counts():
    md = render_markdown(_sections(), **FIXED)
    tables = _tables(md)
    # summary + alpha body table + the check tables of alpha, beta and delta
    assert len(tables) == 5, md
    for head, rows in tables:
        for r in rows:
            assert len(r) == len(head), f"row {r} has {len(r)} cells, header {len(head)}"
    check_rows = [r for head, rows in tables if head[0] == "check" for r in rows]
    assert len(check_rows) == _n_checks(_sections())
    assert any(r[0] == r"T1 \|x\| <= 1, gamma=0.5" for r in check_rows)
    assert any("in name" in r[0] and "newline" in r[0] for r in check_rows)


def test_markdown_tables_in_a_real_gfm_renderer():
    markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py (docs extra) not installed")
    md = render_markdown(_sections(), **FIXED)
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(md)
    tables = re.findall(r"<table>(.*?)</table>", html, flags=re.S)
    assert len(tables) == 5
    for t in tables:
        n_head = len(re.findall(r"<th[ >]", t))
        for row in re.findall(r"<tbody>.*?</tbody>", t, flags=re.S)[0].split("</tr>")[:-1]:
            assert len(re.findall(r"<td[ >]", row)) == n_head, row
    assert "T1 |x| &lt;= 1, gamma=0.5" in html  # the escaped pipe renders as a literal one
    assert r"back\slash | pipe \| escaped" in html


def test_github_anchors_match_the_headings():
    secs = _sections()
    md = render_markdown(secs, **FIXED)
    assert github_anchor("Federated personalisation by model merging (Potara)") == \
        "federated-personalisation-by-model-merging-potara"
    assert github_anchor("Heteroskedastic regression, subset of signals") == \
        "heteroskedastic-regression-subset-of-signals"
    assert github_anchor("Class-incremental learning with reservoir features (CIRCLE)") == \
        "class-incremental-learning-with-reservoir-features-circle"
    links = re.findall(r"\]\(#([^)]+)\)", md)
    assert links == ["alpha-a-test-with-commas-parentheses", "beta-the-second", "gamma-section-failed",
                     "alpha-a-test-with-commas-parentheses-1"]
    # every link targets a heading of the document, with GitHub's de-duplication
    seen = {}
    anchors = [github_anchor(h, seen) for h in re.findall(r"^#{1,6} (.+)$", md, flags=re.M)]
    assert set(links) <= set(anchors)


def test_number_formatting():
    assert fmt(1.2e-13) == "1.2e-13"
    assert fmt(0.123456789) == "0.1235"
    assert fmt(12345678.0) == "1.235e+07"
    assert fmt(0.0) == "0" and fmt(float("nan")) == "nan" and fmt(float("inf")) == "inf" and fmt(None) == "n/a"
    md = render_markdown(_sections(), **FIXED)
    assert "| 1.2e-13 | <= 3e-13 |" in md
    assert "0.0000" not in md


def test_kind_tightness_vacuous_and_summary_counts():
    md = render_markdown(_sections(), **FIXED)
    rows = {r[0]: r for head, rows in _tables(md) if head[0] == "check" for r in rows}
    head = next(h for h, _ in _tables(md) if h[0] == "check")
    assert head == ["check", "kind", "measured", "bound", "tightness", "status", "source"]
    assert rows["tiny values"][1] == "sanity" and rows["target"][1] == "target"
    assert rows["T1 \\|x\\| <= 1, gamma=0.5"][4] == "0.5"          # 0.5 / 1.0
    assert rows["lower bound"][4] == "0.667"                       # 0.6 / 0.9
    assert rows["vacuous one"][5] == "vacuous"
    assert rows["target"][5] == "**FAIL**"
    assert rows["newline in name"][4] == "n/a" and rows["newline in name"][5] == "**FAIL**"
    summary_head, summary = _tables(md)[0]
    assert summary_head[:5] == ["module", "theorems hold", "targets met", "sanity checks pass", "vacuous"]
    alpha = summary[0]
    # theorems: T1, lower bound, vacuous one (hold), NaN one (fails) -> 3/4, one of them vacuous
    # (a row of vacuous theorems must not read as strong as one of informative ones); target 0/1;
    # sanity 1/1
    assert alpha[1:5] == ["3/4 (1 vacuous)", "0/1", "1/1", "1"]
    assert summary[2][5].startswith("**NO**")  # the failed section


def test_header_and_legend():
    md = render_markdown(_sections(), header="seed 0; quick mode.", **FIXED)
    head = md.split("## Summary")[0]
    assert "`algos demo --quick`" in head
    assert "2026-01-02 03:04 UTC" in head
    assert "python 3.11.0, numpy 2.0" in head
    assert "12.5 s" in head and "seed 0; quick mode." in head
    for tag in ("[C]", "[R]", "[D]", "[V]"):
        assert tag in md.split("| module |")[0], tag
    # defaults: versions and date are filled in, time is the sum of the sections
    md = render_markdown(_sections())
    assert "numpy" in md and "UTC" in md and "1.8 s" in md.split("## Summary")[0]


def test_check_status_and_validation():
    assert Check("a", 0.3, 2.0, relation="<=", trivial=1.0).status == "vacuous"
    assert Check("a", 0.3, 0.5, relation="<=", trivial=1.0).status == "pass"
    assert Check("a", 0.9, 0.5, relation="<=", trivial=1.0).status == "fail"
    assert Check("a", 0.5, 0.0, relation=">=", trivial=0.0).vacuous
    assert math.isclose(Check("a", 0.8, 0.4).tightness, 0.5)
    assert Check("a", 1.0, 0.0, relation="<=").tightness is None
    with pytest.raises(ValueError, match="'kind' must be one of"):
        Check("a", 1, 1, kind="bound")
    with pytest.raises(ValueError, match="'relation' must be one of"):
        Check("a", 1, 1, relation="<")


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.ids, self.imgs, self.links, self.stack, self.rows = [], [], [], [], [], []
        self.scripts = 0
        self._in_summary = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "img":
            self.imgs.append(a.get("src", ""))
        if tag in ("link", "script"):
            self.scripts += 1
        if tag == "a" and a.get("href", "").startswith("#"):
            self.links.append(a["href"][1:])
        if tag == "table":
            self._in_summary = a.get("id") == "check-summary"
        if tag == "tr" and self._in_summary and "check-row" in a.get("class", ""):
            self.rows.append([])
        if tag == "td" and self._in_summary and self.rows:
            self.rows[-1].append("")

    def handle_endtag(self, tag):
        if tag == "table":
            self._in_summary = False

    def handle_data(self, data):
        if self._in_summary and self.rows and self.rows[-1]:
            self.rows[-1][-1] += data


def test_html_report_is_self_contained(tmp_path):
    secs = _sections()
    (tmp_path / "alpha.png").write_bytes(PNG_1PX)
    path = write_report(secs, tmp_path, header="seed 0", **FIXED)
    assert path == tmp_path / "report.md" and path.is_file()
    text = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "http://" not in text and "https://" not in text  # nothing to fetch
    p = _Page()
    p.feed(text)
    assert p.scripts == 0
    assert p.imgs and all(src.startswith("data:image/png;base64,") for src in p.imgs)
    assert base64.b64decode(p.imgs[0].split(",", 1)[1]) == PNG_1PX
    assert len(p.rows) == _n_checks(secs)
    assert all(len(r) == 7 for r in p.rows)
    assert [r[0].strip() for r in p.rows].count("alpha") == len(secs[0].checks)
    statuses = [r[6].strip() for r in p.rows]
    assert statuses.count("vacuous") == 1 and statuses.count("fail") == 2
    assert set(p.links) <= set(p.ids), set(p.links) - set(p.ids)
    assert len(p.ids) == len(set(p.ids)), "duplicate ids"
    assert 'name="viewport"' in text and "@media (max-width: 640px)" in text
    assert "&lt;= 1, gamma=0.5" in text and "ValueError: &#x27;x&#x27; must be positive" in text
    assert "algos demo --quick" in text and "2026-01-02 03:04 UTC" in text


def test_html_missing_figure_is_reported_not_broken(tmp_path):
    secs = _sections()  # alpha.png is not written
    text = render_html(secs, tmp_path, **FIXED)
    assert "<img" not in text
    assert "Figure alpha.png: not found." in text


def test_html_body_without_markdown_it(monkeypatch):
    real_import = builtins.__import__

    def no_markdown_it(name, *args, **kwargs):
        if name.startswith("markdown_it"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_markdown_it)
    html = _report.markdown_to_html("Text with `a|b` and **bold**.\n\n| a | b |\n|---|---|\n| 1 \\| 2 | 3 |\n\n"
                                    "* one\n* two <script>")
    assert "<code>a|b</code>" in html and "<strong>bold</strong>" in html
    assert "<td>1 | 2</td><td>3</td>" in html
    assert "<li>two &lt;script&gt;</li>" in html


def test_md_cell_escaping():
    assert md_cell("a|b") == r"a\|b"
    assert md_cell("a\nb") == "a b"
    assert md_cell("x\\|y") == r"x\\\|y"


# -------------------------------------------------------------------------------------------------
# the demos' checks, read from their source (no demo is run): sources a user can follow, a trivial
# bound stated for every bound check, no TeX in the text of the report

DEMO_FILES = sorted(Path(algos.__file__).parent.glob("*/_demo.py"))
CHECK_FIELDS = ("name", "measured", "guarantee", "relation", "tol", "source", "passed", "kind", "trivial")
INTERNAL = re.compile(r"\b(spec|specs|specification|issue|issues)\b", re.I)


def _module_constants(tree):
    """Module-level ``NAME = <literal>`` assignments (used inside f-strings such as sources)."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    return out


def _text(node, consts):
    """The text of a string expression: constants, f-strings (module constants filled in, other
    fields as ``{}``) and ``+`` / implicit concatenations; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            elif isinstance(v.value, ast.Name) and v.value.id in consts:
                parts.append(str(consts[v.value.id]))
            else:
                parts.append("{}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = _text(node.left, consts), _text(node.right, consts)
        return None if a is None or b is None else a + b
    if isinstance(node, ast.IfExp):
        a, b = _text(node.body, consts), _text(node.orelse, consts)
        return None if a is None or b is None else a + " | " + b
    return None


def _check_calls(tree):
    """Every ``Check(...)`` call of a module as a dict field -> AST node (positional or keyword)."""
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Check":
            args = dict(zip(CHECK_FIELDS, node.args))
            args.update({k.arg: k.value for k in node.keywords})
            calls.append((node.lineno, args))
    return calls


def _demo_tree(path):
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def test_every_module_has_a_demo_with_checks():
    assert {p.parent.name for p in DEMO_FILES} == set(algos.MODULES)
    for path in DEMO_FILES:
        assert _check_calls(_demo_tree(path)), path


@pytest.mark.parametrize("path", DEMO_FILES, ids=lambda p: p.parent.name)
def test_demo_check_sources_cite_a_paper_or_a_docs_page(path):
    """Every check names a source a user can follow (a paper with its year, a docs page and section,
    a ``theory`` function, or an identity), and no text of the demo cites internal documents."""
    tree = _demo_tree(path)
    consts = _module_constants(tree)
    for lineno, args in _check_calls(tree):
        assert "source" in args, f"{path.name}:{lineno}: Check without a source"
        source = _text(args["source"], consts)
        assert source is not None, f"{path.name}:{lineno}: the source is not a string expression"
        assert source.strip(), f"{path.name}:{lineno}: empty source"
        assert re.search(r"docs/\w+\.md|\b(19|20)\d\d\b|theory\.\w+|identity", source), \
            f"{path.name}:{lineno}: source {source!r} names no paper, docs page, theory function or identity"
        for ref in re.findall(r"docs/(\w+)\.md", source):
            assert (Path(algos.__file__).parents[1] / "docs" / f"{ref}.md").is_file(), (lineno, ref)
    # every string of the module: check names, sources, the section text and the docstrings
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            assert not INTERNAL.search(node.value), f"{path.name}:{node.lineno}: {node.value!r}"


@pytest.mark.parametrize("path", DEMO_FILES, ids=lambda p: p.parent.name)
def test_demo_bound_checks_state_their_trivial_bound(path):
    """A theorem or target check passes ``trivial=`` (``None`` where the problem has no trivial bound),
    so the report can flag a bound that says nothing; sanity checks (identities) need none."""
    tree = _demo_tree(path)
    consts = _module_constants(tree)
    for lineno, args in _check_calls(tree):
        kind = ast.literal_eval(args["kind"]) if "kind" in args else "theorem"
        assert kind in _report.KINDS, (path.name, lineno, kind)
        if kind != "sanity":
            name = _text(args["name"], consts)
            assert "trivial" in args, f"{path.name}:{lineno}: {kind} check {name!r} states no trivial bound"


@pytest.mark.parametrize("path", DEMO_FILES, ids=lambda p: p.parent.name)
def test_demo_text_has_no_tex(path):
    """report.html loads no MathJax (it works offline), so the text it shows is plain: no ``$...$`` and
    no TeX commands outside the matplotlib figures (``_figure``), which render their own math."""
    tree = _demo_tree(path)
    in_figure = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("_figure"):
            in_figure |= {id(n) for n in ast.walk(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in in_figure:
            assert not re.search(r"\$[^$\n]+\$|\\[a-zA-Z]+\{|\\(gamma|alpha|lambda|sigma|beta|sqrt|frac)\b",
                                 node.value), f"{path.name}:{node.lineno}: {node.value!r}"


# -------------------------------------------------------------------------------------------------
# a failed section shows its error; the JSON summary has kind, tightness and vacuity per check


def test_failed_section_error_is_rendered_even_when_the_body_repeats_it(tmp_path):
    err = "RuntimeError: kernel `x` exploded\nsecond line"
    secs = [DemoSection("gamma", "gamma (section failed)", body="It said RuntimeError: kernel `x` exploded.",
                        error=err),
            DemoSection("beta", "Beta", checks=[Check("ok", 1.0, 0.5)])]
    md = render_markdown(secs, **FIXED)
    gamma = md.split("## gamma (section failed)")[1].split("## Beta")[0]
    assert "**Section failed:** ``RuntimeError: kernel `x` exploded second line``" in gamma
    assert "- **failed sections**: gamma (RuntimeError)" in md
    assert "**NO** (error)" in md
    html = render_html(secs, tmp_path, **FIXED)
    section = html.split('id="section-gamma"')[1].split("</section>")[0]
    assert '<p class="error section-error"><strong>Section failed:</strong> ' \
           "<code>RuntimeError: kernel `x` exploded second line</code></p>" in section
    assert "<dt>failed sections</dt><dd>gamma (RuntimeError)</dd>" in html
    markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py (docs extra) not installed")
    rendered = markdown_it.MarkdownIt("commonmark").render(gamma)
    assert "<code>RuntimeError: kernel `x` exploded second line</code>" in rendered
    # a section without an error has no such line
    assert "Section failed" not in md.split("## Beta")[1] and "section-error" not in html.split('id="section-beta"')[1]


def test_legend_cites_no_internal_documents_and_says_the_page_is_offline(tmp_path):
    md = render_markdown(_sections(), **FIXED)
    html = render_html(_sections(), tmp_path, **FIXED)
    for text in (md.split("| module |")[0], html.split('<div class="legend">')[1].split("</div>")[0]):
        assert not INTERNAL.search(text), text
        assert "docs/&lt;module&gt;.md" in text or "docs/<module>.md" in text
    assert "works offline" in html and "<script" not in html


def test_check_to_dict_has_kind_tightness_and_vacuity():
    c = Check("a", np.float64(0.3), 2.0, relation="<=", trivial=np.float64(1.0), kind="target", source="s")
    d = c.to_dict()
    assert d == {"name": "a", "kind": "target", "measured": 0.3, "guarantee": 2.0, "relation": "<=", "tol": 0.0,
                 "trivial": 1.0, "tightness": 0.15, "vacuous": True, "passed": True, "status": "vacuous",
                 "source": "s"}
    assert all(type(d[k]) is float for k in ("measured", "guarantee", "trivial"))
    json.dumps(d)
    assert Check("b", 1, 0.5).to_dict()["tightness"] == 0.5 and Check("b", 1, 0.5).to_dict()["trivial"] is None


def test_demo_json_has_kind_tightness_and_vacuous_per_check(tmp_path, monkeypatch, capsys):
    from algos.cli import main

    checks = [Check("holds", 0.5, 1.0, relation="<=", kind="theorem", source="docs/pomdp.md", trivial=2.0),
              Check("vacuous", 0.5, 3.0, relation="<=", kind="theorem", trivial=2.0),
              Check("target", 0.4, 0.5, kind="target"),
              Check("identity", 1e-13, 1e-12, relation="<=", kind="sanity")]

    def fake(out_dir, quick=False, random_state=0):
        return DemoSection("pomdp", "P", checks=checks)

    def boom(out_dir, quick=False, random_state=0):
        raise ValueError("bad\ninput")

    for module, run in (("pomdp", fake), ("continual", boom)):
        mod = types.ModuleType(f"algos.{module}._demo")
        mod.run_demo = run
        monkeypatch.setitem(sys.modules, f"algos.{module}._demo", mod)
    assert main(["demo", "--out", str(tmp_path), "--modules", "pomdp,continual", "--json"]) == 1
    summary = json.loads(capsys.readouterr().out)
    secs = {s["module"]: s for s in summary["sections"]}
    got = {c["name"]: c for c in secs["pomdp"]["checks"]}
    assert list(got) == [c.name for c in checks]
    for c in checks:
        g = got[c.name]
        assert (g["kind"], g["tightness"], g["vacuous"], g["status"], g["passed"], g["trivial"], g["source"]) == \
            (c.kind, c.tightness, c.vacuous, c.status, c.passed, c.trivial, c.source)
    assert got["vacuous"]["vacuous"] is True and got["holds"]["vacuous"] is False
    assert got["target"]["status"] == "fail"
    assert secs["continual"]["error"] == "ValueError: bad input" and secs["continual"]["checks"] == []
    report = (tmp_path / "report.md").read_text()
    assert "**Section failed:** `ValueError: bad input`" in report
