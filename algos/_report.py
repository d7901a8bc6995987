"""The ``algos demo`` report: one section per module, each a table of measured quantities next to
the paper's guarantees (with pass/fail, tightness and a vacuity flag) plus the figures it refers to.

Two renderings of the same sections are written: ``report.md`` (GitHub-flavoured Markdown, the
figures as PNG files next to it) and ``report.html`` (one self-contained file: figures embedded as
data URIs, no script, no network access, readable on a phone).
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import html as _html
import math
import platform
import re
import shlex
import sys
from pathlib import Path

from ._io import atomic_write

__all__ = ["Check", "DemoSection", "write_report", "render_markdown", "render_html", "github_anchor",
           "TAGS", "KINDS"]

#: The status tags of the sources, as used on the module pages (docs/<module>.md) and in docstrings.
TAGS = {
    "C": "confirmed by the paper's abstract or a primary source (paper, reference code)",
    "R": "reconstructed by the project from prior work (our design choice, configurable)",
    "D": "derived in the module's documentation page with a proof sketch",
    "V": "checked numerically in a reference prototype",
    "T": "from a third-party reading of the paper",
}

#: How to follow a check's source.
SOURCES_NOTE = ("Each source names the paper and the statement it checks, or the documentation page "
                "(docs/<module>.md) and its section; \"T1\"-style labels are the statements of the theory table "
                "on that page, which gives the paper and theorem of each.")

#: The page shows formulas as plain text: it needs no script and reads the same offline.
MATH_NOTE = "Formulas are plain text (sqrt, ^, _ as in code); the page loads no script and works offline."

#: What each kind of check means; only theorems are counted as guarantees.
KINDS = {
    "theorem": "a proved statement (of the paper, or reconstructed): a failure is a bug",
    "target": "an empirical or calibrated target (a measured rate, an accuracy level)",
    "sanity": "an identity or consistency check of the implementation",
}


@dataclasses.dataclass
class Check:
    """One guarantee checked on one run.

    ``measured`` is compared with ``guarantee`` by ``relation`` (``">="`` or ``"<="``) with an
    absolute tolerance ``tol``; ``passed`` is computed unless given.
    """

    name: str
    measured: float
    guarantee: float
    relation: str = ">="
    tol: float = 0.0
    source: str = ""
    passed: bool | None = None
    #: ``"theorem"`` (a proved statement of the paper, possibly reconstructed), ``"target"`` (an
    #: empirical or calibrated target) or ``"sanity"`` (an identity or consistency check). Only
    #: theorems count as guarantees in the report's summary.
    kind: str = "theorem"
    #: The trivial bound of the problem on the same side as ``guarantee`` (for ``"<="``: the largest
    #: value ``measured`` can take whatever the algorithm; for ``">="``: the smallest). A guarantee
    #: that is no better than it is reported as vacuous. ``None`` when there is no such bound.
    trivial: float | None = None

    def __post_init__(self):
        if self.relation not in (">=", "<="):
            raise ValueError(f"'relation' must be one of {{'>=', '<='}}; got {self.relation!r}.")
        if self.kind not in ("theorem", "target", "sanity"):
            raise ValueError(f"'kind' must be one of {{'theorem', 'target', 'sanity'}}; got {self.kind!r}.")
        if self.passed is None:
            m, g = float(self.measured), float(self.guarantee)
            if math.isnan(m) or math.isnan(g):
                self.passed = False
            elif self.relation == ">=":
                self.passed = m >= g - self.tol
            else:
                self.passed = m <= g + self.tol

    @property
    def tightness(self):
        """How close the measurement comes to the bound, in (0, 1] when the check holds.

        ``measured / guarantee`` for ``"<="`` and ``guarantee / measured`` for ``">="``: 1 means the
        bound is attained, small values mean it is loose. ``None`` when the ratio is undefined (a zero
        or negative denominator, a NaN, or signs that differ).
        """
        m, g = float(self.measured), float(self.guarantee)
        num, den = (m, g) if self.relation == "<=" else (g, m)
        if not (math.isfinite(num) and math.isfinite(den)) or den <= 0.0 or num < 0.0:
            return None
        return num / den

    @property
    def vacuous(self):
        """True when the guarantee is no better than the problem's trivial bound."""
        if self.trivial is None:
            return False
        g, t = float(self.guarantee), float(self.trivial)
        return g >= t if self.relation == "<=" else g <= t

    @property
    def status(self):
        """``"fail"``, ``"vacuous"`` (holds, but the bound says nothing) or ``"pass"``."""
        if not self.passed:
            return "fail"
        return "vacuous" if self.vacuous else "pass"

    def to_dict(self):
        """This check as a JSON-ready dict: its fields plus ``tightness``, ``vacuous`` and ``status``."""
        return {"name": self.name, "kind": self.kind, "measured": _num(self.measured),
                "guarantee": _num(self.guarantee), "relation": self.relation, "tol": _num(self.tol),
                "trivial": _num(self.trivial), "tightness": self.tightness, "vacuous": bool(self.vacuous),
                "passed": bool(self.passed), "status": self.status, "source": self.source}


