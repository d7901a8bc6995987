"""The RECAP benchmark table of docs/pomdp.md still reproduces at CI size.

The table (section ``recap`` of benchmarks/bench_pomdp.py) is read from the documentation file
itself; a cell whose model is small enough for CI is refitted here on a short, seeded solver run and
must reach the documented value (within a relative 0.1 %, the spread of the solver's vectors between
a 10-s run and the short one). A table that stops reproducing fails here.
"""

import pathlib
import re

import pytest

from algos.datasets import load_pomdp
from algos.pomdp import PointBasedSolver, RECAPController

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "pomdp.md"
HEADING = "#### RECAP against the solver's bracket"


def _table_cell(model, K):
    """The documented V^F(b0) of ``model`` at ``K`` in the RECAP bracket table (first number of the cell)."""
    text = DOCS.read_text(encoding="utf-8")
    assert HEADING in text, "the RECAP bracket table is gone from docs/pomdp.md"
    lines = text[text.index(HEADING):].splitlines()
    header = next(line for line in lines if line.startswith("| model"))
    cols = [c.strip() for c in header.strip("|").split("|")]
    col = cols.index(f"K = {K}")
    row = next(line for line in lines if line.startswith(f"| {model} "))
    cell = [c.strip() for c in row.strip("|").split("|")][col]
    return float(re.match(r"-?\d+(\.\d+)?", cell.replace("**", "")).group(0))


@pytest.mark.parametrize("name, K", [("4x3.95", 4), ("cheese.95", 4)])
def test_documented_recap_value_reproduces(name, K):
    documented = _table_cell(name, K)
    model = load_pomdp(name)
    solver = PointBasedSolver(time_limit=600.0, max_trials=60, random_state=0).fit(model)
    rc = RECAPController(n_memory=K, random_state=0).fit(model, alphas=solver)
    assert rc.value_ >= documented - 1e-3 * abs(documented)
