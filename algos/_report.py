"""The ``algos demo`` report: one section per module, each a table of measured quantities next to
the paper's guarantees (with pass/fail) plus the figures it refers to."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

__all__ = ["Check", "DemoSection", "write_report"]


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

    def __post_init__(self):
        if self.relation not in (">=", "<="):
            raise ValueError(f"'relation' must be one of {{'>=', '<='}}; got {self.relation!r}.")
        if self.passed is None:
            m, g = float(self.measured), float(self.guarantee)
            if math.isnan(m) or math.isnan(g):
                self.passed = False
            elif self.relation == ">=":
                self.passed = m >= g - self.tol
            else:
                self.passed = m <= g + self.tol


@dataclasses.dataclass
class DemoSection:
    """A module's section of the report."""

    module: str
    title: str
    body: str = ""
    checks: list = dataclasses.field(default_factory=list)
    figures: list = dataclasses.field(default_factory=list)  # file names relative to the report
    seconds: float = 0.0

    @property
    def passed(self):
        return all(c.passed for c in self.checks)

    def to_markdown(self):
        lines = [f"## {self.title}", "", self.body.strip(), ""]
        if self.checks:
            lines += [
                "| guarantee | measured | bound | holds | source |",
                "|---|---|---|---|---|",
            ]
            for c in self.checks:
                mark = "pass" if c.passed else "**FAIL**"
                lines.append(
                    f"| {c.name} | {c.measured:.4f} | {c.relation} {c.guarantee:.4f} | {mark} | {c.source} |"
                )
            lines.append("")
        for fig in self.figures:
            lines += [f"![{fig}]({fig})", ""]
        lines.append(f"_Section ran in {self.seconds:.1f} s._")
        lines.append("")
        return "\n".join(lines)


def write_report(sections, out_dir, *, title="algos demo report", header=""):
    """Write ``report.md`` into ``out_dir`` and return its path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    lines = [f"# {title}", ""]
    if header:
        lines += [header.strip(), ""]
    lines += ["| module | guarantees checked | all hold | time (s) |", "|---|---|---|---|"]
    for s in sections:
        lines.append(
            f"| [{s.module}](#{s.title.lower().replace(' ', '-')}) | {len(s.checks)} | "
            f"{'yes' if s.passed else '**NO**'} | {s.seconds:.1f} |"
        )
    lines.append("")
    for s in sections:
        lines.append(s.to_markdown())
    path = out_dir / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