@dataclasses.dataclass
class DemoSection:
    """A module's section of the report."""

    module: str
    title: str
    body: str = ""
    checks: list = dataclasses.field(default_factory=list)
    figures: list = dataclasses.field(default_factory=list)  # file names relative to the report
    seconds: float = 0.0
    #: The error that stopped the section, if any (``"ValueError: ..."``); such a section fails.
    error: str = ""

    @property
    def passed(self):
        return not self.error and all(c.passed for c in self.checks)

    def to_markdown(self):
        """This section as GitHub-flavoured Markdown (a level-2 heading, text, checks, figures)."""
        return _section_markdown(self)

    def to_dict(self):
        """This section's outcome as a JSON-ready dict (module, passed, seconds, error, checks)."""
        return {"module": self.module, "passed": bool(self.passed), "seconds": round(float(self.seconds), 2),
                "error": self.error, "checks": [c.to_dict() for c in self.checks]}


# --------------------------------------------------------------------------------------------------
# formatting helpers


def _num(x):
    """A plain Python number (int, float) or ``None`` for JSON; numpy scalars are converted."""
    if x is None:
        return None
    if isinstance(x, int) and not isinstance(x, bool):
        return x
    try:
        return float(x)
    except (TypeError, ValueError):
        return x


def fmt(x, digits=4):
    """A number for a table cell: ``%.4g`` (scientific notation when needed), ``nan``, ``inf``."""
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return str(x)
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0.0:
        return "0"
    return f"{v:.{digits}g}"


def _tightness_text(c):
    t = c.tightness
    return "n/a" if t is None else f"{t:.3g}"


def md_cell(text):
    """Escape one GitHub-flavoured Markdown table cell: ``|`` becomes ``\\|``, newlines become spaces."""
    s = str(text).replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    # a backslash right before a pipe would escape our escape: double it first
    s = re.sub(r"\\(?=\|)", r"\\\\", s)
    return s.replace("|", r"\|").strip()


def _one_line(text):
    """``text`` with its whitespace (newlines included) folded to single spaces."""
    return " ".join(str(text).split())


