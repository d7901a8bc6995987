"""Product text (package source, documentation, README, built site) cites papers and the documentation's
reconstruction pages, never the project's internal notes, issue numbers or files outside the repository."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: What must not appear: the word "spec" (not "specific", "spectral", "inspect", ...: word boundaries),
#: paths into internal notes, issue numbers, and the issue's target list.
PATTERN = re.compile(r"\bspecs?\b|\bissue\s+#?\d+|\.\./shared|targets of the issue", re.IGNORECASE)


def _python_text(path):
    """Yield ``(line number, text)`` of the comments and string literals of a Python file.

    Code is skipped, so identifiers such as a parameter named ``spec`` do not count; the replacement
    fields of f-strings (``{...}``) are removed before matching for the same reason.
    """
    source = path.read_text(encoding="utf-8")
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in (tokenize.STRING, tokenize.COMMENT):
            continue
        text = tok.string
        if tok.type == tokenize.STRING and re.match(r"[rbuRBU]*[fF]", text):
            text = re.sub(r"\{[^{}]*\}", "", text)
        for offset, line in enumerate(text.splitlines()):
            yield tok.start[0] + offset, line


def _plain_text(path):
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        yield number, line


def _hits(paths, reader):
    found = []
    for path in paths:
        for number, line in reader(path):
            if PATTERN.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:160]}")
    return found


def _report(found):
    return "internal references in product text:\n" + "\n".join(found)


def test_pattern_spares_ordinary_words():
    for word in ("specific", "spectral", "inspect", "specification", "respectively", "special", "speculative"):
        assert not PATTERN.search(word), word
    for text in ("the spec says", "Spec §1.3", "issue 17", "see ../shared/data", "Targets of the issue:", "specs/x.md"):
        assert PATTERN.search(text), text


def test_package_source_has_no_internal_references():
    paths = sorted(p for d in ("algos", "theory", "accel") for p in (ROOT / d).rglob("*.py"))
    assert paths
    found = _hits(paths, _python_text)
    assert not found, _report(found)


def test_docs_and_readme_have_no_internal_references():
    docs = ROOT / "docs"
    paths = sorted(p for p in docs.rglob("*") if p.suffix in (".md", ".rst") and p.is_file()
                   and not {"_build", "auto_examples", "generated"} & set(p.relative_to(docs).parts))
    paths.append(ROOT / "README.md")
    assert len(paths) > 5
    found = _hits(paths, _plain_text)
    assert not found, _report(found)


def test_built_site_has_no_internal_references():
    site = ROOT / "docs" / "_build" / "html"
    if not site.is_dir():  # nothing built: the source checks above cover the text
        return
    tag = re.compile(r"<[^>]+>")
    found = []
    for path in sorted(site.rglob("*.html")):
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if PATTERN.search(tag.sub(" ", line)):
                found.append(f"{path.relative_to(ROOT)}:{number}: {tag.sub(' ', line).strip()[:160]}")
    assert not found, _report(found)
