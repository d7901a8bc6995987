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