def _md_code(text):
    """``text`` as a Markdown code span, with a fence longer than any run of backticks inside it."""
    runs = [len(m) for m in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _md_row(cells):
    return "| " + " | ".join(md_cell(c) for c in cells) + " |"


def github_anchor(text, seen=None):
    """The anchor GitHub (and most GFM renderers) give a heading with this text.

    Lower case, every character other than letters, digits, ``_``, ``-`` and spaces dropped, spaces
    replaced by ``-``; a repeated anchor gets ``-1``, ``-2``, ... when ``seen`` (a dict of the anchors
    used so far) is given.
    """
    slug = re.sub(r"[^\w\- ]", "", str(text).strip().lower()).replace(" ", "-")
    if seen is None:
        return slug
    n = seen.get(slug, 0)
    seen[slug] = n + 1
    return slug if n == 0 else f"{slug}-{n}"


def _versions():
    from importlib import metadata

    out = {"python": platform.python_version()}
    for dist in ("algos-theory", "numpy", "scipy", "scikit-learn", "numba", "networkx", "matplotlib"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return out


def _default_command():
    prog = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    if prog in ("algos", "algos.exe", "algos-script.py"):
        return shlex.join(["algos", *sys.argv[1:]])
    return None


def _meta(sections, command, date, versions, total_seconds, header):
    if date is None:
        date = _dt.datetime.now(_dt.timezone.utc)
    if isinstance(date, _dt.datetime):
        date = date.strftime("%Y-%m-%d %H:%M UTC") if date.tzinfo else date.strftime("%Y-%m-%d %H:%M")
    if versions is None:
        versions = _versions()
    if total_seconds is None:
        total_seconds = sum(float(s.seconds) for s in sections)
    if command is None:
        command = _default_command()
    rows = []
    if command:
        rows.append(("command", command))
    rows.append(("date", str(date)))
    if versions:
        rows.append(("versions", ", ".join(f"{k} {v}" for k, v in dict(versions).items())))
    rows.append(("total time", f"{float(total_seconds):.1f} s"))
    failed = [f"{s.module} ({_one_line(s.error).split(':', 1)[0]})" for s in sections if s.error]
    if failed:  # the error text itself is at the top of each failed section
        rows.append(("failed sections", ", ".join(failed)))
    if header and header.strip():
        rows.append(("run", header.strip()))
    return rows


def _counts(sections):
    """Per section: ({kind: [held, total, vacuous]}, vacuous checks in all)."""
    out = []
    for s in sections:
        d = {k: [0, 0, 0] for k in KINDS}
        for c in s.checks:
            d[c.kind][1] += 1
            d[c.kind][0] += bool(c.passed)
            d[c.kind][2] += bool(c.vacuous)
        out.append((d, sum(c.vacuous for c in s.checks)))
    return out


def _count_cell(held, total, vacuous):
    """``"5/5"``, or ``"5/5 (5 vacuous)"`` when some of the checks that hold say nothing."""
    return f"{held}/{total}" + (f" ({vacuous} vacuous)" if vacuous else "")


_STATUS_MD = {"pass": "pass", "fail": "**FAIL**", "vacuous": "vacuous"}


# --------------------------------------------------------------------------------------------------
# Markdown


def _section_markdown(s):
    lines = [f"## {s.title}", ""]
    if s.error:
        lines += [f"**Section failed:** {_md_code(_one_line(s.error))}", ""]
    if s.body.strip():
        lines += [s.body.strip(), ""]
    if s.checks:
        lines += [
            "| check | kind | measured | bound | tightness | status | source |",
            "|---|---|---|---|---|---|---|",
        ]
        for c in s.checks:
            lines.append(_md_row([c.name, c.kind, fmt(c.measured), f"{c.relation} {fmt(c.guarantee)}",
                                  _tightness_text(c), _STATUS_MD[c.status], c.source]))
        lines.append("")
    for fig in s.figures:
        lines += [f"![{Path(str(fig)).stem}]({fig})", ""]
    lines.append(f"_Section ran in {float(s.seconds):.1f} s._")
    lines.append("")
    return "\n".join(lines)


def _legend_markdown():
    lines = ["**Reading the tables.** *kind*: "]
    lines[0] += "; ".join(f"`{k}` = {v}" for k, v in KINDS.items()) + ". Only theorems count as guarantees."
    lines += [
        "",
        "*tightness* = measured / bound for an upper bound (`<=`) and bound / measured for a lower bound "
        "(`>=`): 1 means the bound is attained, a small value means it is loose, n/a when the ratio is "
        "undefined. *vacuous*: the check holds but its bound is no better than the trivial bound of the "
        "problem, so it says nothing.",
        "",
        "*Source tags*: " + "; ".join(f"[{k}] {v}" for k, v in TAGS.items())
        + ". " + SOURCES_NOTE,
        "",
    ]
    return lines


def render_markdown(sections, *, title="algos demo report", header="", command=None, date=None,
                    versions=None, total_seconds=None):
    """The report as GitHub-flavoured Markdown text (see :func:`write_report`)."""
    sections = list(sections)
    seen = {}
    github_anchor(title, seen)
    github_anchor("Summary", seen)
    anchors = [github_anchor(s.title, seen) for s in sections]
    lines = [f"# {title}", ""]
    for key, value in _meta(sections, command, date, versions, total_seconds, header):
        lines.append(f"- **{key}**: `{value}`" if key == "command" else f"- **{key}**: {value}")
    lines += ["", "## Summary", ""]
    lines += _legend_markdown()
    lines += ["| module | theorems hold | targets met | sanity checks pass | vacuous | all hold | time (s) |",
              "|---|---|---|---|---|---|---|"]
    for s, a, (d, nvac) in zip(sections, anchors, _counts(sections)):
        cells = [f"[{s.module}](#{a})"] + [_count_cell(*d[k]) for k in KINDS] + [
            str(nvac), "yes" if s.passed else ("**NO** (error)" if s.error else "**NO**"), f"{float(s.seconds):.1f}"]
        lines.append("| " + " | ".join([cells[0]] + [md_cell(c) for c in cells[1:]]) + " |")
    lines.append("")
    for s in sections:
        lines.append(_section_markdown(s))
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# HTML

_CSS = """
:root { --fg:#1d2330; --muted:#5b6473; --line:#d9dee7; --bg:#ffffff; --soft:#f4f6fa;
        --pass:#1a7f37; --fail:#cf222e; --vac:#9a6700; }
* { box-sizing: border-box; }
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       background: var(--bg); margin: 0 auto; padding: 0 1rem 3rem; max-width: 72rem; }
h1 { font-size: 1.7rem; margin: 1.2rem 0 .6rem; }
h2 { font-size: 1.35rem; margin: 2.2rem 0 .6rem; border-bottom: 1px solid var(--line); padding-bottom: .2rem; }
h3 { font-size: 1.1rem; }
a { color: #0b57d0; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em; }
pre { background: var(--soft); padding: .6rem; overflow-x: auto; white-space: pre-wrap; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: 0 0 1rem; }
dl.meta dt { font-weight: 600; color: var(--muted); }
dl.meta dd { margin: 0; overflow-wrap: anywhere; }
.legend { background: var(--soft); padding: .5rem .9rem; border-radius: 6px; font-size: .92rem; }
.table-wrap { overflow-x: auto; margin: .6rem 0 1rem; }
table { border-collapse: collapse; width: 100%; font-size: .92rem; }
th, td { border: 1px solid var(--line); padding: .3rem .5rem; text-align: left; vertical-align: top; }
th { background: var(--soft); }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.status-pass { color: var(--pass); font-weight: 600; }
.status-fail { color: var(--fail); font-weight: 700; }
.status-vacuous { color: var(--vac); font-weight: 600; }
.badge { display: inline-block; padding: 0 .5rem; border-radius: 1rem; font-size: .85rem; color: #fff;
         vertical-align: middle; }
.badge.ok { background: var(--pass); } .badge.no { background: var(--fail); }
figure { margin: 1rem 0; } figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { color: var(--muted); font-size: .85rem; }
.error { color: var(--fail); }
.time { color: var(--muted); font-size: .9rem; }
@media (max-width: 640px) {
  body { font-size: 15px; padding: 0 .6rem 2rem; }
  table.cards, table.cards tbody, table.cards tr, table.cards td { display: block; width: 100%; }
  table.cards thead { display: none; }
  table.cards tr { border: 1px solid var(--line); border-radius: 6px; margin: 0 0 .6rem; padding: .3rem .5rem; }
  table.cards td { border: none; padding: .1rem 0; text-align: left; white-space: normal; overflow-wrap: anywhere; }
  table.cards td::before { content: attr(data-label) ": "; font-weight: 600; color: var(--muted); }
  dl.meta { grid-template-columns: 1fr; }
}
"""


def _e(text):
    return _html.escape(str(text), quote=True)


def _inline_md(text):
    """Minimal inline Markdown (code, bold, italic, links) on escaped text."""
    parts = re.split(r"(`[^`]+`)", text)
    out = []
    for p in parts:
        if len(p) >= 2 and p.startswith("`") and p.endswith("`"):
            out.append(f"<code>{_e(p[1:-1])}</code>")
            continue
        p = _e(p)
        p = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r'<a href="\2">\1</a>', p)
        p = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", p)
        p = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<em>\1</em>", p)
        out.append(p)
    return "".join(out)


def _split_row(line):
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith(r"\|"):
        line = line[:-1]
    cells, cur, i = [], [], 0
    while i < len(line):
        ch = line[i]
        if ch == "\\" and i + 1 < len(line) and line[i + 1] == "|":
            cur.append("|")
            i += 2
            continue
        if ch == "|":
            cells.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    cells.append("".join(cur).strip())
    return cells


def _fallback_markdown_to_html(text):
    """A small Markdown renderer (paragraphs, lists, pipe tables, fenced code, headings) used when
    ``markdown-it-py`` is not installed."""
    lines = text.strip("\n").splitlines()
    out, i = [], 0
    sep = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if line.lstrip().startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith("```"):
                j += 1
            out.append("<pre><code>" + _e("\n".join(lines[i + 1:j])) + "</code></pre>")
            i = j + 1
            continue
        m = re.match(r"^(#{1,6})\s+(.*)$", line)
        if m:
            level = min(len(m.group(1)) + 2, 6)
            out.append(f"<h{level}>{_inline_md(m.group(2))}</h{level}>")
            i += 1
            continue
        if "|" in line and i + 1 < len(lines) and sep.match(lines[i + 1]):
            head = _split_row(line)
            j = i + 2
            body = []
            while j < len(lines) and lines[j].strip() and "|" in lines[j]:
                body.append(_split_row(lines[j]))
                j += 1
            t = ["<div class=\"table-wrap\"><table><thead><tr>"]
            t += [f"<th>{_inline_md(c)}</th>" for c in head]
            t.append("</tr></thead><tbody>")
            for r in body:
                t.append("<tr>" + "".join(f"<td>{_inline_md(c)}</td>" for c in r) + "</tr>")
            t.append("</tbody></table></div>")
            out.append("".join(t))
            i = j
            continue
        if re.match(r"^\s*[*\-+]\s+", line):
            items = []
            while i < len(lines) and re.match(r"^\s*[*\-+]\s+", lines[i]):
                item = re.sub(r"^\s*[*\-+]\s+", "", lines[i])
                i += 1
                while i < len(lines) and lines[i].startswith("  ") and lines[i].strip():
                    item += " " + lines[i].strip()
                    i += 1
                items.append(f"<li>{_inline_md(item)}</li>")
            out.append("<ul>" + "".join(items) + "</ul>")
            continue
        para = [line.strip()]
        i += 1
        while (i < len(lines) and lines[i].strip() and not re.match(r"^\s*([*\-+]\s+|#{1,6}\s|```)", lines[i])
               and not ("|" in lines[i] and i + 1 < len(lines) and sep.match(lines[i + 1]))):
            para.append(lines[i].strip())
            i += 1
        out.append("<p>" + _inline_md(" ".join(para)) + "</p>")
    return "\n".join(out)


def markdown_to_html(text):
    """Render a section's Markdown text as HTML (raw HTML in the text is escaped, not passed through).

    Uses ``markdown-it-py`` (CommonMark with GFM tables) when it is installed, a small built-in
    renderer otherwise.
    """
    try:
        from markdown_it import MarkdownIt
    except ImportError:  # pragma: no cover - exercised by a test that hides the module
        return _fallback_markdown_to_html(text)
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    rendered = md.render(text)
    return re.sub(r"<table>(.*?)</table>", r'<div class="table-wrap"><table>\1</table></div>', rendered,
                  flags=re.S)


_MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
         ".svg": "image/svg+xml", ".webp": "image/webp"}


def _figure_html(out_dir, fig):
    path = Path(out_dir) / str(fig)
    mime = _MIME.get(path.suffix.lower())
    name = _e(Path(str(fig)).name)
    if mime is None or not path.is_file():
        why = "not found" if not path.is_file() else "not an image"
        return f'<p class="error">Figure {name}: {why}.</p>'
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<figure><img src="data:{mime};base64,{data}" alt="{name}">'
            f"<figcaption>{name}</figcaption></figure>")


_CHECK_COLS = ("module", "check", "kind", "measured", "guarantee", "tightness", "status")


def _check_cells(section, c, anchor, with_module=True, with_source=False):
    status = c.status
    cells = []
    if with_module:
        cells.append(("module", f'<a href="#{_e(anchor)}">{_e(section.module)}</a>', ""))
    cells += [
        ("check", _e(c.name), ""),
        ("kind", _e(c.kind), ""),
        ("measured", _e(fmt(c.measured)), "num"),
        ("guarantee", _e(f"{c.relation} {fmt(c.guarantee)}"), "num"),
        ("tightness", _e(_tightness_text(c)), "num"),
        ("status", f'<span class="status-{status}">{status}</span>', ""),
    ]
    if with_source:
        cells.append(("source", _e(c.source), ""))
    tds = "".join(f'<td data-label="{lab}"' + (f' class="{cls}"' if cls else "") + f">{v}</td>"
                  for lab, v, cls in cells)
    return f'<tr class="check-row status-row-{status}" data-kind="{_e(c.kind)}">{tds}</tr>'


def render_html(sections, out_dir=".", *, title="algos demo report", header="", command=None, date=None,
                versions=None, total_seconds=None):
    """The report as one self-contained HTML page (see :func:`write_report`).

    Figures are read from ``out_dir`` and embedded as data URIs; the page has no script and loads
    nothing from the network.
    """
    sections = list(sections)
    seen = {}
    github_anchor(title, seen)
    github_anchor("Summary", seen)
    github_anchor("All checks", seen)
    anchors = [github_anchor(s.title, seen) for s in sections]
    n_checks = sum(len(s.checks) for s in sections)
    n_fail = sum(not c.passed for s in sections for c in s.checks)
    n_vac = sum(c.vacuous for s in sections for c in s.checks)
    ok = all(s.passed for s in sections)
    h = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
         '<meta name="viewport" content="width=device-width, initial-scale=1">',
         f"<title>{_e(title)}</title>", f"<style>{_CSS}</style>", "</head>", "<body>",
         f'<h1 id="{_e(github_anchor(title))}">{_e(title)} '
         f'<span class="badge {"ok" if ok else "no"}">{"all hold" if ok else "failures"}</span></h1>',
         '<dl class="meta">']
    for key, value in _meta(sections, command, date, versions, total_seconds, header):
        v = f"<code>{_e(value)}</code>" if key == "command" else _e(value)
        h.append(f"<dt>{_e(key)}</dt><dd>{v}</dd>")
    h.append(f"<dt>checks</dt><dd>{n_checks} in {len(sections)} modules; {n_fail} failed; {n_vac} vacuous</dd>")
    h.append("</dl>")
    # per-module summary
    h += ['<h2 id="summary">Summary</h2>', '<div class="table-wrap"><table id="module-summary" class="cards">',
          "<thead><tr><th>module</th><th>theorems hold</th><th>targets met</th><th>sanity checks pass</th>"
          "<th>vacuous</th><th>all hold</th><th>time (s)</th></tr></thead><tbody>"]
    for s, a, (d, nvac) in zip(sections, anchors, _counts(sections)):
        st = "pass" if s.passed else "fail"
        allhold = "yes" if s.passed else ("no (error)" if s.error else "no")
        h.append(f'<tr class="module-row"><td data-label="module"><a href="#{_e(a)}">{_e(s.module)}</a></td>'
                 + "".join(f'<td data-label="{_e(k)}" class="num">{_count_cell(*d[k])}</td>' for k in KINDS)
                 + f'<td data-label="vacuous" class="num">{nvac}</td>'
                 f'<td data-label="all hold"><span class="status-{st}">{allhold}</span></td>'
                 f'<td data-label="time (s)" class="num">{float(s.seconds):.1f}</td></tr>')
    h.append("</tbody></table></div>")
    # every check
    h += ['<h2 id="all-checks">All checks</h2>', '<div class="table-wrap"><table id="check-summary" class="cards">',
          "<thead><tr>" + "".join(f"<th>{c}</th>" for c in _CHECK_COLS) + "</tr></thead><tbody>"]
    for s, a in zip(sections, anchors):
        for c in s.checks:
            h.append(_check_cells(s, c, a))
    h.append("</tbody></table></div>")
    # how to read the tables
    legend = ('<div class="legend"><p><strong>kind</strong>: '
             + "; ".join(f"<code>{_e(k)}</code> {_e(v)}" for k, v in KINDS.items())
             + ". Only theorems count as guarantees.</p>"
             "<p><strong>tightness</strong> = measured / bound for an upper bound (&lt;=), bound / measured "
             "for a lower bound (&gt;=): 1 means the bound is attained, a small value that it is loose "
             "(n/a: undefined). <strong>vacuous</strong>: the check holds but its bound is no better than the "
             "problem's trivial bound.</p><p><strong>source tags</strong>: "
             + "; ".join(f"[{_e(k)}] {_e(v)}" for k, v in TAGS.items())
             + ". " + _e(SOURCES_NOTE) + " " + _e(MATH_NOTE) + "</p></div>")
    h.append(legend)
    # sections
    for s, a in zip(sections, anchors):
        badge = '<span class="badge ok">all hold</span>' if s.passed else '<span class="badge no">failed</span>'
        h.append(f'<section class="module" id="section-{_e(s.module)}">')
        h.append(f'<h2 id="{_e(a)}">{_e(s.title)} {badge}</h2>')
        if s.error:
            h.append(f'<p class="error section-error"><strong>Section failed:</strong> '
                     f'<code>{_e(_one_line(s.error))}</code></p>')
        if s.body.strip():
            h.append(markdown_to_html(s.body.strip()))
        if s.checks:
            h.append('<div class="table-wrap"><table class="cards section-checks"><thead><tr>'
                     + "".join(f"<th>{c}</th>" for c in _CHECK_COLS[1:] + ("source",)) + "</tr></thead><tbody>")
            for c in s.checks:
                h.append(_check_cells(s, c, a, with_module=False, with_source=True))
            h.append("</tbody></table></div>")
        for fig in s.figures:
            h.append(_figure_html(out_dir, fig))
        h.append(f'<p class="time">Section ran in {float(s.seconds):.1f} s.</p></section>')
    h += ["</body>", "</html>", ""]
    return "\n".join(h)


def write_report(sections, out_dir, *, title="algos demo report", header="", command=None, date=None,
                 versions=None, total_seconds=None, html=True):
    """Write ``report.md`` (and ``report.html``) into ``out_dir`` and return the path of ``report.md``.

    Parameters
    ----------
    sections : list of DemoSection
        One per module, in the order of the report.
    out_dir : str or path-like
        Output folder (created if needed); the sections' figures are read from it.
    title : str, default="algos demo report"
        Level-1 heading and HTML title.
    header : str, default=""
        A free line shown with the run's metadata (for example the seed and mode).
    command : str or None, default=None
        The command that produced the report; ``None`` uses ``sys.argv`` when it is the ``algos``
        console script and omits the line otherwise.
    date : datetime.datetime, str or None, default=None
        When the run happened; ``None`` means now (UTC).
    versions : dict or None, default=None
        Package name -> version; ``None`` records Python and the main dependencies.
    total_seconds : float or None, default=None
        Wall-clock time of the whole run; ``None`` sums the sections' ``seconds``.
    html : bool, default=True
        Also write the self-contained ``report.html``.

    Returns
    -------
    path : pathlib.Path
        The path of ``report.md``.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sections = list(sections)
    if date is None:
        date = _dt.datetime.now(_dt.timezone.utc)
    if versions is None:
        versions = _versions()
    if command is None:
        command = _default_command()
    kw = dict(title=title, header=header, command=command, date=date, versions=versions,
              total_seconds=total_seconds)
    path = out_dir / "report.md"
    with atomic_write(path, "w", encoding="utf-8") as fh:
        fh.write(render_markdown(sections, **kw))
    if html:
        with atomic_write(out_dir / "report.html", "w", encoding="utf-8") as fh:
            fh.write(render_html(sections, out_dir, **kw))
    return path
